/* The d2h and h2d legs: a tensor copied out of the device into slots of a
 * pinned pool (the staging pool for the SSDs, the host pool for host
 * memory), checked against the device's checksum, and kept there for the
 * legs that follow; and the way back, every chunk checked against the
 * checksum before the tensor counts as back (its dependents wait for the
 * leg). A leg enqueues all its chunks' copies on its own queue (d2h or
 * h2d) at once and waits for them from the stream's own thread, so copies
 * overlap with the compute queue, and a device without a copy engine
 * (PoCL: a copy is a memcpy on a thread that also runs kernels) takes the
 * whole leg in one turn rather than one per chunk. Both ways a leg's
 * copies are enqueued as it is issued (runner_d2h_prime,
 * runner_h2d_prime): by the compute thread before its next kernel, where
 * a kernel's end made it ready. */
#ifdef ROK_WITH_OPENCL

#include <errno.h>

#include "runner-private.h"
#include "rok/core.h"

static gsize chunk_len(const Runner *r, const RunnerCopy *c, guint chunk) {
  guint64 offset = (guint64)chunk * r->prog.slot_bytes;
  return (gsize)MIN(r->prog.slot_bytes, c->bytes - offset);
}

guint8 *runner_chunk_data(Runner *r, guint copy, guint chunk) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  int slot = r->slots[c->chunk_base + chunk];
  g_assert(slot >= 0);
  return rok_staging_slot(r->copies[copy].pool, (guint)slot);
}

gboolean runner_slot_acquire(Runner *r, RokStaging *pool, RunnerRecord *rec, int *slot, GError **error) {
  (void)r;
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
  *slot = s;
  return TRUE;
}

/* Slots for every chunk of the copy that holds none yet; a copy bound for
 * the SSDs takes its reservation first, unless it holds it already (a
 * prime took it). With `wait` FALSE (priming), only what can be had at
 * once: FALSE, with no error, where it would wait. */
