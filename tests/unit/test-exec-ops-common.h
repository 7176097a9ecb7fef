/* Helpers shared by the op-interpreter tests (included by each; every
 * function is static): tiny model configs, and a small runner that plays a
 * training step the way the executor's runner will — forward every op,
 * then backward in reverse — with a policy per saved tensor: keep it,
 * drop it and recompute its producer chain when backward needs it, or copy
 * it to the host and back. */
#pragma once

#ifdef ROK_WITH_OPENCL

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rok/device.h"
#include "rok/device.h"
#include "rok/device.h"
#include "rok/device.h"
#include "rok/ops.h"
#include "rok/core.h"
#include "rok/trace.h"

/* PoCL keeps its LLVM compiler state until exit. Not our leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libpocl.so\nleak:libLLVM\n"; }

/* The default device, or exit 77 (skip) without one. */
G_GNUC_UNUSED static RokClDevice *open_device_or_skip(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) devices = rok_cl_device_list(&error);
  if (devices == NULL || devices->len == 0) {
    g_printerr("no OpenCL device: %s\n", error != NULL ? error->message : "empty list");
    exit(77);
  }
  RokClDevice *device = rok_cl_device_open(-1, &error);
  g_assert_no_error(error);
  return device;
}

/* A trace of a tiny model: `json` is a model config, `dtype` overrides its
 * dtype. */
G_GNUC_UNUSED static RokTrace *tiny_trace(const char *json, const char *dtype) {
  g_autoptr(GError) error = NULL;
  g_autofree char *set = g_strdup_printf("dtype=%s", dtype);
  const char *overrides[] = {set, NULL};
  g_autoptr(RokModel) model = rok_model_parse("tiny", json, strlen(json), overrides, &error);
  g_assert_no_error(error);
  RokTrace *trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  return trace;
}

#define GPT_JSON                                                                                                       \
  "{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, \"seq_len\": 16, \"micro_batch\": 2, "             \
  "\"vocab\": 100, \"ffn_hidden\": 128, \"dropout\": 0.1}"
#define GPT_FLASH_JSON                                                                                                 \
  "{\"arch\": \"gpt\", \"layers\": 1, \"hidden\": 64, \"heads\": 4, \"seq_len\": 16, \"micro_batch\": 2, "             \
  "\"vocab\": 100, \"ffn_hidden\": 128, \"dropout\": 0.1, \"attention\": \"flash\"}"
#define GPT_SP_JSON                                                                                                    \
  "{\"arch\": \"gpt\", \"layers\": 1, \"hidden\": 64, \"heads\": 4, \"seq_len\": 16, \"micro_batch\": 2, "             \
  "\"vocab\": 100, \"ffn_hidden\": 128, \"dropout\": 0.1, \"tensor_parallel\": 2, \"sequence_parallel\": true}"
#define GPT_PP_JSON                                                                                                    \
  "{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, \"seq_len\": 16, \"micro_batch\": 2, "             \
  "\"vocab\": 100, \"ffn_hidden\": 128, \"dropout\": 0.1, \"pipeline_parallel\": 2}"
#define LLAMA_JSON                                                                                                     \
  "{\"arch\": \"llama\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 2, \"seq_len\": 16, "              \
  "\"micro_batch\": 2, \"vocab\": 100, \"ffn_hidden\": 96, \"attention\": \"flash\"}"
#define LLAMA_STANDARD_JSON                                                                                            \
  "{\"arch\": \"llama\", \"layers\": 1, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 2, \"seq_len\": 16, "              \
  "\"micro_batch\": 2, \"vocab\": 100, \"ffn_hidden\": 96}"
#define LLAMA_TP_JSON                                                                                                  \
  "{\"arch\": \"llama\", \"layers\": 1, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 2, \"seq_len\": 16, "              \
  "\"micro_batch\": 2, \"vocab\": 100, \"ffn_hidden\": 96, \"attention\": \"flash\", \"tensor_parallel\": 2}"
