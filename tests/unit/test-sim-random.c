/* The simulator under random plans on small real models: whatever the
 * mix of decisions and options, a run ends (the engine reports work left
 * or memory not released as an error), its log is consistent, and its
 * figures obey the invariants of the model. Seeded: the same every run. */
#include <glib.h>

#include "rok/model.h"
#include "rok/sim.h"
#include "test-configs.h"
#include "test-sim-log.h"

static void random_plan(GRand *rand, const RokTrace *trace, RokStepPlan *plan) {
  for (guint t = 0; t < trace->tensors->len; t++) {
    RokDecision d = g_rand_int_range(rand, 0, ROK_DECISION_COUNT);
    if (d == ROK_DECISION_RECOMPUTE && !rok_trace_tensor(trace, t)->recomputable)
      d = ROK_DECISION_KEEP;
    plan->decisions[t] = d;
  }
  plan->options.prefetch_window = g_rand_int_range(rand, 0, 4);
  plan->options.detail_micro_batches = g_rand_int_range(rand, 1, 4);
  plan->options.rebuild_whole_layers = g_rand_boolean(rand);
  guint64 fixed = rok_fixed_memory_bytes(&trace->fixed);
  /* From very tight (memory waits everywhere) to roomy. */
  plan->options.memory_budget = fixed + (guint64)(g_rand_double(rand) * 2.0 * (double)rok_trace_total_saved_bytes(trace));
}

static void check(const RokTrace *trace, const RokStepPlan *plan, const RokSimResult *r) {
  g_assert_cmpuint(r->peak_bytes, >=, r->fixed_bytes);
  g_assert_cmpint(r->step_ns, >=, r->compute_ns);
  g_assert_cmpint(r->recompute_ns, <=, r->compute_ns);
  gint64 stalls = 0;
  for (guint c = 0; c < ROK_STALL_COUNT; c++)
    stalls += r->stall_ns[c];
  g_assert_cmpint(stalls, ==, r->stall_total_ns);
  /* Exposed communication runs on the compute stream, apart from compute. */
  if (r->detailed_micro_batches == r->micro_batches)
    g_assert_cmpint(r->step_ns, ==, r->compute_ns + r->exposed_comm_ns + r->stall_total_ns);
  g_assert_cmpuint(r->nvme_read_bytes, <=, r->nvme_write_bytes);
  test_sim_check_log(r);
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *a = &g_array_index(r->actions, RokAction, i);
    /* Only offloaded tensors move. */
    if (a->kind == ROK_ACTION_OFFLOAD || a->kind == ROK_ACTION_PREFETCH) {
      RokDecision d = plan->decisions[a->tensor];
      g_assert_true(d == ROK_DECISION_OFFLOAD_NVME || d == ROK_DECISION_OFFLOAD_HOST);
      g_assert_true(rok_tensor_is_saved(rok_trace_tensor(trace, a->tensor)));
    }
  }
  for (guint i = 1; i < r->samples->len; i++)
    g_assert_cmpint(g_array_index(r->samples, RokSimSample, i - 1).time_ns, <, g_array_index(r->samples, RokSimSample, i).time_ns);
}

