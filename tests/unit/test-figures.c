/* The figures engineers compare against their training reports: model
 * FLOPs per micro-batch against Megatron-LM's formula, MFU and per-GPU
 * throughput from a simulated step; and the hardware profile's
 * plausibility warnings. */
#include <math.h>
#include <string.h>

#include "rok/core.h"
#include "rok/hw.h"
#include "rok/model.h"
#include "rok/plan.h"
#include "rok/sim.h"
#include "rok/trace.h"
#include "test-configs.h"

/* Narayanan et al. 2021 (Megatron-LM, eq. 3) count 96·B·s·l·h²·(1 + s/6h +
 * V/16lh) FLOPs per batch with full recompute: four passes over the layers
 * (forward, recompute, two for backward), three over the logits. Without
 * recompute it is 72·B·s·l·h²·(1 + s/6h) + 6·B·s·h·V, which rok's model
 * FLOPs (3 × the forward FLOPs of the matrix multiplies) must equal for a
 * GPT with ffn = 4h, summed over the tensor-parallel GPUs (it does, to the
 * FLOP: biases and element-wise work are not in either). */
static void test_megatron_formula(gconstpointer data) {
  g_autoptr(RokTrace) trace = config_trace(data, NULL);
  const RokModel *m = trace->model;
  double B = (double)m->micro_batch, s = (double)m->seq_len, l = (double)m->layers, h = (double)m->hidden;
  double V = (double)m->vocab;
  double megatron = 72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * h * V;
  double rok = rok_trace_model_flops(trace) * (double)rok_trace_replica_gpus(trace);
  g_test_message("%s: rok %.6g, Megatron %.6g, ratio %.5f", (const char *)data, rok, megatron, rok / megatron);
  g_assert_cmpfloat(fabs(rok / megatron - 1), <, 1e-6);
}

/* MFU and per-GPU figures follow from the step: tokens/s over the copy's
 * GPUs, model FLOPs per step over the step time, over the peak. Recompute
 * makes the step slower and MFU lower: its FLOPs are not model FLOPs. */
static void test_step_figures(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = config_trace("gpt3-13b", NULL);
  g_autoptr(RokHw) hw = config_hw("a100-80g-sxm-4x980pro");
  g_assert_cmpuint(rok_trace_replica_gpus(trace), ==, 2);
  double mfu[2];
  for (guint i = 0; i < 2; i++) {
    RokStrategy strategy = i == 0 ? ROK_STRATEGY_KEEP : ROK_STRATEGY_RECOMPUTE;
    g_autoptr(RokStepPlan) plan = rok_strategy_plan(strategy, trace, hw, NULL, &error);
    g_assert_no_error(error);
    g_autoptr(RokSimResult) r = rok_simulate(trace, hw, plan, &error);
    g_assert_no_error(error);
    g_assert_cmpfloat_with_epsilon(r->tokens_per_gpu_s, r->tokens_per_s / 2, 1e-9 * r->tokens_per_s);
    double flops = rok_trace_model_flops(trace) * (double)r->micro_batches / r->step_time_s;
    g_assert_cmpfloat_with_epsilon(r->model_flops_per_gpu_s, flops, 1e-9 * flops);
    g_assert_cmpfloat_with_epsilon(r->mfu, flops / hw->gpu.peak_flops, 1e-12);
    g_assert_cmpfloat(r->mfu, >, 0.0);
    g_assert_cmpfloat(r->mfu, <=, hw->gpu.matmul_efficiency + 1e-9);
    mfu[i] = r->mfu;
  }
  g_assert_cmpfloat(mfu[1], <, mfu[0]);
}

static GPtrArray *warnings_of(const char *const *overrides) {
  g_autoptr(GError) error = NULL;
  g_autofree char *path = config_path("hw", "a100-40g-pcie4-4xp5800x");
  g_autoptr(RokJsonDoc) doc = rok_json_doc_load(path, &error);
  g_assert_no_error(error);
  GPtrArray *warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(RokHw) hw = rok_hw_from_doc(doc, overrides, warnings, &error);
  g_assert_no_error(error);
  g_assert_nonnull(hw);
  return warnings;
}

