/* One point of a sweep: the model at the point's micro-batch size and
 * sequence length, the machine with the point's SSDs, every strategy
 * simulated under the point's budget. */
#include "sweep-private.h"

#include "rok/core.h"
#include "rok/model.h"

gboolean sweep_strategy_needs_nvme(RokStrategy strategy) {
  return strategy == ROK_STRATEGY_OFFLOAD || strategy == ROK_STRATEGY_TBA;
}

/* "micro_batch=8, seq_len=2048: " for the axes the caller swept. */
static char *point_name(const RokSweepSpec *spec, const guint64 *at) {
  GString *name = g_string_new(NULL);
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    if (spec->swept[a])
      g_string_append_printf(name, "%s%s=%" G_GUINT64_FORMAT, name->len ? ", " : "", rok_sweep_axis_name(a), at[a]);
  return g_string_free(name, FALSE);
}

/* The config with the point's micro-batch and sequence length; the
 * micro-batches per step stay as in the config. */
static RokTrace *point_trace(const RokSweepSpec *spec, const guint64 *at, GError **error) {
  guint64 global = 0;
  if (!g_uint64_checked_mul(&global, at[ROK_SWEEP_MICRO_BATCH], spec->data_parallel) ||
      !g_uint64_checked_mul(&global, global, spec->accumulation)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "global_batch overflows");
    return NULL;
  }
  g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func(g_free);
  for (char **set = spec->sets; set != NULL && *set != NULL; set++)
    g_ptr_array_add(sets, g_strdup(*set));
  g_ptr_array_add(sets, g_strdup_printf("micro_batch=%" G_GUINT64_FORMAT, at[ROK_SWEEP_MICRO_BATCH]));
  g_ptr_array_add(sets, g_strdup_printf("global_batch=%" G_GUINT64_FORMAT, global));
  if (spec->swept[ROK_SWEEP_SEQ_LEN])
    g_ptr_array_add(sets, g_strdup_printf("seq_len=%" G_GUINT64_FORMAT, at[ROK_SWEEP_SEQ_LEN]));
  g_ptr_array_add(sets, NULL);
  g_autoptr(RokModel) model =
      rok_model_parse(spec->name, spec->text, spec->length, (const char *const *)sets->pdata, error);
  return model == NULL ? NULL : rok_trace_new_from_model(model, error);
}

static void fill_row(RokSweepRow *row, const RokSimResult *r) {
  row->gpu_memory_bytes = r->gpu_memory_bytes;
  row->fixed_bytes = r->fixed_bytes;
  row->step_time_s = r->step_time_s;
  row->tokens_per_s = r->tokens_per_s;
  row->tokens_per_gpu_s = r->tokens_per_gpu_s;
  row->model_flops_per_gpu_s = r->model_flops_per_gpu_s;
  row->mfu = r->mfu;
  row->peak_bytes = r->peak_bytes;
  row->activation_peak_bytes = r->activation_peak_bytes;
  row->nvme_write_bytes = r->nvme_write_bytes;
  row->recompute_s = (double)r->recompute_ns / 1e9;
  row->stall_s = (double)r->stall_total_ns / 1e9;
  row->fits = r->peak_bytes <= row->budget_bytes;
}

/* The figures of a plan and its run; SSDTrain's required write bandwidth
 * as the planner reports it. */
static void fill_plan_row(RokSweepRow *row, const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan,
                          const RokSimResult *r) {
  RokSsdFigures ssd;
  rok_ssd_figures(trace, hw, plan, r, NULL, &ssd);
  fill_row(row, r);
  row->required_write_bandwidth = ssd.required_write_bandwidth;
}

static gboolean run_baseline(RokSim *sim, const RokTrace *trace, const RokHw *hw, RokSweepRow *row,
                             GError **error) {
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(row->strategy, trace, hw, NULL, error);
  if (plan == NULL)
    return FALSE;
  plan->options.memory_budget = row->budget_bytes;
  g_autoptr(RokSimResult) r = rok_sim_run(sim, plan, error);
  if (r == NULL)
    return FALSE;
  fill_plan_row(row, trace, hw, plan, r);
  return TRUE;
}

/* The planner's plan for the budget; when none fits, its least-memory plan,
 * which the row then marks as not fitting. */
static gboolean run_rok(const RokTrace *trace, const RokHw *hw, RokSweepRow *row, GError **error) {
  /* A sweep plans many points: each refined as much as a curve's point. */
  RokPlannerOptions options;
  rok_planner_options_init(&options);
  options.quick = TRUE;
  options.curve_points = ROK_PLANNER_NO_GRID; /* each point planned on its own */
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, &options, error);
  if (planner == NULL)
    return FALSE;
  g_autoptr(GError) local = NULL;
  g_autoptr(RokSimResult) r = NULL;
  g_autoptr(RokStepPlan) plan = rok_planner_plan(planner, row->budget_bytes, &r, &local);
  if (plan == NULL && g_error_matches(local, ROK_ERROR, ROK_ERROR_NO_FIT)) {
    g_clear_error(&local);
    plan = rok_planner_plan(planner, rok_planner_min_budget(planner, NULL), &r, &local);
  }
  if (plan == NULL) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  fill_plan_row(row, trace, hw, plan, r);
  return TRUE;
}

static gboolean run_strategies(const RokSweepSpec *spec, const guint64 *at, GArray *rows, GError **error) {
  g_autoptr(RokTrace) trace = point_trace(spec, at, error);
  if (trace == NULL)
    return FALSE;
  g_autoptr(RokHw) hw = rok_hw_copy(spec->hw);
  hw->nvme.devices = at[ROK_SWEEP_NVME_DEVICES];
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, error);
  if (sim == NULL)
    return FALSE;
  for (guint i = 0; i < spec->strategies->len; i++) {
    RokStrategy s = g_array_index(spec->strategies, RokStrategy, i);
    if (hw->nvme.devices == 0 && sweep_strategy_needs_nvme(s))
      continue;
    RokSweepRow row = {.strategy = s,
                       .micro_batch = at[ROK_SWEEP_MICRO_BATCH],
                       .seq_len = trace->model->seq_len,
                       .nvme_devices = at[ROK_SWEEP_NVME_DEVICES],
                       .budget_bytes = at[ROK_SWEEP_BUDGET]};
    gboolean ok = s == ROK_STRATEGY_ROK ? run_rok(trace, hw, &row, error) : run_baseline(sim, trace, hw, &row, error);
    if (!ok) {
      g_prefix_error(error, "%s: ", rok_strategy_name(s));
      return FALSE;
    }
    g_array_append_val(rows, row);
  }
  return TRUE;
}

gboolean sweep_point_run(const RokSweepSpec *spec, guint index, GArray *rows, GError **error) {
  guint64 at[ROK_SWEEP_AXIS_COUNT];
  sweep_spec_point(spec, index, at);
  if (run_strategies(spec, at, rows, error))
    return TRUE;
  g_autofree char *name = point_name(spec, at);
  if (*name != '\0')
    g_prefix_error(error, "at %s: ", name);
  return FALSE;
}
