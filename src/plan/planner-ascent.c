/* The greedy ascent: from the plan that needs the least memory, give
 * memory back one unit at a time where it saves the most step time per
 * byte of peak added; the descent's mirror image.
 *
 * The two greedy directions fall into different traps (the descent
 * recomputes a tensor cheaply and later finds the tensors rebuilt from it
 * dear; the ascent starts where everything is freed and keeps first what
 * costs most), so each budget gets the better of both. A move is "class
 * c becomes d, from the front or the back": the first (last) unit of c
 * that is not d yet. Prices are lazy as in the descent; a move that saves
 * time without adding peak is made first, the largest saving first. */
#include "planner-private.h"

#include <math.h>

/* Runs the ascent may make at least (more where runs are cheap: as many
 * as refining a plan gets). */
#define ASCENT_RUNS 200

typedef struct {
  guint cls;
  guint8 decision;
  gboolean back;
  gboolean free;   /* saves time, adds no peak */
  double key;      /* free: Δ time (< 0); else Δ peak / time saved; INFINITY: saves nothing */
  gint64 stamp;
  PlanEval eval;
} Move;

typedef struct {
  RokPlanner *p;
  guint8 *decisions, *unit_state, *trial;
  PlanEval eval;
  gint64 version;
  GArray *moves;
  guint64 limit; /* no step is made past this peak */
  guint runs_left;
} Ascent;

static guint move_target(const Ascent *a, const Move *m) {
  const PlanClass *c = plan_class(a->p, m->cls);
  for (guint k = 0; k < c->n_units; k++) {
    guint u = c->first_unit + (m->back ? c->n_units - 1 - k : k);
    if (a->unit_state[u] != m->decision)
      return u;
  }
  return G_MAXUINT;
}

static void add_moves(Ascent *a) {
  static const guint8 order[] = {ROK_DECISION_KEEP, ROK_DECISION_OFFLOAD_NVME, ROK_DECISION_OFFLOAD_HOST,
                                 ROK_DECISION_RECOMPUTE};
  for (guint c = 0; c < a->p->classes->len; c++) {
    const PlanClass *cls = plan_class(a->p, c);
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
      if (!(cls->allowed & (1u << order[i])))
        continue;
      for (guint back = 0; back < (cls->n_units > 1 ? 2u : 1u); back++) {
        Move m = {.cls = c, .decision = order[i], .back = back, .stamp = -1};
        g_array_append_val(a->moves, m);
      }
    }
  }
}

static void measure(Ascent *a, Move *m) {
  guint u = move_target(a, m);
  m->stamp = a->version;
  m->key = INFINITY;
  m->free = FALSE;
  if (u == G_MAXUINT || a->runs_left == 0)
    return;
  a->runs_left--;
  memcpy(a->trial, a->decisions, a->p->n_tensors);
  plan_set_unit(a->p, a->trial, u, m->decision, FALSE, G_MAXUINT);
  if (!plan_eval(a->p, a->trial, PLAN_NO_LIMIT, a->p->options.search_detail, &m->eval) ||
      m->eval.peak > a->limit || m->eval.step_ns >= a->eval.step_ns)
    return;
  double saved = (double)(a->eval.step_ns - m->eval.step_ns);
  m->free = m->eval.peak <= a->eval.peak;
  m->key = m->free ? -saved : ((double)m->eval.peak - (double)a->eval.peak) / saved;
}

/* Free moves first, then the least peak per time saved; never-measured
 * ones before all. */
static gboolean before(const Move *x, const Move *y) {
  if (x->free != y->free)
    return x->free;
  return x->key < y->key;
}

static Move *cheapest(Ascent *a) {
  Move *best = NULL;
  for (guint i = 0; i < a->moves->len; i++) {
    Move *m = &g_array_index(a->moves, Move, i);
    if (m->stamp == a->version && isinf(m->key) && move_target(a, m) == G_MAXUINT)
      continue;
    if (m->stamp < 0)
      return m;
    if (best == NULL || before(m, best))
      best = m;
  }
  return best;
}

