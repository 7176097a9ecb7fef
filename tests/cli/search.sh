#!/bin/bash
# rok search as a user runs it: the summary, the files in -o DIR, serial
# and threaded runs byte for byte, the bounds it prunes with, bad input.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
hw=a100-80g-sxm-4x980pro
args=(gpt3-1.3b --set layers=4 --hw $hw --gpus 8,16 --tp 1,2 --pp 1,2 --micro-batch 1,2 --zero 0,1)

"$rok" search "${args[@]}" --threads 1 -o "$tmp/one" > "$tmp/one.txt"
"$rok" search "${args[@]}" -j 2 -o "$tmp/two" > "$tmp/two.txt"
cmp "$tmp/one.txt" "$tmp/two.txt"
for f in search.csv search.png search.svg; do
  [ -s "$tmp/one/$f" ] || { echo "missing $f" >&2; exit 1; }
  cmp "$tmp/one/$f" "$tmp/two/$f"
done
out=$(cat "$tmp/one.txt")
expect_in "$out" "gpt3-1.3b on $hw (80.0 GiB per GPU): 48 layouts × 2 offload modes = 96 points"
expect_in "$out" "Every pipeline stage planned on its GPU, the pipeline composed"
expect_in "$out" "Best with keep and recompute only:"
expect_in "$out" "Best with offload allowed:"
expect_in "$out" "Where offloading changes the answer:"
csv="$tmp/one/search.csv"
head -1 "$csv" | grep -qx "model,hw,gpus,gpus_per_node,tensor_parallel,pipeline_parallel,virtual_stages,data_parallel,micro_batch,global_batch,zero_stage,offload,status,fixed_bytes,bound_step_time_s,bound_tokens_per_s,step_time_s,tokens_per_s,peak_bytes,fits,keep_bytes,nvme_bytes,host_bytes,recompute_bytes,nvme_write_bytes,ssd_lifetime_years,ssd_limited,pareto"
[ "$(wc -l < "$csv")" -eq 97 ] || { echo "expected 96 rows" >&2; exit 1; }
grep -q ',8,8,1,2,2,4,' "$csv" || { echo "expected PP 2 with 2 virtual stages" >&2; exit 1; }
# Invariants: DP = GPUs / (TP·PP); PP·v divides the 4 layers, v is 1
# without pipelining; a planned step is never faster than its
# compute-only bound; the Pareto points fit; no offload-0 row offloads;
# every pruned point's bound is beaten by --top planned points of its
# group (GPU count, offload mode).
awk -F, 'NR > 1 {
  if ($8 * $5 * $6 != $3) { print "DP*TP*PP != GPUs: " $0; bad = 1 }
  if (4 % ($6 * $7) != 0 || ($6 == 1 && $7 != 1)) { print "bad virtual stages: " $0; bad = 1 }
  if ($13 == "planned" && $17 < $15 * (1 - 1e-12)) { print "faster than its bound: " $0; bad = 1 }
  if ($28 == 1 && ($20 != 1 || $13 != "planned")) { print "a Pareto point that does not fit: " $0; bad = 1 }
  if ($12 == 0 && $22 + $23 > 0) { print "offload in a keep-and-recompute plan: " $0; bad = 1 }
  g = $3 "/" $12
  if ($13 == "planned" && $20 == 1) { n[g]++; tput[g, n[g]] = $18 }
  if ($13 == "pruned-bound") { pruned[g, ++np[g]] = $16 }
} END {
  for (g in np) for (i = 1; i <= np[g]; i++) {
    beaten = 0; for (j = 1; j <= n[g]; j++) if (tput[g, j] > pruned[g, i]) beaten++
    if (beaten < 5) { print "pruned, but its bound is beaten only " beaten " times"; bad = 1 }
  }
  exit bad }' "$csv"
grep -q ',pruned-bound,' "$csv" || { echo "expected some points pruned by the bound" >&2; exit 1; }

# --no-prune plans every point; the best five are the same.
"$rok" search "${args[@]}" --no-prune -o "$tmp/all" > "$tmp/all.txt"
! grep -q ',pruned-bound,' "$tmp/all/search.csv"
diff <(sed -n '/^Best/,$p' "$tmp/one.txt") <(sed -n '/^Best/,$p' "$tmp/all.txt")

