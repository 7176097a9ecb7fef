/* The planner's contract on hand-built traces and a small real model:
 * plans fit their budget and are never slower than a baseline that fits;
 * no plan below the least budget (ROK_ERROR_NO_FIT naming it); keeping
 * everything when it fits; the ROK curve rising and monotone; the same
 * answer every time and on any number of threads; strategy names; SSD
 * figures computed by hand; plan files read back to the same bytes. */
#include <math.h>
#include <string.h>

#include "plan/planner-private.h"
#include "rok/core.h"
#include "rok/model.h"
#include "rok/plan.h"

#define MB 1000000ull
#define FIXED (64 * MB)

static RokHw small_hw(void) {
  RokHw hw = {0};
  hw.name = (char *)"small";
  hw.gpu.memory = (guint64)1 << 34;
  hw.gpu.peak_flops = 1e12;
  hw.gpu.matmul_efficiency = 1;
  hw.gpu.hbm_bandwidth = 2e11;
  hw.gpu.launch_overhead = 2000;
  hw.pcie.h2d_bandwidth = hw.pcie.d2h_bandwidth = 10e9;
  hw.pcie.latency = 2000;
  hw.host.memory = (guint64)1 << 30;
  hw.host.pinned_buffer = (guint64)1 << 28;
  hw.host.memcpy_bandwidth = 1e10;
  hw.nvme.devices = 2;
  hw.nvme.read_bandwidth = 3e9;
  hw.nvme.write_bandwidth = 2e9;
  hw.nvme.latency = 10000;
  hw.nvme.queue_depth = 64;
  hw.nvme.capacity = 1000 * 1000 * MB;
  hw.nvme.endurance_pbw = 0.5;
  hw.nvme.gpudirect = TRUE;
  return hw;
}

static guint add_op(RokTrace *trace, const char *name, gint layer, double fwd_ms) {
  guint id = rok_trace_add_op(trace, name, layer, ROK_OP_OTHER, 1, 1, 1, 1);
  rok_trace_op(trace, id)->fwd_time_s = fwd_ms / 1e3;
  rok_trace_op(trace, id)->bwd_time_s = 2 * fwd_ms / 1e3;
  return id;
}

/* embed -> per layer: a (4 ms) -> A (30 MB) -> b (0.2 ms) -> B (20 MB) -> c (3 ms) -> next. */
static RokTrace *layered_trace(guint layers) {
  RokTrace *trace = rok_trace_new("layered");
  trace->tokens_per_micro_batch = 2048;
  trace->micro_batches_per_step = 2;
  trace->fixed.weight_bytes = FIXED;
  trace->layers = layers;
  guint op = add_op(trace, "embed", -1, 0.5);
  guint x = rok_trace_add_tensor(trace, "embed.out", -1, ROK_DTYPE_U8, 1, (const guint64[]){4 * MB}, op);
  for (guint l = 0; l < layers; l++) {
    const char *names[] = {"a", "b", "c"};
    const double ms[] = {4, 0.2, 3};
    const guint64 bytes[] = {30 * MB, 20 * MB, 4 * MB};
    for (guint i = 0; i < 3; i++) {
      g_autofree char *op_name = g_strdup_printf("layer%u.%s", l, names[i]);
      g_autofree char *t_name = g_strdup_printf("layer%u.%s_out", l, names[i]);
      op = add_op(trace, op_name, (gint)l, ms[i]);
      rok_trace_add_input(trace, op, x);
      rok_trace_need(trace, x, op);
      x = rok_trace_add_tensor(trace, t_name, (gint)l, ROK_DTYPE_U8, 1, (const guint64[]){bytes[i]}, op);
    }
  }
  op = add_op(trace, "head", -1, 0.5);
  rok_trace_add_input(trace, op, x);
  rok_trace_need(trace, x, op);
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_trace_finish(trace, &error));
  return trace;
}

static RokPlanner *new_planner(const RokTrace *trace, const RokHw *hw) {
  g_autoptr(GError) error = NULL;
  RokPlanner *planner = rok_planner_new(trace, hw, NULL, &error);
  g_assert_no_error(error);
  return planner;
}

static RokSimResult *keep_result(RokPlanner *planner) {
  g_autoptr(GError) error = NULL;
  RokSimResult *r = NULL;
  g_autoptr(RokStepPlan) plan = rok_planner_baseline(planner, ROK_STRATEGY_KEEP, G_MAXUINT64, &r, &error);
  g_assert_nonnull(plan);
  return r;
}

