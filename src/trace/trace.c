/* Building, checking and freeing traces (the in-memory form). */
#include "rok/trace.h"

#include "rok/core.h"

static const char *const op_kind_names[ROK_OP_KIND_COUNT + 1] = {
    [ROK_OP_INPUT] = "input",
    [ROK_OP_EMBEDDING] = "embedding",
    [ROK_OP_LAYERNORM] = "layernorm",
    [ROK_OP_RMSNORM] = "rmsnorm",
    [ROK_OP_LINEAR] = "linear",
    [ROK_OP_ROTARY] = "rotary",
    [ROK_OP_ATTN_SCORES] = "attn_scores",
    [ROK_OP_SOFTMAX] = "softmax",
    [ROK_OP_DROPOUT] = "dropout",
    [ROK_OP_ATTN_CONTEXT] = "attn_context",
    [ROK_OP_FLASH_ATTENTION] = "flash_attention",
    [ROK_OP_ADD] = "add",
    [ROK_OP_GELU] = "gelu",
    [ROK_OP_RELU] = "relu",
    [ROK_OP_SWIGLU] = "swiglu",
    [ROK_OP_CROSS_ENTROPY] = "cross_entropy",
    [ROK_OP_MOE_ROUTER] = "moe_router",
    [ROK_OP_MOE_DISPATCH] = "moe_dispatch",
    [ROK_OP_MOE_COMBINE] = "moe_combine",
    [ROK_OP_OTHER] = "other",
    [ROK_OP_KIND_COUNT] = NULL,
};

const char *rok_op_kind_name(RokOpKind kind) {
  g_return_val_if_fail(kind < ROK_OP_KIND_COUNT, "other");
  return op_kind_names[kind];
}

const char *const *rok_op_kind_names(void) {
  return op_kind_names;
}

RokOpKind rok_op_kind_from_name(const char *name) {
  guint k = 0;
  while (k < ROK_OP_KIND_COUNT && g_strcmp0(op_kind_names[k], name) != 0)
    k++;
  return (RokOpKind)k;
}

static void op_clear(gpointer data) {
  RokOp *op = data;
  g_free(op->name);
  g_clear_pointer(&op->inputs, g_array_unref);
  g_clear_pointer(&op->outputs, g_array_unref);
}

static void tensor_clear(gpointer data) {
  RokTensor *tensor = data;
  g_free(tensor->name);
  g_clear_pointer(&tensor->needed_by, g_array_unref);
  g_clear_pointer(&tensor->recompute_from, g_array_unref);
}

RokTrace *rok_trace_new(const char *model_name) {
  RokTrace *trace = g_new0(RokTrace, 1);
  trace->model_name = g_strdup(model_name);
  trace->tokens_per_micro_batch = 1;
  trace->micro_batches_per_step = 1;
  trace->stages = trace->chunks = 1;
  trace->ops = g_array_new(FALSE, TRUE, sizeof(RokOp));
  g_array_set_clear_func(trace->ops, op_clear);
  trace->tensors = g_array_new(FALSE, TRUE, sizeof(RokTensor));
  g_array_set_clear_func(trace->tensors, tensor_clear);
  return trace;
}

void rok_trace_free(RokTrace *trace) {
  if (trace == NULL)
    return;
  g_free(trace->model_name);
  g_clear_pointer(&trace->model, rok_model_free);
  g_array_unref(trace->ops);
  g_array_unref(trace->tensors);
  g_free(trace);
}

static GArray *id_array_new(void) {
  return g_array_new(FALSE, FALSE, sizeof(guint));
}

guint rok_trace_add_op(RokTrace *trace, const char *name, gint layer, RokOpKind kind, guint64 batch,
                       guint64 m, guint64 n, guint64 k) {
  RokOp op = {
      .id = trace->ops->len,
      .name = g_strdup(name),
      .layer = layer,
      .kind = kind,
      .dims = {batch, m, n, k},
      .fwd_time_s = -1,
      .bwd_time_s = -1,
      .inputs = id_array_new(),
      .outputs = id_array_new(),
  };
  g_array_append_val(trace->ops, op);
  return op.id;
}

