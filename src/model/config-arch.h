/* Private to src/model: the architecture part of a model config
 * (config-arch.c), which config.c reads after the shape and training
 * fields. */
#pragma once

#include "rok/core.h"
#include "rok/model.h"

/* The keys config-arch.c reads, for the config reader's list of known keys. */
#define MODEL_ARCH_KEYS                                                                                        \
  "qkv_bias", "tied_embeddings", "vocab_divisible_by", "positions", "parallel_residual", "post_norms",          \
      "sliding_window", "window_skip", "experts", "top_k", "expert_ffn_hidden", "shared_expert_ffn_hidden",    \
      "shared_expert_gate", "router_bias", "moe_first_dense", "moe_layer_freq", "capacity_factor", "aux_loss", \
      "expert_parallel", "q_lora_rank", "kv_lora_rank", "rope_head_dim", "v_head_dim", "context_parallel"

/* Read m->a, filling the defaults that depend on the rest of m. */
gboolean model_arch_read(const RokJsonObj *obj, RokModel *m, GError **error);
/* Rules between m->a and the rest, located at the field that breaks one. */
gboolean model_arch_validate(const RokJsonObj *obj, const RokModel *m, GError **error);
/* Add m->a's fields to a config object. */
void model_arch_to_json(const RokModel *m, json_object *o);

/* Parameters on one of `t` tensor-parallel ranks (params-arch.c): latent
 * attention, and one MoE layer's router, its experts on one of `ep`
 * expert-parallel ranks, and shared experts. */
guint64 model_mla_params(const RokModel *m, guint64 t);
guint64 model_moe_params(const RokModel *m, guint64 t, guint64 ep);

/* A Hugging Face config.json as a model (hf-import.c). */
RokModel *model_from_hf_doc(RokJsonDoc *doc, const char *const *overrides, GError **error);
