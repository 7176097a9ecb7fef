#!/usr/bin/python3
"""Bytes PyTorch saves for backward in one eager Hugging Face-style layer.

The layer is written out in plain PyTorch ops the way Hugging Face
transformers' eager code paths compute it (attn_implementation="eager"):

- llama: LlamaDecoderLayer. LlamaRMSNorm upcasts to fp32 (x.float(),
  pow(2).mean(-1), rsqrt, x * rsqrt, back to the dtype, times the weight);
  q, k, v projections; rotary as q*cos + rotate_half(q)*sin; repeat_kv
  (expand + reshape) for grouped-query attention; scores scaled by a Python
  float, the additive causal mask, softmax with dtype=float32 then back to
  the dtype, dropout with attention_dropout = 0; o_proj; the MLP as
  down(silu(gate(x)) * up(x)).
- gpt: GPT2Block. nn.LayerNorm; Conv1D (addmm) c_attn; scores divided by a
  0-dim tensor, torch.where against the causal bias buffer, softmax in the
  dtype, attn dropout; c_proj, resid dropout; c_fc, NewGELUActivation (the
  tanh formula in Python ops), c_proj, dropout.

bf16 on the CPU; every tensor autograd saves is caught with
torch.autograd.graph.saved_tensors_hooks and counted once per storage.
Parameters, buffers and the rotary cos/sin tables (made once per forward by
the model, outside its layers) are left out; the latter are reported as
"outside_bytes". Prints one JSON object.
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F


# PyTorch 1.13's MeanBackward1 keeps its input (here the fp32 square); from
# 2.0 on it keeps the sizes alone (tools/autograd/derivatives.yaml). Under
# 1.x the mean is taken as a sum and a division, which keep what 2.x's mean
# keeps, so that the count is the one of current PyTorch.
OLD_MEAN = int(torch.__version__.split(".")[0]) < 2


def mean_last(x):
    if OLD_MEAN:
        return x.sum(-1, keepdim=True) / x.shape[-1]
    return x.mean(-1, keepdim=True)


def rms_norm(x, weight, eps=1e-6):
    dtype = x.dtype
    x = x.to(torch.float32)
    variance = mean_last(x.pow(2))
    x = x * torch.rsqrt(variance + eps)
    return weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


def llama_layer(x, w, a, cos, sin, mask):
    b, s, h = x.shape
    d = h // a.heads
    residual = x
    x = rms_norm(x, w["ln1"])
    q = F.linear(x, w["q"]).view(b, s, a.heads, d).transpose(1, 2)
    k = F.linear(x, w["k"]).view(b, s, a.kv_heads, d).transpose(1, 2)
    v = F.linear(x, w["v"]).view(b, s, a.kv_heads, d).transpose(1, 2)
    c, sn = cos.unsqueeze(1), sin.unsqueeze(1)
    q = q * c + rotate_half(q) * sn
    k = k * c + rotate_half(k) * sn
    n_rep = a.heads // a.kv_heads
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    scores = torch.matmul(q, k.transpose(2, 3)) * (d ** -0.5)
    scores = scores + mask
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    probs = F.dropout(probs, p=0.0, training=True)
    ctx = torch.matmul(probs, v).transpose(1, 2).contiguous().reshape(b, s, h)
    x = residual + F.linear(ctx, w["o"])
    residual = x
    x = rms_norm(x, w["ln2"])
    x = F.linear(F.silu(F.linear(x, w["gate"])) * F.linear(x, w["up"]), w["down"])
    return residual + x


def new_gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def conv1d(x, weight, bias):
    shape = x.shape[:-1] + (weight.shape[1],)
    return torch.addmm(bias, x.reshape(-1, x.shape[-1]), weight).view(shape)


def gpt_layer(x, w, a, bias_buffer):
    b, s, h = x.shape
    d = h // a.heads
    p = a.dropout
    residual = x
    x = F.layer_norm(x, (h,), w["ln1_g"], w["ln1_b"])
    q, k, v = conv1d(x, w["c_attn"], w["c_attn_b"]).split(h, dim=2)
    q, k, v = (t.view(b, s, a.heads, d).permute(0, 2, 1, 3) for t in (q, k, v))
    scores = torch.matmul(q, k.transpose(-1, -2))
    scores = scores / torch.full([], v.size(-1) ** 0.5, dtype=scores.dtype)
    causal = bias_buffer[:, :, :s, :s]
    scores = torch.where(causal, scores, torch.full([], torch.finfo(scores.dtype).min, dtype=scores.dtype))
    probs = F.softmax(scores, dim=-1).type(v.dtype)
    probs = F.dropout(probs, p, training=True)
    ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, s, h)
    x = residual + F.dropout(conv1d(ctx, w["proj"], w["proj_b"]), p, training=True)
    residual = x
    x = F.layer_norm(x, (h,), w["ln2_g"], w["ln2_b"])
    x = conv1d(new_gelu(conv1d(x, w["fc"], w["fc_b"])), w["fc2"], w["fc2_b"])
    return residual + F.dropout(x, p, training=True)


def weights(a, dt):
    h, f = a.hidden, a.ffn
    kv = a.kv_heads * (h // a.heads)
    if a.arch == "llama":
        shapes = {"q": (h, h), "k": (kv, h), "v": (kv, h), "o": (h, h), "gate": (f, h), "up": (f, h),
                  "down": (h, f), "ln1": (h,), "ln2": (h,)}
    else:
        shapes = {"c_attn": (h, 3 * h), "c_attn_b": (3 * h,), "proj": (h, h), "proj_b": (h,), "fc": (h, f),
                  "fc_b": (f,), "fc2": (f, h), "fc2_b": (h,), "ln1_g": (h,), "ln1_b": (h,), "ln2_g": (h,),
                  "ln2_b": (h,)}
    return {n: torch.nn.Parameter(torch.randn(*s, dtype=dt) * 0.02) for n, s in shapes.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", choices=["llama", "gpt"], required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--kv-heads", type=int, default=0)
    ap.add_argument("--ffn", type=int, required=True)
    ap.add_argument("--dropout", type=float, default=0.0)
    a = ap.parse_args()
    a.kv_heads = a.kv_heads or a.heads
    torch.manual_seed(0)
    dt = torch.bfloat16
    w = weights(a, dt)
    s, d = a.seq, a.hidden // a.heads
    # Made once per forward by the model, outside the layers.
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    freqs = torch.outer(torch.arange(s, dtype=torch.float32), inv)
    emb = torch.cat((freqs, freqs), dim=-1).expand(a.batch, s, d)
    cos, sin = emb.cos().to(dt), emb.sin().to(dt)
    mask = torch.full((s, s), torch.finfo(dt).min, dtype=dt).triu(1)[None, None]
    bias_buffer = torch.tril(torch.ones(s, s, dtype=torch.bool))[None, None]
    excluded = {t.storage().data_ptr() for t in list(w.values()) + [mask, bias_buffer]}
    outside = {t.storage().data_ptr() for t in (cos, sin)}
    x = torch.randn(a.batch, s, a.hidden, dtype=dt, requires_grad=True)

    storages, outside_seen = {}, {}

    def pack(t):
        st = t.storage()
        key = st.data_ptr()
        if key in outside:
            outside_seen[key] = st.nbytes()
        elif key not in excluded:
            storages[key] = max(storages.get(key, 0), st.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = llama_layer(x, w, a, cos, sin, mask) if a.arch == "llama" else gpt_layer(x, w, a, bias_buffer)
    y.float().sum().backward()
    print(json.dumps({"saved_bytes": sum(storages.values()), "tensors": len(storages),
                      "outside_bytes": sum(outside_seen.values()), "sizes": sorted(storages.values())}))


if __name__ == "__main__":
    main()
