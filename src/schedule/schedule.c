/* Making a schedule: the simulator's action log of a plan, every
 * micro-batch in detail. */
#include "rok/schedule.h"

#include "rok/core.h"
#include "schedule-private.h"

void rok_schedule_free(RokSchedule *s) {
  if (s == NULL)
    return;
  g_free(s->strategy);
  g_free(s->trace_sha256);
  rok_step_plan_free(s->plan);
  if (s->predicted != NULL)
    json_object_put(s->predicted);
  g_clear_pointer(&s->actions, g_array_unref);
  g_clear_pointer(&s->deps, g_array_unref);
  rok_trace_free(s->owned_trace);
  rok_hw_free(s->owned_hw);
  g_free(s);
}

char *schedule_trace_sha256(const RokTrace *trace, char **text) {
  json_object *doc = rok_trace_to_json(trace);
  char *canonical = rok_json_to_string(doc);
  json_object_put(doc);
  char *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, canonical, -1);
  if (text != NULL)
    *text = canonical;
  else
    g_free(canonical);
  return hash;
}

RokSchedule *rok_schedule_new(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const char *strategy,
                              guint64 budget_bytes, GError **error) {
  g_autoptr(RokStepPlan) run = rok_step_plan_copy(plan);
  run->options.record = TRUE;
  run->options.detail_micro_batches = (guint)MAX(trace->micro_batches_per_step, 1);
  g_autoptr(RokSimResult) result = rok_simulate(trace, hw, run, error);
  if (result == NULL)
    return NULL;
  RokSchedule *s = g_new0(RokSchedule, 1);
  s->strategy = g_strdup(strategy);
  s->trace = trace;
  s->hw = hw;
  s->trace_sha256 = rok_trace_sha256(trace, NULL);
  s->budget_bytes = budget_bytes;
  run->options.record = FALSE;
  s->plan = g_steal_pointer(&run);
  s->predicted = rok_sim_result_to_json(result, trace);
  s->actions = g_steal_pointer(&result->actions);
  s->deps = g_steal_pointer(&result->deps);
  return s;
}
