#!/usr/bin/env bash
# How close rok's predictions come on this machine: calibrate it, then run
# `rok validate` on the bundled small model (every baseline and the planner
# at several budgets, each schedule run for real) twice, and print the
# error figures and how much the two runs differ.
#
#   tests/bench/bench-validate.sh [DIR] [--quick] [--rounds 3] [--repeat 2] [--budgets 3] [--runs 2]
#                                 [--model validate-gpt] [--generic] [--ssd] [--keep OUT]
#
# The calibration times the validated model's own layer (`rok calibrate
# --model MODEL`: its GEMM shapes and element-wise sizes, as a user
# calibrates for the model they plan); --generic calibrates on rok's own
# calibration layers instead, so that the prediction interpolates across
# shapes (the larger error, worth knowing).
#
# --ssd validates with no host memory to offload to (`--hw-set host.memory`
# = the profile's pinned buffer), so that the planner's rows offload to the
# SSD whatever the calibration makes of host offload: the SSD path's
# prediction, which a calibration that prefers host offload leaves to the
# offload and tba rows alone.
#
# DIR is where the calibration and the offloaded tensors go (default: a
# fresh folder under /var/tmp, removed afterwards). --quick calibrates in
# seconds instead of minutes; --keep OUT keeps the profile, the tables and
# every run's files (validation.json, the chart, each row's schedule and
# report) in OUT. The load average is printed before and after: the
# figures are only worth quoting from a machine nothing else is using.
# Uses build/rok, or $ROK.
#
# Measured 2026-11-24 on the development VM (2 cores, PoCL, virtio disk),
# nothing else running (validate: other processes took 0.0-0.9% of the
# processors during the steps), with the size-aware SSD request cost, the
# disk's wake, the I/O threads' short slice and gpu.copy_leg_cpu:
# validate-gpt median step-time error 3.2% and 5.5%, worst 4.8% and 10.1%
# (the second run measured every row 2-7% slower), nvme-write 20.5 ms
# predicted against 19.3-21.8 measured, nvme-read 21.2 against 20.9-22.6
# (+62% and +96% before those steps), d2h 85 against 66-70, h2d 147
# against 124-130; the LLaMA-shaped model of other widths (--model FILE: 4
# layers, hidden 256, 4 heads, 2 KV heads, ffn 688, seq 256) 3.3% and
# 1.2%, worst 4.9% and 1.9%, d2h 104 against 123-135, h2d 331 against
# 366-417. Under two busy loops (load 2.3-3.7; --runs 1, calibrated under
# them) the LLaMA-shaped model 2.8%, worst 11.8%, every row within its
# interval. Each run calibrates afresh, so the calibrations' spread is in
# these figures; README has the comparisons of builds on one calibration
# and the steps between. 2026-11-25, on a fresh VM whose steps spread
# 14-31% within a row: --runs 1 median 11.2% and 5.9% (worst 17.0%,
# 16.0%); with --ssd after the copy-wait and write-latency changes, 7.9%
# and 3.7% (worst 14.6%, 22.4%): that machine's noise, not the 5%/10% of
# the day before. Later that day (another VM of the kind), with the
# copies' free point (gpu.copy_kernel_free_at): --runs 1 median 11.1%,
# worst 14.6%, every row measured 7-15% slower than predicted, keep
# included (the calibration ran fast); h2d 47 against 31 (offload), 44
# against 28 (tba); before the free point, on another calibration that
# validated at 2-5%, h2d 50 against 20-34 and 48 against 23-29. With the
# keep row's error taken out of the others (validate's error_against_keep,
# printed since then): that run 1.7% median, worst 5.0% (keep +12.7%); the
# run at the start of the day 4.0%, worst 10.3% (keep -10.0%); --ssd after
# the copy legs took a processor each, 3.4%, worst 5.7% (keep +7.7%).
# 2026-12-01, with the GEMM ops' own times by shape (calibrated_shapes.
# gemm_ops) and the device checksum: validate-gpt 3.6% (worst 6.6%, every
# GEMM kind within 3%) and, seconds later, 24.5% (every row 17-35% slower,
# keep +17%); the LLaMA-shaped model 12.6% (keep +14.5%) and 3.4% (worst
# 9.8%); --ssd 4.6% (worst 9.3%). Other processes 0.0-0.2%, steal nil:
# the VM's own speed moves between runs.
# 2026-12-02, with SSD writes begun on io_uring's thread and an h2d leg
# waiting for a kernel launched during its host check: validate-gpt 20.0%
# (every row ~20% faster than calibrated, keep -19.6%; against keep 3.3%)
# and 2.9% (worst 6.4%); the LLaMA-shaped model 11.1% (keep +13.3%,
# against keep 2.0%) and 4.8% (worst 12.3%), its h2d streams within 9% in
# every row of the second run, d2h still 42-110% under; --ssd 5.4% (worst
# 15.8%). Other processes 0.6-1.5% of the processors. After the staging
# gate's out-of-turn grants: validate-gpt 2.3% (worst 4.6%, streams within
# 19%); the LLaMA-shaped model 4.7% (worst 10.6%) and 13.2% (its rows'
# steps spread 37%), h2d within 20% in every row.
# Later, with every d2h leg primed as it is issued, the stream threads on
# a short slice and the copy queues out of order: validate-gpt 25.2% and
# 24.2% (every row 22-24% faster than calibrated; against keep 3.0% and
# 3.8%), d2h within 20% in 9 of 10 row runs; the LLaMA-shaped model, the
# next run, 34.1% and 34.5% (every row 34-38% slower; against keep 2.3%
# and 4.5%). The VM's speed, not the model, sets these.
# The next session, after the host checksum was vectorised (7.6 GB/s
# against 2.7) and with the error against keep paired by round,
# --runs 1 each: validate-gpt 11.3% (keep +1.9%, its rounds at 200, 256
# and 189 ms; against keep 3.3% paired, 11.3% over all rounds) and 14.9%
# (keep -17.2%; against keep 2.6%, worst 7.3%); the LLaMA-shaped model
# 9.6%, worst 13.1% (keep -3.6%; against keep 7.0%, worst 10.8%: every
# row ran 3-9% faster than keep would say, selective, predicted as keep,
# 5.5% faster than it). h2d is the worst stream: +12% to +80% and -20%
# to -85% of the measured medians across these runs.
# A later session (the VM running the steps about twice as slowly), --runs
# 1, before and after the CPU device's worker threads ran 5 nice levels
# below rok's: validate-gpt 3.2% (worst 5.3%) and 5.4% (worst 10.6%, keep
# +10.6%; against keep 5.8%, worst 8.6%), d2h +27-83% and +9-57%, the
# streams' median error 31.1% and 27.2%; the LLaMA-shaped model 4.3%
# (worst 5.4%) and 2.3% (worst 4.0%), d2h +29-112% and +10-40%, streams
# 41.4% and 23.6%. A second run after (keep -30.6% and -10.5%, the VM
# faster than its calibration): 28.6% and 10.3%, against keep 2.0%
# (worst 4.5%) and 2.2% (worst 3.9%), d2h +17-77% and +24-43%, streams
# 26.6% and 26.3%.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rok=${ROK:-$here/../../build/rok}
dir="" quick="" rounds=3 repeat=2 budgets=3 runs=2 model=validate-gpt keep="" generic="" ssd=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=--quick; shift ;;
    --repeat) repeat=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --budgets) budgets=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --generic) generic=1; shift ;;
    --ssd) ssd=1; shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    -*) echo "bench-validate.sh: unknown option $1" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
