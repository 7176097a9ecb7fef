/* Mixture-of-experts launchers: routing, dispatch and combine (moe.cl). */
#ifdef ROK_WITH_OPENCL

#include "cl-kernels-private.h"
#include "rok/core.h"

static gboolean check_moe(const RokClMoe *moe, const char *op, GError **error) {
  guint64 choices = 0;
  if (moe->experts == 0 || moe->top_k == 0 || moe->top_k > moe->experts) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: top-%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " experts",
                op, moe->top_k, moe->experts);
    return FALSE;
  }
  return device_cl_check_u32(moe->experts, op, "experts", error) &&
         device_cl_mul(moe->tokens, moe->top_k, &choices, op, error);
}

static gboolean run_items(RokClLaunch *launch, guint64 items, GError **error) {
  size_t wg = launch->kernels->tuning.wg, global = (size_t)items;
  return device_cl_launch_run(launch, 1, &global, &wg, error);
}

static void arg_opt(RokClLaunch *launch, RokClBuffer *buffer, RokClBuffer *fallback) {
  /* A null __global pointer is legal, but some drivers dislike it as an
   * argument: pass another buffer, flagged unused. */
  device_cl_arg_buffer(launch, buffer != NULL ? buffer : fallback);
  device_cl_arg_u32(launch, buffer != NULL);
}

gboolean rok_cl_moe_route_forward(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *logits, RokClBuffer *probs,
                                  RokClBuffer *indices, RokClBuffer *weights, GError **error) {
  const char *op = "moe_route_forward";
  guint64 te = moe->tokens * moe->experts, tk = moe->tokens * moe->top_k;
  if (!check_moe(moe, op, error) || !device_cl_check_act(kernels, logits, te, op, "logits", error) ||
      !device_cl_check_buffer(probs, ROK_DTYPE_FP32, te, op, "probs", error) ||
      !device_cl_check_buffer(indices, ROK_DTYPE_I64, tk, op, "indices", error) ||
      !device_cl_check_buffer(weights, ROK_DTYPE_FP32, tk, op, "weights", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_ROUTE_FWD);
  device_cl_arg_buffer(&launch, logits);
  device_cl_arg_buffer(&launch, probs);
  device_cl_arg_buffer(&launch, indices);
  device_cl_arg_buffer(&launch, weights);
  device_cl_arg_u64(&launch, moe->tokens);
  device_cl_arg_u32(&launch, (guint32)moe->experts);
  device_cl_arg_u32(&launch, (guint32)moe->top_k);
  return run_items(&launch, moe->tokens, error);
}

gboolean rok_cl_moe_count(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *indices, RokClBuffer *counts,
                          GError **error) {
  const char *op = "moe_count";
  if (!check_moe(moe, op, error) ||
      !device_cl_check_buffer(indices, ROK_DTYPE_I64, moe->tokens * moe->top_k, op, "indices", error) ||
      !device_cl_check_buffer(counts, ROK_DTYPE_I64, moe->experts, op, "counts", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_COUNT);
  device_cl_arg_buffer(&launch, indices);
  device_cl_arg_buffer(&launch, counts);
  device_cl_arg_u64(&launch, moe->tokens * moe->top_k);
  device_cl_arg_u32(&launch, (guint32)moe->experts);
  return run_items(&launch, moe->experts, error);
}

gboolean rok_cl_moe_route_backward(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *probs,
                                   RokClBuffer *indices, RokClBuffer *dweights, RokClBuffer *counts, float aux_scale,
                                   RokClBuffer *dlogits, GError **error) {
  const char *op = "moe_route_backward";
  guint64 te = moe->tokens * moe->experts, tk = moe->tokens * moe->top_k;
  if (!check_moe(moe, op, error) || !device_cl_check_buffer(probs, ROK_DTYPE_FP32, te, op, "probs", error) ||
      !device_cl_check_buffer(indices, ROK_DTYPE_I64, tk, op, "indices", error) ||
      !device_cl_check_buffer(dweights, ROK_DTYPE_FP32, tk, op, "dweights", error) ||
      (counts != NULL && !device_cl_check_buffer(counts, ROK_DTYPE_I64, moe->experts, op, "counts", error)) ||
      !device_cl_check_act(kernels, dlogits, te, op, "dlogits", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_ROUTE_BWD);
  device_cl_arg_buffer(&launch, probs);
  device_cl_arg_buffer(&launch, indices);
  device_cl_arg_buffer(&launch, dweights);
  arg_opt(&launch, counts, indices);
  device_cl_arg_f32(&launch, aux_scale);
  device_cl_arg_buffer(&launch, dlogits);
  device_cl_arg_u64(&launch, moe->tokens);
  device_cl_arg_u32(&launch, (guint32)moe->experts);
  device_cl_arg_u32(&launch, (guint32)moe->top_k);
  return run_items(&launch, moe->tokens, error);
}

gboolean rok_cl_moe_place(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *indices, RokClBuffer *weights,
                          RokClBuffer *counts, guint64 capacity, RokClBuffer *row_token, RokClBuffer *row_weight,
                          guint64 rows, GError **error) {
  const char *op = "moe_place";
  guint64 tk = moe->tokens * moe->top_k;
  if (!check_moe(moe, op, error))
    return FALSE;
  if (capacity > 0 ? rows != capacity * moe->experts : rows != tk) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "%s: %" G_GUINT64_FORMAT " rows for %" G_GUINT64_FORMAT " choices over %" G_GUINT64_FORMAT
                " experts of capacity %" G_GUINT64_FORMAT " (0: dropless)",
                op, rows, tk, moe->experts, capacity);
    return FALSE;
  }
  if (!device_cl_check_buffer(indices, ROK_DTYPE_I64, tk, op, "indices", error) ||
      !device_cl_check_buffer(weights, ROK_DTYPE_FP32, tk, op, "weights", error) ||
      !device_cl_check_buffer(counts, ROK_DTYPE_I64, moe->experts, op, "counts", error) ||
      !device_cl_check_buffer(row_token, ROK_DTYPE_I64, rows, op, "row_token", error) ||
      !device_cl_check_buffer(row_weight, ROK_DTYPE_FP32, rows, op, "row_weight", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_PLACE);
  device_cl_arg_buffer(&launch, indices);
  device_cl_arg_buffer(&launch, weights);
  device_cl_arg_buffer(&launch, counts);
  device_cl_arg_buffer(&launch, row_token);
  device_cl_arg_buffer(&launch, row_weight);
  device_cl_arg_u64(&launch, tk);
  device_cl_arg_u32(&launch, (guint32)moe->experts);
  device_cl_arg_u64(&launch, capacity);
  return run_items(&launch, moe->experts, error);
}

gboolean rok_cl_moe_invert(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *row_token, guint64 rows,
                           RokClBuffer *inv, GError **error) {
  const char *op = "moe_invert";
  if (!check_moe(moe, op, error) || !device_cl_check_buffer(row_token, ROK_DTYPE_I64, rows, op, "row_token", error) ||
      !device_cl_check_buffer(inv, ROK_DTYPE_I64, moe->tokens * moe->top_k, op, "inv", error))
    return FALSE;
  static const cl_long none = -1;
  cl_int status = clEnqueueFillBuffer(rok_cl_device_queue(kernels->device, ROK_CL_QUEUE_COMPUTE), inv->mem, &none,
                                      sizeof none, 0, inv->bytes, 0, NULL, NULL);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "%s: clearing the inverse map", op);
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_INVERT);
  device_cl_arg_buffer(&launch, row_token);
  device_cl_arg_buffer(&launch, inv);
  device_cl_arg_u64(&launch, rows);
  return run_items(&launch, rows, error);
}

