#!/bin/bash
# rok calibrate as a user runs it: a quick calibration into a profile that
# the simulator takes, plausible figures, nothing left behind (Ctrl-C too),
# and bad options. Skips (77) where there is no OpenCL device.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"

# The profile calibrated to stdout below is left at $ROK_TEST_PROFILE for
# cli/docs (tests/CMakeLists.txt); none from an earlier run.
[ -z "${ROK_TEST_PROFILE:-}" ] || rm -f "$ROK_TEST_PROFILE"
disk="$tmp/disk"
mkdir "$disk"
run_or_skip_opencl "$tmp/out" "$tmp/err" "$rok" calibrate --quick --dir "$disk" -o "$disk/hw.json"
cat "$tmp/out" "$tmp/err"

# Only the profile is left in the directory: the work folder is gone.
[ "$(ls -A "$disk")" = "hw.json" ] || { echo "left behind in $disk: $(ls -A "$disk")" >&2; exit 1; }
expect_in "$(cat "$tmp/out")" "Profile \"hw\" written to $disk/hw.json"
expect_in "$(cat "$tmp/out")" "latency (QD1 4 KiB random requests): read"

# The figures: positive, and within what any machine could measure.
field() { # NAME: the first number after "NAME":
  sed -n "s/^ *\"$1\": \([-0-9.e+]*\),\{0,1\}$/\1/p" "$disk/hw.json" | head -1
}
within() { # NAME LOW HIGH
  local v
  v=$(field "$1")
  [ -n "$v" ] || { echo "no $1 in the profile" >&2; exit 1; }
  awk -v v="$v" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
    { echo "$1 = $v, expected within [$2, $3]" >&2; exit 1; }
}
within peak_flops 1e8 1e16
within matmul_efficiency 0.001 1
within hbm_bandwidth 1e8 1e13
within launch_overhead 1e-8 1e-2
within h2d_bandwidth 1e7 1e12
within d2h_bandwidth 1e7 1e12
within memcpy_bandwidth 1e8 1e12
within read_bandwidth 1e6 1e12
within write_bandwidth 1e6 1e12
# An SSD leg's fixed parts, fitted to the bursts (0 where they have none).
within latency 0 1
within write_latency 0 1
# A CPU device (PoCL) shares its processors with the copies: where a
# copy beside a kernel goes, a share of the kernel's length.
if grep -q '"shared_cpus"' "$disk/hw.json"; then
  within copy_kernel_free_at 0.01 1
  expect_in "$(cat "$tmp/out")" "a copy waits until"
  # The race at a launch: both figures, or neither where no copy went
  # ahead; and the copy rates as a step's legs copy, the profile's.
  expect_in "$(cat "$tmp/out")" "after a launch "
  if grep -q '"copy_launch_window"' "$disk/hw.json"; then
    within copy_launch_window 1e-7 2e-4
    within copy_launch_ahead 0.01 1
  elif grep -q '"copy_launch_ahead"' "$disk/hw.json"; then
    echo "copy_launch_ahead without copy_launch_window" >&2
    exit 1
  fi
  expect_in "$(cat "$tmp/out")" "as legs copy "
  # How fast the memory went at the copies against the ops, for validate.
  within calibrated_copies_memory_speed 0.2 5
  expect_in "$(cat "$tmp/out")" "around the copies "
  grep -q 'calibrated_copies_memory_speed: the element-wise add' "$disk/hw.json"
fi
# What other processes used while it ran (from /proc/stat, read here):
# said in the source, recorded where more than none.
grep -q 'calibrated_busy: the share of the processors other processes used' "$disk/hw.json"
if grep -q '"calibrated_busy"' "$disk/hw.json"; then
  within calibrated_busy 0 1
