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

static gboolean layout_swept(const RokSweepSpec *spec) {
  return spec->gpus > 0 || spec->swept[ROK_SWEEP_TENSOR_PARALLEL] || spec->swept[ROK_SWEEP_PIPELINE_PARALLEL] ||
         spec->swept[ROK_SWEEP_VIRTUAL_STAGES];
}

/* The point's data-parallel degree: the GPUs over t · p, or the config's. */
static gboolean point_data_parallel(const RokSweepSpec *spec, const guint64 *at, guint64 *dp, GError **error) {
  *dp = spec->data_parallel;
  if (spec->gpus == 0)
    return TRUE;
  guint64 tp = at[ROK_SWEEP_TENSOR_PARALLEL] * at[ROK_SWEEP_PIPELINE_PARALLEL];
  if (spec->gpus % tp != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "%" G_GUINT64_FORMAT " GPUs do not split into tensor_parallel × pipeline_parallel = %" G_GUINT64_FORMAT,
                spec->gpus, tp);
    return FALSE;
  }
  *dp = spec->gpus / tp;
  return TRUE;
}

/* The config at the point: its micro-batch, sequence length and layout.
 * Without layout axes the micro-batches per step stay as in the config;
 * with them the global batch does. */
static RokModel *point_model(const RokSweepSpec *spec, const guint64 *at, GError **error) {
  guint64 global = spec->global_batch, dp = 0;
  if (!point_data_parallel(spec, at, &dp, error))
    return NULL;
  if (!layout_swept(spec) && (!g_uint64_checked_mul(&global, at[ROK_SWEEP_MICRO_BATCH], dp) ||
                              !g_uint64_checked_mul(&global, global, spec->accumulation))) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "global_batch overflows");
    return NULL;
  }
  g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(sets, g_strdup_printf("micro_batch=%" G_GUINT64_FORMAT, at[ROK_SWEEP_MICRO_BATCH]));
  g_ptr_array_add(sets, g_strdup_printf("global_batch=%" G_GUINT64_FORMAT, global));
  if (spec->swept[ROK_SWEEP_SEQ_LEN])
    g_ptr_array_add(sets, g_strdup_printf("seq_len=%" G_GUINT64_FORMAT, at[ROK_SWEEP_SEQ_LEN]));
  if (layout_swept(spec)) {
    g_ptr_array_add(sets, g_strdup_printf("tensor_parallel=%" G_GUINT64_FORMAT, at[ROK_SWEEP_TENSOR_PARALLEL]));
    g_ptr_array_add(sets, g_strdup_printf("pipeline_parallel=%" G_GUINT64_FORMAT, at[ROK_SWEEP_PIPELINE_PARALLEL]));
    g_ptr_array_add(sets, g_strdup_printf("virtual_stages=%" G_GUINT64_FORMAT, at[ROK_SWEEP_VIRTUAL_STAGES]));
    g_ptr_array_add(sets, g_strdup_printf("data_parallel=%" G_GUINT64_FORMAT, dp));
  }
  g_ptr_array_add(sets, NULL);
  return rok_model_source_load(spec->model, (const char *const *)sets->pdata, error);
}

/* Every pipeline stage's trace at the point (one without pipelining). */
static GPtrArray *point_traces(const RokSweepSpec *spec, const guint64 *at, GError **error) {
  g_autoptr(RokModel) model = point_model(spec, at, error);
  return model == NULL ? NULL : rok_trace_new_stages(model, error);
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
  row->bubble_s = (double)r->bubble_ns / 1e9;
  row->exposed_comm_s = (double)r->exposed_comm_ns / 1e9;
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

void sweep_chain_clear(SweepChain *chain) {
  chain->no_fit = FALSE;
  g_clear_pointer(&chain->least, g_ptr_array_unref);
}

/* The plan the chain's last point reported for this stage, if it fits
 * this trace. */
static const RokStepPlan *chain_plan(const SweepChain *chain, guint stage, const RokTrace *trace) {
  if (chain == NULL || chain->least == NULL || stage >= chain->least->len)
    return NULL;
  const RokStepPlan *plan = g_ptr_array_index(chain->least, stage);
  return plan->n_tensors == trace->tensors->len ? plan : NULL;
}

/* One stage's plan under the row's strategy and budget (when none fits,
 * the plan for the least budget, or past the chain's first such point a
 * least-memory plan: `*fits_nowhere` says so). */
static RokStepPlan *stage_plan(const RokTrace *trace, const RokHw *hw, const RokSweepRow *row,
                               const SweepChain *chain, guint stage, gboolean *fits_nowhere, GError **error) {
  if (row->strategy != ROK_STRATEGY_ROK) {
    RokStepPlan *plan = rok_strategy_plan(row->strategy, trace, hw, NULL, error);
    if (plan != NULL)
      plan->options.memory_budget = row->budget_bytes;
    return plan;
  }
  RokPlannerOptions options;
  rok_planner_options_init(&options);
  options.quick = TRUE;
  options.curve_points = ROK_PLANNER_NO_GRID; /* each point planned on its own */
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, &options, error);
  if (planner == NULL)
    return NULL;
  if (chain != NULL && chain->no_fit) {
    *fits_nowhere = TRUE;
    return rok_planner_least_memory(planner, chain_plan(chain, stage, trace));
  }
  gboolean nowhere = FALSE; /* told by the plan: asking first would run the least-memory search on this thread */
  RokStepPlan *plan = rok_planner_plan_or_least(planner, row->budget_bytes, &nowhere, error);
  *fits_nowhere |= nowhere;
  return plan;
}