static void assert_warned(const GPtrArray *warnings, const char *part) {
  for (guint i = 0; i < warnings->len; i++)
    if (strstr(warnings->pdata[i], part) != NULL)
      return;
  g_error("no warning with \"%s\" among %u", part, warnings->len);
}

static void test_hw_warnings(void) {
  g_autoptr(GPtrArray) none = warnings_of(NULL);
  g_assert_cmpuint(none->len, ==, 0);
  const char *const plain[] = {"gpu.memory=80", "nvme.latency=70", "pcie.h2d_bandwidth=24", NULL};
  g_autoptr(GPtrArray) w = warnings_of(plain);
  g_assert_cmpuint(w->len, ==, 3);
  assert_warned(w, "--hw-set gpu.memory=80: \"gpu.memory\": 80 is 80 B: a plain number is bytes");
  assert_warned(w, "\"nvme.latency\": 70 is 1.17 min: a plain number is seconds");
  assert_warned(w, "\"pcie.h2d_bandwidth\": 24 is 24.0 B/s");
  const char *const decimal[] = {"gpu.memory=80GB", "host.memory=512GB", "nvme.capacity=1600GB", NULL};
  g_autoptr(GPtrArray) d = warnings_of(decimal);
  g_assert_cmpuint(d->len, ==, 2); /* SSDs are sold in decimal sizes: no warning */
  assert_warned(d, "\"80GB\" is 74.5 GiB (decimal units); GPU memory sold as \"80 GB\" holds 80 GiB");
  assert_warned(d, "write \"512GiB\" if that is meant");
  /* Figures the simulator ignores, each named in one warning (or none). */
  static const struct {
    const char *overrides[4];
    const char *expect; /* NULL: no warning */
  } single[] = {
      /* a calibration of an older rok: it still loads, its copy_wait is named and ignored */
      {{"gpu.copy_wait=0.2"}, "\"gpu.copy_wait\": is a wait per copy command measured by an older rok and is ignored"},
      /* both ways of a copy's wait for a kernel: the older one is named as ignored */
      {{"gpu.shared_cpus=2", "gpu.copy_kernel_wait=0.9", "gpu.copy_kernel_free_at=0.8"},
       "\"gpu.copy_kernel_wait\": is ignored: gpu.copy_kernel_free_at, given too"},
      {{"gpu.shared_cpus=2", "gpu.copy_kernel_wait=0.9"}, NULL},
      /* half of the launch race: ignored, and said to be; both: no warning */
      {{"gpu.shared_cpus=2", "gpu.copy_launch_window=50us"},
       "\"gpu.copy_launch_window\": is ignored without gpu.copy_launch_ahead above 0"},
      {{"gpu.shared_cpus=2", "gpu.copy_launch_ahead=0.3"},
       "\"gpu.copy_launch_ahead\": is ignored without gpu.copy_launch_window above 0"},
      {{"gpu.shared_cpus=2", "gpu.copy_launch_window=50us", "gpu.copy_launch_ahead=0.3"}, NULL},
      /* a CPU device's copy figures on a device that has no shared_cpus: ignored, and said to be */
      {{"gpu.copy_kernel_wait=0.9"}, "\"gpu.copy_kernel_wait\": is ignored without gpu.shared_cpus"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(single); i++) {
    g_autoptr(GPtrArray) one = warnings_of(single[i].overrides);
    g_assert_cmpuint(one->len, ==, single[i].expect != NULL ? 1 : 0);
    if (single[i].expect != NULL)
      assert_warned(one, single[i].expect);
  }
  g_assert_true(rok_hw_is_key("nvme.devices"));
  g_assert_true(rok_hw_is_key("gpu"));
  g_assert_false(rok_hw_is_key("micro_batch"));
  g_assert_false(rok_hw_is_key("name"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/figures/megatron/gpt3-1.3b", "gpt3-1.3b", test_megatron_formula);
  g_test_add_data_func("/figures/megatron/gpt3-13b", "gpt3-13b", test_megatron_formula);
  g_test_add_data_func("/figures/megatron/gpt3-175b", "gpt3-175b", test_megatron_formula);
  g_test_add_func("/figures/step", test_step_figures);
  g_test_add_func("/figures/hw-warnings", test_hw_warnings);
  return g_test_run();
}
