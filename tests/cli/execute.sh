#!/bin/bash
# rok execute as a user runs it: schedules of a small GPT planned on the
# 2-core CPU profile, run for real on the OpenCL device (PoCL's CPU device
# here) with tensors offloaded into a scratch directory. Every plan gives
# the same gradients and writes what its schedule says; corruption, a full
# disk and Ctrl-C stop it cleanly and leave nothing behind.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"

# No OpenCL device here: skip.
if ! "$rok" execute --list-devices > "$tmp/devices.txt" 2> "$tmp/stderr"; then
  echo "no OpenCL device: $(cat "$tmp/stderr")" >&2
  exit 77
fi
expect_in "$(cat "$tmp/devices.txt")" "(* the default"
"$rok" execute --list-devices --json > "$tmp/devices.json"
expect_in "$(cat "$tmp/devices.json")" '"global_memory": '

# The first number after "KEY": in a JSON file (top-level keys come first).
num() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -n 1 | sed 's/.*: //'; }
str() { grep -o "\"$2\": \"[^\"]*\"" "$1" | head -n 1 | sed 's/.*: "\(.*\)"/\1/'; }

model=(gpt3-1.3b --hw cpu-2core-virtio --set layers=2 --set hidden=128 --set heads=4 --set seq_len=64
  --set micro_batch=2 --set global_batch=4 --set data_parallel=1 --set vocab=512 --set ffn_hidden=512)
"$rok" plan "${model[@]}" --strategy keep -o "$tmp/keep" > /dev/null
"$rok" plan "${model[@]}" --strategy recompute -o "$tmp/recompute" > /dev/null
"$rok" plan "${model[@]}" --strategy offload -o "$tmp/offload" > /dev/null
# Under a tight budget the planner offloads to host memory, or, without
# host memory for it, to the SSDs (and recomputes).
"$rok" plan "${model[@]}" --budget 9MiB -o "$tmp/rok-host" > /dev/null
"$rok" plan "${model[@]}" --budget 9MiB --host-memory 0 --min-ssd-lifetime 0 -o "$tmp/rok-ssd" > /dev/null
disk="$tmp/disk"
mkdir "$disk"

expect_empty() { # DIR
  if [ -n "$(ls -A "$1")" ]; then
    echo "$1 is not empty:" >&2
    ls -laR "$1" >&2
    exit 1
  fi
}

