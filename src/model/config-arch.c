/* The architecture details of a model config (RokModelArchitecture):
 * biases, embeddings, positions, residual and norm layout, sliding windows,
 * mixture of experts, latent attention. Read after the shape and the
 * training fields, checked against them, written back only where they say
 * something (the MoE keys only for a model with experts). */
#include <math.h>

#include "config-arch.h"
#include "rok/core.h"

/* Booleans whose default depends on the architecture start here. */
#define UNSET ((gboolean)-1)

static gboolean read_bools(const RokJsonObj *obj, RokModelArchitecture *a, GError **error) {
  return rok_json_get_bool(obj, "qkv_bias", FALSE, &a->qkv_bias, error) &&
         rok_json_get_bool(obj, "tied_embeddings", FALSE, &a->tied_embeddings, error) &&
         rok_json_get_bool(obj, "parallel_residual", FALSE, &a->parallel_residual, error) &&
         rok_json_get_bool(obj, "post_norms", FALSE, &a->post_norms, error) &&
         rok_json_get_bool(obj, "shared_expert_gate", FALSE, &a->shared_expert_gate, error) &&
         rok_json_get_bool(obj, "router_bias", FALSE, &a->router_bias, error);
}

static gboolean read_moe(const RokJsonObj *obj, RokModelArchitecture *a, GError **error) {
  return rok_json_get_uint(obj, "experts", FALSE, 0, 1 << 16, &a->experts, error) &&
         rok_json_get_uint(obj, "top_k", FALSE, 1, 1 << 16, &a->top_k, error) &&
         rok_json_get_uint(obj, "expert_ffn_hidden", FALSE, 1, 1 << 24, &a->expert_ffn_hidden, error) &&
         rok_json_get_uint(obj, "shared_expert_ffn_hidden", FALSE, 0, 1 << 24, &a->shared_expert_ffn_hidden,
                           error) &&
         rok_json_get_uint(obj, "moe_first_dense", FALSE, 0, 1 << 16, &a->moe_first_dense, error) &&
         rok_json_get_uint(obj, "moe_layer_freq", FALSE, 1, 1 << 16, &a->moe_layer_freq, error) &&
         rok_json_get_double(obj, "capacity_factor", FALSE, 0, 1024, &a->capacity_factor, error) &&
         rok_json_get_double(obj, "aux_loss", FALSE, 0, 1e6, &a->aux_loss, error) &&
         rok_json_get_uint(obj, "expert_parallel", FALSE, 1, 1 << 16, &a->expert_parallel, error);
}

static gboolean read_rest(const RokJsonObj *obj, RokModelArchitecture *a, GError **error) {
  guint64 context_parallel = 1;
  return rok_json_get_uint(obj, "vocab_divisible_by", FALSE, 0, 1 << 20, &a->vocab_divisible_by, error) &&
         rok_json_get_uint(obj, "positions", FALSE, 0, 1 << 24, &a->positions, error) &&
         rok_json_get_uint(obj, "sliding_window", FALSE, 0, 1 << 24, &a->sliding_window, error) &&
         rok_json_get_uint(obj, "window_skip", FALSE, 0, 1 << 16, &a->window_skip, error) &&
         rok_json_get_uint(obj, "q_lora_rank", FALSE, 0, 1 << 24, &a->q_lora_rank, error) &&
         rok_json_get_uint(obj, "kv_lora_rank", FALSE, 0, 1 << 24, &a->kv_lora_rank, error) &&
         rok_json_get_uint(obj, "rope_head_dim", FALSE, 0, 1 << 24, &a->rope_head_dim, error) &&
         rok_json_get_uint(obj, "v_head_dim", FALSE, 0, 1 << 24, &a->v_head_dim, error) &&
         /* Ring attention's saved tensors and its exchange are not modelled:
          * a config may only say there is none. */
         rok_json_get_uint(obj, "context_parallel", FALSE, 1, 1, &context_parallel, error);
}

gboolean model_arch_read(const RokJsonObj *obj, RokModel *m, GError **error) {
  RokModelArchitecture *a = &m->a;
  *a = (RokModelArchitecture){.qkv_bias = UNSET, .tied_embeddings = UNSET, .positions = G_MAXUINT64,
                              .moe_layer_freq = 1, .expert_parallel = 1};
  if (!read_bools(obj, a, error) || !read_moe(obj, a, error) || !read_rest(obj, a, error))
    return FALSE;
  gboolean gpt_like = m->arch == ROK_ARCH_GPT || m->arch == ROK_ARCH_BERT;
  if (a->qkv_bias == UNSET)
    a->qkv_bias = gpt_like;
  if (a->tied_embeddings == UNSET)
    a->tied_embeddings = m->arch != ROK_ARCH_LLAMA;
  if (a->positions == G_MAXUINT64)
    a->positions = gpt_like ? m->seq_len : 0;
  if (a->experts > 0 && a->expert_ffn_hidden == 0)
    a->expert_ffn_hidden = m->ffn_hidden;
  if (a->kv_lora_rank > 0 && a->v_head_dim == 0)
    a->v_head_dim = m->head_dim;
  return TRUE;
}

