/* What every simulated step's log obeys, for the simulator's tests:
 * every action's dependencies come before it and have ended by its
 * start; the d2h, h2d and compute streams run one action at a time, an
 * SSD stream starts its legs in order and runs at most ROK_SSD_LANES at
 * once. */
#pragma once

#include <glib.h>

#include "rok/sim.h"

static inline void test_sim_check_log(const RokSimResult *r) {
  gint64 end[ROK_STREAM_ALL_COUNT] = {0}, start[ROK_STREAM_ALL_COUNT] = {0};
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *a = &g_array_index(r->actions, RokAction, i);
    g_assert_cmpint(a->start_ns, <=, a->end_ns);
    for (guint d = 0; d < a->deps_count; d++) {
      guint dep = g_array_index(r->deps, guint, a->deps_first + d);
      g_assert_cmpuint(dep, <, i);
      g_assert_cmpint(g_array_index(r->actions, RokAction, dep).end_ns, <=, a->start_ns);
    }
    if (a->kind == ROK_ACTION_FREE)
      continue;
    if (a->stream != ROK_STREAM_NVME_WRITE && a->stream != ROK_STREAM_NVME_READ) {
      g_assert_cmpint(a->start_ns, >=, end[a->stream]);
      end[a->stream] = a->end_ns;
      continue;
    }
    g_assert_cmpint(a->start_ns, >=, start[a->stream]);
    start[a->stream] = a->start_ns;
    guint beside = 0;
    for (guint k = i; k-- > 0;) {
      const RokAction *b = &g_array_index(r->actions, RokAction, k);
      beside += b->kind != ROK_ACTION_FREE && b->stream == a->stream && b->end_ns > a->start_ns;
    }
    g_assert_cmpuint(beside, <, ROK_SSD_LANES);
  }
}