/* A point whose plan fits nowhere: the next in the chain need not search. */
static void chain_note(SweepChain *chain, gboolean fits_nowhere, GPtrArray *plans) {
  if (chain == NULL || !fits_nowhere)
    return;
  chain->no_fit = TRUE;
  g_clear_pointer(&chain->least, g_ptr_array_unref);
  chain->least = g_ptr_array_ref(plans);
}

/* The planner's plan for the budget; when none fits, the stage_plan
 * above, which the row then marks as not fitting. */
static gboolean run_rok(const RokTrace *trace, const RokHw *hw, SweepChain *chain, RokSweepRow *row,
                        GError **error) {
  gboolean fits_nowhere = FALSE;
  RokStepPlan *plan = stage_plan(trace, hw, row, chain, 0, &fits_nowhere, error);
  if (plan == NULL)
    return FALSE;
  g_autoptr(GPtrArray) plans = g_ptr_array_new_with_free_func((GDestroyNotify)rok_step_plan_free);
  g_ptr_array_add(plans, plan);
  g_autoptr(RokSimResult) r = rok_simulate(trace, hw, plan, error);
  if (r == NULL)
    return FALSE;
  fill_plan_row(row, trace, hw, plan, r);
  chain_note(chain, fits_nowhere, plans);
  return TRUE;
}

/* Every stage planned, the pipeline composed; the row has its step and
 * the figures of the stage with the highest peak. */
static gboolean run_pipeline(GPtrArray *traces, const RokHw *hw, SweepChain *chain, RokSweepRow *row,
                             GError **error) {
  guint n = traces->len;
  g_autoptr(GPtrArray) plans = g_ptr_array_new_with_free_func((GDestroyNotify)rok_step_plan_free);
  gboolean fits_nowhere = FALSE;
  for (guint s = 0; s < n; s++) {
    RokStepPlan *plan = stage_plan(g_ptr_array_index(traces, s), hw, row, chain, s, &fits_nowhere, error);
    if (plan == NULL) {
      g_prefix_error(error, "stage %u: ", s);
      return FALSE;
    }
    g_ptr_array_add(plans, plan);
  }
  g_autofree RokSimResult **results = g_new0(RokSimResult *, n);
  if (!rok_pipeline_simulate((RokTrace *const *)traces->pdata, hw, (RokStepPlan *const *)plans->pdata, n, FALSE,
                             results, error))
    return FALSE;
  guint worst = 0;
  gboolean fits = TRUE;
  for (guint s = 0; s < n; s++) {
    fits &= results[s]->peak_bytes <= row->budget_bytes;
    if (results[s]->peak_bytes > results[worst]->peak_bytes)
      worst = s;
  }
  fill_plan_row(row, g_ptr_array_index(traces, worst), hw, g_ptr_array_index(plans, worst), results[worst]);
  row->fits = fits;
  /* The pipeline's per-GPU FLOP/s and MFU: the mean over its stages' GPUs. */
  row->model_flops_per_gpu_s = row->mfu = 0;
  for (guint s = 0; s < n; s++) {
    row->model_flops_per_gpu_s += results[s]->model_flops_per_gpu_s / n;
    row->mfu += results[s]->mfu / n;
  }
  for (guint s = 0; s < n; s++)
    rok_sim_result_free(results[s]);
  if (row->strategy == ROK_STRATEGY_ROK)
    chain_note(chain, fits_nowhere, plans);
  return TRUE;
}

static gboolean run_strategies(const RokSweepSpec *spec, const guint64 *at, SweepChain *chain, GArray *rows,
                               GError **error) {
  g_autoptr(GPtrArray) traces = point_traces(spec, at, error);
  if (traces == NULL)
    return FALSE;
  const RokTrace *trace = g_ptr_array_index(traces, 0);
  g_autoptr(RokHw) hw = rok_hw_copy(spec->hw);
  hw->nvme.devices = at[ROK_SWEEP_NVME_DEVICES];
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, error);
  if (sim == NULL)
    return FALSE;
  const RokModel *m = trace->model;
  for (guint i = 0; i < spec->strategies->len; i++) {
    RokStrategy s = g_array_index(spec->strategies, RokStrategy, i);
    if (hw->nvme.devices == 0 && sweep_strategy_needs_nvme(s))
      continue;
    RokSweepRow row = {.strategy = s,
                       .tensor_parallel = m->tensor_parallel,
                       .pipeline_parallel = m->pipeline_parallel,
                       .data_parallel = m->data_parallel,
                       .virtual_stages = m->virtual_stages,
                       .micro_batch = at[ROK_SWEEP_MICRO_BATCH],
                       .seq_len = m->seq_len,
                       .nvme_devices = at[ROK_SWEEP_NVME_DEVICES],
                       .budget_bytes = at[ROK_SWEEP_BUDGET]};
    gboolean ok = traces->len > 1        ? run_pipeline(traces, hw, chain, &row, error)
                  : s == ROK_STRATEGY_ROK ? run_rok(trace, hw, chain, &row, error)
                                          : run_baseline(sim, trace, hw, &row, error);
    if (!ok) {
      g_prefix_error(error, "%s: ", rok_strategy_name(s));
      return FALSE;
    }
    if (layout_swept(spec)) /* layouts compare by what the whole job trains */
      row.tokens_per_s *= (double)row.data_parallel;
    g_array_append_val(rows, row);
  }
  return TRUE;
}

gboolean sweep_point_run(const RokSweepSpec *spec, guint index, SweepChain *chain, GArray *rows, GError **error) {
  guint64 at[ROK_SWEEP_AXIS_COUNT];
  sweep_spec_point(spec, index, at);
  if (run_strategies(spec, at, chain, rows, error))
    return TRUE;
  g_autofree char *name = point_name(spec, at);
  if (*name != '\0')
    g_prefix_error(error, "at %s: ", name);
  return FALSE;
}
