#!/usr/bin/env bash
# Small and medium tensors on the SSDs: the executor's NVMe figures for an
# offload schedule of 0.5-16 MiB tensors beside fio's at the same block
# size and queue depth, and the simulator's prediction of each stream.
#
#   tests/bench/bench-small-tensors.sh [DIR] [--hw HW | --calibrate] [--repeat 2] [--trials 3]
#
# The schedule: a 2-layer GPT (validate-gpt with hidden 512, 8 heads, ffn
# 2048, seq 1024), `rok plan --strategy offload --offload-min-elements
# 65536` (every saved tensor of 64 Ki elements or more goes to the SSDs),
# run by `rok execute --repeat N`. Its nvme_write_bandwidth and
# nvme_read_bandwidth are bytes over the time the stream had a leg running
# (median step). fio: `--bs=1M --iodepth=QD --direct=1 --ioengine=io_uring
# --overwrite=1` on a file of the bytes the step writes, huge-page buffers
# (--mem=shmhuge) when enough are reserved; QD is the profile's
# nvme.queue_depth. HW defaults to the bundled cpu-2core-virtio profile;
# --calibrate runs `rok calibrate --quick --dir DIR` first and uses that
# (predictions worth comparing: its nvme.request_overhead,
# request_overhead_per_mib, leg_overhead and wake come from bursts shaped
# like these legs). DIR defaults to a fresh folder
# under /var/tmp. The load average is printed: on a shared machine the
# figures move with it.
#
# Measured 2026-11-24 on the development VM (2 cores, virtio disk, 64 huge
# pages reserved so that fio too uses them), alternating one-trial runs of
# main's build and this one (ROK=.../rok tests/bench/bench-small-tensors.sh
# --trials 1 [--calibrate]): at load 1.0-1.8, fio 3.2-4.2 GB/s write and
# 2.1-3.1 read, main's build at a median 0.51x / 0.65x of that, with each
# request submitted on its own (no 4 MiB merges) 0.59x / 0.93x; at load
# 2.0-4.8, 0.50x / 0.62x and 0.62x / 0.77x. The executor's own cost is
# 10-20 us per leg; the rest is the disk serving lone legs, which find it
# idle. Predicted from a quick calibration: reads -8% to +25%, writes
# +26% to +53% (the write legs run slower during a step than the
# calibration's bursts: traced per request, a leg takes what a burst of
# its size takes except outliers of 3-90 ms while other processes run;
# the share they took is printed). Later that day, idle, --calibrate
# --trials 2, after the compute thread began to enqueue d2h legs before its
# next kernel and the model had a d2h leg of several commands wait for the
# kernel launched after it: write 0.75x and read 0.91x of fio (2.93 / 2.12
# GB/s); predicted SSD writes +5.2%, reads +9.7%, d2h 122 MB/s against 164
# measured (397-521 against 162-183 without that wait), h2d 183 against
# 245, the step +1.4%. Later, with the size-aware request cost, the
# disk's wake and the I/O threads' short slice, six runs: write 0.62-0.78x,
# read 0.88-0.95x of fio; predicted writes -2% to +38%, reads +9% to +35%,
# following each quick calibration's bursts (1 MiB after 1 ms idle:
# 426-668 us in calibrations minutes apart).
# 2026-11-25, idle, six runs: write 0.64-0.83x, read 0.92-0.98x of fio
# at QD 32. The table of legs at their own depth (added then): 0.72-0.87x
# over four runs; a fifth split them, several requests 0.81x, one 0.52x.
# A lone 1 MiB write after 59 ms idle took 0.95 ms in the step against
# fio's 0.60 (fio beside two busy loops: 0.56). In two more runs' timelines
# a 1 MiB leg with only kernels beside it took 0.54-0.67 ms (0.69-1.10
# after 4.5 ms idle or more), a leg another write joined before it ended
# finished with it, 1.0-7.2 ms after it began (this virtio disk ends
# writes queued close together at one moment, which fio at QD 1 never
# meets), and two lone legs beside a d2h copy of 3-4 MiB took 2.1 and 3.9
# ms, not explained yet. Since a leg's idle counts read legs too (the
# disk's idle, as legs_by_size.py has it), one run: several-request legs
# 0.93x, one-request legs 0.74x. Later (a leg takes a processor from the
# kernels rather than sharing them fairly), on one quick profile
# (--hw FILE), two runs of each build alternated: h2d predicted 434 MB/s
# against 297-323 measured (259 against 362-481 before), d2h 164 against
# 153-244 (160 against 223-277), the step 6.45 s predicted by both against
# 5.17-5.40 (the quick profile's generic-layer op rates); --calibrate
# once: d2h 195 against 223, h2d 289 against 278, writes 0.65x and reads
# 0.98x of fio at QD 32.
# 2026-12-02, idle, --calibrate --trials 3, after a staged write leg began
# on io_uring's own thread (no hand-off of its requests) and with fio's
# one-request figure its whole latency (until then its completion alone,
# clat, which left out the 50-330 us its submitting call takes on this
# disk, and so had fio look 0.5x faster than a leg that pays both): legs
# at their own depth after the same idle, one request 0.95x and 1.14x,
# several 0.81x (one 4 MiB leg of 5.3 ms, queued behind a read; per size
# 0.92-1.05x) and 0.98x; against fio's back-to-back QD n, the disk's best
# that a leg after an idle disk cannot reach, 0.72x and 0.79x; at QD 32,
# writes 0.63x and 0.73x, reads 1.01x and 0.91x (fio 4.2-5.2 GB/s write,
# 2.0-2.1 read). Predicted SSD writes -5% and +24%, reads -2% and +13%,
# following each quick calibration.
# Later that day, once every d2h leg was primed as it was issued and the
# copy queues ran out of order (--calibrate --trials 3, once): at QD 32
# writes 0.84x and reads 1.08x of fio (5.1 / 2.3 GB/s); legs at their own
# depth after the same idle, one request 0.98x, several 0.94x (1.05x of
# fio's bursts after the same idle); predicted writes +14%, reads +4%;
# d2h 869 MB/s measured against 1815 predicted, h2d 174 against 342 (the
# 3-16 MiB legs' host checks beside the kernels: the model gives a leg a
# processor of its own), the step +7%.
# The next session, once the host checksum took two words at a time (7.6
# GB/s against 2.7 in the calibration), --calibrate --trials 3, before
# and after: d2h 1349 -> 3712 MB/s measured (predicted 2274, 4840), h2d
# 707 -> 647 (predicted 309, 452); at QD 32 writes 0.73x and 0.81x,
# reads 1.08x and 0.71x of fio (fio 4.9-7.5 GB/s write, 2.5-3.6 read
# between trials); legs at their own depth, one request 1.19x and 0.95x,
# several 0.89x and 0.82x back to back (1.01x, 0.88x after the same
# idle). The step was predicted 5.5 and 6.4 s against 4.5 and 4.6
# measured (each quick calibration's op rates).
# A later session, with the CPU device's worker threads 5 nice levels
# below rok's (the VM running the steps about twice as slowly; once):
# d2h 2660 MB/s measured against 2986 predicted, h2d 598 against 234,
# the step 10.9 s against 11.7 (earlier that session, before the change,
# a quick calibration without --model and one with it each predicted
# this step within 2%: 10.6 s against 10.8 and 10.4 measured); fio at QD 32 wrote at 0.69-0.91
# GB/s, below the executor's 2.1-2.4 (2.69x), reads 0.94x; legs at their
# own depth, one request 0.93x, several 1.06x of fio.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rok=${ROK:-$root/build/rok}
dir="" hw=cpu-2core-virtio repeat=2 trials=3 calibrate=""
while [ $# -gt 0 ]; do
  case $1 in
    --hw) hw=$2; shift 2 ;;
    --calibrate) calibrate=1; shift ;;
    --repeat) repeat=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "bench-small-tensors.sh: unknown option $1" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
