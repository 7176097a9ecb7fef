#!/bin/bash
# Pipeline parallelism at the command line: every stage reported and
# planned, --stage, a stage's trace; and one stage's schedule (its micro-
# batches in 1F1B order, two in flight on the first stage) run for real on
# the OpenCL device: every plan of a stage gives the same gradients as its
# keep plan, with no integrity failure.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"

big=(gpt3-175b --hw h100-80g-sxm-4xgen5 --strategy selective --set pipeline_parallel=8 --set data_parallel=6
  --set global_batch=192 --set zero_stage=1)
out="$("$rok" simulate "${big[@]}" 2> "$tmp/stderr")"
expect_in "$out" "Pipeline of 8 stages (1F1B)"
expect_in "$out" "Pipeline bubble"
[ "$(grep -c '^  [0-7] ' <<< "$out")" -eq 8 ] || { echo "expected 8 stage rows" >&2; exit 1; }
# Stage 0 holds 8 micro-batches: Megatron-LM's 9.59 GiB of activations.
grep -q '^  0  *12 .* 8  *[0-9.]* GiB   9.59 GiB' <<< "$out" || { echo "$out" >&2; exit 1; }
"$rok" simulate "${big[@]}" --stage 7 --json > "$tmp/s7.json"
expect_in "$(cat "$tmp/s7.json")" '"stage": 7'
expect_in "$(cat "$tmp/s7.json")" '"in_flight": 1'
"$rok" simulate "${big[@]}" --json > "$tmp/all.json"
expect_in "$(cat "$tmp/all.json")" '"stages": ['
expect_fail 2 "--stage must be" "$rok" simulate "${big[@]}" --stage 8
expect_fail 2 "must divide" "$rok" simulate "${big[@]}" --set pipeline_parallel=5
expect_fail 2 "not modelled for arch" "$rok" simulate t5-3b --hw h100-80g-sxm-4xgen5 --set pipeline_parallel=2
# ZeRO-3 with pipelining is not a layout anyone runs: rok says so.
"$rok" simulate gpt3-175b --hw h100-80g-sxm-4xgen5 --set pipeline_parallel=8 --set data_parallel=6 \
  --set global_batch=192 > /dev/null 2> "$tmp/stderr"
expect_in "$(cat "$tmp/stderr")" "DeepSpeed refuses"
# A profile without an interconnect cannot cost the layout's communication.
"$rok" simulate gpt3-13b --hw cpu-2core-virtio --set layers=4 > /dev/null 2> "$tmp/stderr"
expect_in "$(cat "$tmp/stderr")" 'no "interconnect" section'

# A stage's trace: the last has the loss head, the first the embedding.
"$rok" trace gpt3-1.3b --set pipeline_parallel=4 --stage 3 --json > "$tmp/t3.json"
expect_in "$(cat "$tmp/t3.json")" '"pipeline_stage": 3'
expect_in "$(cat "$tmp/t3.json")" '"head.loss"'
expect_fail 2 "pipeline stages" "$rok" trace gpt3-1.3b --set pipeline_parallel=4 --stage 4

# Every stage planned under the budget.
out="$("$rok" plan validate-gpt --hw cpu-2core-virtio --set pipeline_parallel=2 --set global_batch=4 -n 2 \
  --budget 40MiB 2> /dev/null)"
expect_in "$out" "Every stage planned under the budget"

# One stage's schedule on the device.
if ! "$rok" execute --list-devices > /dev/null 2> "$tmp/stderr"; then
  echo "no OpenCL device: $(cat "$tmp/stderr")" >&2
  exit 77
fi
mkdir -p "$tmp/disk"
for stage in 0 1; do
  sums=()
  for strategy in keep offload; do
    "$rok" plan validate-gpt --hw cpu-2core-virtio --set pipeline_parallel=2 --set global_batch=4 --stage $stage \
      --strategy $strategy --offload-min-elements 0 -n 2 -o "$tmp/$strategy$stage" > /dev/null 2>&1
    "$rok" execute "$tmp/$strategy$stage/schedule.json" --dir "$tmp/disk" -r 1 --json > "$tmp/r.json"
    [ "$(grep -o '"integrity_failures": [0-9]*' "$tmp/r.json" | head -1 | sed 's/.*: //')" = 0 ] ||
      { echo "stage $stage $strategy: integrity failures" >&2; exit 1; }
    sums+=("$(grep -o '"gradient_checksum": "[0-9a-f]*"' "$tmp/r.json" | head -1)")
  done
  [ -n "${sums[0]}" ] && [ "${sums[0]}" = "${sums[1]}" ] ||
    { echo "stage $stage: gradients differ: ${sums[*]}" >&2; exit 1; }
done

# With an interconnect the stage's schedule carries its communication:
# tensor-parallel collectives, the gradient reduction and the sends to the
# next stage, each run as a timed placeholder and reported as one, the
# gradients those of the same schedule without them.
ic=(--hw-set interconnect.gpus_per_node=8 --hw-set interconnect.intra_node_bandwidth=2e9
  --hw-set interconnect.inter_node_bandwidth=1e9 --hw-set interconnect.intra_node_latency=20us)
tp=(validate-gpt --hw cpu-2core-virtio --set pipeline_parallel=2 --set global_batch=8 --set data_parallel=2
  --set tensor_parallel=2 --set sequence_parallel=true --stage 0 --strategy keep -n 2)
"$rok" plan "${tp[@]}" -o "$tmp/tp-none" > /dev/null 2>&1
"$rok" plan "${tp[@]}" "${ic[@]}" -o "$tmp/tp-comm" > /dev/null 2>&1
expect_in "$(cat "$tmp/tp-comm/schedule.json")" '"stream": "p2p", "kind": "comm"'
expect_in "$(cat "$tmp/tp-comm/schedule.json")" '"group": "tensor-parallel"'
sums=()
for run in none comm; do
  "$rok" execute "$tmp/tp-$run/schedule.json" --dir "$tmp/disk" -r 1 --json > "$tmp/r-$run.json"
  sums+=("$(grep -o '"gradient_checksum": "[0-9a-f]*"' "$tmp/r-$run.json" | head -1)")
done
[ -n "${sums[0]}" ] && [ "${sums[0]}" = "${sums[1]}" ] || { echo "gradients differ: ${sums[*]}" >&2; exit 1; }
! grep -q '"communication"' "$tmp/r-none.json" || { echo "a report without comm actions lists some" >&2; exit 1; }
expect_in "$(cat "$tmp/r-comm.json")" '"placeholders": '
expect_in "$(cat "$tmp/r-comm.json")" 'are timed placeholders: one device cannot perform them'
grep -q '"pipeline": [1-9]' "$tmp/r-comm.json" || { echo "no pipeline sends reported" >&2; exit 1; }
