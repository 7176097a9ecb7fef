/* The planner against the exact optimum: on small traces (a few layers, a
 * few saved tensors each) with varied bandwidths and budgets, every plan
 * is enumerated (4^n, each plan that reads back with every prefetch
 * window) and simulated, and the planner's step time must be
 * within 1% of the best that fits, and equal to it where it can be.
 *
 * Traces are made by a seeded generator: layers of alike op chains (an
 * expensive matmul-like op, cheap elementwise ones, masks that rebuild
 * from nothing), measured op times, sizes and machine figures drawn at
 * random; plus hand-made cases whose optimum mixes keep, offload and
 * recompute. */
#include <glib.h>
#include <stdlib.h>

#include "rok/core.h"
#include "rok/plan.h"

#define MB 1000000ull

/* Random cases in the family; fewer under the sanitizers, which slow the
 * 16,384 runs of each exhaustive search tenfold. */
#if defined(__SANITIZE_ADDRESS__)
#define CASES 8
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CASES 8
#endif
#endif
#ifndef CASES
#define CASES 24
#endif
#define FIXED (64 * MB)
/* Keep, offload (either way) and recompute in one plan. */
#define ALL_THREE ((1u << ROK_DECISION_KEEP) | (1u << ROK_DECISION_OFFLOAD_NVME) | (1u << ROK_DECISION_RECOMPUTE))

typedef struct {
  guint layers, per_layer; /* saved tensors per layer */
  double op_ms[4];         /* forward time of the ops of a layer; backward is twice */
  guint64 bytes[4];        /* of the tensors they make */
  gboolean mask[4];        /* made from nothing (a dropout mask) */
  guint micro_batches;
} Shape;

static RokHw make_hw(double pcie, double nvme, guint64 host, gboolean gpudirect) {
  RokHw hw = {0};
  hw.name = (char *)"small";
  hw.gpu.memory = (guint64)1 << 34;
  hw.gpu.peak_flops = 1e12;
  hw.gpu.matmul_efficiency = 1;
  hw.gpu.hbm_bandwidth = 2e11;
  hw.gpu.launch_overhead = 2000;
  hw.pcie.h2d_bandwidth = hw.pcie.d2h_bandwidth = pcie;
  hw.pcie.latency = 2000;
  hw.host.memory = host + ((guint64)1 << 28);
  hw.host.pinned_buffer = (guint64)1 << 28;
  hw.host.memcpy_bandwidth = 1e10;
  hw.nvme.devices = nvme > 0 ? 1 : 0;
  hw.nvme.read_bandwidth = nvme * 1.2;
  hw.nvme.write_bandwidth = nvme;
  hw.nvme.latency = 10000;
  hw.nvme.queue_depth = 64;
  hw.nvme.capacity = (guint64)1 << 40;
  hw.nvme.endurance_pbw = 1;
  hw.nvme.gpudirect = gpudirect;
  return hw;
}

static guint add_op(RokTrace *trace, const char *name, gint layer, double fwd_ms) {
  guint id = rok_trace_add_op(trace, name, layer, ROK_OP_OTHER, 1, 1, 1, 1);
  rok_trace_op(trace, id)->fwd_time_s = fwd_ms / 1e3;
  rok_trace_op(trace, id)->bwd_time_s = 2 * fwd_ms / 1e3;
  return id;
}

static guint add_tensor(RokTrace *trace, const char *name, gint layer, guint64 bytes, guint producer) {
  return rok_trace_add_tensor(trace, name, layer, ROK_DTYPE_U8, 1, (const guint64[]){bytes}, producer);
}

/* embed -> [layer: op0 -> t0 -> op1 -> t1 ...] -> head. Each op reads the
 * tensor before it (a mask op reads nothing, and the next op reads the
 * mask and the tensor before it); every tensor is saved by the op that
 * reads it, the last one of a layer by the next layer's first op. */
