/* layernorm (gamma, beta; statistics [rows, 2] = mean, rstd) and rmsnorm
 * (gamma; statistics [rows] = rstd) over the last dimension. Backward reads
 * the saved input and statistics. */
#ifdef ROK_WITH_OPENCL

#include "ops-private.h"
#include "rok/core.h"

gboolean ops_norm_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error) {
  const RokOp *op = exec->op;
  NormExec *n = &exec->u.norm;
  gboolean layer = op->kind == ROK_OP_LAYERNORM;
  n->rows = op->dims[0] * op->dims[1];
  n->cols = op->dims[2];
  n->eps = layer ? 1e-5f : 1e-6f;
  if (n->rows == 0 || n->cols == 0 || n->rows > G_MAXUINT32) {
    *reason = ops_reason("its dims have no [rows, cols]");
    return TRUE;
  }
  guint64 elements = n->rows * n->cols, stats = n->rows * (layer ? 2 : 1);
  if (!ops_check_arity(op, 1, 2, reason) ||
      !ops_check_tensor(model, op, ops_op_in(op, 0), model->act, elements, TRUE, reason) ||
      !ops_check_tensor(model, op, ops_op_out(op, 0), model->act, elements, FALSE, reason) ||
      !ops_check_tensor(model, op, ops_op_out(op, 1), ROK_DTYPE_FP32, stats, TRUE, reason))
    return TRUE;
  n->gamma = ops_param_new(model, op, "gamma", 1, n->cols, 0.9f, 1.1f, error);
  if (n->gamma == NULL)
    return FALSE;
  if (layer && (n->beta = ops_param_new(model, op, "beta", 1, n->cols, -0.02f, 0.02f, error)) == NULL)
    return FALSE;
  return TRUE;
}

gboolean ops_norm_forward(OpsCtx *ctx, GError **error) {
  const NormExec *n = &ctx->exec->u.norm;
  RokClBuffer *x = ops_input(ctx, 0, error);
  RokClBuffer *y = x ? ops_output(ctx, 0, error) : NULL;
  RokClBuffer *stats = y ? ops_output(ctx, 1, error) : NULL;
  if (stats == NULL)
    return FALSE;
  if (n->beta != NULL)
    return rok_cl_layernorm_forward(ctx->model->kernels, x, n->gamma->value, n->beta->value, y, stats, n->rows, n->cols,
                                    n->eps, error);
  return rok_cl_rmsnorm_forward(ctx->model->kernels, x, n->gamma->value, y, stats, n->rows, n->cols, n->eps, error);
}

gboolean ops_norm_backward(OpsCtx *ctx, GError **error) {
  const NormExec *n = &ctx->exec->u.norm;
  RokClBuffer *x = ops_input(ctx, 0, error);
  RokClBuffer *stats = x ? ops_output(ctx, 1, error) : NULL;
  RokClBuffer *dy = stats ? ops_dout(ctx, 0, error) : NULL;
  OpsSink sink;
  if (dy == NULL || !ops_sink_overwrite(ctx, 0, TRUE, TRUE, &sink, error))
    return FALSE;
  gboolean ok = n->beta != NULL
                    ? rok_cl_layernorm_backward(ctx->model->kernels, x, n->gamma->value, stats, dy, sink.dst,
                                                n->gamma->grad, n->beta->grad, n->rows, n->cols, error)
                    : rok_cl_rmsnorm_backward(ctx->model->kernels, x, n->gamma->value, stats, dy, sink.dst,
                                              n->gamma->grad, n->rows, n->cols, error);
  return ok && ops_sink_close(ctx, &sink, error);
}

#endif /* ROK_WITH_OPENCL */
