#!/bin/bash
# rok plan as a user runs it: every bundled model on every bundled machine
# (--json checked: the plan fits, beats every baseline that fits, the curve
# is monotone; or exit 3 naming the smallest budget), a few budgets, the
# files in -o DIR, --strategy, and bad input.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
here=$(dirname "$0")
require_python

# check_json FILE: the plan's promises, from its --json document.
check_json() {
  "$python" - "$1" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
budget = doc["budget_bytes"]
assert doc["format"] == "rok-plan/1" and doc["feasible"] is True, doc.get("feasible")
p = doc["predicted"]
assert p["peak_bytes"] <= budget, (p["peak_bytes"], budget)
assert len(doc["baselines"]) == 5
tol = 0.01  # ROK_PLAN_WEAR_TOLERANCE: as fast, or nearly and writing no more to the SSDs
limit = doc["ssd"]["max_write_rate"]  # baselines that wear the SSDs faster are not candidates
for b in doc["baselines"]:
    wears = limit is not None and b.get("nvme_write_bytes", 0) > limit * b.get("step_time_s", 0)
    if b["available"] and b["peak_bytes"] <= budget and not wears:
        assert p["step_time_s"] <= b["step_time_s"] or (p["step_time_s"] <= b["step_time_s"] * (1 + tol) and
                p["nvme_write_bytes"] <= b["nvme_write_bytes"]), (b["strategy"], b["step_time_s"], p["step_time_s"])
curve = doc["curve"]
assert len(curve) >= 2 or curve[0]["budget_bytes"] == curve[-1]["budget_bytes"], len(curve)
for a, b in zip(curve, curve[1:]):
    assert a["budget_bytes"] < b["budget_bytes"]
    assert b["step_time_s"] <= a["step_time_s"] * (1 + tol), (a, b)
for c in curve:
    assert c["peak_bytes"] <= c["budget_bytes"] and c["activation_peak_bytes"] <= c["peak_bytes"]
ssd = doc["ssd"]
for key in ("write_bytes_per_step", "required_write_bandwidth", "lifetime_years"):
    assert key in ssd, key
assert (ssd["lifetime_years"] is None) == (ssd["write_bytes_per_step"] == 0)
assert doc["options"]["memory_budget"] <= budget
assert len(doc["tensors"]) > 0 and doc["summary"]
EOF
}

