/* rok export: the closest plan a framework expresses, planned anew. The
 * majority vote over the plan's decisions (export-map.c) is one candidate;
 * the others are the planner's plans at the plan's budget with the
 * framework's granularity (whole layers) and tiers (Megatron: recompute
 * layers, or move layers to host memory, never both; DeepSpeed: recompute
 * layers), each mapped to the framework's knobs and simulated. The fastest
 * that fits the budget wins (the first of equals: the majority vote). */
#include "export.h"

#include "rok/plan.h"

typedef struct {
  const char *to;
  guint tiers;
  const char *what;
} Replan;

static const Replan replans[] = {
    {"megatron", 1u << ROK_DECISION_KEEP | 1u << ROK_DECISION_RECOMPUTE, "recomputed layers"},
    {"megatron", 1u << ROK_DECISION_KEEP | 1u << ROK_DECISION_OFFLOAD_HOST, "layers moved to host memory"},
    {"deepspeed", 1u << ROK_DECISION_KEEP | 1u << ROK_DECISION_RECOMPUTE, "checkpointed layers"},
};

static gboolean better(const RokSimResult *a, const RokSimResult *b, guint64 budget) {
  gboolean fa = a->peak_bytes <= budget, fb = b->peak_bytes <= budget;
  if (fa != fb)
    return fa;
  return fa ? a->step_ns < b->step_ns : a->peak_bytes < b->peak_bytes;
}

/* The planner's plan for `r`, as the framework's export, or FALSE. */
static gboolean planned(const Replan *r, const RokTrace *trace, const RokHw *hw, guint64 budget, Export *out,
                        RokSimResult **result) {
  RokPlannerOptions popts;
  rok_planner_options_init(&popts);
  popts.granularity = ROK_GRANULARITY_LAYER;
  popts.tiers = r->tiers;
  popts.curve_points = ROK_PLANNER_NO_GRID;
  popts.quick = TRUE;
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, &popts, NULL);
  g_autoptr(RokStepPlan) plan = planner != NULL ? rok_planner_plan(planner, budget, NULL, NULL) : NULL;
  if (plan == NULL || !cli_export_run(out, r->to, trace, plan, NULL))
    return FALSE;
  *result = rok_simulate(trace, hw, out->closest, NULL);
  return *result != NULL;
}

gboolean cli_export_replan(Export *e, const char *to, const RokTrace *trace, const RokHw *hw, gboolean replan,
                           guint64 budget, RokSimResult **closest_r, GError **error) {
  if ((*closest_r = rok_simulate(trace, hw, e->closest, error)) == NULL)
    return FALSE;
  for (guint i = 0; replan && i < G_N_ELEMENTS(replans); i++) {
    if (g_strcmp0(replans[i].to, to) != 0)
      continue;
    Export cand = {0};
    RokSimResult *r = NULL;
    if (planned(&replans[i], trace, hw, budget, &cand, &r) && better(r, *closest_r, budget)) {
      g_autofree char *step = rok_units_format_time(r->step_time_s);
      cli_export_note(&cand, "planned anew with whole-layer decisions (%s): %s per step, faster than the plan's "
                      "decisions mapped to %s", replans[i].what, step, to);
      cli_export_swap(e, &cand);
      rok_sim_result_free(*closest_r);
      *closest_r = g_steal_pointer(&r);
    }
    rok_sim_result_free(r);
    cli_export_clear(&cand);
  }
  return TRUE;
}
