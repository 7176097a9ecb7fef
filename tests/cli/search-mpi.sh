#!/bin/bash
# rok search and rok sweep under mpirun (Open MPI), on this one machine,
# oversubscribed: 1, 2 and 4 ranks write what a serial run writes, byte for
# byte; a rank stopped or killed mid-run leaves a complete result or a
# clear message, never a hang. Skipped (77) without mpirun or without MPI
# in rok.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
mpi=(mpirun --oversubscribe)
# Open MPI (libmpi and the components it loads) never frees some of what it
# allocates before MPI_Finalize returns; under LeakSanitizer every rank would
# fail on those. Leaks stay detected everywhere else (rok's own search code
# runs under the same sanitizer in search.sh and test-search).
if sanitized; then export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; fi
[ "$(id -u)" -ne 0 ] || mpi+=(--allow-run-as-root)
if ! "${mpi[@]}" -n 2 "$rok" search gpt3-1.3b --hw cpu-2core-virtio --gpus 1 --micro-batch 1 --zero 0 --offload no \
    > /dev/null 2> "$tmp/probe"; then
  grep -q "built without MPI" "$tmp/probe" && { echo "rok built without MPI: skipped"; exit 77; }
  cat "$tmp/probe" >&2
  exit 1
fi
hw=a100-80g-sxm-4x980pro
args=(gpt3-1.3b --set layers=4 --hw $hw --gpus 8,16 --tp 1,2 --pp 1,2 --micro-batch 1,2 --zero 0,1)
# Points that take the planner a while (every layout above keeps everything
# in 80 GiB, in milliseconds): a 4-layer GPT-2 in 1900 MiB, pipelined or not.
slow=(gpt2-small --set layers=4 --set seq_len=512 --hw $hw --hw-set gpu.memory=1900MiB --gpus 4 --tp 1 --pp 1,2
  --micro-batch 8 --zero 1)

"$rok" search "${args[@]}" --threads 1 -o "$tmp/serial" > "$tmp/serial.txt"
# Under the sanitizers (this test 2.6x slower, two tests at once on CI's
# two cores) 1 and 2 ranks; the plain build's suite runs 4 as well.
ranks="1 2 4" sweep_ranks=4
if sanitized; then ranks="1 2" sweep_ranks=2; fi
for n in $ranks; do
  timeout -k 10 300 "${mpi[@]}" -n $n "$rok" search "${args[@]}" -o "$tmp/mpi$n" > "$tmp/mpi$n.txt"
  for f in search.csv search.png search.svg; do cmp "$tmp/serial/$f" "$tmp/mpi$n/$f"; done
  if [ $n -gt 1 ]; then
    expect_in "$(cat "$tmp/mpi$n.txt")" "$n MPI ranks shared the points."
    diff <(grep -v -e "MPI ranks shared" -e "^$" "$tmp/serial.txt") <(grep -v -e "MPI ranks shared" -e "^$" "$tmp/mpi$n.txt")
  fi
done

# rok sweep alike.
sweep=(ssdtrain-bert --hw a100-40g-pcie4-4xp5800x --micro-batch 1:32:*2)
"$rok" sweep "${sweep[@]}" --threads 1 -o "$tmp/sweep1" > "$tmp/sweep1.txt"
timeout -k 10 300 "${mpi[@]}" -n $sweep_ranks "$rok" sweep "${sweep[@]}" -o "$tmp/sweepN" > "$tmp/sweepN.txt"
cmp "$tmp/sweep1.txt" "$tmp/sweepN.txt"
for f in sweep.csv throughput.png throughput.svg memory.png memory.svg; do cmp "$tmp/sweep1/$f" "$tmp/sweepN/$f"; done
# With the planner, a sweep's tasks are chains of micro-batches (each point
# learns from the one before; past one that fits nowhere, none is
# searched): the ranks run whole chains, so the rows are the same bytes.
chain=(gpt3-13b --hw a100-40g-pcie4-4xp5800x --micro-batch 4:16:*2 --nvme-devices 0:1 -s rok --json)
"$rok" sweep "${chain[@]}" --threads 1 > "$tmp/chain1.json"
timeout -k 10 300 "${mpi[@]}" -n 3 "$rok" sweep "${chain[@]}" > "$tmp/chain3.json"
cmp "$tmp/chain1.json" "$tmp/chain3.json"