gboolean rok_cl_moe_gather(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *row_token, RokClBuffer *src,
                           RokClBuffer *scale, RokClBuffer *dst, guint64 rows, guint64 hidden, GError **error) {
  const char *op = "moe_gather";
  guint64 n = 0;
  if (!check_moe(moe, op, error) || !device_cl_check_u32(hidden, op, "hidden", error) ||
      !device_cl_mul(rows, hidden, &n, op, error) ||
      !device_cl_check_buffer(row_token, ROK_DTYPE_I64, rows, op, "row_token", error) ||
      !device_cl_check_act(kernels, src, moe->tokens * hidden, op, "src", error) ||
      (scale != NULL && !device_cl_check_buffer(scale, ROK_DTYPE_FP32, rows, op, "scale", error)) ||
      !device_cl_check_act(kernels, dst, n, op, "dst", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_GATHER);
  device_cl_arg_buffer(&launch, row_token);
  device_cl_arg_buffer(&launch, src);
  arg_opt(&launch, scale, src);
  device_cl_arg_buffer(&launch, dst);
  device_cl_arg_u64(&launch, rows);
  device_cl_arg_u32(&launch, (guint32)hidden);
  device_cl_arg_u32(&launch, (guint32)moe->top_k);
  return run_items(&launch, n, error);
}

gboolean rok_cl_moe_combine(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *inv, RokClBuffer *y,
                            RokClBuffer *scale, RokClBuffer *out, guint64 rows, guint64 hidden, GError **error) {
  const char *op = "moe_combine";
  guint64 n = 0;
  if (!check_moe(moe, op, error) || !device_cl_check_u32(hidden, op, "hidden", error) ||
      !device_cl_mul(moe->tokens, hidden, &n, op, error) ||
      !device_cl_check_buffer(inv, ROK_DTYPE_I64, moe->tokens * moe->top_k, op, "inv", error) ||
      !device_cl_check_act(kernels, y, rows * hidden, op, "y", error) ||
      (scale != NULL && !device_cl_check_buffer(scale, ROK_DTYPE_FP32, rows, op, "scale", error)) ||
      !device_cl_check_act(kernels, out, n, op, "out", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_COMBINE);
  device_cl_arg_buffer(&launch, inv);
  device_cl_arg_buffer(&launch, y);
  arg_opt(&launch, scale, y);
  device_cl_arg_buffer(&launch, out);
  device_cl_arg_u64(&launch, moe->tokens);
  device_cl_arg_u32(&launch, (guint32)hidden);
  device_cl_arg_u32(&launch, (guint32)moe->top_k);
  return run_items(&launch, n, error);
}

gboolean rok_cl_moe_row_dot(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *row_token, RokClBuffer *dout,
                            RokClBuffer *y, RokClBuffer *drow, gboolean accumulate, guint64 rows, guint64 hidden,
                            GError **error) {
  const char *op = "moe_row_dot";
  if (!check_moe(moe, op, error) || !device_cl_check_u32(hidden, op, "hidden", error) ||
      !device_cl_check_buffer(row_token, ROK_DTYPE_I64, rows, op, "row_token", error) ||
      !device_cl_check_act(kernels, dout, moe->tokens * hidden, op, "dout", error) ||
      !device_cl_check_act(kernels, y, rows * hidden, op, "y", error) ||
      !device_cl_check_buffer(drow, ROK_DTYPE_FP32, rows, op, "drow", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_ROW_DOT);
  device_cl_arg_buffer(&launch, row_token);
  device_cl_arg_buffer(&launch, dout);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_buffer(&launch, drow);
  device_cl_arg_u32(&launch, accumulate);
  device_cl_arg_u64(&launch, rows);
  device_cl_arg_u32(&launch, (guint32)hidden);
  device_cl_arg_u32(&launch, (guint32)moe->top_k);
  return run_items(&launch, rows, error);
}

gboolean rok_cl_moe_unpermute(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *inv, RokClBuffer *drow,
                              guint64 rows, RokClBuffer *dchoice, gboolean accumulate, GError **error) {
  const char *op = "moe_unpermute";
  guint64 tk = moe->tokens * moe->top_k;
  if (!check_moe(moe, op, error) || !device_cl_check_buffer(inv, ROK_DTYPE_I64, tk, op, "inv", error) ||
      !device_cl_check_buffer(drow, ROK_DTYPE_FP32, rows, op, "drow", error) ||
      !device_cl_check_buffer(dchoice, ROK_DTYPE_FP32, tk, op, "dchoice", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_UNPERMUTE);
  device_cl_arg_buffer(&launch, inv);
  device_cl_arg_buffer(&launch, drow);
  device_cl_arg_buffer(&launch, dchoice);
  device_cl_arg_u32(&launch, accumulate);
  device_cl_arg_u64(&launch, tk);
  return run_items(&launch, tk, error);
}

static gboolean check_gate(RokClKernels *kernels, const char *op, RokClBuffer *y, RokClBuffer *g, guint64 tokens,
                           guint64 hidden, guint64 *n, GError **error) {
  return device_cl_check_u32(hidden, op, "hidden", error) && device_cl_mul(tokens, hidden, n, op, error) &&
         device_cl_check_act(kernels, y, *n, op, "y", error) && device_cl_check_act(kernels, g, tokens, op, "g", error);
}

gboolean rok_cl_moe_gate_forward(RokClKernels *kernels, RokClBuffer *y, RokClBuffer *g, RokClBuffer *out,
                                 guint64 tokens, guint64 hidden, GError **error) {
  const char *op = "moe_gate_forward";
  guint64 n = 0;
  if (!check_gate(kernels, op, y, g, tokens, hidden, &n, error) ||
      !device_cl_check_act(kernels, out, n, op, "out", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_GATE_FWD);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_buffer(&launch, g);
  device_cl_arg_buffer(&launch, out);
  device_cl_arg_u64(&launch, tokens);
  device_cl_arg_u32(&launch, (guint32)hidden);
  return run_items(&launch, n, error);
}

gboolean rok_cl_moe_gate_backward(RokClKernels *kernels, RokClBuffer *y, RokClBuffer *g, RokClBuffer *dout,
                                  RokClBuffer *dy, RokClBuffer *dg, guint64 tokens, guint64 hidden, GError **error) {
  const char *op = "moe_gate_backward";
  guint64 n = 0;
  if (!check_gate(kernels, op, y, g, tokens, hidden, &n, error) ||
      !device_cl_check_act(kernels, dout, n, op, "dout", error) ||
      !device_cl_check_act(kernels, dy, n, op, "dy", error) ||
      !device_cl_check_act(kernels, dg, tokens, op, "dg", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_MOE_GATE_BWD);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_buffer(&launch, g);
  device_cl_arg_buffer(&launch, dout);
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dg);
  device_cl_arg_u64(&launch, tokens);
  device_cl_arg_u32(&launch, (guint32)hidden);
  return run_items(&launch, n, error);
}

#endif /* ROK_WITH_OPENCL */