static void test_random_plans(void) {
  const char *const gpt[] = {"layers=3", "micro_batch=1", "global_batch=192", "seq_len=512", NULL};
  const char *const t5[] = {"layers=2", "decoder_layers=2", "micro_batch=2", NULL};
  const char *const llama[] = {"layers=2", "seq_len=1024", NULL};
  const char *const bert[] = {"layers=2", "global_batch=64", NULL};
  RokTrace *traces[] = {config_trace("gpt3-1.3b", gpt), config_trace("t5-3b", t5), config_trace("llama2-7b", llama),
                        config_trace("bert-large", bert)};
  RokHw *hws[] = {config_hw("a100-40g-pcie4-4xp5800x"), config_hw("a100-80g-sxm-4x980pro"),
                  config_hw("cpu-2core-virtio")};
  hws[1]->host.pinned_buffer = 64u << 20; /* staging waits */
  g_autoptr(GRand) rand = g_rand_new_with_seed(20240613);
  guint runs = 0, seen[6] = {0};
  for (guint round = 0; round < 150; round++)
    for (guint t = 0; t < G_N_ELEMENTS(traces); t++) {
      const RokHw *hw = hws[g_rand_int_range(rand, 0, G_N_ELEMENTS(hws))];
      g_autoptr(RokStepPlan) plan = rok_step_plan_new(traces[t]);
      random_plan(rand, traces[t], plan);
      g_autoptr(GError) error = NULL;
      g_autoptr(RokSimResult) r = rok_simulate_recorded(traces[t], hw, plan, &error);
      g_assert_no_error(error);
      check(traces[t], plan, r);
      runs++;
      seen[0] += r->forwarded_tensors > 0;
      seen[1] += r->stall_ns[ROK_STALL_STAGING] > 0;
      seen[2] += r->stall_ns[ROK_STALL_MEMORY] > 0;
      seen[3] += r->recompute_ns > 0;
      seen[4] += r->stall_ns[ROK_STALL_READ] > 0;
      seen[5] += r->stall_ns[ROK_STALL_PCIE] > 0;
    }
  g_test_message("%u random plans: %u with forwarding, stalls on staging %u, memory %u, read %u, pcie %u; "
                 "%u with recompute",
                 runs, seen[0], seen[1], seen[2], seen[4], seen[5], seen[3]);
  /* The random mix reaches every mechanism. */
  for (guint i = 0; i < G_N_ELEMENTS(seen); i++)
    g_assert_cmpuint(seen[i], >, 0);
  for (guint t = 0; t < G_N_ELEMENTS(traces); t++)
    rok_trace_free(traces[t]);
  for (guint h = 0; h < G_N_ELEMENTS(hws); h++)
    rok_hw_free(hws[h]);
}

/* A prefetch never takes the step over its budget: with the budget at the
 * peak of reading everything on demand (window 0), every window and unit
 * stays within it. */
