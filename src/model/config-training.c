/* Model configs: how the framework trains the model (framework, gradient
 * dtype, optimizer options, LoRA, frozen layers), read, checked and written
 * apart from the shape so that both grow without stepping on each other. */
#include "config-private.h"

#include <string.h>

#include "rok/core.h"

static const char *const framework_names[] = {"megatron", "deepspeed", NULL};
static const char *const float_names[] = {"bf16", "fp16", "fp32", NULL};
static const char *const base_names[] = {"dtype", "int8", "nf4", NULL};
static const char *const kernel_names[] = {"fused", "eager", NULL};
static const char *const fp8_names[] = {"none", "e4m3", "hybrid", NULL};
static const char *const loss_names[] = {"fp32_softmax", "fused", "chunked", NULL};
static const char *const lora_target_names[] = {"qkv", "proj", "fc1", "fc2", NULL};
#define ROK_LORA_ALL (ROK_LORA_QKV | ROK_LORA_PROJ | ROK_LORA_FC1 | ROK_LORA_FC2)

const char *rok_framework_name(RokFramework framework) {
  return framework_names[framework];
}

/* "lora_targets": ["qkv", "fc1", ...] into bits, each name at most once. */
static gboolean read_lora_targets(const RokJsonObj *obj, RokModel *m, GError **error) {
  json_object *array = NULL;
  if (!rok_json_get_array(obj, "lora_targets", FALSE, &array, error))
    return FALSE;
  if (array == NULL)
    return TRUE;
  guint bits = 0;
  for (gsize i = 0; i < json_object_array_length(array); i++) {
    json_object *v = json_object_array_get_idx(array, i);
    const char *name = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    gint index = -1;
    for (gint k = 0; name != NULL && lora_target_names[k] != NULL; k++)
      if (strcmp(name, lora_target_names[k]) == 0)
        index = k;
    g_autofree char *path = g_strdup_printf("%s%slora_targets[%" G_GSIZE_FORMAT "]", obj->path,
                                            *obj->path ? "." : "", i);
    if (index < 0 || (bits & (1u << index))) {
      rok_json_error(error, obj->doc, path, "%s", index < 0 ? "must be one of \"qkv\", \"proj\", \"fc1\", \"fc2\""
                                                             : "is named twice");
      return FALSE;
    }
    bits |= 1u << index;
  }
  if (bits == 0) {
    g_autofree char *path = g_strdup_printf("%s%slora_targets", obj->path, *obj->path ? "." : "");
    rok_json_error(error, obj->doc, path, "must name at least one weight matrix");
    return FALSE;
  }
  m->train.lora_targets = bits;
  return TRUE;
}

/* DeepSpeed's defaults (deepspeed/runtime/zero/config.py). */
#define DS_REDUCE_BUCKET G_GUINT64_CONSTANT(500000000)
#define DS_PREFETCH_BUCKET G_GUINT64_CONSTANT(50000000)
#define DS_MAX_LIVE G_GUINT64_CONSTANT(1000000000)
/* Bucket sizes in elements: 2^40 keeps two fp32 buckets far below 2^62 bytes. */
#define DS_MAX_ELEMENTS (G_GUINT64_CONSTANT(1) << 40)

/* DeepSpeed ZeRO's buffer settings, under DeepSpeed's own names, with its
 * defaults; model_check_training says where they apply. */
static gboolean read_deepspeed(const RokJsonObj *obj, RokModel *m, GError **error) {
  m->train.ds.reduce_bucket_size = DS_REDUCE_BUCKET;
  m->train.ds.contiguous_gradients = TRUE;
  m->train.ds.prefetch_bucket_size = DS_PREFETCH_BUCKET;
  m->train.ds.max_live_parameters = DS_MAX_LIVE;
  return rok_json_get_uint(obj, "reduce_bucket_size", FALSE, 0, DS_MAX_ELEMENTS, &m->train.ds.reduce_bucket_size,
                           error) &&
         rok_json_get_bool(obj, "contiguous_gradients", FALSE, &m->train.ds.contiguous_gradients, error) &&
         rok_json_get_bool(obj, "overlap_comm", FALSE, &m->train.ds.overlap_comm, error) &&
         rok_json_get_uint(obj, "stage3_prefetch_bucket_size", FALSE, 0, DS_MAX_ELEMENTS,
                           &m->train.ds.prefetch_bucket_size, error) &&
         rok_json_get_uint(obj, "stage3_max_live_parameters", FALSE, 0, DS_MAX_ELEMENTS,
                           &m->train.ds.max_live_parameters, error);
}

