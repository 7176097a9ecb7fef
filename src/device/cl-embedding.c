/* Embedding launchers: lookup, and the deterministic backward scatter
 * (count, scan, place, reduce: see embedding.cl). */
#ifdef ROK_WITH_OPENCL

#include "cl-kernels-private.h"
#include "rok/core.h"

static gboolean check_embedding(const char *op, RokClBuffer *ids, guint64 tokens,
                                guint64 hidden, guint64 vocab, guint64 seq_len, GError **error) {
  if (seq_len == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: seq_len must be positive", op);
    return FALSE;
  }
  guint64 n = 0, table = 0;
  return device_cl_check_u32(tokens, op, "tokens", error) && device_cl_check_u32(hidden, op, "hidden", error) &&
         device_cl_check_u32(seq_len, op, "seq_len", error) && device_cl_mul(tokens, hidden, &n, op, error) &&
         device_cl_mul(vocab, hidden, &table, op, error) &&
         device_cl_check_buffer(ids, ROK_DTYPE_I64, tokens, op, "ids", error);
}

gboolean rok_cl_embedding_forward(RokClKernels *kernels, RokClBuffer *ids, RokClBuffer *table,
                                  RokClBuffer *positions, RokClBuffer *y, guint64 tokens, guint64 hidden,
                                  guint64 vocab, guint64 seq_len, GError **error) {
  const char *op = "embedding_forward";
  if (!check_embedding(op, ids, tokens, hidden, vocab, seq_len, error) ||
      !device_cl_check_act(kernels, table, vocab * hidden, op, "table", error) ||
      (positions != NULL && !device_cl_check_act(kernels, positions, seq_len * hidden, op, "positions", error)) ||
      !device_cl_check_act(kernels, y, tokens * hidden, op, "y", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_EMBEDDING_FWD);
  device_cl_arg_buffer(&launch, ids);
  device_cl_arg_buffer(&launch, table);
  device_cl_arg_buffer(&launch, positions);
  device_cl_arg_u32(&launch, positions != NULL);
  device_cl_arg_buffer(&launch, y);
  device_cl_arg_u32(&launch, (guint32)hidden);
  device_cl_arg_u64(&launch, vocab);
  device_cl_arg_u32(&launch, (guint32)seq_len);
  device_cl_arg_u64(&launch, tokens);
  size_t wg = kernels->tuning.wg, global = (size_t)(tokens * hidden);
  return device_cl_launch_run(&launch, 1, &global, &wg, error);
}

/* Scratch of the counting sort: counts and starts per id, the sorted token
 * order (UINT_MAX where no token lands). */
typedef struct {
  RokClBuffer *counts, *starts, *order;
} SortScratch;

static void scratch_free(SortScratch *s) {
  rok_cl_buffer_free(s->counts);
  rok_cl_buffer_free(s->starts);
  rok_cl_buffer_free(s->order);
}

static gboolean sort_tokens(RokClKernels *kernels, RokClBuffer *ids, guint64 tokens, guint64 vocab,
                            SortScratch *s, GError **error) {
  RokClDevice *device = kernels->device;
  /* u8 buffers of 4-byte elements: the kernels see uint arrays. */
  s->counts = rok_cl_buffer_new(device, ROK_DTYPE_U8, vocab * 4, "embedding counts", FALSE, error);
  s->starts = s->counts ? rok_cl_buffer_new(device, ROK_DTYPE_U8, vocab * 4, "embedding starts", FALSE, error) : NULL;
  s->order = s->starts ? rok_cl_buffer_new(device, ROK_DTYPE_U8, tokens * 4, "embedding order", FALSE, error) : NULL;
  if (s->order == NULL || !rok_cl_buffer_zero(s->counts, error))
    return FALSE;
  static const cl_uint none = G_MAXUINT32;
  cl_int status = clEnqueueFillBuffer(rok_cl_device_queue(device, ROK_CL_QUEUE_COMPUTE), s->order->mem, &none,
                                      sizeof none, 0, s->order->bytes, 0, NULL, NULL);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "embedding_backward: clearing the token order");
  size_t wg = kernels->tuning.wg, global = (size_t)tokens;
  RokClLaunch launch = device_cl_launch(kernels, K_EMBEDDING_COUNT);
  device_cl_arg_buffer(&launch, ids);
  device_cl_arg_buffer(&launch, s->counts);
  device_cl_arg_u64(&launch, tokens);
  device_cl_arg_u64(&launch, vocab);
  if (!device_cl_launch_run(&launch, 1, &global, &wg, error))
    return FALSE;
  launch = device_cl_launch(kernels, K_EMBEDDING_SCAN);
  device_cl_arg_buffer(&launch, s->counts);
  device_cl_arg_buffer(&launch, s->starts);
  device_cl_arg_u64(&launch, vocab);
  if (!device_cl_launch_run(&launch, 1, &wg, &wg, error))
    return FALSE;
  launch = device_cl_launch(kernels, K_EMBEDDING_PLACE);
  device_cl_arg_buffer(&launch, ids);
  device_cl_arg_buffer(&launch, s->starts);
  device_cl_arg_buffer(&launch, s->order);
  device_cl_arg_u64(&launch, tokens);
  device_cl_arg_u64(&launch, vocab);
  return device_cl_launch_run(&launch, 1, &global, &wg, error);
}

