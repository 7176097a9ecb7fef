/* Data entering the step and its embedding. The input op writes token ids
 * (and labels) uniform over the vocabulary of the ops that read them, a
 * function of (seed, micro-batch, tensor). The embedding looks tokens up in
 * the token table (shared by T5's two stacks and the tied output head) and
 * adds learned positions for GPT and BERT; its backward scatters into the
 * table's gradient by the saved token ids. */
#ifdef ROK_WITH_OPENCL

#include <math.h>

#include "ops-private.h"
#include "rok/core.h"

/* ---- Input ------------------------------------------------------------------ */

gboolean ops_input_prepare(RokExecModel *model G_GNUC_UNUSED, OpExec *exec G_GNUC_UNUSED, char **reason G_GNUC_UNUSED,
                           GError **error G_GNUC_UNUSED) {
  return TRUE;
}

static gboolean fill(OpsCtx *ctx, guint id, RokClBuffer *buffer, GError **error) {
  RokExecModel *model = ctx->model;
  guint64 stream = ops_stream(STREAM_DATA, ctx->mb, id);
  if (buffer->dtype == ROK_DTYPE_I64)
    return rok_cl_fill_tokens(model->kernels, buffer, model->seed, stream, model->data_vocab[id], error);
  if (buffer->dtype == model->act || buffer->dtype == ROK_DTYPE_FP32)
    return rok_cl_fill_uniform(model->kernels, buffer, model->seed, stream, -1.0f, 1.0f, error);
  return rok_cl_buffer_zero(buffer, error);
}

gboolean ops_input_forward(OpsCtx *ctx, GError **error) {
  for (guint i = 0; i < ctx->op->outputs->len; i++) {
    /* An output nobody wants now is not made. */
    if (ctx->tensors[ops_out_id(ctx, i)] == NULL)
      continue;
    RokClBuffer *buffer = ops_output(ctx, i, error);
    if (buffer == NULL || !fill(ctx, ops_out_id(ctx, i), buffer, error))
      return FALSE;
  }
  return TRUE;
}

gboolean ops_input_backward(OpsCtx *ctx G_GNUC_UNUSED, GError **error G_GNUC_UNUSED) {
  return TRUE; /* data has no gradient: the dispatcher drops what arrived */
}

/* ---- Embedding ----------------------------------------------------------------- */

static gboolean embedding_params(RokExecModel *model, OpExec *exec, GError **error) {
  const RokModel *m = model->config;
  EmbedExec *e = &exec->u.embed;
  RokExecParam *shared = model->token_table;
  if (m != NULL && shared != NULL && shared->rows == e->vocab && shared->cols == e->hidden) {
    e->table = shared;
  } else {
    float a = (float)(1.0 / sqrt((double)e->hidden));
    if ((e->table = ops_param_new(model, exec->op, "table", e->vocab, e->hidden, -a, a, error)) == NULL)
      return FALSE;
    if (m != NULL && shared == NULL)
      model->token_table = e->table;
  }
  e->seq_len = e->tokens;
  guint64 batch = m != NULL ? MAX(m->micro_batch, 1) : 1;
  if (m == NULL || (m->arch != ROK_ARCH_GPT && m->arch != ROK_ARCH_BERT) || e->tokens % batch != 0)
    return TRUE;
  e->seq_len = e->tokens / batch;
  float a = (float)(0.5 / sqrt((double)e->hidden));
  return (e->positions = ops_param_new(model, exec->op, "positions", e->seq_len, e->hidden, -a, a, error)) != NULL;
}

gboolean ops_embedding_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error) {
  const RokOp *op = exec->op;
  EmbedExec *e = &exec->u.embed;
  e->tokens = op->dims[0] * op->dims[1];
  e->hidden = op->dims[2];
  e->vocab = op->dims[3];
  if (e->tokens == 0 || e->hidden == 0 || e->vocab == 0 || e->tokens > G_MAXUINT32) {
    *reason = ops_reason("its dims have no tokens, hidden size or vocabulary");
    return TRUE;
  }
  if (!ops_check_arity(op, 1, 1, reason) ||
      !ops_check_tensor(model, op, ops_op_in(op, 0), ROK_DTYPE_I64, e->tokens, TRUE, reason))
    return TRUE;
  guint y = ops_op_out(op, 0);
  guint64 elements = model->numel[y];
  if (rok_trace_tensor(model->trace, y)->dtype != model->act || elements == 0 || elements % e->hidden != 0 ||
      e->tokens % (elements / e->hidden) != 0) {
    *reason = ops_reason("its output is not rows of %" G_GUINT64_FORMAT " activations dividing its %" G_GUINT64_FORMAT
                         " tokens",
                         e->hidden, e->tokens);
    return TRUE;
  }
  e->y_rows = elements / e->hidden;
  return embedding_params(model, exec, error);
}

gboolean ops_embedding_forward(OpsCtx *ctx, GError **error) {
  const EmbedExec *e = &ctx->exec->u.embed;
  RokClBuffer *ids = ops_input(ctx, 0, error);
  RokClBuffer *y = ids ? ops_output(ctx, 0, error) : NULL, *full = y;
  if (y != NULL && e->y_rows != e->tokens)
    full = ops_scratch(ctx, ctx->model->act, e->tokens * e->hidden, "all tokens", FALSE, error);
  if (full == NULL ||
      !rok_cl_embedding_forward(ctx->model->kernels, ids, e->table->value, e->positions ? e->positions->value : NULL,
                                full, e->tokens, e->hidden, e->vocab, e->seq_len, error))
    return FALSE;
  return full == y || ops_rows_sum(ctx, full, e->tokens, y, e->y_rows, e->hidden, error);
}

gboolean ops_embedding_backward(OpsCtx *ctx, GError **error) {
  const EmbedExec *e = &ctx->exec->u.embed;
  RokClBuffer *ids = ops_input(ctx, 0, error);
  RokClBuffer *dy = ids ? ops_dout(ctx, 0, error) : NULL, *full = dy;
  if (dy != NULL && e->y_rows != e->tokens) {
    full = ops_scratch(ctx, ctx->model->act, e->tokens * e->hidden, "gradient of all tokens", FALSE, error);
    if (full != NULL && !ops_rows_tile(dy, e->y_rows, full, e->tokens, e->hidden, error))
      return FALSE;
  }
  return full != NULL && rok_cl_embedding_backward(ctx->model->kernels, ids, full, e->table->grad,
                                                   e->positions ? e->positions->grad : NULL, e->tokens, e->hidden,
                                                   e->vocab, e->seq_len, error);
}

#endif /* ROK_WITH_OPENCL */
