/* How fast the simulator runs: wall time per simulated step and events
 * per second, for GPT-3 175B (96 layers, TP 8) and LLaMA-2 70B, for every
 * baseline strategy, on a warm simulator (as the planner uses it), plus a
 * cold run (trace -> simulator -> result) and a recording run.
 *
 * Usage: bench-sim [SOURCE_DIR] (default: ROK_SOURCE_DIR). Prints one line
 * per case; exits 1 if a config cannot be loaded. */
#include <stdio.h>
#include <stdlib.h>

#include "rok/model.h"
#include "rok/plan.h"

#define MIN_SECONDS 0.5 /* repeat each case at least this long */

static double now(void) {
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
    fprintf(stderr, "bench-sim: %s\n", error->message);
    return FALSE;
  }
  return TRUE;
}

/* Repeat a warm run until MIN_SECONDS have passed. */
static void bench_warm(RokSim *sim, const RokStepPlan *plan, const char *label) {
  guint64 runs = 0, events = 0;
  double start = now(), elapsed;
  gint64 step = 0;
  do {
    g_autoptr(RokSimResult) r = rok_sim_run(sim, plan, NULL);
    g_assert(r != NULL);
    events += r->events;
    step = r->step_ns;
    runs++;
  } while ((elapsed = now() - start) < MIN_SECONDS);
  printf("  %-24s %8.3f ms/step  %6.2f M events/s  %7.0f events/step  (simulated step %.3f s)\n", label,
         1e3 * elapsed / (double)runs, (double)events / elapsed / 1e6, (double)events / (double)runs,
         (double)step / 1e9);
}

static void bench_model(const char *root, const char *model_name, const char *hw_name) {
  RokTrace *trace = NULL;
  RokHw *hw = NULL;
  if (!load(root, model_name, hw_name, &trace, &hw))
    exit(1);
  printf("%s on %s: %u ops, %u tensors, %" G_GUINT64_FORMAT " micro-batches per step\n", model_name, hw_name,
         trace->ops->len, trace->tensors->len, trace->micro_batches_per_step);
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, NULL);
  for (guint s = 0; s < ROK_STRATEGY_BASELINE_COUNT; s++) {
    g_autoptr(RokStepPlan) plan = rok_strategy_plan(s, trace, hw, NULL, NULL);
    bench_warm(sim, plan, rok_strategy_name(s));
  }
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(ROK_STRATEGY_OFFLOAD, trace, hw, NULL, NULL);
  rok_sim_set_record(sim, TRUE);
  bench_warm(sim, plan, "offload, recording");
  double start = now();
  g_autoptr(RokModel) model = rok_model_copy(trace->model);
  g_autoptr(RokTrace) cold_trace = rok_trace_new_from_model(model, NULL);
  g_autoptr(RokStepPlan) cold_plan = rok_strategy_plan(ROK_STRATEGY_OFFLOAD, cold_trace, hw, NULL, NULL);
  RokSimResult *cold = rok_simulate(cold_trace, hw, cold_plan, NULL);
  double elapsed = now() - start;
  g_assert(cold != NULL);
  rok_sim_result_free(cold);
  printf("  %-24s %8.3f ms (trace + plan + simulator + step)\n", "offload, cold", 1e3 * elapsed);
  rok_trace_free(trace);
  rok_hw_free(hw);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : g_getenv("ROK_SOURCE_DIR");
  if (root == NULL)
    root = ROK_SOURCE_DIR;
  bench_model(root, "gpt3-175b", "a100-80g-sxm-4x980pro");
  bench_model(root, "llama2-70b", "h100-80g-sxm-4xgen5");
  return 0;
}