/* The plan at `budget` fits it and beats every baseline that fits it. */
static RokSimResult *check_plan(RokPlanner *planner, guint64 budget) {
  g_autoptr(GError) error = NULL;
  RokSimResult *r = NULL;
  g_autoptr(RokStepPlan) plan = rok_planner_plan(planner, budget, &r, &error);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  g_assert_cmpuint(r->peak_bytes, <=, budget);
  g_assert_cmpuint(plan->options.memory_budget, <=, budget);
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    g_autoptr(RokSimResult) br = NULL;
    g_autoptr(RokStepPlan) bp = rok_planner_baseline(planner, b, budget, &br, NULL);
    /* As fast, or within the wear tolerance and writing no more to the SSDs. */
    if (bp != NULL && br->peak_bytes <= budget && r->step_ns > br->step_ns) {
      g_assert_cmpfloat((double)r->step_ns, <=, (double)br->step_ns * (1 + ROK_PLAN_WEAR_TOLERANCE));
      g_assert_cmpuint(r->nvme_write_bytes, <=, br->nvme_write_bytes);
    }
  }
  return r;
}

static void test_hand_built(void) {
  g_autoptr(RokTrace) trace = layered_trace(4);
  RokHw hw = small_hw();
  g_autoptr(RokPlanner) planner = new_planner(trace, &hw);
  g_autoptr(RokSimResult) keep = keep_result(planner);
  guint64 least = rok_planner_min_budget(planner, NULL);
  g_assert_cmpuint(least, >, FIXED);
  g_assert_cmpuint(least, <, keep->peak_bytes);
  for (guint k = 0; k <= 4; k++) {
    guint64 budget = least + (keep->peak_bytes - least) * k / 4;
    g_autoptr(RokSimResult) r = check_plan(planner, budget);
    if (k == 4) /* everything fits: nothing is faster than keeping it */
      g_assert_cmpint(r->step_ns, ==, keep->step_ns);
  }
  /* Far more memory than needed: still keep's time, and no traffic. */
  g_autoptr(RokSimResult) r = check_plan(planner, hw.gpu.memory);
  g_assert_cmpint(r->step_ns, ==, keep->step_ns);
  g_assert_cmpuint(r->pcie_d2h_bytes, ==, 0);
}

static void test_no_fit(void) {
  g_autoptr(RokTrace) trace = layered_trace(3);
  RokHw hw = small_hw();
  g_autoptr(RokPlanner) planner = new_planner(trace, &hw);
  const char *how = NULL;
  guint64 least = rok_planner_min_budget(planner, &how);
  g_assert_nonnull(how);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokStepPlan) none = rok_planner_plan(planner, least - 1, NULL, &error);
  g_assert_null(none);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_NO_FIT);
  g_assert_cmpint(rok_error_exit_code(error), ==, ROK_EXIT_NO_FIT);
  /* Sizes three digits print alike are named in bytes. */
  g_autofree char *size = rok_units_format_size(least), *asked = rok_units_format_size(least - 1);
  g_autofree char *said = g_strcmp0(size, asked) == 0
                              ? g_strdup_printf("the smallest that fits is %" G_GUINT64_FORMAT " bytes", least)
                              : g_strdup_printf("the smallest that fits is %s", size);
  g_assert_nonnull(strstr(error->message, said));
  g_assert_nonnull(strstr(error->message, how));
  /* At the least budget itself a plan fits. */
  g_autoptr(RokSimResult) r = check_plan(planner, least);
  g_assert_cmpuint(r->peak_bytes, <=, least);
}

/* Offload and recompute where each pays: with slow SSDs and no host
 * memory, the cheap op's output is recomputed; with fast ones, offloading
 * the expensive op's output is free. */
