/* Sequence parallelism on one rank: a tensor of the residual stream holds
 * 1/t of the rows the tensor-parallel region computes on. The all-gather
 * that would bring the other ranks' rows is stood in for by repeating the
 * rank's own, and the reduce-scatter by summing the t row blocks; each is
 * the other's adjoint, so backward stays exact for what forward computed. */
#ifdef ROK_WITH_OPENCL

#include "ops-private.h"
#include "rok/core.h"

static gboolean check_rows(guint64 small, guint64 big, const char *what, GError **error) {
  if (small == 0 || big % small != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "%s: %" G_GUINT64_FORMAT " rows are not a whole number of blocks of %" G_GUINT64_FORMAT, what, big,
                small);
    return FALSE;
  }
  return TRUE;
}

gboolean ops_rows_tile(RokClBuffer *src, guint64 src_rows, RokClBuffer *dst, guint64 dst_rows, guint64 cols,
                       GError **error) {
  if (!check_rows(src_rows, dst_rows, "gathering rows", error))
    return FALSE;
  guint64 block = src_rows * cols * rok_dtype_bytes(src->dtype);
  for (guint64 row = 0; row < dst_rows; row += src_rows)
    if (!rok_cl_buffer_copy(src, 0, dst, row / src_rows * block, block, error))
      return FALSE;
  return TRUE;
}

gboolean ops_rows_sum(OpsCtx *ctx, RokClBuffer *src, guint64 src_rows, RokClBuffer *dst, guint64 dst_rows, guint64 cols,
                      GError **error) {
  if (!check_rows(dst_rows, src_rows, "reducing rows", error))
    return FALSE;
  guint64 n = dst_rows * cols, block = n * rok_dtype_bytes(src->dtype), blocks = src_rows / dst_rows;
  if (!rok_cl_buffer_copy(src, 0, dst, 0, block, error))
    return FALSE;
  if (blocks == 1)
    return TRUE;
  RokClBuffer *part = ops_scratch(ctx, src->dtype, n, "row block", FALSE, error);
  if (part == NULL)
    return FALSE;
  /* Block by block in order: the same sum every time. */
  for (guint64 b = 1; b < blocks; b++)
    if (!rok_cl_buffer_copy(src, b * block, part, 0, block, error) ||
        !rok_cl_add(ctx->model->kernels, dst, part, dst, n, error))
      return FALSE;
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
