/* A schedule's life: made from its parts (by the simulator), freed. */
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
  g_free(s->source_name);
  g_clear_pointer(&s->source, g_bytes_unref);
  g_clear_pointer(&s->elements, g_array_unref);
  g_free(s);
}

RokSchedule *rok_schedule_new(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const char *strategy,
                              guint64 budget_bytes, json_object *predicted, GArray *actions, GArray *deps) {
  RokSchedule *s = g_new0(RokSchedule, 1);
  s->strategy = g_strdup(strategy);
  s->trace = trace;
  s->hw = hw;
  s->trace_sha256 = rok_trace_sha256(trace, NULL);
  s->budget_bytes = budget_bytes;
  s->plan = rok_step_plan_copy(plan);
  s->predicted = predicted;
  s->actions = actions;
  s->deps = deps;
  return s;
}
