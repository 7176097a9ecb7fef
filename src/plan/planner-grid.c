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

/* The work of one plan or curve, shared out among threads: each planner's
 * preparation (baselines, descent, least-memory plan, ascent), then its
 * grid points and its plan at a budget off the grid. Items are taken in
 * order; a planner's points wait for its preparation, and the grids (their
 * budgets span the main planner's least memory) are laid out once the main
 * planner is prepared. What an item finds does not depend on the thread
 * that ran it: a worker copy plans as its planner would, and the shared
 * memo answers as the simulator would. */
typedef enum { WORK_PREPARE, WORK_POINT, WORK_OWN } WorkKind;

typedef struct {
  WorkKind kind;
  guint planner, point;
  gboolean taken;
} WorkItem;

typedef struct Work Work;
/* Called once the main planner is prepared, under the lock: set each
 * planner's grid and its points to plan, add the items (work_add). */
typedef void (*WorkLayout)(Work *w);

struct Work {
  RokPlanner *top;
  guint np;
  PlanGrid **grids;     /* per planner, set by the layout */
  guint64 own_budget;   /* WORK_OWN items plan this budget */
  PlanChoice *own;      /* per planner */
  WorkLayout layout;
  gpointer layout_data;
  GArray *items;        /* WorkItem */
  guint first_open;     /* items before it are all taken */
  gboolean *prepared;   /* per planner */
  gboolean laid_out;
  guint points_done, points_total;
  GMutex lock;
  GCond changed;
  RokProgressFunc progress;
  gpointer user_data;
};

/* The planners whose plans this one's may take: itself and its reduced
 * copies. */
static guint n_planners(const RokPlanner *p) {
  return 1 + (p->reduced ? p->reduced->len : 0);
}

static RokPlanner *planner_at(RokPlanner *p, guint i) {
  return i == 0 ? p : g_ptr_array_index(p->reduced, i - 1);
}

static void work_add(Work *w, WorkKind kind, guint planner, guint point) {
  WorkItem it = {.kind = kind, .planner = planner, .point = point};
  g_array_append_val(w->items, it);
  w->points_total += kind == WORK_POINT && planner == 0;
}

/* The first item not taken whose planner is prepared; NULL when none is
 * ready. */
static WorkItem *work_next(Work *w) {
  while (w->first_open < w->items->len && g_array_index(w->items, WorkItem, w->first_open).taken)
    w->first_open++;
  for (guint i = w->first_open; i < w->items->len; i++) {
    WorkItem *it = &g_array_index(w->items, WorkItem, i);
    if (!it->taken && (it->kind == WORK_PREPARE || w->prepared[it->planner]))
      return it;
  }
  return NULL;
}

static void work_run(Work *w, WorkItem it, RokPlanner **copies) {
  RokPlanner *q = planner_at(w->top, it.planner);
  if (it.kind == WORK_PREPARE) {
    plan_prepare(q);
    return;
  }
  if (copies[it.planner] == NULL)
    copies[it.planner] = plan_worker_new(q);
  RokPlanner *c = copies[it.planner];
  if (it.kind == WORK_OWN) {
    PlanChoice *own = &w->own[it.planner];
    if (w->own_budget < rok_planner_min_budget(c, NULL) ||
        !plan_solve(c, w->own_budget, plan_polish_runs(c, FALSE), own))
      own->decisions = NULL;
    return;
  }
  PlanGrid *g = w->grids[it.planner];
  guint64 budget = g->budgets[it.point];
  if (budget < rok_planner_min_budget(c, NULL) || !plan_solve(c, budget, plan_polish_runs(c, TRUE), &g->found[it.point]))
    g->found[it.point].decisions = NULL;
}

/* Under the lock: what finishing `it` makes ready. */
static void work_done(Work *w, WorkItem it) {
  if (it.kind == WORK_PREPARE) {
    w->prepared[it.planner] = TRUE;
    if (it.planner == 0) {
      w->layout(w);
      w->laid_out = TRUE;
    }
  } else if (it.kind == WORK_POINT) {
    w->grids[it.planner]->done[it.point] = TRUE;
    if (it.planner == 0 && w->progress != NULL) /* the budgets: the main planner's points */
      w->progress(++w->points_done, w->points_total, w->user_data);
  }
  g_cond_broadcast(&w->changed);
}

static gpointer work_thread(gpointer data) {
  Work *w = data;
  g_autofree RokPlanner **copies = g_new0(RokPlanner *, w->np);
  g_mutex_lock(&w->lock);
  for (;;) {
    WorkItem *next = work_next(w);
    if (next == NULL) {
      if (w->laid_out && w->first_open >= w->items->len)
        break; /* all taken, and nothing more will come */
      g_cond_wait(&w->changed, &w->lock);
      continue;
    }
    next->taken = TRUE;
    WorkItem it = *next; /* the array may grow while it runs */
    g_mutex_unlock(&w->lock);
    work_run(w, it, copies);
    g_mutex_lock(&w->lock);
    work_done(w, it);
  }
  for (guint k = 0; k < w->np; k++)
    if (copies[k] != NULL) {
      planner_at(w->top, k)->runs += copies[k]->runs; /* a copy's runs are its planner's */
      rok_planner_free(copies[k]);
    }
  g_mutex_unlock(&w->lock);
  return NULL;
}

