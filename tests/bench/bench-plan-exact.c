/* How far the planner is from the optimum on real models: slices of
 * bundled models (their own layer shapes, 3 to 6 layers) on bundled
 * machines, at budgets from the least that fits to keeping everything,
 * the planner's plan against the exact optimum by enumeration
 * (rok_planner_exhaustive: every decision vector, each that reads back
 * with every prefetch window, simulated at the default detail). Slices are
 * enumerable at module granularity (a layer's attention and MLP blocks:
 * 4^(2L) plans for L layers) and at layer granularity (4^L); at tensor
 * granularity one layer of GPT-3 13B already has 22 saved tensors (4^22
 * plans), out of reach.
 *
 * Prints one line per case and budget, then the worst and median gap.
 * Usage: bench-plan-exact [SOURCE_DIR] (default: ROK_SOURCE_DIR). */
#include <stdio.h>
#include <stdlib.h>

#include "rok/model.h"
#include "rok/plan.h"

#define MAX_PLANS (1u << 17)

typedef struct {
  const char *model, *hw, *layers;
  RokGranularity granularity;
  guint tiers; /* bit (1 << RokDecision) per decision; 0: all four */
} Case;

static RokTrace *load(const char *root, const Case *c, RokHw **hw) {
  g_autoptr(GError) error = NULL;
  g_autofree char *model_file = g_strconcat(c->model, ".json", NULL), *hw_file = g_strconcat(c->hw, ".json", NULL);
  g_autofree char *model_path = g_build_filename(root, "configs", "models", model_file, NULL);
  g_autofree char *hw_path = g_build_filename(root, "configs", "hw", hw_file, NULL);
  g_autofree char *layers = g_strconcat("layers=", c->layers, NULL);
  /* One copy of the slice: no pipeline stages, and a step of 4 micro-batches. */
  const char *overrides[] = {layers, "pipeline_parallel=1", "data_parallel=1", "global_batch=4", NULL};
  g_autoptr(RokModel) model = rok_model_load(model_path, overrides, &error);
  RokTrace *trace = model ? rok_trace_new_from_model(model, &error) : NULL;
  if (trace != NULL && (*hw = rok_hw_load(hw_path, &error)) == NULL)
    g_clear_pointer(&trace, rok_trace_free);
  if (trace == NULL)
    fprintf(stderr, "bench-plan-exact: %s\n", error->message);
  return trace;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static gboolean bench(const char *root, const Case *c, GArray *gaps) {
  RokHw *hw = NULL;
  g_autoptr(RokTrace) trace = load(root, c, &hw);
  if (trace == NULL)
    return FALSE;
  g_autoptr(RokHw) owned = hw;
  RokPlannerOptions options;
  rok_planner_options_init(&options);
  options.granularity = c->granularity;
  options.tiers = c->tiers;
  options.curve_points = 8;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, &options, &error);
  g_autoptr(RokSimResult) keep = NULL;
  g_autoptr(RokStepPlan) keep_plan =
      planner ? rok_planner_baseline(planner, ROK_STRATEGY_KEEP, G_MAXUINT64, &keep, &error) : NULL;
  if (keep_plan == NULL) {
    fprintf(stderr, "bench-plan-exact: %s\n", error->message);
    return FALSE;
  }
  guint64 least = rok_planner_min_budget(planner, NULL);
  const double fractions[] = {0.05, 0.25, 0.5, 0.75};
  for (guint i = 0; i < G_N_ELEMENTS(fractions); i++) {
    guint64 budget = least + (guint64)(fractions[i] * (double)(keep->peak_bytes - MIN(least, keep->peak_bytes)));
    g_autoptr(RokSimResult) got = NULL, best = NULL;
    double t0 = (double)g_get_monotonic_time() / 1e6;
    g_autoptr(RokStepPlan) plan = rok_planner_plan(planner, budget, &got, &error);
    double t1 = (double)g_get_monotonic_time() / 1e6;
    g_autoptr(RokStepPlan) optimum = plan ? rok_planner_exhaustive(planner, budget, MAX_PLANS, &best, &error) : NULL;
    double t2 = (double)g_get_monotonic_time() / 1e6;
    printf("%-10s %-24s %s layer%s %-6s %-22s %6.2f GiB: ", c->model, c->hw, c->layers,
           g_strcmp0(c->layers, "1") == 0 ? " " : "s", rok_granularity_name(c->granularity),
           c->tiers ? "keep, nvme, recompute" : "all tiers", (double)budget / (1 << 30));
    if (optimum == NULL) {
      printf("%s\n", error->message);
      g_clear_error(&error);
      continue;
    }
    double gap = 100 * (got->step_time_s / best->step_time_s - 1);
    g_array_append_val(gaps, gap);
    printf("planner %.4f s (%.1f s), optimum %.4f s (%.1f s): %+.2f%%\n", got->step_time_s, t1 - t0,
           best->step_time_s, t2 - t1, gap);
  }
  return TRUE;
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : g_getenv("ROK_SOURCE_DIR");
  if (root == NULL) {
    fprintf(stderr, "usage: bench-plan-exact SOURCE_DIR\n");
    return 2;
  }
  const guint ssdtrain =
      (1u << ROK_DECISION_KEEP) | (1u << ROK_DECISION_OFFLOAD_NVME) | (1u << ROK_DECISION_RECOMPUTE);
  const Case cases[] = {
      {"gpt3-13b", "a100-40g-pcie4-4xp5800x", "3", ROK_GRANULARITY_MODULE, 0},
      {"gpt3-13b", "h100-80g-sxm-4xgen5", "3", ROK_GRANULARITY_MODULE, 0},
      {"gpt3-13b", "a100-40g-pcie4-4xp5800x", "6", ROK_GRANULARITY_LAYER, 0},
      {"llama2-70b", "a100-40g-pcie4-4xp5800x", "3", ROK_GRANULARITY_MODULE, 0},
      {"llama2-70b", "h100-80g-sxm-4xgen5", "3", ROK_GRANULARITY_MODULE, 0},
      {"llama2-70b", "h100-80g-sxm-4xgen5", "6", ROK_GRANULARITY_LAYER, 0},
      {"gpt3-13b", "h100-80g-sxm-4xgen5", "4", ROK_GRANULARITY_MODULE, ssdtrain},
  };

  setvbuf(stdout, NULL, _IOLBF, 0); /* a line per case as it is done */
  g_autoptr(GArray) gaps = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    if (!bench(root, &cases[i], gaps))
      return 1;
  if (gaps->len > 0) {
    g_array_sort(gaps, compare_double);
    printf("%u budgets: median gap %+.2f%%, worst %+.2f%% (planner's step over the optimum's)\n", gaps->len,
           g_array_index(gaps, double, gaps->len / 2), g_array_index(gaps, double, gaps->len - 1));
  }
  return 0;
}
