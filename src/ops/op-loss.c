/* cross_entropy: softmax over the classes and the loss of each token's
 * label; it saves its fp32 probabilities. The per-token losses stay on the
 * device, one buffer per micro-batch and op, for rok_exec_model_loss().
 * Backward: dlogits = (probs − onehot(label)) / tokens, the gradient of the
 * micro-batch's mean loss. */
#ifdef ROK_WITH_OPENCL

#include "ops-private.h"
#include "rok/core.h"

gboolean ops_loss_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error G_GNUC_UNUSED) {
  const RokOp *op = exec->op;
  LossExec *l = &exec->u.loss;
  l->tokens = op->dims[0] * op->dims[1];
  l->vocab = op->dims[2];
  if (l->tokens == 0 || l->vocab == 0 || l->vocab > G_MAXUINT32) {
    *reason = ops_reason("its dims have no tokens or classes");
    return TRUE;
  }
  if (!ops_check_arity(op, 2, 1, reason))
    return TRUE;
  /* Logits and labels, in either order. */
  l->labels = rok_trace_tensor(model->trace, ops_op_in(op, 0))->dtype == ROK_DTYPE_I64 ? 0 : 1;
  l->logits = 1 - l->labels;
  if (ops_check_tensor(model, op, ops_op_in(op, l->logits), model->act, l->tokens * l->vocab, FALSE, reason) &&
      ops_check_tensor(model, op, ops_op_in(op, l->labels), ROK_DTYPE_I64, l->tokens, TRUE, reason))
    ops_check_tensor(model, op, ops_op_out(op, 0), ROK_DTYPE_FP32, l->tokens * l->vocab, TRUE, reason);
  return TRUE;
}

static guint64 loss_key(guint mb, guint op) { return (guint64)mb << 32 | op; }

/* The per-token losses of this micro-batch (created on first use). */
static RokClBuffer *loss_buffer(OpsCtx *ctx, GError **error) {
  guint64 key = loss_key(ctx->mb, ctx->op->id);
  RokClBuffer *buffer = g_hash_table_lookup(ctx->model->losses, &key);
  if (buffer != NULL)
    return buffer;
  g_autofree char *label = g_strdup_printf("%s: losses of micro-batch %u", ctx->op->name, ctx->mb);
  buffer = rok_cl_buffer_new(ctx->model->device, ROK_DTYPE_FP32, ctx->exec->u.loss.tokens, label, FALSE, error);
  if (buffer != NULL)
    g_hash_table_insert(ctx->model->losses, g_memdup2(&key, sizeof key), buffer);
  return buffer;
}

gboolean ops_loss_forward(OpsCtx *ctx, GError **error) {
  const LossExec *l = &ctx->exec->u.loss;
  RokClBuffer *logits = ops_input(ctx, l->logits, error);
  RokClBuffer *labels = logits ? ops_input(ctx, l->labels, error) : NULL;
  RokClBuffer *probs = labels ? ops_output(ctx, 0, error) : NULL;
  RokClBuffer *loss = probs ? loss_buffer(ctx, error) : NULL;
  return loss != NULL &&
         rok_cl_cross_entropy_forward(ctx->model->kernels, logits, labels, probs, loss, l->tokens, l->vocab, error);
}

gboolean ops_loss_backward(OpsCtx *ctx, GError **error) {
  const LossExec *l = &ctx->exec->u.loss;
  RokClBuffer *probs = ops_output(ctx, 0, error);
  RokClBuffer *labels = probs ? ops_input(ctx, l->labels, error) : NULL;
  OpsSink sink;
  if (labels == NULL || !ops_sink_overwrite(ctx, l->logits, TRUE, FALSE, &sink, error))
    return FALSE;
  return sink.dst == NULL || (rok_cl_cross_entropy_backward(ctx->model->kernels, probs, labels, sink.dst, l->tokens,
                                                            l->vocab, (float)(1.0 / (double)l->tokens), error) &&
                              ops_sink_close(ctx, &sink, error));
}

static gboolean read_mean(RokClBuffer *buffer, double *mean, GError **error) {
  g_autofree float *values = g_new(float, MAX(buffer->elements, 1));
  if (!rok_cl_buffer_read(buffer, ROK_CL_QUEUE_COMPUTE, 0, buffer->bytes, values, TRUE, 0, NULL, NULL, error))
    return FALSE;
  double sum = 0.0;
  for (guint64 i = 0; i < buffer->elements; i++)
    sum += values[i];
  *mean = sum / (double)MAX(buffer->elements, 1);
  return TRUE;
}

gboolean rok_exec_model_loss(RokExecModel *model, guint mb, double *loss, GError **error) {
  guint found = 0;
  *loss = 0.0;
  for (guint o = 0; o < model->n_ops; o++) {
    const OpExec *exec = &model->ops[o];
    if (exec->op->kind != ROK_OP_CROSS_ENTROPY || exec->standin)
      continue;
    guint64 key = loss_key(mb, o);
    RokClBuffer *buffer = g_hash_table_lookup(model->losses, &key);
    double mean = 0.0;
    if (buffer == NULL) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "no loss for micro-batch %u: op '%s' has not run forward", mb,
                  exec->op->name);
      return FALSE;
    }
    if (!read_mean(buffer, &mean, error))
      return FALSE;
    *loss += mean;
    found++;
  }
  if (found == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "trace '%s' has no cross_entropy op that computes a loss",
                model->trace->model_name);
    return FALSE;
  }
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