static void test_decisions_follow_the_machine(void) {
  g_autoptr(RokTrace) trace = layered_trace(4);
  RokHw slow = small_hw(), fast = small_hw();
  slow.nvme.read_bandwidth = slow.nvme.write_bandwidth = 1e8;
  slow.host.memory = slow.host.pinned_buffer;
  fast.nvme.read_bandwidth = fast.nvme.write_bandwidth = 20e9;
  fast.pcie.d2h_bandwidth = fast.pcie.h2d_bandwidth = 40e9;
  /* Speed alone: a plan 0.7% faster by offloading must win here. */
  RokPlannerOptions o;
  rok_planner_options_init(&o);
  o.wear_tolerance = 0;
  g_autoptr(RokPlanner) ps = rok_planner_new(trace, &slow, &o, NULL);
  g_autoptr(RokPlanner) pf = rok_planner_new(trace, &fast, &o, NULL);
  g_autoptr(RokSimResult) keep = keep_result(ps);
  guint64 budget = keep->peak_bytes - 60 * MB;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokStepPlan) a = rok_planner_plan(ps, budget, NULL, &error);
  g_autoptr(RokStepPlan) b = rok_planner_plan(pf, budget, NULL, &error);
  g_assert_no_error(error);

  guint counts[2][ROK_DECISION_COUNT] = {{0}};
  for (guint t = 0; t < trace->tensors->len; t++) {
    counts[0][a->decisions[t]]++;
    counts[1][b->decisions[t]]++;
  }
  g_assert_cmpuint(counts[0][ROK_DECISION_RECOMPUTE], >, 0);
  g_assert_cmpuint(counts[0][ROK_DECISION_OFFLOAD_HOST], ==, 0);
  g_assert_cmpuint(counts[1][ROK_DECISION_OFFLOAD_NVME] + counts[1][ROK_DECISION_OFFLOAD_HOST], >, 0);
  g_assert_cmpuint(counts[1][ROK_DECISION_RECOMPUTE], ==, 0);
}

static void test_host_memory_option(void) {
  g_autoptr(RokTrace) trace = layered_trace(4);
  RokHw hw = small_hw();
  RokPlannerOptions o;
  rok_planner_options_init(&o);
  o.host_memory = 0;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, &hw, &o, &error);
  g_autoptr(RokSimResult) keep = keep_result(planner);
  g_autoptr(RokSimResult) r = NULL;
  g_autoptr(RokStepPlan) plan = rok_planner_plan(planner, keep->peak_bytes - 50 * MB, &r, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->host_peak_bytes, ==, 0);
  for (guint t = 0; t < trace->tensors->len; t++)
    g_assert_cmpint(plan->decisions[t], !=, ROK_DECISION_OFFLOAD_HOST);
}

static void check_curve(const RokCurve *curve, guint points) {
  g_assert_cmpuint(curve->points->len, ==, points);
  const RokCurvePoint *first = &g_array_index(curve->points, RokCurvePoint, 0);
  const RokCurvePoint *last = &g_array_index(curve->points, RokCurvePoint, points - 1);
  g_assert_cmpuint(first->budget_bytes, ==, curve->min_budget);
  g_assert_cmpuint(last->budget_bytes, ==, curve->keep_budget);
  g_assert_cmpuint(last->peak_bytes, ==, curve->baselines[ROK_STRATEGY_KEEP].peak_bytes);
  g_assert_cmpfloat(last->step_time_s, ==, curve->baselines[ROK_STRATEGY_KEEP].step_time_s);
  for (guint i = 0; i < points; i++) {
    const RokCurvePoint *p = &g_array_index(curve->points, RokCurvePoint, i);
    g_assert_cmpuint(p->peak_bytes, <=, p->budget_bytes);
    g_assert_cmpuint(p->activation_peak_bytes, ==, p->peak_bytes - curve->fixed_bytes);
    if (i == 0)
      continue;
    const RokCurvePoint *q = &g_array_index(curve->points, RokCurvePoint, i - 1);
    g_assert_cmpuint(p->budget_bytes, >, q->budget_bytes);
    g_assert_cmpfloat(p->step_time_s, <=, q->step_time_s * (1 + ROK_PLAN_WEAR_TOLERANCE));
  }
}

static RokCurve *curve_on(const RokTrace *trace, const RokHw *hw, guint threads, guint points) {
  RokPlannerOptions o;
  rok_planner_options_init(&o);
  o.threads = threads;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, &o, &error);
  RokCurve *curve = rok_planner_curve(planner, points, NULL, NULL, &error);
  g_assert_no_error(error);
  return curve;
}

