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
# 2026-12-02, four runs as the executor changed (README's `rok execute`
# has them as a table): write legs at their own depth after the same idle
# 0.93-1.14x of fio for one request, 0.81-1.06x for several; at QD 32
# writes 0.63-0.84x and reads 0.91-1.08x of fio (the step has one
# tensor's requests in flight, fio 32; fio's own QD 32 writes ran at
# 0.69-7.5 GB/s between days). The last run: d2h 2660 MB/s measured
# against 2986 predicted, h2d 598 against 234, the step 10.9 s against
# 11.7. Each run's quick calibration moves the SSD predictions with it
# (its bursts of 1 MiB after 1 ms idle took 426-668 us minutes apart).
# 2026-12-03, after copies waited for the executor's 20 ms launch in
# progress and h2d legs issued in a kernel were primed: writes 0.79x and
# reads 1.19x of fio at QD 32 (one-request legs 1.14x, several 0.81x at
# their own depth), SSD streams within 2.3% / 4.4% of the prediction, d2h
# 1681 MB/s against 1947, h2d 1249 against 864 (181 before), the step
# 14.6 s against 15.2. After the simulator's SSD lanes (the executor
# runs beside each other the legs it does): writes 0.87x and reads 0.89x
# of fio at QD 32, legs at their own depth 1.00x / 1.01x; SSD streams
# predicted +11.5% / +21.1%, d2h 1440 MB/s against 1475 measured, h2d
# 1181 against 956, the step 6.84 s against 6.51. 2026-12-04, a leg's host
# check at the rate for its size (host.checksum_rates): writes 0.84x and
# reads 0.83x of fio at QD 32, legs 1.10x / 0.97x at their own depth;
# d2h 1714 MB/s predicted against 1547 measured (3924 against 1662 with
# one host rate, the quick calibration's 5.8 GB/s over a 32 MiB buffer),
# h2d 1359 against 892; the SSD streams +62.5% / +83.1% (the quick
# calibration's disk figures: +3.7% / +27.3% an hour before).
# 2026-12-04, read legs begun on the ring's thread (load 1.5 at the
# start): writes 0.81x and reads 0.91x of fio at QD 32; d2h 1529 MB/s
# predicted against 1532, h2d 1223 against 946; SSD streams +38.8% / +13.5%.
# 2026-12-04 evening: as that, 0.77x / 0.70x (SSD streams +51.2% /
# +74.7%); with nvme.completes_together, 0.76x / 0.95x (+1.9% / +26.1%);
# and the hand-off timed on two processors (load 1.8), 0.82x / 0.90x,
# legs 1.05x / 0.98x at their own depth, SSD streams +32.9% / +30.6%
# (the quick calibration's bursts faster than the step's legs: its 1-16
# MiB reads 15-30% faster), d2h 1453 MB/s predicted against 1638.
# With the SSD rates at 1 MiB requests, idle: 0.74x / 0.87x, SSD streams
# +28.3% / +27.1% (+17% in a run minutes later, whose read legs came to
# 0.84-1.01 of their measured time), the step 5.93 s against 6.02.
# 2026-12-04 night: as that, 0.82x / 0.83x (SSD streams +22.3% /
# +32.2%); with a leg's fixed part and each direction's rate fitted to the
# bursts, 0.79x / 0.86x (+24.4% / +8.6%); and the deep wake after 45 ms
# idle, 0.83x / 0.90x (+10.8% / +15.4%), legs at their own depth 0.99x
# (one request) and 0.98x (several, after the same idle) of fio.
# 2026-12-05, 4 KiB copies 1 ms apart for pcie.latency and the copied
# checks on a short-slice thread: 0.83x / 0.90x of fio at QD 32, legs
# 1.02x / 0.95x at their own depth (1.04x after the same idle); d2h
# 1443 MB/s predicted against 1622, h2d 1143 against 996, SSD streams
# +18.0% / +28.2% (calibrated while the VM's GEMM sped up 73%).
# 2026-12-06, a fresh VM, before the change below: 0.75x / 0.78x of fio at
# QD 32 (fio 5.56 / 3.03 GB/s), write legs 0.99x (one request) and 0.98x
# (several; 1.09x after the same idle) at their own depth; SSD streams
# +23.5% / +14.4%. Then a module's small writes gathered (docs/simulator.md,
# NVMe array) and the legs' table replaced by each stream's bursts beside
# fio's same bursts, four runs (load 1.4-1.6 at the start): 0.77-0.97x
# (median 0.91x) writing and 0.80-1.12x (0.95x) reading of fio at QD 32,
# whose stream moved 4.98-5.83 GB/s writing between trials; against fio's
# same bursts 1.09-1.25x writing, 0.76-0.96x reading; SSD streams
# -10.5..+22.3% / -9.9..+24.6%.
# 2026-12-06, another VM, its disk bursts timed in rounds and an SSD leg's
# rate up to its largest burst's: fio's QD 32 writes ran at 1.8-2.1 GB/s
# in every trial that day (rok's legs 5.8-6.3), so the ratio to fio said
# nothing (2.9-3.1x writing; reads 0.66-0.88x). One run each, in turn, with
# the calibration's spinners streaming through memory and with empty
# loops: SSD streams predicted +11.0% / +17.7% against +21.9% / +27.8%.
# 2026-12-06 afternoon, --calibrate --trials 3, idle: reads 0.69x fio at
# QD 32 (0.60-0.92x over the trials), 0.98x fio's same bursts; fio's QD 32
# writes 1.56-1.96 GB/s in all three trials against rok's 4.7-5.9 (no write
# ratio worth quoting); SSD streams predicted +1.6% and +16.9%.
# Earlier figures and the changes between them are in the git log.
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
fio_file=$fio_file PYTHONDONTWRITEBYTECODE=1 python3 - "$work/timeline-$tw.json" "$work/timeline-$tr.json" \
  "$work/plan/schedule.json" "$fio_mem" "$qd" "$tw" "$tr" <<'PY'
