/* Running a search: the bounds of every layout (phase 1), then the planner
 * at the points that may matter (phase 2), both through the farm, results
 * stored by index. */
#include <math.h>
#include <string.h>

#include "farm.h"
#include "search-private.h"
#include "rok/core.h"
#include "rok/model.h"

typedef struct {
  double step_time_s, replica_tokens_per_s;
  guint64 fixed_bytes;
} Bound;

typedef struct {
  double step_time_s, replica_tokens_per_s;
  guint64 peak_bytes;
  guint32 fits, ssd_limited;
  guint64 decision_bytes[ROK_DECISION_COUNT];
  guint64 nvme_write_bytes;
  double lifetime_years;
  /* then the summary's text */
} Planned;

typedef struct {
  const RokSearchSpec *spec;
  GArray *layouts; /* RokLayout */
  guint modes;     /* 1 or 2 */
  gboolean only_offload; /* with one mode: which */
  RokSearch *search;
  GError **errors; /* per task of the running phase */
  guint *position; /* phase 2: each task's place in the order */
  guint *order;
  gboolean *ran;
} Run;

const char *rok_search_status_name(RokSearchStatus status) {
  static const char *const names[] = {"planned", "pruned-memory", "pruned-bound"};
  g_return_val_if_fail((guint)status < ROK_SEARCH_STATUS_COUNT, "?");
  return names[status];
}

static const RokLayout *layout_of(const Run *run, guint layout) {
  return &g_array_index(run->layouts, RokLayout, layout);
}

static RokSearchRow *row_of(const Run *run, guint task) {
  return &g_array_index(run->search->rows, RokSearchRow, task);
}

/* ---- Every stage of a point ---- */

static void free_results(RokSimResult **results, guint n) {
  for (guint s = 0; s < n; s++)
    g_clear_pointer(&results[s], rok_sim_result_free);
}

/* Every stage's step under its plan; with more than one stage the
 * pipeline composed (each result then carries the pipeline's step). */
static gboolean run_stages(GPtrArray *traces, const RokHw *hw, RokStepPlan *const *plans, RokSimResult **results,
                           GError **error) {
  if (traces->len > 1)
    return rok_pipeline_simulate((RokTrace *const *)traces->pdata, hw, plans, traces->len, FALSE, results, error);
  results[0] = rok_simulate(g_ptr_array_index(traces, 0), hw, plans[0], error);
  return results[0] != NULL;
}

static void free_plans(RokStepPlan **plans, guint n) {
  for (guint s = 0; s < n; s++)
    g_clear_pointer(&plans[s], rok_step_plan_free);
  g_free(plans);
}

/* ---- Phase 1: compute alone ---- */

static GBytes *bound_work(guint task, gpointer data, GError **error) {
  const Run *run = data;
  g_autoptr(GPtrArray) traces = search_layout_traces(run->spec, layout_of(run, task), error);
  if (traces == NULL)
    return NULL;
  guint n = traces->len;
  RokStepPlan **keep = g_new0(RokStepPlan *, n);
  for (guint s = 0; s < n; s++) {
    keep[s] = rok_step_plan_new(g_ptr_array_index(traces, s));
    keep[s]->options.memory_budget = G_MAXUINT64; /* no memory wait: compute alone */
  }
  g_autofree RokSimResult **r = g_new0(RokSimResult *, n);
  gboolean ok = run_stages(traces, run->spec->hw, keep, r, error);
  free_plans(keep, n);
  if (!ok)
    return NULL;
  Bound b = {.step_time_s = r[0]->step_time_s, .replica_tokens_per_s = r[0]->tokens_per_s};
  for (guint s = 0; s < n; s++)
    b.fixed_bytes = MAX(b.fixed_bytes, r[s]->fixed_bytes);
  free_results(r, n);
  return g_bytes_new(&b, sizeof b);
}

