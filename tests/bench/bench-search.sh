#!/bin/bash
# rok search: points per second on 1 MPI rank and on 2 (one thread each),
# and a realistic search (GPT-3 175B on 64-1024 GPUs in 8-GPU nodes) timed
# on this machine, with its projected time on a 16-node cluster of 16 cores
# each (an estimate: perfect dynamic balance, one rank per core).
# Usage: bench-search.sh BUILD/rok [--big]
set -euo pipefail
rok="${1:?usage: $0 BUILD/rok [--big]}"
mpi=(mpirun --oversubscribe)
[ "$(id -u)" -ne 0 ] || mpi+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) (shared: figures vary with other work)"
args=(gpt3-1.3b --hw a100-80g-sxm-4x980pro --gpus 8,16 --tp 1,2 --pp 1 --micro-batch 1,2 --zero 0,1 --no-prune)
rate() { # RANKS
  local start end points
  start=$(date +%s.%N)
  "${mpi[@]}" -n "$1" "$rok" search "${args[@]}" -j 1 -o "$tmp/r$1" > /dev/null
  end=$(date +%s.%N)
  points=$(grep -c ',planned,' "$tmp/r$1/search.csv")
  echo "$1 rank(s): $points points planned in $(echo "$end - $start" | bc) s: $(echo "scale=3; $points / ($end - $start)" | bc) points/s"
}
rate 1
rate 2
cmp "$tmp/r1/search.csv" "$tmp/r2/search.csv" && echo "1 and 2 ranks: byte-identical search.csv"
if [ "${2:-}" = --big ]; then
  start=$(date +%s.%N)
  "$rok" search gpt3-175b --hw a100-80g-sxm-4x980pro --gpus 64:1024:*2 --pp 1 --micro-batch 1,2,4 --no-prune \
    -j "$(nproc)" -o "$tmp/big" > /dev/null
  end=$(date +%s.%N)
  planned=$(grep -c ',planned,' "$tmp/big/search.csv")
  total=$(($(wc -l < "$tmp/big/search.csv") - 1))
  s=$(echo "$end - $start" | bc)
  echo "GPT-3 175B, 64-1024 GPUs: $total points, $planned planned, in $s s on $(nproc) cores"
  echo "projected on 16 nodes x 16 cores (estimate, ideal balance): $(echo "scale=1; $s * $(nproc) / 256" | bc) s"
fi
