/* The planner's public entry points: a plan for a budget, a baseline at a
 * budget. */
#include "planner-private.h"

#include "rok/core.h"

/* Simulator runs for refining one plan: a budget of work, so that big
 * traces (a run costs more) get fewer. A run simulates its detailed
 * micro-batches event by event: a pipeline stage's in flight, every one
 * with virtual stages, where a search run of one stage alone has one. */
static guint polish_runs(const RokPlanner *p, gboolean curve) {
  curve = curve || p->options.quick;
  guint set = curve ? p->options.curve_polish_runs : p->options.polish_runs;
  if (set > 0)
    return set;
  double cost = (double)(p->trace->ops->len + p->n_tensors) *
                (double)rok_sim_detailed_micro_batches(p->trace, p->options.search_detail) /
                (double)MAX(p->options.search_detail, 1);
  double runs = (curve ? 4e4 : 4e5) / cost;
  return (guint)CLAMP(runs, curve ? 8 : 100, curve ? 4000 : 40000);
}

guint plan_polish_runs(const RokPlanner *p, gboolean curve) {
  return polish_runs(p, curve);
}

void plan_no_fit(RokPlanner *p, guint64 budget, GError **error) {
  const char *how = NULL;
  guint64 least = rok_planner_min_budget(p, &how);
  g_autofree char *want = rok_units_format_size(budget), *need = rok_units_format_size(least);
  if (g_strcmp0(want, need) == 0) { /* three digits cannot tell them apart */
    g_free(want);
    g_free(need);
    want = g_strdup_printf("%" G_GUINT64_FORMAT " bytes", budget);
    need = g_strdup_printf("%" G_GUINT64_FORMAT " bytes", least);
  }
  g_set_error(error, ROK_ERROR, ROK_ERROR_NO_FIT, "no plan fits in %s: the smallest that fits is %s (%s)", want, need,
              how ? how : "");
}

RokStepPlan *rok_planner_plan(RokPlanner *p, guint64 budget, RokSimResult **result, GError **error) {
  PlanChoice choice; /* none below the least budget: asked after the planners are prepared, in threads */
  if (!plan_choose(p, budget, &choice)) {
    plan_no_fit(p, budget, error);
    return NULL;
  }
  RokStepPlan *plan = plan_choice_plan(p, &choice);
  plan_choice_clear(&choice);
  if (result != NULL && (*result = rok_sim_run(p->sim, plan, error)) == NULL) {
    rok_step_plan_free(plan);
    return NULL;
  }
  return plan;
}

RokStepPlan *rok_planner_plan_or_least(RokPlanner *p, guint64 budget, gboolean *fits_nowhere, GError **error) {
  g_autoptr(GError) local = NULL;
  RokStepPlan *plan = rok_planner_plan(p, budget, NULL, &local);
  gboolean nowhere = plan == NULL && g_error_matches(local, ROK_ERROR, ROK_ERROR_NO_FIT);
  if (fits_nowhere != NULL)
    *fits_nowhere = nowhere;
  if (nowhere) {
    g_clear_error(&local);
    plan = rok_planner_plan(p, rok_planner_min_budget(p, NULL), NULL, &local);
  }
  if (plan == NULL)
    g_propagate_error(error, g_steal_pointer(&local));
  return plan;
}

RokStepPlan *rok_planner_baseline(RokPlanner *p, RokStrategy strategy, guint64 budget, RokSimResult **result,
                                 GError **error) {
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(strategy, p->trace, p->hw, &p->options.strategy, error);
  if (plan == NULL)
    return NULL;
  plan->options.memory_budget = budget;
  if (result != NULL && (*result = rok_sim_run(p->sim, plan, error)) == NULL)
    return NULL;
  return g_steal_pointer(&plan);
}
