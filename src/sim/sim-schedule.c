/* The producing side of the schedule: a plan simulated with every
 * micro-batch in detail, its action log becoming the program. */
#include "rok/sim.h"

RokSchedule *rok_sim_schedule_new(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const char *strategy,
                                  guint64 budget_bytes, GError **error) {
  g_autoptr(RokStepPlan) run = rok_step_plan_copy(plan);
  run->options.detail_micro_batches = (guint)MAX(trace->micro_batches_per_step, 1);
  g_autoptr(RokSimResult) result = rok_simulate_recorded(trace, hw, run, error);
  if (result == NULL)
    return NULL;
  return rok_schedule_new(trace, hw, run, strategy, budget_bytes, rok_sim_result_to_json(result, trace),
                          g_steal_pointer(&result->actions), g_steal_pointer(&result->deps));
}