fi
grep -q "\"write_leg_overhead\": " "$disk/hw.json"
# The grid's SSD rates at the executor's 1 MiB requests (the quick grid
# has them), and the leg model fitted to the bursts, the profile's.
expect_in "$(cat "$tmp/out")" "the grid's rates at the executor's requests: write "
expect_in "$(cat "$tmp/out")" "fitted to the bursts: a leg takes "
# The disk's wakes after 20 ms and after 100 ms idle.
expect_in "$(cat "$tmp/out")" "(nvme.wake_after, wake_write, wake_read)"
expect_in "$(cat "$tmp/out")" "(nvme.deep_wake_after, deep_wake_write, deep_wake_read)"
# Bursts begun from the completion of one like them, and what they save.
expect_in "$(cat "$tmp/out")" "right after one:"
expect_in "$(cat "$tmp/out")" "less (nvme.warm_write, warm_read)"
# A request joined to a burst (the quick grid's queue of 32 takes both),
# and the profile says what it found.
expect_in "$(cat "$tmp/out")" "a 64 KiB request a quarter of the way through 4 x 1 MiB took "
if grep -q "the disk completes what was queued together at one moment" "$tmp/out"; then
  grep -q '"completes_together": true' "$disk/hw.json"
else
  expect_in "$(cat "$tmp/out")" "each request completes on its own"
  if grep -q '"completes_together"' "$disk/hw.json"; then
    echo "completes_together in the profile, not in the calibration's finding" >&2
    exit 1
  fi
fi
# The device's checksum of a tensor that leaves it (gpu, before host's).
within checksum_bandwidth 1e7 1e13
expect_in "$(cat "$tmp/out")" "device checksum "
# The host's check of legs just copied out, by their size (64 KiB to 16 MiB).
grep -q '"checksum_rates": \[' "$disk/hw.json"
grep -q '16777216' "$disk/hw.json"
expect_in "$(cat "$tmp/out")" "checked as copied "
within devices 1 1
# The GEMM model fitted to the GEMMs timed, and their shapes recorded.
within sm_count 1 4096
grep -q '"gemm_tile": \[' "$disk/hw.json"
grep -q '"calibrated_shapes": {' "$disk/hw.json"
expect_in "$(cat "$tmp/out")" "GEMM model "
grep -q '"gemm_ops": \[' "$disk/hw.json"
expect_in "$(cat "$tmp/out")" "GEMM ops by shape "
# The reference GEMM timed again after the others: the machine's speed at
# the end against the start, in the table and the profile's source.
expect_in "$(cat "$tmp/out")" "speed at the end "
grep -q 'GEMM was timed again after the other GEMMs and the ops: ' "$disk/hw.json"
grep -q '"gpudirect": false' "$disk/hw.json"
if grep -q '"endurance_pbw"' "$disk/hw.json"; then
  echo "endurance is unknown and must be left out" >&2
  exit 1
fi
grep -q '"source": "Measured on this machine by `rok calibrate` --quick' "$disk/hw.json"

# The simulator and the strategies take it, offloading to the measured disk.
"$rok" simulate gpt3-1.3b --hw "$disk/hw.json" --strategy offload --set layers=2 --json >"$tmp/sim.json"
grep -q '"hw": "hw"' "$tmp/sim.json"
if grep -q '"nvme_write_bytes": 0,' "$tmp/sim.json"; then
  echo "offload wrote nothing to the calibrated disk" >&2
  exit 1
fi
"$rok" simulate gpt3-1.3b --hw "$disk/hw.json" --strategy tba --set layers=2 >/dev/null

# Without -o the profile goes to stdout, named by --name; the grid is the
# user's; Ctrl-C (SIGINT) during the disk passes leaves nothing behind.
rm "$disk/hw.json"
"$rok" calibrate --quick --trials 1 --dir "$disk" --name lab --block 1MiB --qd 8 --file-size 16MiB \
  >"$tmp/stdout.json" 2>/dev/null
grep -q '"name": "lab"' "$tmp/stdout.json"
grep -q 'block sizes 1.00 MiB x queue depths 8 ' "$tmp/stdout.json"
[ -z "$(ls -A "$disk")" ] || { echo "left behind: $(ls -A "$disk")" >&2; exit 1; }
if [ -n "${ROK_TEST_PROFILE:-}" ]; then
  cp "$tmp/stdout.json" "$ROK_TEST_PROFILE.new" && mv "$ROK_TEST_PROFILE.new" "$ROK_TEST_PROFILE"
