/* Local search around a plan that fits: change one unit, then one tensor,
 * then (small traces) two tensors at once, to any other decision; keep a
 * change when the simulator says the plan still fits and is faster (or as
 * fast and smaller). Passes repeat until nothing improves or the runs are
 * spent. Units the descent changed last are tried first: they were its
 * dearest steps, the likeliest to be undone. */
#include "plan/planner-private.h"

/* Pairs of tensors are tried when there are at most this many saved. */
#define PAIR_LIMIT 24
/* Shakes in a row without gain before the iterated search stops. */
#define ILS_PATIENCE 100

typedef struct {
  RokPlanner *p;
  guint8 *cur, *trial;
  PlanEval *eval;
  guint64 budget, memory_budget;
  guint runs, max_runs;
} Polish;

static const guint8 decision_order[] = {ROK_DECISION_KEEP, ROK_DECISION_OFFLOAD_NVME, ROK_DECISION_OFFLOAD_HOST,
                                        ROK_DECISION_RECOMPUTE};

static gboolean spent(const Polish *s) {
  return s->runs >= s->max_runs;
}

/* Judge s->trial; take it when better. */
static gboolean try_trial(Polish *s) {
  if (spent(s))
    return FALSE;
  s->runs++;
  PlanEval e;
  plan_eval(s->p, s->trial, s->memory_budget, s->p->options.search_detail, &e);
  if (!plan_fits(&e, s->budget) || !plan_better(&e, s->eval, s->budget))
    return FALSE;
  memcpy(s->cur, s->trial, s->p->n_tensors);
  *s->eval = e;
  return TRUE;
}

/* Set tensors `ids` to `d` unless they all are already or one may not. */
static gboolean try_group(Polish *s, const guint *ids, guint n, guint8 d) {
  gboolean change = FALSE;
  for (guint i = 0; i < n; i++) {
    if (!(s->p->allowed[ids[i]] & (1u << d)))
      return FALSE;
    change |= s->cur[ids[i]] != d;
  }
  if (!change)
    return FALSE;
  memcpy(s->trial, s->cur, s->p->n_tensors);
  for (guint i = 0; i < n; i++)
    s->trial[ids[i]] = d;
  return try_trial(s);
}

static gboolean unit_pass(Polish *s, const guint *order, guint n_order) {
  gboolean improved = FALSE;
  for (guint i = 0; i < n_order && !spent(s); i++) {
    const PlanUnit *u = plan_unit(s->p, order[i]);
    const PlanClass *c = plan_class(s->p, u->cls);
    const guint *ids = &g_array_index(s->p->members, guint, c->first + u->lo);
    for (guint k = 0; k < G_N_ELEMENTS(decision_order); k++)
      improved |= try_group(s, ids, u->hi - u->lo, decision_order[k]);
  }
  return improved;
}

static gboolean tensor_pass(Polish *s) {
  gboolean improved = FALSE;
  for (guint m = 0; m < s->p->members->len && !spent(s); m++) {
    guint t = g_array_index(s->p->members, guint, m);
    for (guint k = 0; k < G_N_ELEMENTS(decision_order); k++)
      improved |= try_group(s, &t, 1, decision_order[k]);
  }
  return improved;
}

static gboolean pair_pass(Polish *s) {
  gboolean improved = FALSE;
  const GArray *members = s->p->members;
  for (guint a = 0; a < members->len && !spent(s); a++)
    for (guint b = a + 1; b < members->len && !spent(s); b++) {
      guint ta = g_array_index(members, guint, a), tb = g_array_index(members, guint, b);
      for (guint i = 0; i < G_N_ELEMENTS(decision_order); i++)
        for (guint j = 0; j < G_N_ELEMENTS(decision_order); j++) {
          guint8 da = decision_order[i], db = decision_order[j];
          if (da == s->cur[ta] || db == s->cur[tb] || !(s->p->allowed[ta] & (1u << da)) ||
              !(s->p->allowed[tb] & (1u << db)))
            continue;
          memcpy(s->trial, s->cur, s->p->n_tensors);
          s->trial[ta] = da;
          s->trial[tb] = db;
          improved |= try_trial(s);
        }
    }
  return improved;
}

/* Free memory from s->trial until it fits: each time the change of one
 * kept tensor (not `spare`) with the least step time per byte of peak
 * freed, or, once one change is enough, the fastest such change. FALSE
 * when it cannot be made to fit. */
