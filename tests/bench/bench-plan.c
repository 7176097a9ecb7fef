/* How fast the planner is: for GPT-3 175B on SSDTrain's machine and a few
 * more models, the wall and CPU time of a plan at a budget (a third of the
 * way from the least that fits to keeping everything) and of a 32-budget
 * ROK curve, from a fresh planner each, with the simulator runs they made
 * and the plan's gain over the fastest baseline that fits.
 *
 * Usage: bench-plan [SOURCE_DIR] (default: ROK_SOURCE_DIR). Prints one line
 * per case; exits 1 if a config cannot be loaded or planning fails. */
#include <stdio.h>
#include <stdlib.h>

#include "rok/core.h"
#include "rok/model.h"
#include "rok/plan.h"

#define POINTS 32

static double wall(void) {
  return (double)g_get_monotonic_time() / 1e6;
}

static gboolean load(const char *root, const char *model_name, const char *hw_name, RokTrace **trace, RokHw **hw) {
  g_autoptr(GError) error = NULL;
  g_autofree char *model_file = g_strconcat(model_name, ".json", NULL), *hw_file = g_strconcat(hw_name, ".json", NULL);
  g_autofree char *model_path = g_build_filename(root, "configs", "models", model_file, NULL);
  g_autofree char *hw_path = g_build_filename(root, "configs", "hw", hw_file, NULL);
  g_autoptr(RokModel) model = rok_model_load(model_path, NULL, &error);
  if (model != NULL)
    *trace = rok_trace_new_from_model(model, &error);
  if (error == NULL)
    *hw = rok_hw_load(hw_path, &error);
  if (error != NULL) {
    fprintf(stderr, "bench-plan: %s\n", error->message);
    return FALSE;
  }
  return TRUE;
}

/* The fastest baseline that fits `budget`, in seconds (0: none). */
static double best_baseline(RokPlanner *planner, guint64 budget) {
  double best = 0;
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    g_autoptr(RokSimResult) r = NULL;
    g_autoptr(RokStepPlan) plan = rok_planner_baseline(planner, b, budget, &r, NULL);
    if (plan != NULL && r->peak_bytes <= budget && (best == 0 || r->step_time_s < best))
      best = r->step_time_s;
  }
  return best;
}

static gboolean bench(const char *root, const char *model_name, const char *hw_name) {
  RokTrace *trace = NULL;
  RokHw *hw = NULL;
  if (!load(root, model_name, hw_name, &trace, &hw))
    return FALSE;
  g_autoptr(GError) error = NULL;
  /* The plan, from a fresh planner: its share of the common work included. */
  double w0 = wall(), c0 = rok_host_own_cpu_seconds();
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, NULL, &error);
  g_autoptr(RokCurve) probe = planner ? rok_planner_curve(planner, 2, NULL, NULL, &error) : NULL;
  if (probe == NULL) {
    fprintf(stderr, "bench-plan: %s\n", error->message);
    return FALSE;
  }
  guint64 budget = probe->min_budget + (probe->keep_budget - probe->min_budget) / 3;
  g_autoptr(RokSimResult) r = NULL;
  g_autoptr(RokStepPlan) plan = rok_planner_plan(planner, budget, &r, &error);
  double w1 = wall(), c1 = rok_host_own_cpu_seconds();
  guint64 plan_runs = rok_planner_runs(planner);
  /* The full curve, from another fresh planner. */
  g_autoptr(RokPlanner) fresh = rok_planner_new(trace, hw, NULL, &error);
  g_autoptr(RokCurve) curve = rok_planner_curve(fresh, POINTS, NULL, NULL, &error);
  double w2 = wall(), c2 = rok_host_own_cpu_seconds();
  if (plan == NULL || curve == NULL) {
    fprintf(stderr, "bench-plan: %s\n", error->message);
    return FALSE;
  }
  double base = best_baseline(planner, budget);
  g_autofree char *gain = base > 0 ? g_strdup_printf("%+.1f%%", 100 * (1 - r->step_time_s / base)) : g_strdup("-");
  printf("%-13s %-24s %5u tensors | plan at %5.1f GiB: %6.2f s wall %6.2f s CPU %6" G_GUINT64_FORMAT
         " runs, %s vs best baseline | curve %u points: %6.2f s wall %6.2f s CPU %6" G_GUINT64_FORMAT " runs\n",
         model_name, hw_name, trace->tensors->len, (double)budget / (1 << 30), w1 - w0, c1 - c0, plan_runs, gain,
         curve->points->len, w2 - w1, c2 - c1, rok_planner_runs(fresh));
  rok_trace_free(trace);
  rok_hw_free(hw);
  return TRUE;
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : g_getenv("ROK_SOURCE_DIR");
  if (root == NULL) {
    fprintf(stderr, "usage: bench-plan SOURCE_DIR\n");
    return 2;
  }
  const char *cases[][2] = {
      {"gpt3-175b", "a100-40g-pcie4-4xp5800x"}, {"gpt3-175b", "h100-80g-sxm-4xgen5"},
      {"llama2-70b", "a100-80g-sxm-4x980pro"},  {"gpt3-13b", "a100-40g-pcie4-4xp5800x"},
      {"t5-3b", "a100-80g-sxm-4x980pro"},       {"ssdtrain-bert", "a100-40g-pcie4-4xp5800x"},
  };
  printf("%u threads for the curve\n", g_get_num_processors());
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    if (!bench(root, cases[i][0], cases[i][1]))
      return 1;
  return 0;
}