# Fixed memory over the GPU's: not planned. GPT-3 175B with no sharding on 8 GPUs.
out=$("$rok" search gpt3-175b --hw $hw --gpus 8 --tp 8 --micro-batch 1 --zero 0 --offload no)
expect_in "$out" "1 layouts × 1 offload mode = 1 points: 0 planned (0 fit), 0 pruned by the compute-only bound, 1 by fixed memory"
expect_in "$out" "none fits"

# --json: the best points with their plans.
"$rok" search "${args[@]}" --offload yes --top 2 --json > "$tmp/best.json"
python3 - "$tmp/best.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["best"]) == 2 and all(p["offload"] for p in d["best"]), d
assert d["best"][0]["tokens_per_s"] >= d["best"][1]["tokens_per_s"]
assert d["best"][0]["plan"].startswith("Recommendation:")
PY

# Bad input: exit 2, a message naming the option.
expect_fail 2 "missing --gpus" "$rok" search gpt3-1.3b --hw $hw
expect_fail 2 "missing --hw" "$rok" search gpt3-1.3b --gpus 8
expect_fail 2 "no layout of gpt3-1.3b fits these GPU counts" "$rok" search gpt3-1.3b --set layers=4 --hw $hw --gpus 8 --pp 3
expect_fail 2 "offload must be no, yes or both" "$rok" search gpt3-1.3b --hw $hw --gpus 8 --offload maybe
expect_fail 2 "--zero: ZeRO stages are 0 to 3" "$rok" search gpt3-1.3b --hw $hw --gpus 8 --zero 4
expect_fail 2 "no layout of gpt3-1.3b fits these GPU counts" "$rok" search gpt3-1.3b --hw $hw --gpus 7 --tp 2
expect_fail 2 "--top must be 1 or more" "$rok" search gpt3-1.3b --hw $hw --gpus 8 --top 0
# Pipelines under a tight budget: a GPT-2 of 4 layers, its last stage (the
# output head) over 1900 MiB when it keeps everything, its first stage
# within: every stage planned (the last one recomputes or offloads, the
# first keeps), 1F1B and interleaved, byte-identical on 1 and 2 threads;
# the step never beats its bound and is the pipeline's (longer than the
# one-stage layout's at the same micro-batch: the bubble).
pipe=(gpt2-small --set layers=4 --set seq_len=512 --hw $hw --hw-set gpu.memory=1900MiB --gpus 4 --tp 1 --pp 2
  --micro-batch 8 --zero 1 --no-prune)
"$rok" search "${pipe[@]}" -j 1 -o "$tmp/pipe1" > "$tmp/pipe1.txt"
"$rok" search "${pipe[@]}" -j 2 -o "$tmp/pipe2" > "$tmp/pipe2.txt"
cmp "$tmp/pipe1.txt" "$tmp/pipe2.txt"
cmp "$tmp/pipe1/search.csv" "$tmp/pipe2/search.csv"
expect_in "$(cat "$tmp/pipe1.txt")" "2 layouts × 2 offload modes = 4 points: 4 planned (4 fit)"
expect_in "$(cat "$tmp/pipe1.txt")" "Stage 1 of 2 (the highest peak): Recommendation: offload to host memory"
awk -F, 'NR > 1 {
  if ($6 != 2 || $13 != "planned" || $20 != 1) { print "expected PP 2, planned, fitting: " $0; bad = 1 }
  if ($17 < $15 * (1 - 1e-12)) { print "faster than its bound: " $0; bad = 1 }
  if ($24 == 0) { print "the last stage should recompute: " $0; bad = 1 }
  if ($12 == 1 && $23 == 0) { print "offload allowed, nothing offloaded: " $0; bad = 1 }
  v[$7] = 1
} END { if (!(1 in v) || !(2 in v)) { print "expected 1F1B and interleaved"; bad = 1 }; exit bad }' "$tmp/pipe1/search.csv"
echo "search: ok"
