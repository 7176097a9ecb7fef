"""Reference models whose module paths mirror Hugging Face's.

Hugging Face transformers is not packaged for Debian, so the tests and the
captured traces use these: a GPT-2 (transformer.h.N.attn.c_attn, ...) and a
LLaMA-style model (model.layers.N.self_attn.q_proj, ...) with HF's module
names and layouts ([batch, seq, hidden], Conv1D weights for GPT-2, tied
embeddings, separate q/k/v projections for LLaMA).

What they save for backward is what rok's trace models (a fused kernel
where the framework fuses), which is where they differ from HF's eager code:
- LlamaRMSNorm saves its input and 1/rms (a fused RMSNorm, as Apex and
  Transformer Engine do); HF's eager RMSNorm also saves the normalised
  tensor before the weight (one more [tokens, hidden] per norm).
- The LLaMA MLP's act_fn is a fused SwiGLU saving gate and up; HF's eager
  SiLU-then-multiply also saves silu(gate) (one more [tokens, ffn]).
- GPT-2 divides scores by a Python float (HF divides by a 0-dim tensor,
  saving 4 more bytes per layer) and uses tanh-GELU (HF's gelu_new is written
  out in Python and saves several [tokens, 4h] intermediates).
`rok_torch.capture` on HF's own classes shows these differences in bytes.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class GPT2Config:
    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    dropout: float = 0.1
    layer_norm_epsilon: float = 1e-5


class Conv1D(nn.Module):
    """HF's GPT-2 projection: weight [in, out], y = x @ W + b."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        y = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return y.view(*x.shape[:-1], y.size(-1))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.n_embd = c.n_head, c.n_embd
        self.c_attn = Conv1D(3 * c.n_embd, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, c.n_embd)
        self.attn_dropout = nn.Dropout(c.dropout)
        self.resid_dropout = nn.Dropout(c.dropout)
        n = c.n_positions
        self.register_buffer("bias", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n),
                             persistent=False)

    def _heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.n_head, -1).permute(0, 2, 1, 3)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = (self._heads(t) for t in self.c_attn(x).split(h, dim=2))
        w = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(h // self.n_head))
        masked = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype)
        w = torch.where(self.bias[:, :, :s, :s], w, masked)
        p = self.attn_dropout(torch.softmax(w, dim=-1))
        ctx = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous().view(b, s, h)
        return self.resid_dropout(self.c_proj(ctx))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(4 * c.n_embd, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, 4 * c.n_embd)
        self.act = nn.GELU(approximate="tanh")
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    """The reference GPT block (pre-LayerNorm), HF's GPT2Block layout."""

    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.mlp = GPT2MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.n_positions, c.n_embd)
        self.drop = nn.Dropout(c.dropout)
        self.h = nn.ModuleList(GPT2Block(c) for _ in range(c.n_layer))
        self.ln_f = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)

    def forward(self, input_ids):
        pos = torch.arange(input_ids.size(-1), device=input_ids.device)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class _CausalLM(nn.Module):
    """forward(input_ids, labels) -> mean cross-entropy (labels per token)."""

    def body(self):
        raise NotImplementedError

    def forward(self, input_ids, labels):
        logits = self.lm_head(self.body()(input_ids))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))


class GPT2LMHeadModel(_CausalLM):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied, as HF does

    def body(self):
        return self.transformer


@dataclass
class LlamaConfig:
    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int = 32
    max_position_embeddings: int = 4096
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0


class _RMSNorm(torch.autograd.Function):
    """Fused RMSNorm: saves x and 1/rms, as Apex/TE kernels do."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, rstd, weight)
        return x * rstd * weight

    @staticmethod
    def backward(ctx, dy):
        x, rstd, weight = ctx.saved_tensors
        n = x * rstd
        g = dy * weight
        dx = rstd * (g - n * (g * n).mean(-1, keepdim=True))
        dw = (dy * n).reshape(-1, n.size(-1)).sum(0)
        return dx, dw, None


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return _RMSNorm.apply(x, self.weight, self.eps)


class _SwiGLU(torch.autograd.Function):
    """silu(gate) * up, saving gate and up (Megatron's fused SwiGLU)."""

    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return F.silu(gate) * up

    @staticmethod
    def backward(ctx, dy):
        gate, up = ctx.saved_tensors
        s = torch.sigmoid(gate)
        return dy * up * s * (1 + gate * (1 - s)), dy * gate * s


class SwiGLU(nn.Module):
    def forward(self, gate, up):
        return _SwiGLU.apply(gate, up)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, theta):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / theta ** (torch.arange(0, dim, 2).float() / dim), persistent=False)

    def forward(self, positions):
        freqs = torch.outer(positions.float(), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv_heads = c.num_attention_heads, c.num_key_value_heads
        self.head_dim = c.hidden_size // c.num_attention_heads
        h, kv = c.hidden_size, self.kv_heads * self.head_dim
        self.q_proj = nn.Linear(h, h, bias=False)
        self.k_proj = nn.Linear(h, kv, bias=False)
        self.v_proj = nn.Linear(h, kv, bias=False)
        self.o_proj = nn.Linear(h, h, bias=False)

    def forward(self, x, cos, sin, mask):
        b, s, h = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        if rep > 1:  # HF's repeat_kv
            k = k[:, :, None].expand(b, self.kv_heads, rep, s, self.head_dim).reshape(b, self.heads, s, -1)
            v = v[:, :, None].expand(b, self.kv_heads, rep, s, self.head_dim).reshape(b, self.heads, s, -1)
        w = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(self.head_dim)) + mask
        p = torch.softmax(w, dim=-1)
        ctx = torch.matmul(p, v).transpose(1, 2).reshape(b, s, h)
        return self.o_proj(ctx)


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)
        self.act_fn = SwiGLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x), self.up_proj(x)))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = LlamaAttention(c)
        self.post_attention_layernorm = LlamaRMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = LlamaMLP(c)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(LlamaDecoderLayer(c) for _ in range(c.num_hidden_layers))
        self.norm = LlamaRMSNorm(c.hidden_size, c.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(c.hidden_size // c.num_attention_heads, c.rope_theta)

    def forward(self, input_ids):
        s = input_ids.size(-1)
        x = self.embed_tokens(input_ids)
        # cos, sin and the mask in the model's dtype, as HF's: float32 ones
        # would promote q, k and the scores of a bf16 model
        cos, sin = (t.to(x.dtype) for t in self.rotary_emb(torch.arange(s, device=input_ids.device)))
        mask = torch.full((s, s), float("-inf"), device=x.device, dtype=x.dtype).triu(1)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x)


class LlamaForCausalLM(_CausalLM):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def body(self):
        return self.model