static void test_curve(void) {
  g_autoptr(RokTrace) trace = layered_trace(4);
  RokHw hw = small_hw();
  g_autoptr(RokCurve) one = curve_on(trace, &hw, 1, 12);
  g_autoptr(RokCurve) three = curve_on(trace, &hw, 3, 12);
  check_curve(one, 12);
  g_assert_cmpuint(one->points->len, ==, three->points->len);
  for (guint i = 0; i < one->points->len; i++) { /* field by field: structs have padding */
    const RokCurvePoint *a = &g_array_index(one->points, RokCurvePoint, i);
    const RokCurvePoint *b = &g_array_index(three->points, RokCurvePoint, i);
    g_assert_cmpuint(a->budget_bytes, ==, b->budget_bytes);
    g_assert_cmpfloat(a->step_time_s, ==, b->step_time_s);
    g_assert_cmpuint(a->peak_bytes, ==, b->peak_bytes);
    g_assert_cmpmem(a->decision_bytes, sizeof a->decision_bytes, b->decision_bytes, sizeof b->decision_bytes);
    g_assert_cmpint(a->source, ==, b->source);
  }
  g_autofree char *csv = rok_curve_to_csv(one);
  g_assert_true(g_str_has_prefix(csv, "series,budget_bytes,step_time_s,tokens_per_s,tokens_per_gpu_s,model_flops_per_gpu_s,mfu,peak_bytes,"));
  g_assert_nonnull(strstr(csv, "\nkeep,"));
  g_assert_nonnull(strstr(csv, "\nrecompute,"));
  guint rows = 0;
  for (const char *p = csv; (p = strstr(p, "\nrok,")) != NULL; p++)
    rows++;
  g_assert_cmpuint(rows, ==, 12);
  json_object *json = rok_curve_to_json(one);
  g_assert_cmpuint(json_object_array_length(json), ==, 12);
  json_object_put(json);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokPlanner) planner = new_planner(trace, &hw);
  g_assert_null(rok_planner_curve(planner, 1, NULL, NULL, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
}

/* A plan for a budget between the curve's points (each planner's points
 * below it and its own search at it, shared out among threads): the same
 * on one thread and on three. */
static void test_plan_threads(void) {
  g_autoptr(RokTrace) trace = layered_trace(4);
  RokHw hw = small_hw();
  RokStepPlan *plans[2] = {NULL, NULL};
  guint threads[2] = {1, 3};
  for (guint i = 0; i < 2; i++) {
    RokPlannerOptions o;
    rok_planner_options_init(&o);
    o.threads = threads[i];
    o.curve_points = 8; /* fewer points and runs: quick under the sanitizers */
    o.polish_runs = 60;
    g_autoptr(GError) error = NULL;
    g_autoptr(RokPlanner) planner = rok_planner_new(trace, &hw, &o, &error);
    g_assert_no_error(error);
    g_autoptr(RokSimResult) keep = keep_result(planner);
    guint64 least = rok_planner_min_budget(planner, NULL);
    guint64 budget = least + (keep->peak_bytes - least) * 37 / 100;
    plans[i] = rok_planner_plan(planner, budget, NULL, &error);
    g_assert_no_error(error);
  }
  g_assert_cmpmem(plans[0]->decisions, sizeof(RokDecision) * plans[0]->n_tensors, plans[1]->decisions,
                  sizeof(RokDecision) * plans[1]->n_tensors);
  g_assert_cmpmem(&plans[0]->options, sizeof plans[0]->options, &plans[1]->options, sizeof plans[1]->options);
  rok_step_plan_free(plans[0]);
  rok_step_plan_free(plans[1]);
}

/* A small real model: the same plan every time. */
static void test_real_model_deterministic(void) {
  g_autofree char *path = g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "models", "gpt3-1.3b.json", NULL);
  g_autofree char *hw_path =
      g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "hw", "a100-80g-sxm-4x980pro.json", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokModel) model = rok_model_load(path, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
  g_autoptr(RokHw) hw = rok_hw_load(hw_path, &error);
  g_assert_no_error(error);
  guint64 budget = 12ull << 30;
  RokStepPlan *plans[2] = {NULL, NULL};
  RokPlannerOptions o;
  rok_planner_options_init(&o);
  o.polish_runs = 60;
  for (guint i = 0; i < 2; i++) {
    g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, &o, &error);
    g_autoptr(RokSimResult) r = check_plan(planner, budget);
    g_assert_cmpuint(r->peak_bytes, <=, budget);
    plans[i] = rok_planner_plan(planner, budget, NULL, &error);
    g_assert_no_error(error);
  }
  g_assert_cmpmem(plans[0]->decisions, trace->tensors->len * sizeof(RokDecision), plans[1]->decisions,
                  trace->tensors->len * sizeof(RokDecision));
  g_assert_cmpuint(plans[0]->options.memory_budget, ==, plans[1]->options.memory_budget);
  rok_step_plan_free(plans[0]);
  rok_step_plan_free(plans[1]);
}

