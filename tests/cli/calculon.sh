#!/bin/bash
# Step times with communication against Calculon (issue 13): GPT-3 175B and
# LLaMA-2 70B, TP 8 + SP, 1F1B and interleaved pipelines, within 15%.
#
# The Calculon figures were taken by running calculon-ai/calculon (stored
# HEAD caa4b11) as docs/simulator.md says: its Llm model run directly on its
# systems/h100_80g_nvl8.json with the GPU figures of h100-80g-sxm-4xgen5
# (float16 matrices 989 TFLOP/s at efficiency 0.6 at every size, mem1 3350
# GB/s at efficiency 1, processing_mode roofline, processor_usage 0 on both
# networks, the networks otherwise as in the file); execution: TP 8 within
# the node (tensor_par_net 0), float16, fused_activation, multihead,
# activation_recompute attn_only, rs_ag with seq_par_ag_redo,
# data_par_overlap, optimizer_sharding, microbatch 1. rok: `rok simulate
# MODEL --hw h100-80g-sxm-4xgen5 --hw-set gpu.matmul_efficiency=0.6
# --strategy selective` at the same layout
# (stage 0's result carries the pipeline's step).
#
# GPT-3 175B (Calculon's models/gpt3-175B.json; 384 GPUs, 192 sequences;
# rok with --set zero_stage=1): the parts agree within a few percent and
# the totals within 4% (docs/simulator.md, "Against Calculon").
#
# LLaMA-2 70B on 256 GPUs, 128 sequences of 4096. Calculon's model has no
# grouped-query attention (multihead or multiquery only), no SwiGLU (two
# MLP matrices) and no embedding or output head; it is given hidden 8192,
# 64 heads of 128, 80 blocks and feedforward 35840, the width at which its
# layer has LLaMA-2's GEMM FLOPs and parameters (4h² + 2h·f = h² (Q, O)
# + 2·h²/8 (K, V) + 3·h·28672: f = 4.375h). rok runs the real LLaMA-2 (GQA,
# SwiGLU, no dropout) with standard attention (--set attention=standard),
# as Calculon's explicit softmax is. rok is 12.8% to 13.6% faster: Megatron
# (the config's framework) hides a column-parallel backward's collectives
# under its GEMMs, which Calculon's execution here (no tensor_par_overlap)
# charges, 0.25 s; charged whole (--set framework=deepspeed) rok is 3.7%
# to 4.9% faster, by part (P 4, D 8): compute with recompute 1.96 s
# against 1.99 s (Calculon's
# attn_only recomputes the whole attention block, 0.143 s, rok's selective
# only its softmax and score tensors, 0.080 s; Calculon also times dropout,
# which LLaMA-2 has not), tensor-parallel exposure 0.722 s against 0.716 s
# plus 0.153 s of all-gathers Calculon redoes for its recompute (rok
# re-runs a collective only with the op it surrounds, and selective
# recompute re-runs no linear), data-parallel 0.150 s against 0.132 s,
# bubble 0.533 s against 0.538 s. rok's last stage also carries the output
# head and loss, which Calculon leaves out. Given the MLP's exact width
# instead (f = 43008: SwiGLU's three matrices as two, K and V at full width)
# Calculon adds the FLOPs GQA saves and is 3.79 s at P 4: rok 11% faster.
# Stage-0 activations held: rok 10.5 GiB (15.0 GiB interleaved), Calculon
# 9.12 GiB (12.8 GiB): SwiGLU keeps its gate and up projections (2 × 28672
# wide) where the equivalent GeLU MLP keeps 35840, which outweighs GQA's
# smaller K and V and the dropout masks Calculon keeps.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
hw=h100-80g-sxm-4xgen5

check() { # CALCULON-SECONDS MODEL SETS...
  local calculon=$1 model=$2
  shift 2
  local sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  # Calculon was given efficiency 0.6 at every size (the profile's figure
  # then; the profile now carries 0.73, measured on an H100): like for like.
  "$rok" simulate "$model" --hw $hw --hw-set gpu.matmul_efficiency=0.6 --strategy selective "${sets[@]}" \
    --json > "$tmp/r.json"
  python3 - "$tmp/r.json" "$calculon" "$model $*" <<'PY'
import json, sys
rok = json.load(open(sys.argv[1]))["step_time_s"]
calculon = float(sys.argv[2])
diff = rok / calculon - 1
print(f"{sys.argv[3]}: rok {rok:.3f} s, Calculon {calculon:.3f} s ({diff:+.1%})")
sys.exit(0 if abs(diff) <= 0.15 else 1)
PY
}

gpt=(zero_stage=1 global_batch=192)
check 3.737 gpt3-175b "${gpt[@]}" pipeline_parallel=8 data_parallel=6 virtual_stages=1
check 3.694 gpt3-175b "${gpt[@]}" pipeline_parallel=16 data_parallel=3 virtual_stages=1
check 3.202 gpt3-175b "${gpt[@]}" pipeline_parallel=8 data_parallel=6 virtual_stages=3
llama=(attention=standard global_batch=128)
check 3.537 llama2-70b "${llama[@]}" pipeline_parallel=4 data_parallel=8 virtual_stages=1
check 3.571 llama2-70b "${llama[@]}" pipeline_parallel=8 data_parallel=4 virtual_stages=1
check 3.240 llama2-70b "${llama[@]}" pipeline_parallel=8 data_parallel=4 virtual_stages=2
check 3.601 llama2-70b "${llama[@]}" pipeline_parallel=16 data_parallel=2 virtual_stages=1
echo "calculon: ok"