#define T5_SP_JSON                                                                                                     \
  "{\"arch\": \"t5\", \"layers\": 1, \"decoder_layers\": 1, \"hidden\": 64, \"heads\": 4, \"head_dim\": 16, "          \
  "\"seq_len\": 16, \"decoder_seq_len\": 8, \"micro_batch\": 2, \"vocab\": 100, \"ffn_hidden\": 128, "                 \
  "\"dropout\": 0.1, \"tensor_parallel\": 2, \"sequence_parallel\": true}"
#define MIXTRAL_MOE_JSON                                                                                               \
  "{\"arch\": \"llama\", \"layers\": 1, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 2, \"seq_len\": 16, "              \
  "\"micro_batch\": 2, \"vocab\": 100, \"ffn_hidden\": 96, \"experts\": 4, \"top_k\": 2, \"expert_ffn_hidden\": 48}"
#define QWEN_MOE_JSON                                                                                                  \
  "{\"arch\": \"llama\", \"layers\": 1, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 2, \"seq_len\": 16, "              \
  "\"micro_batch\": 2, \"vocab\": 100, \"ffn_hidden\": 96, \"experts\": 4, \"top_k\": 2, \"expert_ffn_hidden\": 32, " \
  "\"shared_expert_ffn_hidden\": 64, \"shared_expert_gate\": true, \"qkv_bias\": true, \"capacity_factor\": 1.0}"
#define BERT_JSON                                                                                                      \
  "{\"arch\": \"bert\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, \"seq_len\": 16, \"micro_batch\": 2, "            \
  "\"vocab\": 100, \"ffn_hidden\": 128, \"dropout\": 0.1, \"mask_bytes\": 2}"
#define T5_JSON                                                                                                        \
  "{\"arch\": \"t5\", \"layers\": 1, \"decoder_layers\": 1, \"hidden\": 64, \"heads\": 4, \"head_dim\": 16, "          \
  "\"seq_len\": 16, \"decoder_seq_len\": 8, \"micro_batch\": 2, \"vocab\": 100, \"ffn_hidden\": 128, "                 \
  "\"dropout\": 0.1, \"mask_bytes\": 4}"
#define T5_FLASH_JSON                                                                                                  \
  "{\"arch\": \"t5\", \"layers\": 1, \"decoder_layers\": 1, \"hidden\": 64, \"heads\": 4, \"head_dim\": 16, "          \
  "\"seq_len\": 16, \"decoder_seq_len\": 8, \"micro_batch\": 2, \"vocab\": 100, \"ffn_hidden\": 128, "                 \
  "\"dropout\": 0.1, \"attention\": \"flash\"}"

/* ---- A small runner ------------------------------------------------------ */

typedef enum { KEEP, RECOMPUTE, OFFLOAD } Policy;

/* Called before the backward of each op (tests corrupt or drop tensors). */
typedef void (*BeforeBackward)(gpointer data, RokExecModel *model, guint op, RokClBuffer **tensors);

typedef struct {
  RokExecModel *model;
  const RokTrace *trace;
  Policy *policy;            /* per tensor; KEEP by default */
  RokClBuffer **tensors;     /* resident now */
  guint8 **host;             /* offloaded copies */
  guint64 *forward_checksum; /* of saved tensors after forward (0: not taken) */
  guint recomputed;          /* tensors rebuilt in the step */
  guint mismatched;          /* rebuilt tensors whose bytes differ */
  guint seed_only;           /* masks rebuilt from the seed alone */
  BeforeBackward before_backward;
  gpointer before_data;
} Runner;

G_GNUC_UNUSED static Runner *runner_new(RokExecModel *model) {
  Runner *r = g_new0(Runner, 1);
  r->model = model;
  r->trace = rok_exec_model_trace(model);
  guint n = r->trace->tensors->len;
  r->policy = g_new0(Policy, MAX(n, 1));
  r->tensors = g_new0(RokClBuffer *, MAX(n, 1));
  r->host = g_new0(guint8 *, MAX(n, 1));
  r->forward_checksum = g_new0(guint64, MAX(n, 1));
  return r;
}

