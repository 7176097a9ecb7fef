#!/bin/bash
# Remake the seeds that rok itself writes (traces, plans, schedules, sweep
# CSVs) with the built rok, after a change of format or of the trace
# generator: corpus/plan/ must hold plans for the trace fuzz-plan.c builds
# (from corpus/model/small-wide.json).
# usage: tests/fuzz/make-seeds.sh BUILD/rok
set -euo pipefail
rok=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
corpus="$here/corpus"
tiny="$corpus/model/tiny-gpt.json"
hw=a100-40g-pcie4-4xp5800x
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for m in tiny-gpt tiny-llama-gqa tiny-t5 tiny-bert; do
  "$rok" trace "$corpus/model/$m.json" --json >"$corpus/trace/$m.json"
done
"$rok" trace "$tiny" --set attention=flash --set layers=1 --set dropout=0 --json >"$corpus/trace/tiny-gpt-flash.json"

# Plans and schedules for small-wide's trace (fuzz-plan.c builds it): every
# strategy, and the planner under budgets that make it offload to NVMe and
# host memory and recompute.
wide="$corpus/model/small-wide.json"
mkdir -p "$corpus/plan" "$corpus/schedule" "$corpus/sweep"
plan() { # NAME ARGS...
  local name=$1
  shift
  "$rok" plan "$wide" --hw "$hw" --points 3 -o "$work/$name" "$@" >/dev/null
  cp "$work/$name/plan.json" "$corpus/plan/$name.json"
  cp "$work/$name/schedule.json" "$corpus/schedule/$name.json"
}
for s in rok keep recompute selective offload tba; do
  plan "$s" --strategy "$s"
done
plan rok-7gib --budget 7GiB
plan rok-7.5gib --budget 7.5GiB
# A schedule with comm actions (tensor-parallel, data-parallel, pipeline
# sends) and repeats: tiny-gpt's first pipeline stage with an interconnect.
"$rok" plan "$tiny" --hw "$hw" --points 2 --strategy keep --set pipeline_parallel=2 --set tensor_parallel=2 \
  --set sequence_parallel=true --set data_parallel=2 --set global_batch=24 --stage 0 \
  --hw-set interconnect.gpus_per_node=8 --hw-set interconnect.intra_node_bandwidth=2e9 \
  --hw-set interconnect.inter_node_bandwidth=1e9 -o "$work/comm" >/dev/null 2>&1
cp "$work/comm/schedule.json" "$corpus/schedule/comm.json"

"$rok" sweep "$tiny" --hw "$hw" --micro-batch 1,2 --seq-len 8,16 -j 1 -o "$work/sweep" >/dev/null
cp "$work/sweep/sweep.csv" "$corpus/sweep/micro-batch-seq-len.csv"
"$rok" sweep "$tiny" --hw "$hw" --budget 60MiB:70MiB:5MiB --strategies keep,rok,offload -j 1 -o "$work/budget" >/dev/null
cp "$work/budget/sweep.csv" "$corpus/sweep/budgets.csv"
echo "seeds remade in $corpus"
