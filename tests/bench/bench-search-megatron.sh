#!/bin/bash
# rok search against the layout Megatron-LM reports for GPT-3 175B on 1024
# A100s (Narayanan et al. 2021, "Efficient Large-Scale Language Model
# Training on GPU Clusters Using Megatron-LM", SC'21, Table 1: the weak-
# scaling table, 1.7B on 32 GPUs (TP 1, PP 1, batch 512, 137 TFLOP/s, 44%)
# to 1008B on 3072 (TP 8, PP 64, batch 3072, 163 TFLOP/s, 52%); its 175B
# row: 96 layers of 12288, 96 heads, TP 8, PP 16, 1024 GPUs, batch 1536).
# The paper's runs kept no distributed optimizer (ZeRO 0 in rok's terms),
# used the interleaved schedule with its scatter/gather of pipeline sends
# (section 5.1; how many chunks it does not say), fp16, no sequence
# parallelism, micro-batch 1 (Megatron-LM's examples/pretrain_gpt3_175B.sh
# of 2021-07), and recomputed every layer's activations; its FLOP/s count
# that recompute (96·B·s·l·h²·(1 + s/6h + V/16lh) per step). Its layouts
# were picked by the heuristics of its section 3 (tensor parallelism up to
# a node's 8 GPUs, then pipeline across nodes), not searched.
#
# Searched: TP 1-8, PP dividing 96 (and 1024 / TP), every virtual-stage
# count, micro-batch 1-8, ZeRO 0 and 1 (Megatron's distributed optimizer,
# which the paper's runs predate), with keep and recompute only (OFFLOAD=no)
# or also with offload allowed (OFFLOAD=both, the default); Megatron's own
# layout (TP 8, PP 16, micro-batch 1, ZeRO 0) planned alone at every
# virtual-stage count, and the paper's own run (full recompute, no
# sequence parallelism, fp16, its padded vocabulary of 51200) simulated
# against its measured 140 TFLOP/s per GPU. Prints the best layouts,
# Megatron's best and non-interleaved ones, and the per-GPU FLOP/s in the
# paper's counting. OFFLOAD=no took 1 min 17 s on two shared cores at load
# 6 (README, "Tests and benchmarks", which also gives --zero 0 alone);
# OFFLOAD=both once did not finish within 60 minutes there; `--tp 4,8
# --zero 0 --offload both` alone now takes 10 min 12 s on 2 idle cores
# (offloading does not change the best layout: README).
# Usage: [OFFLOAD=no] bench-search-megatron.sh BUILD/rok [THREADS]
set -euo pipefail
rok="${1:?usage: $0 BUILD/rok [THREADS]}"
threads="${2:-0}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) (shared: times vary with other work)"
common=(gpt3-175b --set framework=megatron --set zero_stage=0 --hw a100-80g-sxm-4x980pro --gpus 1024
  -j "$threads")
start=$(date +%s.%N)
"$rok" search "${common[@]}" --tp 1,2,4,8 --micro-batch 1,2,4,8 --zero 0,1 --offload "${OFFLOAD:-both}" --top 3 \
  -o "$tmp/all" \
  > "$tmp/all.txt"
end=$(date +%s.%N)
cat "$tmp/all.txt"
echo "search: $(echo "$end - $start" | bc) s"
# Megatron's layout at every virtual-stage count: the paper's runs used the
# interleaved schedule (its section 5.1) without saying how many chunks.
"$rok" search "${common[@]}" --tp 8 --pp 16 --micro-batch 1 --zero 0 --offload "${OFFLOAD:-both}" --no-prune \
  -o "$tmp/megatron" > /dev/null
# The paper's own run as Megatron-LM ran it in 2021: full recompute, no
# sequence parallelism, fp16; its measured 140 TFLOP/s is 31.5 s per step.
for v in 1 2 3 6; do
  "$rok" simulate gpt3-175b --set framework=megatron --set zero_stage=0 --hw a100-80g-sxm-4x980pro \
    --set tensor_parallel=8 --set pipeline_parallel=16 --set data_parallel=8 --set micro_batch=1 \
    --set sequence_parallel=false --set dtype=fp16 --set vocab=51200 --set virtual_stages=$v -s recompute --json \
    | python3 -c "import json, sys; r = json.load(sys.stdin); print(f'paper run, v $v, full recompute: {r[\"step_time_s\"]:.2f} s per step (paper: 31.5 s)')"
done
python3 - "$tmp/all/search.csv" "$tmp/megatron/search.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
meg = list(csv.DictReader(open(sys.argv[2])))
# The paper's FLOPs per step (its eq. 3: full recompute), GPT-3 175B.
B, s, l, h, V = 1536, 2048, 96, 12288, 51200
flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
def name(r):
    return (f"TP {r['tensor_parallel']} PP {r['pipeline_parallel']} v {r['virtual_stages']} "
            f"mb {r['micro_batch']}")
def show(label, r):
    t = float(r["step_time_s"])
    print(f"{label}: {name(r)}: step {t:.2f} s, {float(r['tokens_per_s']) / 1e3:.0f} k tokens/s, "
          f"peak {int(r['peak_bytes']) / 2**30:.1f} GiB, recompute {int(r['recompute_bytes']) / 2**30:.2f} GiB, "
          f"offloaded {(int(r['host_bytes']) + int(r['nvme_bytes'])) / 2**30:.2f} GiB per micro-batch; "
          f"{flops / t / 1024 / 1e12:.0f} TFLOP/s per GPU as the paper counts")
for mode in ("0", "1"):
    fit = [r for r in rows if r["offload"] == mode and r["status"] == "planned" and r["fits"] == "1"]
    fit.sort(key=lambda r: -float(r["tokens_per_s"]))
    for i, r in enumerate(fit[:3]):
        show(f"best {i + 1}, offload {'allowed' if mode == '1' else 'no'}", r)
    m = [r for r in meg if r["offload"] == mode and r["status"] == "planned" and r["fits"] == "1"]
    m.sort(key=lambda r: -float(r["tokens_per_s"]))
    for r in m[:1] + [r for r in m if r["virtual_stages"] == "1"][:1]:
        rank = 1 + sum(float(f["tokens_per_s"]) > float(r["tokens_per_s"]) for f in fit)
        show(f"Megatron's layout, offload {'allowed' if mode == '1' else 'no'} ({rank} among planned points)", r)
        if fit:
            print(f"  best / Megatron's: {float(fit[0]['tokens_per_s']) / float(r['tokens_per_s']):.3f}")
PY
