/* The planner's context: options, what each tensor may become, and
 * judging a plan with the simulator. */
#include "planner-private.h"

#include "rok/core.h"

/* SSDTrain's chunk of two modules (one layer) ahead first; on demand only;
 * two layers; a module; SSDTrain's two leaf ops; four. A smaller window
 * holds less memory, a larger one hides more of the reads. */
const PlanPrefetch plan_prefetch[PLAN_PREFETCH_SETTINGS] = {
    {ROK_PREFETCH_LAYER, 1}, {ROK_PREFETCH_LAYER, 0}, {ROK_PREFETCH_LAYER, 2},
    {ROK_PREFETCH_MODULE, 1}, {ROK_PREFETCH_OP, 2},   {ROK_PREFETCH_OP, 4},
};

void rok_planner_options_init(RokPlannerOptions *options) {
  *options = (RokPlannerOptions){.host_memory = G_MAXUINT64, .use_nvme = TRUE, .search_detail = 1,
                                 .wear_tolerance = ROK_PLAN_WEAR_TOLERANCE};
  rok_strategy_options_init(&options->strategy);
}

/* Host memory offloads may fill: the option, else what the pinned staging
 * buffer leaves. */
static guint64 host_limit(const RokHw *hw, const RokPlannerOptions *o) {
  if (o->host_memory != G_MAXUINT64)
    return o->host_memory;
  return hw->host.memory > hw->host.pinned_buffer ? hw->host.memory - hw->host.pinned_buffer : 0;
}

static guint64 elements(const RokTensor *tensor) {
  guint64 n = 1;
  for (guint d = 0; d < tensor->rank; d++)
    n *= tensor->shape[d];
  return n;
}

static void allowed_decisions(RokPlanner *p) {
  guint tiers = p->options.tiers ? p->options.tiers : (1u << ROK_DECISION_COUNT) - 1;
  for (guint t = 0; t < p->n_tensors; t++) {
    const RokTensor *tensor = rok_trace_tensor(p->trace, t);
    guint8 mask = 1u << ROK_DECISION_KEEP;
    if (rok_tensor_is_saved(tensor)) {
      gboolean movable = elements(tensor) >= p->options.offload_min_elements;
      if (tensor->recomputable)
        mask |= 1u << ROK_DECISION_RECOMPUTE;
      if (movable && p->options.use_nvme && p->hw->nvme.devices > 0)
        mask |= 1u << ROK_DECISION_OFFLOAD_NVME;
      if (movable && tensor->bytes <= p->host_limit)
        mask |= 1u << ROK_DECISION_OFFLOAD_HOST;
      if (mask & tiers)
        mask &= tiers;
    }
    p->allowed[t] = mask;
  }
}

static RokPlanner *planner_new(const RokTrace *trace, const RokHw *hw, const RokPlannerOptions *options,
                               GError **error) {
  if (options->search_detail == 0) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "planner: search_detail must be at least 1");
    return NULL;
  }
  if (options->curve_points == 1) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "planner: a curve needs at least 2 points");
    return NULL;
  }
  RokSim *sim = rok_sim_new(trace, hw, error);
  if (sim == NULL)
    return NULL;
  RokPlanner *p = g_new0(RokPlanner, 1);
  p->trace = trace;
  p->hw = hw;
  p->options = *options;
  p->sim = sim;
  p->n_tensors = trace->tensors->len;
  p->host_limit = host_limit(hw, options);
  p->allowed = g_new0(guint8, MAX(p->n_tensors, 1));
  p->scratch = rok_step_plan_new(trace);
  p->memo = plan_memo_new(p->n_tensors);
  p->seen = g_new0(guint8, MAX(p->n_tensors, 1));
  allowed_decisions(p);
  plan_build_groups(p);
  plan_build_classes(p);
  return p;
}

/* The tiers some tensor may take. */
static guint tiers_used(const RokPlanner *p) {
  guint used = 0;
  for (guint t = 0; t < p->n_tensors; t++)
    if (rok_tensor_is_saved(rok_trace_tensor(p->trace, t)))
      used |= p->allowed[t];
  return used;
}

/* The same machine without the SSDs, and without both SSDs and host
 * offload: planners whose plans run here as there. */
static void add_reduced(RokPlanner *p) {
  const guint nvme = 1u << ROK_DECISION_OFFLOAD_NVME, host = 1u << ROK_DECISION_OFFLOAD_HOST;
  guint used = tiers_used(p);
  const guint drops[] = {nvme, nvme | host};
  p->reduced = g_ptr_array_new_with_free_func((GDestroyNotify)rok_planner_free);
  for (guint i = 0; i < G_N_ELEMENTS(drops); i++) {
    if ((used & drops[i]) == 0 || (i > 0 && (used & host) == 0))
      continue;
    RokPlannerOptions o = p->options;
    o.tiers = used & ~drops[i];
    RokPlanner *q = planner_new(p->trace, p->hw, &o, NULL);
    if (q == NULL)
      continue;
    plan_memo_unref(q->memo); /* same trace, machine and limits: the same runs */
    q->memo = plan_memo_ref(p->memo);
    g_ptr_array_add(p->reduced, q);
  }
}