/* Run the work: every planner's preparation, then what `layout` adds. */
static void work_solve(RokPlanner *p, WorkLayout layout, gpointer layout_data, PlanGrid **grids, guint64 own_budget,
                       PlanChoice *own, RokProgressFunc progress, gpointer user_data) {
  Work w = {.top = p, .np = n_planners(p), .grids = grids, .own_budget = own_budget, .own = own, .layout = layout,
            .layout_data = layout_data, .items = g_array_new(FALSE, FALSE, sizeof(WorkItem)),
            .progress = progress, .user_data = user_data};
  w.prepared = g_new0(gboolean, w.np);
  /* The planner with the fewest tiers first: it recomputes most, and a
   * plan that recomputes much costs the simulator most. */
  for (guint k = w.np; k-- > 0;)
    work_add(&w, WORK_PREPARE, k, 0);
  g_mutex_init(&w.lock);
  g_cond_init(&w.changed);
  guint threads = p->options.threads ? p->options.threads : g_get_num_processors();
  g_autoptr(GPtrArray) workers = g_ptr_array_new();
  /* g_thread_try_new: where no more threads can be made (RLIMIT_NPROC)
   * the ones made, or this thread alone, do all the work. */
  for (guint i = 0; threads > 1 && i < threads; i++) {
    GThread *t = g_thread_try_new("rok-plan", work_thread, &w, NULL);
    if (t == NULL)
      break;
    g_ptr_array_add(workers, t);
  }
  if (workers->len == 0)
    work_thread(&w);
  for (guint i = 0; i < workers->len; i++)
    g_thread_join(g_ptr_array_index(workers, i));
  g_cond_clear(&w.changed);
  g_mutex_clear(&w.lock);
  g_array_unref(w.items);
  g_free(w.prepared);
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

/* plan_choose's work: each planner's grid points up to the budget, and
 * its plan at the budget itself when that is not a grid point; nothing
 * below the main planner's least budget (no plan fits there). */
static void choose_layout(Work *w) {
  if (w->own_budget < rok_planner_min_budget(w->top, NULL))
    return;
  for (guint k = 0; k < w->np; k++) {
    RokPlanner *q = planner_at(w->top, k);
    PlanGrid *g = w->grids[k] = grid_of(q, w->top);
    guint n = g ? points_within(g, w->own_budget) : 0;
    if (n == 0 || g->budgets[n - 1] != w->own_budget)
      work_add(w, WORK_OWN, k, 0); /* first: the longest items */
    for (guint i = 0; i < n; i++)
      if (!g->done[i])
        work_add(w, WORK_POINT, k, i);
  }
}

gboolean plan_choose(RokPlanner *p, guint64 budget, PlanChoice *out) {
  /* Said at once: a budget above keep's peak (a sweep's small micro-batches,
   * the GPU's whole memory) costs no search. */
  if (plan_keep_fits(p, budget, out))
    return TRUE;
  /* Every plan's peak holds the fixed memory: below it, said without planning. */
  if (budget < rok_fixed_memory_bytes(&p->trace->fixed))
    return FALSE;
  guint np = n_planners(p);
  g_autofree PlanChoice *own = g_new0(PlanChoice, np);
  g_autofree PlanGrid **grids = g_new0(PlanGrid *, np);
  work_solve(p, choose_layout, NULL, grids, budget, own, NULL, NULL);
  if (budget < rok_planner_min_budget(p, NULL))
    return FALSE;
  g_autoptr(GPtrArray) cands = g_ptr_array_new();
  for (guint k = 0; k < np; k++) {
    guint n = grids[k] ? points_within(grids[k], budget) : 0;
    for (guint i = 0; i < n; i++)
      if (grids[k]->found[i].decisions != NULL)
        g_ptr_array_add(cands, &grids[k]->found[i]);
    if (own[k].decisions != NULL)
      g_ptr_array_add(cands, &own[k]);
  }
  const PlanChoice *best = plan_pick(p, cands, budget);
  if (best != NULL) {
    *out = *best;
    out->decisions = g_memdup2(best->decisions, MAX(p->n_tensors, 1));
  }
  for (guint k = 0; k < np; k++)
    plan_choice_clear(&own[k]);
  return best != NULL;
}

/* plan_grid_curve's work: every point of each planner's grid, from the
 * least budget to keep's peak (known once the main planner is prepared),
 * the main one's where the curve's budgets are its own. */
static void curve_layout(Work *w) {
  guint n = *(const guint *)w->layout_data;
  guint64 lo = rok_planner_min_budget(w->top, NULL);
  const PlanBaseline *keep = plan_baseline_of(w->top, ROK_STRATEGY_KEEP);
  guint64 hi = keep->decisions != NULL && keep->final.valid ? keep->final.peak : lo;
  PlanGrid *main = main_grid(w->top);
  gboolean shared = main != NULL && main->n == n && main->budgets[0] == lo && main->budgets[main->n - 1] == hi;
  for (guint k = 0; k < w->np; k++) {
    PlanGrid *g = w->grids[k] = shared ? grid_of(planner_at(w->top, k), w->top) : plan_grid_new(n, lo, hi);
    for (guint i = 0; i < g->n; i++)
      if (!g->done[i])
        work_add(w, WORK_POINT, k, i);
  }
}

/* The curve on its own grid of `n` budgets: point i is what plan_choose
 * returns at budget i when the planner's grid is this one. */
guint plan_grid_curve(RokPlanner *p, guint n, RokProgressFunc progress, gpointer user_data, PlanChoice *points,
                      guint64 *budgets) {
  guint np = n_planners(p);
  g_autofree PlanGrid **grids = g_new0(PlanGrid *, np);
  work_solve(p, curve_layout, &n, grids, 0, NULL, progress, user_data);
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