gboolean rok_cl_embedding_backward(RokClKernels *kernels, RokClBuffer *ids, RokClBuffer *dy, RokClBuffer *dtable,
                                   RokClBuffer *dpositions, guint64 tokens, guint64 hidden, guint64 vocab,
                                   guint64 seq_len, GError **error) {
  const char *op = "embedding_backward";
  if (!check_embedding(op, ids, tokens, hidden, vocab, seq_len, error) ||
      !device_cl_check_u32(vocab, op, "vocab", error) ||
      !device_cl_check_act(kernels, dy, tokens * hidden, op, "dy", error) ||
      !device_cl_check_buffer(dtable, ROK_DTYPE_FP32, vocab * hidden, op, "dtable", error) ||
      (dpositions != NULL &&
       !device_cl_check_buffer(dpositions, ROK_DTYPE_FP32, seq_len * hidden, op, "dpositions", error)))
    return FALSE;
  if (tokens == 0 || hidden == 0)
    return TRUE;
  SortScratch s = {0};
  gboolean ok = sort_tokens(kernels, ids, tokens, vocab, &s, error);
  size_t wg = kernels->tuning.wg;
  if (ok) {
    RokClLaunch launch = device_cl_launch(kernels, K_EMBEDDING_REDUCE);
    device_cl_arg_buffer(&launch, ids);
    device_cl_arg_buffer(&launch, s.order);
    device_cl_arg_buffer(&launch, s.starts);
    device_cl_arg_buffer(&launch, s.counts);
    device_cl_arg_buffer(&launch, dy);
    device_cl_arg_buffer(&launch, dtable);
    device_cl_arg_u32(&launch, (guint32)hidden);
    device_cl_arg_u32(&launch, (guint32)tokens);
    size_t global = (size_t)(tokens * hidden);
    ok = device_cl_launch_run(&launch, 1, &global, &wg, error);
  }
  /* Freeing with the kernels still queued is safe (OpenCL holds the memory
   * until they finish). */
  scratch_free(&s);
  if (!ok || dpositions == NULL)
    return ok;
  RokClLaunch launch = device_cl_launch(kernels, K_EMBEDDING_POSITIONS_BWD);
  device_cl_arg_buffer(&launch, dy);
  device_cl_arg_buffer(&launch, dpositions);
  device_cl_arg_u32(&launch, (guint32)hidden);
  device_cl_arg_u64(&launch, tokens);
  device_cl_arg_u32(&launch, (guint32)seq_len);
  size_t global = (size_t)(seq_len * hidden);
  return device_cl_launch_run(&launch, 1, &global, &wg, error);
}

#endif /* ROK_WITH_OPENCL */
