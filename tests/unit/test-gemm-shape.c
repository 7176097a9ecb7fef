/* GEMM time by shape: tile and wave quantisation (NVIDIA, "Matrix
 * Multiplication Background User's Guide", DU-09799-001, sections 3.1 and
 * 3.2), and what it does to throughput over micro-batch sizes. */
#include <math.h>

#include "rok/hw.h"
#include "rok/sim.h"
#include "rok/trace.h"
#include "test-bundled.h"

/* The guide's examples on an A100 (108 SMs, 256×128 tiles). */
static void test_quantisation(void) {
  g_autoptr(RokHw) hw = test_bundled_hw("a100-80g-sxm-4x980pro");
  g_assert_cmpuint(hw->gpu.sm_count, ==, 108);
  /* 1792×1792: a 7×14 grid of 98 tiles, one wave on 108 SMs. */
  g_assert_cmpfloat(fabs(rok_hw_gemm_utilisation(hw, 1, 1792, 1792, 4096) - 98.0 / 108), <, 1e-12);
  /* One row more needs an eighth row of tiles (tile quantisation): 8×14 =
   * 112 tiles, more than 108 SMs: a second wave for 4 (wave quantisation),
   * the time doubles for 0.06% more work. */
  double u = rok_hw_gemm_utilisation(hw, 1, 1793, 1792, 4096);
  g_assert_cmpfloat(fabs(u - 1793.0 * 1792 / (2 * 108 * 256 * 128)), <, 1e-12);
  /* 109 tiles: a second wave for one tile (wave quantisation). */
  g_assert_cmpfloat(rok_hw_gemm_utilisation(hw, 1, 256, 128 * 109, 4096), <, 0.51);
  /* Many waves: the loss fades. */
  g_assert_cmpfloat(rok_hw_gemm_utilisation(hw, 1, 65536, 65536, 4096), >, 0.99);
  g_autoptr(RokHw) none = test_bundled_hw("cpu-2core-virtio");
  g_assert_cmpfloat(rok_hw_gemm_utilisation(none, 1, 1793, 1792, 4096), ==, 1.0);
}

static double tokens_per_s(const char *model, const RokHw *hw, guint micro_batch) {
  g_autofree char *file = g_strconcat(model, ".json", NULL);
  g_autofree char *path = g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "models", file, NULL);
  g_autofree char *mb = g_strdup_printf("micro_batch=%u", micro_batch);
  const char *sets[] = {mb, NULL};
  GError *error = NULL;
  g_autoptr(RokModel) m = rok_model_load(path, sets, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(m, &error);
  g_assert_no_error(error);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace); /* keep everything; memory aside */
  g_autoptr(RokSimResult) r = rok_simulate(trace, hw, plan, &error);
  g_assert_no_error(error);
  /* Of the compute alone: the exposed communication (the data-parallel
   * reduction hides behind a longer last backward at larger micro-batches)
   * is not the GEMMs' doing. */
  return (double)trace->tokens_per_micro_batch * (double)r->micro_batches / ((double)r->compute_ns / 1e9);
}

/* Compute throughput rises from micro-batch 1 to 8 as the GEMMs fill their last
 * waves. GPT-3 13B at TP 2: the QKV projection at micro-batch 1 is 2048 ×
 * 7680 × 5120, 480 tiles of 256×128 = 4.4 waves of 108 SMs (89% busy); at
 * micro-batch 8, 35.6 waves (99%). So GEMMs gain at most ~11% (on 132 SMs
 * alike), and the whole step less, as element-wise ops (memory-bound)
 * scale with the tokens. A step that stays flat (the constant
 * matmul_efficiency of before) or gains more than 20% is wrong. */
static void test_micro_batch_sweep(void) {
  const char *models[] = {"gpt3-13b", "llama2-7b"};
  const char *hws[] = {"a100-80g-sxm-4x980pro", "h100-80g-sxm-4xgen5"};
  for (guint h = 0; h < G_N_ELEMENTS(hws); h++) {
    g_autoptr(RokHw) hw = test_bundled_hw(hws[h]);
    for (guint i = 0; i < G_N_ELEMENTS(models); i++) {
      double previous = 0, first = 0;
      for (guint mb = 1; mb <= 8; mb *= 2) {
        double t = tokens_per_s(models[i], hw, mb);
        g_test_message("%s on %s, micro-batch %u: %.0f tokens/s", models[i], hws[h], mb, t);
        g_assert_cmpfloat(t, >=, previous * 0.999);
        previous = t;
        if (mb == 1)
          first = t;
      }
      double gain = previous / first - 1;
      g_assert_cmpfloat(gain, >, 0.005); /* LLaMA-2 7B at 4096 tokens fills its waves already: +1% */
      g_assert_cmpfloat(gain, <, 0.20);
    }
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/gemm-shape/quantisation", test_quantisation);
  g_test_add_func("/gemm-shape/micro-batch-sweep", test_micro_batch_sweep);
  return g_test_run();
}
