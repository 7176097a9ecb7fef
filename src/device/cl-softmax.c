/* Softmax (attention scores) and cross-entropy (vocabulary) launchers. */
#ifdef ROK_WITH_OPENCL

#include "cl-kernels-private.h"
#include "rok/core.h"

static gboolean run_rows(RokClLaunch *launch, guint64 rows, GError **error) {
  size_t wg = launch->kernels->tuning.wg;
  size_t global = (size_t)rows * wg;
  return device_cl_launch_run(launch, 1, &global, &wg, error);
}

static gboolean softmax_shape(guint64 rows, guint64 cols, guint64 *n, const char *op, GError **error) {
  return device_cl_check_u32(cols, op, "cols", error) && device_cl_mul(rows, cols, n, op, error);
}

gboolean rok_cl_softmax_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *y, guint64 rows, guint64 cols,
                                gboolean causal, guint64 queries, float scale, GError **error) {
  const char *op = "softmax_forward";
  guint64 n = 0;
  if (!softmax_shape(rows, cols, &n, op, error) || !device_cl_check_act(kernels, x, n, op, "x", error) ||
      !device_cl_check_act(kernels, y, n, op, "y", error))
    return FALSE;
  if (causal && (queries == 0 || queries > G_MAXUINT32 || rows % queries != 0)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "%s: causal rows (%" G_GUINT64_FORMAT ") must come in whole blocks of queries (%" G_GUINT64_FORMAT
                ")",
                op, rows, queries);
    return FALSE;
  }
  RokClLaunch launch = device_cl_launch(kernels, K_SOFTMAX_FWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_u32(&launch, (guint32)cols);
  device_cl_arg_u32(&launch, causal ? (guint32)queries : 1);
  device_cl_arg_u32(&launch, causal ? 1 : 0);
  device_cl_arg_f32(&launch, scale);
  return run_rows(&launch, rows, error);
}

gboolean rok_cl_softmax_backward(RokClKernels *kernels, RokClBuffer *y, RokClBuffer *dy, RokClBuffer *dx,
                                 guint64 rows, guint64 cols, float scale, GError **error) {
  const char *op = "softmax_backward";
  guint64 n = 0;
  if (!softmax_shape(rows, cols, &n, op, error) || !device_cl_check_act(kernels, y, n, op, "y", error) ||
      !device_cl_check_act(kernels, dy, n, op, "dy", error) || !device_cl_check_act(kernels, dx, n, op, "dx", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_SOFTMAX_BWD);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dx);
  device_cl_arg_u32(&launch, (guint32)cols);
  device_cl_arg_f32(&launch, scale);
  return run_rows(&launch, rows, error);
}

gboolean rok_cl_cross_entropy_forward(RokClKernels *kernels, RokClBuffer *logits, RokClBuffer *labels,
                                      RokClBuffer *probs, RokClBuffer *loss, guint64 tokens, guint64 vocab,
                                      GError **error) {
  const char *op = "cross_entropy_forward";
  guint64 n = 0;
  if (!softmax_shape(tokens, vocab, &n, op, error) || !device_cl_check_act(kernels, logits, n, op, "logits", error) ||
      !device_cl_check_buffer(labels, ROK_DTYPE_I64, tokens, op, "labels", error) ||
      !device_cl_check_buffer(probs, ROK_DTYPE_FP32, n, op, "probs", error) ||
      !device_cl_check_buffer(loss, ROK_DTYPE_FP32, tokens, op, "loss", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_CROSS_ENTROPY_FWD);
  device_cl_arg_buffer(&launch, logits);
  device_cl_arg_buffer(&launch, labels);
  device_cl_arg_buffer(&launch, probs);
  device_cl_arg_buffer(&launch, loss);
  device_cl_arg_u32(&launch, (guint32)vocab);
  return run_rows(&launch, tokens, error);
}

gboolean rok_cl_cross_entropy_backward(RokClKernels *kernels, RokClBuffer *probs, RokClBuffer *labels,
                                       RokClBuffer *dlogits, guint64 tokens, guint64 vocab, float scale,
                                       GError **error) {
  const char *op = "cross_entropy_backward";
  guint64 n = 0;
  if (!softmax_shape(tokens, vocab, &n, op, error) ||
      !device_cl_check_buffer(probs, ROK_DTYPE_FP32, n, op, "probs", error) ||
      !device_cl_check_buffer(labels, ROK_DTYPE_I64, tokens, op, "labels", error) ||
      !device_cl_check_act(kernels, dlogits, n, op, "dlogits", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_CROSS_ENTROPY_BWD);
  device_cl_arg_buffer(&launch, probs);
  device_cl_arg_buffer(&launch, labels);
  device_cl_arg_buffer(&launch, dlogits);
  device_cl_arg_u64(&launch, tokens);
  device_cl_arg_u32(&launch, (guint32)vocab);
  device_cl_arg_f32(&launch, scale);
  size_t wg = kernels->tuning.wg;
  size_t global = (size_t)n;
  return device_cl_launch_run(&launch, 1, &global, &wg, error);
}

#endif /* ROK_WITH_OPENCL */