command -v fio >/dev/null || { echo "bench-small-tensors.sh: fio is not installed" >&2; exit 77; }
[ -x "$rok" ] || { echo "bench-small-tensors.sh: $rok not built (ninja -C build)" >&2; exit 2; }
"$rok" execute --list-devices >/dev/null 2>&1 || { echo "bench-small-tensors.sh: no OpenCL device" >&2; exit 77; }

source "$here/fio-lib.bash"
bench_folders bench-small

num() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval('d' + sys.argv[2]))" "$@"; }

echo "== $(uname -n): $(nproc) processors; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$calibrate" ]; then
  "$rok" calibrate --quick --dir "$dir" -o "$work/hw.json" > "$work/calibrate.txt"
  hw=$work/hw.json
  echo "profile: rok calibrate --quick; $(grep -E "fitted to the bursts|idle or more" "$work/calibrate.txt" | sed "s/^ *//" | paste -sd";")"
fi
"$rok" plan validate-gpt --set layers=2 --set hidden=512 --set heads=8 --set ffn_hidden=2048 --set seq_len=1024 \
  --hw "$hw" --strategy offload --offload-min-elements 65536 -o "$work/plan" > /dev/null
qd=$(num "$work/plan/schedule.json" "['hw']['nvme']['queue_depth']")
bytes=$(num "$work/plan/schedule.json" "['predicted']['nvme_write_bytes']")
sizes=$(python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
b = sorted(a['bytes'] for a in s['actions'] if a['stream'] == 'nvme-write')
print(len(b), 'SSD writes per step of', b[0] / 2**20, '-', b[-1] / 2**20, 'MiB')" "$work/plan/schedule.json")
block=1M
describe_disk
fio_memory
echo "schedule: $sizes, $(numfmt --to=iec "$bytes")B per step; fio: bs $block, iodepth $qd, O_DIRECT, io_uring"

fio_bw() { # rw -> bytes/s
  local fields
  fields=$(fio --name=bench --filename="$fio_file" --size="$bytes" --bs="$block" $fio_mem --overwrite=1 \
    --iodepth="$qd" --direct=1 --ioengine=io_uring --rw="$1" --end_fsync=1 --minimal)
  if [ "$1" = write ]; then
    awk -F';' '{ printf "%.0f\n", $47 * 1024 / ($50 / 1000) }' <<<"$fields"
  else
    awk -F';' '{ printf "%.0f\n", $6 * 1024 / ($9 / 1000) }' <<<"$fields"
  fi
}

fw=() fr=() rw=() rr=()
for t in $(seq 1 "$trials"); do
  rm -f "$fio_file"
  fio_bw write > /dev/null # lay the file out: the executor overwrites its own too
  settle
  fw+=("$(fio_bw write)")
  fr+=("$(fio_bw read)")
  rm -f "$fio_file"
  settle
  "$rok" execute "$work/plan/schedule.json" --dir "$dir" --repeat "$repeat" --json -t "$work/timeline.json" > "$work/report.json"
  rw+=("$(num "$work/report.json" "['nvme_write_bandwidth']")")
  rr+=("$(num "$work/report.json" "['nvme_read_bandwidth']")")
  [ "$(num "$work/report.json" "['integrity_failures']")" = 0 ] || echo "note: integrity failures in trial $t"
  echo "trial $t: fio write $(gbs "${fw[-1]}") read $(gbs "${fr[-1]}"); rok execute write $(gbs "${rw[-1]}")" \
    "read $(gbs "${rr[-1]}")"
done
mfw=$(printf '%s\n' "${fw[@]}" | median) mfr=$(printf '%s\n' "${fr[@]}" | median)
mrw=$(printf '%s\n' "${rw[@]}" | median) mrr=$(printf '%s\n' "${rr[@]}" | median)
pw=$(num "$work/report.json" "['predicted']['nvme_write_bandwidth']")
pr=$(num "$work/report.json" "['predicted']['nvme_read_bandwidth']")
echo
echo "median of $trials trials (rok execute: median step of --repeat $repeat each)"
printf '%-6s %12s %14s %8s %14s %8s\n' "" "fio" "rok execute" "rok/fio" "rok predicted" "error"
printf '%-6s %12s %14s %8.3f %14s %+7.1f%%\n' write "$(gbs "$mfw")" "$(gbs "$mrw")" \
  "$(awk -v a="$mrw" -v b="$mfw" 'BEGIN { print a / b }')" "$(gbs "$pw")" \
  "$(awk -v p="$pw" -v m="$mrw" 'BEGIN { print (p - m) / m * 100 }')"
printf '%-6s %12s %14s %8.3f %14s %+7.1f%%\n' read "$(gbs "$mfr")" "$(gbs "$mrr")" \
  "$(awk -v a="$mrr" -v b="$mfr" 'BEGIN { print a / b }')" "$(gbs "$pr")" \
  "$(awk -v p="$pr" -v m="$mrr" 'BEGIN { print (p - m) / m * 100 }')"
# What the executor adds to each SSD leg beyond fio's rate (its hand-offs
# and each request's submission and completion): nvme.request_overhead,
# request_overhead_per_mib and host.copy_overhead are where the simulator
# can be told of it.
python3 - "$work/report.json" "$work/plan/schedule.json" "$mfw" "$mfr" <<'PY'
import json, sys
r, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for stream, key, fio in (("nvme-write", "nvme_write", float(sys.argv[3])), ("nvme-read", "nvme_read", float(sys.argv[4]))):
    legs = sum(1 for a in s["actions"] if a["stream"] == stream)
    moved = r[key + "_bytes"]
    active = moved / r[key + "_bandwidth"] if r[key + "_bandwidth"] > 0 else 0
    print(f"{stream}: {legs} legs, {(active - moved / fio) / max(legs, 1) * 1e3:.2f} ms per leg beyond fio's rate (last trial)")
others = [x for x in r.get("others_cpu_s", []) if x >= 0]
if others:
    import os
    share = sum(others) / (sum(r["step_times_s"]) * len(os.sched_getaffinity(0)))
    print(f"other processes used {share * 100:.0f}% of the processors during the measured steps (last trial)")
PY
for s in d2h h2d; do
  echo "$s: measured $(num "$work/report.json" "['${s}_bandwidth']" | awk '{ printf "%.0f MB/s", $1 / 1e6 }')," \
    "predicted $(num "$work/report.json" "['predicted']['${s}_bandwidth']" | awk '{ printf "%.0f MB/s", $1 / 1e6 }')"
done
echo "step: measured $(num "$work/report.json" "['step_time_s']") s, predicted" \
  "$(num "$work/report.json" "['predicted']['step_time_s']") s (last trial)"
# The same queue depth: each write leg of the last trial's median step
# that found the disk to itself, beside fio at the leg's own depth (reads
# are left out: they are within 10% of QD 32 above, and a read leg's time
# holds its wait for staging slots). A leg of one request is fio at QD 1
# after the idle the leg found (--thinktime, a sleep: tens of microseconds
# longer; --thinktime_spin hung fio 3.33 in 10 of 30 runs here), its whole
# latency (submission and completion, as the leg's time has both). A leg
# of n requests is fio at QD n back to back, the disk's best at that depth,
# which a leg after an idle disk cannot reach (the disk's wake: 130-280 us
# in quick calibrations here), and fio's bursts of n after the same idle.
fio_file=$fio_file bench=$here PYTHONDONTWRITEBYTECODE=1 python3 - "$work/timeline.json" "$work/plan/schedule.json" "$fio_mem" <<'PY'
import json, math, os, statistics, subprocess, sys
sys.path.insert(0, os.environ["bench"])
from legs_by_size import spans
ev = json.load(open(sys.argv[1]))["traceEvents"]
hw = json.load(open(sys.argv[2]))["hw"]["nvme"]
fio_file, mem = os.environ["fio_file"], sys.argv[3]
# Idle is the disk's (since any SSD leg ended), split at the profile's
# wake_after (without one, 4.47 ms: between calibrate's 1 and 20 ms gaps).
wake_after = hw.get("wake_after", 4.47e-3) * 1e6  # us
classes = {}
for stream, b, idle, dur in spans(ev, 1):
    if stream != "nvme-write" or (idle is not None and idle < 0):
        continue  # a read, or queued behind another SSD leg
    idle = math.inf if idle is None else idle
    classes.setdefault((b, idle >= wake_after), []).append((dur, idle))
MiB = 1 << 20
subprocess.run(["fio", "--name=layout", f"--filename={fio_file}", "--size=64M", "--bs=1M", "--direct=1",
                "--rw=write", "--minimal"], check=True, capture_output=True)

def run_fio(args):
    try:
        return subprocess.run(args, check=True, capture_output=True, text=True, timeout=120).stdout
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        print(f"fio: {e}")
        return None

def fio_leg_us(b, idle_us):
    """fio's time for a leg of B bytes at its own depth: back to back (the
    disk's best at that depth) and after the leg's idle (None for one
    request: back to back is not its shape)."""
    n = max(1, -(-b // MiB))
    args = ["fio", "--name=leg", f"--filename={fio_file}", "--size=64M", "--direct=1", "--ioengine=io_uring",
            mem, "--rw=write"]
    t = int(min(idle_us, 50000))
    if n == 1:
        # A lone request's whole latency, submission included as in the leg:
        # on this virtio disk the submitting call often does the write itself
        # (fio's slat 50-330 us, clat 100-410, their sum steady).
        out = run_fio(args + [f"--bs={b}", "--iodepth=1", "--number_ios=15", f"--thinktime={t}",
                              "--lat_percentiles=1", "--output-format=json"])
        return (math.nan if out is None else json.loads(out)["jobs"][0]["write"]["lat_ns"]["percentile"]["50.000000"] / 1e3,
                None)
    out = run_fio(args + ["--bs=1M", f"--iodepth={n}", f"--number_ios={max(16 * n, 64)}", "--output-format=json"])
    best = math.nan if out is None else b / (json.loads(out)["jobs"][0]["write"]["bw_bytes"] / 1e6)
    # Bursts of n requests after the leg's idle, each request submitted on
    # its own as the executor does (one call each would be merged into
    # 4 MiB requests, slower on this disk); a burst's time is its longest
    # latency (its first request's issue to its last completion, less the
    # few microseconds between issues: kind to fio).
    log = os.path.join(os.path.dirname(fio_file), "fio-burst")
    out = run_fio(args + ["--bs=1M", f"--iodepth={n}", "--iodepth_batch_submit=1", f"--iodepth_batch_complete_min={n}",
                          f"--thinktime={t}", f"--thinktime_blocks={n}", f"--number_ios={8 * n}",
                          f"--write_lat_log={log}", "--log_offset=1", "--output-format=json"])
    idle, lat = math.nan, []
    if out is not None:
        lat = [int(line.split(",")[1]) for line in open(f"{log}_lat.1.log")]
    for kind in ("lat", "clat", "slat"):
        if os.path.exists(f"{log}_{kind}.1.log"):
            os.remove(f"{log}_{kind}.1.log")
    if lat:
        idle = statistics.median(max(lat[i:i + n]) for i in range(0, len(lat) - n + 1, n)) / 1e3
    return best, idle

print("\nwrite legs at their own queue depth (last trial's median step; fio at the same size and depth: one request"
      " after the same idle; several back to back, the disk's best, and in bursts after the same idle)")
print(f"{'size':>8} {'QD':>3} {'idle':>9} {'legs':>5} {'rok/leg':>9} {'fio/leg':>9} {'fio/rok':>8} {'fio idle':>9} {'/rok':>6}")
sums = {}
for (b, long_idle), v in sorted(classes.items()):
    rok = statistics.median(d for d, _ in v)
    idle = statistics.median(i for _, i in v)
    n = max(1, -(-b // MiB))
    fio, after_idle = fio_leg_us(b, idle)
    s = sums.setdefault(n == 1, [0.0, 0.0, 0.0])
    s[0] += sum(d for d, _ in v); s[1] += fio * len(v); s[2] += (fio if after_idle is None else after_idle) * len(v)
    shown = f"{idle / 1e3:6.1f} ms" if math.isfinite(idle) else "    first"
    tail = "" if after_idle is None else f" {after_idle:>6.0f} us {after_idle / rok:>6.2f}"
    print(f"{b / MiB:>4.1f} MiB {n:>3} {shown:>9} {len(v):>5} {rok:>6.0f} us {fio:>6.0f} us {fio / rok:>8.2f}{tail}")
for one, (rok, fio, after_idle) in sorted(sums.items(), reverse=True):
    if one:
        print(f"one-request legs that found the disk to themselves: rok {rok / 1e3:.1f} ms,"
              f" fio {fio / 1e3:.1f} ms at the same depth after the same idle ({fio / rok:.2f}x)")
    else:
        print(f"several-request legs that found the disk to themselves: rok {rok / 1e3:.1f} ms,"
              f" fio {fio / 1e3:.1f} ms back to back ({fio / rok:.2f}x),"
              f" {after_idle / 1e3:.1f} ms after the same idle ({after_idle / rok:.2f}x)")
PY
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
