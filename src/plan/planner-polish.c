/* Local search around a plan that fits: change one unit, then one tensor,
 * to any other decision; on small traces also two tensors at once,
 * ruin-and-recreate and every combination of a layer's tensors
 * (planner-polish-ruin.c); then iterated local search
 * (planner-polish-ils.c). A change is kept when the simulator says the
 * plan still fits and is better (faster; as fast, fewer bytes moved, ...).
 * Passes repeat until nothing improves or the runs are spent. Units the
 * descent changed last are tried first: they were its dearest steps, the
 * likeliest to be undone. */
#include "planner-polish-private.h"

const guint8 polish_decisions[ROK_DECISION_COUNT] = {ROK_DECISION_KEEP, ROK_DECISION_OFFLOAD_NVME,
                                                     ROK_DECISION_OFFLOAD_HOST, ROK_DECISION_RECOMPUTE};

/* Judge s->trial; take it when better. */
gboolean polish_try(Polish *s) {
  if (polish_spent(s))
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
gboolean polish_try_group(Polish *s, const guint *ids, guint n, guint8 d) {
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
  return polish_try(s);
}
gboolean polish_unit_pass(Polish *s, const guint *order, guint n_order) {
  gboolean improved = FALSE;
  for (guint i = 0; i < n_order && !polish_spent(s); i++) {
    const PlanUnit *u = plan_unit(s->p, order[i]);
    const PlanClass *c = plan_class(s->p, u->cls);
    const guint *ids = &g_array_index(s->p->members, guint, c->first + u->lo);
    for (guint k = 0; k < G_N_ELEMENTS(polish_decisions); k++)
      improved |= polish_try_group(s, ids, u->hi - u->lo, polish_decisions[k]);
  }
  return improved;
}

/* One decision for a whole class (all its layers): plans a per-unit search
 * reaches only through worse ones, the exact search's winners on real
 * model slices. */
static gboolean class_pass(Polish *s) {
  gboolean improved = FALSE;
  for (guint c = 0; c < s->p->classes->len && !polish_spent(s); c++) {
    const PlanClass *cls = plan_class(s->p, c);
    if (cls->n_units < 2)
      continue; /* the unit pass tries it */
    const guint *ids = &g_array_index(s->p->members, guint, cls->first);
    for (guint k = 0; k < G_N_ELEMENTS(polish_decisions); k++)
      improved |= polish_try_group(s, ids, cls->n, polish_decisions[k]);
  }
  return improved;
}

gboolean polish_tensor_pass(Polish *s) {
  gboolean improved = FALSE;
  for (guint m = 0; m < s->p->members->len && !polish_spent(s); m++) {
    guint t = g_array_index(s->p->members, guint, m);
    for (guint k = 0; k < G_N_ELEMENTS(polish_decisions); k++)
      improved |= polish_try_group(s, &t, 1, polish_decisions[k]);
  }
  return improved;
}

static gboolean pair_pass(Polish *s) {
  gboolean improved = FALSE;
  const GArray *members = s->p->members;
  for (guint a = 0; a < members->len && !polish_spent(s); a++)
    for (guint b = a + 1; b < members->len && !polish_spent(s); b++) {
      guint ta = g_array_index(members, guint, a), tb = g_array_index(members, guint, b);
      for (guint i = 0; i < G_N_ELEMENTS(polish_decisions); i++)
        for (guint j = 0; j < G_N_ELEMENTS(polish_decisions); j++) {
          guint8 da = polish_decisions[i], db = polish_decisions[j];
          if (da == s->cur[ta] || db == s->cur[tb] || !(s->p->allowed[ta] & (1u << da)) ||
              !(s->p->allowed[tb] & (1u << db)))
            continue;
          memcpy(s->trial, s->cur, s->p->n_tensors);
          s->trial[ta] = da;
          s->trial[tb] = db;
          improved |= polish_try(s);
        }
    }
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

void plan_polish(RokPlanner *p, guint8 *decisions, PlanEval *eval, guint64 budget, guint64 memory_budget,
                 guint max_runs) {
  Polish s = {.p = p, .cur = decisions, .eval = eval, .budget = budget, .memory_budget = memory_budget,
              .max_runs = max_runs};
  if (!plan_fits(eval, budget))
    return;
  s.trial = g_new(guint8, MAX(p->n_tensors, 1));
  g_autofree guint *order = unit_order(p);
  while ((class_pass(&s) | polish_unit_pass(&s, order, p->units->len)) && !polish_spent(&s))
    ;
  gboolean fine = p->members->len > p->units->len; /* else units are tensors already */
  while (fine && polish_tensor_pass(&s) && !polish_spent(&s))
    ;
  while (polish_small(&s) && (pair_pass(&s) | polish_ruin_pass(&s) | polish_block_pass(&s)) && !polish_spent(&s))
    while (polish_tensor_pass(&s) && !polish_spent(&s))
      ;
  polish_iterate(&s, order);
  g_free(s.trial);
}