static void bound_done(guint task, GBytes *result, GError *error, gpointer data) {
  Run *run = data;
  if (result == NULL) {
    run->errors[task] = error;
    return;
  }
  Bound b;
  memcpy(&b, g_bytes_get_data(result, NULL), sizeof b);
  g_bytes_unref(result);
  const RokLayout *l = layout_of(run, task);
  for (guint m = 0; m < run->modes; m++) {
    RokSearchRow *row = row_of(run, task * run->modes + m);
    row->layout = *l;
    row->offload = run->modes == 1 ? run->only_offload : m == 1;
    row->fixed_bytes = b.fixed_bytes;
    row->bound_step_time_s = b.step_time_s;
    row->bound_tokens_per_s = b.replica_tokens_per_s * (double)l->data;
    row->status = b.fixed_bytes > run->search->gpu_memory_bytes ? ROK_SEARCH_PRUNED_MEMORY : ROK_SEARCH_PLANNED;
  }
}

/* ---- Phase 2: the planner ---- */

static void count_decisions(const RokTrace *trace, const RokStepPlan *plan, guint64 *bytes) {
  memset(bytes, 0, sizeof(guint64) * ROK_DECISION_COUNT);
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (rok_tensor_is_saved(tensor))
      bytes[plan->decisions[t]] += tensor->bytes;
  }
}

/* The planner's plan within the GPU's memory; when none fits, its
 * least-memory plan (marked as not fitting). */
static RokStepPlan *plan_point(const RokTrace *trace, const RokHw *hw, gboolean offload, gboolean nvme,
                               GError **error) {
  RokPlannerOptions options;
  rok_planner_options_init(&options);
  options.quick = TRUE;
  options.threads = 1;
  options.use_nvme = offload && nvme;
  if (!offload)
    options.host_memory = 0;
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, &options, error);
  if (planner == NULL)
    return NULL;
  return rok_planner_plan_or_least(planner, hw->gpu.memory, NULL, error);
}

/* One stage's plan: keep everything when that fits (compute alone:
 * nothing is faster; it spares the planner most stages of a pipeline),
 * else the planner's. */
static RokStepPlan *stage_plan(const RokTrace *trace, const RokHw *hw, gboolean offload, gboolean nvme,
                               GError **error) {
  g_autoptr(RokStepPlan) keep = rok_step_plan_new(trace);
  keep->options.memory_budget = hw->gpu.memory;
  g_autoptr(RokSimResult) r = rok_simulate(trace, hw, keep, error);
  if (r == NULL)
    return NULL;
  if (r->peak_bytes <= hw->gpu.memory)
    return g_steal_pointer(&keep);
  return plan_point(trace, hw, offload, nvme, error);
}

/* The stages' SSD figures under the composed step; TRUE when a stage that
 * writes to its SSDs wears them out sooner than the floor. */
static gboolean under_floor(const RokSearchSpec *spec, GPtrArray *traces, RokStepPlan *const *plans,
                            RokSimResult *const *r, guint s, RokSsdFigures *ssd) {
  RokSsdModel wear;
  rok_ssd_model_init(&wear);
  rok_ssd_figures(g_ptr_array_index(traces, s), spec->hw, plans[s], r[s], &wear, ssd);
  return spec->min_lifetime_years > 0 && r[s]->nvme_write_bytes > 0 && !(ssd->lifetime_years >= spec->min_lifetime_years);
}

/* Every stage planned and composed; the stages whose SSDs wear out sooner
 * than the floor under the composed step planned again without them, and
 * the pipeline composed again. */
static gboolean plan_stages(const RokSearchSpec *spec, gboolean offload, GPtrArray *traces, RokStepPlan **plans,
                            RokSimResult **r, gboolean *limited, GError **error) {
  guint n = traces->len;
  for (guint s = 0; s < n; s++)
    if ((plans[s] = stage_plan(g_ptr_array_index(traces, s), spec->hw, offload, TRUE, error)) == NULL) {
      if (n > 1)
        g_prefix_error(error, "stage %u: ", s);
      return FALSE;
    }
  if (!run_stages(traces, spec->hw, plans, r, error))
    return FALSE;
  *limited = FALSE;
  for (guint s = 0; s < n; s++) {
    RokSsdFigures ssd;
    if (!offload || !under_floor(spec, traces, plans, r, s, &ssd))
      continue;
    rok_step_plan_free(plans[s]);
    if ((plans[s] = stage_plan(g_ptr_array_index(traces, s), spec->hw, offload, FALSE, error)) == NULL)
      return FALSE;
    *limited = TRUE;
  }
  if (!*limited)
    return TRUE;
  free_results(r, n);
  return run_stages(traces, spec->hw, plans, r, error);
}

