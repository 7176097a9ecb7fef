/* Element-wise ops: GeLU (backward reads its saved input), ReLU (its saved
 * output, or input), SwiGLU (its saved [gate | up] input), residual add
 * (saves nothing: the gradient passes to both inputs) and dropout (its
 * saved mask; the mask is a function of seed, micro-batch and op). */
#ifdef ROK_WITH_OPENCL

#include "ops-private.h"
#include "rok/core.h"

/* ---- GeLU and ReLU -------------------------------------------------------- */

gboolean ops_unary_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error G_GNUC_UNUSED) {
  const RokOp *op = exec->op;
  EltExec *e = &exec->u.elt;
  if (!ops_check_arity(op, 1, 1, reason))
    return TRUE;
  guint x = ops_op_in(op, 0), y = ops_op_out(op, 0);
  e->n = model->numel[x];
  if (!ops_check_tensor(model, op, x, model->act, e->n, FALSE, reason) ||
      !ops_check_tensor(model, op, y, model->act, e->n, FALSE, reason))
    return TRUE;
  /* ReLU's input and output are positive at the same elements. */
  e->relu_reads_output = op->kind == ROK_OP_RELU && ops_saved_for(model->trace, y, op->id);
  if (!e->relu_reads_output && !ops_saved_for(model->trace, x, op->id))
    *reason = ops_reason("its input '%s'%s is not saved for its backward", rok_trace_tensor(model->trace, x)->name,
                         op->kind == ROK_OP_RELU ? " (nor its output)" : "");
  return TRUE;
}

gboolean ops_gelu_forward(OpsCtx *ctx, GError **error) {
  RokClBuffer *x = ops_input(ctx, 0, error);
  RokClBuffer *y = x ? ops_output(ctx, 0, error) : NULL;
  return y != NULL && rok_cl_gelu_forward(ctx->model->kernels, x, y, ctx->exec->u.elt.n, error);
}

gboolean ops_relu_forward(OpsCtx *ctx, GError **error) {
  RokClBuffer *x = ops_input(ctx, 0, error);
  RokClBuffer *y = x ? ops_output(ctx, 0, error) : NULL;
  return y != NULL && rok_cl_relu_forward(ctx->model->kernels, x, y, ctx->exec->u.elt.n, error);
}

typedef gboolean (*UnaryBackward)(RokClKernels *, RokClBuffer *, RokClBuffer *, RokClBuffer *, guint64, GError **);

static gboolean unary_backward(OpsCtx *ctx, RokClBuffer *saved, UnaryBackward kernel, GError **error) {
  RokClBuffer *dy = saved ? ops_dout(ctx, 0, error) : NULL;
  OpsSink sink;
  if (dy == NULL || !ops_sink_overwrite(ctx, 0, TRUE, FALSE, &sink, error))
    return FALSE;
  if (sink.dst == NULL)
    return TRUE;
  return kernel(ctx->model->kernels, saved, dy, sink.dst, ctx->exec->u.elt.n, error) &&
         ops_sink_close(ctx, &sink, error);
}

gboolean ops_gelu_backward(OpsCtx *ctx, GError **error) {
  return unary_backward(ctx, ops_input(ctx, 0, error), rok_cl_gelu_backward, error);
}

gboolean ops_relu_backward(OpsCtx *ctx, GError **error) {
  RokClBuffer *saved = ctx->exec->u.elt.relu_reads_output ? ops_output(ctx, 0, error) : ops_input(ctx, 0, error);
  return unary_backward(ctx, saved, rok_cl_relu_backward, error);
}

/* ---- SwiGLU ------------------------------------------------------------------ */

gboolean ops_swiglu_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error G_GNUC_UNUSED) {
  const RokOp *op = exec->op;
  EltExec *e = &exec->u.elt;
  e->rows = op->dims[0] * op->dims[1];
  e->cols = op->dims[2];
  e->n = e->rows * e->cols;
  if (e->n == 0 || e->cols > G_MAXUINT32) {
    *reason = ops_reason("its dims have no [rows, cols]");
    return TRUE;
  }
  if (ops_check_arity(op, 1, 1, reason) &&
      ops_check_tensor(model, op, ops_op_in(op, 0), model->act, 2 * e->n, TRUE, reason))
    ops_check_tensor(model, op, ops_op_out(op, 0), model->act, e->n, FALSE, reason);
  return TRUE;
}

gboolean ops_swiglu_forward(OpsCtx *ctx, GError **error) {
  const EltExec *e = &ctx->exec->u.elt;
  RokClBuffer *x = ops_input(ctx, 0, error);
  RokClBuffer *y = x ? ops_output(ctx, 0, error) : NULL;
  return y != NULL && rok_cl_swiglu_forward(ctx->model->kernels, x, y, e->rows, e->cols, error);
}

gboolean ops_swiglu_backward(OpsCtx *ctx, GError **error) {
  const EltExec *e = &ctx->exec->u.elt;
  RokClBuffer *x = ops_input(ctx, 0, error);
  RokClBuffer *dy = x ? ops_dout(ctx, 0, error) : NULL;
  OpsSink sink;
  if (dy == NULL || !ops_sink_overwrite(ctx, 0, TRUE, FALSE, &sink, error))
    return FALSE;
  return sink.dst == NULL || (rok_cl_swiglu_backward(ctx->model->kernels, x, dy, sink.dst, e->rows, e->cols, error) &&
                              ops_sink_close(ctx, &sink, error));
}

