/* Element-wise launchers: activations, residual add, dropout. */
#ifdef ROK_WITH_OPENCL

#include <math.h>

#include "cl-kernels-private.h"
#include "rok/device.h"
#include "rok/core.h"

static gboolean run_items(RokClLaunch *launch, guint64 items, GError **error) {
  size_t wg = launch->kernels->tuning.wg;
  size_t global = (size_t)items;
  return device_cl_launch_run(launch, 1, &global, &wg, error);
}

/* y = f(x) over n elements. */
static gboolean unary(RokClKernels *kernels, RokClKernelId id, const char *op, RokClBuffer *x, RokClBuffer *y,
                      guint64 n, GError **error) {
  if (!device_cl_check_act(kernels, x, n, op, "x", error) || !device_cl_check_act(kernels, y, n, op, "y", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, id);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_u64(&launch, n);
  return run_items(&launch, n, error);
}

/* out = f(a, b) over n elements. */
static gboolean binary(RokClKernels *kernels, RokClKernelId id, const char *op, RokClBuffer *a, RokClBuffer *b,
                       RokClBuffer *out, guint64 n, GError **error) {
  if (!device_cl_check_act(kernels, a, n, op, "first input", error) ||
      !device_cl_check_act(kernels, b, n, op, "second input", error) ||
      !device_cl_check_act(kernels, out, n, op, "output", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, id);
  device_cl_arg_buffer(&launch, a);
  device_cl_arg_buffer(&launch, b);
  device_cl_arg_buffer(&launch, out);
  device_cl_arg_u64(&launch, n);
  return run_items(&launch, n, error);
}

gboolean rok_cl_gelu_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *y, guint64 n, GError **error) {
  return unary(kernels, K_GELU_FWD, "gelu_forward", x, y, n, error);
}

gboolean rok_cl_gelu_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *dy, RokClBuffer *dx, guint64 n,
                              GError **error) {
  return binary(kernels, K_GELU_BWD, "gelu_backward", x, dy, dx, n, error);
}

gboolean rok_cl_relu_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *y, guint64 n, GError **error) {
  return unary(kernels, K_RELU_FWD, "relu_forward", x, y, n, error);
}

gboolean rok_cl_relu_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *dy, RokClBuffer *dx, guint64 n,
                              GError **error) {
  return binary(kernels, K_RELU_BWD, "relu_backward", x, dy, dx, n, error);
}

gboolean rok_cl_add(RokClKernels *kernels, RokClBuffer *a, RokClBuffer *b, RokClBuffer *out, guint64 n,
                    GError **error) {
  return binary(kernels, K_ADD_FWD, "add", a, b, out, n, error);
}

gboolean rok_cl_swiglu_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *y, guint64 rows, guint64 cols,
                               GError **error) {
  const char *op = "swiglu_forward";
  guint64 n = 0;
  if (!device_cl_check_u32(cols, op, "cols", error) || !device_cl_mul(rows, cols, &n, op, error) ||
      !device_cl_check_act(kernels, x, 2 * n, op, "x", error) || !device_cl_check_act(kernels, y, n, op, "y", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_SWIGLU_FWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_u64(&launch, rows);
  device_cl_arg_u32(&launch, (guint32)cols);
  return run_items(&launch, n, error);
}

gboolean rok_cl_swiglu_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *dy, RokClBuffer *dx,
                                guint64 rows, guint64 cols, GError **error) {
  const char *op = "swiglu_backward";
  guint64 n = 0;
  if (!device_cl_check_u32(cols, op, "cols", error) || !device_cl_mul(rows, cols, &n, op, error) ||
      !device_cl_check_act(kernels, x, 2 * n, op, "x", error) || !device_cl_check_act(kernels, dy, n, op, "dy", error) ||
      !device_cl_check_act(kernels, dx, 2 * n, op, "dx", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_SWIGLU_BWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dx);
  device_cl_arg_u64(&launch, rows);
  device_cl_arg_u32(&launch, (guint32)cols);
  return run_items(&launch, n, error);
}

/* ---- Dropout ---------------------------------------------------------- */

static gboolean check_dropout(const RokClDropout *dropout, const char *op, GError **error) {
  if (!(dropout->p >= 0.0 && dropout->p < 1.0)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: dropout probability %g is outside [0, 1)", op, dropout->p);
    return FALSE;
  }
  return TRUE;
}

/* A mask buffer of n elements: u8, u16 or u32 (the trace's mask width). */
static gboolean check_mask(const RokClBuffer *mask, guint64 n, const char *op, GError **error) {
  if (mask != NULL && mask->dtype != ROK_DTYPE_U8 && mask->dtype != ROK_DTYPE_U16 && mask->dtype != ROK_DTYPE_U32) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: mask '%s' holds %s, the kernel needs u8, u16 or u32", op,
                mask->label, rok_dtype_name(mask->dtype));
    return FALSE;
  }
  return device_cl_check_buffer(mask, mask != NULL ? mask->dtype : ROK_DTYPE_U8, n, op, "mask", error);
}

