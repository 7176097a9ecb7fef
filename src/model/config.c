/* Model configs: reading, defaults, validation, writing. */
#include <math.h>
#include <string.h>

#include "config-arch.h"
#include "config-private.h"
#include "rok/model.h"
#include "rok/core.h"

static const char *const arch_names[] = {"gpt", "bert", "t5", "llama", NULL};
static const char *const attention_names[] = {"standard", "flash", NULL};
static const char *const optimizer_names[] = {"adam",      "sgd",    "adamw",       "adam8bit",
                                               "adafactor", "apollo", "apollo_mini", NULL};
static const char *const precision_names[] = {"mixed", "pure", NULL};
/* Activation dtypes a config may name; masks and token ids are internal. */
static const char *const config_dtype_names[] = {"bf16", "fp16", "fp32", NULL};

static const char *const model_keys[] = {
    "name", "source", "arch", "layers", "decoder_layers", "hidden", "heads", "kv_heads", "head_dim",
    "ffn_hidden", "vocab", "seq_len", "decoder_seq_len", "micro_batch", "global_batch", "dtype", "dropout",
    "mask_bytes", "attention", "tensor_parallel", "sequence_parallel", "pipeline_parallel", "data_parallel",
    "optimizer", "precision", "zero_stage", "virtual_stages", "first_stage_layers", "last_stage_layers",
    MODEL_ARCH_KEYS,
    /* config-training.c */
    "framework", "grad_dtype", "momentum", "optimizer_rank", "lora_rank", "lora_targets", "lora_base",
    "frozen_layers", "kernels", "loss", "loss_chunk", "fp8", "reduce_bucket_size", "contiguous_gradients",
    "overlap_comm", "stage3_prefetch_bucket_size", "stage3_max_live_parameters", NULL};

const char *rok_arch_name(RokArch arch) {
  return arch_names[arch];
}

const char *rok_optimizer_name(RokOptimizer optimizer) {
  return optimizer_names[optimizer];
}

void rok_model_free(RokModel *model) {
  if (model == NULL)
    return;
  g_free(model->name);
  g_free(model->source);
  g_free(model);
}

RokModel *rok_model_copy(const RokModel *model) {
  RokModel *copy = g_memdup2(model, sizeof *model);
  copy->name = g_strdup(model->name);
  copy->source = g_strdup(model->source);
  return copy;
}

/* Upper bounds far above any real model; they keep every product of shapes
 * below 2^64 before the finer check in check_magnitude(). */
#define MAX_DIM (G_GUINT64_CONSTANT(1) << 24)
#define MAX_VOCAB (G_GUINT64_CONSTANT(1) << 32)

static gboolean read_shape(const RokJsonObj *obj, RokModel *m, GError **error) {
  return rok_json_get_uint(obj, "layers", TRUE, 1, ROK_MAX_LAYERS, &m->layers, error) &&
         rok_json_get_uint(obj, "decoder_layers", FALSE, 1, ROK_MAX_LAYERS, &m->decoder_layers, error) &&
         rok_json_get_uint(obj, "hidden", TRUE, 1, MAX_DIM, &m->hidden, error) &&
         rok_json_get_uint(obj, "heads", TRUE, 1, MAX_DIM, &m->heads, error) &&
         rok_json_get_uint(obj, "kv_heads", FALSE, 1, MAX_DIM, &m->kv_heads, error) &&
         rok_json_get_uint(obj, "head_dim", FALSE, 1, MAX_DIM, &m->head_dim, error) &&
         rok_json_get_uint(obj, "ffn_hidden", FALSE, 1, MAX_DIM, &m->ffn_hidden, error) &&
         rok_json_get_uint(obj, "vocab", FALSE, 1, MAX_VOCAB, &m->vocab, error) &&
         rok_json_get_uint(obj, "seq_len", TRUE, 1, MAX_DIM, &m->seq_len, error) &&
         rok_json_get_uint(obj, "decoder_seq_len", FALSE, 1, MAX_DIM, &m->decoder_seq_len, error);
}