G_GNUC_UNUSED static void runner_free(Runner *r) {
  for (guint t = 0; t < r->trace->tensors->len; t++) {
    rok_cl_buffer_free(r->tensors[t]);
    g_free(r->host[t]);
  }
  g_free(r->policy);
  g_free(r->tensors);
  g_free(r->host);
  g_free(r->forward_checksum);
  g_free(r);
}

static guint64 buffer_checksum(Runner *r, RokClBuffer *buffer) {
  g_autoptr(GError) error = NULL;
  guint64 value = 0;
  rok_cl_checksum_buffer(rok_exec_model_kernels(r->model), buffer, &value, &error);
  g_assert_no_error(error);
  return value;
}

static void ensure_outputs(Runner *r, const RokOp *op) {
  g_autoptr(GError) error = NULL;
  for (guint i = 0; i < op->outputs->len; i++) {
    guint id = g_array_index(op->outputs, guint, i);
    if (r->tensors[id] == NULL) {
      r->tensors[id] = rok_exec_model_alloc_tensor(r->model, id, &error);
      g_assert_no_error(error);
    }
  }
}

static void runner_forward(Runner *r, guint mb) {
  g_autoptr(GError) error = NULL;
  for (guint o = 0; o < r->trace->ops->len; o++) {
    ensure_outputs(r, rok_trace_op(r->trace, o));
    rok_exec_model_forward(r->model, o, mb, r->tensors, &error);
    g_assert_no_error(error);
  }
}

/* After forward: transient tensors go, saved ones follow their policy. */
static void runner_after_forward(Runner *r) {
  g_autoptr(GError) error = NULL;
  RokClDevice *device = rok_cl_kernels_device(rok_exec_model_kernels(r->model));
  for (guint t = 0; t < r->trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(r->trace, t);
    gboolean saved = rok_tensor_is_saved(tensor);
    if (saved && r->policy[t] != KEEP)
      r->forward_checksum[t] = buffer_checksum(r, r->tensors[t]);
    if (saved && r->policy[t] == OFFLOAD) {
      /* Device to host on the transfer queue, after the compute queue. */
      rok_cl_device_finish(device, ROK_CL_QUEUE_COMPUTE, &error);
      g_assert_no_error(error);
      r->host[t] = g_malloc(MAX(tensor->bytes, 1));
      rok_cl_buffer_read(r->tensors[t], ROK_CL_QUEUE_D2H, 0, tensor->bytes, r->host[t], TRUE, 0, NULL, NULL, &error);
      g_assert_no_error(error);
    }
    if (!saved || r->policy[t] != KEEP)
      g_clear_pointer(&r->tensors[t], rok_cl_buffer_free);
  }
}

/* Make tensor t resident: prefetch it, or rebuild it by re-running its
 * producer (after making that one's inputs resident, recursively). */
static void runner_make_resident(Runner *r, guint mb, guint t) {
  g_autoptr(GError) error = NULL;
  if (r->tensors[t] != NULL)
    return;
  const RokTensor *tensor = rok_trace_tensor(r->trace, t);
  if (r->host[t] != NULL) {
    r->tensors[t] = rok_exec_model_alloc_tensor(r->model, t, &error);
    g_assert_no_error(error);
    rok_cl_buffer_write(r->tensors[t], ROK_CL_QUEUE_H2D, 0, tensor->bytes, r->host[t], TRUE, 0, NULL, NULL, &error);
    g_assert_no_error(error);
    g_clear_pointer(&r->host[t], g_free);
    return;
  }
  /* As the schedule does: what the tensor is recomputed from, then the
   * producer's outputs (a mask alone when it needs nothing: seed only). */
  const RokOp *producer = rok_trace_op(r->trace, tensor->producer);
  for (guint i = 0; i < tensor->recompute_from->len; i++)
    runner_make_resident(r, mb, g_array_index(tensor->recompute_from, guint, i));
  if (tensor->recompute_from->len > 0 || producer->kind != ROK_OP_DROPOUT) {
    ensure_outputs(r, producer);
    rok_exec_model_forward(r->model, producer->id, mb, r->tensors, &error);
  } else {
    r->seed_only++;
    r->tensors[t] = rok_exec_model_alloc_tensor(r->model, t, &error);
    g_assert_no_error(error);
    rok_exec_model_rebuild_mask(r->model, producer->id, mb, r->tensors, &error);
  }
  g_assert_no_error(error);
  for (guint i = 0; i < producer->outputs->len; i++) {
    guint id = g_array_index(producer->outputs, guint, i);
    if (r->forward_checksum[id] != 0) {
      r->recomputed++;
      r->mismatched += buffer_checksum(r, r->tensors[id]) != r->forward_checksum[id];
    }
  }
}

