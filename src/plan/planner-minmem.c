/* The least memory any plan needs: the floor of the curve, and what an
 * infeasible budget is told.
 *
 * A few plans that free all they can, in different ways, each run with a
 * budget of one byte (the simulator then waits for every copy that frees
 * memory and reads back only what the next op needs) and as they are; the
 * smallest peak wins. The descent's last plan is one of them. */
#include "planner-private.h"

typedef enum { FREE_RECOMPUTE, FREE_HOST, FREE_NVME, FREE_KEEP } Way;

/* The first of `ways` the tensor may take. */
static guint8 first_allowed(const RokPlanner *p, guint t, const Way *ways, guint n) {
  static const guint8 decision[] = {[FREE_RECOMPUTE] = ROK_DECISION_RECOMPUTE,
                                    [FREE_HOST] = ROK_DECISION_OFFLOAD_HOST,
                                    [FREE_NVME] = ROK_DECISION_OFFLOAD_NVME, [FREE_KEEP] = ROK_DECISION_KEEP};
  for (guint i = 0; i < n; i++)
    if (p->allowed[t] & (1u << decision[ways[i]]))
      return decision[ways[i]];
  return ROK_DECISION_KEEP;
}

/* A layer's input is made by an op of another layer: rebuilding it would
 * re-run the layers below. */
static gboolean layer_input(const RokTrace *trace, const RokTensor *t) {
  return t->layer >= 0 && rok_trace_op(trace, t->producer)->layer != t->layer;
}

static void fill(const RokPlanner *p, guint8 *d, const Way *inside, const Way *inputs, guint n) {
  for (guint t = 0; t < p->n_tensors; t++) {
    const RokTensor *tensor = rok_trace_tensor(p->trace, t);
    gboolean edge = layer_input(p->trace, tensor) || tensor->layer < 0;
    d[t] = first_allowed(p, t, edge ? inputs : inside, n);
  }
}

typedef struct {
  const char *what;
  Way inside[4], inputs[4];
} Recipe;

static const Recipe recipes[] = {
    {"recompute every layer but its input, offload the inputs",
     {FREE_RECOMPUTE, FREE_HOST, FREE_NVME, FREE_KEEP},
     {FREE_HOST, FREE_NVME, FREE_RECOMPUTE, FREE_KEEP}},
    {"recompute every layer but its input, offload the inputs to NVMe",
     {FREE_RECOMPUTE, FREE_NVME, FREE_HOST, FREE_KEEP},
     {FREE_NVME, FREE_HOST, FREE_RECOMPUTE, FREE_KEEP}},
    {"recompute every tensor that can be",
     {FREE_RECOMPUTE, FREE_HOST, FREE_NVME, FREE_KEEP},
     {FREE_RECOMPUTE, FREE_HOST, FREE_NVME, FREE_KEEP}},
    {"offload every saved tensor",
     {FREE_HOST, FREE_NVME, FREE_RECOMPUTE, FREE_KEEP},
     {FREE_HOST, FREE_NVME, FREE_RECOMPUTE, FREE_KEEP}},
    {"offload every saved tensor to NVMe",
     {FREE_NVME, FREE_HOST, FREE_RECOMPUTE, FREE_KEEP},
     {FREE_NVME, FREE_HOST, FREE_RECOMPUTE, FREE_KEEP}},
};

/* The least-memory plan found so far. */
typedef struct {
  guint8 *decisions;
  PlanEval eval;
  guint64 budget; /* the memory_budget option that reached it */
  const char *what;
} Least;

/* Try `d` squeezed and as it is; keep it if it beats the best so far. */
static void consider(RokPlanner *p, const guint8 *d, const char *what, Least *best) {
  const guint64 budgets[] = {1, PLAN_NO_LIMIT};
  for (guint i = 0; i < G_N_ELEMENTS(budgets); i++) {
    PlanEval e;
    if (!plan_eval(p, d, budgets[i], ROK_STEP_DEFAULT_DETAIL_MICRO_BATCHES, &e))
      continue;
    if (best->eval.valid && e.peak > best->eval.peak)
      continue;
    if (best->eval.valid && e.peak == best->eval.peak && e.step_ns >= best->eval.step_ns)
      continue;
    best->eval = e;
    memcpy(best->decisions, d, p->n_tensors);
    best->what = what;
    best->budget = budgets[i];
  }
}

