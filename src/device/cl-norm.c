/* LayerNorm, RMSNorm and bias-gradient launchers. */
#ifdef ROK_WITH_OPENCL

#include "cl-kernels-private.h"
#include "rok/core.h"

/* rows·cols elements, cols and rows fitting the kernels' 32-bit indices. */
static gboolean row_shape(guint64 rows, guint64 cols, guint64 *elements, const char *op, GError **error) {
  return device_cl_check_u32(rows, op, "rows", error) && device_cl_check_u32(cols, op, "cols", error) &&
         device_cl_mul(rows, cols, elements, op, error);
}

/* One work-group per row. */
static gboolean run_rows(RokClLaunch *launch, guint64 rows, GError **error) {
  size_t wg = launch->kernels->tuning.wg;
  size_t global = (size_t)rows * wg;
  return device_cl_launch_run(launch, 1, &global, &wg, error);
}

/* One item per column. */
static gboolean run_columns(RokClLaunch *launch, guint64 cols, GError **error) {
  size_t wg = launch->kernels->tuning.wg;
  size_t global = (size_t)cols;
  return device_cl_launch_run(launch, 1, &global, &wg, error);
}

gboolean rok_cl_layernorm_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *gamma, RokClBuffer *beta,
                                  RokClBuffer *y, RokClBuffer *stats, guint64 rows, guint64 cols, float eps,
                                  GError **error) {
  const char *op = "layernorm_forward";
  guint64 n = 0;
  if (!row_shape(rows, cols, &n, op, error) || !device_cl_check_act(kernels, x, n, op, "x", error) ||
      !device_cl_check_act(kernels, gamma, cols, op, "gamma", error) ||
      !device_cl_check_act(kernels, beta, cols, op, "beta", error) || !device_cl_check_act(kernels, y, n, op, "y", error) ||
      !device_cl_check_buffer(stats, ROK_DTYPE_FP32, 2 * rows, op, "stats", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_LAYERNORM_FWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, gamma);
  device_cl_arg_buffer(&launch, beta);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_buffer(&launch, stats);
  device_cl_arg_u32(&launch, (guint32)cols);
  device_cl_arg_f32(&launch, eps);
  return run_rows(&launch, rows, error);
}

gboolean rok_cl_layernorm_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *gamma, RokClBuffer *stats,
                                   RokClBuffer *dy, RokClBuffer *dx, RokClBuffer *dgamma, RokClBuffer *dbeta,
                                   guint64 rows, guint64 cols, GError **error) {
  const char *op = "layernorm_backward";
  guint64 n = 0;
  if (!row_shape(rows, cols, &n, op, error) || !device_cl_check_act(kernels, x, n, op, "x", error) ||
      !device_cl_check_act(kernels, gamma, cols, op, "gamma", error) ||
      !device_cl_check_buffer(stats, ROK_DTYPE_FP32, 2 * rows, op, "stats", error) ||
      !device_cl_check_act(kernels, dy, n, op, "dy", error) || !device_cl_check_act(kernels, dx, n, op, "dx", error))
    return FALSE;
  if ((dgamma == NULL) != (dbeta == NULL)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: give both dgamma and dbeta or neither", op);
    return FALSE;
  }
  RokClLaunch launch = device_cl_launch(kernels, K_LAYERNORM_BWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, gamma);
  device_cl_arg_buffer(&launch, stats);
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dx);
  device_cl_arg_u32(&launch, (guint32)cols);
  if (!run_rows(&launch, rows, error))
    return FALSE;
  if (dgamma == NULL)
    return TRUE;
  if (!device_cl_check_buffer(dgamma, ROK_DTYPE_FP32, cols, op, "dgamma", error) ||
      !device_cl_check_buffer(dbeta, ROK_DTYPE_FP32, cols, op, "dbeta", error))
    return FALSE;
  launch = device_cl_launch(kernels, K_LAYERNORM_PARAMS_BWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, stats);
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dgamma);
  device_cl_arg_buffer(&launch, dbeta);
  device_cl_arg_u32(&launch, (guint32)rows);
  device_cl_arg_u32(&launch, (guint32)cols);
  return run_columns(&launch, cols, error);
}

gboolean rok_cl_rmsnorm_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *gamma, RokClBuffer *y,
                                RokClBuffer *rstd, guint64 rows, guint64 cols, float eps, GError **error) {
  const char *op = "rmsnorm_forward";
  guint64 n = 0;
  if (!row_shape(rows, cols, &n, op, error) || !device_cl_check_act(kernels, x, n, op, "x", error) ||
      !device_cl_check_act(kernels, gamma, cols, op, "gamma", error) || !device_cl_check_act(kernels, y, n, op, "y", error) ||
      !device_cl_check_buffer(rstd, ROK_DTYPE_FP32, rows, op, "rstd", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_RMSNORM_FWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, gamma);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_buffer(&launch, rstd);
  device_cl_arg_u32(&launch, (guint32)cols);
  device_cl_arg_f32(&launch, eps);
  return run_rows(&launch, rows, error);
}

gboolean rok_cl_rmsnorm_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *gamma, RokClBuffer *rstd,
                                 RokClBuffer *dy, RokClBuffer *dx, RokClBuffer *dgamma, guint64 rows, guint64 cols,
                                 GError **error) {
  const char *op = "rmsnorm_backward";
  guint64 n = 0;
  if (!row_shape(rows, cols, &n, op, error) || !device_cl_check_act(kernels, x, n, op, "x", error) ||
      !device_cl_check_act(kernels, gamma, cols, op, "gamma", error) ||
      !device_cl_check_buffer(rstd, ROK_DTYPE_FP32, rows, op, "rstd", error) ||
      !device_cl_check_act(kernels, dy, n, op, "dy", error) || !device_cl_check_act(kernels, dx, n, op, "dx", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_RMSNORM_BWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, gamma);
  device_cl_arg_buffer(&launch, rstd);
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dx);
  device_cl_arg_u32(&launch, (guint32)cols);
  if (!run_rows(&launch, rows, error))
    return FALSE;
  if (dgamma == NULL)
    return TRUE;
  if (!device_cl_check_buffer(dgamma, ROK_DTYPE_FP32, cols, op, "dgamma", error))
    return FALSE;
  launch = device_cl_launch(kernels, K_RMSNORM_PARAMS_BWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, rstd);
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dgamma);
  device_cl_arg_u32(&launch, (guint32)rows);
  device_cl_arg_u32(&launch, (guint32)cols);
  return run_columns(&launch, cols, error);
}

gboolean rok_cl_bias_backward(RokClKernels *kernels, RokClBuffer *dy, RokClBuffer *dbias, guint64 rows,
                              guint64 cols, GError **error) {
  const char *op = "bias_backward";
  guint64 n = 0;
  if (!row_shape(rows, cols, &n, op, error) || !device_cl_check_act(kernels, dy, n, op, "dy", error) ||
      !device_cl_check_buffer(dbias, ROK_DTYPE_FP32, cols, op, "dbias", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_COLUMN_SUM_BWD);
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dbias);
  device_cl_arg_u32(&launch, (guint32)rows);
  device_cl_arg_u32(&launch, (guint32)cols);
  return run_columns(&launch, cols, error);
}

#endif /* ROK_WITH_OPENCL */