# A bad option under mpirun: every rank stops, rank 0 says why, once.
status=0
timeout -k 10 60 "${mpi[@]}" -n 2 "$rok" search gpt3-1.3b --hw $hw --gpus 8 --zero 9 > /dev/null 2> "$tmp/bad" || status=$?
[ $status -ne 0 ] && [ $status -ne 124 ] || { echo "bad option under mpirun: exit $status" >&2; exit 1; }
[ "$(grep -c 'ZeRO stages are 0 to 3' "$tmp/bad")" -eq 1 ] || { cat "$tmp/bad" >&2; exit 1; }

# A rank that dies (SIGKILL) while it holds a point, mpirun told to go on
# (--enable-recovery): rok hears nothing from it for --mpi-timeout, gives it
# up and runs its point elsewhere; the result is complete and the same.
# Without --enable-recovery mpirun itself ends the job when a rank dies: a
# message, no files, no hang. (A rank stopped with SIGSTOP is given up the
# same way and the result written, but Open MPI 4.1's mpirun then hung in
# its own teardown after MPI_Abort, ignoring SIGTERM, with every rok
# process gone; so that case is not run here.)
stop_rank() { # SIGNAL OUTPUT MPIRUN-OPTIONS...
  local sig=$1 out=$2
  shift 2
  timeout -k 10 300 "${mpi[@]}" "$@" -n 3 "$rok" search "${slow[@]}" --no-prune --mpi-timeout 3 -o "$out" \
    > "$out.txt" 2> "$out.err" &
  local job=$! victim=""
  for _ in $(seq 300); do # rank 1, once it runs a point (on its thread rok-task)
    for p in $(pgrep -f -- "--mpi-timeout 3 -o $out" || true); do
      tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 &&
        grep -qx rok-task /proc/$p/task/*/comm 2>/dev/null && victim=$p
    done
    [ -n "$victim" ] && break
    sleep 0.1
  done
  [ -n "$victim" ] || { echo "rank 1 never started a point" >&2; kill $job; exit 1; }
  kill -"$sig" "$victim"
  status=0
  wait $job || status=$?
  [ $status -ne 124 ] || { echo "mpirun hung after SIG$sig to a rank" >&2; cat "$out.err" >&2; exit 1; }
}
"$rok" search "${slow[@]}" --no-prune -o "$tmp/full" > /dev/null
stop_rank KILL "$tmp/kill" --enable-recovery
[ $status -eq 0 ] || { cat "$tmp/kill.err" >&2; exit 1; }
# On a loaded machine (the sanitizers' suite, two tests at once) rank 1 can
# take longer than --mpi-timeout to start asking for work; rank 0 then gives
# it up before it holds a point, which is the same promise (a complete,
# identical result) by the other path. Killed after its last answer, it
# holds no task and is given up at the end for not finishing (seen once in
# the README's test command on a clean clone, 2026-12-08): the same
# promise by a third path. Whichever, rank 0 names rank 1.
if ! grep -qE "rok: MPI rank 1 (never asked for work|did not finish within)" "$tmp/kill.err"; then
  expect_in "$(cat "$tmp/kill.err")" "rok: MPI rank 1 sent nothing while it held a task"
fi
cmp "$tmp/full/search.csv" "$tmp/kill/search.csv"
stop_rank KILL "$tmp/abort"
[ $status -ne 0 ] || { echo "a killed rank went unnoticed" >&2; exit 1; }
expect_in "$(cat "$tmp/abort.err")" "exited on signal 9"
[ ! -e "$tmp/abort/search.csv" ] || { echo "a killed job wrote search.csv" >&2; exit 1; }
echo "search-mpi: ok"