import json, math, os, statistics, subprocess, sys
hw = json.load(open(sys.argv[3]))["hw"]["nvme"]
fio_file, mem, qd = os.environ["fio_file"], sys.argv[4], int(sys.argv[5])
MiB = 1 << 20

def ssd_legs(path):
    ev = json.load(open(path))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("pid") == 1 and e.get("name") == "thread_name"}
    return sorted((names[e["tid"]], e["ts"], e["ts"] + e["dur"], e["args"].get("bytes", 0)) for e in ev
                  if e.get("pid") == 1 and e.get("ph") == "X" and names.get(e["tid"]) in ("nvme-write", "nvme-read"))
timelines = {"nvme-write": ssd_legs(sys.argv[1]), "nvme-read": ssd_legs(sys.argv[2])}
# Bursts of each stream; idle before each since any SSD leg ended.
bursts = {"nvme-write": [], "nvme-read": []}
for stream in bursts:
    cur = None
    for s, t0, t1, b in timelines[stream]:
        if s != stream:
            continue
        if cur is not None and t0 <= cur[1]:
            cur[1] = max(cur[1], t1); cur[2] += b; cur[3] += max(1, -(-b // MiB))
        else:
            if cur is not None:
                bursts[stream].append(cur)
            cur = [t0, t1, b, max(1, -(-b // MiB))]
    if cur is not None:
        bursts[stream].append(cur)
def idle_before(legs, t0):
    ends = [t1 for _, s0, t1, _ in legs if t1 <= t0]
    return t0 - max(ends) if ends else math.inf
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
    for t0, t1, b, n in bs:
        idle = idle_before(timelines[stream], t0)
        cls = 0 if idle < wake_after else 1 if idle < 10 * wake_after else 2
        key = (write, n, cls)
        if key not in cache:
            cache[key] = fio_burst_us(write, n, idle if math.isfinite(idle) else 50000)
        rok_sum += t1 - t0; fio_sum += cache[key]
        rows.setdefault((n, b, cls), []).append(t1 - t0)
    for (n, b, cls), took in sorted(rows.items()):
        rok, fio = statistics.median(took), cache[(write, n, cls)]
        print(f"{stream:>10} {b / MiB:>6.1f} {n:>5} {IDLE[cls]:>9} {len(took):>6} {rok:>6.0f} us {fio:>6.0f} us"
              f" {fio / rok:>8.2f}")
    print(f"{stream}: rok {rok_sum / 1e3:.1f} ms, fio {fio_sum / 1e3:.1f} ms for the same bursts ({fio_sum / rok_sum:.2f}x)")
PY
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
