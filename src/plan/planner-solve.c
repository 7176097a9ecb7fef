/* The plan for one budget: gather candidates (baselines, least-memory
 * plan, descent and ascent steps), refine the three best, and let the
 * simulator at its default detail pick the winner among the finalists and
 * every baseline. */
#include "planner-private.h"

#define FINALISTS 3

typedef struct {
  RokPlanner *p;
  guint64 budget;
  GArray *cands; /* PlanChoice, best first, at most FINALISTS */
  GArray *baselines; /* PlanChoice of every applicable baseline, fitting or not */
  GArray *windows;   /* PlanChoice refined under other prefetch windows (small traces) */
  guint descent_runs;  /* for the descent under the budget */
} Solve;

void plan_choice_clear(PlanChoice *choice) {
  g_clear_pointer(&choice->decisions, g_free);
}

static gboolean same_choice(const RokPlanner *p, const PlanChoice *a, const guint8 *d, guint64 mb,
                            gboolean whole) {
  return a->memory_budget == mb && a->whole_layers == whole && memcmp(a->decisions, d, p->n_tensors) == 0;
}

/* Keep the FINALISTS best that fit, best first. */
static void add_whole(Solve *s, const guint8 *d, guint64 mb, gboolean whole, const PlanEval *e, RokStrategy source) {
  if (!plan_fits(e, s->budget))
    return;
  guint at = 0;
  for (; at < s->cands->len; at++) {
    const PlanChoice *c = &g_array_index(s->cands, PlanChoice, at);
    if (same_choice(s->p, c, d, mb, whole))
      return;
    if (plan_better(e, &c->eval, s->budget))
      break;
  }
  if (at >= FINALISTS)
    return;
  PlanChoice c = {.decisions = g_memdup2(d, MAX(s->p->n_tensors, 1)), .memory_budget = mb, .whole_layers = whole,
                  .eval = *e, .source = source};
  g_array_insert_val(s->cands, at, c);
  if (s->cands->len > FINALISTS) {
    plan_choice_clear(&g_array_index(s->cands, PlanChoice, FINALISTS));
    g_array_set_size(s->cands, FINALISTS);
  }
}

static void add(Solve *s, const guint8 *d, guint64 mb, const PlanEval *e, RokStrategy source) {
  add_whole(s, d, mb, FALSE, e, source);
}

static void try_plan(Solve *s, const guint8 *d, RokStrategy source) {
  PlanEval e;
  if (plan_eval(s->p, d, s->budget, s->p->options.search_detail, &e))
    add(s, d, s->budget, &e, source);
}

/* A baseline whose own peak fits runs the same under the budget. */
static void add_baselines(Solve *s) {
  const PlanBaseline *bases = plan_baselines(s->p);
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    const guint8 *d = bases[b].decisions;
    gboolean whole = bases[b].whole_layers;
    if (d == NULL)
      continue;
    PlanChoice c = {.decisions = g_memdup2(d, MAX(s->p->n_tensors, 1)), .memory_budget = s->budget,
                    .whole_layers = whole, .source = b};
    g_array_append_val(s->baselines, c);
    PlanEval e = bases[b].search;
    if (plan_fits(&e, s->budget) ||
        plan_eval_whole(s->p, d, s->budget, s->p->options.search_detail, whole, &e))
      add_whole(s, d, s->budget, whole, &e, b);
  }
}

static const PlanStep *step(const RokPlanner *p, guint i) {
  return g_ptr_array_index(p->descent, i);
}

/* The step that fits with the smallest first index (peaks fall step by
 * step), or descent->len. */
