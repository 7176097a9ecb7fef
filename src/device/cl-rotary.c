/* Rotary position embedding launcher. */
#ifdef ROK_WITH_OPENCL

#include <math.h>

#include "cl-kernels-private.h"
#include "rok/core.h"

static gboolean check_rotary(RokClKernels *kernels, const RokClRotary *r, RokClBuffer *x, RokClBuffer *y,
                             GError **error) {
  const char *op = "rotary";
  if (r->rot_dim == 0 || r->rot_dim % 2 != 0 || r->rot_dim > r->head_dim || r->seq_len == 0 ||
      !(r->base > 1.0)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "%s: needs an even rot_dim in 1..head_dim (%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                "), seq_len > 0 and base > 1",
                op, r->rot_dim, r->head_dim);
    return FALSE;
  }
  guint64 row = 0, rows = 0;
  if (!device_cl_check_u32(r->heads, op, "heads", error) || !device_cl_check_u32(r->head_dim, op, "head_dim", error) ||
      !device_cl_check_u32(r->seq_len, op, "seq_len", error) || !device_cl_mul(r->heads, r->head_dim, &row, op, error) ||
      !device_cl_mul(r->tokens, r->heads, &rows, op, error))
    return FALSE;
  if (r->tokens == 0)
    return TRUE;
  if (r->x_ld < row || r->y_ld < row) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: rows of %" G_GUINT64_FORMAT " values need ld >= that", op,
                row);
    return FALSE;
  }
  return device_cl_check_act(kernels, x, r->x_offset + (r->tokens - 1) * r->x_ld + row, op, "x", error) &&
         device_cl_check_act(kernels, y, r->y_offset + (r->tokens - 1) * r->y_ld + row, op, "y", error);
}

gboolean rok_cl_rotary(RokClKernels *kernels, const RokClRotary *r, RokClBuffer *x, RokClBuffer *y,
                       gboolean backward, GError **error) {
  if (!check_rotary(kernels, r, x, y, error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_ROTARY);
  device_cl_arg_buffer(&launch, x);
  device_cl_arg_u64(&launch, r->x_offset);
  device_cl_arg_u64(&launch, r->x_ld);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_u64(&launch, r->y_offset);
  device_cl_arg_u64(&launch, r->y_ld);
  device_cl_arg_u32(&launch, (guint32)r->heads);
  device_cl_arg_u32(&launch, (guint32)r->head_dim);
  device_cl_arg_u32(&launch, (guint32)r->rot_dim);
  device_cl_arg_u32(&launch, (guint32)r->seq_len);
  device_cl_arg_f32(&launch, (float)log2(r->base));
  device_cl_arg_f32(&launch, backward ? -1.0f : 1.0f);
  device_cl_arg_u64(&launch, r->tokens * r->heads);
  /* One item per rotated pair or passed-through value of a head. */
  guint64 per_head = r->rot_dim / 2 + (r->head_dim - r->rot_dim);
  size_t wg = kernels->tuning.wg, global = (size_t)(per_head * r->tokens * r->heads);
  return device_cl_launch_run(&launch, 1, &global, &wg, error);
}

#endif /* ROK_WITH_OPENCL */
