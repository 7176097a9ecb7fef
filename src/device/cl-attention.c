/* Fused attention launchers (attention.cl). */
#ifdef ROK_WITH_OPENCL

#include "cl-kernels-private.h"
#include "rok/device.h"
#include "rok/core.h"

/* Check that a view of `heads` heads × `rows` rows × head_dim lies inside
 * its activation buffer. */
static gboolean check_view(RokClKernels *kernels, const RokClHeads *view, const RokClAttention *a, guint64 heads,
                           guint64 rows, const char *op, const char *role, GError **error) {
  if (view == NULL || view->buffer == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: no buffer given for %s", op, role);
    return FALSE;
  }
  guint64 last = view->offset + a->head_dim, term;
  gboolean ok = g_uint64_checked_mul(&term, a->batch - 1, view->batch_stride) &&
                g_uint64_checked_add(&last, last, term) &&
                g_uint64_checked_mul(&term, heads - 1, view->head_stride) &&
                g_uint64_checked_add(&last, last, term) && g_uint64_checked_mul(&term, rows - 1, view->row_stride) &&
                g_uint64_checked_add(&last, last, term);
  if (!ok) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: the extent of %s does not fit 64 bits", op, role);
    return FALSE;
  }
  return device_cl_check_act(kernels, view->buffer, last, op, role, error);
}

static gboolean check_attention(RokClKernels *kernels, const RokClAttention *a, RokClBuffer *lse, const char *op,
                                GError **error) {
  if (a->kv_heads == 0 || a->heads % a->kv_heads != 0 || a->head_dim == 0 ||
      a->head_dim > ROK_CL_ATTENTION_MAX_HEAD_DIM) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "%s: needs heads (%" G_GUINT64_FORMAT ") a multiple of kv_heads (%" G_GUINT64_FORMAT
                ") and head_dim in 1..%d (%" G_GUINT64_FORMAT ")",
                op, a->heads, a->kv_heads, ROK_CL_ATTENTION_MAX_HEAD_DIM, a->head_dim);
    return FALSE;
  }
  if (!(a->dropout.p >= 0.0 && a->dropout.p < 1.0)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: dropout probability %g is outside [0, 1)", op, a->dropout.p);
    return FALSE;
  }
  guint64 bh = 0, rows = 0;
  return device_cl_mul(a->batch, a->heads, &bh, op, error) && device_cl_check_u32(bh, op, "batch x heads", error) &&
         device_cl_check_u32(a->queries, op, "queries", error) && device_cl_check_u32(a->keys, op, "keys", error) &&
         device_cl_mul(bh, a->queries, &rows, op, error) &&
         device_cl_check_buffer(lse, ROK_DTYPE_FP32, rows, op, "lse", error) &&
         check_view(kernels, &a->q, a, a->heads, a->queries, op, "q", error) &&
         check_view(kernels, &a->k, a, a->kv_heads, a->keys, op, "k", error) &&
         check_view(kernels, &a->v, a, a->kv_heads, a->keys, op, "v", error) &&
         check_view(kernels, &a->o, a, a->heads, a->queries, op, "o", error);
}

/* Rows staged per tile: two tiles of head_dim floats each must fit the
 * local memory beside the kernel's own small arrays. */
static gboolean tile_rows(const RokClKernels *kernels, guint64 head_dim, const char *op, guint *rows,
                          GError **error) {
  const RokClTuning *t = &kernels->tuning;
  guint64 reserved = 2 * t->attn_max_bk * sizeof(float) + 1024;
  guint64 available = t->local_memory > reserved ? t->local_memory - reserved : 0;
  guint64 fit = available / (2 * head_dim * sizeof(float));
  if (fit == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: head_dim %" G_GUINT64_FORMAT
                " needs more local memory than the device has (%" G_GUINT64_FORMAT " bytes)",
                op, head_dim, t->local_memory);
    return FALSE;
  }
  *rows = (guint)MIN(fit, t->attn_max_bk);
  return TRUE;
}

static void arg_view(RokClLaunch *launch, const RokClHeads *view) {
  device_cl_arg_buffer(launch, view->buffer);
  device_cl_arg_u64(launch, view->offset);
  device_cl_arg_u64(launch, view->row_stride);
  device_cl_arg_u64(launch, view->batch_stride);
  device_cl_arg_u64(launch, view->head_stride);
}

/* The ATTN_PARAMS block of attention.cl. */
static void arg_params(RokClLaunch *launch, const RokClAttention *a) {
  gboolean dropout = a->dropout.p > 0.0;
  device_cl_arg_u32(launch, (guint32)a->heads);
  device_cl_arg_u32(launch, (guint32)(a->heads / a->kv_heads));
  device_cl_arg_u32(launch, (guint32)a->queries);
  device_cl_arg_u32(launch, (guint32)a->keys);
  device_cl_arg_u32(launch, (guint32)a->head_dim);
  device_cl_arg_u32(launch, a->causal ? 1 : 0);
  device_cl_arg_f32(launch, a->scale);
  device_cl_arg_u32(launch, dropout ? 1 : 0);
  device_cl_arg_u32(launch, rok_cl_dropout_threshold(a->dropout.p));
  device_cl_arg_f32(launch, dropout ? (float)(1.0 / (1.0 - a->dropout.p)) : 1.0f);
  device_cl_arg_seed(launch, a->dropout.seed);
  device_cl_arg_u64(launch, a->dropout.stream);
}

/* FLOPs of a pass over every query and key of every head: `per` per
 * query, key and head dimension (causal masking left out): what
 * device_cl_launch_chunked() splits over the heads. */
static double work(const RokClAttention *a, double per) {
  return per * (double)a->batch * (double)a->heads * (double)a->queries * (double)a->keys * (double)a->head_dim;
}

