/* Parameter counts, for the whole model and for one GPU.
 *
 * Per GPU means one tensor-parallel rank of the first pipeline stage (which
 * holds the embedding): weight matrices are split by tensor_parallel (key and
 * value heads are replicated when there are fewer than ranks), norms and the
 * biases of row-parallel layers are replicated. */
#include "config-arch.h"
#include "config-private.h"

/* Parameters of one self- or cross-attention block on one of `t` ranks. */
static guint64 attention_params(const RokModel *m, guint64 t, gboolean biases) {
  if (m->a.kv_lora_rank > 0)
    return model_mla_params(m, t);
  guint64 h = m->hidden, q = m->heads * m->head_dim / t;
  guint64 kv = MAX(m->kv_heads / t, 1) * m->head_dim;
  guint64 params = h * q + 2 * h * kv + q * h;
  if (biases)
    params += q + 2 * kv + h;
  else if (m->a.qkv_bias)
    params += q + 2 * kv;
  return params;
}

static guint64 mlp_params(const RokModel *m, guint64 t) {
  guint64 h = m->hidden, f = m->ffn_hidden / t;
  switch (m->arch) {
  case ROK_ARCH_LLAMA:
    return 3 * h * f; /* gate, up, down; no biases */
  case ROK_ARCH_T5:
    return 2 * h * f; /* no biases */
  case ROK_ARCH_GPT:
  case ROK_ARCH_BERT:
    break;
  }
  return 2 * h * f + f + h;
}

/* Every layer of the stack on one of `t` ranks, norms included; MoE layers
 * hold the experts of one of `ep` expert-parallel ranks. */
static guint64 layer_stack_params(const RokModel *m, guint64 t, guint64 ep, guint64 layers) {
  guint64 h = m->hidden;
  switch (m->arch) {
  case ROK_ARCH_GPT:
  case ROK_ARCH_BERT: /* two LayerNorms with weight and bias */
    return layers * (attention_params(m, t, TRUE) + mlp_params(m, t) + 4 * h);
  case ROK_ARCH_LLAMA: { /* two RMSNorm weights (four with post-norms); MoE layers differ */
    guint64 norms = (m->a.post_norms ? 4 : 2) * h, sum = 0;
    for (guint64 i = 0; i < layers; i++)
      sum += attention_params(m, t, FALSE) + norms +
             (rok_model_is_moe_layer(m, i) ? model_moe_params(m, t, ep) : mlp_params(m, t));
    return sum;
  }
  case ROK_ARCH_T5: {
    /* Encoder: self-attention, FFN, two norms; decoder adds cross-attention
     * and a third norm. The first layer of each stack holds the relative
     * position bias (32 buckets per head). */
    guint64 enc = attention_params(m, t, FALSE) + mlp_params(m, t) + 2 * h;
    guint64 dec = 2 * attention_params(m, t, FALSE) + mlp_params(m, t) + 3 * h;
    guint64 rel_bias = 32 * m->heads / t;
    guint64 enc_layers = MIN(layers, m->layers), dec_layers = layers - enc_layers;
    return enc_layers * enc + dec_layers * dec + (enc_layers > 0) * rel_bias + (dec_layers > 0) * rel_bias;
  }
  }
  g_return_val_if_reached(0);
}

/* Embeddings, final norms and output head, on one of `t` ranks. */
static guint64 outer_params(const RokModel *m, guint64 t) {
  guint64 h = m->hidden, vocab = (rok_model_padded_vocab(m) + t - 1) / t;
  guint64 untied = m->a.tied_embeddings ? 0 : vocab * h, positions = m->a.positions * h;
  switch (m->arch) {
  case ROK_ARCH_GPT: /* tokens, learned positions (none with rotary), final LayerNorm; head tied or not */
    return vocab * h + untied + positions + 2 * h;
  case ROK_ARCH_BERT: /* + token types, embedding LayerNorm, pooler, MLM transform and bias */
    return vocab * h + untied + positions + 2 * h + 2 * h + (h * h + h) + (h * h + h + 2 * h + vocab);
  case ROK_ARCH_LLAMA: /* output head (untied unless said), final RMSNorm */
    return vocab * h + untied + h;
  case ROK_ARCH_T5: /* shared embedding (tied head unless said), two final norms */
    return vocab * h + untied + 2 * h;
  }
  g_return_val_if_reached(0);
}

guint64 rok_model_param_count(const RokModel *m) {
  return layer_stack_params(m, 1, 1, m->layers + m->decoder_layers) + outer_params(m, 1);
}

guint64 rok_model_params_per_gpu(const RokModel *m) {
  guint64 t = m->tensor_parallel;
  guint64 stage_layers = (m->layers + m->decoder_layers) / m->pipeline_parallel;
  /* With several stages the first holds the input embeddings; the final
   * norm and the output head live on the last (Megatron-LM's most loaded
   * shard, theoretical_memory_usage.py). */
  if (m->pipeline_parallel > 1)
    return layer_stack_params(m, t, m->a.expert_parallel, stage_layers) + model_embedding_params(m, t);
  return layer_stack_params(m, t, m->a.expert_parallel, stage_layers) + outer_params(m, t);
}

guint64 model_layer_params(const RokModel *m, guint64 t, guint64 layers) {
  return layer_stack_params(m, t, m->a.expert_parallel, layers);
}

/* The input side of outer_params(): the token embedding of the padded
 * vocabulary, learned positions (none with rotary) and BERT's token types
 * and embedding LayerNorm; a tied head is this same matrix. */
guint64 model_embedding_params(const RokModel *m, guint64 t) {
  guint64 h = m->hidden, vocab = (rok_model_padded_vocab(m) + t - 1) / t, positions = m->a.positions * h;
  switch (m->arch) {
  case ROK_ARCH_GPT:
    return vocab * h + positions;
  case ROK_ARCH_BERT:
    return vocab * h + positions + 2 * h + 2 * h;
  case ROK_ARCH_LLAMA:
  case ROK_ARCH_T5:
    return vocab * h;
  }
  g_return_val_if_reached(0);
}
