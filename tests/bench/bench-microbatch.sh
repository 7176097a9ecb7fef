#!/bin/bash
# Throughput against micro-batch size: GPT-3 13B (TP 2, DP 64) and LLaMA-2
# 7B (DP 128) on the bundled A100 SXM 80 GB and H100 SXM 80 GB profiles,
# micro-batch 1, 2, 4, 8, every point under full recompute (the one baseline
# that fits at all four: keeping everything needs 196 GiB at micro-batch 8
# for 13B, so the fastest strategy that fits switches from keep to recompute
# and hides the GEMM effect; `rok sweep -s keep,recompute` shows it).
#
# Three figures per (model, GPU):
# 1. `rok sweep` tokens/s from micro-batch 1 to 8. The sweep keeps the
#    config's micro-batches per step, so the global batch grows 8x and the
#    data-parallel reduction and the optimizer step are amortised over 8x the
#    tokens: that rise is not the GEMMs' alone.
# 2. The same points with the global batch held (`rok simulate --set
#    micro_batch=N`, as `rok plan` does), compute split per token: GEMM-like
#    ops (linear, attention matmuls, flash attention), measured as the
#    compute added when gpu.matmul_efficiency is halved (exact for a GEMM
#    compute-bound at the bundled rate; one memory-bound there, as GPT-3's
#    attention-score matmuls are on the H100, adds only what its math at
#    half the rate takes beyond its memory time, so it is undercounted);
#    the optimizer step (fixed.optimizer_step_bytes at gpu.hbm_bandwidth,
#    plus one launch); and the rest (norms, activations, softmax, launches).
#    The GEMM time per token is where the micro-batch acts.
# 3. Beside rok's GEMM rise, the rise NVIDIA's published rule gives for the
#    same linear-layer shapes: tile quantisation (ceil(M/256)·ceil(N/128)
#    output tiles) and wave quantisation (waves of one 256x128 tile per SM:
#    108 on A100, 132 on H100), NVIDIA, "Matrix Multiplication Background
#    User's Guide", DU-09799-001 (Feb 2023), sections 2.3, 3.1 and 3.2,
#    computed here from the trace's GEMM dims (forward C[m x n] over k; dX
#    [m x k] and dW [k x n] backward). And the measured ceiling the bundled
#    full-wave rate must stay below: S. Bekman, "Machine Learning
#    Engineering", compute/accelerator/README.md, "Maximum Achievable Matmul
#    FLOPS comparison table" (stas00/ml-engineering), bf16 matmul, CUDA 12.1:
#    A100 SXM 267.9 of 312 TFLOP/s (85.9%) at 6912x16384x2048; H100 SXM 792.1
#    of 989 TFLOP/s (80.1%) at 6144x17920x2816 — shapes the size of these
#    models' micro-batch 1-4 GEMMs (M = 2048-16384 tokens, N and K 4096-20480).
#    No published table of measured TFLOP/s against M at these N and K was
#    found (NVIDIA's guides plot such sweeps without tabulating them), so the
#    rise itself is checked against the guide's rule, the level against MAMF,
#    and on one H100 against cuBLAS (PyTorch 2.11.0+cu130, bf16, random data,
#    the forward linear GEMMs of one layer at M = tokens, medians of three
#    interleaved passes, 2026-11-24): GPT-3 13B (TP 2) 497, 445, 448, 435 ns
#    per token at micro-batch 1, 2, 4, 8 (633-723 TFLOP/s, x1.141), LLaMA-2
#    7B 598, 598, 596, 599 (676-680 TFLOP/s, x0.999); the H100 profile's
#    matmul_efficiency 0.73 comes from it.
# Usage: bench-microbatch.sh BUILD/rok
set -euo pipefail
rok="${1:?usage: $0 BUILD/rok}"
cfg="$(cd "$(dirname "$0")/../.." && pwd)/configs/hw"
python3 - "$rok" "$cfg" <<'PY'
import json, math, re, subprocess, sys

rok, cfg = sys.argv[1], sys.argv[2]
MODELS = ["gpt3-13b", "llama2-7b"]
HWS = {"a100-80g-sxm-4x980pro": 267.9e12, "h100-80g-sxm-4xgen5": 792.1e12}  # MAMF, see above
MBS = [1, 2, 4, 8]
GEMM_KINDS = {"linear", "attn_scores", "attn_context", "flash_attention"}

def run(*args):
    return json.loads(subprocess.run([rok, *args, "--json"], check=True, capture_output=True, text=True).stdout)