static void runner_backward(Runner *r, guint mb) {
  g_autoptr(GError) error = NULL;
  for (guint o = r->trace->ops->len; o-- > 0;) {
    for (guint t = 0; t < r->trace->tensors->len; t++) {
      const GArray *needed = rok_trace_tensor(r->trace, t)->needed_by;
      for (guint i = 0; i < needed->len; i++)
        if (g_array_index(needed, guint, i) == o)
          runner_make_resident(r, mb, t);
    }
    if (r->before_backward != NULL)
      r->before_backward(r->before_data, r->model, o, r->tensors);
    rok_exec_model_backward(r->model, o, mb, r->tensors, &error);
    g_assert_no_error(error);
  }
}

/* One step of `micro_batches` micro-batches from zeroed gradients; returns
 * the gradient checksum. Every activation gradient is consumed by the end
 * of each micro-batch's backward. */
G_GNUC_UNUSED static guint64 runner_step(Runner *r, guint micro_batches) {
  g_autoptr(GError) error = NULL;
  rok_exec_model_zero_gradients(r->model, &error);
  g_assert_no_error(error);
  for (guint mb = 0; mb < micro_batches; mb++) {
    runner_forward(r, mb);
    runner_after_forward(r);
    runner_backward(r, mb);
    g_assert_cmpuint(rok_exec_model_gradient_bytes(r->model), ==, 0);
    g_assert_cmpuint(rok_exec_model_end_micro_batch(r->model, mb), ==, 0);
    for (guint t = 0; t < r->trace->tensors->len; t++) {
      g_clear_pointer(&r->tensors[t], rok_cl_buffer_free);
      g_clear_pointer(&r->host[t], g_free);
    }
  }
  guint64 checksum = 0;
  rok_exec_model_gradient_checksum(r->model, &checksum, &error);
  g_assert_no_error(error);
  return checksum;
}

/* Every saved tensor that can be recomputed gets `policy`. */
G_GNUC_UNUSED static void runner_set_all(Runner *r, Policy policy) {
  for (guint t = 0; t < r->trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(r->trace, t);
    if (rok_tensor_is_saved(tensor) && (policy != RECOMPUTE || tensor->recomputable))
      r->policy[t] = policy;
  }
}

/* A buffer's bytes. */
G_GNUC_UNUSED static guint8 *download_bytes(RokClBuffer *buffer) {
  g_autoptr(GError) error = NULL;
  guint8 *raw = g_malloc(buffer->bytes + 8);
  rok_cl_buffer_read(buffer, ROK_CL_QUEUE_COMPUTE, 0, buffer->bytes, raw, TRUE, 0, NULL, NULL, &error);
  g_assert_no_error(error);
  return raw;
}

/* A parameter's values or gradient as floats. */
G_GNUC_UNUSED static float *download_floats(RokClBuffer *buffer) {
  g_autofree guint8 *raw = download_bytes(buffer);
  float *values = g_new(float, MAX(buffer->elements, 1));
  g_assert_true(rok_cl_dtype_to_float(buffer->dtype, raw, values, buffer->elements));
  return values;
}

G_GNUC_UNUSED static void upload_floats(RokClBuffer *buffer, const float *values) {
  g_autoptr(GError) error = NULL;
  g_autofree guint8 *raw = g_malloc(buffer->bytes + 8);
  g_assert_true(rok_cl_dtype_from_float(buffer->dtype, values, raw, buffer->elements));
  rok_cl_buffer_write(buffer, ROK_CL_QUEUE_COMPUTE, 0, buffer->bytes, raw, TRUE, 0, NULL, NULL, &error);
  g_assert_no_error(error);
}

#endif /* ROK_WITH_OPENCL */