static gboolean read_training(const RokJsonObj *obj, RokModel *m, GError **error) {
  int dtype = 0, attention = 0, optimizer = 0, precision = 0;
  gboolean ok =
      rok_json_get_uint(obj, "micro_batch", TRUE, 1, MAX_DIM, &m->micro_batch, error) &&
      rok_json_get_uint(obj, "global_batch", FALSE, 1, G_MAXUINT32, &m->global_batch, error) &&
      rok_json_get_enum(obj, "dtype", FALSE, config_dtype_names, &dtype, error) &&
      rok_json_get_double(obj, "dropout", FALSE, 0.0, 0.99, &m->dropout, error) &&
      rok_json_get_uint(obj, "mask_bytes", FALSE, 1, 4, &m->mask_bytes, error) &&
      rok_json_get_enum(obj, "attention", FALSE, attention_names, &attention, error) &&
      rok_json_get_uint(obj, "tensor_parallel", FALSE, 1, 4096, &m->tensor_parallel, error) &&
      rok_json_get_bool(obj, "sequence_parallel", FALSE, &m->sequence_parallel, error) &&
      rok_json_get_uint(obj, "pipeline_parallel", FALSE, 1, 4096, &m->pipeline_parallel, error) &&
      rok_json_get_uint(obj, "data_parallel", FALSE, 1, G_MAXUINT32, &m->data_parallel, error) &&
      rok_json_get_enum(obj, "optimizer", FALSE, optimizer_names, &optimizer, error) &&
      rok_json_get_enum(obj, "precision", FALSE, precision_names, &precision, error) &&
      rok_json_get_uint(obj, "zero_stage", FALSE, 0, 3, &m->zero_stage, error) &&
      rok_json_get_uint(obj, "virtual_stages", FALSE, 1, ROK_MAX_LAYERS, &m->virtual_stages, error) &&
      rok_json_get_uint(obj, "first_stage_layers", FALSE, 1, ROK_MAX_LAYERS, &m->first_stage_layers, error) &&
      rok_json_get_uint(obj, "last_stage_layers", FALSE, 1, ROK_MAX_LAYERS, &m->last_stage_layers, error);
  m->dtype = dtype;
  m->attention = attention;
  m->optimizer = optimizer;
  m->precision = precision;
  return ok;
}

/* A rule between fields, reported at the field that breaks it. */
static gboolean require(gboolean holds, const RokJsonObj *obj, const char *key, GError **error,
                        const char *why) {
  if (!holds) {
    g_autofree char *path = *obj->path == '\0' || *key == '\0' ? g_strconcat(obj->path, key, NULL)
                                                             : g_strconcat(obj->path, ".", key, NULL);
    rok_json_error(error, obj->doc, path, "%s", why);
  }
  return holds;
}

/* Reject configs whose counts would not fit 64 bits, so that the trace and
 * everything summing its numbers never wraps around. Generous bounds, in
 * doubles (which cannot overflow here), all required below 2^62:
 * - activation bytes: per layer s·b·(64h + 8as + 16f + 16ad), head 8·s·b·V;
 * - parameters (attention twice for T5's cross-attention, three FFN
 *   matrices for SwiGLU, embeddings), times 64 bytes each: weights,
 *   gradients, optimizer states and one optimizer step's traffic;
 * - FLOPs of one micro-batch: 6 per parameter and token (forward and
 *   backward), the attention core's 40·b·a·s²·d, and element-wise work.
 * Far below these for any real model: GPT-3 175B is at 2^43 bytes and
 * 2^52 FLOPs per micro-batch. */
