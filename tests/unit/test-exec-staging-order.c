/* The staging gate's ticket order (runner-staging.c), on the gate itself.
 *
 * The trap it keeps the runner out of: a pool of 4 slots; leg 0 (first in
 * the schedule) needs 3, leg 1 needs 2, and leg 1's slots come back only
 * after leg 0 has run (its stream waits behind leg 0, as an h2d queued
 * behind the copy that needs leg 0 does). Leg 1's stream runs ahead and
 * asks first, while the pool is empty. Granted by room alone, leg 1 takes
 * 2 slots, leg 0 never fits, and the run hangs; granted in schedule order,
 * leg 1 waits for leg 0's turn and both get through. In a pool of 5, both
 * fit at once: leg 1 goes out of turn, leg 0 keeps its room.
 *
 * The end-to-end runs of test-exec-runner cannot show this reliably: which
 * stream reaches the gate first is up to thread timing. Here the order of
 * arrival is fixed. A watchdog stops a gate that hangs (the way a failed
 * run stops it) so that the test fails instead of hanging. */
#include <glib.h>

#ifndef ROK_WITH_OPENCL
int main(void) {
  return 77; /* the runner is built only with OpenCL */
}
#else

#include <string.h>

#include "exec/runner-private.h"

enum { POOL_SLOTS = 4, FIRST_NEEDS = 3, SECOND_NEEDS = 2 };
#define WATCHDOG_US (3 * G_USEC_PER_SEC)

typedef struct {
  Runner r;
  RunnerAction actions[2];
  guint needs[2];
  guint8 taken[2];
  RunnerCopyState copies[2];
  RunnerRecord rec[2];
  GError *errors[2];
  gboolean granted[2];
  gint first_done; /* leg 0 has run and given its slots back (atomic) */
} Gate;

static void gate_init(Gate *g, guint pool_slots) {
  memset(g, 0, sizeof *g);
  Runner *r = &g->r;
  r->prog.copies = g_array_new(FALSE, TRUE, sizeof(RunnerCopy));
  guint needs[2] = {FIRST_NEEDS, SECOND_NEEDS};
  for (guint i = 0; i < 2; i++) {
    RunnerCopy c = {.mb = 0, .tensor = i, .n_chunks = needs[i], .d2h = i, .nvme_write = RUN_NONE,
                 .nvme_read = RUN_NONE, .h2d = RUN_NONE};
    g_array_append_val(r->prog.copies, c);
    g->actions[i] = (RunnerAction){.copy = i, .ticket = i};
    g->needs[i] = needs[i];
  }
  r->prog.ticket_needs = g->needs;
  r->gate_taken = g->taken;
  r->prog.actions = g->actions;
  r->prog.n_actions = 2;
  r->prog.n_tickets = 2;
  r->copies = g->copies;
  r->gate_limit = pool_slots;
  g_mutex_init(&r->gate_lock);
  g_cond_init(&r->gate_cond);
}

static void gate_clear(Gate *g) {
  g_array_unref(g->r.prog.copies);
  g_mutex_clear(&g->r.gate_lock);
  g_cond_clear(&g->r.gate_cond);
  for (guint i = 0; i < 2; i++)
    g_clear_error(&g->errors[i]);
}

/* Leg 1: reserves, then holds its slots until leg 0 has run. */
static gpointer second_leg(gpointer data) {
  Gate *g = data;
  g->granted[1] = runner_gate_reserve(&g->r, 1, 1, &g->rec[1], &g->errors[1]);
  if (g->granted[1]) {
    while (!g_atomic_int_get(&g->first_done) && !runner_failed(&g->r))
      g_usleep(1000);
    runner_gate_release(&g->r, 1);
  }
  return NULL;
}

