#!/usr/bin/env python3
"""Predicted against measured on a real GPU: capture a LLaMA-style model's
training step with rok_torch, plan it with `rok plan` (baselines and the
planner at two budgets, host-only and with the SSDs), run every plan in
PyTorch with rok_torch.apply, and print rok's predicted peak and step time
beside torch.cuda.max_memory_allocated and the measured step.

    PYTHONPATH=python python3 tests/bench/torch-gpu-table.py --rok build/rok \\
        --hw calibrated.json [--nvme-dir DIR] [--out DIR] [--steps 5]

Runs where PyTorch sees a CUDA GPU (exit 77 elsewhere). The step measured is
what rok predicts: forward and backward under the plan, then a fused Adam
step, synchronised at both ends; the peak is torch.cuda.max_memory_allocated
over that step, after a first step has made Adam's states. The model is in
bf16 with bf16 Adam states ("pure" precision in rok's terms: no fp32 master
copy), so rok's fixed memory and PyTorch's are the same bytes.
"""
import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import rok_torch
from rok_torch.reference import LlamaConfig, LlamaForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rok", required=True)
    ap.add_argument("--hw", required=True, help="this machine's profile (rok calibrate)")
    ap.add_argument("--nvme-dir", default=None, help="where NVMe offloads go (the profile's SSD)")
    ap.add_argument("--out", default="torch-gpu")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=5632)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the script (no peak measured)")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA GPU: nothing to measure")
        sys.exit(77)
    os.makedirs(a.out, exist_ok=True)
    dev = torch.device(a.device)
    gpu = dev.type == "cuda"
    where = torch.cuda.get_device_name() if gpu else "CPU"
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.ffn, num_hidden_layers=a.layers,
                      num_attention_heads=a.heads, num_key_value_heads=a.kv_heads, max_position_embeddings=a.seq)
    model = LlamaForCausalLM(cfg).to(device=dev, dtype=torch.bfloat16)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).to(dev)
    labels = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).to(dev)
    name = f"llama-style-l{a.layers}-h{a.hidden}-s{a.seq}-b{a.batch}-{where.replace(' ', '_')}"

    t0 = time.perf_counter()
    trace = rok_torch.capture(model, (ids, labels), name=name, warmup=5, precision="pure")  # clocks up first
    trace["model"] = {
        "name": name,
        "source": f"Captured by tests/bench/torch-gpu-table.py (rok_torch.capture, PyTorch {torch.__version__}, "
                  f"{where}): rok_torch.reference's llama with random weights, bf16",
        "arch": "llama", "layers": a.layers, "hidden": a.hidden, "heads": a.heads, "kv_heads": a.kv_heads,
        "ffn_hidden": a.ffn, "vocab": a.vocab, "seq_len": a.seq, "micro_batch": a.batch, "global_batch": a.batch,
        "data_parallel": 1, "dtype": "bf16", "dropout": 0.0, "attention": "standard", "optimizer": "adam",
        "precision": "pure",
    }
    tpath = os.path.join(a.out, "trace.json")
    with open(tpath, "w") as f:
        json.dump(trace, f, indent=1)
        f.write("\n")
    print(f"captured {name} in {time.perf_counter() - t0:.1f} s -> {tpath}", flush=True)

    # rok_torch checks no checksums: the executor's per-copy check is not
    # part of what PyTorch runs (the profile keeps the rest of what rok
    # calibrate measured)
    with open(a.hw) as f:
        hw = json.load(f)
    hw.get("host", {}).pop("checksum_bandwidth", None)
    hw.get("host", {}).pop("copy_overhead", None)
    hw_path = os.path.join(a.out, "hw.json")
    with open(hw_path, "w") as f:
        json.dump(hw, f, indent=1)
    if gpu:
        gc.collect()
        n_params = sum(p.numel() for p in model.parameters())
        print(f"after capture: {torch.cuda.memory_allocated() / 2**30:.2f} GiB allocated "
              f"({n_params * 2 / 2**30:.2f} GiB of bf16 weights)", flush=True)

    def plan(tag, *opts):
        d = os.path.join(a.out, tag)
        r = subprocess.run([a.rok, "plan", tpath, "--hw", hw_path, "-o", d, *opts], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"  {tag}: rok plan {' '.join(opts)}: exit {r.returncode}: {r.stderr.strip()[:300]}")
            return None
        with open(os.path.join(d, "plan.json")) as f:
            return d, json.load(f)

    rows = []
    keep = plan("keep", "--strategy", "keep", "--budget", "1000GiB")
    rec = plan("recompute", "--strategy", "recompute", "--budget", "1000GiB")
    K, R = keep[1]["predicted"]["peak_bytes"], rec[1]["predicted"]["peak_bytes"]
    b_hi, b_lo = int(R + 0.6 * (K - R)), int(R + 0.25 * (K - R))
    rows += [("keep", keep), ("recompute (full)", rec)]
    for tag, label, opts in [
        ("selective", "selective", ["--strategy", "selective", "--budget", "1000GiB"]),
        ("rok-hi", f"rok @ {b_hi / 2**30:.1f} GiB", ["--budget", str(b_hi)]),
        ("rok-lo", f"rok @ {b_lo / 2**30:.1f} GiB", ["--budget", str(b_lo)]),
        ("host-lo", f"rok keep/host @ {b_lo / 2**30:.1f} GiB", ["--budget", str(b_lo), "--tiers", "keep,host"]),
        ("host-hi", f"rok keep/host @ {b_hi / 2**30:.1f} GiB", ["--budget", str(b_hi), "--tiers", "keep,host"]),
    ]:
        p = plan(tag, *opts)
        if p is not None:
            rows.append((label, p))

    opt = torch.optim.Adam(model.parameters(), lr=1e-5, **({"fused": True} if gpu else {}))
    results = []
    for label, (d, doc) in rows:
        runner = rok_torch.apply(model, os.path.join(d, "plan.json"), nvme_dir=a.nvme_dir)
        times, peaks, acts = [], [], []
        for i in range(2 + a.steps):
            opt.zero_grad(set_to_none=True)
            if gpu:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated() if gpu else 0  # weights and Adam's states
            if gpu and i == 2 and label == rows[0][0]:
                print(f"  at a step's start: {base / 2**30:.2f} GiB allocated (weights and Adam's states: "
                      f"{6 * sum(p.numel() for p in model.parameters()) / 2**30:.2f} GiB)", flush=True)
            t = time.perf_counter()
            with runner.step():
                model(ids, labels).backward()
            opt.step()
            if gpu:
                torch.cuda.synchronize()
            if i >= 2:
                times.append(time.perf_counter() - t)
                peaks.append(torch.cuda.max_memory_allocated() if gpu else 0)
                acts.append(peaks[-1] - base)
        runner.remove()
        pred = doc["predicted"]
        rep = runner.report
        res = dict(row=label, strategy=doc["strategy"], budget=doc["budget_bytes"],
                   pred_step=pred["step_time_s"], step=statistics.median(times), step_min=min(times),
                   step_max=max(times), pred_peak=pred["peak_bytes"], peak=max(peaks),
                   pred_act=pred["activation_peak_bytes"], act=max(acts),
                   moved=rep["moved"], replays=rep["replays"], deviations=len(rep["deviations"]))
        results.append(res)
        print(f"  {label}: predicted {res['pred_step']:.3f} s {res['pred_peak'] / 2**30:.2f} GiB; measured "
              f"{res['step']:.3f} s ({res['step_min']:.3f}-{res['step_max']:.3f}) {res['peak'] / 2**30:.2f} GiB; "
              f"moved {rep['moved']}", flush=True)

    with open(os.path.join(a.out, "table.json"), "w") as f:
        json.dump(dict(model=trace["model"], device=where, torch=torch.__version__,
                       steps=a.steps, rows=results), f, indent=1)
    print()
    print("| row | predicted step | measured step (min-max) | error | predicted peak | measured peak | error "
          "| predicted above fixed | measured above weights+states |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['row']} | {r['pred_step']:.3f} s | {r['step']:.3f} s ({r['step_min']:.3f}-{r['step_max']:.3f}) | "
              f"{100 * (r['step'] - r['pred_step']) / r['pred_step']:+.1f}% | {r['pred_peak'] / 2**30:.2f} GiB | "
              f"{r['peak'] / 2**30:.2f} GiB | {100 * (r['peak'] - r['pred_peak']) / r['pred_peak']:+.1f}% | "
              f"{r['pred_act'] / 2**30:.2f} GiB | {r['act'] / 2**30:.2f} GiB |")


if __name__ == "__main__":
    main()