static gboolean recreate(Polish *s, guint spare, PlanEval *e) {
  RokPlanner *p = s->p;
  g_autofree guint8 *probe = g_new(guint8, MAX(p->n_tensors, 1));
  while (!plan_fits(e, s->budget)) {
    double best_key = G_MAXDOUBLE;
    guint best_t = G_MAXUINT;
    guint8 best_d = 0;
    PlanEval best_e = {0};
    gboolean best_fits = FALSE;
    for (guint m = 0; m < p->members->len && !spent(s); m++) {
      guint t = g_array_index(p->members, guint, m);
      if (t == spare || s->trial[t] != ROK_DECISION_KEEP)
        continue;
      for (guint k = 1; k < G_N_ELEMENTS(decision_order); k++) {
        guint8 d = decision_order[k];
        if (!(p->allowed[t] & (1u << d)))
          continue;
        memcpy(probe, s->trial, p->n_tensors);
        probe[t] = d;
        PlanEval pe;
        s->runs++;
        if (!plan_eval(p, probe, s->memory_budget, p->options.search_detail, &pe) || pe.peak >= e->peak)
          continue;
        gboolean fits = plan_fits(&pe, s->budget);
        double key = fits ? (double)pe.step_ns : (double)(pe.step_ns - e->step_ns) / (double)(e->peak - pe.peak);
        if (fits > best_fits || (fits == best_fits && key < best_key)) {
          best_key = key;
          best_fits = fits;
          best_t = t;
          best_d = d;
          best_e = pe;
        }
      }
    }
    if (best_t == G_MAXUINT)
      return FALSE;
    s->trial[best_t] = best_d;
    *e = best_e;
  }
  return TRUE;
}

/* Ruin and recreate: keep some offloaded or recomputed tensors, then free
 * memory elsewhere, greedily, until the plan fits again. Finds trades of
 * some decisions for others that single and pair changes cannot (say,
 * recomputing a tensor is cheap only while the one it is rebuilt from is
 * kept). The ruins: each tensor on its own; together, the tensors of a
 * class, of a layer, of a decision (every offload to NVMe, ...). */
static gboolean ruin(Polish *s, const guint *ids, guint n) {
  memcpy(s->trial, s->cur, s->p->n_tensors);
  guint spare = G_MAXUINT;
  for (guint i = 0; i < n; i++)
    if (s->trial[ids[i]] != ROK_DECISION_KEEP) {
      s->trial[ids[i]] = ROK_DECISION_KEEP;
      spare = ids[i];
    }
  if (spare == G_MAXUINT || spent(s))
    return FALSE;
  PlanEval e;
  s->runs++;
  if (!plan_eval(s->p, s->trial, s->memory_budget, s->p->options.search_detail, &e) ||
      !recreate(s, n == 1 ? spare : G_MAXUINT, &e) || !plan_better(&e, s->eval, s->budget))
    return FALSE;
  memcpy(s->cur, s->trial, s->p->n_tensors);
  *s->eval = e;
  return TRUE;
}

/* Ruin the tensors whose `key` (class, layer or decision) equals `value`. */
static gboolean ruin_where(Polish *s, gint key, gint value) {
  g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint c = 0; c < s->p->classes->len; c++) {
    const PlanClass *cls = plan_class(s->p, c);
    for (guint i = 0; i < cls->n; i++) {
      guint t = plan_member(s->p, cls, i);
      gint v = key == 0 ? (gint)c : key == 1 ? rok_trace_tensor(s->p->trace, t)->layer : (gint)s->cur[t];
      if (v == value)
        g_array_append_val(ids, t);
    }
  }
  return ids->len > 1 && ruin(s, (const guint *)ids->data, ids->len);
}

static gboolean ruin_pass(Polish *s) {
  gboolean improved = FALSE;
  for (guint m = 0; m < s->p->members->len; m++)
    improved |= ruin(s, &g_array_index(s->p->members, guint, m), 1);
  for (guint c = 0; c < s->p->classes->len; c++)
    improved |= ruin_where(s, 0, (gint)c);
  for (gint l = -1; l < (gint)s->p->trace->layers; l++)
    improved |= ruin_where(s, 1, l);
  for (guint d = 1; d < ROK_DECISION_COUNT; d++)
    improved |= ruin_where(s, 2, (gint)d);
  return improved;
}

/* Units in the order to try them: those the descent changed, last first,
 * then the rest in order. */
