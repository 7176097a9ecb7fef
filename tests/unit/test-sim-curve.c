/* A measured GEMM-efficiency curve: its interpolation (exact at the knots,
 * monotone between them, clamped outside) and the simulator's op times
 * using it, while a profile without a curve behaves as before. */
#include <math.h>

#include "rok/core.h"
#include "rok/sim.h"

/* Efficiency rising with size, then flat, then a dip: a realistic shape
 * (a device saturating, then a size that tiles badly). */
static const RokHwGemmPoint knots[] = {
    {4.2e6, 0.10}, {3.4e7, 0.35}, {2.7e8, 0.80}, {2.1e9, 1.00}, {1.7e10, 0.90},
};

static RokHw curve_hw(void) {
  RokHw hw = {0};
  hw.name = (char *)"curve";
  hw.gpu.memory = (guint64)1 << 34;
  hw.gpu.peak_flops = 1e12;
  hw.gpu.matmul_efficiency = 0.5;
  hw.gpu.hbm_bandwidth = 1e15; /* compute-bound: the efficiency shows */
  hw.gpu.launch_overhead = 7000;
  hw.pcie.h2d_bandwidth = hw.pcie.d2h_bandwidth = 1e10;
  hw.host.memory = (guint64)1 << 34;
  hw.host.pinned_buffer = (guint64)1 << 30;
  hw.host.memcpy_bandwidth = 1e10;
  hw.gpu.gemm_curve = (RokHwGemmPoint *)knots;
  hw.gpu.gemm_curve_len = G_N_ELEMENTS(knots);
  return hw;
}

static void test_knots(void) {
  RokHw hw = curve_hw();
  for (guint i = 0; i < G_N_ELEMENTS(knots); i++)
    g_assert_cmpfloat_with_epsilon(rok_hw_gemm_efficiency(&hw, knots[i].flops), knots[i].efficiency, 1e-12);
}

static void test_clamped(void) {
  RokHw hw = curve_hw();
  g_assert_cmpfloat(rok_hw_gemm_efficiency(&hw, 1.0), ==, 0.10);
  g_assert_cmpfloat(rok_hw_gemm_efficiency(&hw, 0.0), ==, 0.10);
  g_assert_cmpfloat(rok_hw_gemm_efficiency(&hw, -5.0), ==, 0.10);
  g_assert_cmpfloat(rok_hw_gemm_efficiency(&hw, 1e20), ==, 0.90);
  g_assert_cmpfloat(rok_hw_gemm_efficiency(&hw, INFINITY), ==, 0.90);
}

/* Between two knots the curve stays between their values and moves one way
 * only: no overshoot above 1.0 next to the peak, no dip below the lower. */
static void test_monotone(void) {
  RokHw hw = curve_hw();
  for (guint i = 0; i + 1 < G_N_ELEMENTS(knots); i++) {
    double lo = MIN(knots[i].efficiency, knots[i + 1].efficiency);
    double hi = MAX(knots[i].efficiency, knots[i + 1].efficiency);
    double sign = knots[i + 1].efficiency > knots[i].efficiency ? 1 : -1;
    double prev = knots[i].efficiency;
    double a = log(knots[i].flops), b = log(knots[i + 1].flops);
    for (int s = 1; s <= 200; s++) {
      double e = rok_hw_gemm_efficiency(&hw, exp(a + (b - a) * s / 200.0));
      g_assert_cmpfloat(e, >=, lo - 1e-12);
      g_assert_cmpfloat(e, <=, hi + 1e-12);
      g_assert_cmpfloat(sign * (e - prev), >=, -1e-12);
      prev = e;
    }
  }
  /* Interpolated in log(flops), not linearly in flops: halfway in log
   * between two knots is near the middle of their values, where linear
   * interpolation in flops would sit near the lower one. */
  double mid = rok_hw_gemm_efficiency(&hw, sqrt(knots[1].flops * knots[2].flops));
  g_assert_cmpfloat(mid, >, 0.45);
  g_assert_cmpfloat(mid, <, 0.70);
}

static void test_few_knots(void) {
  RokHw hw = curve_hw();
  g_assert_cmpfloat(rok_hw_gemm_efficiency(&hw, 1e9), !=, 0.5);
  hw.gpu.gemm_curve_len = 0;
  g_assert_cmpfloat(rok_hw_gemm_efficiency(&hw, 1e9), ==, 0.5);
  hw.gpu.gemm_curve_len = 1;
  g_assert_cmpfloat(rok_hw_gemm_efficiency(&hw, 1e9), ==, 0.10);
  /* Two knots: linear in log(flops). */
  hw.gpu.gemm_curve_len = 2;
  double e = rok_hw_gemm_efficiency(&hw, sqrt(knots[0].flops * knots[1].flops));
  g_assert_cmpfloat_with_epsilon(e, (0.10 + 0.35) / 2, 1e-12);
}

