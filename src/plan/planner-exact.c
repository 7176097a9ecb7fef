/* The exact optimum of a small trace: every decision of every saved
 * tensor (of every group's representative, at a coarser granularity),
 * each plan run under the budget with every prefetch window. The
 * yardstick the planner is tested against (test-planner-exact on
 * synthetic traces, tests/bench/bench-plan-exact.sh on real model
 * slices). */
#include "planner-private.h"

#include "rok/core.h"

/* Plans to enumerate, or G_MAXUINT64 past `limit`. */
static guint64 count_plans(const RokPlanner *p, guint64 limit) {
  guint64 n = 1;
  for (guint m = 0; m < p->members->len; m++) {
    guint options = (guint)__builtin_popcount(p->allowed[g_array_index(p->members, guint, m)]);
    if (n > limit / options)
      return G_MAXUINT64;
    n *= options;
  }
  return n;
}

/* The next decision vector in mixed radix (member 0 fastest); FALSE after
 * the last. */
static gboolean next(const RokPlanner *p, guint8 *d) {
  for (guint m = 0; m < p->members->len; m++) {
    guint t = g_array_index(p->members, guint, m);
    guint8 x = d[t];
    while (++x < ROK_DECISION_COUNT && !(p->allowed[t] & (1u << x)))
      ;
    if (x < ROK_DECISION_COUNT) {
      d[t] = x;
      return TRUE;
    }
    d[t] = ROK_DECISION_KEEP;
  }
  return FALSE;
}

static gboolean has_reads(const RokPlanner *p, const guint8 *d) {
  for (guint t = 0; t < p->n_tensors; t++) {
    guint8 x = plan_decision_of(p, d, t);
    if (x == ROK_DECISION_OFFLOAD_NVME || x == ROK_DECISION_OFFLOAD_HOST)
      return TRUE;
  }
  return FALSE;
}

RokStepPlan *rok_planner_exhaustive(RokPlanner *p, guint64 budget, guint64 max_plans, RokSimResult **result,
                                   GError **error) {
  if (count_plans(p, max_plans) > max_plans) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "exhaustive search: %u saved tensors make more than %" G_GUINT64_FORMAT " plans", p->members->len,
                max_plans);
    return NULL;
  }
  g_autofree guint8 *d = g_new0(guint8, MAX(p->n_tensors, 1));
  g_autofree guint8 *best = g_new0(guint8, MAX(p->n_tensors, 1));
  PlanEval best_eval = {0};
  guint best_prefetch = 0;
  do {
    /* A plan that reads back is run with every prefetch window, as the
     * planner's final judgement runs its finalists. */
    guint settings = has_reads(p, d) ? PLAN_PREFETCH_SETTINGS : 1;
    for (guint k = 0; k < settings; k++) {
      PlanEval e;
      p->prefetch = k;
      plan_eval(p, d, budget, ROK_STEP_DEFAULT_DETAIL_MICRO_BATCHES, &e);
      p->prefetch = 0;
      if (plan_fits(&e, budget) && (!best_eval.valid || plan_better(&e, &best_eval, budget))) {
        best_eval = e;
        best_prefetch = k;
        memcpy(best, d, p->n_tensors);
      }
    }
  } while (next(p, d));
  if (!plan_fits(&best_eval, budget)) {
    plan_no_fit(p, budget, error);
    return NULL;
  }
  PlanChoice choice = {.decisions = best, .memory_budget = budget, .prefetch = best_prefetch, .eval = best_eval};
  RokStepPlan *plan = plan_choice_plan(p, &choice);
  if (result != NULL && (*result = rok_sim_run(p->sim, plan, error)) == NULL) {
    rok_step_plan_free(plan);
    return NULL;
  }
  return plan;
}