static float keep_scale(const RokClDropout *dropout) {
  return (float)(1.0 / (1.0 - dropout->p));
}

gboolean rok_cl_dropout_forward(RokClKernels *kernels, const RokClDropout *dropout, RokClBuffer *x,
                                RokClBuffer *mask, RokClBuffer *y, guint64 n, GError **error) {
  const char *op = "dropout_forward";
  if (!check_dropout(dropout, op, error) || !device_cl_check_act(kernels, x, n, op, "x", error) ||
      !check_mask(mask, n, op, error) ||
      !device_cl_check_act(kernels, y, n, op, "y", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_DROPOUT_FWD);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_buffer(&launch, mask);
  device_cl_arg_u32(&launch, rok_dtype_bytes(mask->dtype));
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_u64(&launch, n);
  device_cl_arg_seed(&launch, dropout->seed);
  device_cl_arg_u64(&launch, dropout->stream);
  device_cl_arg_u32(&launch, rok_cl_dropout_threshold(dropout->p));
  device_cl_arg_f32(&launch, keep_scale(dropout));
  return run_items(&launch, (n + 3) / 4, error);
}

gboolean rok_cl_dropout_mask(RokClKernels *kernels, const RokClDropout *dropout, RokClBuffer *mask, guint64 n,
                             GError **error) {
  const char *op = "dropout_mask";
  if (!check_dropout(dropout, op, error) || !check_mask(mask, n, op, error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_DROPOUT_MASK);
  device_cl_arg_buffer(&launch, mask);
  device_cl_arg_u32(&launch, rok_dtype_bytes(mask->dtype));
  device_cl_arg_u64(&launch, n);
  device_cl_arg_seed(&launch, dropout->seed);
  device_cl_arg_u64(&launch, dropout->stream);
  device_cl_arg_u32(&launch, rok_cl_dropout_threshold(dropout->p));
  return run_items(&launch, (n + 3) / 4, error);
}

gboolean rok_cl_dropout_backward(RokClKernels *kernels, const RokClDropout *dropout, RokClBuffer *mask,
                                 RokClBuffer *dy, RokClBuffer *dx, guint64 n, GError **error) {
  const char *op = "dropout_backward";
  if (!check_dropout(dropout, op, error) || !check_mask(mask, n, op, error) ||
      !device_cl_check_act(kernels, dy, n, op, "dy", error) || !device_cl_check_act(kernels, dx, n, op, "dx", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_DROPOUT_BWD);
  device_cl_arg_buffer(&launch, mask);
  device_cl_arg_u32(&launch, rok_dtype_bytes(mask->dtype));
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dx);
  device_cl_arg_u64(&launch, n);
  device_cl_arg_f32(&launch, keep_scale(dropout));
  return run_items(&launch, n, error);
}

#endif /* ROK_WITH_OPENCL */
