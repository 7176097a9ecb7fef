/* rok_validate: plan the rows, run each schedule, set what was measured
 * beside what was predicted (rok/validate.h). */
#include <math.h>
#include <stdlib.h>

#include "validate-private.h"
#include "rok/core.h"
#include "rok/schedule.h"
#include "rok/sim.h"

void rok_validate_options_init(RokValidateOptions *options) {
  *options = (RokValidateOptions){.budgets = ROK_VALIDATE_DEFAULT_BUDGETS,
                                  .baselines = TRUE,
                                  .offload_min_elements = ROK_VALIDATE_OFFLOAD_MIN_ELEMENTS,
                                  .rounds = ROK_VALIDATE_DEFAULT_ROUNDS};
  rok_exec_options_init(&options->exec);
  options->exec.repeat = ROK_VALIDATE_DEFAULT_REPEAT;
}

static void row_free(gpointer data) {
  RokValidateRow *row = data;
  g_free(row->strategy);
  rok_exec_report_free(row->report);
  if (row->parts != NULL)
    g_array_unref(row->parts);
  if (row->step_times_s != NULL)
    g_array_unref(row->step_times_s);
  if (row->predicted_at_speed_by_round_s != NULL)
    g_array_unref(row->predicted_at_speed_by_round_s);
  if (row->kernel_speed_before != NULL)
    g_array_unref(row->kernel_speed_before);
  g_free(row->schedule);
  g_free(row);
}

RokValidation *validate_new(const RokTrace *trace, const RokHw *hw) {
  RokValidation *v = g_new0(RokValidation, 1);
  v->model = g_strdup(trace->model_name);
  v->hw = g_strdup(hw->name);
  v->rows = g_ptr_array_new_with_free_func(row_free);
  v->notes = g_ptr_array_new_with_free_func(g_free);
  v->parts = validate_parts_new();
  for (guint i = 0; i < 3; i++)
    v->load_before[i] = v->load_after[i] = -1;
  v->cpus = g_get_num_processors();
  v->copies_on_cpus = hw->gpu.shared_cpus > 0;
  v->calibrated_busy = hw->calibrated_busy;
  return v;
}

void rok_validation_free(RokValidation *v) {
  if (v == NULL)
    return;
  g_free(v->model);
  g_free(v->hw);
  g_free(v->device);
  g_ptr_array_unref(v->rows);
  g_ptr_array_unref(v->notes);
  g_array_unref(v->parts);
  g_free(v);
}

/* ---- the rows to run ---- */

static void planned_free(gpointer data) {
  RokValidatePlanned *p = data;
  rok_step_plan_free(p->plan);
  g_free(p);
}

static void add_planned(GPtrArray *out, RokStrategy strategy, guint64 budget, RokStepPlan *plan) {
  RokValidatePlanned *p = g_new0(RokValidatePlanned, 1);
  *p = (RokValidatePlanned){.strategy = strategy, .budget = budget, .plan = plan};
  g_ptr_array_add(out, p);
}

/* Every baseline under the device's memory; one that does not apply here
 * (no SSDs) is noted and left out. Gives the peak of keeping everything. */
static gboolean plan_baselines(RokPlanner *planner, const RokHw *hw, gboolean add, GPtrArray *out,
                               RokValidation *v, guint64 *keep_peak, GError **error) {
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    GError *local = NULL;
    g_autoptr(RokSimResult) result = NULL;
    RokStepPlan *plan = rok_planner_baseline(planner, b, hw->gpu.memory, &result, &local);
    if (plan == NULL && local->code == ROK_ERROR_INPUT && b != ROK_STRATEGY_KEEP) {
      g_ptr_array_add(v->notes, g_strdup_printf("%s left out: %s", rok_strategy_name(b), local->message));
      g_error_free(local);
      continue;
    }
    if (plan == NULL) {
      g_propagate_prefixed_error(error, local, "planning %s: ", rok_strategy_name(b));
      return FALSE;
    }
    if (b == ROK_STRATEGY_KEEP)
      *keep_peak = result->peak_bytes;
    if (add && result->peak_bytes <= hw->gpu.memory)
      add_planned(out, b, hw->gpu.memory, plan);
    else {
      if (add)
        g_ptr_array_add(v->notes, g_strdup_printf("%s left out: it does not fit in the device's memory",
                                                  rok_strategy_name(b)));
      rok_step_plan_free(plan);
    }
  }
  return TRUE;
}

/* The planner from the smallest budget any plan fits, in even steps up to
 * (not including) the peak of keeping everything. */
static gboolean plan_budgets(RokPlanner *planner, guint n, guint64 keep_peak, GPtrArray *out, GError **error) {
  const char *how = NULL;
  guint64 least = rok_planner_min_budget(planner, &how);
  guint64 span = keep_peak > least ? keep_peak - least : 0;
  for (guint i = 0; i < n; i++) {
    guint64 budget = least + (guint64)((double)span * i / n);
    if (i > 0 && span == 0)
      break;
    g_autoptr(RokSimResult) result = NULL;
    RokStepPlan *plan = rok_planner_plan(planner, budget, &result, error);
    if (plan == NULL) {
      g_autofree char *size = rok_units_format_size(budget);
      g_prefix_error(error, "planning for %s: ", size);
      return FALSE;
    }
    add_planned(out, ROK_STRATEGY_ROK, budget, plan);
  }
  return TRUE;
}

GPtrArray *validate_plan_rows(const RokTrace *trace, const RokHw *hw, const RokValidateOptions *o,
                                  RokValidation *v, GError **error) {
  RokPlannerOptions popts;
  rok_planner_options_init(&popts);
  popts.threads = o->planner_threads;
  popts.strategy.offload_min_elements = o->offload_min_elements;
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, &popts, error);
  if (planner == NULL)
    return NULL;
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(planned_free);
  guint64 keep_peak = 0;
  if (!plan_baselines(planner, hw, o->baselines, out, v, &keep_peak, error) ||
      !plan_budgets(planner, o->budgets, keep_peak, out, error))
    return NULL;
  return g_steal_pointer(&out);
}
