#!/bin/bash
# rok simulate as a user runs it: summary, JSON, timeline, trace files, and
# bad input.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"

out=$("$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro)
expect_in "$out" "strategy keep: 8 micro-batches of 1 sequence per step"
expect_in "$out" "Step time"
expect_in "$out" "tokens/s"
expect_in "$out" "Peak memory"
out=$("$rok" simulate gpt3-13b --hw a100-40g-pcie4-4xp5800x --strategy keep)
expect_in "$out" "DOES NOT FIT"

# JSON: the documented fields, byte-identical across runs.
"$rok" simulate ssdtrain-bert --hw a100-40g-pcie4-4xp5800x -s tba --json > "$tmp/a.json"
"$rok" simulate ssdtrain-bert --hw a100-40g-pcie4-4xp5800x -s tba --json | cmp - "$tmp/a.json"
for field in step_time_s tokens_per_s peak_bytes activation_peak_bytes compute_s recompute_s stall_s \
  pcie_d2h_bytes pcie_h2d_bytes nvme_write_bytes nvme_read_bytes fits; do
  grep -q "\"$field\": " "$tmp/a.json" || { echo "missing $field" >&2; exit 1; }
done
grep -q '"strategy": "tba"' "$tmp/a.json"
grep -q '"fits": true' "$tmp/a.json"
if grep -q '"nvme_write_bytes": 0,' "$tmp/a.json"; then
  echo "tba wrote nothing on SSDTrain's machine" >&2
  exit 1
fi

# A trace file stands in for the model config and gives the same figures.
"$rok" trace gpt3-1.3b -o "$tmp/trace.json" > /dev/null
"$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro -s offload --json > "$tmp/from-model.json"
"$rok" simulate "$tmp/trace.json" --hw a100-80g-sxm-4x980pro -s offload --json | cmp - "$tmp/from-model.json"

# --set changes the model; options change the simulation.
"$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro --set micro_batch=2 --json > "$tmp/mb2.json"
grep -q '"micro_batches": 4,' "$tmp/mb2.json"
"$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro --detail 8 --json > "$tmp/detail.json"
grep -q '"detailed_micro_batches": 8,' "$tmp/detail.json"
"$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro -s offload --budget 20GiB --json > "$tmp/budget.json"
grep -q '"budget_bytes": 21474836480,' "$tmp/budget.json"

# --budget: "fits" is judged against the budget, not the GPU's memory.
out=$("$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget 10GiB)
expect_in "$out" "of the budget 10.0 GiB: DOES NOT FIT"
"$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget 10GiB --json | grep -q '"fits": false'
"$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget 70GiB --json | grep -q '"fits": true'

# --plan: a plan file of rok plan, simulated with its decisions and step
# options, as rok plan predicted it; a hand-edited one is checked.
"$rok" plan gpt3-1.3b --hw a100-40g-pcie4-4xp5800x --budget 11GiB --points 2 --json > "$tmp/plan.json"
"$rok" simulate gpt3-1.3b --hw a100-40g-pcie4-4xp5800x --plan "$tmp/plan.json" --json > "$tmp/sim-plan.json"
grep -q '"strategy": "rok"' "$tmp/sim-plan.json"
grep -q '"fits": true' "$tmp/sim-plan.json"
/usr/bin/python3 -c "
import json, sys
plan, sim = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ('step_time_s', 'peak_bytes', 'nvme_write_bytes', 'pcie_d2h_bytes'):
    assert plan['predicted'][k] == sim[k], (k, plan['predicted'][k], sim[k])
" "$tmp/plan.json" "$tmp/sim-plan.json"
# Every tensor kept: the same step as --strategy keep.
sed 's/"decision": "[a-z-]*"/"decision": "keep"/' "$tmp/plan.json" > "$tmp/kept.json"
"$rok" simulate gpt3-1.3b --hw a100-40g-pcie4-4xp5800x --plan "$tmp/kept.json" --budget 40GiB --json \
  | grep '"step_time_s"' > "$tmp/kept-step"
"$rok" simulate gpt3-1.3b --hw a100-40g-pcie4-4xp5800x -s keep --json | grep '"step_time_s"' | cmp - "$tmp/kept-step"
line=$(grep -n -m1 '"decision": ' "$tmp/plan.json" | cut -d: -f1)
sed "${line}s/\"decision\": \"[a-z-]*\"/\"decision\": \"ofload\"/" "$tmp/plan.json" > "$tmp/bad.json"
expect_fail 2 "bad.json:$line:19: \"tensors[0].decision\": must be one of" \
  "$rok" simulate gpt3-1.3b --hw a100-40g-pcie4-4xp5800x --plan "$tmp/bad.json"
expect_fail 2 "the plan was made for another trace" "$rok" simulate gpt3-2.7b --hw a100-40g-pcie4-4xp5800x \
  --plan "$tmp/plan.json"
expect_fail 2 "--plan and --strategy exclude each other" "$rok" simulate gpt3-1.3b --hw a100-40g-pcie4-4xp5800x \
  --plan "$tmp/plan.json" -s keep
expect_fail 2 "--plan FILE" "$rok" simulate gpt3-1.3b --hw a100-40g-pcie4-4xp5800x -s rok

# Timeline: trace-event JSON with one track per stream and a memory
# counter, byte-identical across runs.
"$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro -s offload --timeline "$tmp/t1.json" > /dev/null
"$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro -s offload -t "$tmp/t2.json" --json > /dev/null
cmp "$tmp/t1.json" "$tmp/t2.json"
for needle in '"traceEvents"' '"name": "nvme-read"' '"name": "gpu memory"' '"ph": "C"' '"cat": "prefetch"'; do
  grep -qF "$needle" "$tmp/t1.json" || { echo "timeline lacks $needle" >&2; exit 1; }
done

# Bad input: exit 2 with the reason; a timeline that cannot be written: 1.
expect_fail 2 "missing --hw" "$rok" simulate gpt3-1.3b
expect_fail 2 "missing MODEL" "$rok" simulate --hw a100-80g-sxm-4x980pro
# Rates so low that a step's nanoseconds would overflow: refused, not a crash.
sed 's/"peak_flops": "312e12"/"peak_flops": 1e-300/' "$ROK_SOURCE_DIR/configs/hw/a100-40g-pcie4-4xp5800x.json" > "$tmp/slow.json"
expect_fail 2 "implausibly low" "$rok" simulate gpt3-1.3b --hw "$tmp/slow.json"
expect_fail 2 'unknown strategy "offlaod"' "$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro -s offlaod
expect_fail 2 "no such file, nor a bundled hardware config" "$rok" simulate gpt3-1.3b --hw no-such-gpu
expect_fail 2 "--budget" "$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget lots
expect_fail 2 "--detail" "$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro --detail 0
sed 's/"devices": 4/"devices": 0/' "$(dirname "$0")/../../configs/hw/a100-80g-sxm-4x980pro.json" > "$tmp/nossd.json"
expect_fail 2 "has no SSDs" "$rok" simulate gpt3-1.3b --hw "$tmp/nossd.json" -s offload
expect_fail 1 "t.json" "$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro -t "$tmp/no/such/dir/t.json"

expect_in "$("$rok" help simulate)" "--strategy"
expect_in "$("$rok" simulate --help)" "Exit codes"
echo "simulate: all checks passed"
