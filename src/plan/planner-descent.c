/* The greedy descent: from keeping everything, free peak memory one unit
 * at a time, always where the simulator says it costs the least step time
 * per byte.
 *
 * A move is "class c, decision d, from the front (first layers) or the
 * back": it takes the first (last) unit of c that is still kept. Offloads
 * come from the front only: the last layers' copies are still running
 * when backward needs them, so they free nothing at the peak. A move's
 * price, Δ step time / Δ peak, is measured by simulating it; prices are
 * re-measured lazily (the cheapest stale price is re-measured; if it is
 * still the cheapest, the move is made). A move that frees nothing at the
 * peak is parked; when only parked moves are left, all are measured again
 * (the peak may have moved), and the descent ends when none frees any.
 * (Re-measuring every price every few steps, for changes that make others
 * cheaper, cost a fifth more runs for no better plans.)
 *
 * Two uses. The shared descent runs every plan unbounded (each shows its
 * own peak) from keeping everything to where no move frees anything; its
 * steps serve every budget. A descent under a budget runs every plan with
 * that memory_budget option, where the simulator waits for copies to
 * finish rather than exceed it (an offload too slow to free memory by
 * itself then frees it at the price of the wait), from the last shared
 * step that does not fit until the plan fits. */
#include "planner-private.h"

#include <math.h>

typedef struct {
  guint cls;
  guint8 decision;
  gboolean back;
  double key;      /* Δ time / Δ peak at `stamp` */
  gint64 stamp;    /* plan version it was measured at; -1: never */
  PlanEval eval;   /* the plan with the move made, at `stamp` */
} Move;

typedef struct {
  RokPlanner *p;
  guint8 *decisions;  /* current plan */
  guint8 *unit_state; /* per unit: its decision */
  guint8 *trial;
  PlanEval eval;
  gint64 version;
  GArray *moves;
  guint64 memory_budget; /* of every run */
  guint64 stop_at;       /* stop once the peak is at most this (0: never) */
  guint runs_left;
  GPtrArray *steps;      /* where steps are recorded, or NULL */
} Descent;

void plan_step_free(gpointer data) {
  PlanStep *step = data;
  g_free(step->decisions);
  g_free(step);
}

/* The unit a move takes now, or G_MAXUINT when the class has none kept. */
static guint move_target(const Descent *d, const Move *m) {
  const PlanClass *c = plan_class(d->p, m->cls);
  for (guint k = 0; k < c->n_units; k++) {
    guint u = c->first_unit + (m->back ? c->n_units - 1 - k : k);
    if (d->unit_state[u] == ROK_DECISION_KEEP)
      return u;
  }
  return G_MAXUINT;
}

static void add_moves(Descent *d) {
  static const guint8 order[] = {ROK_DECISION_OFFLOAD_NVME, ROK_DECISION_OFFLOAD_HOST, ROK_DECISION_RECOMPUTE};
  for (guint c = 0; c < d->p->classes->len; c++) {
    const PlanClass *cls = plan_class(d->p, c);
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
      if (!(cls->allowed & (1u << order[i])))
        continue;
      Move m = {.cls = c, .decision = order[i], .stamp = -1};
      g_array_append_val(d->moves, m);
      if (order[i] == ROK_DECISION_RECOMPUTE && cls->n_units > 1) {
        m.back = TRUE;
        g_array_append_val(d->moves, m);
      }
    }
  }
}

static void measure(Descent *d, Move *m) {
  guint u = move_target(d, m);
  m->stamp = d->version;
  m->key = INFINITY;
  if (u == G_MAXUINT || d->runs_left == 0)
    return;
  d->runs_left--;
  memcpy(d->trial, d->decisions, d->p->n_tensors);
  plan_set_unit(d->p, d->trial, u, m->decision, m->back, G_MAXUINT);
  if (!plan_eval(d->p, d->trial, d->memory_budget, d->p->options.search_detail, &m->eval))
    return;
  double freed = (double)d->eval.peak - (double)m->eval.peak;
  if (freed > 0)
    m->key = (double)(m->eval.step_ns - d->eval.step_ns) / freed;
}

