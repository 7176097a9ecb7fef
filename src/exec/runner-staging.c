/* Reservations of staging slots. A copy bound for the SSDs holds slots
 * from its d2h copy until its write (and any read back from staging) is
 * done, and a staged SSD read holds them until its h2d: the simulator's
 * staging buffer. Granting them in schedule order, up to the peak of the
 * simulator's own timeline, keeps the run out of a trap the schedule does
 * not show: a leg that comes later in the schedule but is ready earlier
 * here (its stream ran ahead) filling the pool with slots that only legs
 * waiting behind the first one would give back. The first leg in line
 * always fits once the legs before it have done their part, as it did in
 * the simulation.
 *
 * A leg whose turn has not come may still go where the reservations, its
 * own and those of every turn before it not yet granted, fit the pool
 * together: the legs before it keep their room, and no wait is spent on
 * the order alone, which the simulator's buffer never waits for. In strict
 * order the LLaMA-shaped model's tba row (2026-12-02, a CPU device) waited
 * 0-8 times a step, a d2h leg that then missed being enqueued ahead of
 * its producer's next kernel and waited that kernel out (9.8 ms once);
 * out of turn, no wait in eleven runs. */
#ifdef ROK_WITH_OPENCL

#include <string.h>

#include "runner-private.h"
#include "rok/core.h"

/* Whether the leg may take its slots (under gate_lock): in its turn, when
 * they fit (a copy larger than the pool, when it is empty); out of turn,
 * when they fit beside those of every earlier turn not yet granted.
 * Granted so, the reservations and the earlier turns' needs never exceed
 * the pool, and the first in line still fits once the legs before it are
 * done. */
static gboolean gate_open(const Runner *r, guint ticket) {
  guint need = r->prog.ticket_needs[ticket];
  if (ticket == r->gate_next)
    return r->gate_reserved == 0 || r->gate_reserved + need <= r->gate_limit;
  guint64 ahead = 0;
  for (guint t = r->gate_next; t < ticket; t++)
    ahead += r->gate_taken[t] ? 0 : r->prog.ticket_needs[t];
  return r->gate_reserved + ahead + need <= r->gate_limit;
}

/* Take the reservation (under gate_lock, the gate open). */
static void gate_take(Runner *r, guint ticket, guint copy) {
  guint need = r->prog.ticket_needs[ticket];
  r->gate_reserved += need;
  r->gate_taken[ticket] = 1;
  while (r->gate_next < r->prog.n_tickets && r->gate_taken[r->gate_next])
    r->gate_next++;
  r->copies[copy].reserved += need;
  g_cond_broadcast(&r->gate_cond);
}

gboolean runner_gate_reserve(Runner *r, guint id, guint copy, RunnerRecord *rec, GError **error) {
  guint ticket = r->prog.actions[id].ticket;
  gint64 start = 0;
  g_mutex_lock(&r->gate_lock);
  while (!runner_failed(r) && !gate_open(r, ticket)) {
    if (start == 0)
      start = rok_host_now_ns();
    g_cond_wait(&r->gate_cond, &r->gate_lock);
  }
  gboolean ok = !runner_failed(r);
  if (ok)
    gate_take(r, ticket, copy);
  g_mutex_unlock(&r->gate_lock);
  if (start != 0) {
    rec->wait_ns += rok_host_now_ns() - start;
    rec->waits++;
  }
  if (!ok)
    g_set_error(error, ROK_ERROR, ROK_ERROR_CANCELLED, "stopped while waiting for staging slots");
  return ok;
}

gboolean runner_gate_try_reserve(Runner *r, guint id, guint copy) {
  guint ticket = r->prog.actions[id].ticket;
  g_mutex_lock(&r->gate_lock);
  gboolean ok = !runner_failed(r) && gate_open(r, ticket);
  if (ok)
    gate_take(r, ticket, copy);
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
  memset(r->gate_taken, 0, r->prog.n_tickets);
  g_mutex_unlock(&r->gate_lock);
}

void runner_gate_wake(Runner *r) {
  g_mutex_lock(&r->gate_lock);
  g_cond_broadcast(&r->gate_cond);
  g_mutex_unlock(&r->gate_lock);
}

#endif /* ROK_WITH_OPENCL */