gboolean model_read_training(const RokJsonObj *obj, RokModel *m, GError **error) {
  int framework = 0, grad = -1, base = 0, kernels = 0, loss = 0, fp8 = 0;
  m->train.momentum = TRUE;
  if (!rok_json_get_enum(obj, "framework", FALSE, framework_names, &framework, error) ||
      !rok_json_get_enum(obj, "grad_dtype", FALSE, float_names, &grad, error) ||
      !rok_json_get_bool(obj, "momentum", FALSE, &m->train.momentum, error) ||
      !rok_json_get_uint(obj, "optimizer_rank", FALSE, 1, 1 << 20, &m->train.optimizer_rank, error) ||
      !rok_json_get_uint(obj, "lora_rank", FALSE, 1, 1 << 20, &m->train.lora_rank, error) ||
      !read_lora_targets(obj, m, error) ||
      !rok_json_get_enum(obj, "lora_base", FALSE, base_names, &base, error) ||
      !rok_json_get_uint(obj, "frozen_layers", FALSE, 0, G_MAXUINT32, &m->train.frozen_layers, error) ||
      !rok_json_get_enum(obj, "kernels", FALSE, kernel_names, &kernels, error) ||
      !rok_json_get_enum(obj, "loss", FALSE, loss_names, &loss, error) ||
      !rok_json_get_uint(obj, "loss_chunk", FALSE, 1, G_MAXUINT32, &m->train.loss_chunk, error) ||
      !rok_json_get_enum(obj, "fp8", FALSE, fp8_names, &fp8, error) || !read_deepspeed(obj, m, error))
    return FALSE;
  m->train.fp8 = fp8;
  m->train.kernels = kernels;
  m->train.loss = loss;
  m->train.framework = framework;
  m->train.lora_base = base;
  /* -1: absent; filled in by model_check_training once precision is known. */
  m->train.grad_dtype = grad < 0 ? (RokDtype)-1 : (RokDtype)(ROK_DTYPE_BF16 + grad);
  return TRUE;
}

static gboolean present(const RokJsonObj *obj, const char *key) {
  return json_object_object_get_ex(obj->obj, key, NULL);
}

/* A rule between fields, reported at the field that breaks it. */
static gboolean rule(gboolean holds, const RokJsonObj *obj, const char *key, GError **error, const char *why) {
  if (!holds) {
    g_autofree char *path = *obj->path == '\0' ? g_strdup(key) : g_strconcat(obj->path, ".", key, NULL);
    rok_json_error(error, obj->doc, path, "%s", why);
  }
  return holds;
}

static gboolean check_optimizer(const RokJsonObj *obj, RokModel *m, GError **error) {
  RokOptimizer o = m->optimizer;
  if (!rule(o == ROK_OPTIMIZER_SGD || !present(obj, "momentum"), obj, "momentum", error,
            "is only for optimizer \"sgd\""))
    return FALSE;
  if (o == ROK_OPTIMIZER_APOLLO_MINI) {
    if (!rule(m->train.optimizer_rank <= 1, obj, "optimizer_rank", error,
              "must be 1 for apollo_mini (rank-1 projection, tensor-wise scaling)"))
      return FALSE;
    m->train.optimizer_rank = 1;
  } else if (o == ROK_OPTIMIZER_APOLLO) {
    if (!rule(m->train.optimizer_rank > 0, obj, "optimizer", error,
              "\"apollo\" needs \"optimizer_rank\" (the paper's r, e.g. 256)") ||
        !rule(m->train.optimizer_rank <= m->hidden, obj, "optimizer_rank", error, "must be at most \"hidden\""))
      return FALSE;
  } else if (!rule(m->train.optimizer_rank == 0, obj, "optimizer_rank", error,
                   "is only for optimizers \"apollo\" and \"apollo_mini\"")) {
    return FALSE;
  }
  return TRUE;
}

