/* Creating a model for a trace: per-tensor facts, each op prepared as its
 * kind (or the stand-in, with the reason), the parameters they create. */
#ifdef ROK_WITH_OPENCL

#include <string.h>

#include "ops-private.h"
#include "rok/core.h"

static guint64 tensor_elements(const RokTensor *t) {
  guint64 n = 1;
  for (guint d = 0; d < t->rank; d++)
    n *= t->shape[d];
  return n;
}

/* Token ids range over the vocabulary of the ops that read them: an
 * embedding's rows, or the classes of a cross-entropy (one rank's share
 * under tensor parallelism). 1 (all zeros) when nothing says. */
static guint64 data_vocab(const RokTrace *trace, guint tensor) {
  guint64 vocab = 0;
  guint o = ops_consumer_of_kind(trace, tensor, ROK_OP_EMBEDDING);
  if (o != G_MAXUINT)
    vocab = rok_trace_op(trace, o)->dims[3];
  o = ops_consumer_of_kind(trace, tensor, ROK_OP_CROSS_ENTROPY);
  if (o != G_MAXUINT) {
    guint64 classes = rok_trace_op(trace, o)->dims[2];
    vocab = vocab == 0 ? classes : MIN(vocab, classes);
  }
  return MAX(vocab, 1);
}

static void tensor_facts(RokExecModel *model) {
  const RokTrace *trace = model->trace;
  g_autofree gboolean *read = g_new0(gboolean, MAX(model->n_tensors, 1));
  for (guint o = 0; o < model->n_ops; o++) {
    const RokOp *op = rok_trace_op(trace, o);
    for (guint i = 0; i < op->inputs->len; i++)
      read[g_array_index(op->inputs, guint, i)] = TRUE;
  }
  for (guint t = 0; t < model->n_tensors; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    RokOpKind producer = rok_trace_op(trace, tensor->producer)->kind;
    model->numel[t] = tensor_elements(tensor);
    /* Data entering the step has no gradient. */
    model->needs_grad[t] = tensor->dtype == model->act && producer != ROK_OP_INPUT;
    model->boundary[t] = model->needs_grad[t] && !read[t];
    model->data_vocab[t] = tensor->dtype == ROK_DTYPE_I64 ? data_vocab(trace, t) : 0;
  }
  ops_moe_tensor_facts(model);
}

static gboolean prepare_op(RokExecModel *model, guint id, GError **error) {
  OpExec *exec = &model->ops[id];
  exec->op = rok_trace_op(model->trace, id);
  const OpsKindImpl *impl = ops_kind_impl(exec->op->kind);
  char *reason = NULL;
  /* Expert linears and Qwen2-MoE's gate run as themselves, not as their
   * trace kinds (op-moe.c). */
  if (ops_moe_expert_dispatch(model, exec->op) != G_MAXUINT)
    impl = ops_moe_experts_impl();
  else if (ops_moe_is_gate(model, exec->op))
    impl = ops_moe_gate_impl();
  if (impl == NULL)
    reason = ops_reason("op '%s' (kind %s) has no kernel", exec->op->name, rok_op_kind_name(exec->op->kind));
  else if (!impl->prepare(model, exec, &reason, error))
    return FALSE;
  if (reason == NULL) {
    exec->impl = impl;
    return TRUE;
  }
  if (impl != NULL) {
    char *full =
        ops_reason("op '%s' (%s) cannot run as its kind: %s", exec->op->name, rok_op_kind_name(exec->op->kind), reason);
    g_free(reason);
    reason = full;
  }
  memset(&exec->u, 0, sizeof exec->u);
  exec->impl = ops_standin_impl();
  exec->standin = TRUE;
  return ops_standin_prepare(model, exec, reason, error);
}

