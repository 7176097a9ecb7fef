#!/bin/bash
# The planner's promises (issue 12), through the command as a user runs it:
# a curve point is what `rok plan --budget` returns there; a prefetch never
# takes the step over its budget (SSDTrain's BERT, where it used to); the
# SSDs are not worn for nothing (Mistral 7B on a 24 GB GPU with one SSD and
# 64 GiB of host memory); the lifetime limit holds; SSDTrain's lifetime
# arithmetic can be reproduced.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
require_python
field() { "$python" -c 'import json,sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$@"; }

# Curve = plan: every point of a 4-point curve, re-planned at its budget.
"$rok" plan gpt3-1.3b --hw a100-40g-pcie4-4xp5800x --points 4 --json > "$tmp/c.json"
for i in 0 1 2 3; do
  budget=$(field "$tmp/c.json" "curve.$i.budget_bytes")
  "$rok" plan gpt3-1.3b --hw a100-40g-pcie4-4xp5800x --points 4 --budget "$budget" --json > "$tmp/p.json"
  "$python" - "$tmp/c.json" "$tmp/p.json" "$i" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["curve"][int(sys.argv[3])]
p = json.load(open(sys.argv[2]))
assert c["step_time_s"] == p["predicted"]["step_time_s"], (c["step_time_s"], p["predicted"]["step_time_s"])
assert c["peak_bytes"] == p["predicted"]["peak_bytes"], (c["peak_bytes"], p["predicted"]["peak_bytes"])
PY
done

# SSDTrain's BERT: offload under a 24.5 GiB budget peaks below 25.2 GiB at
# keep's speed, so the plan at 25.2 GiB is as fast (it was 14% slower when
# prefetches overshot the budget and the planner never tried a smaller window).
bert=(ssdtrain-bert --hw a100-40g-pcie4-4xp5800x)
"$rok" simulate "${bert[@]}" --strategy offload --budget 26306674688 --json > "$tmp/o.json"
[ "$(field "$tmp/o.json" within_budget)" = True ]
"$rok" plan "${bert[@]}" --budget 27058290688 --points 4 --min-ssd-lifetime 0 --json > "$tmp/b.json"
"$python" - "$tmp/o.json" "$tmp/b.json" <<'PY'
import json, sys
o, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert o["peak_bytes"] <= b["budget_bytes"]
assert b["predicted"]["step_time_s"] <= o["step_time_s"] * 1.01, (b["predicted"]["step_time_s"], o["step_time_s"])
PY

# Mistral 7B on a 24 GB GPU, one SSD, 64 GiB of host memory: where offloading
# to host memory alone is as fast, nothing is written to the SSD; with a
# 3-year lifetime required, no plan wears it out sooner. Budgets above its
# ZeRO-3 fixed memory (16.7 GiB with DeepSpeed's reduce bucket and
# prefetch; the smallest plan needs 17.4 GiB).
m=(mistral-7b --hw rtx4090-24g-1x990pro --points 4)
for budget in 18GiB 20GiB 22GiB; do
  "$rok" plan "${m[@]}" --budget "$budget" --min-ssd-lifetime 0 --json > "$tmp/any.json"
  "$rok" plan "${m[@]}" --budget "$budget" --min-ssd-lifetime 0 --tiers keep,host,recompute --json > "$tmp/host.json"
  "$rok" plan "${m[@]}" --budget "$budget" --min-ssd-lifetime 3y --json > "$tmp/3y.json"
  "$python" - "$tmp/any.json" "$tmp/host.json" "$tmp/3y.json" <<'PY'
import json, sys
any_, host, y3 = (json.load(open(f)) for f in sys.argv[1:4])
a, h = any_["predicted"], host["predicted"]
assert h["nvme_write_bytes"] == 0
if h["step_time_s"] <= a["step_time_s"] * 1.01:
    assert a["nvme_write_bytes"] == 0, (a["step_time_s"], h["step_time_s"], a["nvme_write_bytes"])
life = y3["ssd"]["lifetime_years"]
assert life is None or life >= 3, life
PY
done

# The lifetime arithmetic: SSDTrain credits the rating's JEDEC workload
# amplification (2.5) against large sequential writes (1): 2.5 times the
# lifetime at face value; a workload amplification of 0.5 doubles it.
g=(gpt3-1.3b --hw a100-80g-sxm-4x980pro --budget 14GiB --points 2 --min-ssd-lifetime 0 --tiers keep,nvme)
"$rok" plan "${g[@]}" --json > "$tmp/face.json"
"$rok" plan "${g[@]}" --rated-write-amplification 2.5 --json > "$tmp/ssdtrain.json"
"$rok" plan "${g[@]}" --write-amplification 0.5 --retention-factor 2 --json > "$tmp/half.json"
"$python" - "$tmp/face.json" "$tmp/ssdtrain.json" "$tmp/half.json" <<'PY'
import json, sys
f, s, h = (json.load(open(x))["ssd"] for x in sys.argv[1:4])
assert f["write_bytes_per_step"] > 0 and f["lifetime_years"] > 0
assert abs(s["lifetime_years"] / f["lifetime_years"] - 2.5) < 1e-9, (s["lifetime_years"], f["lifetime_years"])
assert abs(h["lifetime_years"] / f["lifetime_years"] - 4.0) < 1e-9
assert s["assumptions"]["rated_write_amplification"] == 2.5
PY
out=$("$rok" plan "${g[@]}")
expect_in "$out" "Lifetime:"

# Bad options name themselves.
expect_fail 2 "--tiers: unknown tier \"disk\"" "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --tiers keep,disk
expect_fail 2 "--write-amplification must be a positive number" \
  "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --write-amplification 0
expect_fail 2 "--min-ssd-lifetime" "$rok" plan gpt3-1.3b --hw a100-80g-sxm-4x980pro --min-ssd-lifetime 3parsecs
echo ok