static gboolean take_slots(Runner *r, guint id, guint copy, gboolean wait, GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RunnerCopyState *st = &r->copies[copy];
  if (r->prog.actions[id].ticket != RUN_NONE && st->reserved == 0 &&
      !(wait ? runner_gate_reserve(r, id, copy, &r->rec[id], error) : runner_gate_try_reserve(r, id, copy)))
    return FALSE;
  for (guint i = 0; i < c->n_chunks; i++) {
    int *slot = &r->slots[c->chunk_base + i];
    if (*slot >= 0)
      continue;
    if (wait ? !runner_slot_acquire(r, st->pool, &r->rec[id], slot, error)
             : (*slot = rok_staging_acquire(st->pool, 0, NULL)) < 0) {
      *slot = -1;
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean chunk_copy(Runner *r, RokClBuffer *buffer, guint copy, guint chunk, gboolean out, gboolean blocking,
                           cl_event *event, GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  guint64 offset = (guint64)chunk * r->prog.slot_bytes;
  guint8 *data = runner_chunk_data(r, copy, chunk);
  if (out)
    return rok_cl_buffer_read(buffer, ROK_CL_QUEUE_D2H, offset, chunk_len(r, c, chunk), data, blocking, 0, NULL, event,
                              error);
  return rok_cl_buffer_write(buffer, ROK_CL_QUEUE_H2D, offset, chunk_len(r, c, chunk), data, blocking, 0, NULL, event,
                             error);
}

/* Every chunk of the copy between the device and its slots enqueued at
 * once; events[*n] for those that were. */
static gboolean enqueue_all(Runner *r, RokClBuffer *buffer, guint copy, gboolean out, cl_event *events, guint *n,
                            GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  for (*n = 0; *n < c->n_chunks; ++*n)
    if (!chunk_copy(r, buffer, copy, *n, out, FALSE, &events[*n], error))
      return FALSE;
  return TRUE;
}

/* Wait for what was enqueued, even after a failure (`ok` FALSE): the
 * copies use the slots. */
static gboolean wait_all(cl_event *events, guint n, gboolean ok, GError **error) {
  ok = rok_cl_events_wait(n, events, ok ? error : NULL) && ok;
  for (guint i = 0; i < n; i++)
    clReleaseEvent(events[i]);
  return ok;
}

static gboolean copy_all(Runner *r, RokClBuffer *buffer, guint copy, gboolean out, GError **error) {
  g_autofree cl_event *events = g_new0(cl_event, runner_copy(&r->prog, copy)->n_chunks);
  guint n;
  gboolean ok = enqueue_all(r, buffer, copy, out, events, &n, error);
  return wait_all(events, n, ok, error);
}

gboolean runner_chunk_out(Runner *r, RokClBuffer *buffer, guint copy, guint chunk, GError **error) {
  return chunk_copy(r, buffer, copy, chunk, TRUE, TRUE, NULL, error);
}

gboolean runner_chunk_in(Runner *r, RokClBuffer *buffer, guint copy, guint chunk, RunnerSum *sum, GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  return runner_integrity_in(r, copy, sum, chunk, runner_chunk_data(r, copy, chunk), chunk_len(r, c, chunk), error) &&
         chunk_copy(r, buffer, copy, chunk, FALSE, TRUE, NULL, error);
}

static void release_slots(Runner *r, guint copy) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RunnerCopyState *st = &r->copies[copy];
  for (guint i = 0; i < c->n_chunks; i++) {
    int *slot = &r->slots[c->chunk_base + i];
    if (*slot >= 0)
      rok_staging_release(st->pool, (guint)*slot);
    *slot = -1;
  }
  runner_gate_release(r, copy);
}

void runner_copy_unref(Runner *r, guint copy) {
  if (g_atomic_int_dec_and_test(&r->copies[copy].refs))
    release_slots(r, copy);
}

void runner_copy_release_chunk(Runner *r, guint copy, guint chunk) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  int *slot = &r->slots[c->chunk_base + chunk];
  if (*slot >= 0)
    rok_staging_release(r->copies[copy].pool, (guint)*slot);
  *slot = -1;
}

void runner_copies_clear(Runner *r) {
  for (guint i = 0; i < r->prog.copies->len; i++) {
    release_slots(r, i);
    RunnerCopyState *st = &r->copies[i];
    g_clear_pointer(&st->stored, rok_store_tensor_free);
    g_atomic_int_set(&st->refs, 0);
  }
  runner_gate_reset(r);
}

void runner_d2h_prime(Runner *r, guint id) {
  guint copy = r->prog.actions[id].copy;
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RunnerCopyState *st = &r->copies[copy];
  if (runner_failed(r) || g_atomic_int_get(&r->d2h_slotless) > 0 || !take_slots(r, id, copy, FALSE, NULL)) {
    g_atomic_int_inc(&r->d2h_slotless); /* the d2h thread waits for the rest, or sees the failure */
    return;
  }
  r->rec[id].start_ns = rok_host_now_ns();
  st->events = g_new0(cl_event, c->n_chunks);
  enqueue_all(r, runner_buffer_get(r, c->mb, c->tensor), copy, TRUE, st->events, &st->n_events, &st->prime_error);
  st->primed = TRUE;
}

/* The primed leg's copies waited for (`ok` FALSE: the run failed, they
 * are only settled); its enqueuing's error, if any, taken. */
static gboolean primed_wait(Runner *r, guint copy, gboolean ok, GError **error) {
  RunnerCopyState *st = &r->copies[copy];
  if (st->prime_error != NULL) {
    ok = FALSE;
    g_propagate_error(error, g_steal_pointer(&st->prime_error));
  }
  ok = wait_all(st->events, st->n_events, ok, error);
  g_clear_pointer(&st->events, g_free);
  st->n_events = 0;
  st->primed = FALSE;
  return ok;
}

void runner_copy_settle(Runner *r, guint id) {
  guint copy = r->prog.actions[id].copy;
  if (r->copies[copy].primed)
    primed_wait(r, copy, FALSE, NULL);
}

/* Its slots taken now, where its priming could not: legs after it may be
 * primed again. */
static gboolean d2h_take_slots(Runner *r, guint id, guint copy, GError **error) {
  gboolean ok = take_slots(r, id, copy, TRUE, error);
  g_atomic_int_add(&r->d2h_slotless, -1);
  return ok;
}

/* Out of the device into slots; the slots stay for the legs that read them. */
gboolean run_d2h_leg(Runner *r, guint id, GError **error) {
  guint copy = r->prog.actions[id].copy;
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  if (r->copies[copy].primed ? !primed_wait(r, copy, TRUE, error)
                             : !d2h_take_slots(r, id, copy, error) ||
                                   !copy_all(r, runner_buffer_get(r, c->mb, c->tensor), copy, TRUE, error))
    return FALSE;
  RunnerSum sum;
  runner_sum_init(&sum);
  for (guint i = 0; i < c->n_chunks; i++)
    runner_integrity_out(r, c, &sum, i, runner_chunk_data(r, copy, i), chunk_len(r, c, i));
  r->rec[id].moved = c->bytes;
  if (!runner_integrity_out_done(r, copy, &sum, error))
    return FALSE;
  gint refs = (c->nvme_write != RUN_NONE) + (c->h2d != RUN_NONE && c->nvme_read == RUN_NONE);
  g_atomic_int_set(&r->copies[copy].refs, refs);
  if (refs == 0) /* forwarded: nobody reads this copy */
    release_slots(r, copy);
  return TRUE;
}

/* As the h2d leg `id` is issued: its device buffer (taken now where the
 * copy comes from host memory or staging; an SSD read took it when it was
 * issued) and every chunk's copy from the slots enqueued. The check comes
 * after, on the h2d thread (run_h2d_leg), while nothing reads the tensor:
 * checked first, the leg reached the device after the kernel the compute
 * thread launched meanwhile, and PoCL ran its copy only once a processor
 * was done with that kernel (validate-gpt's rok row, 2026-12-02: 50 of 122
 * legs begun at a launch waited 1.6-2.5 ms, half of a GEMM's backward). */
void runner_h2d_prime(Runner *r, guint id) {
  guint copy = r->prog.actions[id].copy;
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RunnerCopyState *st = &r->copies[copy];
  if (runner_failed(r)) /* the h2d thread only acknowledges it */
    return;
  r->rec[id].start_ns = rok_host_now_ns();
  st->events = g_new0(cl_event, c->n_chunks);
  st->primed = TRUE;
  RokClBuffer *buffer = c->nvme_read != RUN_NONE ? runner_buffer_get(r, c->mb, c->tensor)
                                                 : runner_buffer_alloc(r, c->mb, c->tensor, &st->prime_error);
  if (buffer != NULL)
    enqueue_all(r, buffer, copy, FALSE, st->events, &st->n_events, &st->prime_error);
}

/* Back to the device from the slots an SSD read filled, or from the copy
 * kept in host memory or still in staging: the primed copies waited for,
 * then every chunk checked against what left the device. */
gboolean run_h2d_leg(Runner *r, guint id, GError **error) {
  guint copy = r->prog.actions[id].copy;
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RunnerCopyState *st = &r->copies[copy];
  if (!primed_wait(r, copy, TRUE, error))
    return FALSE;
  RunnerSum sum;
  runner_sum_init(&sum);
  for (guint i = 0; i < c->n_chunks; i++)
    if (!runner_integrity_in(r, copy, &sum, i, runner_chunk_data(r, copy, i), chunk_len(r, c, i), error))
      return FALSE;
  if (!runner_integrity_in_done(r, copy, &sum, error))
    return FALSE;
  r->rec[id].moved = c->bytes;
  runner_copy_unref(r, copy);
  if (c->nvme_read != RUN_NONE)
    g_clear_pointer(&st->stored, rok_store_tensor_free);
  return TRUE;
}

/* A staged SSD read's slots, reserved in its turn. */
gboolean runner_read_slots(Runner *r, guint id, guint copy, GError **error) {
  return take_slots(r, id, copy, TRUE, error);
}

gboolean runner_read_slots_now(Runner *r, guint id, guint copy) {
  return take_slots(r, id, copy, FALSE, NULL);
}

#endif /* ROK_WITH_OPENCL */