fi

# --attempts 2 beside processes that take every processor rok leaves idle
# (nice 19, as another user's batch job would): each attempt sees others
# use more than 5% of the processors, so it measures twice, says what each
# attempt saw and which it kept (the steadier, with its warnings), and the
# profile's source says which of the two it is.
busy=()
trap '[ ${#busy[@]} -eq 0 ] || kill "${busy[@]}"; rm -rf "$tmp"' EXIT
for _ in $(seq "$(nproc)"); do
  nice -n 19 sh -c 'while :; do :; done' &
  busy+=($!)
done
"$rok" calibrate --quick --trials 1 --attempts 2 >"$tmp/attempts.json" 2>"$tmp/attempts"
kill "${busy[@]}"
busy=()
grep -q "^rok calibrate: measured 2 times (1: [^;]*, [0-9]*%; 2: [^)]*, [0-9]*%): attempt [12] kept, the steadiest, its \
warnings below$" "$tmp/attempts" || { cat "$tmp/attempts" >&2; exit 1; }
kept=$(sed -n 's/.*: attempt \([12]\) kept.*/\1/p' "$tmp/attempts")
first=$(sed -n 's/.*measured 2 times (1: [^;]*, \([0-9]*\)%; 2: .*/\1/p' "$tmp/attempts")
second=$(sed -n 's/.*; 2: [^)]*, \([0-9]*\)%): attempt.*/\1/p' "$tmp/attempts")
if [ "$first" -ne "$second" ]; then # the steadier kept (equal to a percent: either)
  [ "$kept" -eq "$(( second < first ? 2 : 1 ))" ] || { echo "kept $kept of $first% and $second%" >&2; exit 1; }
fi
grep -q "Of 2 measurements in a row (--attempts), number $kept: the steadiest" "$tmp/attempts.json"
grep -q "^rok calibrate: warning: the machine was busy: other processes used" "$tmp/attempts"

"$rok" calibrate --quick --trials 1 --dir "$disk" --file-size 512MiB --block 128KiB --qd 1 >/dev/null 2>"$tmp/int" &
pid=$!
for _ in $(seq 400); do
  compgen -G "$disk/rok-*" >/dev/null && break
  sleep 0.05
done
kill -INT "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 1 ] || { echo "expected exit 1 after SIGINT, got $status" >&2; cat "$tmp/int" >&2; exit 1; }
expect_in "$(cat "$tmp/int")" "interrupted"
[ -z "$(ls -A "$disk")" ] || { echo "left behind after SIGINT: $(ls -A "$disk")" >&2; exit 1; }

# Bad usage fails at once, before measuring anything.
expect_fail 2 "--dir $tmp/nope: No such file or directory" "$rok" calibrate --quick --dir "$tmp/nope"
expect_fail 2 "not a directory" "$rok" calibrate --quick --dir "$tmp/out"
expect_fail 2 "are the same directory" "$rok" calibrate --quick --dir "$disk" --dir "$disk/"
expect_fail 2 "--block 1000 B: must be a multiple of 4 KiB" "$rok" calibrate --dir "$disk" --block 1000
expect_fail 2 "--block lots" "$rok" calibrate --dir "$disk" --block lots
expect_fail 2 "--qd 0: must be a whole number" "$rok" calibrate --dir "$disk" --qd 0
expect_fail 2 "--trials -1" "$rok" calibrate --dir "$disk" --trials -1
expect_fail 2 "--attempts 0: must be from 1 to 10" "$rok" calibrate --dir "$disk" --attempts 0
expect_fail 2 "--attempts 11: must be from 1 to 10" "$rok" calibrate --dir "$disk" --attempts 11
expect_fail 2 "--file-size 1.00 MiB" "$rok" calibrate --dir "$disk" --file-size 1MiB --block 4MiB
expect_fail 2 "unexpected argument" "$rok" calibrate --dir "$disk" extra
[ -z "$(ls -A "$disk")" ]
echo "ok"
