/* Integrity of the copies: the device's checksum of a tensor (taken right
 * after its producer ran) against the staged copy on its way out, and each
 * chunk's share of it against the chunk on its way back, before its bytes
 * reach the device again. Shares are differences of the running sum
 * (cl-checksum.h: contributions add), so a chunk is judged on its own and
 * a mismatch names where that chunk was: a file and an offset on a disk,
 * or host memory. */
#ifdef ROK_WITH_OPENCL

#include "runner-private.h"
#include "rok/core.h"

void runner_sum_init(RunnerSum *sum) {
  rok_cl_checksum_init(&sum->state);
}

guint64 runner_sum_chunk(RunnerSum *sum, const void *data, gsize bytes) {
  guint64 before = sum->state.sum;
  rok_cl_checksum_update(&sum->state, data, bytes);
  return sum->state.sum - before;
}

guint64 runner_sum_finish(const RunnerSum *sum) {
  return rok_cl_checksum_finish(&sum->state);
}

void runner_integrity_out(Runner *r, const RunnerCopy *c, RunnerSum *sum, guint chunk, const void *data, gsize bytes) {
  r->chunk_sums[c->chunk_base + chunk] = runner_sum_chunk(sum, data, bytes);
}

static const char *name_of(const Runner *r, const RunnerCopy *c) {
  return rok_trace_tensor(r->trace, c->tensor)->name;
}

static gboolean mismatch(Runner *r, GError **error, const char *format, ...) G_GNUC_PRINTF(3, 4);
static gboolean mismatch(Runner *r, GError **error, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_atomic_int_inc(&r->integrity_failures);
  g_set_error(error, ROK_ERROR, ROK_ERROR_INTEGRITY, "integrity: %s", message);
  return FALSE;
}

gboolean runner_integrity_out_done(Runner *r, guint copy, const RunnerSum *sum, GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RunnerCopyState *st = &r->copies[copy];
  st->host_sum = runner_sum_finish(sum);
  if (st->host_sum == st->device_sum)
    return TRUE;
  return mismatch(r, error,
                  "tensor '%s' (micro-batch %u): the copy out of the device differs from the device's bytes "
                  "(checksum %016" G_GINT64_MODIFIER "x, the device's %016" G_GINT64_MODIFIER "x)",
                  name_of(r, c), c->mb, st->host_sum, st->device_sum);
}

/* Where chunk `chunk` of the copy came back from, for a message. */
static char *chunk_origin(const Runner *r, guint copy, guint chunk) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  const RunnerCopyState *st = &r->copies[copy];
  if (c->nvme_read != RUN_NONE && st->stored != NULL) {
    guint64 offset = 0;
    const char *file = rok_store_chunk_file(st->stored, chunk, &offset);
    return g_strdup_printf("read from %s at offset %" G_GUINT64_FORMAT, file, offset);
  }
  return g_strdup(c->host ? "kept in host memory" : "kept in the staging buffer");
}

gboolean runner_integrity_in(Runner *r, guint copy, RunnerSum *sum, guint chunk, const void *data, gsize bytes,
                          GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  guint64 share = runner_sum_chunk(sum, data, bytes);
  guint64 expected = r->chunk_sums[c->chunk_base + chunk];
  if (share == expected)
    return TRUE;
  g_autofree char *origin = chunk_origin(r, copy, chunk);
  g_autofree char *size = rok_units_format_size(bytes);
  return mismatch(r, error,
                  "tensor '%s' (micro-batch %u) came back different from what left the device: chunk %u of %u "
                  "(%s) %s",
                  name_of(r, c), c->mb, chunk, c->n_chunks, size, origin);
}

gboolean runner_integrity_in_done(Runner *r, guint copy, const RunnerSum *sum, GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  guint64 value = runner_sum_finish(sum);
  g_atomic_int_inc(&r->verified);
  if (value == r->copies[copy].device_sum)
    return TRUE;
  /* Every chunk's share matched: only the final partial word can differ. */
  g_autofree char *origin = chunk_origin(r, copy, c->n_chunks - 1);
  return mismatch(r, error,
                  "tensor '%s' (micro-batch %u) came back different from what left the device: its last bytes, "
                  "%s",
                  name_of(r, c), c->mb, origin);
}

#endif /* ROK_WITH_OPENCL */