static RokTrace *make_trace(const Shape *s) {
  RokTrace *trace = rok_trace_new("small");
  trace->tokens_per_micro_batch = 1024;
  trace->micro_batches_per_step = s->micro_batches;
  trace->fixed.weight_bytes = FIXED;
  trace->layers = s->layers;
  guint op = add_op(trace, "embed", -1, 0.5);
  guint prev = add_tensor(trace, "embed.out", -1, 1 * MB, op);
  for (guint l = 0; l < s->layers; l++) {
    guint carried = prev;
    for (guint i = 0; i < s->per_layer; i++) {
      g_autofree char *op_name = g_strdup_printf("layer%u.op%u", l, i);
      g_autofree char *t_name = g_strdup_printf("layer%u.t%u", l, i);
      op = add_op(trace, op_name, (gint)l, s->op_ms[i]);
      if (!s->mask[i]) {
        rok_trace_add_input(trace, op, carried);
        rok_trace_need(trace, carried, op);
      }
      guint t = add_tensor(trace, t_name, (gint)l, s->bytes[i], op);
      if (s->mask[i]) { /* the next op reads both */
        prev = carried;
        carried = t;
        continue;
      }
      if (i > 0 && s->mask[i - 1]) {
        rok_trace_add_input(trace, op, prev);
        rok_trace_need(trace, prev, op);
      }
      carried = t;
    }
    prev = carried;
  }
  op = add_op(trace, "head", -1, 0.5);
  rok_trace_add_input(trace, op, prev);
  rok_trace_need(trace, prev, op);
  add_tensor(trace, "head.out", -1, 1 * MB, op);
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_trace_finish(trace, &error));
  return trace;
}

typedef struct {
  guint64 budget;
  double planner_s, optimum_s;
  guint mix; /* bit per decision kind in the optimum */
} Outcome;

static guint decision_mix(const RokTrace *trace, const RokStepPlan *plan) {
  guint mix = 0;
  for (guint t = 0; t < trace->tensors->len; t++)
    if (rok_tensor_is_saved(rok_trace_tensor(trace, t))) {
      RokDecision d = plan->decisions[t];
      mix |= 1u << (d == ROK_DECISION_OFFLOAD_HOST ? ROK_DECISION_OFFLOAD_NVME : d);
    }
  return mix;
}

static char *plan_text(const RokTrace *trace, const RokStepPlan *plan) {
  static const char letter[] = {'K', 'N', 'H', 'R'};
  GString *text = g_string_new(NULL);
  for (guint t = 0; t < trace->tensors->len; t++)
    if (rok_tensor_is_saved(rok_trace_tensor(trace, t)))
      g_string_append_c(text, letter[plan->decisions[t]]);
  return g_string_free(text, FALSE);
}

/* Planner and optimum at the budget `fraction` of the way from the least
 * the planner says fits to the peak of keeping everything; FALSE when
 * nothing fits. */
static gboolean compare(const RokTrace *trace, const RokHw *hw, double fraction, Outcome *out) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(RokSimResult) keep = NULL;
  g_autoptr(RokStepPlan) keep_plan = rok_planner_baseline(planner, ROK_STRATEGY_KEEP, G_MAXUINT64, &keep, &error);
  g_assert_nonnull(keep_plan);
  guint64 least = rok_planner_min_budget(planner, NULL);
  guint64 budget = least + (guint64)(fraction * (double)(keep->peak_bytes - MIN(least, keep->peak_bytes)));
  out->budget = budget;
  g_autoptr(RokSimResult) best = NULL;
  g_autoptr(RokStepPlan) optimum = rok_planner_exhaustive(planner, budget, 1 << 16, &best, &error);
  if (optimum == NULL) {
    g_assert_error(error, ROK_ERROR, ROK_ERROR_NO_FIT);
    g_clear_error(&error);
    g_autoptr(RokStepPlan) none = rok_planner_plan(planner, budget, NULL, &error);
    g_assert_null(none);
    g_assert_error(error, ROK_ERROR, ROK_ERROR_NO_FIT);
    return FALSE;
  }
  g_autoptr(RokSimResult) got = NULL;
  g_autoptr(RokStepPlan) plan = rok_planner_plan(planner, budget, &got, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(got->peak_bytes, <=, budget);
  if (g_test_verbose()) {
    g_autofree char *a = plan_text(trace, optimum), *b = plan_text(trace, plan);
    g_printerr("  optimum: %s (peak %.4g MB)\n  planner: %s (peak %.4g MB)\n", a, best->peak_bytes / 1e6, b,
               got->peak_bytes / 1e6);
  }
  out->planner_s = got->step_time_s;
  out->optimum_s = best->step_time_s;
  out->mix = decision_mix(trace, optimum);
  return TRUE;
}

