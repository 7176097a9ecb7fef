#!/bin/bash
# rok validate as a user runs it, on a tiny model so that it takes seconds:
# every baseline and one planner budget run for real, the table and the
# JSON (fields present and consistent with each other), the files of -o,
# nothing left in the offload directory, and bad usage. How accurate the
# predictions are is measured by tests/bench/bench-validate.sh, not here.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"

# Usage errors come before any device is needed.
expect_in "$("$rok" help)" "validate"
expect_in "$("$rok" validate --help)" "--budgets"
expect_fail 2 "missing --hw HW" "$rok" validate
expect_fail 2 "--repeat must be at least 1" "$rok" validate --hw cpu-2core-virtio --repeat 0
expect_fail 2 "leaves nothing to run" "$rok" validate --hw cpu-2core-virtio --no-baselines --budgets 0
expect_fail 2 "unexpected argument" "$rok" validate a b --hw cpu-2core-virtio
expect_fail 2 "no-such-model" "$rok" validate no-such-model --hw cpu-2core-virtio
expect_fail 2 "give a directory on each disk (--dir DIR)" "$rok" validate --hw cpu-2core-virtio

if ! "$rok" execute --list-devices >/dev/null 2>"$tmp/stderr"; then
  echo "no OpenCL device: $(cat "$tmp/stderr")" >&2
  exit 77
fi

disk="$tmp/disk"
mkdir "$disk"
tiny=(--set layers=2 --set hidden=64 --set heads=1 --set seq_len=64 --set ffn_hidden=256 --set vocab=256
  --hw cpu-2core-virtio --dir "$disk" --budgets 1 --repeat 2 --offload-floor 4096)
"$rok" validate "${tiny[@]}" --json -o "$tmp/out" >"$tmp/v.json"
[ -z "$(ls -A "$disk")" ] || { echo "left behind in $disk: $(ls -A "$disk")" >&2; exit 1; }
cmp "$tmp/v.json" "$tmp/out/validation.json"
for f in validation.png validation.svg schedule-01-keep.json report-01-keep.json timeline-01-keep.json \
  schedule-06-rok.json report-06-rok.json timeline-06-rok.json; do
  [ -s "$tmp/out/$f" ] || { echo "-o wrote no $f" >&2; exit 1; }
done

python3 - "$tmp/v.json" <<'EOF'
import json, math, statistics, sys
v = json.load(open(sys.argv[1]))
assert v["format"] == "rok-validation/1", v["format"]
assert v["model"] == "validate-gpt" and v["repeat"] == 2 and v["rounds"] == 3
assert 0 <= v["rows_within_noise"] <= len(v["rows"])
rows = v["rows"]
assert [r["strategy"] for r in rows] == ["keep", "recompute", "selective", "offload", "tba", "rok"], rows
for r in rows:
    for k in ("budget_bytes", "predicted_step_time_s", "measured_step_time_s", "step_time_error",
              "predicted_peak_bytes", "measured_peak_bytes", "peak_error", "noise",
              "measured_step_time_min_s", "measured_step_time_max_s", "predicted_moved_bytes",
              "measured_moved_bytes", "moved_error", "integrity_failures"):
        assert k in r, (r["strategy"], k)
    p, m = r["predicted_step_time_s"], r["measured_step_time_s"]
    assert p > 0 and m > 0
    steps = sorted(r["step_times_s"])
    assert len(steps) == 6, steps  # 3 rounds x 2 steps
    assert math.isclose(m, (steps[2] + steps[3]) / 2, rel_tol=1e-12)
    assert r["ci_low_s"] == steps[0] and r["ci_high_s"] == steps[5] and abs(r["ci_coverage"] - 0.96875) < 1e-12
    # the interval reaches down by what other processes took of the steps
    assert r["taken_s"] >= 0, r["taken_s"]  # Linux: /proc/stat
    assert r["within_noise"] == (r["ci_low_s"] - r["taken_s"] <= p <= r["ci_high_s"])
    assert math.isclose(r["step_time_error"], (m - p) / p, rel_tol=1e-9, abs_tol=1e-12)
    pp, mp = r["predicted_peak_bytes"], r["measured_peak_bytes"]
    assert math.isclose(r["peak_error"], (mp - pp) / pp, rel_tol=1e-9, abs_tol=1e-12)
    assert r["measured_step_time_min_s"] <= m <= r["measured_step_time_max_s"]
    assert r["moved_error"] == 0 and r["integrity_failures"] == 0
    # Without copies the peak does not depend on timing: the ledger counts
    # what the simulator counts, byte for byte but for a few small buffers.
    if r["predicted_moved_bytes"] == 0:
        assert abs(r["peak_error"]) <= 0.005, r