static void record(Ascent *a, guint unit, guint8 decision) {
  PlanStep *step = g_new0(PlanStep, 1);
  step->decisions = g_memdup2(a->decisions, MAX(a->p->n_tensors, 1));
  step->eval = a->eval;
  step->unit = unit;
  step->decision = decision;
  g_ptr_array_add(a->p->ascent, step);
}

static gboolean refresh_stale(Ascent *a) {
  gboolean any = FALSE;
  for (guint i = 0; i < a->moves->len; i++) {
    Move *m = &g_array_index(a->moves, Move, i);
    if (m->stamp != a->version) {
      measure(a, m);
      any = TRUE;
    }
  }
  return any;
}

/* Each unit's decision in the starting plan: that of its first member
 * (the least-memory recipes treat a class alike in every layer). */
static void start_state(Ascent *a) {
  for (guint u = 0; u < a->p->units->len; u++) {
    const PlanUnit *unit = plan_unit(a->p, u);
    const PlanClass *c = plan_class(a->p, unit->cls);
    guint8 d = a->decisions[plan_member(a->p, c, unit->lo)];
    plan_set_unit(a->p, a->decisions, u, d, FALSE, G_MAXUINT);
    a->unit_state[u] = d;
  }
}

void plan_ascent(RokPlanner *p) {
  if (p->ascent != NULL)
    return;
  plan_min_memory(p);
  p->ascent = g_ptr_array_new_with_free_func(plan_step_free);
  Ascent a = {.p = p, .moves = g_array_new(FALSE, FALSE, sizeof(Move))};
  a.decisions = g_memdup2(p->min_decisions, MAX(p->n_tensors, 1));
  a.trial = g_new0(guint8, MAX(p->n_tensors, 1));
  a.unit_state = g_new0(guint8, MAX(p->units->len, 1));
  start_state(&a);
  plan_descent(p); /* its first step, keeping everything, bounds the climb */
  a.limit = ((const PlanStep *)g_ptr_array_index(p->descent, 0))->eval.peak;
  /* Big traces: the descent does most of the work; bound the climb. */
  a.runs_left = MAX(ASCENT_RUNS, plan_polish_runs(p, FALSE));
  add_moves(&a);
  if (plan_eval(p, a.decisions, PLAN_NO_LIMIT, p->options.search_detail, &a.eval))
    record(&a, G_MAXUINT, ROK_DECISION_KEEP);
  guint since_refresh = 0, period = MAX(8u, a.moves->len / 2);
  /* At keep's step time no move can save any (no plan runs faster than
   * keeping everything): the climb would only measure every move to find
   * that out. */
  const PlanBaseline *keep = plan_baseline_of(p, ROK_STRATEGY_KEEP);
  gint64 floor = keep->decisions != NULL && keep->search.valid ? keep->search.step_ns : -1;
  for (Move *m; a.eval.valid && a.eval.step_ns > floor && a.runs_left > 0 && (m = cheapest(&a)) != NULL;) {
    if (m->stamp != a.version) {
      measure(&a, m);
      continue;
    }
    if (isinf(m->key)) {
      if (!refresh_stale(&a))
        break;
      continue;
    }
    guint u = move_target(&a, m);
    plan_set_unit(p, a.decisions, u, m->decision, FALSE, G_MAXUINT);
    a.unit_state[u] = m->decision;
    a.eval = m->eval;
    a.version++;
    record(&a, u, m->decision);
    if (++since_refresh >= period) {
      since_refresh = 0;
      for (guint i = 0; i < a.moves->len; i++)
        g_array_index(a.moves, Move, i).stamp = -1;
    }
  }
  g_array_unref(a.moves);
  g_free(a.decisions);
  g_free(a.trial);
  g_free(a.unit_state);
}