/* Saturating: an absurd shape must not wrap around to a small size; the
 * model validation rejects such configs before any trace is built. */
static guint64 shape_bytes(RokDtype dtype, guint rank, const guint64 *shape) {
  guint64 bytes = rok_dtype_bytes(dtype);
  for (guint i = 0; i < rank; i++)
    if (!g_uint64_checked_mul(&bytes, bytes, shape[i]))
      return G_MAXUINT64;
  return bytes;
}

guint rok_trace_add_tensor(RokTrace *trace, const char *name, gint layer, RokDtype dtype, guint rank,
                           const guint64 *shape, guint producer) {
  g_return_val_if_fail(rank >= 1 && rank <= 4, 0);
  g_return_val_if_fail(producer < trace->ops->len, 0);
  RokTensor tensor = {
      .id = trace->tensors->len,
      .name = g_strdup(name),
      .layer = layer,
      .dtype = dtype,
      .rank = rank,
      .producer = producer,
      .needed_by = id_array_new(),
      .recomputable = TRUE,
      .recompute_from = id_array_new(),
  };
  memcpy(tensor.shape, shape, rank * sizeof *shape);
  tensor.bytes = shape_bytes(dtype, rank, shape);
  g_array_append_val(trace->tensors, tensor);
  g_array_append_val(rok_trace_op(trace, producer)->outputs, tensor.id);
  return tensor.id;
}

void rok_trace_add_input(RokTrace *trace, guint op, guint tensor) {
  g_return_if_fail(op < trace->ops->len && tensor < trace->tensors->len);
  g_array_append_val(rok_trace_op(trace, op)->inputs, tensor);
}

static gboolean id_array_contains(const GArray *ids, guint id) {
  for (guint i = 0; i < ids->len; i++)
    if (g_array_index(ids, guint, i) == id)
      return TRUE;
  return FALSE;
}

void rok_trace_need(RokTrace *trace, guint tensor, guint op) {
  g_return_if_fail(op < trace->ops->len && tensor < trace->tensors->len);
  GArray *needed_by = rok_trace_tensor(trace, tensor)->needed_by;
  if (!id_array_contains(needed_by, op))
    g_array_append_val(needed_by, op);
}

static gboolean check_op(const RokTrace *trace, const RokOp *op, GError **error) {
  for (guint i = 0; i < op->inputs->len; i++) {
    guint id = g_array_index(op->inputs, guint, i);
    if (id >= trace->tensors->len || rok_trace_tensor(trace, id)->producer >= op->id) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                  "op %u (%s): input %u is not a tensor produced by an earlier op", op->id, op->name, id);
      return FALSE;
    }
  }
  for (guint i = 0; i < op->outputs->len; i++) {
    guint id = g_array_index(op->outputs, guint, i);
    if (id >= trace->tensors->len || rok_trace_tensor(trace, id)->producer != op->id) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                  "op %u (%s): output %u does not name this op as its producer", op->id, op->name, id);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean check_tensor(const RokTrace *trace, const RokTensor *tensor, GError **error) {
  if (tensor->producer >= trace->ops->len) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "tensor %u (%s): producer %u is not an op", tensor->id,
                tensor->name, tensor->producer);
    return FALSE;
  }
  if (tensor->bytes != shape_bytes(tensor->dtype, tensor->rank, tensor->shape)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "tensor %u (%s): %" G_GUINT64_FORMAT " bytes do not match its shape and dtype", tensor->id,
                tensor->name, tensor->bytes);
    return FALSE;
  }
  for (guint i = 0; i < tensor->needed_by->len; i++) {
    guint op = g_array_index(tensor->needed_by, guint, i);
    if (op >= trace->ops->len || op < tensor->producer) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                  "tensor %u (%s): needed by op %u, which is not an op at or after its producer", tensor->id,
                  tensor->name, op);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean rok_trace_check(const RokTrace *trace, GError **error) {
  for (guint i = 0; i < trace->tensors->len; i++)
    if (!check_tensor(trace, rok_trace_tensor(trace, i), error))
      return FALSE;
  for (guint i = 0; i < trace->ops->len; i++)
    if (!check_op(trace, rok_trace_op(trace, i), error))
      return FALSE;
  return TRUE;
}

