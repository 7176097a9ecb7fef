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
# (median step); then each stream's bursts beside fio's same bursts (below).
# fio: `--bs=1M --iodepth=QD --direct=1 --ioengine=io_uring
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
# Measured on the development VM (2 cores, PoCL, virtio disk, 64 huge
# pages reserved so that fio too uses them), idle, --calibrate --trials 3,
# 2026-12-07 (stop 61, run AK): writes 1.04x and reads 0.94x fio at QD 32
# (fio 2.92 and 2.15 GB/s), 1.13x and 0.86x fio's same bursts; SSD
# streams -10.5% and -12.8% of their prediction, h2d 1158 MB/s against
# 1321. Stop 59 (run AJ), SSD legs timed from their issue: writes
# 1.00x and reads 1.08x fio at QD 32 (fio 3.10 and 1.98 GB/s), 1.09x and
# 0.92x fio's same bursts; SSD streams -9.5% and -21.9% of their
# prediction (its quick calibration's read legs at 131 us, 1.76 GB/s).
# That morning on a new host under it (an Intel Xeon, run AI):
# writes 0.94x and reads 1.09x fio at QD 32 (fio 3.19 and 1.85 GB/s),
# 1.02x and 0.91x fio's same bursts; SSD streams -7.8% and -12.1% of
# their prediction, h2d 1233 MB/s against 1403, d2h 3311 against 3216.
# Before, on the AMD host,
# 2026-12-06 late night, the device's buffers recycled (a freed tensor's
# memory backs the next of its size): h2d 2012 MB/s against 2204
# predicted (734 against 2394 on the build before, an hour earlier: a
# third of its 1 MiB copies went into buffers allocated afresh that step,
# 3.2 ms each for the OS to map the pages in); d2h 4702 against 4752; the
# step 5.10 s against 5.63; SSD writes +11.2%, reads +49.1%; reads 0.75x
# fio at QD 32 (fio's reads 5.4-7.2 GB/s, served from the host's cache)
# and 0.87x fio's same bursts; fio's QD 32 writes 1.88-1.96 GB/s against
# rok's 5.9-6.1 (no write ratio worth quoting; 1.36x fio's same bursts).
# Two runs later (AF, the same recycling without a marker of its own):
# h2d 2236 against 2355, d2h 4860 against 4572, SSD +10.7% and +8.8%,
# reads 0.78x fio at QD 32, 1.23x its same bursts. 2026-12-07 (AH, the
# simulator's changes of that day): h2d 2010 against 2139, d2h 4797
# against 4155, SSD -0.8% and +9.1%, reads 1.02x fio at QD 32, 1.25x its
# same bursts (AG just before: SSD +22.5% and +23.2% on a quick
# calibration's 8.1 GB/s bursts, h2d 1596 against 2274). The four runs before
# on another VM: writes 0.77-0.97x (median 0.91x) and reads 0.80-1.12x
# (0.95x) of fio at QD 32. docs/measurements.md has every run since
# 2026-12-02 (A-AH) and what changed between them.
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
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
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
  "$rok" execute "$work/plan/schedule.json" --dir "$dir" --repeat "$repeat" --json -t "$work/timeline-$t.json" > "$work/report.json"
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
# The same bursts: the SSD legs of each stream in the timeline (its
# steps) of the trial whose rate for it was the median, grouped into
# bursts (legs that overlap: a gather of writes; idle, since any SSD leg
# ended), beside fio moving the same bursts: n 1 MiB requests, each
# submitted on its own as the executor does (one call each would be
# merged into 4 MiB requests, slower on this disk), all n in flight (the
# device's queue holds what it takes, the block layer the rest, as the
# executor's backend does), after the same idle (--thinktime, a sleep:
# tens of microseconds longer); a burst's time is its longest latency,
# first issue to last completion, less the few microseconds between
# issues: kind to fio. Against fio's stream at QD above, rok's bursts pay
# each its start (the disk's wake, the first completion's latency), which
# fio's bursts of the same sizes pay too.
median_trial() { # rates... -> the 1-based index of the median
  printf '%s\n' "$@" | awk '{ print $1, NR }' | sort -g | awk '{ t[NR] = $2 } END { print t[int((NR + 1) / 2)] }'
}
tw=$(median_trial "${rw[@]}") tr=$(median_trial "${rr[@]}")
fio_file=$fio_file bench_dir=$here PYTHONDONTWRITEBYTECODE=1 python3 - "$work/timeline-$tw.json" "$work/timeline-$tr.json" \
  "$work/plan/schedule.json" "$fio_mem" "$qd" "$tw" "$tr" <<'PY'
