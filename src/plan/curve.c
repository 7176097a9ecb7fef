/* The ROK curve: the planner's step time for budgets from the smallest
 * that fits to the peak of keeping everything.
 *
 * Budgets rise evenly; each point is exactly the plan rok_planner_plan()
 * returns at its budget (planner-grid.c): the best of the plans for it and
 * every smaller budget of the grid, on this machine and on the same one
 * with fewer tiers, so more memory never makes the plan slower (beyond the
 * wear tolerance, where a plan writing less to the SSDs is preferred). The
 * baselines are simulated once each, unbounded, as labelled points. */
#include "planner-private.h"

#include "rok/core.h"

void rok_curve_free(RokCurve *curve) {
  if (curve == NULL)
    return;
  g_free(curve->model_name);
  g_free(curve->hw_name);
  g_clear_pointer(&curve->points, g_array_unref);
  g_free(curve);
}

static void point_from(const RokPlanner *p, const guint8 *d, const PlanEval *e, RokCurvePoint *pt) {
  const RokTrace *trace = p->trace;
  guint64 fixed = rok_fixed_memory_bytes(&trace->fixed);
  pt->step_time_s = (double)e->step_ns / 1e9;
  pt->tokens_per_s = e->step_ns > 0 ? (double)trace->tokens_per_micro_batch *
                                          (double)MAX(trace->micro_batches_per_step, 1) / pt->step_time_s
                                    : 0;
  pt->peak_bytes = e->peak;
  pt->activation_peak_bytes = e->peak > fixed ? e->peak - fixed : 0;
  memset(pt->decision_bytes, 0, sizeof pt->decision_bytes);
  for (guint t = 0; t < p->n_tensors; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (rok_tensor_is_saved(tensor))
      pt->decision_bytes[plan_decision_of(p, d, t)] += tensor->bytes;
  }
}

static void add_baselines(RokPlanner *p, RokCurve *curve) {
  const PlanBaseline *bases = plan_baselines(p);
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    if (bases[b].decisions == NULL || !bases[b].final.valid)
      continue;
    curve->has_baseline[b] = TRUE;
    RokCurvePoint *pt = &curve->baselines[b];
    point_from(p, bases[b].decisions, &bases[b].final, pt);
    pt->budget_bytes = bases[b].final.peak;
    pt->source = b;
  }
}

static RokCurve *curve_new(RokPlanner *p) {
  RokCurve *curve = g_new0(RokCurve, 1);
  const RokFixedMemory *f = &p->trace->fixed;
  curve->model_name = g_strdup(p->trace->model_name);
  curve->hw_name = g_strdup(p->hw->name);
  curve->fixed_bytes = rok_fixed_memory_bytes(f);
  curve->gpu_memory_bytes = p->hw->gpu.memory;
  curve->replica_gpus = rok_trace_replica_gpus(p->trace);
  curve->model_flops_per_step = rok_trace_model_flops(p->trace) * (double)MAX(p->trace->micro_batches_per_step, 1);
  curve->peak_flops = p->hw->gpu.peak_flops;
  curve->points = g_array_new(FALSE, TRUE, sizeof(RokCurvePoint));
  return curve;
}

RokCurve *rok_planner_curve(RokPlanner *p, guint points, RokProgressFunc progress, gpointer user_data,
                            GError **error) {
  if (points < 2 || points > ROK_CURVE_MAX_POINTS) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "a curve has 2 to %d points, not %u", ROK_CURVE_MAX_POINTS, points);
    return NULL;
  }
  RokCurve *curve = curve_new(p);
  add_baselines(p, curve);
  g_autofree guint64 *budgets = g_new(guint64, points);
  g_autofree PlanChoice *found = g_new0(PlanChoice, points);
  /* The grid spans these two; the least budget is known once the planners
   * are prepared, in threads. */
  guint n = plan_grid_curve(p, points, progress, user_data, found, budgets);
  curve->min_budget = rok_planner_min_budget(p, NULL);
  curve->keep_budget = curve->has_baseline[ROK_STRATEGY_KEEP] ? curve->baselines[ROK_STRATEGY_KEEP].peak_bytes
                                                               : curve->min_budget;
  for (guint i = 0; i < n; i++) {
    if (found[i].decisions == NULL)
      continue;
    RokCurvePoint pt = {.budget_bytes = budgets[i], .source = found[i].source};
    point_from(p, found[i].decisions, &found[i].eval, &pt);
    g_array_append_val(curve->points, pt);
    plan_choice_clear(&found[i]);
  }
  return curve;
}