# Every model and every machine, at the GPU's memory: each model on two
# machines in turn (every pair would take minutes of planning now that each
# plan is checked against every prefetch window and fewer-tier machine;
# under the sanitizers, ten times slower, every sixth model on one machine).
models=$(cd "$here/../../configs/models" && ls *.json | sed 's/\.json$//')
machines=($(cd "$here/../../configs/hw" && ls *.json | sed 's/\.json$//'))
fits=0 refused=0 i=0
for m in $models; do
  i=$((i + 1))
  # Under the sanitizers every sixth model (test-planner-bundled takes
  # another sixth there).
  ! sanitized || [ $((i % 6)) -eq 3 ] || continue
  for h in "${machines[@]}"; do
    first=${machines[$((i % ${#machines[@]}))]} second=${machines[$(((i + 1) % ${#machines[@]}))]}
    if [ "$h" != "$first" ] && { sanitized || [ "$h" != "$second" ]; }; then continue; fi
    status=0
    "$rok" plan "$m" --hw "$h" --points 2 --json > "$tmp/p.json" 2> "$tmp/err" || status=$?
    if [ "$status" -eq 0 ]; then
      check_json "$tmp/p.json" || { echo "$m on $h" >&2; exit 1; }
      fits=$((fits + 1))
    elif [ "$status" -eq 3 ]; then
      expect_in "$(cat "$tmp/err")" "the smallest that fits is"
      grep -q '"feasible": false' "$tmp/p.json"
      grep -q '"min_budget_bytes": ' "$tmp/p.json"
      refused=$((refused + 1))
    else
      echo "$m on $h: exit $status" >&2
      cat "$tmp/err" >&2
      exit 1
    fi
  done
done
sanitized || [ "$fits" -ge 20 ] || { echo "only $fits model x machine pairs fit" >&2; exit 1; }

# More budgets: from the smallest feasible one up, read off the refusal.
pairs=("gpt3-1.3b a100-40g-pcie4-4xp5800x" "t5-3b cpu-2core-virtio")
! sanitized || pairs=("${pairs[0]}")
for pair in "${pairs[@]}"; do
  set -- $pair
  status=0
  "$rok" plan "$1" --hw "$2" --budget 1GiB --points 2 --json > "$tmp/no.json" 2> "$tmp/err" || status=$?
  [ "$status" -eq 3 ] || { echo "1 GiB fitted $1 on $2" >&2; exit 1; }
  least=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["min_budget_bytes"])' "$tmp/no.json")
  for budget in "$least" $((least + least / 8)) $((least + least / 3)); do
    "$rok" plan "$1" --hw "$2" --budget "$budget" --points 3 --json > "$tmp/b.json"
    check_json "$tmp/b.json" || { echo "$1 on $2 at $budget bytes" >&2; exit 1; }
  done
  expect_fail 3 "no plan fits in" "$rok" plan "$1" --hw "$2" --budget $((least - 1)) --points 2
done

# The summary, and the same JSON every run.
out=$("$rok" plan gpt3-1.3b --hw a100-40g-pcie4-4xp5800x --budget 12GiB --points 4)
for needle in "Recommendation:" "Decisions per layer" "against the baselines" "selective" "SSDs (4 x" \
  "ROK curve: 4 budgets"; do
  expect_in "$out" "$needle"
done
"$rok" plan ssdtrain-bert --hw a100-40g-pcie4-4xp5800x --points 3 --json > "$tmp/a.json"
"$rok" plan ssdtrain-bert --hw a100-40g-pcie4-4xp5800x --points 3 --json | cmp - "$tmp/a.json"

# Files in -o DIR; the plan file is the --json document.
"$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget 14GiB --points 3 -o "$tmp/out" > "$tmp/summary"
expect_in "$(cat "$tmp/summary")" "Wrote plan.json"
for f in plan.json schedule.json rok-curve.csv rok-curve.png rok-curve.svg; do
  [ -s "$tmp/out/$f" ] || { echo "missing $f" >&2; exit 1; }
done
[ "$(ls -A "$tmp/out" | wc -l)" -eq 5 ] || { ls -A "$tmp/out" >&2; exit 1; }
"$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget 14GiB --points 3 --json | cmp - "$tmp/out/plan.json"
grep -q '"format": "rok-schedule/2"' "$tmp/out/schedule.json"
head -c 8 "$tmp/out/rok-curve.png" | od -c | grep -q "P   N   G"
grep -q "<svg" "$tmp/out/rok-curve.svg"
[ "$(grep -c '^rok,' "$tmp/out/rok-curve.csv")" -eq 3 ]
grep -q '^keep,' "$tmp/out/rok-curve.csv"
grep -q '"curve_baselines": \[' "$tmp/out/plan.json"

# --timeline and --timeline-chart: the recommended plan's step, the same
# bytes as rok simulate --plan gives for the plan file; the chart's title
# names model, machine, strategy and the detailed micro-batches.
"$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget 14GiB --points 3 -t "$tmp/plan-t.json" \
  --timeline-chart "$tmp/plan-t.svg" > /dev/null
"$rok" simulate gpt3-1.3b --hw a100-80g-sxm-4x980pro --plan "$tmp/out/plan.json" -t "$tmp/sim-t.json" > /dev/null
cmp "$tmp/plan-t.json" "$tmp/sim-t.json"
grep -q '"strategy": "rok"' "$tmp/plan-t.json"
grep -q "One step of gpt3-1.3b, rok on a100-80g-sxm-4x980pro: micro-batches 1–3 of 8 in detail" "$tmp/plan-t.svg"
expect_fail 1 "t.json" "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --points 2 -t "$tmp/no/such/dir/t.json"

# --granularity: at module and layer granularity every layer's block (or
# the whole layer) takes one decision (its input kept when it recomputes;
# tensors outside the layers kept), and finer is never slower.
for g in tensor module layer; do
  "$rok" plan gpt3-1.3b --hw a100-40g-pcie4-4xp5800x --budget 11GiB --points 2 --granularity $g --json > "$tmp/g-$g.json"
done
"$python" -c "
import json, sys, collections
step = {}
for g in ('tensor', 'module', 'layer'):
    p = json.load(open(sys.argv[1] + '/g-' + g + '.json'))
    step[g] = p['predicted']['step_time_s']
    if g == 'tensor':
        continue
    groups = collections.defaultdict(set)
    for t in p['tensors']:
        parts = t['name'].split('.')
        if t['layer'] < 0:
            assert t['decision'] == 'keep', t
        elif not (parts[1] == 'input' and t['decision'] == 'keep'):
            groups[(t['layer'], parts[1] if g == 'module' and len(parts) > 2 else '')].add(t['decision'])
    mixed = {k: v for k, v in groups.items() if len(v) > 1}
    assert not mixed, (g, mixed)
assert step['tensor'] <= step['module'] * 1.0001 and step['module'] <= step['layer'] * 1.0001, step
" "$tmp"
expect_fail 2 'unknown granularity "block"' "$rok" plan gpt3-1.3b --hw a100-40g-pcie4-4xp5800x --granularity block

# --strategy writes that baseline's plan and schedule instead.
"$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --strategy tba --points 2 -o "$tmp/tba" --json > "$tmp/tba.json"
grep -q '"strategy": "tba"' "$tmp/tba/plan.json"
grep -q '"strategy": "tba"' "$tmp/tba/schedule.json"
expect_fail 3 "strategy keep does not fit in 20.0 GiB" "$rok" plan gpt3-13b --hw a100-80g-sxm-4x980pro \
  --strategy keep --budget 20GiB --points 2

# No plan fits: exit 3, the smallest budget said, nothing written.
expect_fail 3 "the smallest that fits is" "$rok" plan gpt3-2.7b --hw a100-40g-pcie4-4xp5800x --budget 4GiB \
  -o "$tmp/never"
[ ! -e "$tmp/never/plan.json" ] || { echo "files written for an infeasible budget" >&2; exit 1; }
# A folder that cannot be made: exit 1, nothing half-written.
touch "$tmp/file"
expect_fail 1 "cannot write" "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --points 2 -o "$tmp/file/sub"

# Bad input: exit 2 with the reason.
expect_fail 2 "missing --hw" "$rok" plan gpt3-1.3b
expect_fail 2 "missing MODEL" "$rok" plan --hw a100-80g-sxm-4x980pro
expect_fail 2 "--budget" "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget lots
expect_fail 2 "--budget must be more than 0" "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget 0
expect_fail 2 'unknown strategy "rock"' "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --strategy rock
expect_fail 2 "--points must be at least 2" "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --points 1
# Below 1 is allowed (compression in the drive); 0 or less is not.
expect_fail 2 "--write-amplification must be a positive number" "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --write-amplification -1
expect_fail 2 "--host-memory" "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --host-memory much

expect_in "$("$rok" help plan)" "--budget"
expect_in "$("$rok" plan --help)" "Exit codes"
echo "plan: all checks passed ($fits pairs fit, $refused refused)"
