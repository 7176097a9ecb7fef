#!/usr/bin/python3
"""Bytes PyTorch itself saves for backward in one transformer layer.

Runs a GPT layer (pre-LayerNorm) or a BERT layer (post-LayerNorm) built from
plain PyTorch ops in bf16 on the CPU, catches every tensor autograd saves
with torch.autograd.graph.saved_tensors_hooks, drops parameters, and counts
each storage once (a tensor saved by two ops, or two views of one storage,
is one allocation), as SSDTrain deduplicates. Prints one JSON object.

Usage: saved_bytes.py --arch gpt|bert --seq S --batch B --hidden H --heads A [--dropout P]
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F


def attention(x, w, p, heads):
    s, b, h = x.shape
    qkv = F.linear(x, w["qkv"])
    q, k, v = qkv.view(s, b, heads, 3 * h // heads).permute(1, 2, 0, 3).chunk(3, dim=-1)
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(h // heads))
    probs = torch.softmax(scores, dim=-1)
    if p > 0:
        probs = F.dropout(probs, p, training=True)
    ctx = torch.matmul(probs, v).permute(2, 0, 1, 3).reshape(s, b, h)
    out = F.linear(ctx, w["proj"])
    return F.dropout(out, p, training=True) if p > 0 else out


def mlp(x, w, p):
    y = F.linear(F.gelu(F.linear(x, w["fc1"]), approximate="tanh"), w["fc2"])
    return F.dropout(y, p, training=True) if p > 0 else y


def layer(arch, x, w, p, heads):
    h = x.shape[-1]
    norm = lambda t, n: F.layer_norm(t, (h,), w[n + "_g"], w[n + "_b"])
    if arch == "gpt":
        x = x + attention(norm(x, "ln1"), w, p, heads)
        return x + mlp(norm(x, "ln2"), w, p)
    x = norm(x + attention(x, w, p, heads), "ln1")
    return norm(x + mlp(x, w, p), "ln2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", choices=["gpt", "bert"], default="gpt")
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--dropout", type=float, default=0.1)
    a = ap.parse_args()
    torch.manual_seed(0)
    h, dt = a.hidden, torch.bfloat16
    shapes = {"qkv": (3 * h, h), "proj": (h, h), "fc1": (4 * h, h), "fc2": (h, 4 * h)}
    w = {n: torch.nn.Parameter(torch.randn(*s, dtype=dt) * 0.02) for n, s in shapes.items()}
    for n in ("ln1", "ln2"):
        w[n + "_g"] = torch.nn.Parameter(torch.ones(h, dtype=dt))
        w[n + "_b"] = torch.nn.Parameter(torch.zeros(h, dtype=dt))
    params = {t.data_ptr() for t in w.values()}
    x = torch.randn(a.seq, a.batch, h, dtype=dt, requires_grad=True)

    storages = {}

    def pack(t):
        if t.data_ptr() not in params:
            st = t.storage()
            key = st.data_ptr()
            storages[key] = max(storages.get(key, 0), st.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = layer(a.arch, x, w, a.dropout, a.heads)
    y.float().sum().backward()
    print(json.dumps({"saved_bytes": sum(storages.values()), "tensors": len(storages)}))


if __name__ == "__main__":
    main()