static gboolean check_magnitude(const RokJsonObj *obj, const RokModel *m, GError **error) {
  double s = (double)MAX(m->seq_len, m->decoder_seq_len), b = (double)m->micro_batch;
  double h = (double)m->hidden, f = (double)m->ffn_hidden, v = (double)m->vocab;
  double ad = (double)m->heads * (double)m->head_dim, as2 = (double)m->heads * s * s;
  double layers = (double)(m->layers + m->decoder_layers);
  double activations = layers * s * b * (64 * h + 8 * m->heads * s + 16 * f + 16 * ad) + 8 * s * b * v;
  double layer_params = 8 * h * ad + 3 * h * f + 16 * h + 32.0 * m->heads;
  double params = layers * layer_params + 2 * v * h + s * h + 2 * h * h + 8 * h + v;
  double flops = layers * (6 * s * b * layer_params + 40 * b * as2 * m->head_dim + 64 * s * b * (h + f) +
                           16 * b * as2) +
                 8 * s * b * h * v + 16 * s * b * v;
  const char *what = activations >= 0x1p62 ? "activation bytes (seq_len × micro_batch × hidden × ...)"
                     : params * 64 >= 0x1p62 ? "parameter bytes (hidden × ffn_hidden × layers × ...)"
                     : flops >= 0x1p62       ? "FLOPs of one micro-batch (seq_len × micro_batch × parameters)"
                                             : NULL;
  if (what == NULL)
    return TRUE;
  g_autofree char *why = g_strdup_printf("the %s of this model would exceed 2^62: the sizes are absurd", what);
  return require(FALSE, obj, "", error, why);
}

/* global_batch must split into data_parallel replicas of whole
 * micro-batches; when it does not, say what would: the micro-batches that
 * divide each replica's share, or the nearest global batches. */
static gboolean check_global_batch(const RokJsonObj *obj, const RokModel *m, GError **error) {
  guint64 unit = m->micro_batch * m->data_parallel, g = m->global_batch;
  if (g % unit == 0)
    return TRUE;
  g_autoptr(GString) why = g_string_new(NULL);
  g_string_printf(why, "%" G_GUINT64_FORMAT " must be a multiple of micro_batch × data_parallel (%" G_GUINT64_FORMAT
                  " × %" G_GUINT64_FORMAT " = %" G_GUINT64_FORMAT "): ",
                  g, m->micro_batch, m->data_parallel, unit);
  if (g % m->data_parallel == 0) {
    guint64 share = g / m->data_parallel, shown = 0;
    g_string_append_printf(why, "a micro_batch that divides %" G_GUINT64_FORMAT " (", share);
    for (guint64 d = 1; d <= share && shown < 8; d++)
      if (share % d == 0)
        g_string_append_printf(why, "%s%" G_GUINT64_FORMAT, shown++ ? ", " : "", d);
    g_string_append(why, shown == 8 && share > 8 ? ", ...), or " : "), or ");
  }
  guint64 below = g / unit * unit, above = below + unit;
  if (below > 0)
    g_string_append_printf(why, "global_batch %" G_GUINT64_FORMAT " or %" G_GUINT64_FORMAT, below, above);
  else
    g_string_append_printf(why, "global_batch %" G_GUINT64_FORMAT, above);
  return require(FALSE, obj, "global_batch", error, why->str);
}

/* Megatron's layer split: even, or the first and last stages given and the
 * rest even over the middle stages; interleaving needs an even split into
 * pipeline_parallel × virtual_stages chunks. */