errors = sorted(abs(r["step_time_error"]) for r in rows)
assert math.isclose(v["max_step_time_error"], errors[-1], rel_tol=1e-12)
n = len(errors)
median = errors[n // 2] if n % 2 else (errors[n // 2 - 1] + errors[n // 2]) / 2
assert math.isclose(v["median_step_time_error"], median, rel_tol=1e-12)
assert math.isclose(v["max_peak_error"], max(abs(r["peak_error"]) for r in rows), rel_tol=1e-12)
assert v["max_noise"] >= v["median_noise"] >= 0
# Against keep: each row's measured over keep's, paired by round (the
# median over the rounds of each round's median), over the predicted ratio.
rounds, repeat = v["rounds"], v["repeat"]
def by_round(r):
    s = r["step_times_s"]
    assert len(s) == rounds * repeat
    return [statistics.median(s[i * repeat:(i + 1) * repeat]) for i in range(rounds)]
assert rows[0]["error_against_keep"] is None
against = []
for r in rows[1:]:
    ratio = statistics.median(a / b for a, b in zip(by_round(r), by_round(rows[0]))) if rounds > 1 else \
        r["measured_step_time_s"] / rows[0]["measured_step_time_s"]
    e = ratio / (r["predicted_step_time_s"] / rows[0]["predicted_step_time_s"]) - 1
    assert math.isclose(r["error_against_keep"], e, rel_tol=1e-9, abs_tol=1e-12), r["strategy"]
    against.append(abs(e))
assert math.isclose(v["max_error_against_keep"], max(against), rel_tol=1e-9)
# The offloading rows moved data; keep moved none.
assert rows[0]["measured_moved_bytes"] == 0
assert rows[3]["measured_moved_bytes"] > 0 and rows[4]["predicted_moved_bytes"] >= 0
assert any("optimizer" in n for n in v["notes"])
# Where the time went: parts per row add up to the row's compute, and the
# summary's are the rows' summed.
for r in rows:
    assert r["parts"] and all(p["actions"] > 0 for p in r["parts"]), r["strategy"]
total = {}
for r in rows:
    for p in r["parts"]:
        total[p["part"]] = total.get(p["part"], 0) + p["measured_s"]
for p in v["parts"]:
    assert math.isclose(p["measured_s"], total[p["part"]], rel_tol=1e-9), p
assert any(p["part"] == "linear backward" for p in v["parts"])
# The transfer streams of each row: their median over the 6 steps and its
# interval (the 1st and 6th, as the step time's), the errors from those.
stream_errors, within = [], 0
for r in rows:
    for p in r["parts"]:
        stream = p["part"] in ("d2h", "h2d", "nvme-write", "nvme-read")
        assert stream == ("median_s" in p), p
        if stream:
            assert p["ci_low_s"] <= p["median_s"] <= p["ci_high_s"], p
            assert p["within_noise"] == (p["ci_low_s"] <= p["predicted_s"] <= p["ci_high_s"]), p
            within += p["within_noise"]
            stream_errors.append(abs(p["median_s"] - p["predicted_s"]) / p["predicted_s"])
assert any(p["part"] == "d2h" for p in rows[3]["parts"])  # offload copies out
assert v["streams"] == len(stream_errors) and v["streams_within_noise"] == within
assert math.isclose(v["max_stream_error"], max(stream_errors), rel_tol=1e-9)
assert all("median_s" not in p for p in v["parts"])
# The disk timed before each of the 3 rounds against the profile's leg
# model (cpu-2core-virtio has one).
d = v["disk_speed"]
assert d["rounds"] == 3, d
for k in ("write", "read"):
    assert 0 < d[k + "_min"] <= d[k] <= d[k + "_max"], d
# The copies are timed on a CPU device's profile (gpu.shared_cpus) only.
assert v["copy_speed"] is None, v["copy_speed"]
# The kernels timed before each round too, and each row's step predicted
# again at their speed, round by round; the error paired by round.
k = v["kernel_speed"]
assert k["rounds"] == 3, k
for c in ("gemm", "other"):
    assert 0 < k[c + "_min"] <= k[c] <= k[c + "_max"], k
errors = []
for r in rows:
    by_round = r["predicted_at_speed_by_round_s"]
    assert len(by_round) == 3 and all(s > 0 for s in by_round), r
    assert math.isclose(r["predicted_at_speed_s"], statistics.median(by_round), rel_tol=1e-12)
    steps = r["step_times_s"]
    e = statistics.median([statistics.median(steps[2 * i:2 * i + 2]) / by_round[i] for i in range(3)]) - 1
    assert math.isclose(r["error_at_speed"], e, rel_tol=1e-9, abs_tol=1e-12), (r["error_at_speed"], e)
    errors.append(abs(e))
assert math.isclose(v["max_step_time_error_at_speed"], max(errors), rel_tol=1e-9)
assert math.isclose(v["median_step_time_error_at_speed"], statistics.median(errors), rel_tol=1e-9)
EOF

# The table.
out=$("$rok" validate "${tiny[@]}" --no-baselines --repeat 1)
expect_in "$out" "Step time error: median"
expect_in "$out" "Peak memory error"
expect_in "$out" "Noise"
expect_in "$out" "The disks, timed before each round in bursts like the SSD legs"
expect_in "$out" "Furthest off"
expect_in "$out" "Transfer streams, the time each had a leg running"
expect_in "$out" "At the machine's speed (each row predicted again with the profile's kernels"
case $out in *"Against keep"*) echo "no keep row, yet a line against keep" >&2; exit 1 ;; esac
case $out in *"The copies, timed"*) echo "the copies timed on a profile without gpu.shared_cpus" >&2; exit 1 ;; esac
[ -z "$(ls -A "$disk")" ]

