#!/usr/bin/python3
"""Parameters transformers instantiates for a config.json, module by module
(the *ForCausalLM classes of transformers 4.4x: embeddings, every layer's
projections, biases and norms, the final norm, the output head unless tied).
Written from the modelling files' structure, independently of rok's own
count. Prints the number.

Usage: transformers_params.py CONFIG.json
"""
import json
import sys


def attention(c, h, heads, kv, d, qkv_bias=False, all_bias=False):
    n = h * heads * d + 2 * h * kv * d + heads * d * h
    if qkv_bias or all_bias:
        n += heads * d + 2 * kv * d
    if all_bias:
        n += h
    return n


def swiglu(h, f):
    return 3 * h * f  # gate_proj, up_proj, down_proj


def llama_like(c, qkv_bias=False, norms=2, moe=None):
    h, heads = c["hidden_size"], c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    d = c.get("head_dim") or h // heads
    layers, vocab = c["num_hidden_layers"], c["vocab_size"]
    n = vocab * h + h  # embed_tokens, final norm
    for i in range(layers):
        n += attention(c, h, heads, kv, d, qkv_bias) + norms * h
        n += moe(i) if moe else swiglu(h, c["intermediate_size"])
    tied = c.get("tie_word_embeddings", c["model_type"] == "gemma2")
    return n + (0 if tied else vocab * h)


def mixtral(c):
    h, e = c["hidden_size"], c["num_local_experts"]
    return llama_like(c, moe=lambda i: e * h + e * swiglu(h, c["intermediate_size"]))


def qwen2_moe(c):
    h, e = c["hidden_size"], c["num_experts"]
    block = e * h + e * swiglu(h, c["moe_intermediate_size"])
    block += swiglu(h, c["shared_expert_intermediate_size"]) + h  # shared_expert, shared_expert_gate
    return llama_like(c, qkv_bias=True, moe=lambda i: block)


def gpt2(c):
    h, f = c["n_embd"], c.get("n_inner") or 4 * c["n_embd"]
    layer = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * f + f) + (f * h + h)
    return c["vocab_size"] * h + c["n_positions"] * h + c["n_layer"] * layer + 2 * h


def gpt_neox(c):
    h, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    layer = 4 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h)
    tied = c.get("tie_word_embeddings", False)
    return v * h + c["num_hidden_layers"] * layer + 2 * h + (0 if tied else v * h)


def deepseek(c):
    h, heads, v = c["hidden_size"], c["num_attention_heads"], c["vocab_size"]
    nope, rope, dv = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    qr, kr = c.get("q_lora_rank"), c["kv_lora_rank"]
    q = h * qr + qr + qr * heads * (nope + rope) if qr else h * heads * (nope + rope)
    attn = q + h * (kr + rope) + kr + kr * heads * (nope + dv) + heads * dv * h
    e, fe = c["n_routed_experts"], c["moe_intermediate_size"]
    moe = e * h + e * swiglu(h, fe) + swiglu(h, fe * (c.get("n_shared_experts") or 0))
    if c.get("topk_method") == "noaux_tc":
        moe += e  # e_score_correction_bias
    n = v * h + h + v * h
    for i in range(c["num_hidden_layers"]):
        is_moe = i >= c.get("first_k_dense_replace", 0) and i % c.get("moe_layer_freq", 1) == 0
        n += attn + 2 * h + (moe if is_moe else swiglu(h, c["intermediate_size"]))
    return n


COUNT = {
    "llama": llama_like,
    "mistral": llama_like,
    "qwen2": lambda c: llama_like(c, qkv_bias=True),
    "gemma2": lambda c: llama_like(c, norms=4),
    "mixtral": mixtral,
    "qwen2_moe": qwen2_moe,
    "gpt2": gpt2,
    "gpt_neox": gpt_neox,
    "deepseek_v2": deepseek,
    "deepseek_v3": deepseek,
}

if __name__ == "__main__":
    config = json.load(open(sys.argv[1]))
    print(COUNT[config["model_type"]](config))
