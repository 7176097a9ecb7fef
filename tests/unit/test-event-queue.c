/* The future-event list: order by (time, insertion), cancel, reschedule. */
#include <glib.h>

#include "sim/event-queue.h"

static void test_ties_in_insertion_order(void) {
  RokEventQueue q;
  sim_evq_init(&q);
  sim_evq_push(&q, 5, 0, 1);
  sim_evq_push(&q, 3, 0, 2);
  sim_evq_push(&q, 5, 0, 3);
  sim_evq_push(&q, 3, 0, 4);
  sim_evq_push(&q, 5, 0, 5);
  const guint expected[] = {2, 4, 1, 3, 5};
  RokEvent e;
  for (guint i = 0; i < G_N_ELEMENTS(expected); i++) {
    g_assert_true(sim_evq_pop(&q, &e));
    g_assert_cmpuint(e.arg, ==, expected[i]);
  }
  g_assert_false(sim_evq_pop(&q, &e));
  sim_evq_clear(&q);
}

static void test_cancel_and_reschedule(void) {
  RokEventQueue q;
  sim_evq_init(&q);
  guint a = sim_evq_push(&q, 10, 0, 1);
  guint b = sim_evq_push(&q, 20, 0, 2);
  guint c = sim_evq_push(&q, 30, 0, 3);
  sim_evq_push(&q, 20, 0, 4);
  sim_evq_cancel(&q, b);
  g_assert_false(sim_evq_is_queued(&q, b));
  sim_evq_reschedule(&q, a, 25); /* after 4 (time 20) */
  sim_evq_reschedule(&q, c, 20); /* ties with 4, scheduled later */
  const guint expected[] = {4, 3, 1};
  const gint64 times[] = {20, 20, 25};
  RokEvent e;
  for (guint i = 0; i < G_N_ELEMENTS(expected); i++) {
    g_assert_true(sim_evq_pop(&q, &e));
    g_assert_cmpuint(e.arg, ==, expected[i]);
    g_assert_cmpint(e.time, ==, times[i]);
  }
  g_assert_cmpuint(sim_evq_size(&q), ==, 0);
  sim_evq_clear(&q);
}

typedef struct {
  gint64 time;
  guint64 order;
  guint id;
  gboolean live;
} Ref;

/* Random pushes, cancels and reschedules against a plain list. */
static void test_random_against_reference(void) {
  RokEventQueue q;
  sim_evq_init(&q);
  g_autoptr(GRand) rand = g_rand_new_with_seed(42);
  enum { N = 4000 };
  static Ref refs[N];
  static guint handles[N];
  guint64 order = 0;
  for (guint i = 0; i < N; i++) {
    refs[i] = (Ref){.time = g_rand_int_range(rand, 0, 500), .order = order++, .id = i, .live = TRUE};
    handles[i] = sim_evq_push(&q, refs[i].time, 7, i);
  }
  for (guint k = 0; k < N / 2; k++) {
    guint i = g_rand_int_range(rand, 0, N);
    if (!refs[i].live)
      continue;
    if (g_rand_boolean(rand)) {
      sim_evq_cancel(&q, handles[i]);
      refs[i].live = FALSE;
    } else {
      refs[i].time = g_rand_int_range(rand, 0, 500);
      refs[i].order = order++;
      sim_evq_reschedule(&q, handles[i], refs[i].time);
    }
  }
  gint64 last_time = -1;
  guint64 last_order = 0;
  guint popped = 0, live = 0;
  for (guint i = 0; i < N; i++)
    live += refs[i].live;
  RokEvent e;
  while (sim_evq_pop(&q, &e)) {
    const Ref *r = &refs[e.arg];
    g_assert_true(r->live);
    g_assert_cmpint(e.time, ==, r->time);
    g_assert_cmpuint(e.kind, ==, 7);
    g_assert_true(r->time > last_time || (r->time == last_time && r->order > last_order));
    last_time = r->time;
    last_order = r->order;
    popped++;
  }
  g_assert_cmpuint(popped, ==, live);
  /* A reset queue is reusable and hands out handles again. */
  sim_evq_reset(&q);
  guint h = sim_evq_push(&q, 1, 0, 9);
  g_assert_true(sim_evq_is_queued(&q, h));
  g_assert_true(sim_evq_peek(&q, &e));
  g_assert_cmpuint(e.arg, ==, 9);
  sim_evq_clear(&q);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/event-queue/ties", test_ties_in_insertion_order);
  g_test_add_func("/event-queue/cancel-reschedule", test_cancel_and_reschedule);
  g_test_add_func("/event-queue/random", test_random_against_reference);
  return g_test_run();
}