static gboolean check_lora(const RokJsonObj *obj, RokModel *m, GError **error) {
  gboolean lora = m->train.lora_rank > 0;
  if (!rule(lora || !present(obj, "lora_targets"), obj, "lora_targets", error, "needs \"lora_rank\"") ||
      !rule(lora || !present(obj, "lora_base"), obj, "lora_base", error, "needs \"lora_rank\"") ||
      !rule(!lora || m->train.frozen_layers == 0, obj, "frozen_layers", error,
            "has no meaning with LoRA, which freezes every base weight") ||
      !rule(!lora || m->train.lora_rank <= m->hidden, obj, "lora_rank", error, "must be at most \"hidden\"") ||
      !rule(!lora || m->arch != ROK_ARCH_T5, obj, "lora_rank", error, "is not modelled for arch \"t5\""))
    return FALSE;
  if (lora && m->train.lora_targets == 0)
    m->train.lora_targets = ROK_LORA_ALL; /* QLoRA's advice: every linear layer */
  return TRUE;
}

/* What the training options model is the dense layers' q, k, v, o and MLP
 * matrices (fixed.c's matrices(), training-trace.c's adapters) and Hugging
 * Face's eager dense layers: with experts or latent attention these would
 * be counted wrong, so they are refused rather than guessed. */
static gboolean check_architecture(const RokJsonObj *obj, const RokModel *m, GError **error) {
  gboolean moe = m->a.experts > 0, mla = m->a.kv_lora_rank > 0;
  const char *what = moe ? "a mixture of experts" : "latent attention";
  gboolean matrix_wise = m->optimizer == ROK_OPTIMIZER_ADAFACTOR || m->optimizer == ROK_OPTIMIZER_APOLLO ||
                         m->optimizer == ROK_OPTIMIZER_APOLLO_MINI;
  if (!moe && !mla)
    return rule(m->train.kernels == ROK_KERNELS_FUSED ||
                    (!m->a.parallel_residual && !m->a.post_norms && (m->arch != ROK_ARCH_GPT || m->a.positions > 0)),
                obj, "kernels", error,
                "\"eager\" is modelled for GPT-2's and LLaMA's layers, not a parallel residual or rotary GPT "
                "(GPT-NeoX) or post-norms (Gemma 2, whose eager attention also soft-caps its scores)");
  g_autofree char *lora = g_strdup_printf("LoRA on %s is not modelled (its adapters and frozen experts)", what);
  g_autofree char *optimizer =
      g_strdup_printf("\"%s\" on %s is not modelled (its per-matrix states); use adam, adamw, sgd or adam8bit",
                      rok_optimizer_name(m->optimizer), what);
  g_autofree char *fp8 = g_strdup_printf("fp8 on %s is not modelled (its weight copies and casts)", what);
  g_autofree char *eager = g_strdup_printf("\"eager\" is not modelled for %s (only fused kernels)", what);
  return rule(m->train.lora_rank == 0, obj, "lora_rank", error, lora) &&
         rule(!matrix_wise, obj, "optimizer", error, optimizer) &&
         rule(m->train.fp8 == ROK_FP8_NONE, obj, "fp8", error, fp8) &&
         rule(m->train.kernels == ROK_KERNELS_FUSED, obj, "kernels", error, eager);
}

/* Megatron-LM accumulates fp32 main gradients under bf16 (and by default
 * under fp16); DeepSpeed's gradients are in the model's dtype. */
static RokDtype default_grad_dtype(const RokModel *m) {
  gboolean mixed = m->precision == ROK_PRECISION_MIXED && m->dtype != ROK_DTYPE_FP32;
  return m->train.framework == ROK_FRAMEWORK_MEGATRON && mixed ? ROK_DTYPE_FP32 : m->dtype;
}

/* Liger Kernel's fused linear cross-entropy: chunks of
 * next_power_of_2(ceil(tokens / ceil(vocab / hidden))) tokens, so that a
 * chunk's logits are about as large as the hidden states. */