/* The recipes, `also` (NULL: none) and keeping everything. */
static void consider_recipes(RokPlanner *p, const guint8 *also, const char *also_what, Least *best) {
  g_autofree guint8 *d = g_new0(guint8, MAX(p->n_tensors, 1));
  for (guint r = 0; r < G_N_ELEMENTS(recipes); r++) {
    fill(p, d, recipes[r].inside, recipes[r].inputs, G_N_ELEMENTS(recipes[r].inside));
    consider(p, d, recipes[r].what, best);
  }
  if (also != NULL)
    consider(p, also, also_what, best);
  memset(d, ROK_DECISION_KEEP, p->n_tensors);
  consider(p, d, "keep everything", best);
}

void plan_min_memory(RokPlanner *p) {
  if (p->min_done)
    return;
  p->min_done = TRUE;
  Least best = {.decisions = g_new0(guint8, MAX(p->n_tensors, 1)), .budget = PLAN_NO_LIMIT};
  plan_descent(p);
  const PlanStep *last = g_ptr_array_index(p->descent, p->descent->len - 1);
  consider_recipes(p, last->decisions, "the planner's least-memory plan", &best);
  p->min_decisions = best.decisions;
  p->min_eval = best.eval;
  p->min_what = g_strdup(best.what);
  p->min_budget_option = best.budget;
}

guint64 rok_planner_min_budget(RokPlanner *p, const char **how) {
  plan_min_memory(p);
  if (how != NULL)
    *how = p->min_what;
  return p->min_eval.valid ? p->min_eval.peak : G_MAXUINT64;
}

/* `d` (which may be best's own decisions), run as `e` under the least
 * peak so far, becomes the best if it needs no more and runs sooner. */
static void take_if_better(RokPlanner *p, const guint8 *d, const PlanEval *e, Least *best) {
  guint64 least = best->eval.peak;
  if (e->peak > least || (e->peak == least && e->step_ns >= best->eval.step_ns))
    return;
  best->eval = *e;
  best->budget = least;
  memmove(best->decisions, d, p->n_tensors);
}

/* Run `d` held to the least peak so far. */
static void hold_to_least(RokPlanner *p, const guint8 *d, Least *best) {
  PlanEval e;
  if (best->eval.valid && plan_eval(p, d, best->eval.peak, ROK_STEP_DEFAULT_DETAIL_MICRO_BATCHES, &e))
    take_if_better(p, d, &e, best);
}

/* A short refinement of the winner under the least peak (a curve point's
 * runs): what the search at the least budget would do first. */
static void speed_up(RokPlanner *p, Least *best) {
  guint64 least = best->eval.peak;
  g_autofree guint8 *d = g_memdup2(best->decisions, MAX(p->n_tensors, 1));
  PlanEval e;
  if (!best->eval.valid || !plan_eval(p, d, least, p->options.search_detail, &e) || !plan_fits(&e, least))
    return;
  plan_polish(p, d, &e, least, least, plan_polish_runs(p, TRUE));
  /* a speed-up only: a smaller peak at a slower step is not what this looks for */
  if (plan_eval(p, d, least, ROK_STEP_DEFAULT_DETAIL_MICRO_BATCHES, &e) && e.step_ns < best->eval.step_ns)
    take_if_better(p, d, &e, best);
}

RokStepPlan *rok_planner_least_memory(RokPlanner *p, const RokStepPlan *also) {
  g_return_val_if_fail(also == NULL || also->n_tensors == p->n_tensors, NULL);
  g_autofree guint8 *given = also != NULL ? plan_express(p, also) : NULL;
  Least best = {.decisions = g_new0(guint8, MAX(p->n_tensors, 1)), .budget = PLAN_NO_LIMIT};
  consider_recipes(p, given, "the plan given", &best);
  /* As rok_planner_plan_or_least holds its plan to the least budget: the
   * winner and the plan given, run under the least peak rather than
   * squeezed or unbounded, as small a peak sooner. */
  hold_to_least(p, best.decisions, &best);
  if (given != NULL)
    hold_to_least(p, given, &best);
  speed_up(p, &best);
  PlanChoice c = {.decisions = best.decisions, .memory_budget = best.budget};
  RokStepPlan *plan = plan_choice_plan(p, &c);
  plan_choice_clear(&c);
  return plan;
}