[ -x "$rok" ] || { echo "bench-validate.sh: $rok not built (ninja -C build)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench-validate.sh: needs python3 for the summary" >&2; exit 2; }

cleanup_dir=""
if [ -z "$dir" ]; then
  dir=$(mktemp -d /var/tmp/rok-bench-validate.XXXXXX)
  cleanup_dir=$dir
fi
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
cleanup() { [ -n "$keep" ] || rm -rf "$work"; [ -z "$cleanup_dir" ] || rmdir "$cleanup_dir"; }
trap cleanup EXIT

echo "== $(uname -n): $(nproc) processors; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
calibrate_for=(--model "$model")
[ -z "$generic" ] || calibrate_for=()
echo "== rok calibrate $quick ${calibrate_for[*]} --dir $dir"
"$rok" calibrate $quick "${calibrate_for[@]}" --dir "$dir" -o "$work/hw.json" >"$work/calibrate.txt"
grep -E "^Profile|GEMM model|held out|speed at the end|element-wise|launch|device ->|-> device|copy latency|beside kernels|bursts:|idle or more" "$work/calibrate.txt"
echo "   ($(( $(date +%s) - start )) s)"
validate_for=()
if [ -n "$ssd" ]; then
  pinned=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["host"]["pinned_buffer"])' "$work/hw.json")
  validate_for=(--hw-set "host.memory=$pinned")
  echo "   (--ssd: host.memory $pinned, the pinned buffer: nothing left to offload to host memory)"