static void record(Descent *d, guint unit, const Move *m) {
  if (d->steps == NULL)
    return;
  PlanStep *step = g_new0(PlanStep, 1);
  step->decisions = g_memdup2(d->decisions, MAX(d->p->n_tensors, 1));
  step->eval = d->eval;
  step->unit = unit;
  step->decision = m ? m->decision : ROK_DECISION_KEEP;
  step->back = m ? m->back : FALSE;
  g_ptr_array_add(d->steps, step);
}

/* The cheapest move by its last price; stale ones not yet measured come
 * first. NULL when no move has a unit left. */
static Move *cheapest(Descent *d) {
  Move *best = NULL;
  for (guint i = 0; i < d->moves->len; i++) {
    Move *m = &g_array_index(d->moves, Move, i);
    if (m->stamp == d->version && isinf(m->key) && move_target(d, m) == G_MAXUINT)
      continue;
    if (m->stamp < 0)
      return m;
    if (best == NULL || m->key < best->key)
      best = m;
  }
  return best;
}

static gboolean refresh_stale(Descent *d) {
  gboolean any = FALSE;
  for (guint i = 0; i < d->moves->len && d->runs_left > 0; i++) {
    Move *m = &g_array_index(d->moves, Move, i);
    if (m->stamp != d->version) {
      measure(d, m);
      any = TRUE;
    }
  }
  return any;
}

static void apply(Descent *d, Move *m) {
  guint u = move_target(d, m);
  plan_set_unit(d->p, d->decisions, u, m->decision, m->back, G_MAXUINT);
  d->unit_state[u] = m->decision;
  d->eval = m->eval;
  d->version++;
  record(d, u, m);
}

static void run(Descent *d) {
  for (Move *m; d->eval.valid && (d->stop_at == 0 || d->eval.peak > d->stop_at) && (m = cheapest(d)) != NULL;) {
    if (m->stamp != d->version) {
      if (d->runs_left == 0)
        break;
      measure(d, m);
      continue;
    }
    if (isinf(m->key)) {
      if (!refresh_stale(d))
        break;
      continue;
    }
    apply(d, m);
  }
}

/* Start from `decisions`, whose units are uniform (as descent steps are). */
static void init(Descent *d, RokPlanner *p, const guint8 *decisions) {
  *d = (Descent){.p = p, .moves = g_array_new(FALSE, FALSE, sizeof(Move)), .memory_budget = PLAN_NO_LIMIT,
                 .runs_left = G_MAXUINT};
  d->decisions = g_memdup2(decisions, MAX(p->n_tensors, 1));
  d->trial = g_new0(guint8, MAX(p->n_tensors, 1));
  d->unit_state = g_new0(guint8, MAX(p->units->len, 1));
  for (guint u = 0; u < p->units->len; u++) {
    const PlanUnit *unit = plan_unit(p, u);
    d->unit_state[u] = decisions[plan_member(p, plan_class(p, unit->cls), unit->lo)];
  }
  add_moves(d);
}

static void clear(Descent *d) {
  g_array_unref(d->moves);
  g_free(d->decisions);
  g_free(d->trial);
  g_free(d->unit_state);
}

void plan_descent(RokPlanner *p) {
  if (p->descent != NULL)
    return;
  p->descent = g_ptr_array_new_with_free_func(plan_step_free);
  g_autofree guint8 *keep = g_new0(guint8, MAX(p->n_tensors, 1));
  Descent d;
  init(&d, p, keep);
  d.steps = p->descent;
  plan_eval(p, d.decisions, PLAN_NO_LIMIT, p->options.search_detail, &d.eval);
  record(&d, G_MAXUINT, NULL);
  run(&d);
  clear(&d);
}

gboolean plan_descent_under(RokPlanner *p, const guint8 *start, guint64 budget, guint max_runs, guint8 *out,
                            PlanEval *eval) {
  Descent d;
  init(&d, p, start);
  d.memory_budget = d.stop_at = budget;
  d.runs_left = max_runs;
  gboolean fits = plan_eval(p, d.decisions, budget, p->options.search_detail, &d.eval);
  if (fits) {
    run(&d);
    fits = plan_fits(&d.eval, budget);
  }
  if (fits) {
    memcpy(out, d.decisions, p->n_tensors);
    *eval = d.eval;
  }
  clear(&d);
  return fits;
}