/* Leg 0: reserves, runs, gives its slots back. */
static gpointer first_leg(gpointer data) {
  Gate *g = data;
  g->granted[0] = runner_gate_reserve(&g->r, 0, 0, &g->rec[0], &g->errors[0]);
  if (g->granted[0]) {
    g_assert_cmpuint(g->r.gate_reserved, <=, g->r.gate_limit);
    runner_gate_release(&g->r, 0);
  }
  g_atomic_int_set(&g->first_done, 1);
  return NULL;
}

/* What runner_fail does to the gate: every waiter gives up. */
static void stop_gate(Gate *g) {
  g_atomic_int_set(&g->r.failed, 1);
  runner_gate_wake(&g->r);
}

static void test_later_leg_waits(void) {
  Gate g;
  gate_init(&g, POOL_SLOTS);
  GThread *second = g_thread_new("leg-1", second_leg, &g);
  g_usleep(100 * 1000); /* leg 1's stream runs ahead: it is at the gate first */
  GThread *first = g_thread_new("leg-0", first_leg, &g);
  gint64 deadline = g_get_monotonic_time() + WATCHDOG_US;
  while (!g_atomic_int_get(&g.first_done) && g_get_monotonic_time() < deadline)
    g_usleep(1000);
  gboolean hung = !g_atomic_int_get(&g.first_done);
  if (hung)
    stop_gate(&g);
  g_thread_join(first);
  g_thread_join(second);
  if (hung)
    g_error("the gate hung: leg 1 (later in the schedule, %u slots) was granted first and leg 0 (%u slots) never "
            "fitted in the pool of %u (leg 0: %s)",
            SECOND_NEEDS, FIRST_NEEDS, POOL_SLOTS, g.errors[0] != NULL ? g.errors[0]->message : "granted");
  g_assert_true(g.granted[0]);
  g_assert_true(g.granted[1]);
  g_assert_no_error(g.errors[0]);
  g_assert_no_error(g.errors[1]);
  /* Leg 1 waited for its turn although the pool was empty when it came;
   * leg 0 did not wait. */
  g_assert_cmpuint(g.rec[1].waits, ==, 1);
  g_assert_cmpuint(g.rec[0].waits, ==, 0);
  g_assert_cmpuint(g.r.gate_next, ==, 2);
  g_assert_cmpuint(g.r.gate_reserved, ==, 0);
  gate_clear(&g);
}

/* Room for both: leg 1 takes its slots out of turn at once, and leg 0,
 * whose room was left, then takes its own without waiting either. */
static void test_out_of_turn(void) {
  Gate g;
  gate_init(&g, FIRST_NEEDS + SECOND_NEEDS);
  g_assert_true(runner_gate_try_reserve(&g.r, 1, 1));
  g_assert_cmpuint(g.r.gate_next, ==, 0);
  g_assert_cmpuint(g.r.gate_reserved, ==, SECOND_NEEDS);
  g_assert_true(runner_gate_reserve(&g.r, 0, 0, &g.rec[0], &g.errors[0]));
  g_assert_cmpuint(g.rec[0].waits, ==, 0);
  g_assert_cmpuint(g.r.gate_next, ==, 2);
  g_assert_cmpuint(g.r.gate_reserved, ==, FIRST_NEEDS + SECOND_NEEDS);
  runner_gate_release(&g.r, 0);
  runner_gate_release(&g.r, 1);
  g_assert_cmpuint(g.r.gate_reserved, ==, 0);
  /* One slot fewer: leg 1 alone would fit, but not beside leg 0's room. */
  runner_gate_reset(&g.r);
  g.r.gate_limit = FIRST_NEEDS + SECOND_NEEDS - 1;
  g_assert_false(runner_gate_try_reserve(&g.r, 1, 1));
  g_assert_cmpuint(g.r.gate_reserved, ==, 0);
  gate_clear(&g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/exec-staging-order/later-leg-waits", test_later_leg_waits);
  g_test_add_func("/exec-staging-order/out-of-turn", test_out_of_turn);
  return g_test_run();
}

#endif /* ROK_WITH_OPENCL */