static guint first_fit(const RokPlanner *p, guint64 budget) {
  guint lo = 0, hi = p->descent->len;
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    if (step(p, mid)->eval.peak <= budget)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/* The step that crossed the budget, made on as few of its unit's layers
 * as will fit. */
static void partial_step(Solve *s, guint i) {
  const PlanStep *before = step(s->p, i - 1), *at = step(s->p, i);
  const PlanUnit *u = plan_unit(s->p, at->unit);
  guint lo = 1, hi = u->hi - u->lo; /* hi members: the whole step, known to fit */
  g_autofree guint8 *d = g_new(guint8, MAX(s->p->n_tensors, 1));
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    memcpy(d, before->decisions, s->p->n_tensors);
    plan_set_unit(s->p, d, at->unit, at->decision, at->back, mid);
    PlanEval e;
    if (plan_eval(s->p, d, s->budget, s->p->options.search_detail, &e) && plan_fits(&e, s->budget)) {
      add(s, d, s->budget, &e, ROK_STRATEGY_ROK);
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
}

static void add_descent(Solve *s) {
  RokPlanner *p = s->p;
  plan_descent(p);
  guint i = first_fit(p, s->budget);
  /* Natural runs that fit run the same under the budget. */
  for (guint j = i; j < p->descent->len; j++)
    add(s, step(p, j)->decisions, s->budget, &step(p, j)->eval, ROK_STRATEGY_ROK);
  if (i > 0 && i < p->descent->len)
    partial_step(s, i);
  if (i > 0) { /* from the last step that does not fit, under the budget */
    g_autofree guint8 *d = g_new(guint8, MAX(p->n_tensors, 1));
    PlanEval e;
    if (plan_descent_under(p, step(p, i - 1)->decisions, s->budget, s->descent_runs, d, &e))
      add(s, d, s->budget, &e, ROK_STRATEGY_ROK);
  }
  for (guint j = i, k = 0; j-- > 0 && k < 2; k++) /* the steps before, held under the budget */
    try_plan(s, step(p, j)->decisions, ROK_STRATEGY_ROK);
}

/* The ascent's fastest step that fits (its times fall step by step), the
 * step after it made on part of its unit, and held under the budget. */
static void add_ascent(Solve *s) {
  RokPlanner *p = s->p;
  plan_ascent(p);
  GPtrArray *steps = p->ascent;
  guint best = G_MAXUINT;
  for (guint j = 0; j < steps->len; j++)
    if (((const PlanStep *)g_ptr_array_index(steps, j))->eval.peak <= s->budget)
      best = j;
  if (best != G_MAXUINT) {
    const PlanStep *st = g_ptr_array_index(steps, best);
    add(s, st->decisions, s->budget, &st->eval, ROK_STRATEGY_ROK);
  }
  guint next = best == G_MAXUINT ? 0 : best + 1;
  if (next >= steps->len)
    return;
  const PlanStep *over = g_ptr_array_index(steps, next);
  try_plan(s, over->decisions, ROK_STRATEGY_ROK);
  if (next == 0)
    return;
  const PlanStep *at = g_ptr_array_index(steps, next - 1);
  const PlanUnit *u = plan_unit(p, over->unit);
  g_autofree guint8 *d = g_new(guint8, MAX(p->n_tensors, 1));
  for (guint count = 1; count < u->hi - u->lo; count++) {
    memcpy(d, at->decisions, p->n_tensors);
    plan_set_unit(p, d, over->unit, over->decision, FALSE, count);
    try_plan(s, d, ROK_STRATEGY_ROK);
  }
}

static void add_min_memory(Solve *s) {
  RokPlanner *p = s->p;
  plan_min_memory(p);
  if (!p->min_eval.valid)
    return;
  PlanEval e;
  /* Scored under the budget; the squeezed run (a one-byte limit) only
   * where nothing else fits. */
  if (plan_eval(p, p->min_decisions, s->budget, p->options.search_detail, &e) && plan_fits(&e, s->budget))
    add(s, p->min_decisions, s->budget, &e, ROK_STRATEGY_ROK);
  else
    add(s, p->min_decisions, p->min_budget_option, &p->min_eval, ROK_STRATEGY_ROK);
}

static gboolean same_as_baseline(const Solve *s, const PlanChoice *c) {
  for (guint i = 0; i < s->baselines->len; i++) {
    const PlanChoice *b = &g_array_index(s->baselines, PlanChoice, i);
    if (b != c && same_choice(s->p, b, c->decisions, c->memory_budget, c->whole_layers))
      return TRUE;
  }
  return FALSE;
}

static gboolean has_offloads(const RokPlanner *p, const guint8 *d) {
  for (guint t = 0; t < p->n_tensors; t++)
    if (d[t] == ROK_DECISION_OFFLOAD_NVME || d[t] == ROK_DECISION_OFFLOAD_HOST)
      return TRUE;
  return FALSE;
}

/* Run `c` with prefetch setting k under limit `mb`; take it if better. */
static void final_try(Solve *s, PlanChoice *c, guint k, guint64 mb, gboolean *any) {
  PlanEval e;
  s->p->prefetch = k;
  gboolean ok = plan_eval_whole(s->p, c->decisions, mb, ROK_STEP_DEFAULT_DETAIL_MICRO_BATCHES, c->whole_layers, &e);
  s->p->prefetch = 0;
  if (ok && (!*any || plan_better(&e, &c->eval, s->budget))) {
    c->eval = e;
    c->memory_budget = mb;
    c->prefetch = k;
    *any = TRUE;
  }
}

/* Try `c` under limit `mb` with each prefetch setting in turn, until one
 * fits at keep's step time: no plan runs faster than keeping everything
 * (it computes at least as much and copies besides), so the other windows
 * could only win a tie (fewer bytes moved, a smaller peak). */
static void final_windows(Solve *s, PlanChoice *c, guint settings, guint64 mb, gboolean *any) {
  const PlanBaseline *keep = plan_baseline_of(s->p, ROK_STRATEGY_KEEP);
  gint64 floor = keep->decisions != NULL && keep->final.valid ? keep->final.step_ns : -1;
  for (guint k = 0; k < settings; k++) {
    final_try(s, c, k, mb, any);
    if (*any && plan_fits(&c->eval, s->budget) && c->eval.step_ns <= floor)
      return;
  }
}

/* A candidate at the default detail, under the budget with every prefetch
 * window (a plan with nothing to read back needs one run); one found under
 * a tighter limit than the budget is also run as it was found. */
static void final_eval(Solve *s, PlanChoice *c) {
  guint64 own = c->memory_budget;
  gboolean any = FALSE;
  guint settings = has_offloads(s->p, c->decisions) ? PLAN_PREFETCH_SETTINGS : 1;
  final_windows(s, c, settings, s->budget, &any);
  if (own < s->budget && (!any || !plan_fits(&c->eval, s->budget)))
    final_windows(s, c, settings, own, &any);
  if (!any)
    c->eval = (PlanEval){0};
}

/* The finalists and the baselines at the default detail: the best that fits. */
static gboolean final(Solve *s, PlanChoice *out) {
  GArray *all[] = {s->cands, s->baselines, s->windows};
  PlanChoice *best = NULL;
  for (guint a = 0; a < G_N_ELEMENTS(all); a++)
    for (guint i = 0; i < all[a]->len; i++) {
      PlanChoice *c = &g_array_index(all[a], PlanChoice, i);
      if (!c->final && !same_as_baseline(s, c))
        final_eval(s, c);
      else if (!c->final)
        continue; /* judged as the baseline it is */
      c->final = TRUE;
      if (plan_fits(&c->eval, s->budget) && (best == NULL || plan_better(&c->eval, &best->eval, s->budget)))
        best = c;
    }
  if (best == NULL)
    return FALSE;
  *out = *best;
  out->decisions = g_memdup2(best->decisions, MAX(s->p->n_tensors, 1));
  return TRUE;
}

static void clear_all(GArray *choices) {
  for (guint i = 0; i < choices->len; i++)
    plan_choice_clear(&g_array_index(choices, PlanChoice, i));
  g_array_unref(choices);
}

/* A start as the planner's own plan: its rebuilds re-run only what they
 * need. (One held under a tighter limit than the budget stays so here; the
 * final judgement tries it under the budget.) */
static gboolean own_start(Solve *s, PlanChoice *c) {
  c->source = ROK_STRATEGY_ROK;
  if (!c->whole_layers)
    return TRUE;
  c->whole_layers = FALSE;
  return plan_eval(s->p, c->decisions, c->memory_budget, s->p->options.search_detail, &c->eval);
}

/* Refine one start; the result joins the candidates. */
static void polish_one(Solve *s, const PlanChoice *start, guint runs) {
  PlanChoice polished = *start;
  polished.decisions = g_memdup2(start->decisions, MAX(s->p->n_tensors, 1));
  PlanEval e;
  if (polished.memory_budget != s->budget &&
      plan_eval_whole(s->p, polished.decisions, s->budget, s->p->options.search_detail, polished.whole_layers, &e) &&
      plan_fits(&e, s->budget)) { /* trials are scored under the real budget */
    polished.memory_budget = s->budget;
    polished.eval = e;
  }
  if (own_start(s, &polished)) {
    plan_polish(s->p, polished.decisions, &polished.eval, s->budget, polished.memory_budget, runs);
    add(s, polished.decisions, polished.memory_budget, &polished.eval, ROK_STRATEGY_ROK);
  }
  plan_choice_clear(&polished);
}

/* Refine each finalist, the runs shared among them: local search from
 * one start misses what it finds from another (an offload-minded plan and
 * a recompute-minded one of the same speed). */
static void polish_finalists(Solve *s, guint runs) {
  guint n = s->cands->len;
  g_autofree PlanChoice *starts = g_new0(PlanChoice, MAX(n, 1));
  for (guint i = 0; i < n; i++) {
    starts[i] = g_array_index(s->cands, PlanChoice, i);
    starts[i].decisions = g_memdup2(starts[i].decisions, MAX(s->p->n_tensors, 1));
  }
  for (guint i = 0; i < n; i++) {
    polish_one(s, &starts[i], MAX(runs / n, 1));
    plan_choice_clear(&starts[i]);
  }
}

/* On a small trace, the best finalist refined again under each other
 * prefetch window: a plan that reads back early and one that reads late
 * want different tensors offloaded, and the search runs with one window. */
static void polish_windows(Solve *s, guint runs) {
  RokPlanner *p = s->p;
  if (!plan_small(p) || s->cands->len == 0)
    return;
  const PlanChoice *best = &g_array_index(s->cands, PlanChoice, 0);
  for (guint k = 1; k < PLAN_PREFETCH_SETTINGS; k++) {
    PlanChoice c = {.decisions = g_memdup2(best->decisions, MAX(p->n_tensors, 1)), .memory_budget = s->budget,
                    .source = ROK_STRATEGY_ROK};
    p->prefetch = k;
    if (plan_eval(p, c.decisions, s->budget, p->options.search_detail, &c.eval) && plan_fits(&c.eval, s->budget)) {
      plan_polish(p, c.decisions, &c.eval, s->budget, s->budget, MAX(runs / (PLAN_PREFETCH_SETTINGS - 1), 1));
      g_array_append_val(s->windows, c);
    } else {
      plan_choice_clear(&c);
    }
    p->prefetch = 0;
  }
}

gboolean plan_keep_fits(RokPlanner *p, guint64 budget, PlanChoice *out) {
  const PlanBaseline *keep = plan_baseline_of(p, ROK_STRATEGY_KEEP);
  if (keep->decisions == NULL || !plan_fits(&keep->final, budget))
    return FALSE;
  /* Nothing to read back: it runs the same under any budget above its peak. */
  *out = (PlanChoice){.decisions = g_memdup2(keep->decisions, MAX(p->n_tensors, 1)), .memory_budget = budget,
                      .eval = keep->final, .final = TRUE, .source = ROK_STRATEGY_KEEP};
  return TRUE;
}

gboolean plan_solve(RokPlanner *p, guint64 budget, guint polish_runs, PlanChoice *out) {
  if (plan_keep_fits(p, budget, out))
    return TRUE;
  Solve s = {.p = p, .budget = budget, .cands = g_array_new(FALSE, FALSE, sizeof(PlanChoice)),
             .baselines = g_array_new(FALSE, FALSE, sizeof(PlanChoice)),
             .windows = g_array_new(FALSE, FALSE, sizeof(PlanChoice)), .descent_runs = MAX(polish_runs / 2, 8)};
  add_baselines(&s);
  add_min_memory(&s);
  add_descent(&s);
  add_ascent(&s);
  polish_finalists(&s, polish_runs);
  polish_windows(&s, polish_runs);
  gboolean found = final(&s, out);
  clear_all(s.cands);
  clear_all(s.baselines);
  clear_all(s.windows);
  return found;
}

RokStepPlan *plan_choice_plan(const RokPlanner *p, const PlanChoice *choice) {
  RokStepPlan *plan = rok_step_plan_new(p->trace);
  for (guint t = 0; t < p->n_tensors; t++)
    plan->decisions[t] = plan_decision_of(p, choice->decisions, t);
  plan->options.memory_budget = choice->memory_budget;
  plan->options.rebuild_whole_layers = choice->whole_layers;
  plan->options.prefetch_unit = plan_prefetch[choice->prefetch].unit;
  plan->options.prefetch_window = plan_prefetch[choice->prefetch].window;
  return plan;
}