/* The row's figures: the pipeline's step; memory and decisions of the
 * stage with the highest peak; SSD writes of the stage writing most and
 * the shortest lifetime of any stage's drives. */
static guint fill_planned(const RokSearchSpec *spec, GPtrArray *traces, RokStepPlan *const *plans,
                          RokSimResult *const *r, Planned *p) {
  guint n = traces->len, worst = 0;
  p->step_time_s = r[0]->step_time_s;
  p->replica_tokens_per_s = r[0]->tokens_per_s;
  p->fits = TRUE;
  p->lifetime_years = INFINITY;
  for (guint s = 0; s < n; s++) {
    p->fits &= r[s]->peak_bytes <= spec->hw->gpu.memory;
    if (r[s]->peak_bytes > r[worst]->peak_bytes)
      worst = s;
    p->nvme_write_bytes = MAX(p->nvme_write_bytes, r[s]->nvme_write_bytes);
    RokSsdFigures ssd;
    under_floor(spec, traces, plans, r, s, &ssd);
    if (r[s]->nvme_write_bytes > 0 && ssd.lifetime_years < p->lifetime_years)
      p->lifetime_years = ssd.lifetime_years;
  }
  p->peak_bytes = r[worst]->peak_bytes;
  count_decisions(g_ptr_array_index(traces, worst), plans[worst], p->decision_bytes);
  return worst;
}

/* The plan of the stage with the highest peak in a sentence. */
static char *summary_of(const RokSearchSpec *spec, GPtrArray *traces, RokStepPlan *const *plans,
                        RokSimResult *const *r, guint worst) {
  const RokSimResult *none[ROK_STRATEGY_BASELINE_COUNT] = {NULL};
  g_autofree char *summary =
      rok_plan_summary(g_ptr_array_index(traces, worst), plans[worst], r[worst], ROK_STRATEGY_ROK, spec->hw->gpu.memory,
                       none);
  /* The baselines were not run here: drop the sentence's comparison with them. */
  char *comparison = g_strrstr(summary, "; ");
  if (comparison != NULL)
    strcpy(comparison, ".");
  if (traces->len == 1)
    return g_steal_pointer(&summary);
  return g_strdup_printf("Stage %u of %u (the highest peak): %s", worst, traces->len, summary);
}

static GBytes *plan_work(guint task, gpointer data, GError **error) {
  const Run *run = data;
  const RokSearchSpec *spec = run->spec;
  gboolean offload = run->modes == 1 ? run->only_offload : task % 2 == 1;
  g_autoptr(GPtrArray) traces = search_layout_traces(spec, layout_of(run, task / run->modes), error);
  if (traces == NULL)
    return NULL;
  guint n = traces->len;
  RokStepPlan **plans = g_new0(RokStepPlan *, n);
  g_autofree RokSimResult **r = g_new0(RokSimResult *, n);
  gboolean limited = FALSE;
  GBytes *bytes = NULL;
  if (plan_stages(spec, offload, traces, plans, r, &limited, error)) {
    Planned p = {.ssd_limited = limited};
    guint worst = fill_planned(spec, traces, plans, r, &p);
    g_autofree char *summary = summary_of(spec, traces, plans, r, worst);
    GByteArray *out = g_byte_array_new();
    g_byte_array_append(out, (const guint8 *)&p, sizeof p);
    g_byte_array_append(out, (const guint8 *)summary, (guint)strlen(summary));
    bytes = g_byte_array_free_to_bytes(out);
  }
  free_results(r, n);
  free_plans(plans, n);
  return bytes;
}