gboolean rok_trace_finish(RokTrace *trace, GError **error) {
  for (guint i = 0; i < trace->tensors->len; i++) {
    RokTensor *tensor = rok_trace_tensor(trace, i);
    if (!check_tensor(trace, tensor, error))
      return FALSE;
    const RokOp *producer = rok_trace_op(trace, tensor->producer);
    g_array_set_size(tensor->recompute_from, 0);
    /* A dropout mask is a function of the seed alone (counter-based RNG). */
    gboolean is_mask = producer->kind == ROK_OP_DROPOUT && g_array_index(producer->outputs, guint, 0) == i;
    if (!is_mask)
      g_array_append_vals(tensor->recompute_from, producer->inputs->data, producer->inputs->len);
    if (producer->kind == ROK_OP_INPUT)
      tensor->recomputable = FALSE;
  }
  return rok_trace_check(trace, error);
}

RokDtype rok_trace_activation_dtype(const RokTrace *trace) {
  if (trace->model != NULL)
    return trace->model->dtype;
  for (guint t = 0; t < trace->tensors->len; t++) {
    RokDtype d = rok_trace_tensor(trace, t)->dtype;
    if (d == ROK_DTYPE_BF16 || d == ROK_DTYPE_FP16 || d == ROK_DTYPE_FP32)
      return d;
  }
  return ROK_DTYPE_FP32;
}

guint64 rok_trace_saved_bytes(const RokTrace *trace, gint layer) {
  guint64 total = 0;
  for (guint i = 0; i < trace->tensors->len; i++) {
    const RokTensor *tensor = rok_trace_tensor(trace, i);
    if (tensor->layer == layer && rok_tensor_is_saved(tensor))
      total += tensor->bytes;
  }
  return total;
}

guint64 rok_trace_total_saved_bytes(const RokTrace *trace) {
  guint64 total = 0;
  for (guint i = 0; i < trace->tensors->len; i++) {
    const RokTensor *tensor = rok_trace_tensor(trace, i);
    if (rok_tensor_is_saved(tensor))
      total += tensor->bytes;
  }
  return total;
}

gboolean rok_op_kind_is_gemm(RokOpKind kind) {
  return kind == ROK_OP_LINEAR || kind == ROK_OP_ATTN_SCORES || kind == ROK_OP_ATTN_CONTEXT ||
         kind == ROK_OP_FLASH_ATTENTION;
}

double rok_trace_model_flops(const RokTrace *trace) {
  double flops = 0;
  for (guint i = 0; i < trace->ops->len; i++) {
    const RokOp *op = rok_trace_op(trace, i);
    if (rok_op_kind_is_gemm(op->kind))
      flops += 3.0 * (double)op->fwd_flops;
  }
  return flops;
}

guint64 rok_trace_replica_gpus(const RokTrace *trace) {
  if (trace->model == NULL)
    return 1;
  return MAX(trace->model->tensor_parallel, 1) * MAX(trace->model->pipeline_parallel, 1);
}

double rok_op_work(const RokOp *op, gboolean backward) {
  if (rok_op_kind_is_gemm(op->kind))
    return (double)(backward ? op->bwd_flops : op->fwd_flops);
  return (double)(backward ? op->bwd_bytes : op->fwd_bytes);
}

guint rok_trace_op_chunk(const RokTrace *trace, guint op) {
  guint chunks = MAX(trace->chunks, 1), per_chunk = MAX(trace->layers / chunks, 1);
  for (guint o = op; o < trace->ops->len; o++) {
    gint layer = rok_trace_op(trace, o)->layer;
    if (layer >= 0)
      return MIN((guint)layer / per_chunk, chunks - 1);
  }
  return chunks - 1;
}