static guint *unit_order(const RokPlanner *p) {
  guint n = p->units->len;
  guint *order = g_new(guint, MAX(n, 1));
  g_autofree gboolean *seen = g_new0(gboolean, MAX(n, 1));
  guint k = 0;
  for (guint i = p->descent ? p->descent->len : 0; i-- > 0;) {
    guint u = ((const PlanStep *)g_ptr_array_index(p->descent, i))->unit;
    if (u < n && !seen[u]) {
      seen[u] = TRUE;
      order[k++] = u;
    }
  }
  for (guint u = 0; u < n; u++)
    if (!seen[u])
      order[k++] = u;
  return order;
}

/* Shake the plan in s->trial: `k` random units (tensors when `small`) to
 * other decisions they may take. */
static void shake(Polish *s, GRand *rng, guint k, gboolean small) {
  RokPlanner *p = s->p;
  for (guint i = 0; i < k; i++) {
    guint n = small ? p->members->len : p->units->len;
    guint g = (guint)g_rand_int_range(rng, 0, (gint32)n);
    const guint *ids;
    guint count;
    if (small) {
      ids = &g_array_index(p->members, guint, g);
      count = 1;
    } else {
      const PlanUnit *u = plan_unit(p, g);
      ids = &g_array_index(p->members, guint, plan_class(p, u->cls)->first + u->lo);
      count = u->hi - u->lo;
    }
    guint8 d = decision_order[g_rand_int_range(rng, 0, G_N_ELEMENTS(decision_order))];
    gboolean ok = TRUE;
    for (guint j = 0; j < count; j++)
      ok &= (p->allowed[ids[j]] & (1u << d)) != 0;
    for (guint j = 0; ok && j < count; j++)
      s->trial[ids[j]] = d;
  }
}

/* Iterated local search: shake the best plan (two to four units, or
 * tensors in small traces, to random decisions; seeded, so the same every
 * run), make it fit again, climb to a local optimum with single changes,
 * and keep it when it beats the best. Ends after ILS_PATIENCE shakes in a
 * row without gain, or when the runs are spent. */
static void iterated_search(Polish *s, const guint *order) {
  RokPlanner *p = s->p;
  gboolean small = p->members->len <= PAIR_LIMIT;
  g_autoptr(GRand) rng = g_rand_new_with_seed(0x524f4b);
  g_autofree guint8 *best = g_memdup2(s->cur, MAX(p->n_tensors, 1));
  PlanEval best_eval = *s->eval;
  for (guint idle = 0; idle < ILS_PATIENCE && !spent(s); idle++) {
    memcpy(s->trial, best, p->n_tensors);
    shake(s, rng, (guint)g_rand_int_range(rng, 2, 5), small);
    PlanEval e;
    s->runs++;
    if (!plan_eval(p, s->trial, s->memory_budget, p->options.search_detail, &e))
      continue;
    if (!plan_fits(&e, s->budget) && (!small || !recreate(s, G_MAXUINT, &e)))
      continue;
    memcpy(s->cur, s->trial, p->n_tensors);
    *s->eval = e;
    while ((small ? tensor_pass(s) : unit_pass(s, order, p->units->len)) && !spent(s))
      ;
    if (plan_better(s->eval, &best_eval, s->budget)) {
      memcpy(best, s->cur, p->n_tensors);
      best_eval = *s->eval;
      idle = 0;
    }
  }
  memcpy(s->cur, best, p->n_tensors);
  *s->eval = best_eval;
}

void plan_polish(RokPlanner *p, guint8 *decisions, PlanEval *eval, guint64 budget, guint64 memory_budget,
                 guint max_runs) {
  Polish s = {.p = p, .cur = decisions, .eval = eval, .budget = budget, .memory_budget = memory_budget,
              .max_runs = max_runs};
  if (!plan_fits(eval, budget))
    return;
  s.trial = g_new(guint8, MAX(p->n_tensors, 1));
  g_autofree guint *order = unit_order(p);
  while (unit_pass(&s, order, p->units->len) && !spent(&s))
    ;
  gboolean fine = p->members->len > p->units->len; /* else units are tensors already */
  while (fine && tensor_pass(&s) && !spent(&s))
    ;
  gboolean small = p->members->len <= PAIR_LIMIT;
  while (small && (pair_pass(&s) | ruin_pass(&s)) && !spent(&s))
    while (tensor_pass(&s) && !spent(&s))
      ;
  iterated_search(&s, order);
  g_free(s.trial);
}
