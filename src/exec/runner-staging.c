/* Reservations of staging slots. A copy bound for the SSDs holds slots
 * from its d2h copy until its write (and any read back from staging) is
 * done, and a staged SSD read holds them until its h2d: the simulator's
 * staging buffer. Granting them in schedule order, up to the peak of the
 * simulator's own timeline, keeps the run out of a trap the schedule does
 * not show: a leg that comes later in the schedule but is ready earlier
 * here (its stream ran ahead) filling the pool with slots that only legs
 * waiting behind the first one would give back. The first leg in line
 * always fits once the legs before it have done their part, as it did in
 * the simulation. */
#ifdef ROK_WITH_OPENCL

#include "runner-private.h"
#include "rok/core.h"

/* Whether the leg's turn has come and its slots fit (under gate_lock). */
static gboolean gate_open(const Runner *r, guint ticket, guint need) {
  return r->gate_next == ticket && (r->gate_reserved == 0 || r->gate_reserved + need <= r->gate_limit);
}

/* Take the reservation (under gate_lock, the gate open). */
static void gate_take(Runner *r, guint copy, guint need) {
  r->gate_reserved += need;
  r->gate_next++;
  r->copies[copy].reserved += need;
  g_cond_broadcast(&r->gate_cond);
}

gboolean runner_gate_reserve(Runner *r, guint id, guint copy, RunnerRecord *rec, GError **error) {
  guint ticket = r->prog.actions[id].ticket;
  guint need = runner_copy(&r->prog, copy)->n_chunks;
  gint64 start = 0;
  g_mutex_lock(&r->gate_lock);
  while (!runner_failed(r) && !gate_open(r, ticket, need)) {
    if (start == 0)
      start = runner_now_ns();
    g_cond_wait(&r->gate_cond, &r->gate_lock);
  }
  gboolean ok = !runner_failed(r);
  if (ok)
    gate_take(r, copy, need);
  g_mutex_unlock(&r->gate_lock);
  if (start != 0) {
    rec->wait_ns += runner_now_ns() - start;
    rec->waits++;
  }
  if (!ok)
    g_set_error(error, ROK_ERROR, ROK_ERROR_CANCELLED, "stopped while waiting for staging slots");
  return ok;
}

gboolean runner_gate_try_reserve(Runner *r, guint id, guint copy) {
  guint need = runner_copy(&r->prog, copy)->n_chunks;
  g_mutex_lock(&r->gate_lock);
  gboolean ok = !runner_failed(r) && gate_open(r, r->prog.actions[id].ticket, need);
  if (ok)
    gate_take(r, copy, need);
  g_mutex_unlock(&r->gate_lock);
  return ok;
}

void runner_gate_release(Runner *r, guint copy) {
  RunnerCopyState *st = &r->copies[copy];
  g_mutex_lock(&r->gate_lock);
  r->gate_reserved -= MIN(st->reserved, r->gate_reserved);
  st->reserved = 0;
  g_cond_broadcast(&r->gate_cond);
  g_mutex_unlock(&r->gate_lock);
}

void runner_gate_reset(Runner *r) {
  g_mutex_lock(&r->gate_lock);
  r->gate_next = 0;
  r->gate_reserved = 0;
  g_mutex_unlock(&r->gate_lock);
}

void runner_gate_wake(Runner *r) {
  g_mutex_lock(&r->gate_lock);
  g_cond_broadcast(&r->gate_cond);
  g_mutex_unlock(&r->gate_lock);
}

#endif /* ROK_WITH_OPENCL */
