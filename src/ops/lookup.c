/* Questions the op families ask of the trace and its model: what a backward
 * may read, who consumes a tensor, how many heads a rank has, and the
 * Philox stream of each random draw. */
#ifdef ROK_WITH_OPENCL

#include <stdarg.h>

#include "ops-private.h"

/* splitmix64's finaliser: distinct purposes and indices land on unrelated
 * streams. */
static guint64 mix(guint64 z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

guint64 ops_stream(OpsStream purpose, guint64 a, guint64 b) { return mix(mix(mix((guint64)purpose) ^ a) ^ b); }

gboolean ops_saved_for(const RokTrace *trace, guint tensor, guint op) {
  const GArray *needed = rok_trace_tensor(trace, tensor)->needed_by;
  for (guint i = 0; i < needed->len; i++)
    if (g_array_index(needed, guint, i) == op)
      return TRUE;
  return FALSE;
}

guint ops_consumer_of_kind(const RokTrace *trace, guint tensor, RokOpKind kind) {
  /* Consumers come after the producer. */
  for (guint o = rok_trace_tensor(trace, tensor)->producer + 1; o < trace->ops->len; o++) {
    const RokOp *op = rok_trace_op(trace, o);
    if (op->kind != kind)
      continue;
    for (guint i = 0; i < op->inputs->len; i++)
      if (g_array_index(op->inputs, guint, i) == tensor)
        return o;
  }
  return G_MAXUINT;
}

void ops_model_heads(const RokModel *model, guint64 *heads, guint64 *kv_heads, guint64 *head_dim) {
  guint64 t = MAX(model->tensor_parallel, 1);
  *heads = model->heads / t;
  *kv_heads = MAX(model->kv_heads / t, 1); /* replicated when fewer than ranks */
  *head_dim = model->head_dim;
}

gboolean ops_check_tensor(const RokExecModel *model, const RokOp *op, guint id, RokDtype dtype, guint64 elements,
                          gboolean saved, char **reason) {
  const RokTensor *t = rok_trace_tensor(model->trace, id);
  if (t->dtype != dtype || model->numel[id] != elements) {
    *reason = ops_reason("'%s' holds %" G_GUINT64_FORMAT " %s, not %" G_GUINT64_FORMAT " %s", t->name, model->numel[id],
                         rok_dtype_name(t->dtype), elements, rok_dtype_name(dtype));
    return FALSE;
  }
  if (saved && !ops_saved_for(model->trace, id, op->id)) {
    *reason = ops_reason("'%s' is not saved for its backward", t->name);
    return FALSE;
  }
  return TRUE;
}

gboolean ops_check_arity(const RokOp *op, guint inputs, guint outputs, char **reason) {
  if (op->inputs->len != inputs || op->outputs->len != outputs) {
    *reason = ops_reason("it reads %u and writes %u tensors; its kind reads %u and writes %u", op->inputs->len,
                         op->outputs->len, inputs, outputs);
    return FALSE;
  }
  return TRUE;
}

char *ops_reason(const char *format, ...) {
  va_list args;
  va_start(args, format);
  char *text = g_strdup_vprintf(format, args);
  va_end(args);
  return text;
}

#endif /* ROK_WITH_OPENCL */