fi

for run in $(seq 1 "$runs"); do
  start=$(date +%s)
  echo
  echo "== run $run: rok validate $model --hw hw.json --dir $dir --rounds $rounds --repeat $repeat --budgets $budgets ${validate_for[*]}"
  "$rok" validate "$model" --hw "$work/hw.json" --dir "$dir" --rounds "$rounds" --repeat "$repeat" --budgets "$budgets" \
    "${validate_for[@]}" -o "$work/run$run" | tee "$work/run$run.txt"
  echo "   ($(( $(date +%s) - start )) s; load average now $(cut -d' ' -f1-3 /proc/loadavg))"
done

echo
python3 - "$work" "$runs" <<'EOF'
import json, sys
work, runs = sys.argv[1], int(sys.argv[2])
docs = [json.load(open(f"{work}/run{i}/validation.json")) for i in range(1, runs + 1)]
print("== summary")
for i, d in enumerate(docs, 1):
    print(f"run {i}: step time error median {100 * d['median_step_time_error']:.1f}%, "
          f"worst {100 * d['max_step_time_error']:.1f}%; peak memory error worst {100 * d['max_peak_error']:.2f}%; "
          f"noise (spread of a row's steps) median {100 * d['median_noise']:.1f}%, largest "
          f"{100 * d['max_noise']:.1f}%; within noise {d['rows_within_noise']} of {len(d['rows'])} rows; "
          f"load average {d['load_average']['before'][0]:.2f} -> "
          f"{d['load_average']['after'][0]:.2f} on {d['cpus']} processors")
    if d.get("median_error_against_keep") is not None:
        keep = next(r for r in d["rows"] if r["strategy"] == "keep")
        print(f"       against keep (keep {100 * keep['step_time_error']:+.1f}%, the machine against its "
              f"calibration): median {100 * d['median_error_against_keep']:.1f}%, "
              f"worst {100 * d['max_error_against_keep']:.1f}%")
    if d.get("streams"):
        print(f"       transfer streams (the median over a row's steps): error median "
              f"{100 * d['median_stream_error']:.1f}%, worst {100 * d['max_stream_error']:.1f}%; "
              f"{d['streams_within_noise']} of {d['streams']} predictions inside their median's interval")
if runs > 1:
    a, b = docs[0]["rows"], docs[1]["rows"]
    same = all(x["predicted_step_time_s"] == y["predicted_step_time_s"] and
               x["predicted_peak_bytes"] == y["predicted_peak_bytes"] for x, y in zip(a, b))
    diffs = [abs(y["measured_step_time_s"] - x["measured_step_time_s"]) / x["measured_step_time_s"]
             for x, y in zip(a, b)]
    diffs.sort()
    n = len(diffs)
    median = diffs[n // 2] if n % 2 else (diffs[n // 2 - 1] + diffs[n // 2]) / 2
    print(f"runs 1 and 2: predictions {'identical' if same else 'DIFFER'}; measured step times differ by "
          f"{100 * median:.1f}% (median over rows), {100 * diffs[-1]:.1f}% at most")
EOF