static RokTrace *gemm_trace(void) {
  RokTrace *trace = rok_trace_new("gemms");
  trace->tokens_per_micro_batch = 128;
  trace->micro_batches_per_step = 1;
  guint in = rok_trace_add_op(trace, "input", -1, ROK_OP_INPUT, 0, 0, 0, 0);
  guint x = rok_trace_add_tensor(trace, "x", -1, ROK_DTYPE_BF16, 1, (const guint64[]){128}, in);
  /* Square GEMMs from below the curve to above it, and a softmax. */
  const guint64 sizes[] = {64, 128, 256, 400, 512, 800, 1024, 1500, 2048, 4096};
  for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
    g_autofree char *name = g_strdup_printf("gemm%u", i);
    guint op = rok_trace_add_op(trace, name, 0, ROK_OP_LINEAR, 1, sizes[i], sizes[i], sizes[i]);
    rok_trace_add_input(trace, op, x);
    g_autofree char *out = g_strconcat(name, ".out", NULL);
    rok_trace_add_tensor(trace, out, 0, ROK_DTYPE_BF16, 1, (const guint64[]){128}, op);
  }
  guint sm = rok_trace_add_op(trace, "softmax", 0, ROK_OP_SOFTMAX, 1, 64, 64, 0);
  rok_trace_add_input(trace, sm, x);
  rok_trace_add_tensor(trace, "p", 0, ROK_DTYPE_BF16, 1, (const guint64[]){128}, sm);
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_trace_finish(trace, &error));
  return trace;
}

static gint64 expected_ns(const RokHw *hw, const RokOp *op, gboolean backward, double efficiency) {
  double flops = (double)(backward ? op->bwd_flops : op->fwd_flops);
  double bytes = (double)(backward ? op->bwd_bytes : op->fwd_bytes);
  return (gint64)llround(MAX(flops / (hw->gpu.peak_flops * efficiency), bytes / hw->gpu.hbm_bandwidth) * 1e9) +
         hw->gpu.launch_overhead;
}

/* Each GEMM's time follows the curve at its forward FLOPs, in both
 * directions; other ops ignore the curve. */
static void test_sim_uses_curve(void) {
  g_autoptr(RokTrace) trace = gemm_trace();
  RokHw hw = curve_hw();
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSim) sim = rok_sim_new(trace, &hw, &error);
  g_assert_no_error(error);
  double previous_rate = 0;
  for (guint o = 1; o < trace->ops->len; o++) {
    const RokOp *op = rok_trace_op(trace, o);
    gboolean gemm = op->kind == ROK_OP_LINEAR;
    double e = gemm ? rok_hw_gemm_efficiency(&hw, (double)op->fwd_flops) : 1.0;
    g_assert_cmpint(rok_sim_op_ns(sim, o, FALSE), ==, expected_ns(&hw, op, FALSE, e));
    g_assert_cmpint(rok_sim_op_ns(sim, o, TRUE), ==, expected_ns(&hw, op, TRUE, e));
    if (gemm && op->fwd_flops > knots[0].flops && op->fwd_flops < knots[3].flops) {
      /* Rising part of the curve: bigger GEMMs run at a higher rate. */
      double rate = (double)op->fwd_flops / (double)(rok_sim_op_ns(sim, o, FALSE) - hw.gpu.launch_overhead);
      g_assert_cmpfloat(rate, >, previous_rate);
      previous_rate = rate;
    }
  }
  /* 64³·2 FLOPs is below the first knot: the clamped efficiency 0.10. */
  const RokOp *small = rok_trace_op(trace, 1);
  g_assert_cmpint(rok_sim_op_ns(sim, 1, FALSE), ==, expected_ns(&hw, small, FALSE, 0.10));
}

/* Without a curve: matmul_efficiency, exactly as before the curve existed. */
static void test_sim_without_curve(void) {
  g_autoptr(RokTrace) trace = gemm_trace();
  RokHw hw = curve_hw();
  hw.gpu.gemm_curve = NULL;
  hw.gpu.gemm_curve_len = 0;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSim) sim = rok_sim_new(trace, &hw, &error);
  g_assert_no_error(error);
  for (guint o = 1; o < trace->ops->len; o++) {
    const RokOp *op = rok_trace_op(trace, o);
    double rate = hw.gpu.peak_flops * (op->kind == ROK_OP_LINEAR ? hw.gpu.matmul_efficiency : 1.0);
    gint64 want = (gint64)llround(MAX((double)op->fwd_flops / rate, (double)op->fwd_bytes / hw.gpu.hbm_bandwidth) *
                                  1e9) +
                  hw.gpu.launch_overhead;
    g_assert_cmpint(rok_sim_op_ns(sim, o, FALSE), ==, want);
  }
}

/* A bundled profile gives the same step with or without the curve code:
 * its op times use matmul_efficiency. */
static void test_bundled_unchanged(void) {
  g_autofree char *path =
      g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "hw", "a100-40g-pcie4-4xp5800x.json", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokHw) hw = rok_hw_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(hw->gpu.gemm_curve_len, ==, 0);
  g_autoptr(RokTrace) trace = gemm_trace();
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, &error);
  g_assert_no_error(error);
  const RokOp *op = rok_trace_op(trace, 4);
  g_assert_cmpint(rok_sim_op_ns(sim, 4, FALSE), ==, expected_ns(hw, op, FALSE, hw->gpu.matmul_efficiency));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sim-curve/knots", test_knots);
  g_test_add_func("/sim-curve/clamped", test_clamped);
  g_test_add_func("/sim-curve/monotone", test_monotone);
  g_test_add_func("/sim-curve/few-knots", test_few_knots);
  g_test_add_func("/sim-curve/sim-uses-curve", test_sim_uses_curve);
  g_test_add_func("/sim-curve/sim-without-curve", test_sim_without_curve);
  g_test_add_func("/sim-curve/bundled-unchanged", test_bundled_unchanged);
  return g_test_run();
}