static Shape random_shape(GRand *rng) {
  Shape s = {.layers = (guint)g_rand_int_range(rng, 2, 4), .micro_batches = (guint)g_rand_int_range(rng, 1, 3)};
  s.per_layer = s.layers == 2 ? 3 : 2;
  for (guint i = 0; i < s.per_layer; i++) {
    s.mask[i] = i > 0 && i + 1 < s.per_layer && g_rand_int_range(rng, 0, 4) == 0;
    s.op_ms[i] = s.mask[i] ? 0.05 : g_rand_double_range(rng, 0.05, 4.0);
    s.bytes[i] = (guint64)g_rand_int_range(rng, 1, 40) * MB;
  }
  return s;
}

static void test_random_family(void) {
  g_autoptr(GRand) rng = g_rand_new_with_seed(g_getenv("ROK_TEST_SEED") ? atoi(g_getenv("ROK_TEST_SEED")) : 20250101);
  guint cases = 0, exact = 0, mixed = 0;
  double worst = 0;
  for (guint k = 0; k < CASES; k++) {
    Shape s = random_shape(rng);
    g_autoptr(RokTrace) trace = make_trace(&s);
    double pcie = g_rand_double_range(rng, 0.5e9, 20e9), nvme = g_rand_double_range(rng, 0.2e9, 10e9);
    guint64 host = g_rand_boolean(rng) ? 0 : (guint64)g_rand_int_range(rng, 1, 200) * MB;
    RokHw hw = make_hw(pcie, nvme, host, g_rand_boolean(rng));
    Outcome o;
    if (!compare(trace, &hw, g_rand_double_range(rng, -0.05, 0.9), &o))
      continue;
    cases++;
    double ratio = o.planner_s / o.optimum_s;
    worst = MAX(worst, ratio);
    exact += ratio <= 1 + 1e-12;
    mixed += o.mix == ALL_THREE;
    if (g_test_verbose())
      g_printerr("case %u: %u layers x %u, pcie %.2g nvme %.2g host %.3g MB, budget %.4g MB: planner %.6f s, "
                 "optimum %.6f s (%+.3f%%), mix %x\n",
                 k, s.layers, s.per_layer, pcie, nvme, host / 1e6, o.budget / 1e6, o.planner_s, o.optimum_s,
                 (ratio - 1) * 100, o.mix);
    g_assert_cmpfloat(ratio, <=, 1.01);
  }
  if (g_test_verbose())
    g_printerr("%u cases, %u exactly optimal, %u mixing all three decisions, worst %+.3f%%\n", cases, exact, mixed,
               (worst - 1) * 100);
  g_assert_cmpuint(cases, >=, CASES * 2 / 3);
  g_assert_cmpuint(mixed, >=, CASES / 12); /* the family is not all easy */
  g_assert_cmpuint(exact * 3, >=, cases * 2); /* two in three at least exactly optimal */
}

/* A hand-made family whose optimum mixes all three decisions: per layer an
 * expensive op's big output (cheapest to offload), a cheap op's big output
 * (cheapest to recompute) and a small one (kept); SSDs fast enough to hide
 * some offloads, not all. */
static void test_mixed_optimum(void) {
  Shape s = {.layers = 2, .per_layer = 3, .micro_batches = 1, .op_ms = {4.0, 0.1, 2.0},
             .bytes = {30 * MB, 30 * MB, 6 * MB}};
  g_autoptr(RokTrace) trace = make_trace(&s);
  const double fractions[] = {0.2, 0.35, 0.5, 0.65};
  guint mixed = 0;
  for (guint k = 0; k < G_N_ELEMENTS(fractions); k++) {
    RokHw hw = make_hw(10e9, 4e9, 0, TRUE);
    Outcome o;
    g_assert_true(compare(trace, &hw, fractions[k], &o));
    if (g_test_verbose())
      g_printerr("fraction %.2f, budget %.4g MB: planner %.6f s, optimum %.6f s, mix %x\n", fractions[k],
                 o.budget / 1e6, o.planner_s, o.optimum_s, o.mix);
    g_assert_cmpfloat(o.planner_s, <=, 1.01 * o.optimum_s);
    mixed += o.mix == ALL_THREE;
  }
  g_assert_cmpuint(mixed, >=, 2);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/planner/exact/random-family", test_random_family);
  g_test_add_func("/planner/exact/mixed-optimum", test_mixed_optimum);
  return g_test_run();
}
