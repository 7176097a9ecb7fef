#!/bin/bash
# Ctrl-C during one long kernel: a trace whose op (kind "other") asks for
# 1e15 FLOPs runs as a stand-in GEMM of days on this device; launched in
# chunks, it stops between two of them. rok must exit 1 within a second of
# SIGINT through its normal cleanup (not the deadline's hard exit, which
# says "without waiting for the device"), leaving nothing in --dir.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"

if ! "$rok" execute --list-devices > /dev/null 2> "$tmp/stderr"; then
  echo "no OpenCL device: $(cat "$tmp/stderr")" >&2
  exit 77
fi

model=(gpt3-1.3b --set layers=2 --set hidden=128 --set heads=4 --set seq_len=64 --set micro_batch=2
  --set global_batch=4 --set data_parallel=1 --set vocab=512 --set ffn_hidden=512)
"$rok" trace "${model[@]}" -o "$tmp/trace.json" > /dev/null
/usr/bin/python3 - "$tmp/trace.json" <<'EOF'
import json, sys
trace = json.load(open(sys.argv[1]))
op = next(op for op in trace["ops"] if op["kind"] == "gelu")
op["kind"], op["fwd_flops"] = "other", 10**15
json.dump(trace, open(sys.argv[1], "w"))
EOF
# Offloaded to the SSDs (as in execute.sh), so that the run makes its work
# folder in --dir, once its kernels are built.
"$rok" plan "$tmp/trace.json" --hw cpu-2core-virtio --budget 9MiB --host-memory 0 --min-ssd-lifetime 0 \
  -o "$tmp/plan" > /dev/null
grep -q '"offload-nvme"' "$tmp/plan/plan.json" || { echo "the plan offloads nothing to the SSDs" >&2; exit 1; }
disk="$tmp/disk"

# One attempt; on a machine this busy (the suite runs two tests at once,
# under the sanitizers too) the one-second promise can be missed by the
# scheduler alone, so up to three attempts, each one complete.
attempt() {
  rm -rf "$disk"
  mkdir "$disk"
  "$rok" execute "$tmp/plan/schedule.json" --dir "$disk" > "$tmp/out" 2> "$tmp/err" &
  pid=$!
  # Once the work folder is there (the kernels are built), the stand-in
  # comes within milliseconds and then runs for days.
  for _ in $(seq 300); do
    [ -z "$(ls -A "$disk")" ] || break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$(ls -A "$disk")" ] || { echo "the run never made its work folder" >&2; cat "$tmp/err" >&2; kill -KILL $pid; wait $pid || true; return 1; }
  sleep 1
  kill -0 $pid || { echo "the run ended before the signal" >&2; cat "$tmp/err" >&2; return 1; }
  start=$(date +%s%N)
  kill -INT $pid
  status=0
  wait $pid || status=$?
  elapsed=$((($(date +%s%N) - start) / 1000000))
  echo "SIGINT during a 1e15-FLOP stand-in GEMM: exit $status after $elapsed ms"
  [ "$status" -eq 1 ] || { echo "expected return 1, got $status" >&2; cat "$tmp/err" >&2; return 1; }
  # Checks that return rather than exit (expect_in exits): a chunk that
  # outlasts the second on a busy machine ends the run by the deadline,
  # and the next attempt must still run.
  grep -qF "interrupted by signal 2" "$tmp/err" || { echo "no 'interrupted by signal 2' in:" >&2; cat "$tmp/err" >&2; return 1; }
  if grep -q "without waiting for the device" "$tmp/err"; then
    echo "the run was ended by the one-second deadline, not between chunks" >&2
    return 1
  fi
  grep -qF "the run stopped; its work folders are removed" "$tmp/err" ||
    { echo "no 'the run stopped; its work folders are removed' in:" >&2; cat "$tmp/err" >&2; return 1; }
  [ "$elapsed" -lt 1000 ] || { echo "stopped after $elapsed ms, over a second" >&2; return 1; }
  [ -z "$(ls -A "$disk")" ] || { echo "left in --dir:" >&2; ls -la "$disk" >&2; return 1; }
}
for try in 1 2 3; do
  if attempt; then
    exit 0
  fi
  echo "attempt $try failed" >&2
done
exit 1