static gboolean check_dtype(const RokClKernels *kernels, const RokTrace *trace, GError **error) {
  RokDtype act = rok_cl_kernels_act_dtype(kernels);
  if (trace->model != NULL && trace->model->dtype != act) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "trace '%s' stores activations as %s, but the kernels were built for %s", trace->model_name,
                rok_dtype_name(trace->model->dtype), rok_dtype_name(act));
    return FALSE;
  }
  return TRUE;
}

RokExecModel *rok_exec_model_new(RokClKernels *kernels, const RokTrace *trace, guint64 seed, GError **error) {
  if (!check_dtype(kernels, trace, error) || !rok_trace_check(trace, error))
    return NULL;
  g_autoptr(RokExecModel) model = g_new0(RokExecModel, 1);
  model->kernels = kernels;
  model->device = rok_cl_kernels_device(kernels);
  model->trace = trace;
  model->config = trace->model;
  model->act = rok_cl_kernels_act_dtype(kernels);
  model->seed = seed;
  model->n_ops = trace->ops->len;
  model->n_tensors = trace->tensors->len;
  model->ops = g_new0(OpExec, MAX(model->n_ops, 1));
  model->numel = g_new0(guint64, MAX(model->n_tensors, 1));
  model->needs_grad = g_new0(gboolean, MAX(model->n_tensors, 1));
  model->boundary = g_new0(gboolean, MAX(model->n_tensors, 1));
  model->data_vocab = g_new0(guint64, MAX(model->n_tensors, 1));
  model->params = g_ptr_array_new_with_free_func(ops_param_free);
  model->grads = g_hash_table_new(g_direct_hash, g_direct_equal);
  model->losses = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify)rok_cl_buffer_free);
  model->moe_groups = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
  tensor_facts(model);
  for (guint o = 0; o < model->n_ops; o++)
    if (!prepare_op(model, o, error))
      return NULL;
  model->checksums =
      rok_cl_buffer_new(model->device, ROK_DTYPE_I64, MAX(model->params->len, 1), "gradient checksums", FALSE, error);
  if (model->checksums == NULL)
    return NULL;
  return g_steal_pointer(&model);
}

void rok_exec_model_free(RokExecModel *model) {
  if (model == NULL)
    return;
  if (model->grads != NULL) {
    GHashTableIter iter;
    gpointer value;
    g_hash_table_iter_init(&iter, model->grads);
    while (g_hash_table_iter_next(&iter, NULL, &value))
      ops_grads_free(model, value);
    g_hash_table_unref(model->grads);
  }
  g_clear_pointer(&model->losses, g_hash_table_unref);
  g_clear_pointer(&model->moe_groups, g_hash_table_unref);
  for (guint o = 0; o < model->n_ops; o++)
    g_free(model->ops[o].note);
  g_free(model->ops);
  g_clear_pointer(&model->params, g_ptr_array_unref);
  rok_cl_buffer_free(model->checksums);
  g_free(model->numel);
  g_free(model->needs_grad);
  g_free(model->boundary);
  g_free(model->data_vocab);
  g_free(model);
}

const RokTrace *rok_exec_model_trace(const RokExecModel *model) { return model->trace; }

RokClKernels *rok_exec_model_kernels(const RokExecModel *model) { return model->kernels; }

RokClBuffer *rok_exec_model_alloc_tensor(RokExecModel *model, guint tensor, GError **error) {
  if (tensor >= model->n_tensors) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "tensor %u is out of range (the trace has %u tensors)", tensor,
                model->n_tensors);
    return NULL;
  }
  const RokTensor *t = rok_trace_tensor(model->trace, tensor);
  return rok_cl_buffer_new(model->device, t->dtype, model->numel[tensor], t->name, FALSE, error);
}

const char *rok_exec_model_op_note(const RokExecModel *model, guint op) {
  g_return_val_if_fail(op < model->n_ops, NULL);
  return model->ops[op].note;
}

guint rok_exec_model_standin_count(const RokExecModel *model) { return model->standins; }

#endif /* ROK_WITH_OPENCL */
