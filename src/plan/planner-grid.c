/* The budgets every plan is measured against, and planning on machines
 * with fewer resources.
 *
 * A plan for budget B is the best of: the search at B, the search at every
 * budget of the curve's grid at or below B (what fits a smaller budget
 * fits B, run under the limit it was found under), and the same on the
 * machine without SSDs and without SSDs or host memory for offloads (those
 * plans run here exactly as there). So a plan is never slower
 * than one for a smaller grid budget or for a machine with fewer tiers,
 * and a curve point is exactly the plan for its budget. Among plans within
 * the wear tolerance of the fastest, the one that writes least to the
 * SSDs, then moves least over PCIe, wins. */
#include "planner-private.h"

PlanGrid *plan_grid_new(guint n, guint64 lo, guint64 hi) {
  PlanGrid *g = g_new0(PlanGrid, 1);
  if (hi <= lo)
    n = 1;
  g->n = n;
  g->budgets = g_new(guint64, n);
  g->found = g_new0(PlanChoice, n);
  g->done = g_new0(gboolean, n);
  for (guint i = 0; i < n; i++)
    g->budgets[i] = n == 1 ? lo : lo + (guint64)((double)(hi - lo) * i / (n - 1));
  return g;
}

void plan_grid_free(PlanGrid *g) {
  if (g == NULL)
    return;
  for (guint i = 0; i < g->n; i++)
    plan_choice_clear(&g->found[i]);
  g_free(g->budgets);
  g_free(g->found);
  g_free(g->done);
  g_free(g);
}

/* Grid points shared out among threads, each with its own simulator; a
 * point's plan does not depend on which thread made it. */
typedef struct {
  RokPlanner *parent;
  PlanGrid *grid;
  guint upto, runs, next, done, total;
  guint64 worker_runs;
  GMutex lock;
  RokProgressFunc progress;
  gpointer user_data;
} GridJob;

static gpointer grid_worker(gpointer data) {
  GridJob *job = data;
  RokPlanner *w = plan_worker_new(job->parent);
  for (;;) {
    g_mutex_lock(&job->lock);
    while (job->next <= job->upto && job->grid->done[job->next])
      job->next++;
    guint i = job->next++;
    g_mutex_unlock(&job->lock);
    if (i > job->upto)
      break;
    guint64 budget = job->grid->budgets[i];
    if (budget < rok_planner_min_budget(w, NULL) || !plan_solve(w, budget, job->runs, &job->grid->found[i]))
      job->grid->found[i].decisions = NULL;
    g_mutex_lock(&job->lock);
    job->grid->done[i] = TRUE;
    job->done++;
    if (job->progress != NULL)
      job->progress(job->done, job->total, job->user_data);
    g_mutex_unlock(&job->lock);
  }
  g_mutex_lock(&job->lock);
  job->worker_runs += w->runs; /* a worker's reduced planners are its parent's */
  g_mutex_unlock(&job->lock);
  rok_planner_free(w);
  return NULL;
}

void plan_grid_solve(RokPlanner *p, PlanGrid *g, guint upto, RokProgressFunc progress, gpointer user_data) {
  guint todo = 0;
  for (guint i = 0; i <= upto && i < g->n; i++)
    todo += !g->done[i];
  if (todo == 0)
    return;
  plan_prepare(p);
  GridJob job = {.parent = p, .grid = g, .upto = MIN(upto, g->n - 1), .runs = plan_polish_runs(p, TRUE),
                 .total = todo, .progress = progress, .user_data = user_data};
  guint threads = p->options.threads ? p->options.threads : g_get_num_processors();
  threads = CLAMP(threads, 1, todo);
  g_mutex_init(&job.lock);
  g_autoptr(GPtrArray) workers = g_ptr_array_new();
  /* g_thread_try_new: where no more threads can be made (RLIMIT_NPROC)
   * the ones made, or this thread alone, do all the work. */
  for (guint i = 0; i < threads; i++) {
    GThread *t = g_thread_try_new("rok-grid", grid_worker, &job, NULL);
    if (t == NULL)
      break;
    g_ptr_array_add(workers, t);
  }
  if (workers->len == 0)
    grid_worker(&job);
  for (guint i = 0; i < workers->len; i++)
    g_thread_join(g_ptr_array_index(workers, i));
  g_mutex_clear(&job.lock);
  p->runs += job.worker_runs;
}

/* Grid points at or below `budget`. */
static guint points_within(const PlanGrid *g, guint64 budget) {
  guint n = 0;
  while (n < g->n && g->budgets[n] <= budget)
    n++;
  return n;
}

/* The wear rule (see the top): a choice among `cands` that fit `budget`. */
const PlanChoice *plan_pick(const RokPlanner *p, GPtrArray *cands, guint64 budget) {
  gint64 fastest = G_MAXINT64;
  for (guint i = 0; i < cands->len; i++) {
    const PlanChoice *c = g_ptr_array_index(cands, i);
    if (plan_fits(&c->eval, budget))
      fastest = MIN(fastest, c->eval.step_ns);
  }
  const PlanChoice *best = NULL;
  double within = (double)fastest * (1.0 + p->options.wear_tolerance);
  for (guint i = 0; i < cands->len; i++) {
    const PlanChoice *c = g_ptr_array_index(cands, i);
    if (!plan_fits(&c->eval, budget) || (double)c->eval.step_ns > within)
      continue;
    const PlanEval *a = &c->eval, *b = best ? &best->eval : NULL;
    if (b == NULL || a->nvme < b->nvme ||
        (a->nvme == b->nvme && (a->moved < b->moved || (a->moved == b->moved && plan_better(a, b, budget)))))
      best = c;
  }
  return best;
}