static gboolean validate_pipeline(const RokJsonObj *obj, const RokModel *m, GError **error) {
  guint64 p = m->pipeline_parallel, v = m->virtual_stages, first = m->first_stage_layers;
  guint64 last = m->last_stage_layers;
  gboolean uneven = first != 0 || last != 0;
  guint64 given = first + last, middle = p - MIN(p, 2);
  if (!require(m->arch != ROK_ARCH_T5 || p == 1, obj, "pipeline_parallel", error,
               "above 1 is not modelled for arch \"t5\" (encoder-decoder pipeline splits)") ||
      !require(p > 1 || v == 1, obj, "virtual_stages", error, "above 1 needs \"pipeline_parallel\" above 1") ||
      !require(p > 1 || !uneven, obj, "first_stage_layers", error,
               "and \"last_stage_layers\" need \"pipeline_parallel\" above 1") ||
      !require(v == 1 || !uneven, obj, "virtual_stages", error,
               "above 1 cannot be combined with \"first_stage_layers\" or \"last_stage_layers\"") ||
      !require(v == 1 || rok_model_micro_batches_per_step(m) % p == 0, obj, "virtual_stages", error,
               "above 1 needs micro-batches per step (global_batch / (micro_batch × data_parallel)) divisible "
               "by \"pipeline_parallel\", as Megatron-LM's interleaved schedule does"))
    return FALSE;
  if (!uneven)
    return require(m->layers % (p * v) == 0, obj, "pipeline_parallel", error,
                   v > 1 ? "times \"virtual_stages\" must divide \"layers\"" : "must divide \"layers\"");
  guint64 others = middle + (first == 0) + (last == 0); /* stages that share the rest evenly */
  const char *key = first ? "first_stage_layers" : "last_stage_layers";
  if (others == 0)
    return require(given == m->layers, obj, key, error,
                   "and \"last_stage_layers\" must add up to \"layers\" with two stages");
  return require(given < m->layers, obj, key, error, "leaves no layers for the other stages") &&
         require((m->layers - given) % others == 0, obj, key, error,
                 "leaves layers that do not split evenly over the other stages");
}

static gboolean validate(const RokJsonObj *obj, const RokModel *m, GError **error) {
  guint64 t = m->tensor_parallel;
  gboolean t5 = m->arch == ROK_ARCH_T5;
  return require(m->mask_bytes != 3, obj, "mask_bytes", error, "must be 1, 2 or 4") &&
         require(t5 || m->decoder_layers == 0, obj, "decoder_layers", error, "is only for arch \"t5\"") &&
         require(t5 || m->decoder_seq_len == 0, obj, "decoder_seq_len", error, "is only for arch \"t5\"") &&
         require(m->heads % m->kv_heads == 0, obj, "kv_heads", error, "must divide \"heads\"") &&
         require(m->heads % t == 0, obj, "tensor_parallel", error, "must divide \"heads\"") &&
         require(m->kv_heads % t == 0 || t % m->kv_heads == 0, obj, "tensor_parallel", error,
                 "and \"kv_heads\" must divide one another") &&
         require(m->ffn_hidden % t == 0, obj, "tensor_parallel", error, "must divide \"ffn_hidden\"") &&
         require(!m->sequence_parallel || m->seq_len % t == 0, obj, "sequence_parallel", error,
                 "needs \"seq_len\" divisible by \"tensor_parallel\"") &&
         check_global_batch(obj, m, error) &&
         validate_pipeline(obj, m, error) &&
         require(m->global_batch <= G_MAXUINT32, obj, "data_parallel", error,
                 "times micro_batch must be at most 4294967295 (the largest global_batch)") &&
         require(m->global_batch / (m->micro_batch * m->data_parallel) <= ROK_MAX_MICRO_BATCHES_PER_STEP, obj,
                 "global_batch", error,
                 "makes more than " G_STRINGIFY(ROK_MAX_MICRO_BATCHES_PER_STEP)
                 " micro-batches per step (global_batch / (micro_batch × data_parallel))") &&
         require(m->layers + m->decoder_layers <= ROK_MAX_LAYERS, obj, "layers", error,
                 "and \"decoder_layers\" (as many as \"layers\" unless given) must add up to at most "
                 G_STRINGIFY(ROK_MAX_LAYERS)) &&
         check_magnitude(obj, m, error) &&
         /* The default 4 × hidden must read back when the config is written out. */
         require(m->ffn_hidden <= MAX_DIM, obj, "hidden", error,
                 "is over 4194304, so \"ffn_hidden\" (4 × hidden unless given) would be over 16777216: give "
                 "\"ffn_hidden\"");
}

