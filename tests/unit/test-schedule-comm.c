/* Communication actions in schedules: the collectives the simulator folds
 * into op times come out as comm actions whose durations add up to the
 * simulator's communication figures, the compute left beside them adds up
 * to the compute of the unsplit log, the step ends where it did, and a
 * pipeline stage sends after every block that has a neighbour. */
#include <string.h>

#include "rok/core.h"
#include "rok/plan.h"
#include "rok/schedule.h"
#include "rok/sim.h"
#include "rok/trace.h"
#include "test-bundled.h"

typedef struct {
  gint64 by_group[ROK_COMM_GROUP_COUNT];
  guint sends, comm_on_wrong_stream;
  gint64 compute_and_comm, compute, end;
} Sums;

static gboolean is_compute(RokActionKind k) {
  return k == ROK_ACTION_FORWARD || k == ROK_ACTION_BACKWARD || k == ROK_ACTION_RECOMPUTE || k == ROK_ACTION_OPTIMIZER;
}

static Sums sums_of(const GArray *actions) {
  Sums s = {0};
  for (guint i = 0; i < actions->len; i++) {
    const RokAction *a = &g_array_index(actions, RokAction, i);
    gint64 ns = a->end_ns - a->start_ns;
    if (a->kind == ROK_ACTION_COMM) {
      s.by_group[a->group] += ns;
      s.sends += a->group == ROK_COMM_PIPELINE;
      s.comm_on_wrong_stream += (a->group == ROK_COMM_PIPELINE) != (a->stream == ROK_STREAM_P2P);
      if (a->group != ROK_COMM_PIPELINE)
        s.compute_and_comm += ns;
    } else if (is_compute(a->kind)) {
      s.compute_and_comm += ns;
      s.compute += ns;
    }
    if (a->stream != ROK_STREAM_P2P)
      s.end = MAX(s.end, a->end_ns);
  }
  return s;
}

static RokModel *small(const char *const *extra) {
  const char *base[] = {"layers=4", "hidden=512", "heads=8", "seq_len=256", "micro_batch=1", "global_batch=16",
                        "data_parallel=2", "virtual_stages=1", NULL};
  return test_bundled_model2("gpt3-1.3b", base, extra);
}

/* Stage `stage` of `m` under `strategy`: the schedule against its run. */
static void check(const RokModel *m, guint stage, RokStrategy strategy) {
  g_autoptr(RokHw) hw = test_bundled_hw("h100-80g-sxm-4xgen5");
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_for_stage(m, stage, &error);
  g_assert_no_error(error);
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(strategy, trace, hw, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(RokSchedule) s = rok_sim_schedule_new(trace, hw, plan, "test", hw->gpu.memory, &error);
  g_assert_no_error(error);
  g_autoptr(RokStepPlan) run = rok_step_plan_copy(plan);
  run->options.detail_micro_batches = (guint)trace->micro_batches_per_step;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, run, &error);
  g_assert_no_error(error);
  Sums got = sums_of(s->actions), log = sums_of(r->actions);
  g_test_message("%s stage %u %s: %u actions (log %u); comm tp %.3f ms, zero3 %.3f ms, dp %.3f ms, %u sends",
                 m->name, stage, rok_strategy_name(strategy), s->actions->len, r->actions->len,
                 (double)got.by_group[ROK_COMM_TENSOR_PARALLEL] / 1e6, (double)got.by_group[ROK_COMM_ZERO3] / 1e6,
                 (double)got.by_group[ROK_COMM_DATA_PARALLEL] / 1e6, got.sends);
  /* Split, not added: compute and collectives fill the compute's time. */
  g_assert_cmpint(got.compute_and_comm, ==, log.compute);
  g_assert_cmpint(got.end, ==, log.end);
  g_assert_cmpuint(got.comm_on_wrong_stream, ==, 0);
  /* The simulator's figures: forward and backward collectives (a rebuild
   * runs its forward's again), ZeRO-3's and the reduction's exposed parts. */
  if (strategy == ROK_STRATEGY_KEEP)
    g_assert_cmpint(got.by_group[ROK_COMM_TENSOR_PARALLEL], ==, r->tp_comm_ns);
  else
    g_assert_cmpint(got.by_group[ROK_COMM_TENSOR_PARALLEL], >=, r->tp_comm_ns);
  g_assert_cmpint(got.by_group[ROK_COMM_ZERO3], ==, r->zero3_exposed_ns);
  g_assert_cmpint(got.by_group[ROK_COMM_DATA_PARALLEL], ==, r->dp_exposed_ns);
  /* A send after every forward block but the model's last chunk's, after
   * every backward block but its first's. */
  guint64 blocks = trace->micro_batches_per_step * trace->chunks;
  guint expected = trace->stages < 2 ? 0
                                     : (guint)(2 * blocks - (stage == 0 ? trace->micro_batches_per_step : 0) -
                                               (stage + 1 == trace->stages ? trace->micro_batches_per_step : 0));
  g_assert_cmpuint(got.sends, ==, expected);
  g_assert_cmpint(got.by_group[ROK_COMM_PIPELINE] % MAX(expected, 1), ==, 0); /* equal sends */
  g_assert_true((got.by_group[ROK_COMM_PIPELINE] > 0) == (expected > 0));
  /* Each comm action follows what it waits for. */
  for (guint i = 0; i < s->actions->len; i++) {
    const RokAction *a = rok_schedule_action(s, i);
    for (guint d = 0; d < a->deps_count; d++)
      g_assert_cmpint(rok_schedule_action(s, g_array_index(s->deps, guint, a->deps_first + d))->end_ns, <=,
                      a->start_ns);
  }
}