sum=""
for plan in keep recompute offload rok-host rok-ssd; do
  "$rok" execute "$tmp/$plan/schedule.json" --dir "$disk" --repeat 2 --json -o "$tmp/$plan.report.json" \
    > "$tmp/$plan.json"
  cmp "$tmp/$plan.json" "$tmp/$plan.report.json"
  grep -q '"format": "rok-report/1"' "$tmp/$plan.json"
  for field in step_time_s peak_device_bytes d2h_bytes h2d_bytes nvme_write_bytes nvme_read_bytes \
    nvme_write_bandwidth nvme_read_bandwidth stall_s integrity_failures gradient_checksum predicted; do
    grep -q "\"$field\": " "$tmp/$plan.json" || { echo "$plan: the report lacks $field" >&2; exit 1; }
  done
  [ "$(num "$tmp/$plan.json" integrity_failures)" = 0 ]
  # Bytes written to disk are the schedule's offload bytes.
  [ "$(num "$tmp/$plan.json" nvme_write_bytes)" = "$(num "$tmp/$plan/schedule.json" nvme_write_bytes)" ] || {
    echo "$plan: wrote $(num "$tmp/$plan.json" nvme_write_bytes) bytes," \
      "the schedule says $(num "$tmp/$plan/schedule.json" nvme_write_bytes)" >&2
    exit 1
  }
  this=$(str "$tmp/$plan.json" gradient_checksum)
  [ ${#this} -eq 16 ]
  if [ -z "$sum" ]; then sum=$this; fi
  [ "$this" = "$sum" ] || { echo "$plan: gradient checksum $this, keep gave $sum" >&2; exit 1; }
  expect_empty "$disk"
done
# The plans moved data: host copies, and SSD writes and reads.
[ "$(num "$tmp/rok-host.json" d2h_bytes)" -gt 0 ]
[ "$(num "$tmp/rok-ssd.json" nvme_write_bytes)" -gt 0 ]
[ "$(num "$tmp/rok-ssd.json" nvme_read_bytes)" -gt 0 ]

# The stream threads are real-time where the process may be (chrt can
# take the lowest real-time priority) on two processors or more; refused
# (root without CAP_SYS_NICE and no real-time limit), the fair class with
# a short slice, said in a note on a CPU device, with the same gradients.
threads=$(str "$tmp/rok-ssd.json" stream_threads)
if [ "$(nproc)" -ge 2 ] && chrt -f 1 true 2> /dev/null; then
  [ "$threads" = real-time ] || { echo "stream threads: $threads, where real-time was allowed" >&2; exit 1; }
fi
if [ "$(id -u)" = 0 ] && setpriv --bounding-set -sys_nice prlimit --rtprio=0 true 2> /dev/null; then
  setpriv --bounding-set -sys_nice prlimit --rtprio=0 "$rok" execute "$tmp/rok-ssd/schedule.json" --dir "$disk" \
    --json > "$tmp/fair.json"
  [ "$(str "$tmp/fair.json" stream_threads)" != real-time ]
  [ "$(str "$tmp/fair.json" gradient_checksum)" = "$(str "$tmp/rok-ssd.json" gradient_checksum)" ]
  if [ "$(str "$tmp/fair.json" type)" = cpu ]; then
    expect_in "$(cat "$tmp/fair.json")" "real time refused (not root, no CAP_SYS_NICE"
  fi
fi

# Both I/O backends: io_uring begins a write leg on its own thread, psync
# on the stream's lane; the same bytes and gradients either way.
for io in io_uring psync; do
  "$rok" execute "$tmp/rok-ssd/schedule.json" --dir "$disk" --io "$io" --json > "$tmp/io-$io.json"
  [ "$(str "$tmp/io-$io.json" backend)" = "$io" ]
  [ "$(num "$tmp/io-$io.json" nvme_write_bytes)" = "$(num "$tmp/rok-ssd.json" nvme_write_bytes)" ]
  [ "$(str "$tmp/io-$io.json" gradient_checksum)" = "$sum" ]
  expect_empty "$disk"
done
expect_fail 1 "No space left on device" \
  env ROK_FAULT=enospc@write:2 "$rok" execute "$tmp/rok-ssd/schedule.json" --dir "$disk" --io psync
expect_empty "$disk"

# The table: measured beside predicted; the timeline likewise.
out=$("$rok" execute "$tmp/rok-ssd/schedule.json" --dir "$disk" --repeat 1 --timeline "$tmp/timeline.json")
expect_in "$out" "measured"
expect_in "$out" "predicted"
expect_in "$out" "SSD write"
expect_in "$out" "0 failures"
expect_in "$out" "Gradient checksum $sum"
expect_empty "$disk"
for needle in '"traceEvents"' '"name": "nvme-write"' '"name": "compute, predicted"' '"cat": "prefetch"'; do
  grep -qF "$needle" "$tmp/timeline.json" || { echo "the timeline lacks $needle" >&2; exit 1; }
done

# A byte flipped on disk before it is read back: named, exit 1, nothing left.
expect_fail 1 "came back different from what left the device" \
  env ROK_FAULT=corrupt@read:1 "$rok" execute "$tmp/rok-ssd/schedule.json" --dir "$disk"
expect_in "$(cat "$tmp/stderr")" "integrity: tensor '"
expect_in "$(cat "$tmp/stderr")" "(micro-batch 0)"
expect_in "$(cat "$tmp/stderr")" "read from $disk/rok-"
expect_empty "$disk"

# A full disk: the file and the error named, exit 1, nothing left.
expect_fail 1 "No space left on device" \
  env ROK_FAULT=enospc@write:2 "$rok" execute "$tmp/rok-ssd/schedule.json" --dir "$disk"
expect_in "$(cat "$tmp/stderr")" "writing $disk/rok-"
expect_in "$(cat "$tmp/stderr")" "work folders are removed"
expect_empty "$disk"
expect_fail 1 "Input/output error" \
  env ROK_FAULT=eio@read:2 "$rok" execute "$tmp/rok-ssd/schedule.json" --dir "$disk"
expect_empty "$disk"

# Ctrl-C in the middle of a run: exit non-zero, nothing left.
"$rok" execute "$tmp/rok-ssd/schedule.json" --dir "$disk" --repeat 1000 > "$tmp/int.out" 2> "$tmp/int.err" &
pid=$!
for _ in $(seq 100); do
  [ -z "$(ls -A "$disk")" ] || break
  sleep 0.1
done
[ -n "$(ls -A "$disk")" ] || { echo "the run never made its work folder" >&2; kill -KILL $pid; exit 1; }
sleep 0.5
kill -INT $pid
status=0
wait $pid || status=$?
[ "$status" -ne 0 ] || { echo "interrupted run exited 0" >&2; exit 1; }
expect_in "$(cat "$tmp/int.err")" "interrupted by signal 2"
expect_empty "$disk"

# Bad input: exit 2, located.
sed 's/"stream": "h2d"/"stream": "h2x"/' "$tmp/rok-ssd/schedule.json" > "$tmp/bad.json"
expect_fail 2 "$tmp/bad.json:" "$rok" execute "$tmp/bad.json" --dir "$disk"
expect_fail 2 "missing SCHEDULE" "$rok" execute --dir "$disk"
expect_fail 2 "--repeat 0: must be from 1 to 1000" "$rok" execute "$tmp/keep/schedule.json" --repeat 0
expect_fail 2 "--device -2: must be from 0" "$rok" execute "$tmp/keep/schedule.json" --device -2
expect_fail 2 "--dir DIR" "$rok" execute "$tmp/rok-ssd/schedule.json"
expect_fail 2 "no-such-dir" "$rok" execute "$tmp/rok-ssd/schedule.json" --dir "$tmp/no-such-dir"
expect_fail 2 "No such file or directory" "$rok" execute "$tmp/none.json" --dir "$disk"
expect_fail 2 "--device 99: there" "$rok" execute "$tmp/keep/schedule.json" --device 99
expect_empty "$disk"
"$rok" help execute | grep -q -- "--list-devices"