static void fill_defaults(RokModel *m, const char *doc_name) {
  if (m->name == NULL) {
    g_autofree char *base = g_path_get_basename(doc_name);
    char *dot = strrchr(base, '.');
    if (dot != NULL && dot != base)
      *dot = '\0';
    for (char *p = base; *p != '\0'; p++) /* a file name must not drive the terminal */
      if ((guchar)*p < 0x20 || *p == 0x7f)
        *p = '_';
    m->name = g_strdup(base);
  }
  if (m->kv_heads == 0)
    m->kv_heads = m->heads;
  if (m->ffn_hidden == 0)
    m->ffn_hidden = 4 * m->hidden;
  if (m->vocab == 0)
    m->vocab = 50257; /* GPT-2's BPE vocabulary */
  if (m->global_batch == 0)
    m->global_batch = m->micro_batch * m->data_parallel;
  if (m->arch == ROK_ARCH_T5) {
    if (m->decoder_layers == 0)
      m->decoder_layers = m->layers;
    if (m->decoder_seq_len == 0)
      m->decoder_seq_len = m->seq_len;
  }
}

RokModel *rok_model_from_json(const RokJsonObj *obj, GError **error) {
  g_autoptr(RokModel) m = g_new0(RokModel, 1);
  int arch = 0;
  m->dropout = -1;
  m->mask_bytes = 1;
  m->tensor_parallel = m->pipeline_parallel = m->data_parallel = m->virtual_stages = 1;
  if (!rok_json_only_keys(obj, model_keys, error) ||
      !rok_json_get_string(obj, "name", FALSE, &m->name, error) ||
      !rok_json_get_string(obj, "source", FALSE, &m->source, error) ||
      !rok_json_get_enum(obj, "arch", TRUE, arch_names, &arch, error))
    return NULL;
  m->arch = arch;
  if (!read_shape(obj, m, error) || !read_training(obj, m, error) || !model_read_training(obj, m, error))
    return NULL;
  if (m->dropout < 0)
    m->dropout = m->arch == ROK_ARCH_LLAMA ? 0.0 : 0.1;
  if (m->head_dim == 0 &&
      !require(m->hidden % m->heads == 0, obj, "heads", error,
               "must divide \"hidden\" (or give \"head_dim\")"))
    return NULL;
  if (m->head_dim == 0)
    m->head_dim = m->hidden / m->heads;
  fill_defaults(m, rok_json_doc_name(obj->doc));
  if (!model_arch_read(obj, m, error) || !validate(obj, m, error) || !model_arch_validate(obj, m, error) ||
      !model_check_training(obj, m, error))
    return NULL;
  return g_steal_pointer(&m);
}

static gboolean apply_overrides(RokJsonDoc *doc, const char *const *overrides, GError **error) {
  for (const char *const *set = overrides; set != NULL && *set != NULL; set++) {
    g_autofree char *origin = g_strdup_printf("--set %s", *set);
    if (!rok_json_doc_set(doc, *set, origin, error))
      return FALSE;
  }
  return TRUE;
}

RokModel *rok_model_from_doc(RokJsonDoc *doc, const char *const *overrides, GError **error) {
  if (rok_model_doc_is_hf(doc))
    return model_from_hf_doc(doc, overrides, error);
  g_auto(RokJsonObj) root = {0};
  if (!apply_overrides(doc, overrides, error) || !rok_json_root(doc, &root, error))
    return NULL;
  return rok_model_from_json(&root, error);
}

RokModel *rok_model_parse(const char *name, const char *text, gsize length, const char *const *overrides,
                          GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse(name, text, length, error);
  return doc == NULL ? NULL : rok_model_from_doc(doc, overrides, error);
}

RokModel *rok_model_load(const char *path, const char *const *overrides, GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_load(path, error);
  return doc == NULL ? NULL : rok_model_from_doc(doc, overrides, error);
}

