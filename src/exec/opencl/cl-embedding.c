/* Embedding launchers: lookup, and the deterministic backward scatter
 * (count, scan, place, reduce: see embedding.cl). */
#ifdef ROK_WITH_OPENCL

#include "exec/opencl/cl-kernels-private.h"
#include "rok/error.h"

static gboolean check_embedding(const char *op, RokClBuffer *ids, guint64 tokens,
                                guint64 hidden, guint64 vocab, guint64 seq_len, GError **error) {
  if (seq_len == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: seq_len must be positive", op);
    return FALSE;
  }
  guint64 n = 0, table = 0;
  return rok_cl_check_u32(tokens, op, "tokens", error) && rok_cl_check_u32(hidden, op, "hidden", error) &&
         rok_cl_check_u32(seq_len, op, "seq_len", error) && rok_cl_mul(tokens, hidden, &n, op, error) &&
         rok_cl_mul(vocab, hidden, &table, op, error) &&
         rok_cl_check_buffer(ids, ROK_DTYPE_I64, tokens, op, "ids", error);
}

gboolean rok_cl_embedding_forward(RokClKernels *kernels, RokClBuffer *ids, RokClBuffer *table,
                                  RokClBuffer *positions, RokClBuffer *y, guint64 tokens, guint64 hidden,
                                  guint64 vocab, guint64 seq_len, GError **error) {
  const char *op = "embedding_forward";
  if (!check_embedding(op, ids, tokens, hidden, vocab, seq_len, error) ||
      !rok_cl_check_act(kernels, table, vocab * hidden, op, "table", error) ||
      (positions != NULL && !rok_cl_check_act(kernels, positions, seq_len * hidden, op, "positions", error)) ||
      !rok_cl_check_act(kernels, y, tokens * hidden, op, "y", error))
    return FALSE;
  RokClLaunch launch = rok_cl_launch(kernels, K_EMBEDDING_FWD);
  rok_cl_arg_buffer(&launch, ids);
  rok_cl_arg_buffer(&launch, table);
  rok_cl_arg_buffer(&launch, positions);
  rok_cl_arg_u32(&launch, positions != NULL);
  rok_cl_arg_buffer(&launch, y);
  rok_cl_arg_u32(&launch, (guint32)hidden);
  rok_cl_arg_u64(&launch, vocab);
  rok_cl_arg_u32(&launch, (guint32)seq_len);
  rok_cl_arg_u64(&launch, tokens);
  size_t wg = kernels->tuning.wg, global = (size_t)(tokens * hidden);
  return rok_cl_launch_run(&launch, 1, &global, &wg, error);
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
  RokClLaunch launch = rok_cl_launch(kernels, K_EMBEDDING_COUNT);
  rok_cl_arg_buffer(&launch, ids);
  rok_cl_arg_buffer(&launch, s->counts);
  rok_cl_arg_u64(&launch, tokens);
  rok_cl_arg_u64(&launch, vocab);
  if (!rok_cl_launch_run(&launch, 1, &global, &wg, error))
    return FALSE;
  launch = rok_cl_launch(kernels, K_EMBEDDING_SCAN);
  rok_cl_arg_buffer(&launch, s->counts);
  rok_cl_arg_buffer(&launch, s->starts);
  rok_cl_arg_u64(&launch, vocab);
  if (!rok_cl_launch_run(&launch, 1, &wg, &wg, error))
    return FALSE;
  launch = rok_cl_launch(kernels, K_EMBEDDING_PLACE);
  rok_cl_arg_buffer(&launch, ids);
  rok_cl_arg_buffer(&launch, s->starts);
  rok_cl_arg_buffer(&launch, s->order);
  rok_cl_arg_u64(&launch, tokens);
  rok_cl_arg_u64(&launch, vocab);
  return rok_cl_launch_run(&launch, 1, &global, &wg, error);
}

gboolean rok_cl_embedding_backward(RokClKernels *kernels, RokClBuffer *ids, RokClBuffer *dy, RokClBuffer *dtable,
                                   RokClBuffer *dpositions, guint64 tokens, guint64 hidden, guint64 vocab,
                                   guint64 seq_len, GError **error) {
  const char *op = "embedding_backward";
  if (!check_embedding(op, ids, tokens, hidden, vocab, seq_len, error) ||
      !rok_cl_check_u32(vocab, op, "vocab", error) ||
      !rok_cl_check_act(kernels, dy, tokens * hidden, op, "dy", error) ||
      !rok_cl_check_buffer(dtable, ROK_DTYPE_FP32, vocab * hidden, op, "dtable", error) ||
      (dpositions != NULL &&
       !rok_cl_check_buffer(dpositions, ROK_DTYPE_FP32, seq_len * hidden, op, "dpositions", error)))
    return FALSE;
  if (tokens == 0 || hidden == 0)
    return TRUE;
  SortScratch s = {0};
  gboolean ok = sort_tokens(kernels, ids, tokens, vocab, &s, error);
  size_t wg = kernels->tuning.wg;
  if (ok) {
    RokClLaunch launch = rok_cl_launch(kernels, K_EMBEDDING_REDUCE);
    rok_cl_arg_buffer(&launch, ids);
    rok_cl_arg_buffer(&launch, s.order);
    rok_cl_arg_buffer(&launch, s.starts);
    rok_cl_arg_buffer(&launch, s.counts);
    rok_cl_arg_buffer(&launch, dy);
    rok_cl_arg_buffer(&launch, dtable);
    rok_cl_arg_u32(&launch, (guint32)hidden);
    rok_cl_arg_u32(&launch, (guint32)tokens);
    size_t global = (size_t)(tokens * hidden);
    ok = rok_cl_launch_run(&launch, 1, &global, &wg, error);
  }
  /* Freeing with the kernels still queued is safe (OpenCL holds the memory
   * until they finish). */
  scratch_free(&s);
  if (!ok || dpositions == NULL)
    return ok;
  RokClLaunch launch = rok_cl_launch(kernels, K_EMBEDDING_POSITIONS_BWD);
  rok_cl_arg_buffer(&launch, dy);
  rok_cl_arg_buffer(&launch, dpositions);
  rok_cl_arg_u32(&launch, (guint32)hidden);
  rok_cl_arg_u64(&launch, tokens);
  rok_cl_arg_u32(&launch, (guint32)seq_len);
  size_t global = (size_t)(seq_len * hidden);
  return rok_cl_launch_run(&launch, 1, &global, &wg, error);
}

#endif /* ROK_WITH_OPENCL */
