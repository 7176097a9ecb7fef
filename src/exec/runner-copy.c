/* The d2h and h2d legs: a tensor copied out of the device chunk by chunk
 * into slots of a pinned pool (the staging pool for the SSDs, the host pool
 * for host memory), checked against the device's checksum, and kept there
 * for the legs that follow; and the way back, each chunk checked before it
 * is written to the device. Copies block on their own queue (d2h or h2d),
 * from the stream's own thread, so they overlap with the compute queue. */
#ifdef ROK_WITH_OPENCL

#include <errno.h>

#include "exec/runner-private.h"
#include "rok/error.h"

static gsize chunk_len(const Runner *r, const RunCopy *c, guint chunk) {
  guint64 offset = (guint64)chunk * r->prog.slot_bytes;
  return (gsize)MIN(r->prog.slot_bytes, c->bytes - offset);
}

guint8 *run_chunk_data(Runner *r, guint copy, guint chunk) {
  const RunCopy *c = run_copy(&r->prog, copy);
  int slot = r->slots[c->chunk_base + chunk];
  g_assert(slot >= 0);
  return rok_staging_slot(r->copies[copy].pool, (guint)slot);
}

gboolean run_slot_acquire(Runner *r, RokStaging *pool, RunRecord *rec, int *slot, GError **error) {
  gint64 waited = 0;
  int s = rok_staging_acquire(pool, -1, &waited);
  if (waited > 0) {
    rec->wait_ns += waited;
    rec->waits++;
  }
  if (s < 0) {
    g_set_error(error, ROK_ERROR, s == -ECANCELED ? ROK_ERROR_CANCELLED : ROK_ERROR_IO,
                "waiting for a staging slot: %s", g_strerror(-s));
    return FALSE;
  }
  (void)r;
  *slot = s;
  return TRUE;
}

gboolean run_chunk_out(Runner *r, RokClBuffer *buffer, guint copy, guint chunk, GError **error) {
  const RunCopy *c = run_copy(&r->prog, copy);
  guint64 offset = (guint64)chunk * r->prog.slot_bytes;
  return rok_cl_buffer_read(buffer, ROK_CL_QUEUE_D2H, offset, chunk_len(r, c, chunk), run_chunk_data(r, copy, chunk),
                            TRUE, 0, NULL, NULL, error);
}

gboolean run_chunk_in(Runner *r, RokClBuffer *buffer, guint copy, guint chunk, RunSum *sum, GError **error) {
  const RunCopy *c = run_copy(&r->prog, copy);
  guint64 offset = (guint64)chunk * r->prog.slot_bytes;
  gsize len = chunk_len(r, c, chunk);
  const guint8 *data = run_chunk_data(r, copy, chunk);
  return run_integrity_in(r, copy, sum, chunk, data, len, error) &&
         rok_cl_buffer_write(buffer, ROK_CL_QUEUE_H2D, offset, len, data, TRUE, 0, NULL, NULL, error);
}

static void release_slots(Runner *r, guint copy) {
  const RunCopy *c = run_copy(&r->prog, copy);
  RunCopyState *st = &r->copies[copy];
  for (guint i = 0; i < c->n_chunks; i++) {
    int *slot = &r->slots[c->chunk_base + i];
    if (*slot >= 0)
      rok_staging_release(st->pool, (guint)*slot);
    *slot = -1;
  }
}

void run_copy_unref(Runner *r, guint copy) {
  if (g_atomic_int_dec_and_test(&r->copies[copy].refs))
    release_slots(r, copy);
}

void run_copy_release_chunk(Runner *r, guint copy, guint chunk) {
  const RunCopy *c = run_copy(&r->prog, copy);
  int *slot = &r->slots[c->chunk_base + chunk];
  if (*slot >= 0)
    rok_staging_release(r->copies[copy].pool, (guint)*slot);
  *slot = -1;
}

void run_copies_clear(Runner *r) {
  for (guint i = 0; i < r->prog.copies->len; i++) {
    release_slots(r, i);
    RunCopyState *st = &r->copies[i];
    g_clear_pointer(&st->stored, rok_store_tensor_free);
    g_atomic_int_set(&st->refs, 0);
  }
}

/* Out of the device into slots; the slots stay for the legs that read them. */
gboolean run_d2h_leg(Runner *r, guint id, GError **error) {
  guint copy = r->prog.actions[id].copy;
  const RunCopy *c = run_copy(&r->prog, copy);
  RunCopyState *st = &r->copies[copy];
  RunRecord *rec = &r->rec[id];
  RokClBuffer *buffer = run_buffer_get(r, c->mb, c->tensor);
  RunSum sum;
  run_sum_init(&sum);
  for (guint i = 0; i < c->n_chunks; i++) {
    if (!run_slot_acquire(r, st->pool, rec, &r->slots[c->chunk_base + i], error) ||
        !run_chunk_out(r, buffer, copy, i, error))
      return FALSE;
    gsize len = chunk_len(r, c, i);
    run_integrity_out(r, c, &sum, i, run_chunk_data(r, copy, i), len);
    rec->moved += len;
  }
  if (!run_integrity_out_done(r, copy, &sum, error))
    return FALSE;
  gint refs = (c->nvme_write != RUN_NONE) + (c->h2d != RUN_NONE && c->nvme_read == RUN_NONE);
  g_atomic_int_set(&st->refs, refs);
  if (refs == 0) /* forwarded: nobody reads this copy */
    release_slots(r, copy);
  return TRUE;
}

/* Back to the device from the slots an SSD read filled, or from the copy
 * kept in host memory or still in staging; a copy that comes from host
 * memory or staging gets its device buffer now. */
gboolean run_h2d_leg(Runner *r, guint id, GError **error) {
  guint copy = r->prog.actions[id].copy;
  const RunCopy *c = run_copy(&r->prog, copy);
  RunCopyState *st = &r->copies[copy];
  RokClBuffer *buffer = c->nvme_read != RUN_NONE ? run_buffer_get(r, c->mb, c->tensor)
                                                 : run_buffer_alloc(r, c->mb, c->tensor, error);
  if (buffer == NULL)
    return FALSE;
  RunSum sum;
  run_sum_init(&sum);
  for (guint i = 0; i < c->n_chunks; i++) {
    if (!run_chunk_in(r, buffer, copy, i, &sum, error))
      return FALSE;
    r->rec[id].moved += chunk_len(r, c, i);
  }
  if (!run_integrity_in_done(r, copy, &sum, error))
    return FALSE;
  run_copy_unref(r, copy);
  if (c->nvme_read != RUN_NONE)
    g_clear_pointer(&st->stored, rok_store_tensor_free);
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