/* A rule between fields, reported at the field that breaks it. */
static gboolean require(gboolean holds, const RokJsonObj *obj, const char *key, GError **error, const char *why) {
  if (!holds) {
    g_autofree char *path = *obj->path == '\0' ? g_strdup(key) : g_strconcat(obj->path, ".", key, NULL);
    rok_json_error(error, obj->doc, path, "%s", why);
  }
  return holds;
}

static gboolean present(const RokJsonObj *obj, const char *key) {
  return json_object_object_get_ex(obj->obj, key, NULL);
}

/* Keys that describe experts, refused on a dense model. */
static const char *const moe_keys[] = {"top_k", "expert_ffn_hidden", "shared_expert_ffn_hidden",
                                       "shared_expert_gate", "router_bias", "moe_first_dense", "moe_layer_freq",
                                       "capacity_factor", "aux_loss", "expert_parallel", NULL};

static gboolean validate_layout(const RokJsonObj *obj, const RokModel *m, GError **error) {
  const RokModelArchitecture *a = &m->a;
  gboolean gpt_like = m->arch == ROK_ARCH_GPT || m->arch == ROK_ARCH_BERT;
  gboolean causal = m->arch == ROK_ARCH_GPT || m->arch == ROK_ARCH_LLAMA;
  return require(!gpt_like || a->qkv_bias, obj, "qkv_bias", error,
                 "cannot be false for arch \"gpt\" or \"bert\", which have every bias") &&
         require(m->arch == ROK_ARCH_GPT || (m->arch == ROK_ARCH_BERT) == (a->positions > 0), obj, "positions",
                 error, "is a learned position table: arch \"bert\" has one, \"llama\" and \"t5\" none") &&
         require(a->positions == 0 || a->positions >= m->seq_len, obj, "positions", error,
                 "must be at least \"seq_len\" (or 0 for rotary positions)") &&
         require(!a->parallel_residual || m->arch == ROK_ARCH_GPT || m->arch == ROK_ARCH_LLAMA, obj,
                 "parallel_residual", error, "is only for arch \"gpt\" or \"llama\"") &&
         require(!a->post_norms || (m->arch == ROK_ARCH_LLAMA && !a->parallel_residual), obj, "post_norms",
                 error, "is only for arch \"llama\" without \"parallel_residual\"") &&
         require(a->sliding_window == 0 || causal, obj, "sliding_window", error,
                 "is only for causal models (arch \"gpt\" or \"llama\")") &&
         require(a->window_skip == 0 || a->sliding_window > 0, obj, "window_skip", error,
                 "needs a \"sliding_window\"");
}

static gboolean validate_moe(const RokJsonObj *obj, const RokModel *m, GError **error) {
  const RokModelArchitecture *a = &m->a;
  guint64 t = m->tensor_parallel;
  if (a->experts == 0) {
    for (const char *const *key = moe_keys; *key != NULL; key++)
      if (!require(!present(obj, *key), obj, *key, error, "is only for a mixture of experts (\"experts\" > 0)"))
        return FALSE;
    return TRUE;
  }
  return require(m->arch == ROK_ARCH_LLAMA, obj, "experts", error,
                 "are only for arch \"llama\" (gated SwiGLU experts)") &&
         require(present(obj, "top_k"), obj, "experts", error, "need \"top_k\", the experts each token is sent to") &&
         require(a->top_k <= a->experts, obj, "top_k", error, "must be at most \"experts\"") &&
         require(a->experts % a->expert_parallel == 0, obj, "expert_parallel", error, "must divide \"experts\"") &&
         require(a->expert_ffn_hidden % t == 0, obj, "tensor_parallel", error,
                 "must divide \"expert_ffn_hidden\"") &&
         require(a->shared_expert_ffn_hidden % t == 0, obj, "tensor_parallel", error,
                 "must divide \"shared_expert_ffn_hidden\"") &&
         require(!a->shared_expert_gate || a->shared_expert_ffn_hidden > 0, obj, "shared_expert_gate", error,
                 "needs \"shared_expert_ffn_hidden\"") &&
         require(a->moe_first_dense < m->layers, obj, "moe_first_dense", error, "must be less than \"layers\"") &&
         require(a->capacity_factor == 0 || a->capacity_factor * (double)a->top_k >= 1.0 / (double)a->experts,
                 obj, "capacity_factor", error, "leaves the experts no room for a token");
}

