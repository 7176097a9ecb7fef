#!/usr/bin/python3
"""Bytes PyTorch saves for backward in one LLaMA-family layer: Qwen2
(grouped-query attention, QKV biases) or Mixtral-style mixture of experts.

The layer is written the way transformers writes these models (separate
q/k/v and gate/up projections, rotary into new storage) in bf16 on the CPU,
with the fused kernels Megatron-Core and FlashAttention use where they
differ from eager PyTorch, as autograd Functions that save what those
kernels save: RMSNorm (its input and fp32 rstd), SwiGLU (gate and up only),
rotary (nothing: its backward is the inverse rotation) and FlashAttention
(q, k, v, output, fp32 log-sum-exp). The MoE block is dropless: softmax
router in fp32, top-k, the routed rows gathered by expert, each expert's
SwiGLU FFN, weighted and summed back per token, and a Switch-style load-balancing
loss. torch.autograd.graph.saved_tensors_hooks catches every saved tensor;
parameters are dropped and each storage counts once. Prints one JSON object.

Usage: saved_bytes_llama.py --seq S --batch B --hidden H --heads A --kv-heads G
         --ffn F [--qkv-bias] [--experts E --top-k K [--shared F2 [--shared-gate]]]
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F


class RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)
        ctx.save_for_backward(x, w, rstd)
        return (x.float() * rstd).to(x.dtype) * w

    @staticmethod
    def backward(ctx, g):
        x, w, rstd = ctx.saved_tensors
        xf, gf = x.float(), (g * w).float()
        n = xf * rstd
        dx = rstd * (gf - n * (gf * n).mean(-1, keepdim=True))
        dw = (g.float() * n).reshape(-1, x.shape[-1]).sum(0)
        return dx.to(x.dtype), dw.to(w.dtype)


class SwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return F.silu(gate) * up

    @staticmethod
    def backward(ctx, g):
        gate, up = ctx.saved_tensors
        s = torch.sigmoid(gate.float())
        silu = gate.float() * s
        dgate = g.float() * up.float() * (s + silu * (1 - s))
        return dgate.to(gate.dtype), (g.float() * silu).to(up.dtype)


class Rotary(torch.autograd.Function):
    """Rotation by fixed angles (a buffer, like transformers' inv_freq)."""

    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.cos, ctx.sin = cos, sin
        a, b = x.chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

    @staticmethod
    def backward(ctx, g):
        a, b = g.chunk(2, dim=-1)
        return torch.cat((a * ctx.cos + b * ctx.sin, b * ctx.cos - a * ctx.sin), dim=-1), None, None


def causal_probs(q, k, v, lse=None):
    """fp32 probabilities of causal attention with k and v repeated over each
    group of query heads, the repeated v, and the log-sum-exp."""
    b, h, s, d = q.shape
    group = h // k.shape[1]
    kk = k.float().repeat_interleave(group, dim=1)
    vv = v.float().repeat_interleave(group, dim=1)
    scores = q.float() @ kk.transpose(-1, -2) / math.sqrt(d)
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    if lse is None:
        lse = torch.logsumexp(scores, dim=-1)
    return torch.exp(scores - lse[..., None]), kk, vv, lse


class FlashAttention(torch.autograd.Function):
    """Causal attention with grouped-query heads, saving what flash-attn saves.
    Takes [b, heads, s, d] views, returns the output as [s, b, heads, d] (the
    layout the output projection reads without a copy), which it saves."""

    @staticmethod
    def forward(ctx, q, k, v):
        p, _, vv, lse = causal_probs(q, k, v)
        out = (p @ vv).to(q.dtype).permute(2, 0, 1, 3).contiguous()
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, out, lse = ctx.saved_tensors
        b, h, s, d = q.shape
        group = h // k.shape[1]
        p, kk, vv, _ = causal_probs(q, k, v, lse)
        gf, out = g.float().permute(1, 2, 0, 3), out.permute(1, 2, 0, 3)
        dv = p.transpose(-1, -2) @ gf
        dp = gf @ vv.transpose(-1, -2)
        ds = p * (dp - (gf * out.float()).sum(-1, keepdim=True)) / math.sqrt(d)
        dq, dk = ds @ kk, ds.transpose(-1, -2) @ q.float()
        fold = lambda t: t.view(b, h // group, group, s, d).sum(2)
        return dq.to(q.dtype), fold(dk).to(k.dtype), fold(dv).to(v.dtype)


def attention(x, w, a, cos, sin):
    s, b, _ = x.shape
    heads, kv, d = a.heads, a.kv_heads, a.hidden // a.heads
    q = F.linear(x, w["q"], w.get("q_b"))
    k = F.linear(x, w["k"], w.get("k_b"))
    v = F.linear(x, w["v"], w.get("v_b"))
    q = Rotary.apply(q.view(s, b, heads, d), cos, sin)
    k = Rotary.apply(k.view(s, b, kv, d), cos, sin)
    heads_first = lambda t: t.permute(1, 2, 0, 3)
    out = FlashAttention.apply(heads_first(q), heads_first(k), heads_first(v.view(s, b, kv, d)))
    return F.linear(out.reshape(s, b, heads * d), w["o"])


def ffn(x, w, prefix=""):
    return F.linear(SwiGLU.apply(F.linear(x, w[prefix + "gate"]), F.linear(x, w[prefix + "up"])), w[prefix + "down"])


def moe(x, w, a):
    s, b, h = x.shape
    tokens = x.reshape(s * b, h)
    probs = torch.softmax(F.linear(tokens, w["router"]).float(), dim=-1)
    top_w, top_i = probs.topk(a.top_k, dim=-1)
    top_w = top_w / top_w.sum(-1, keepdim=True)
    order = top_i.reshape(-1).argsort()
    token = order // a.top_k
    rows = tokens.index_select(0, token)
    weights = top_w.reshape(-1).index_select(0, order).to(x.dtype)
    counts = torch.bincount(top_i.reshape(-1), minlength=a.experts).tolist()
    outs, start = [], 0
    for e, n in enumerate(counts):
        outs.append(ffn(rows[start : start + n], w, f"e{e}."))
        start += n
    y = torch.cat(outs) * weights[:, None]
    # Back to token order and summed over each token's k rows (a gather,
    # not index_add, whose backward in PyTorch 1.13 keeps its source).
    combined = y.index_select(0, order.argsort()).view(s * b, a.top_k, h).sum(1)
    # Switch-style load-balancing loss: routed fraction (no gradient) times mean probability.
    fraction = torch.bincount(top_i.reshape(-1), minlength=a.experts).float() / top_i.numel()
    aux = a.experts * (fraction * probs.mean(0)).sum()
    if a.shared:  # every token through the shared experts, Qwen2-MoE's sigmoid gate on them
        shared = ffn(tokens, w, "s.")
        if a.shared_gate:
            shared = shared * torch.sigmoid(F.linear(tokens, w["s.gate_w"]))
        combined = combined + shared
    return combined.view(s, b, h), aux


def layer(x, w, a):
    s, _, _ = x.shape
    d = a.hidden // a.heads
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    angles = torch.outer(torch.arange(s).float(), inv)[:, None, None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x = x + attention(RMSNorm.apply(x, w["n1"]), w, a, cos, sin)
    n2 = RMSNorm.apply(x, w["n2"])
    if a.experts == 0:
        return x + ffn(n2, w), None
    out, aux = moe(n2, w, a)
    return x + out, aux


def weights(a, dt):
    h, d = a.hidden, a.hidden // a.heads
    shapes = {"q": (a.heads * d, h), "k": (a.kv_heads * d, h), "v": (a.kv_heads * d, h), "o": (h, a.heads * d)}
    if a.qkv_bias:
        shapes.update({"q_b": (a.heads * d,), "k_b": (a.kv_heads * d,), "v_b": (a.kv_heads * d,)})
    experts = [f"e{e}." for e in range(a.experts)] if a.experts else [""]
    for p in experts:
        shapes.update({p + "gate": (a.ffn, h), p + "up": (a.ffn, h), p + "down": (h, a.ffn)})
    if a.experts:
        shapes["router"] = (a.experts, h)
    if a.shared:
        shapes.update({"s.gate": (a.shared, h), "s.up": (a.shared, h), "s.down": (h, a.shared), "s.gate_w": (1, h)})
    w = {n: torch.nn.Parameter(torch.randn(*s, dtype=dt) * 0.02) for n, s in shapes.items()}
    w["n1"] = torch.nn.Parameter(torch.ones(h, dtype=dt))
    w["n2"] = torch.nn.Parameter(torch.ones(h, dtype=dt))
    return w


def main():
    ap = argparse.ArgumentParser()
    for name in ("--seq", "--batch", "--hidden", "--heads", "--kv-heads", "--ffn"):
        ap.add_argument(name, type=int, required=True)
    ap.add_argument("--qkv-bias", action="store_true")
    ap.add_argument("--experts", type=int, default=0)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--shared", type=int, default=0, help="shared experts' FFN width (0: none)")
    ap.add_argument("--shared-gate", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    dt = torch.bfloat16
    w = weights(a, dt)
    params = {t.data_ptr() for t in w.values()}
    x = torch.randn(a.seq, a.batch, a.hidden, dtype=dt, requires_grad=True)
    storages = {}

    def pack(t):
        if t.data_ptr() not in params:
            st = t.storage()
            storages[st.data_ptr()] = max(storages.get(st.data_ptr(), 0), st.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y, aux = layer(x, w, a)
        loss = y.float().sum() + (aux if aux is not None else 0)
    loss.backward()
    print(json.dumps({"saved_bytes": sum(storages.values()), "tensors": len(storages)}))


if __name__ == "__main__":
    main()