json_object *rok_model_to_json(const RokModel *m) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(m->name));
  if (m->source != NULL)
    json_object_object_add(o, "source", json_object_new_string(m->source));
  json_object_object_add(o, "arch", json_object_new_string(arch_names[m->arch]));
  json_object_object_add(o, "layers", json_object_new_uint64(m->layers));
  if (m->arch == ROK_ARCH_T5)
    json_object_object_add(o, "decoder_layers", json_object_new_uint64(m->decoder_layers));
  json_object_object_add(o, "hidden", json_object_new_uint64(m->hidden));
  json_object_object_add(o, "heads", json_object_new_uint64(m->heads));
  json_object_object_add(o, "kv_heads", json_object_new_uint64(m->kv_heads));
  json_object_object_add(o, "head_dim", json_object_new_uint64(m->head_dim));
  json_object_object_add(o, "ffn_hidden", json_object_new_uint64(m->ffn_hidden));
  json_object_object_add(o, "vocab", json_object_new_uint64(m->vocab));
  json_object_object_add(o, "seq_len", json_object_new_uint64(m->seq_len));
  if (m->arch == ROK_ARCH_T5)
    json_object_object_add(o, "decoder_seq_len", json_object_new_uint64(m->decoder_seq_len));
  json_object_object_add(o, "micro_batch", json_object_new_uint64(m->micro_batch));
  json_object_object_add(o, "global_batch", json_object_new_uint64(m->global_batch));
  json_object_object_add(o, "dtype", json_object_new_string(rok_dtype_name(m->dtype)));
  json_object_object_add(o, "dropout", rok_json_new_double(m->dropout));
  json_object_object_add(o, "mask_bytes", json_object_new_uint64(m->mask_bytes));
  json_object_object_add(o, "attention", json_object_new_string(attention_names[m->attention]));
  json_object_object_add(o, "tensor_parallel", json_object_new_uint64(m->tensor_parallel));
  json_object_object_add(o, "sequence_parallel", json_object_new_boolean(m->sequence_parallel));
  json_object_object_add(o, "pipeline_parallel", json_object_new_uint64(m->pipeline_parallel));
  json_object_object_add(o, "data_parallel", json_object_new_uint64(m->data_parallel));
  if (m->pipeline_parallel > 1) {
    json_object_object_add(o, "virtual_stages", json_object_new_uint64(m->virtual_stages));
    if (m->first_stage_layers)
      json_object_object_add(o, "first_stage_layers", json_object_new_uint64(m->first_stage_layers));
    if (m->last_stage_layers)
      json_object_object_add(o, "last_stage_layers", json_object_new_uint64(m->last_stage_layers));
  }
  json_object_object_add(o, "optimizer", json_object_new_string(optimizer_names[m->optimizer]));
  json_object_object_add(o, "precision", json_object_new_string(precision_names[m->precision]));
  json_object_object_add(o, "zero_stage", json_object_new_uint64(m->zero_stage));
  model_arch_to_json(m, o);
  model_training_to_json(m, o);
  return o;
}

guint64 rok_model_micro_batches_per_step(const RokModel *m) {
  return m->global_batch / (m->micro_batch * m->data_parallel);
}

/* Layers of stage `stage` (first and count), Megatron's split. */
void rok_model_stage_layers(const RokModel *m, guint stage, guint64 *first, guint64 *count) {
  guint64 p = m->pipeline_parallel, n = m->layers + m->decoder_layers;
  if (m->first_stage_layers == 0 && m->last_stage_layers == 0) {
    *count = n / p;
    *first = stage * *count;
    return;
  }
  guint64 others = p - 2 + (m->first_stage_layers == 0) + (m->last_stage_layers == 0);
  guint64 each = others ? (n - m->first_stage_layers - m->last_stage_layers) / others : 0;
  guint64 head = m->first_stage_layers ? m->first_stage_layers : each;
  guint64 tail = m->last_stage_layers ? m->last_stage_layers : each;
  *count = stage == 0 ? head : stage + 1 == p ? tail : each;
  *first = stage == 0 ? 0 : head + (stage - 1) * each;
}