RokPlanner *rok_planner_new(const RokTrace *trace, const RokHw *hw, const RokPlannerOptions *options,
                            GError **error) {
  g_return_val_if_fail(trace != NULL && hw != NULL, NULL);
  RokPlannerOptions defaults;
  if (options == NULL) {
    rok_planner_options_init(&defaults);
    options = &defaults;
  }
  RokPlanner *p = planner_new(trace, hw, options, error);
  if (p != NULL)
    add_reduced(p);
  return p;
}

void rok_planner_free(RokPlanner *p) {
  if (p == NULL)
    return;
  if (!p->worker && p->reduced != NULL) /* the top planner: G_MESSAGES_DEBUG=all shows it */
    g_debug("planner: %" G_GUINT64_FORMAT " simulator runs, %" G_GUINT64_FORMAT " answered from memory",
            rok_planner_runs(p), plan_memo_hits(p->memo));
  rok_sim_free(p->sim);
  rok_step_plan_free(p->scratch);
  plan_memo_unref(p->memo);
  g_free(p->seen);
  if (p->worker) {
    g_free(p);
    return;
  }
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    g_free(p->baselines[b].decisions);
  g_clear_pointer(&p->classes, g_array_unref);
  g_clear_pointer(&p->members, g_array_unref);
  g_clear_pointer(&p->units, g_array_unref);
  g_clear_pointer(&p->descent, g_ptr_array_unref);
  g_clear_pointer(&p->ascent, g_ptr_array_unref);
  g_free(p->allowed);
  plan_free_groups(p);
  plan_grid_free(p->grid);
  g_clear_pointer(&p->reduced, g_ptr_array_unref);
  g_free(p->min_decisions);
  g_free(p->min_what);
  g_free(p);
}

guint64 rok_planner_runs(const RokPlanner *p) {
  guint64 runs = p->runs;
  for (guint i = 0; p->reduced != NULL && i < p->reduced->len; i++)
    runs += rok_planner_runs(g_ptr_array_index(p->reduced, i));
  return runs;
}

/* A plan the simulator refuses (a rebuild that reaches a tensor nobody
 * keeps) is simply not a candidate. */
gboolean plan_eval(RokPlanner *p, const guint8 *decisions, guint64 memory_budget, guint detail, PlanEval *out) {
  return plan_eval_whole(p, decisions, memory_budget, detail, FALSE, out);
}

/* What the simulator says of the plan in p->scratch, without the memo. */
static gboolean simulate(RokPlanner *p, guint64 budget, PlanEval *out, MemoSame *same) {
  p->runs++;
  g_autoptr(RokSimResult) r = rok_sim_run(p->sim, p->scratch, NULL);
  *out = (PlanEval){.valid = r != NULL && r->host_peak_bytes <= p->host_limit};
  /* A plan the simulator refuses: refused under this budget and above, with this window. */
  guint window = p->scratch->options.prefetch_window;
  *same = r != NULL ? (MemoSame){r->same_budget_lo, r->same_budget_hi, r->same_window_lo, r->same_window_hi}
                    : (MemoSame){budget, G_MAXUINT64, window, window + 1};
  if (r != NULL) {
    out->step_ns = r->step_ns;
    out->peak = r->peak_bytes;
    out->moved = r->pcie_d2h_bytes + r->pcie_h2d_bytes;
    out->host = r->host_peak_bytes;
    out->nvme = r->nvme_write_bytes;
    /* The SSDs' wear limit: the step's writes over its time. */
    double limit = p->options.max_nvme_write_rate;
    if (limit > 0 && r->step_time_s > 0 && (double)r->nvme_write_bytes / r->step_time_s > limit)
      out->valid = FALSE;
  }
  return out->valid;
}

static gboolean same_eval(const PlanEval *a, const PlanEval *b) {
  return a->valid == b->valid && a->step_ns == b->step_ns && a->peak == b->peak && a->moved == b->moved &&
         a->host == b->host && a->nvme == b->nvme;
}

