#!/bin/bash
# rok sweep as a user runs it: the table, --json, the files in -o DIR,
# serial and parallel runs alike, and bad input.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
hw=a100-40g-pcie4-4xp5800x

# The table: a line per point and strategy, the best that fits marked.
out=$("$rok" sweep ssdtrain-bert --hw $hw --micro-batch 8,16,32)
expect_in "$out" "ssdtrain-bert on $hw (GPU memory 40.0 GiB): 3 points, 6 strategies"
expect_in "$out" "micro-batch    strategy    step time"
expect_in "$out" "* the fastest strategy that fits"
[ "$(grep -c '^ *32 ' <<<"$out")" -eq 6 ] || { echo "expected 6 rows at micro-batch 32" >&2; exit 1; }
grep -qE '^ +32 +keep .* NO$' <<<"$out" || { echo "keep should not fit at 32" >&2; exit 1; }
grep -qE '^ +32 +\* (offload|tba|rok) .* yes$' <<<"$out" || { echo "offloading should be best at 32" >&2; exit 1; }
expect_in "$out" "fits up to micro-batch"

# -o DIR: the CSV and the charts; the same bytes with 1 thread and with 2.
"$rok" sweep ssdtrain-bert --hw $hw --micro-batch 1:64:*2 --threads 1 -o "$tmp/one" > "$tmp/one.txt"
"$rok" sweep ssdtrain-bert --hw $hw --micro-batch 1:64:*2 -j 2 -o "$tmp/two" > "$tmp/two.txt"
cmp "$tmp/one.txt" "$tmp/two.txt"
for f in sweep.csv throughput.png throughput.svg memory.png memory.svg; do
  [ -s "$tmp/one/$f" ] || { echo "missing $f" >&2; exit 1; }
  cmp "$tmp/one/$f" "$tmp/two/$f"
done
head -1 "$tmp/one/sweep.csv" | grep -qx "strategy,model,hw,tensor_parallel,pipeline_parallel,data_parallel,virtual_stages,micro_batch,seq_len,nvme_devices,budget_bytes,gpu_memory_bytes,fixed_bytes,step_time_s,tokens_per_s,tokens_per_gpu_s,model_flops_per_gpu_s,mfu,peak_bytes,activation_peak_bytes,required_write_bandwidth,nvme_write_bytes,recompute_s,stall_s,bubble_s,exposed_comm_s,fits"
[ "$(wc -l < "$tmp/one/sweep.csv")" -eq $((1 + 7 * 6)) ] || { echo "expected 42 rows" >&2; exit 1; }
grep -q '^keep,ssdtrain-bert,a100-40g-pcie4-4xp5800x,2,1,1,1,64,1024,4,42949672960,42949672960,[0-9]*,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*,[0-9]*,[0-9]*,0,0,0,[0-9.e+-]*,0,[0-9.e+-]*,0$' "$tmp/one/sweep.csv"
head -c 8 "$tmp/one/throughput.png" | od -c | grep -q 'P   N   G'
grep -q '<svg' "$tmp/one/memory.svg"

# --json: the axes and the rows with the CSV's columns.
"$rok" sweep ssdtrain-bert --hw $hw --micro-batch 4,8 --nvme-devices 0,2 -s keep,offload --json > "$tmp/s.json"
for needle in '"micro_batch": [' '"nvme_devices": [' '"strategies": [' '"rows": [' '"required_write_bandwidth": ' \
  '"activation_peak_bytes": ' '"fits": true'; do
  grep -qF "$needle" "$tmp/s.json" || { echo "JSON lacks $needle" >&2; exit 1; }
done
# No SSDs: offload is left out there (2 + 2 + 2 rows).
[ "$(grep -c '"strategy": ' "$tmp/s.json")" -eq 6 ] || { echo "expected 6 rows" >&2; exit 1; }

# Budgets take units; --set applies beneath the swept values.
out=$("$rok" sweep ssdtrain-bert --hw $hw --budget 24GiB:40GiB:8GiB --set attention=standard -s keep)
expect_in "$out" "3 points, 1 strategy"
expect_in "$out" "24.0 GiB"
out=$("$rok" sweep gpt3-1.3b --hw a100-80g-sxm-4x980pro --seq-len 1024,2048 --micro-batch 1,2 -s selective)
expect_in "$out" "4 points"
expect_in "$out" "Along micro-batch at seq len 1024:"

# Bad input: exit 2 naming the option.
expect_fail 2 "missing --hw" "$rok" sweep ssdtrain-bert
expect_fail 2 "missing MODEL" "$rok" sweep --hw $hw
expect_fail 2 '--micro-batch: invalid range "1:x": "x" is not a whole number' "$rok" sweep ssdtrain-bert --hw $hw --micro-batch 1:x
expect_fail 2 '--micro-batch: invalid range "8:1": it ends before it starts' "$rok" sweep ssdtrain-bert --hw $hw --micro-batch 8:1
expect_fail 2 '--seq-len: invalid range "0,512"' "$rok" sweep ssdtrain-bert --hw $hw --seq-len 0,512
expect_fail 2 '--nvme-devices: invalid range' "$rok" sweep ssdtrain-bert --hw $hw --nvme-devices 4,4
expect_fail 2 '--budget: invalid range "40G"' "$rok" sweep ssdtrain-bert --hw $hw --budget 40G
expect_fail 2 '--budget: a budget of 45.0 GiB is more than the GPU memory of a100-40g-pcie4-4xp5800x (40.0 GiB)' "$rok" sweep ssdtrain-bert --hw $hw --budget 45GiB
expect_fail 2 '--strategies: unknown strategy "fast"' "$rok" sweep ssdtrain-bert --hw $hw -s keep,fast
expect_fail 2 '--threads must be 0' "$rok" sweep ssdtrain-bert --hw $hw --threads -1
expect_fail 2 'at micro_batch=5000000000: --set micro_batch=5000000000' "$rok" sweep ssdtrain-bert --hw $hw --micro-batch 1,5000000000
"$rok" trace gpt3-1.3b -o "$tmp/trace.json" > /dev/null
expect_fail 2 "is not a model config" "$rok" sweep "$tmp/trace.json" --hw $hw
expect_fail 2 "--set mirco_batch=2" "$rok" sweep ssdtrain-bert --hw $hw --set mirco_batch=2
touch "$tmp/file"
expect_fail 1 "$tmp/file" "$rok" sweep ssdtrain-bert --hw $hw --micro-batch 1 -o "$tmp/file/sub"

expect_in "$("$rok" help sweep)" "--micro-batch"
expect_in "$("$rok" sweep --help)" "Exit codes"
echo "sweep: all checks passed"