static void plan_done(guint task, GBytes *result, GError *error, gpointer data) {
  Run *run = data;
  run->ran[task] = TRUE;
  if (result == NULL) {
    run->errors[task] = error;
    return;
  }
  gsize len = 0;
  const guint8 *bytes = g_bytes_get_data(result, &len);
  Planned p;
  memcpy(&p, bytes, sizeof p);
  RokSearchRow *row = row_of(run, task);
  row->step_time_s = p.step_time_s;
  row->tokens_per_s = p.replica_tokens_per_s * (double)row->layout.data;
  row->peak_bytes = p.peak_bytes;
  row->fits = p.fits;
  memcpy(row->decision_bytes, p.decision_bytes, sizeof p.decision_bytes);
  row->nvme_write_bytes = p.nvme_write_bytes;
  row->ssd_lifetime_years = p.lifetime_years;
  row->ssd_limited = p.ssd_limited;
  g_free(run->search->summaries->pdata[task]);
  run->search->summaries->pdata[task] = g_strndup((const char *)bytes + sizeof p, len - sizeof p);
  g_bytes_unref(result);
}

/* The `top`-th best throughput among planned, fitting rows of the group
 * of `of` (same GPU count and offload mode) before position `end` of the
 * order (that have finished); -1 while there are fewer. */
static double threshold(const Run *run, const RokSearchRow *of, guint end) {
  guint top = run->spec->top;
  g_autofree double *best = g_new(double, top);
  guint n = 0;
  for (guint i = 0; i < end; i++) {
    const RokSearchRow *row = row_of(run, run->order[i]);
    if (row->offload != of->offload || row->layout.gpus != of->layout.gpus || !run->ran[run->order[i]] ||
        !row->fits)
      continue;
    double v = row->tokens_per_s;
    guint at = n < top ? n++ : top;
    while (at > 0 && best[at - 1] < v) { /* keep best[] falling */
      if (at < top)
        best[at] = best[at - 1];
      at--;
    }
    if (at < top)
      best[at] = v;
  }
  return n < top ? -1 : best[top - 1];
}

static gboolean plan_wanted(guint task, gpointer data) {
  Run *run = data;
  const RokSearchRow *row = row_of(run, task);
  return !run->spec->prune || row->bound_tokens_per_s >= threshold(run, row, run->position[task]);
}

static gint by_bound(gconstpointer a, gconstpointer b, gpointer data) {
  const Run *run = data;
  guint x = *(const guint *)a, y = *(const guint *)b;
  double bx = row_of(run, x)->bound_tokens_per_s, by = row_of(run, y)->bound_tokens_per_s;
  return bx > by ? -1 : bx < by ? 1 : (x > y) - (x < y);
}

/* The order of phase 2: points not pruned by memory, bound falling. */
static guint make_order(Run *run) {
  guint n = 0, total = run->search->rows->len;
  for (guint i = 0; i < total; i++)
    if (row_of(run, i)->status == ROK_SEARCH_PLANNED)
      run->order[n++] = i;
  g_qsort_with_data(run->order, (gint)n, sizeof(guint), by_bound, run);
  for (guint i = 0; i < n; i++)
    run->position[run->order[i]] = i;
  return n;
}

/* The serial rule, now that every result is in: a point is pruned when
 * `top` points before it beat its bound; its result, if it ran, dropped. */
static void apply_pruning(Run *run, guint n) {
  for (guint i = 0; i < n; i++) {
    guint task = run->order[i];
    RokSearchRow *row = row_of(run, task);
    if (run->spec->prune && row->bound_tokens_per_s < threshold(run, row, i)) {
      RokSearchRow keep = *row;
      memset(row, 0, sizeof *row);
      row->layout = keep.layout;
      row->offload = keep.offload;
      row->fixed_bytes = keep.fixed_bytes;
      row->bound_step_time_s = keep.bound_step_time_s;
      row->bound_tokens_per_s = keep.bound_tokens_per_s;
      row->status = ROK_SEARCH_PRUNED_BOUND;
      run->ran[task] = FALSE;
      g_clear_error(&run->errors[task]);
      g_free(run->search->summaries->pdata[task]);
      run->search->summaries->pdata[task] = g_strdup("");
    }
  }
}