static gboolean validate_mla(const RokJsonObj *obj, const RokModel *m, GError **error) {
  const RokModelArchitecture *a = &m->a;
  if (a->kv_lora_rank == 0) {
    static const char *const mla_keys[] = {"q_lora_rank", "rope_head_dim", "v_head_dim", NULL};
    for (const char *const *key = mla_keys; *key != NULL; key++)
      if (!require(!present(obj, *key), obj, *key, error, "is only for latent attention (\"kv_lora_rank\" > 0)"))
        return FALSE;
    return TRUE;
  }
  return require(m->arch == ROK_ARCH_LLAMA, obj, "kv_lora_rank", error, "is only for arch \"llama\"") &&
         require(m->kv_heads == m->heads, obj, "kv_heads", error,
                 "must equal \"heads\" with latent attention (every head has its own keys)") &&
         require(a->rope_head_dim < m->head_dim, obj, "rope_head_dim", error,
                 "must be less than \"head_dim\" (the query/key head width, rotary part included)") &&
         require(!a->qkv_bias, obj, "qkv_bias", error, "is not for latent attention");
}

/* config.c's magnitude check, for what the architecture keys add: every
 * MoE layer's experts and routed rows, latent attention's projections and
 * the padded vocabulary, in doubles, each below 2^62 (bytes of 64 per
 * parameter; activation bytes and FLOPs of one micro-batch). */
static gboolean check_magnitude(const RokJsonObj *obj, const RokModel *m, GError **error) {
  const RokModelArchitecture *a = &m->a;
  double layers = (double)m->layers, h = (double)m->hidden, tokens = (double)m->seq_len * (double)m->micro_batch;
  double e = (double)a->experts, fe = (double)a->expert_ffn_hidden, fs = (double)a->shared_expert_ffn_hidden;
  double rows = (a->capacity_factor > 0 ? a->capacity_factor : 1.0) * (double)a->top_k * tokens + e;
  double heads = (double)m->heads, dqk = (double)m->head_dim, dv = (double)a->v_head_dim;
  double mla = (h + heads * dqk) * (double)a->q_lora_rank + h * (double)(a->kv_lora_rank + a->rope_head_dim) +
               (double)a->kv_lora_rank * heads * (dqk + dv) + heads * dv * h;
  double padded = (double)m->vocab + (double)a->vocab_divisible_by * (double)m->tensor_parallel;
  double params = layers * (e * (3 * h * fe + h + 1) + 3 * h * fs + h + mla) + 2 * padded * h;
  double activations = layers * (rows * (8 * h + 16 * fe + 16) + tokens * (8 * e + 16 * (double)a->top_k + 8 * fs) +
                                 tokens * 8 * (heads * (dqk + dv) + (double)(a->q_lora_rank + a->kv_lora_rank))) +
                       8 * tokens * padded;
  double flops = layers * 6 * (rows * 3 * h * fe + tokens * (3 * h * fs + mla + e * h)) + 8 * tokens * h * padded;
  const char *what = params * 64 >= 0x1p62    ? "parameter bytes (experts × expert_ffn_hidden × hidden × ...)"
                     : activations >= 0x1p62 ? "activation bytes (top_k × seq_len × micro_batch × ...)"
                     : flops >= 0x1p62       ? "FLOPs of one micro-batch (routed rows × expert parameters)"
                                             : NULL;
  if (what == NULL)
    return TRUE;
  g_autofree char *why = g_strdup_printf("the %s of this model would exceed 2^62: the sizes are absurd", what);
  return require(FALSE, obj, "experts", error, why);
}

gboolean model_arch_validate(const RokJsonObj *obj, const RokModel *m, GError **error) {
  return validate_layout(obj, m, error) && validate_moe(obj, m, error) && validate_mla(obj, m, error) &&
         check_magnitude(obj, m, error);
}

static void add_uint(json_object *o, const char *key, guint64 value) {
  json_object_object_add(o, key, json_object_new_uint64(value));
}

static void add_bool(json_object *o, const char *key, gboolean value) {
  json_object_object_add(o, key, json_object_new_boolean(value));
}

/* Only what differs from the architecture's defaults is written: configs
 * and traces of the four base architectures read and hash as before. */