static void test_prefetch_within_budget(void) {
  const char *const bert[] = {"layers=3", "global_batch=64", NULL};
  const char *const gpt[] = {"layers=3", "micro_batch=1", "global_batch=192", "seq_len=512", NULL};
  RokTrace *traces[] = {config_trace("bert-large", bert), config_trace("gpt3-1.3b", gpt)};
  RokHw *hws[] = {config_hw("a100-40g-pcie4-4xp5800x"), config_hw("a100-80g-sxm-4x980pro")};
  const struct {
    RokPrefetchUnit unit;
    guint window;
  } windows[] = {{ROK_PREFETCH_LAYER, 1}, {ROK_PREFETCH_LAYER, 2}, {ROK_PREFETCH_MODULE, 1}, {ROK_PREFETCH_OP, 2},
                 {ROK_PREFETCH_OP, 8}};
  g_autoptr(GRand) rand = g_rand_new_with_seed(20261124);
  guint runs = 0, ahead = 0;
  for (guint round = 0; round < 40; round++)
    for (guint t = 0; t < G_N_ELEMENTS(traces); t++) {
      const RokHw *hw = hws[g_rand_int_range(rand, 0, G_N_ELEMENTS(hws))];
      g_autoptr(RokStepPlan) plan = rok_step_plan_new(traces[t]);
      for (guint i = 0; i < traces[t]->tensors->len; i++) /* offloads and keeps: reads are what is tested */
        plan->decisions[i] = g_rand_int_range(rand, 0, 3);
      plan->options.prefetch_window = 0;
      g_autoptr(GError) error = NULL;
      g_autoptr(RokSimResult) demand = rok_simulate(traces[t], hw, plan, &error);
      g_assert_no_error(error);
      plan->options.memory_budget = demand->peak_bytes;
      for (guint w = 0; w < G_N_ELEMENTS(windows); w++) {
        plan->options.prefetch_unit = windows[w].unit;
        plan->options.prefetch_window = windows[w].window;
        g_autoptr(RokSimResult) r = rok_simulate(traces[t], hw, plan, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(r->peak_bytes, <=, plan->options.memory_budget);
        runs++;
        ahead += r->step_ns < demand->step_ns; /* the window did read ahead */
      }
    }
  g_test_message("%u runs within their budgets, %u faster than reading on demand", runs, ahead);
  g_assert_cmpuint(ahead, >, 0);
  for (guint t = 0; t < G_N_ELEMENTS(traces); t++)
    rok_trace_free(traces[t]);
  for (guint h = 0; h < G_N_ELEMENTS(hws); h++)
    rok_hw_free(hws[h]);
}

static gboolean same_run(const RokSimResult *a, const RokSimResult *b) {
  return a->step_ns == b->step_ns && a->peak_bytes == b->peak_bytes && a->host_peak_bytes == b->host_peak_bytes &&
         a->pcie_d2h_bytes == b->pcie_d2h_bytes && a->pcie_h2d_bytes == b->pcie_h2d_bytes &&
         a->nvme_write_bytes == b->nvme_write_bytes && a->stall_total_ns == b->stall_total_ns &&
         a->compute_ns == b->compute_ns && a->events == b->events;
}

/* A run is the same under every budget and window of the ranges it
 * reports (same_budget_lo/hi, same_window_lo/hi; the planner's memo
 * answers from them): rerun at their ends. */
static void test_same_ranges(void) {
  const char *const gpt[] = {"layers=3", "micro_batch=1", "global_batch=192", "seq_len=512", NULL};
  const char *const llama[] = {"layers=2", "seq_len=1024", NULL};
  RokTrace *traces[] = {config_trace("gpt3-1.3b", gpt), config_trace("llama2-7b", llama)};
  RokHw *hw = config_hw("a100-40g-pcie4-4xp5800x");
  g_autoptr(GRand) rand = g_rand_new_with_seed(20261125);
  guint bound = 0, windowed = 0;
  for (guint round = 0; round < 60; round++)
    for (guint t = 0; t < G_N_ELEMENTS(traces); t++) {
      g_autoptr(RokStepPlan) plan = rok_step_plan_new(traces[t]);
      random_plan(rand, traces[t], plan);
      g_autoptr(GError) error = NULL;
      g_autoptr(RokSimResult) r = rok_simulate(traces[t], hw, plan, &error);
      g_assert_no_error(error);
      g_assert_cmpuint(r->same_budget_lo, <=, r->budget_bytes);
      g_assert_cmpuint(r->budget_bytes, <, MAX(r->same_budget_hi, r->budget_bytes + 1));
      g_assert_cmpuint(r->same_window_lo, <=, plan->options.prefetch_window);
      g_assert_cmpuint(plan->options.prefetch_window, <, r->same_window_hi);
      g_assert_true(r->budget_bound == (r->same_budget_hi != G_MAXUINT64));
      bound += r->budget_bound;
      windowed += r->same_window_hi != G_MAXUINT;
      guint64 budgets[] = {MAX(r->same_budget_lo, 1), r->same_budget_hi == G_MAXUINT64 ? G_MAXUINT64 : r->same_budget_hi - 1};
      guint windows[] = {r->same_window_lo, MIN(r->same_window_hi - 1, r->same_window_lo + 8)};
      for (guint i = 0; i < G_N_ELEMENTS(budgets); i++) {
        g_autoptr(RokStepPlan) other = rok_step_plan_copy(plan);
        other->options.memory_budget = budgets[i];
        other->options.prefetch_window = windows[i];
        g_autoptr(RokSimResult) o = rok_simulate(traces[t], hw, other, &error);
        g_assert_no_error(error);
        g_assert_true(same_run(r, o));
      }
    }
  g_test_message("%u of 120 runs held back by the budget, %u by the window", bound, windowed);
  g_assert_cmpuint(bound, >, 0);
  g_assert_cmpuint(windowed, >, 0);
  for (guint t = 0; t < G_N_ELEMENTS(traces); t++)
    rok_trace_free(traces[t]);
  rok_hw_free(hw);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sim/random-plans", test_random_plans);
  g_test_add_func("/sim/prefetch-within-budget", test_prefetch_within_budget);
  g_test_add_func("/sim/same-ranges", test_same_ranges);
  return g_test_run();
}