gboolean plan_eval_whole(RokPlanner *p, const guint8 *decisions, guint64 memory_budget, guint detail,
                         gboolean whole_layers, PlanEval *out) {
  RokStepPlan *plan = p->scratch;
  for (guint t = 0; t < p->n_tensors; t++) {
    p->seen[t] = plan_decision_of(p, decisions, t);
    plan->decisions[t] = p->seen[t];
  }
  rok_step_options_init(&plan->options);
  plan->options.memory_budget = memory_budget;
  plan->options.detail_micro_batches = detail;
  plan->options.rebuild_whole_layers = whole_layers;
  plan->options.prefetch_unit = plan_prefetch[p->prefetch].unit;
  plan->options.prefetch_window = plan_prefetch[p->prefetch].window;
  MemoSame same;
  guint64 budget = memory_budget ? memory_budget : p->hw->gpu.memory; /* as the simulator takes it */
  if (plan_memo_lookup(p->memo, p->seen, &plan->options, budget, out)) {
    static gint check = -1;
    if (g_atomic_int_get(&check) < 0)
      g_atomic_int_set(&check, g_strcmp0(g_getenv("ROK_PLAN_MEMO_CHECK"), "1") == 0);
    PlanEval fresh;
    if (check && (simulate(p, budget, &fresh, &same), !same_eval(&fresh, out)))
      g_error("planner memo: a remembered run differs from the simulator's (budget %" G_GUINT64_FORMAT ")",
              memory_budget);
    return out->valid;
  }
  simulate(p, budget, out, &same);
  plan_memo_insert(p->memo, p->seen, &plan->options, &same, out);
  return out->valid;
}

gboolean plan_better(const PlanEval *a, const PlanEval *b, guint64 budget) {
  gboolean fa = plan_fits(a, budget), fb = plan_fits(b, budget);
  if (fa != fb)
    return fa;
  if (!fa) /* neither fits: the smaller is nearer */
    return a->valid && (!b->valid || a->peak < b->peak);
  if (a->step_ns != b->step_ns)
    return a->step_ns < b->step_ns;
  if (a->moved != b->moved)
    return a->moved < b->moved;
  if (a->host != b->host)
    return a->host < b->host;
  return a->peak < b->peak;
}

void plan_set_unit(const RokPlanner *p, guint8 *decisions, guint u, guint8 d, gboolean back, guint count) {
  const PlanUnit *unit = plan_unit(p, u);
  const PlanClass *c = plan_class(p, unit->cls);
  guint n = MIN(count, unit->hi - unit->lo);
  for (guint i = 0; i < n; i++) {
    guint member = back ? unit->hi - 1 - i : unit->lo + i;
    decisions[plan_member(p, c, member)] = d;
  }
}

guint8 *plan_baseline(RokPlanner *p, RokStrategy strategy, gboolean *whole_layers) {
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(strategy, p->trace, p->hw, &p->options.strategy, NULL);
  if (plan == NULL)
    return NULL;
  *whole_layers = plan->options.rebuild_whole_layers;
  return plan_express(p, plan);
}

guint8 *plan_express(const RokPlanner *p, const RokStepPlan *plan) {
  g_autofree guint8 *full = g_new(guint8, MAX(p->n_tensors, 1));
  for (guint t = 0; t < p->n_tensors; t++)
    full[t] = (guint8)plan->decisions[t];
  g_autofree guint8 *decisions = g_new(guint8, MAX(p->n_tensors, 1));
  if (!plan_groups_express(p, full, decisions))
    return NULL;
  for (guint t = 0; t < p->n_tensors; t++)
    if (!(p->allowed[t] & (1u << decisions[t])))
      return NULL;
  return g_steal_pointer(&decisions);
}

const PlanBaseline *plan_baseline_of(RokPlanner *p, RokStrategy b) {
  PlanBaseline *base = &p->baselines[b];
  if (p->baselines_done & (1u << b))
    return base;
  p->baselines_done |= 1u << b;
  base->decisions = plan_baseline(p, b, &base->whole_layers);
  if (base->decisions != NULL) {
    plan_eval_whole(p, base->decisions, PLAN_NO_LIMIT, p->options.search_detail, base->whole_layers, &base->search);
    plan_eval_whole(p, base->decisions, PLAN_NO_LIMIT, ROK_STEP_DEFAULT_DETAIL_MICRO_BATCHES, base->whole_layers,
                    &base->final);
  }
  return base;
}

const PlanBaseline *plan_baselines(RokPlanner *p) {
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    plan_baseline_of(p, b);
  return p->baselines;
}

void plan_prepare(RokPlanner *p) {
  plan_baselines(p);
  plan_descent(p);
  plan_min_memory(p);
  plan_ascent(p);
}

RokPlanner *plan_worker_new(const RokPlanner *p) {
  RokPlanner *w = g_new(RokPlanner, 1);
  *w = *p;
  w->worker = TRUE;
  w->runs = 0;
  w->prefetch = 0;
  w->sim = rok_sim_new(p->trace, p->hw, NULL);
  w->scratch = rok_step_plan_new(p->trace);
  w->memo = plan_memo_ref(p->memo);
  w->seen = g_new0(guint8, MAX(p->n_tensors, 1));
  return w;
}
