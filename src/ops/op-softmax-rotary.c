/* The standard attention's softmax (causal when the scores it reads are,
 * backward from its saved output) and LLaMA's rotary embedding of q and k
 * (backward rotates the gradient back: it saves nothing). */
#ifdef ROK_WITH_OPENCL

#include "ops-private.h"
#include "rok/core.h"

/* ---- Softmax ----------------------------------------------------------------- */

/* Causal when the scores come from a causal attn_scores op: then rows come
 * in blocks of its queries. */
static void softmax_mask(const RokExecModel *model, guint scores, EltExec *e) {
  guint producer = rok_trace_tensor(model->trace, scores)->producer;
  const OpExec *p = &model->ops[producer];
  if (p->op->kind != ROK_OP_ATTN_SCORES || p->standin || !p->u.attn.causal || e->rows % p->u.attn.seq_q != 0 ||
      e->cols != p->u.attn.seq_k)
    return;
  e->causal = TRUE;
  e->queries = p->u.attn.seq_q;
}

gboolean ops_softmax_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error G_GNUC_UNUSED) {
  const RokOp *op = exec->op;
  EltExec *e = &exec->u.elt;
  e->rows = op->dims[0] * op->dims[1];
  e->cols = op->dims[2];
  e->n = e->rows * e->cols;
  if (e->n == 0 || e->cols > G_MAXUINT32) {
    *reason = ops_reason("its dims have no [rows, cols]");
    return TRUE;
  }
  if (!ops_check_arity(op, 1, 1, reason) ||
      !ops_check_tensor(model, op, ops_op_in(op, 0), model->act, e->n, FALSE, reason) ||
      !ops_check_tensor(model, op, ops_op_out(op, 0), model->act, e->n, TRUE, reason))
    return TRUE;
  softmax_mask(model, ops_op_in(op, 0), e);
  return TRUE;
}

gboolean ops_softmax_forward(OpsCtx *ctx, GError **error) {
  const EltExec *e = &ctx->exec->u.elt;
  RokClBuffer *x = ops_input(ctx, 0, error);
  RokClBuffer *y = x ? ops_output(ctx, 0, error) : NULL;
  /* The scores GEMM applied the scale. */
  return y != NULL &&
         rok_cl_softmax_forward(ctx->model->kernels, x, y, e->rows, e->cols, e->causal, e->queries, 1.0f, error);
}

gboolean ops_softmax_backward(OpsCtx *ctx, GError **error) {
  const EltExec *e = &ctx->exec->u.elt;
  RokClBuffer *y = ops_output(ctx, 0, error);
  RokClBuffer *dy = y ? ops_dout(ctx, 0, error) : NULL;
  OpsSink sink;
  if (dy == NULL || !ops_sink_overwrite(ctx, 0, TRUE, FALSE, &sink, error))
    return FALSE;
  return sink.dst == NULL ||
         (rok_cl_softmax_backward(ctx->model->kernels, y, dy, sink.dst, e->rows, e->cols, 1.0f, error) &&
          ops_sink_close(ctx, &sink, error));
}

/* ---- Rotary -------------------------------------------------------------------- */

/* Rows of heads + kv_heads heads (q then k), every dimension of a head
 * rotated, positions counted within each sequence of the micro-batch. */
gboolean ops_rotary_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error G_GNUC_UNUSED) {
  const RokOp *op = exec->op;
  const RokModel *m = model->config;
  EltExec *e = &exec->u.elt;
  if (m == NULL) {
    *reason = ops_reason("the trace has no model config to say how many heads a row holds");
    return TRUE;
  }
  guint64 heads = 0, kv_heads = 0, head_dim = 0;
  ops_model_heads(m, &heads, &kv_heads, &head_dim);
  e->rows = op->dims[0] * op->dims[1];
  e->cols = op->dims[2];
  e->n = e->rows * e->cols;
  guint64 batch = MAX(m->micro_batch, 1);
  if (e->n == 0 || e->cols != (heads + kv_heads) * head_dim || head_dim % 2 != 0 || e->rows % batch != 0) {
    *reason = ops_reason("its rows of %" G_GUINT64_FORMAT " are not %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT
                         " heads of an even %" G_GUINT64_FORMAT " over %" G_GUINT64_FORMAT " sequences",
                         e->cols, heads, kv_heads, head_dim, batch);
    return TRUE;
  }
  if (!ops_check_arity(op, 1, 1, reason) ||
      !ops_check_tensor(model, op, ops_op_in(op, 0), model->act, e->n, FALSE, reason) ||
      !ops_check_tensor(model, op, ops_op_out(op, 0), model->act, e->n, FALSE, reason))
    return TRUE;
  e->rotary = (RokClRotary){.tokens = e->rows,
                            .heads = heads + kv_heads,
                            .head_dim = head_dim,
                            .rot_dim = head_dim,
                            .seq_len = e->rows / batch,
                            .base = 10000.0,
                            .x_ld = e->cols,
                            .y_ld = e->cols};
  return TRUE;
}

gboolean ops_rotary_forward(OpsCtx *ctx, GError **error) {
  RokClBuffer *x = ops_input(ctx, 0, error);
  RokClBuffer *y = x ? ops_output(ctx, 0, error) : NULL;
  return y != NULL && rok_cl_rotary(ctx->model->kernels, &ctx->exec->u.elt.rotary, x, y, FALSE, error);
}

gboolean ops_rotary_backward(OpsCtx *ctx, GError **error) {
  RokClBuffer *dy = ops_dout(ctx, 0, error);
  OpsSink sink;
  if (dy == NULL || !ops_sink_overwrite(ctx, 0, TRUE, FALSE, &sink, error))
    return FALSE;
  return sink.dst == NULL || (rok_cl_rotary(ctx->model->kernels, &ctx->exec->u.elt.rotary, dy, sink.dst, TRUE, error) &&
                              ops_sink_close(ctx, &sink, error));
}

#endif /* ROK_WITH_OPENCL */