gboolean rok_cl_attention_forward(RokClKernels *kernels, const RokClAttention *a, RokClBuffer *lse,
                                  GError **error) {
  const char *op = "attention_forward";
  guint bk = 0;
  if (a->batch == 0 || a->heads == 0 || a->queries == 0)
    return TRUE;
  if (a->keys == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: no keys to attend to", op);
    return FALSE;
  }
  if (!check_attention(kernels, a, lse, op, error) || !tile_rows(kernels, a->head_dim, op, &bk, error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_ATTN_FWD);
  arg_view(&launch, &a->q);
  arg_view(&launch, &a->k);
  arg_view(&launch, &a->v);
  arg_view(&launch, &a->o);
  device_cl_arg_buffer(&launch, lse);
  arg_params(&launch, a);
  device_cl_arg_local(&launch, (gsize)bk * a->head_dim * sizeof(float));
  device_cl_arg_local(&launch, (gsize)bk * a->head_dim * sizeof(float));
  device_cl_arg_u32(&launch, bk);
  size_t local[2] = {kernels->tuning.attn_bq, 1};
  size_t global[2] = {(size_t)a->queries, (size_t)(a->batch * a->heads)};
  return device_cl_launch_chunked(&launch, 2, global, local, work(a, 4), error);
}

static gboolean check_gradients(RokClKernels *kernels, const RokClAttention *a, const RokClHeads *dout,
                                const RokClHeads *dq, const RokClHeads *dk, const RokClHeads *dv, const char *op,
                                GError **error) {
  return check_view(kernels, dout, a, a->heads, a->queries, op, "dout", error) &&
         check_view(kernels, dq, a, a->heads, a->queries, op, "dq", error) &&
         check_view(kernels, dk, a, a->kv_heads, a->keys, op, "dk", error) &&
         check_view(kernels, dv, a, a->kv_heads, a->keys, op, "dv", error);
}

/* delta = rowsum(dO·O) into a scratch buffer the caller frees. */
static RokClBuffer *attention_delta(RokClKernels *kernels, const RokClAttention *a, const RokClHeads *dout,
                                    GError **error) {
  g_autoptr(RokClBuffer) delta = rok_cl_buffer_new(kernels->device, ROK_DTYPE_FP32, a->batch * a->heads * a->queries,
                                                   "attention delta", FALSE, error);
  if (delta == NULL)
    return NULL;
  RokClLaunch launch = device_cl_launch(kernels, K_ATTN_BWD_DELTA);
  arg_view(&launch, &a->o);
  arg_view(&launch, dout);
  device_cl_arg_buffer(&launch, delta);
  device_cl_arg_u32(&launch, (guint32)a->heads);
  device_cl_arg_u32(&launch, (guint32)a->queries);
  device_cl_arg_u32(&launch, (guint32)a->head_dim);
  size_t global[2] = {(size_t)a->queries, (size_t)(a->batch * a->heads)};
  if (!device_cl_launch_run(&launch, 2, global, NULL, error))
    return NULL;
  return g_steal_pointer(&delta);
}

gboolean rok_cl_attention_backward(RokClKernels *kernels, const RokClAttention *a, RokClBuffer *lse,
                                   const RokClHeads *dout, const RokClHeads *dq, const RokClHeads *dk,
                                   const RokClHeads *dv, GError **error) {
  const char *op = "attention_backward";
  guint bk = 0;
  if (a->batch == 0 || a->heads == 0 || a->queries == 0 || a->keys == 0)
    return TRUE;
  if (!check_attention(kernels, a, lse, op, error) || !check_gradients(kernels, a, dout, dq, dk, dv, op, error) ||
      !tile_rows(kernels, a->head_dim, op, &bk, error))
    return FALSE;
  g_autoptr(RokClBuffer) delta = attention_delta(kernels, a, dout, error);
  if (delta == NULL)
    return FALSE;
  gsize tile_bytes = (gsize)bk * a->head_dim * sizeof(float);
  size_t local[2] = {kernels->tuning.attn_bq, 1};
  RokClLaunch launch = device_cl_launch(kernels, K_ATTN_BWD_DQ);
  arg_view(&launch, &a->q);
  arg_view(&launch, &a->k);
  arg_view(&launch, &a->v);
  arg_view(&launch, dout);
  arg_view(&launch, dq);
  device_cl_arg_buffer(&launch, lse);
  device_cl_arg_buffer(&launch, delta);
  arg_params(&launch, a);
  device_cl_arg_local(&launch, tile_bytes);
  device_cl_arg_local(&launch, tile_bytes);
  device_cl_arg_u32(&launch, bk);
  size_t global_q[2] = {(size_t)a->queries, (size_t)(a->batch * a->heads)};
  if (!device_cl_launch_chunked(&launch, 2, global_q, local, work(a, 6), error))
    return FALSE;
  launch = device_cl_launch(kernels, K_ATTN_BWD_DKV);
  arg_view(&launch, &a->q);
  arg_view(&launch, &a->k);
  arg_view(&launch, &a->v);
  arg_view(&launch, dout);
  arg_view(&launch, dk);
  arg_view(&launch, dv);
  device_cl_arg_buffer(&launch, lse);
  device_cl_arg_buffer(&launch, delta);
  arg_params(&launch, a);
  device_cl_arg_local(&launch, tile_bytes);
  device_cl_arg_local(&launch, tile_bytes);
  device_cl_arg_u32(&launch, bk);
  size_t global_k[2] = {(size_t)a->keys, (size_t)(a->batch * a->kv_heads)};
  return device_cl_launch_chunked(&launch, 2, global_k, local, work(a, 8), error);
}

#endif /* ROK_WITH_OPENCL */