/* Alike layers make one class per local name; outside tensors one each. */
static void test_classes(void) {
  g_autoptr(RokTrace) trace = layered_trace(20);
  RokHw hw = small_hw();
  g_autoptr(RokPlanner) p = new_planner(trace, &hw);
  g_assert_cmpuint(p->classes->len, ==, 3 + 1);
  const PlanClass *c = plan_class(p, 0);
  g_assert_cmpuint(c->n, ==, 20);
  g_assert_cmpuint(c->n_units, ==, PLAN_CHUNKS);
  g_assert_cmpstr(rok_trace_tensor(trace, plan_member(p, c, 7))->name, ==, "layer7.a_out");
  guint covered = 0;
  for (guint u = c->first_unit; u < c->first_unit + c->n_units; u++)
    covered += plan_unit(p, u)->hi - plan_unit(p, u)->lo;
  g_assert_cmpuint(covered, ==, 20);
}

/* The sentence names what is done and compares with the best baseline. */
static void test_summary(void) {
  g_autoptr(RokTrace) trace = layered_trace(4);
  RokHw hw = small_hw();
  g_autoptr(RokPlanner) planner = new_planner(trace, &hw);
  g_autoptr(RokSimResult) keep = keep_result(planner);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSimResult) r = NULL;
  guint64 budget = keep->peak_bytes - 40 * MB;
  g_autoptr(RokStepPlan) plan = rok_planner_plan(planner, budget, &r, &error);
  g_assert_no_error(error);
  RokSimResult *bases[ROK_STRATEGY_BASELINE_COUNT] = {NULL};
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    rok_step_plan_free(rok_planner_baseline(planner, b, budget, &bases[b], NULL));
  g_autofree char *text =
      rok_plan_summary(trace, plan, r, ROK_STRATEGY_ROK, budget, (const RokSimResult *const *)bases);
  g_assert_true(g_str_has_prefix(text, "Recommendation: "));
  g_assert_nonnull(strstr(text, " per micro-batch: "));
  g_assert_nonnull(strstr(text, "the fastest baseline that fits"));
  g_autoptr(RokStepPlan) all_kept = rok_step_plan_new(trace);
  g_autofree char *kept = rok_plan_summary(trace, all_kept, keep, ROK_STRATEGY_KEEP, keep->peak_bytes - 1,
                                           (const RokSimResult *const *)(RokSimResult *[ROK_STRATEGY_BASELINE_COUNT]){NULL});
  g_assert_nonnull(strstr(kept, "no baseline fits this budget"));
  g_assert_true(g_str_has_prefix(kept, "Strategy keep: keep every activation: "));
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    rok_sim_result_free(bases[b]);
}

static void test_strategy_names(void) {
  RokStrategy s;
  g_assert_true(rok_strategy_from_name("rok", &s, NULL));
  g_assert_cmpint(s, ==, ROK_STRATEGY_ROK);
  g_assert_true(rok_strategy_from_name("tba", &s, NULL));
  g_assert_cmpint(s, ==, ROK_STRATEGY_TBA);
  g_assert_cmpstr(rok_strategy_name(ROK_STRATEGY_ROK), ==, "rok");
  g_autoptr(GError) error = NULL;
  g_assert_false(rok_strategy_from_name("rock", &s, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "keep, recompute, selective, offload, tba, rok"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  /* Every answer the planner's memo gives is simulated again and must be
   * the same (planner-memo.c); not under the sanitizers, which check
   * memory, not answers, and make each run ten times dearer. */
#if !defined(__SANITIZE_ADDRESS__)
  g_setenv("ROK_PLAN_MEMO_CHECK", "1", TRUE);
#endif
  g_test_add_func("/planner/hand-built", test_hand_built);
  g_test_add_func("/planner/no-fit", test_no_fit);
  g_test_add_func("/planner/decisions-follow-the-machine", test_decisions_follow_the_machine);
  g_test_add_func("/planner/host-memory", test_host_memory_option);
  g_test_add_func("/planner/curve", test_curve);
  g_test_add_func("/planner/plan-threads", test_plan_threads);
  g_test_add_func("/planner/real-model-deterministic", test_real_model_deterministic);
  g_test_add_func("/planner/classes", test_classes);
  g_test_add_func("/planner/summary", test_summary);
  g_test_add_func("/planner/strategy-names", test_strategy_names);
  return g_test_run();
}
