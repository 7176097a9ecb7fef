/* Parameters of latent attention and of mixture-of-experts layers, on one of
 * `t` tensor-parallel ranks (t = 1: the whole layer).
 *
 * Latent attention (DeepSeek-V2/V3) as transformers builds it: queries
 * through a low-rank down-projection and its RMSNorm (q_lora_rank > 0) or
 * one projection; keys and values from one shared down-projection to
 * kv_lora_rank plus the rotary key part, its RMSNorm, and an up-projection
 * to every head's key (head_dim - rope_head_dim) and value (v_head_dim).
 * The down-projections and norms are replicated over ranks, as Megatron's
 * MLA does; the up-projections and the output projection are split.
 *
 * A MoE layer: the router (experts × hidden, plus DeepSeek-V3's per-expert
 * score correction), this rank's experts (experts / ep of them,
 * each a SwiGLU FFN split over tensor ranks), the shared experts (one SwiGLU
 * FFN of their total width) and Qwen2-MoE's shared-expert gate. */
#include "config-arch.h"

guint64 model_mla_params(const RokModel *m, guint64 t) {
  const RokModelArchitecture *a = &m->a;
  guint64 h = m->hidden, heads = m->heads / t, qk = m->head_dim, nope = qk - a->rope_head_dim;
  guint64 q = a->q_lora_rank > 0 ? h * a->q_lora_rank + a->q_lora_rank + a->q_lora_rank * heads * qk
                                 : h * heads * qk;
  guint64 kv = h * (a->kv_lora_rank + a->rope_head_dim) + a->kv_lora_rank +
               a->kv_lora_rank * heads * (nope + a->v_head_dim);
  return q + kv + heads * a->v_head_dim * h;
}

guint64 model_moe_params(const RokModel *m, guint64 t, guint64 ep) {
  const RokModelArchitecture *a = &m->a;
  guint64 h = m->hidden, local = a->experts / ep;
  guint64 router = a->experts * h + (a->router_bias ? a->experts : 0);
  guint64 experts = local * 3 * h * (a->expert_ffn_hidden / t);
  guint64 shared = 3 * h * (a->shared_expert_ffn_hidden / t) + (a->shared_expert_gate ? h : 0);
  return router + experts + shared;
}
