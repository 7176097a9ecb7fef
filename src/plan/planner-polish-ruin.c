/* Ruin and recreate, and block search: the larger moves of the local
 * search on small traces. */
#include <string.h>

#include "planner-polish-private.h"

/* Block search: at most this many tensors, this many combinations. */
#define BLOCK_LIMIT_TENSORS 5
#define BLOCK_LIMIT 256

/* Free memory from s->trial until it fits: each time the change of one
 * kept tensor (not `spare`) with the least step time per byte of peak
 * freed, or, once one change is enough, the fastest such change. FALSE
 * when it cannot be made to fit. */
gboolean polish_recreate(Polish *s, guint spare, PlanEval *e) {
  RokPlanner *p = s->p;
  g_autofree guint8 *probe = g_new(guint8, MAX(p->n_tensors, 1));
  while (!plan_fits(e, s->budget)) {
    double best_key = G_MAXDOUBLE;
    guint best_t = G_MAXUINT;
    guint8 best_d = 0;
    PlanEval best_e = {0};
    gboolean best_fits = FALSE;
    for (guint m = 0; m < p->members->len && !polish_spent(s); m++) {
      guint t = g_array_index(p->members, guint, m);
      if (t == spare || s->trial[t] != ROK_DECISION_KEEP)
        continue;
      for (guint k = 1; k < G_N_ELEMENTS(polish_decisions); k++) {
        guint8 d = polish_decisions[k];
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
  if (spare == G_MAXUINT || polish_spent(s))
    return FALSE;
  PlanEval e;
  s->runs++;
  if (!plan_eval(s->p, s->trial, s->memory_budget, s->p->options.search_detail, &e) ||
      !polish_recreate(s, n == 1 ? spare : G_MAXUINT, &e) || !plan_better(&e, s->eval, s->budget))
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

/* Every decision vector of the tensors `ids` (the rest of the plan as it
 * is); the best is kept. */
static gboolean block_search(Polish *s, const guint *ids, guint n) {
  RokPlanner *p = s->p;
  guint64 combos = 1;
  for (guint i = 0; i < n; i++)
    combos *= (guint64)__builtin_popcount(p->allowed[ids[i]]);
  if (n < 2 || combos > BLOCK_LIMIT)
    return FALSE;
  gboolean improved = FALSE;
  guint8 digits[BLOCK_LIMIT_TENSORS] = {0};
  for (guint64 k = 0; k < combos && !polish_spent(s); k++) {
    memcpy(s->trial, s->cur, p->n_tensors);
    for (guint i = 0; i < n; i++)
      s->trial[ids[i]] = digits[i];
    improved |= polish_try(s);
    for (guint i = 0; i < n; i++) { /* the next vector, mixed radix */
      while (++digits[i] < ROK_DECISION_COUNT && !(p->allowed[ids[i]] & (1u << digits[i])))
        ;
      if (digits[i] < ROK_DECISION_COUNT)
        break;
      digits[i] = 0;
    }
  }
  return improved;
}

/* Block coordinate search: each layer's tensors (and those outside the
 * layers) decided together, every combination, the others held. */
gboolean polish_block_pass(Polish *s) {
  gboolean improved = FALSE;
  for (gint layer = -1; layer < (gint)s->p->trace->layers && !polish_spent(s); layer++) {
    guint ids[BLOCK_LIMIT_TENSORS], n = 0;
    gboolean fits = TRUE;
    for (guint m = 0; m < s->p->members->len; m++) {
      guint t = g_array_index(s->p->members, guint, m);
      if (rok_trace_tensor(s->p->trace, t)->layer != layer)
        continue;
      fits &= n < BLOCK_LIMIT_TENSORS;
      if (fits)
        ids[n++] = t;
    }
    if (fits)
      improved |= block_search(s, ids, n);
  }
  return improved;
}

gboolean polish_ruin_pass(Polish *s) {
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
