/* Latent attention (DeepSeek-V2/V3) as Megatron-Core's MLA runs it, without
 * the absorbed-weight inference kernel:
 *
 *   queries  x -> q_down [T, qr] -> RMSNorm -> q_up [T, H·dqk] (or one
 *            projection when q_lora_rank is 0)
 *   keys and values  x -> kv_down [T, kr + dr] (the latent and the shared
 *            rotary key) -> RMSNorm of the latent -> kv_up [T, H·(dn + dv)]
 *   rotary   the queries, and the keys assembled per head (their rotary
 *            part shared), into new storage [T, 2·H·dqk]
 *   core     standard or flash attention with dqk-wide queries and keys and
 *            dv-wide values; the values are a slice of kv_up's output, so
 *            that whole storage is what backward keeps
 *   output   [T, H·dv] -> h.
 * The down-projections are replicated over tensor-parallel ranks, the rest
 * split by heads. */
#include "transformer-parts.h"

static guint queries(RokBuilder *b, guint x, guint64 tokens, guint64 width) {
  const RokModel *m = b->model;
  guint64 h = m->hidden, qr = m->a.q_lora_rank;
  if (qr == 0) {
    guint q = trace_build_linear(b, "attn.q", x, tokens, h, width);
    return ROK_TENSOR(b, "attn.q_out", q, b->dtype, tokens, width);
  }
  guint down = trace_build_linear(b, "attn.q_down", x, tokens, h, qr);
  guint latent = ROK_TENSOR(b, "attn.q_down_out", down, b->dtype, tokens, qr);
  guint normed = trace_build_norm(b, "attn.q_norm", ROK_OP_RMSNORM, latent, tokens, qr);
  guint up = trace_build_linear(b, "attn.q_up", normed, tokens, qr, width);
  return ROK_TENSOR(b, "attn.q_up_out", up, b->dtype, tokens, width);
}

guint trace_mla_attention(RokBuilder *b, guint x, guint64 tokens, guint64 heads, guint64 window) {
  const RokModel *m = b->model;
  const RokModelArchitecture *a = &m->a;
  guint64 h = m->hidden, dqk = m->head_dim, dv = a->v_head_dim, dn = dqk - a->rope_head_dim;
  guint64 kr = a->kv_lora_rank, seq = tokens / m->micro_batch;
  guint q = queries(b, x, tokens, heads * dqk);
  guint down = trace_build_linear(b, "attn.kv_down", x, tokens, h, kr + a->rope_head_dim);
  guint latent = ROK_TENSOR(b, "attn.kv_down_out", down, b->dtype, tokens, kr + a->rope_head_dim);
  guint normed = trace_build_norm(b, "attn.kv_norm", ROK_OP_RMSNORM, latent, tokens, kr);
  guint up = trace_build_linear(b, "attn.kv_up", normed, tokens, kr, heads * (dn + dv));
  guint kv = ROK_TENSOR(b, "attn.kv_up_out", up, b->dtype, tokens, heads * (dn + dv));
  /* The rotary op reads the queries and the keys' parts (the nope keys from
   * kv_up, the shared rotary key from kv_down) and writes q and k. */
  guint qk = trace_build_rotary(b, "attn.rotary", q, tokens, 2 * heads * dqk);
  rok_trace_add_input(b->trace, rok_trace_tensor(b->trace, qk)->producer, kv);
  rok_trace_add_input(b->trace, rok_trace_tensor(b->trace, qk)->producer, latent);
  RokAttentionShape shape = {.q = qk, .k = qk, .v = kv, .batch = m->micro_batch, .seq_q = seq, .seq_k = seq,
                             .heads = heads, .kv_heads = heads, .head_dim = dqk, .v_dim = dv, .window = window};
  guint ctx = trace_build_attention(b, "attn", &shape);
  guint proj = trace_build_linear(b, "attn.proj", ctx, tokens, heads * dv, h);
  return ROK_TENSOR(b, "attn.proj_out", proj, b->dtype, b->seq_tokens, h);
}