/* The first error in enumeration order, naming its layout. */
static gboolean first_error(Run *run, guint count, guint per_layout, GError **error) {
  for (guint i = 0; i < count; i++)
    if (run->errors[i] != NULL) {
      const RokLayout *l = layout_of(run, i / per_layout);
      g_propagate_prefixed_error(error, g_steal_pointer(&run->errors[i]),
                                 "at %" G_GUINT64_FORMAT " GPUs, TP %" G_GUINT64_FORMAT ", PP %" G_GUINT64_FORMAT
                                 " (v %" G_GUINT64_FORMAT "), DP %" G_GUINT64_FORMAT ", micro-batch %" G_GUINT64_FORMAT
                                 ", ZeRO %" G_GUINT64_FORMAT ": ",
                                 l->gpus, l->tensor, l->pipeline, l->virtual_stages, l->data, l->micro_batch,
                                 l->zero_stage);
      return FALSE;
    }
  return TRUE;
}

static RokSearch *search_new(const RokSearchSpec *spec, guint rows) {
  RokSearch *s = g_new0(RokSearch, 1);
  s->model_name = g_strdup(spec->model_name);
  s->hw_name = g_strdup(spec->hw->name);
  s->gpu_memory_bytes = spec->hw->gpu.memory;
  s->rows = g_array_set_size(g_array_new(FALSE, TRUE, sizeof(RokSearchRow)), rows);
  s->summaries = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < rows; i++)
    g_ptr_array_add(s->summaries, g_strdup(""));
  s->top = spec->top;
  return s;
}

void rok_search_free(RokSearch *search) {
  if (search == NULL)
    return;
  g_free(search->model_name);
  g_free(search->hw_name);
  g_array_unref(search->rows);
  g_ptr_array_unref(search->summaries);
  g_free(search);
}

static gboolean run_phases(Run *run, const RokSearchRunner *runner, gboolean *root, GError **error) {
  guint layouts = run->layouts->len, total = run->search->rows->len;
  Farm bounds = {.phase = "bounds", .count = layouts, .work = bound_work, .done = bound_done, .data = run};
  if (!farm_run(&bounds, runner, root, error))
    return FALSE;
  /* Every rank takes part in phase 2 (the others serve it); only rank 0
   * has the bounds, so only it orders and prunes. After a failure it still
   * runs it, empty, so that the other ranks are told to stop. */
  gboolean ok = !*root || first_error(run, layouts, 1, error);
  guint n = !*root ? total : ok ? make_order(run) : 0;
  Farm plans = {.phase = "plans", .count = n, .order = *root ? run->order : NULL, .work = plan_work,
                .wanted = plan_wanted, .done = plan_done, .data = run};
  if (!farm_run(&plans, runner, root, ok ? error : NULL) || !ok)
    return FALSE;
  if (*root) {
    if (!first_error(run, total, run->modes, error))
      return FALSE;
    apply_pruning(run, n);
  }
  return TRUE;
}

RokSearch *rok_search_run(const RokSearchSpec *spec, const RokSearchRunner *runner, gboolean *root, GError **error) {
  *root = TRUE;
  g_autoptr(GArray) layouts = rok_search_spec_layouts(spec, error);
  if (layouts == NULL)
    return NULL;
  Run run = {.spec = spec, .layouts = layouts, .modes = spec->modes[0] + spec->modes[1],
             .only_offload = !spec->modes[0]};
  guint total = layouts->len * run.modes;
  g_autoptr(RokSearch) search = search_new(spec, total);
  run.search = search;
  run.errors = g_new0(GError *, total);
  run.order = g_new0(guint, total);
  run.position = g_new0(guint, total);
  run.ran = g_new0(gboolean, total);
  gboolean ok = run_phases(&run, runner, root, error);
  for (guint i = 0; i < total; i++)
    g_clear_error(&run.errors[i]);
  g_free(run.errors);
  g_free(run.order);
  g_free(run.position);
  g_free(run.ran);
  if (!ok || !*root)
    return NULL;
  search_mark_pareto(search);
  return g_steal_pointer(&search);
}
