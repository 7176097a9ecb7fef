/* The action log and the memory samples, kept only when a run records. */
#include "sim-private.h"

guint sim_record_action(SimEngine *e, RokActionKind kind, RokStream stream, guint mb, guint op, guint tensor,
                        guint64 bytes) {
  RokAction action = {.kind = kind, .stream = stream, .micro_batch = mb, .op = op, .tensor = tensor,
                         .bytes = bytes, .start_ns = e->now, .end_ns = e->now, .deps_first = e->deps->len};
  g_array_append_val(e->actions, action);
  return e->actions->len - 1;
}

/* Dependencies of an action are added right after it begins, so they are
 * contiguous; duplicates are skipped ("none", inline in engine.h). */
void sim_record_dep_of(SimEngine *e, guint action, guint dep) {
  RokAction *a = &g_array_index(e->actions, RokAction, action);
  g_assert(a->deps_first + a->deps_count == e->deps->len && dep < action);
  for (guint i = 0; i < a->deps_count; i++)
    if (g_array_index(e->deps, guint, a->deps_first + i) == dep)
      return;
  g_array_append_val(e->deps, dep);
  a->deps_count++;
}

void sim_record_end_of(SimEngine *e, guint action) {
  g_array_index(e->actions, RokAction, action).end_ns = e->now;
}

void sim_record_gpudirect(SimEngine *e, guint action) {
  if (action != ROK_NO_ID)
    g_array_index(e->actions, RokAction, action).gpudirect = TRUE;
}

/* One sample per instant: a later change at the same time overwrites. */
void sim_record_memory(SimEngine *e) {
  RokSimSample sample = {.time_ns = e->now, .gpu_bytes = e->live, .staging_bytes = e->staging_used};
  GArray *samples = e->samples;
  if (samples->len > 0 && g_array_index(samples, RokSimSample, samples->len - 1).time_ns == e->now)
    g_array_index(samples, RokSimSample, samples->len - 1) = sample;
  else
    g_array_append_val(samples, sample);
}