/* The planners whose plans this one's may take: itself and its reduced
 * copies. */
static guint n_planners(const RokPlanner *p) {
  return 1 + (p->reduced ? p->reduced->len : 0);
}

static RokPlanner *planner_at(RokPlanner *p, guint i) {
  return i == 0 ? p : g_ptr_array_index(p->reduced, i - 1);
}

/* The main planner's grid: from the least memory any plan needs to the
 * peak of keeping everything; NULL when it plans each budget on its own. */
static PlanGrid *main_grid(RokPlanner *p) {
  guint n = p->options.curve_points;
  if (p->grid != NULL || n == ROK_PLANNER_NO_GRID)
    return p->grid;
  guint64 lo = rok_planner_min_budget(p, NULL);
  const PlanBaseline *keep = plan_baseline_of(p, ROK_STRATEGY_KEEP);
  guint64 hi = keep->decisions != NULL && keep->final.valid ? keep->final.peak : lo;
  if (lo == G_MAXUINT64)
    return NULL;
  p->grid = plan_grid_new(n ? n : ROK_PLANNER_DEFAULT_CURVE_POINTS, lo, MAX(hi, lo));
  return p->grid;
}

/* A reduced planner's grid: the main one's budgets. */
static PlanGrid *grid_of(RokPlanner *q, RokPlanner *p) {
  PlanGrid *main = main_grid(p);
  if (q == p || main == NULL)
    return main;
  if (q->grid == NULL)
    q->grid = plan_grid_new(main->n, main->budgets[0], main->budgets[main->n - 1]);
  return q->grid;
}

gboolean plan_choose(RokPlanner *p, guint64 budget, PlanChoice *out) {
  /* Said at once: a budget above keep's peak (a sweep's small micro-batches,
   * the GPU's whole memory) costs no search. */
  if (plan_keep_fits(p, budget, out))
    return TRUE;
  g_autoptr(GPtrArray) cands = g_ptr_array_new();
  g_autofree PlanChoice *own = g_new0(PlanChoice, n_planners(p));
  for (guint k = 0; k < n_planners(p); k++) {
    RokPlanner *q = planner_at(p, k);
    PlanGrid *g = grid_of(q, p);
    guint n = g ? points_within(g, budget) : 0;
    if (n > 0) {
      plan_grid_solve(q, g, n - 1, NULL, NULL);
      for (guint i = 0; i < n; i++)
        if (g->found[i].decisions != NULL)
          g_ptr_array_add(cands, &g->found[i]);
    }
    if ((n == 0 || g->budgets[n - 1] != budget) && budget >= rok_planner_min_budget(q, NULL) &&
        plan_solve(q, budget, plan_polish_runs(q, FALSE), &own[k]))
      g_ptr_array_add(cands, &own[k]);
  }
  const PlanChoice *best = plan_pick(p, cands, budget);
  if (best != NULL) {
    *out = *best;
    out->decisions = g_memdup2(best->decisions, MAX(p->n_tensors, 1));
  }
  for (guint k = 0; k < n_planners(p); k++)
    plan_choice_clear(&own[k]);
  return best != NULL;
}

/* The curve on its own grid of `n` budgets: point i is what plan_choose
 * returns at budget i when the planner's grid is this one. */
guint plan_grid_curve(RokPlanner *p, guint n, guint64 lo, guint64 hi, RokProgressFunc progress, gpointer user_data,
                      PlanChoice *points, guint64 *budgets) {
  guint np = n_planners(p);
  g_autofree PlanGrid **grids = g_new0(PlanGrid *, np);
  for (guint k = 0; k < np; k++) {
    RokPlanner *q = planner_at(p, k);
    PlanGrid *main = main_grid(p);
    gboolean shared = main != NULL && main->n == n && main->budgets[0] == lo && main->budgets[main->n - 1] == hi;
    grids[k] = shared ? grid_of(q, p) : plan_grid_new(n, lo, hi);
    plan_grid_solve(q, grids[k], grids[k]->n - 1, k == 0 ? progress : NULL, user_data);
  }
  g_autoptr(GPtrArray) cands = g_ptr_array_new();
  for (guint i = 0; i < grids[0]->n; i++) {
    budgets[i] = grids[0]->budgets[i];
    for (guint k = 0; k < np; k++)
      if (grids[k]->found[i].decisions != NULL)
        g_ptr_array_add(cands, &grids[k]->found[i]);
    const PlanChoice *best = plan_pick(p, cands, budgets[i]);
    points[i] = best ? *best : (PlanChoice){0};
    if (best != NULL)
      points[i].decisions = g_memdup2(best->decisions, MAX(p->n_tensors, 1));
  }
  guint count = grids[0]->n;
  for (guint k = 0; k < np; k++)
    if (grids[k] != planner_at(p, k)->grid)
      plan_grid_free(grids[k]);
  return count;
}
