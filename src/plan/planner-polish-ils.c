/* Iterated local search: the last stage of refining a plan. */
#include <string.h>

#include "planner-polish-private.h"

/* Shakes in a row without gain before the search stops. */
#define ILS_PATIENCE 100

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
    guint8 d = polish_decisions[g_rand_int_range(rng, 0, G_N_ELEMENTS(polish_decisions))];
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
void polish_iterate(Polish *s, const guint *order) {
  RokPlanner *p = s->p;
  gboolean small = polish_small(s);
  g_autoptr(GRand) rng = g_rand_new_with_seed(0x524f4b);
  g_autofree guint8 *best = g_memdup2(s->cur, MAX(p->n_tensors, 1));
  PlanEval best_eval = *s->eval;
  for (guint idle = 0; idle < ILS_PATIENCE && !polish_spent(s); idle++) {
    memcpy(s->trial, best, p->n_tensors);
    shake(s, rng, (guint)g_rand_int_range(rng, 2, 5), small);
    PlanEval e;
    s->runs++;
    if (!plan_eval(p, s->trial, s->memory_budget, p->options.search_detail, &e))
      continue;
    if (!plan_fits(&e, s->budget) && (!small || !polish_recreate(s, G_MAXUINT, &e)))
      continue;
    memcpy(s->cur, s->trial, p->n_tensors);
    *s->eval = e;
    while ((small ? polish_tensor_pass(s) : polish_unit_pass(s, order, p->units->len)) && !polish_spent(s))
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