static void test_tensor_parallel(void) {
  g_autoptr(RokModel) sp = small((const char *const[]){"tensor_parallel=4", "sequence_parallel=true", NULL});
  g_autoptr(RokModel) ar = small((const char *const[]){"tensor_parallel=2", "sequence_parallel=false", NULL});
  for (RokStrategy st = ROK_STRATEGY_KEEP; st <= ROK_STRATEGY_SELECTIVE; st++) {
    check(sp, 0, st);
    check(ar, 0, st);
  }
}

/* The tensor-parallel time of stage 0 under keep. */
static gint64 tp_ns(const RokModel *m) {
  g_autoptr(RokHw) hw = test_bundled_hw("h100-80g-sxm-4xgen5");
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_for_stage(m, 0, &error);
  g_assert_no_error(error);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  g_autoptr(RokSimResult) r = rok_simulate(trace, hw, plan, &error);
  g_assert_no_error(error);
  return r->tp_comm_ns;
}

/* Megatron hides a column-parallel backward's all-reduce under its weight-
 * gradient GEMM; DeepSpeed's is charged whole. Without sequence
 * parallelism those all-reduces are half of the collectives (one per
 * row-parallel forward, one per column-parallel backward), so Megatron's
 * exposure lies in [half, all) of DeepSpeed's, and the schedules split
 * either way add up. */
static void test_megatron_hides(void) {
  const char *const *frameworks[] = {(const char *const[]){"tensor_parallel=2", "sequence_parallel=false", NULL},
                                     (const char *const[]){"tensor_parallel=2", "sequence_parallel=false",
                                                           "framework=deepspeed", NULL}};
  g_autoptr(RokModel) megatron = small(frameworks[0]);
  g_autoptr(RokModel) deepspeed = small(frameworks[1]);
  check(deepspeed, 0, ROK_STRATEGY_KEEP);
  check(deepspeed, 0, ROK_STRATEGY_RECOMPUTE);
  gint64 hidden = tp_ns(megatron), whole = tp_ns(deepspeed);
  g_test_message("tensor-parallel exposure: megatron %.3f ms, deepspeed %.3f ms", (double)hidden / 1e6,
                 (double)whole / 1e6);
  g_assert_cmpint(hidden, <, whole);
  g_assert_cmpint(2 * hidden, >=, whole);
}

static void test_zero3(void) {
  g_autoptr(RokModel) m =
      small((const char *const[]){"framework=deepspeed", "zero_stage=3", "tensor_parallel=1", "hidden=2048",
                                  "heads=16", "seq_len=32", NULL});
  check(m, 0, ROK_STRATEGY_KEEP);
  check(m, 0, ROK_STRATEGY_RECOMPUTE);
  g_autoptr(RokHw) hw = test_bundled_hw("h100-80g-sxm-4xgen5");
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_for_stage(m, 0, &error);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  g_autoptr(RokSchedule) s = rok_sim_schedule_new(trace, hw, plan, "keep", hw->gpu.memory, &error);
  g_assert_no_error(error);
  g_assert_cmpint(sums_of(s->actions).by_group[ROK_COMM_ZERO3], >, 0); /* the case is one that exposes some */
}

static void test_pipeline(void) {
  g_autoptr(RokModel) m = small((const char *const[]){"pipeline_parallel=2", "tensor_parallel=2", NULL});
  g_autoptr(RokModel) v = small((const char *const[]){"pipeline_parallel=2", "virtual_stages=2", NULL});
  for (guint stage = 0; stage < 2; stage++) {
    check(m, stage, ROK_STRATEGY_KEEP);
    check(v, stage, ROK_STRATEGY_SELECTIVE);
  }
}

/* Without an interconnect nothing is costed: the log as it was. */
static void test_none(void) {
  g_autoptr(RokModel) m = small((const char *const[]){"tensor_parallel=2", NULL});
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_for_stage(m, 0, &error);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  g_autoptr(RokSchedule) s = rok_sim_schedule_new(trace, hw, plan, "keep", hw->gpu.memory, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < s->actions->len; i++)
    g_assert_cmpint(rok_schedule_action(s, i)->kind, !=, ROK_ACTION_COMM);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/schedule-comm/tensor-parallel", test_tensor_parallel);
  g_test_add_func("/schedule-comm/megatron-hides", test_megatron_hides);
  g_test_add_func("/schedule-comm/zero3", test_zero3);
  g_test_add_func("/schedule-comm/pipeline", test_pipeline);
  g_test_add_func("/schedule-comm/none", test_none);
  return g_test_run();
}