void model_arch_to_json(const RokModel *m, json_object *o) {
  const RokModelArchitecture *a = &m->a;
  gboolean gpt_like = m->arch == ROK_ARCH_GPT || m->arch == ROK_ARCH_BERT;
  if (a->qkv_bias != gpt_like)
    add_bool(o, "qkv_bias", a->qkv_bias);
  if (a->tied_embeddings != (m->arch != ROK_ARCH_LLAMA))
    add_bool(o, "tied_embeddings", a->tied_embeddings);
  if (a->vocab_divisible_by > 0)
    add_uint(o, "vocab_divisible_by", a->vocab_divisible_by);
  if (a->positions != (gpt_like ? m->seq_len : 0))
    add_uint(o, "positions", a->positions);
  if (a->parallel_residual)
    add_bool(o, "parallel_residual", TRUE);
  if (a->post_norms)
    add_bool(o, "post_norms", TRUE);
  if (a->sliding_window > 0) {
    add_uint(o, "sliding_window", a->sliding_window);
    add_uint(o, "window_skip", a->window_skip);
  }
  if (a->experts > 0) {
    add_uint(o, "experts", a->experts);
    add_uint(o, "top_k", a->top_k);
    add_uint(o, "expert_ffn_hidden", a->expert_ffn_hidden);
    add_uint(o, "shared_expert_ffn_hidden", a->shared_expert_ffn_hidden);
    add_bool(o, "shared_expert_gate", a->shared_expert_gate);
    add_bool(o, "router_bias", a->router_bias);
    add_uint(o, "moe_first_dense", a->moe_first_dense);
    add_uint(o, "moe_layer_freq", a->moe_layer_freq);
    json_object_object_add(o, "capacity_factor", rok_json_new_double(a->capacity_factor));
    json_object_object_add(o, "aux_loss", rok_json_new_double(a->aux_loss));
    add_uint(o, "expert_parallel", a->expert_parallel);
  }
  if (a->kv_lora_rank > 0) {
    add_uint(o, "q_lora_rank", a->q_lora_rank);
    add_uint(o, "kv_lora_rank", a->kv_lora_rank);
    add_uint(o, "rope_head_dim", a->rope_head_dim);
    add_uint(o, "v_head_dim", a->v_head_dim);
  }
}

gboolean rok_model_is_moe_layer(const RokModel *m, guint64 layer) {
  const RokModelArchitecture *a = &m->a;
  return a->experts > 0 && layer >= a->moe_first_dense && (layer - a->moe_first_dense) % a->moe_layer_freq == 0;
}

guint64 rok_model_layer_window(const RokModel *m, guint64 layer) {
  const RokModelArchitecture *a = &m->a;
  if (a->sliding_window == 0 || (a->window_skip > 0 && (layer + 1) % a->window_skip == 0))
    return 0;
  return a->sliding_window;
}

guint64 rok_model_padded_vocab(const RokModel *m) {
  guint64 multiple = m->tensor_parallel * MAX(m->a.vocab_divisible_by, 1);
  return m->a.vocab_divisible_by == 0 ? m->vocab : (m->vocab + multiple - 1) / multiple * multiple;
}

static char **strv_from(GPtrArray *lines) {
  g_ptr_array_add(lines, NULL);
  return (char **)g_ptr_array_free(lines, FALSE);
}

char **rok_model_unmodelled(const RokModel *m) {
  GPtrArray *lines = g_ptr_array_new();
  if (m->a.expert_parallel > 1)
    g_ptr_array_add(lines, g_strdup_printf("expert_parallel=%" G_GUINT64_FORMAT ": the all-to-all dispatch and "
                                           "combine between expert-parallel ranks are not modelled (no "
                                           "communication time); each rank holds its share of the experts and, "
                                           "with balanced routing, as many routed tokens as without",
                                           m->a.expert_parallel));
  if (m->train.fp8 != ROK_FP8_NONE) /* its memory is modelled, its speed is not */
    g_ptr_array_add(lines, g_strdup("fp8: saved tensors and weight copies are counted in FP8, but GEMMs are "
                                    "timed at the profile's 16-bit peak_flops"));
  return strv_from(lines);
}

char **rok_model_assumptions(const RokModel *m) {
  GPtrArray *lines = g_ptr_array_new();
  if (m->a.experts > 0 && m->a.capacity_factor == 0)
    g_ptr_array_add(lines, g_strdup("dropless routing: expert activations are sized for top_k × tokens routed "
                                    "rows, the experts' loads balanced on average (an imbalanced step needs more)"));
  if (m->a.experts > 0 && m->zero_stage >= 1 && m->a.expert_parallel > 1)
    g_ptr_array_add(lines, g_strdup_printf("zero_stage=%" G_GUINT64_FORMAT ": the routed experts' states are "
                                           "sharded over their expert-data-parallel group, data_parallel / "
                                           "expert_parallel = %" G_GUINT64_FORMAT " ranks, the rest over all %"
                                           G_GUINT64_FORMAT, m->zero_stage,
                                           MAX(m->data_parallel / m->a.expert_parallel, 1), m->data_parallel));
  return strv_from(lines);
}