def rate(text):
    m = re.fullmatch(r"([0-9.]+)\s*([kMGT]?)B/s", text)
    return float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]

def seconds(text):
    m = re.fullmatch(r"([0-9.]+)\s*(us|ms|s)", text)
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]

def util(gpu, b, m, n):
    """NVIDIA's rule: useful share of the SMs' tile-waves (DU-09799-001, 3.1-3.2)."""
    tm, tn = gpu["gemm_tile"]
    tiles = b * math.ceil(m / tm) * math.ceil(n / tn)
    waves = math.ceil(tiles / gpu["sm_count"])
    return b * m * n / (waves * gpu["sm_count"] * tm * tn)

def rule_seconds_per_token(trace, gpu):
    """Linear layers' fwd+bwd time per token at a full-wave rate of 1, by the rule."""
    t = 0.0
    for op in trace["ops"]:
        if op["kind"] != "linear":
            continue
        b, m, n, k = op["dims"]
        t += op["fwd_flops"] / util(gpu, b, m, n)
        t += op["bwd_flops"] / 2 / util(gpu, b, m, k) + op["bwd_flops"] / 2 / util(gpu, b, k, n)
    return t / trace["tokens_per_micro_batch"]

for model in MODELS:
    for hw, mamf in HWS.items():
        prof = json.load(open(f"{cfg}/{hw}.json"))
        gpu = prof["gpu"]
        e = float(gpu["matmul_efficiency"])
        peak = float(gpu["peak_flops"])
        sweep = {r["micro_batch"]: r for r in run("sweep", model, "--hw", hw, "--micro-batch", "1,2,4,8",
                                                   "-s", "recompute", "--threads=1")["rows"]}
        print(f"{model} on {hw} (full recompute; full-wave GEMM rate {e:g} x {peak / 1e12:g} = "
              f"{e * peak / 1e12:.0f} TFLOP/s, MAMF measured {mamf / 1e12:.1f})")
        print("  mb  sweep tok/s | held global batch, per token (us): GEMM  other  optimizer | "
              "GEMM share  rule's GEMM time")
        rows = {}
        for mb in MBS:
            base = ["--hw", hw, "--set", f"micro_batch={mb}"]
            sim = run("simulate", model, *base, "-s", "recompute")
            slow = run("simulate", model, *base, "-s", "recompute", "--hw-set", f"gpu.matmul_efficiency={e / 2}")
            trace = run("trace", model, *base)
            tokens = trace["tokens_per_micro_batch"] * trace["micro_batches_per_step"]
            opt = trace["fixed"]["optimizer_step_bytes"] / rate(gpu["hbm_bandwidth"]) + seconds(gpu["launch_overhead"])
            gemm = slow["compute_s"] - sim["compute_s"]
            other = sim["compute_s"] - gemm - opt
            rule = rule_seconds_per_token(trace, gpu)
            rows[mb] = (sweep[mb]["tokens_per_s"], gemm / tokens, other / tokens, opt / tokens, rule)
            print(f"  {mb:2d}  {sweep[mb]['tokens_per_s']:11.0f} | {1e6 * gemm / tokens:41.1f} "
                  f"{1e6 * other / tokens:6.1f} {1e6 * opt / tokens:10.3f} | "
                  f"{100 * gemm / sim['compute_s']:9.1f}%  {rule / rows[1][4]:.3f} x mb 1")
        s1, s8 = rows[1], rows[8]
        fb1, fb8 = s1[1] + s1[2], s8[1] + s8[2]
        print(f"  mb 1 -> 8: sweep tokens/s x{s8[0] / s1[0]:.3f} (global batch x8); "
              f"fwd+bwd+recompute per token x{fb1 / fb8:.3f}; GEMM per token x{s1[1] / s8[1]:.3f}; "
              f"NVIDIA's rule on the linear shapes x{s1[4] / s8[4]:.3f}; optimizer "
              f"{100 * s1[3] / (fb1 + s1[3]):.2f}% of compute at mb 1")
        # rok's linear GEMM rate at mb 8 by the rule, against the measured best-shape ceiling.
        flops = sum(o["fwd_flops"] + o["bwd_flops"] for o in trace["ops"] if o["kind"] == "linear")
        r8 = flops / trace["tokens_per_micro_batch"] / (s8[4] / (e * peak))
        print(f"  linear GEMMs at mb 8: {r8 / 1e12:.0f} TFLOP/s = {100 * r8 / mamf:.0f}% of the MAMF ceiling\n")
PY