/* ---- Residual add -------------------------------------------------------------- */

gboolean ops_add_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error G_GNUC_UNUSED) {
  const RokOp *op = exec->op;
  EltExec *e = &exec->u.elt;
  if (!ops_check_arity(op, 2, 1, reason))
    return TRUE;
  e->n = model->numel[ops_op_out(op, 0)];
  if (ops_check_tensor(model, op, ops_op_in(op, 0), model->act, e->n, FALSE, reason) &&
      ops_check_tensor(model, op, ops_op_in(op, 1), model->act, e->n, FALSE, reason))
    ops_check_tensor(model, op, ops_op_out(op, 0), model->act, e->n, FALSE, reason);
  return TRUE;
}

gboolean ops_add_forward(OpsCtx *ctx, GError **error) {
  RokClBuffer *a = ops_input(ctx, 0, error);
  RokClBuffer *b = a ? ops_input(ctx, 1, error) : NULL;
  RokClBuffer *y = b ? ops_output(ctx, 0, error) : NULL;
  return y != NULL && rok_cl_add(ctx->model->kernels, a, b, y, ctx->exec->u.elt.n, error);
}

/* Both inputs receive dy: the first a copy (or a sum into what it has),
 * the second the buffer itself where it has nothing yet. */
gboolean ops_add_backward(OpsCtx *ctx, GError **error) {
  RokClBuffer *dy = ops_dout(ctx, 0, error);
  if (dy == NULL || !ops_grad_add(ctx, 0, dy, error))
    return FALSE;
  return ops_grad_move(ctx, 0, 1) || ops_grad_add(ctx, 1, dy, error);
}

/* ---- Dropout ---------------------------------------------------------------------- */

gboolean ops_dropout_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error G_GNUC_UNUSED) {
  const RokOp *op = exec->op;
  EltExec *e = &exec->u.elt;
  if (!ops_check_arity(op, 1, 2, reason))
    return TRUE;
  guint mask = ops_op_out(op, 0);
  RokDtype mask_dtype = rok_trace_tensor(model->trace, mask)->dtype;
  e->n = model->numel[ops_op_in(op, 0)];
  e->p = op->dropout;
  if (mask_dtype != ROK_DTYPE_U8 && mask_dtype != ROK_DTYPE_U16 && mask_dtype != ROK_DTYPE_U32) {
    *reason = ops_reason("its first output is not a u8, u16 or u32 mask");
    return TRUE;
  }
  if (!(e->p >= 0.0 && e->p < 1.0)) {
    *reason = ops_reason("its probability %g is outside [0, 1)", e->p);
    return TRUE;
  }
  if (ops_check_tensor(model, op, ops_op_in(op, 0), model->act, e->n, FALSE, reason) &&
      ops_check_tensor(model, op, mask, mask_dtype, e->n, TRUE, reason))
    ops_check_tensor(model, op, ops_op_out(op, 1), model->act, e->n, FALSE, reason);
  return TRUE;
}

gboolean ops_dropout_forward(OpsCtx *ctx, GError **error) {
  const EltExec *e = &ctx->exec->u.elt;
  RokClDropout dropout = ops_dropout(ctx, e->p);
  RokClBuffer *x = ops_input(ctx, 0, error);
  RokClBuffer *mask = x ? ops_output(ctx, 0, error) : NULL;
  RokClBuffer *y = mask ? ops_output(ctx, 1, error) : NULL;
  return y != NULL && rok_cl_dropout_forward(ctx->model->kernels, &dropout, x, mask, y, e->n, error);
}

/* The mask alone, from the seed: reads nothing. */
gboolean ops_dropout_mask(OpsCtx *ctx, GError **error) {
  const EltExec *e = &ctx->exec->u.elt;
  RokClDropout dropout = ops_dropout(ctx, e->p);
  if (ctx->tensors[ops_out_id(ctx, 0)] == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "no buffer given for the mask '%s'",
                rok_trace_tensor(ctx->model->trace, ops_out_id(ctx, 0))->name);
    return FALSE;
  }
  RokClBuffer *mask = ops_output(ctx, 0, error);
  return mask != NULL && rok_cl_dropout_mask(ctx->model->kernels, &dropout, mask, e->n, error);
}

gboolean ops_dropout_backward(OpsCtx *ctx, GError **error) {
  const EltExec *e = &ctx->exec->u.elt;
  RokClDropout dropout = ops_dropout(ctx, e->p);
  RokClBuffer *mask = ops_output(ctx, 0, error);
  RokClBuffer *dy = mask ? ops_dout(ctx, 1, error) : NULL;
  OpsSink sink;
  if (dy == NULL || !ops_sink_overwrite(ctx, 0, TRUE, FALSE, &sink, error))
    return FALSE;
  return sink.dst == NULL || (rok_cl_dropout_backward(ctx->model->kernels, &dropout, mask, dy, sink.dst, e->n, error) &&
                              ops_sink_close(ctx, &sink, error));
}

#endif /* ROK_WITH_OPENCL */