# A CPU device's profile: its copies timed before each round against the
# profile's rates, and each copy stream predicted again at their speed.
out=$("$rok" validate "${tiny[@]}" --no-baselines --repeat 1 --rounds 2 --hw-set gpu.shared_cpus=2 -o "$tmp/cpu")
expect_in "$out" "The copies, timed before each round"
expect_in "$out" "Copy streams at the copies' speed (each predicted again"
python3 - "$tmp/cpu/validation.json" <<'EOF'
import json, math, sys
v = json.load(open(sys.argv[1]))
c = v["copy_speed"]
assert c["rounds"] == 2, c
for k in ("d2h", "h2d"):
    assert 0 < c[k + "_min"] <= c[k] <= c[k + "_max"], c
errors = []
for r in v["rows"]:
    for p in r["parts"]:
        if p["part"] in ("d2h", "h2d"):
            assert p["predicted_at_copy_speed_s"] > 0, p
            e = p["median_s"] / p["predicted_at_copy_speed_s"] - 1
            assert math.isclose(p["error_at_copy_speed"], e, rel_tol=1e-9, abs_tol=1e-12), p
            errors.append(abs(e))
        elif "median_s" in p:
            assert p["predicted_at_copy_speed_s"] is None and p["error_at_copy_speed"] is None, p
assert errors, "no row copied"
assert math.isclose(v["max_copy_error_at_copy_speed"], max(errors), rel_tol=1e-9)
assert v["copies_memory_speed"] is None, v["copies_memory_speed"]
EOF
[ -z "$(ls -A "$disk")" ]

# A profile that knows how fast the memory went at its copies: their speed
# carried over from the kernels timed beside the rows, no copy timed.
out=$("$rok" validate "${tiny[@]}" --no-baselines --repeat 1 --rounds 2 --hw-set gpu.shared_cpus=2 \
  --hw-set calibrated_copies_memory_speed=1.25 -o "$tmp/carried")
expect_in "$out" "The copies, carried over from the kernels"
expect_in "$out" "Copy streams at the copies' speed (each predicted again"
python3 - "$tmp/carried/validation.json" <<'EOF'
import json, math, sys
v = json.load(open(sys.argv[1]))
c, k = v["copy_speed"], v["kernel_speed"]
assert v["copies_memory_speed"] == 1.25, v["copies_memory_speed"]
assert c["rounds"] == k["rounds"] == 2, (c, k)
for way in ("d2h", "h2d"):
    for end in ("", "_min", "_max"):
        assert math.isclose(c[way + end], 1.25 * k["other" + end], rel_tol=1e-9), (c, k)
# The pass before each row's run in each round: a round's figure is the
# median over its rows' passes.
import statistics
rounds = [statistics.median(r["kernel_speed_before"][n][1] for r in v["rows"]) for n in range(2)]
assert math.isclose(k["other"], statistics.median(rounds), rel_tol=1e-9), (rounds, k)
assert math.isclose(k["other_min"], min(rounds), rel_tol=1e-9), (rounds, k)
EOF
[ -z "$(ls -A "$disk")" ]
