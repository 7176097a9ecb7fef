/* The ROK curve: the planner's step time for budgets from the smallest
 * that fits to the peak of keeping everything.
 *
 * Budgets rise evenly; each is planned on its own (with a smaller search
 * than a single plan gets), and a point takes the best plan found for any
 * budget whose peak fits its own: what fits a budget fits every larger
 * one, so more memory never makes the plan slower. The baselines are
 * simulated once each, unbounded, as labelled points. */
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
  guint64 fixed = trace->fixed.weight_bytes + trace->fixed.gradient_bytes + trace->fixed.optimizer_bytes;
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
      pt->decision_bytes[d[t]] += tensor->bytes;
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
  curve->fixed_bytes = f->weight_bytes + f->gradient_bytes + f->optimizer_bytes;
  curve->gpu_memory_bytes = p->hw->gpu.memory;
  curve->points = g_array_new(FALSE, TRUE, sizeof(RokCurvePoint));
  return curve;
}

/* Each point: the best plan found for any budget that fits this one. */
static void pick_points(const RokPlanner *p, RokCurve *curve, const guint64 *budgets, const PlanChoice *found,
                        guint n) {
  for (guint i = 0; i < n; i++) {
    const PlanChoice *best = NULL;
    for (guint j = 0; j < n; j++)
      if (found[j].decisions != NULL && plan_fits(&found[j].eval, budgets[i]) &&
          (best == NULL || plan_better(&found[j].eval, &best->eval, budgets[i])))
        best = &found[j];
    if (best == NULL)
      continue;
    RokCurvePoint pt = {.budget_bytes = budgets[i], .source = best->source};
    point_from(p, best->decisions, &best->eval, &pt);
    g_array_append_val(curve->points, pt);
  }
}

/* The budgets shared out among threads, each with its own simulator; a
 * point's plan does not depend on which thread made it. */
typedef struct {
  RokPlanner *parent;
  const guint64 *budgets;
  PlanChoice *found;
  guint n, runs, next, done;
  guint64 worker_runs;
  GMutex lock;
  RokProgressFunc progress;
  gpointer user_data;
} CurveJob;

static gpointer curve_worker(gpointer data) {
  CurveJob *job = data;
  RokPlanner *w = plan_worker_new(job->parent);
  for (;;) {
    g_mutex_lock(&job->lock);
    guint i = job->next++;
    g_mutex_unlock(&job->lock);
    if (i >= job->n)
      break;
    if (!plan_solve(w, job->budgets[i], job->runs, &job->found[i]))
      job->found[i].decisions = NULL;
    g_mutex_lock(&job->lock);
    job->done++;
    if (job->progress != NULL)
      job->progress(job->done, job->n, job->user_data);
    g_mutex_unlock(&job->lock);
  }
  g_mutex_lock(&job->lock);
  job->worker_runs += rok_planner_runs(w);
  g_mutex_unlock(&job->lock);
  rok_planner_free(w);
  return NULL;
}

static void solve_all(RokPlanner *p, CurveJob *job) {
  plan_prepare(p);
  guint threads = p->options.threads ? p->options.threads : g_get_num_processors();
  threads = CLAMP(threads, 1, job->n);
  g_mutex_init(&job->lock);
  g_autoptr(GPtrArray) workers = g_ptr_array_new();
  /* g_thread_try_new: where no more threads can be made (RLIMIT_NPROC)
   * the ones made, or this thread alone, do all the work. */
  for (guint i = 0; i < threads; i++) {
    GThread *t = g_thread_try_new("rok-curve", curve_worker, job, NULL);
    if (t == NULL)
      break;
    g_ptr_array_add(workers, t);
  }
  if (workers->len == 0)
    curve_worker(job);
  for (guint i = 0; i < workers->len; i++)
    g_thread_join(g_ptr_array_index(workers, i));
  g_mutex_clear(&job->lock);
  p->runs += job->worker_runs;
}

RokCurve *rok_planner_curve(RokPlanner *p, guint points, RokProgressFunc progress, gpointer user_data,
                            GError **error) {
  if (points < 2 || points > ROK_CURVE_MAX_POINTS) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "a curve has 2 to %d points, not %u", ROK_CURVE_MAX_POINTS, points);
    return NULL;
  }
  RokCurve *curve = curve_new(p);
  add_baselines(p, curve);
  curve->min_budget = rok_planner_min_budget(p, NULL);
  curve->keep_budget = curve->has_baseline[ROK_STRATEGY_KEEP] ? curve->baselines[ROK_STRATEGY_KEEP].peak_bytes
                                                               : curve->min_budget;
  if (curve->keep_budget <= curve->min_budget)
    points = 1;
  guint runs = plan_polish_runs(p, TRUE);
  guint64 span = curve->keep_budget > curve->min_budget ? curve->keep_budget - curve->min_budget : 0;
  g_autofree guint64 *budgets = g_new(guint64, points);
  g_autofree PlanChoice *found = g_new0(PlanChoice, points);
  for (guint i = 0; i < points; i++)
    budgets[i] = points == 1 ? curve->min_budget : curve->min_budget + (guint64)((double)span * i / (points - 1));
  CurveJob job = {.parent = p, .budgets = budgets, .found = found, .n = points, .runs = runs,
                  .progress = progress, .user_data = user_data};
  solve_all(p, &job);
  pick_points(p, curve, budgets, found, points);
  for (guint i = 0; i < points; i++)
    plan_choice_clear(&found[i]);
  return curve;
}