static guint64 liger_chunk(const RokModel *m) {
  guint64 tokens = m->seq_len * m->micro_batch, ratio = (m->vocab + m->hidden - 1) / m->hidden;
  guint64 want = (tokens + ratio - 1) / ratio, chunk = 1;
  while (chunk < want)
    chunk *= 2;
  return chunk;
}

/* The buffers are DeepSpeed ZeRO's (stage_1_and_2.py, stage3.py): under
 * Megatron-LM the DDP buckets are views into the gradient and parameter
 * buffers rok counts already, and ZeRO-0 has no ZeRO optimizer. Outside
 * their stages they are errors; there they keep DeepSpeed's values, and
 * elsewhere zero, so that nothing counts them. */
static gboolean check_deepspeed(const RokJsonObj *obj, RokModel *m, GError **error) {
  gboolean zero = m->train.framework == ROK_FRAMEWORK_DEEPSPEED && m->zero_stage >= 1;
  gboolean zero3 = zero && m->zero_stage == 3;
  const char *const any[] = {"reduce_bucket_size", "contiguous_gradients", "overlap_comm"};
  for (guint i = 0; i < G_N_ELEMENTS(any); i++)
    if (!rule(zero || !present(obj, any[i]), obj, any[i], error,
              "is a DeepSpeed ZeRO buffer setting: it needs \"framework\": \"deepspeed\" and \"zero_stage\" 1-3"))
      return FALSE;
  const char *const stage3[] = {"stage3_prefetch_bucket_size", "stage3_max_live_parameters"};
  for (guint i = 0; i < G_N_ELEMENTS(stage3); i++)
    if (!rule(zero3 || !present(obj, stage3[i]), obj, stage3[i], error,
              "is DeepSpeed ZeRO-3's: it needs \"framework\": \"deepspeed\" and \"zero_stage\": 3"))
      return FALSE;
  if (!rule(!zero3 || !present(obj, "overlap_comm") || m->train.ds.overlap_comm, obj, "overlap_comm", error,
            "false is not modelled under ZeRO-3: rok times its reduce-scatter as overlapped, DeepSpeed's default "
            "there (true changes no buffer: one reduce bucket either way, stage3.py)"))
    return FALSE;
  if (!zero)
    memset(&m->train.ds, 0, sizeof m->train.ds);
  if (zero3)
    m->train.ds.overlap_comm = TRUE;
  else
    m->train.ds.prefetch_bucket_size = m->train.ds.max_live_parameters = 0;
  return TRUE;
}

gboolean model_check_training(const RokJsonObj *obj, RokModel *m, GError **error) {
  gboolean megatron = m->train.framework == ROK_FRAMEWORK_MEGATRON;
  gboolean mixed = m->precision == ROK_PRECISION_MIXED && m->dtype != ROK_DTYPE_FP32;
  if (!rule(!megatron || m->zero_stage <= 1, obj, "zero_stage", error,
            "must be 0 or 1 under framework \"megatron\" (1 is its distributed optimizer, which shards "
            "optimizer states only); ZeRO-2 and 3 need \"framework\": \"deepspeed\"") ||
      !rule(m->train.frozen_layers <= m->layers + m->decoder_layers, obj, "frozen_layers", error,
            "must be at most the number of layers") ||
      !rule(m->train.loss == ROK_LOSS_CHUNKED || m->train.loss_chunk == 0, obj, "loss_chunk", error,
            "is only for \"loss\": \"chunked\"") ||
      !rule(m->train.kernels == ROK_KERNELS_FUSED || m->arch == ROK_ARCH_GPT || m->arch == ROK_ARCH_LLAMA, obj,
            "kernels", error, "\"eager\" is modelled for arch \"gpt\" (GPT-2) and \"llama\" only") ||
      !rule(m->train.fp8 == ROK_FP8_NONE || (m->train.kernels == ROK_KERNELS_FUSED && m->dtype != ROK_DTYPE_FP32), obj,
            "fp8", error, "needs fused kernels (Transformer Engine) and a 16-bit dtype") ||
      !check_optimizer(obj, m, error) || !check_lora(obj, m, error) || !check_architecture(obj, m, error) ||
      !check_deepspeed(obj, m, error))
    return FALSE;
  if (m->train.loss == ROK_LOSS_CHUNKED && m->train.loss_chunk == 0)
    m->train.loss_chunk = liger_chunk(m);
  if (m->train.grad_dtype == (RokDtype)-1)
    m->train.grad_dtype = default_grad_dtype(m);
  return rule(mixed || m->train.grad_dtype == m->dtype, obj, "grad_dtype", error,
              "must equal \"dtype\" without mixed precision");
}