import json, math, os, statistics, subprocess, sys
sys.path.insert(0, os.environ["bench_dir"])
from ssd_batches import batches  # this script's folder, first on the path above
hw = json.load(open(sys.argv[3]))["hw"]["nvme"]
fio_file, mem, qd = os.environ["fio_file"], sys.argv[4], int(sys.argv[5])
MiB = 1 << 20

def stream_batches(path, stream):
    with open(path) as f:
        return [b for b in batches(json.load(f)["traceEvents"], 1) if b.stream == stream]

# Bursts of each stream (ssd_batches.py's batches), from its median trial.
bursts = {"nvme-write": stream_batches(sys.argv[1], "nvme-write"),
          "nvme-read": stream_batches(sys.argv[2], "nvme-read")}
subprocess.run(["fio", "--name=layout", f"--filename={fio_file}", "--size=256M", "--bs=1M", "--direct=1",
                "--rw=write", "--minimal"], check=True, capture_output=True)

def fio_burst_us(write, n, idle_us):
    log = os.path.join(os.path.dirname(fio_file), "fio-burst")
    t = int(min(idle_us, 50000))
    args = ["fio", "--name=burst", f"--filename={fio_file}", "--size=256M", "--direct=1", "--ioengine=io_uring",
            mem, "--rw=" + ("write" if write else "read"), "--bs=1M", f"--iodepth={n}", "--iodepth_batch_submit=1",
            f"--iodepth_batch_complete_min={n}", f"--thinktime={t}", f"--thinktime_blocks={n}",
            f"--number_ios={6 * n}", f"--write_lat_log={log}", "--log_offset=1", "--output-format=json"]
    try:
        subprocess.run(args, check=True, capture_output=True, text=True, timeout=120)
        lat = [int(line.split(",")[1]) for line in open(f"{log}_lat.1.log")]
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        print(f"fio: {e}")
        lat = []
    for kind in ("lat", "clat", "slat"):
        if os.path.exists(f"{log}_{kind}.1.log"):
            os.remove(f"{log}_{kind}.1.log")
    # Each burst's longest latency; the first burst (after fio's start) left out.
    per = [max(lat[i:i + n]) for i in range(n, len(lat) - n + 1, n)]
    return statistics.median(per) / 1e3 if per else math.nan

wake_after = hw.get("wake_after", 4.47e-3) * 1e6
print(f"\nthe same bursts (the SSD legs that overlap, of the median trial's steps: writes trial {sys.argv[6]}, reads"
      f" {sys.argv[7]}; beside fio's bursts of as many 1 MiB requests, all in flight, after the same idle; QD above: {qd})")
# Bursts alike (stream, requests, bytes, idle class: under wake_after, under
# ten times it, longer) share a row: how many, the median of each.
IDLE = ("< wake", "< 10 wake", "longer")
print(f"{'stream':>10} {'MiB':>6} {'reqs':>5} {'idle':>9} {'bursts':>6} {'rok':>9} {'fio':>9} {'fio/rok':>8}")
cache = {}
for stream, bs in bursts.items():
    write = stream == "nvme-write"
    rok_sum = fio_sum = 0.0
    rows = {}
    for batch in bs:
        idle = batch.idle if batch.idle is not None else math.inf
        cls = 0 if idle < wake_after else 1 if idle < 10 * wake_after else 2
        key = (write, batch.requests, cls)
        if key not in cache:
            cache[key] = fio_burst_us(write, batch.requests, idle if math.isfinite(idle) else 50000)
        rok_sum += batch.duration; fio_sum += cache[key]
        rows.setdefault((batch.requests, batch.bytes, cls), []).append(batch.duration)
    for (n, b, cls), took in sorted(rows.items()):
        rok, fio = statistics.median(took), cache[(write, n, cls)]
        print(f"{stream:>10} {b / MiB:>6.1f} {n:>5} {IDLE[cls]:>9} {len(took):>6} {rok:>6.0f} us {fio:>6.0f} us"
              f" {fio / rok:>8.2f}")
    print(f"{stream}: rok {rok_sum / 1e3:.1f} ms, fio {fio_sum / 1e3:.1f} ms for the same bursts ({fio_sum / rok_sum:.2f}x)")
PY
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