/* DeepSpeed's buffer settings where they apply and differ from its defaults. */
static void deepspeed_to_json(const RokModel *m, json_object *o) {
  if (m->train.framework != ROK_FRAMEWORK_DEEPSPEED || m->zero_stage == 0)
    return;
  if (m->train.ds.reduce_bucket_size != DS_REDUCE_BUCKET)
    json_object_object_add(o, "reduce_bucket_size", json_object_new_uint64(m->train.ds.reduce_bucket_size));
  if (!m->train.ds.contiguous_gradients)
    json_object_object_add(o, "contiguous_gradients", json_object_new_boolean(FALSE));
  if (m->zero_stage != 3) {
    if (m->train.ds.overlap_comm)
      json_object_object_add(o, "overlap_comm", json_object_new_boolean(TRUE));
    return;
  }
  if (m->train.ds.prefetch_bucket_size != DS_PREFETCH_BUCKET)
    json_object_object_add(o, "stage3_prefetch_bucket_size", json_object_new_uint64(m->train.ds.prefetch_bucket_size));
  if (m->train.ds.max_live_parameters != DS_MAX_LIVE)
    json_object_object_add(o, "stage3_max_live_parameters", json_object_new_uint64(m->train.ds.max_live_parameters));
}

void model_training_to_json(const RokModel *m, json_object *o) {
  /* Defaults are left out: configs and traces written before these keys
   * existed write the same bytes. */
  if (m->train.framework != ROK_FRAMEWORK_MEGATRON)
    json_object_object_add(o, "framework", json_object_new_string(framework_names[m->train.framework]));
  if (m->train.grad_dtype != default_grad_dtype(m))
    json_object_object_add(o, "grad_dtype", json_object_new_string(rok_dtype_name(m->train.grad_dtype)));
  if (m->optimizer == ROK_OPTIMIZER_SGD)
    json_object_object_add(o, "momentum", json_object_new_boolean(m->train.momentum));
  if (m->optimizer == ROK_OPTIMIZER_APOLLO || m->optimizer == ROK_OPTIMIZER_APOLLO_MINI)
    json_object_object_add(o, "optimizer_rank", json_object_new_uint64(m->train.optimizer_rank));
  if (m->train.lora_rank > 0) {
    json_object_object_add(o, "lora_rank", json_object_new_uint64(m->train.lora_rank));
    json_object *targets = json_object_new_array();
    for (guint k = 0; lora_target_names[k] != NULL; k++)
      if (m->train.lora_targets & (1u << k))
        json_object_array_add(targets, json_object_new_string(lora_target_names[k]));
    json_object_object_add(o, "lora_targets", targets);
    json_object_object_add(o, "lora_base", json_object_new_string(base_names[m->train.lora_base]));
  }
  if (m->train.frozen_layers > 0)
    json_object_object_add(o, "frozen_layers", json_object_new_uint64(m->train.frozen_layers));
  if (m->train.kernels != ROK_KERNELS_FUSED)
    json_object_object_add(o, "kernels", json_object_new_string(kernel_names[m->train.kernels]));
  if (m->train.loss != ROK_LOSS_FP32_SOFTMAX)
    json_object_object_add(o, "loss", json_object_new_string(loss_names[m->train.loss]));
  if (m->train.loss == ROK_LOSS_CHUNKED)
    json_object_object_add(o, "loss_chunk", json_object_new_uint64(m->train.loss_chunk));
  if (m->train.fp8 != ROK_FP8_NONE)
    json_object_object_add(o, "fp8", json_object_new_string(fp8_names[m->train.fp8]));
  deepspeed_to_json(m, o);
}
