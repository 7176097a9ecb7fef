/* The baseline strategies, and the simulator on the bundled configs: the
 * figures the papers report must come out. */
#include <glib.h>
#include <string.h>

#include "rok/core.h"
#include "rok/model.h"
#include "rok/plan.h"

typedef struct {
  RokTrace *trace;
  RokHw *hw;
} Setup;

static char *config_path(const char *kind, const char *name) {
  const char *root = g_getenv("ROK_SOURCE_DIR");
  g_autofree char *file = g_strconcat(name, ".json", NULL);
  return g_build_filename(root ? root : ROK_SOURCE_DIR, "configs", kind, file, NULL);
}

static Setup load(const char *model_name, const char *hw_name) {
  g_autoptr(GError) error = NULL;
  g_autofree char *model_path = config_path("models", model_name), *hw_path = config_path("hw", hw_name);
  g_autoptr(RokModel) model = rok_model_load(model_path, NULL, &error);
  g_assert_no_error(error);
  Setup s = {.trace = rok_trace_new_from_model(model, &error)};
  g_assert_no_error(error);
  s.hw = rok_hw_load(hw_path, &error);
  g_assert_no_error(error);
  return s;
}

static void unload(Setup *s) {
  rok_trace_free(s->trace);
  rok_hw_free(s->hw);
}

static RokSimResult *simulate(const Setup *s, RokStrategy strategy) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(strategy, s->trace, s->hw, NULL, &error);
  g_assert_no_error(error);
  RokSimResult *r = rok_simulate(s->trace, s->hw, plan, &error);
  g_assert_no_error(error);
  g_assert_cmpint(r->step_ns, >, 0);
  return r;
}

static guint64 bytes_with(const RokTrace *trace, const RokStepPlan *plan, gint layer, RokDecision decision) {
  guint64 total = 0;
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (tensor->layer == layer && rok_tensor_is_saved(tensor) && plan->decisions[t] == decision)
      total += tensor->bytes;
  }
  return total;
}

static void test_names(void) {
  for (guint i = 0; i < ROK_STRATEGY_BASELINE_COUNT; i++) {
    RokStrategy s;
    g_assert_true(rok_strategy_from_name(rok_strategy_name(i), &s, NULL));
    g_assert_cmpint(s, ==, i);
  }
  g_autoptr(GError) error = NULL;
  RokStrategy s;
  g_assert_false(rok_strategy_from_name("offlaod", &s, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "tba"));
}

/* GPT-3 1.3B, seq 2048, micro-batch 1, no TP: full recompute keeps 2sbh
 * per layer (the input); selective recomputes the 5as²b of the attention
 * core (Korthikanti et al.). Layer -1 is always kept. */
static void test_recompute_structure(void) {
  Setup s = load("gpt3-1.3b", "a100-80g-sxm-4x980pro");
  const guint64 sbh = 2048 * 1 * 2048, as2b = 16ull * 2048 * 2048;
  g_autoptr(RokStepPlan) full = rok_strategy_plan(ROK_STRATEGY_RECOMPUTE, s.trace, s.hw, NULL, NULL);
  g_autoptr(RokStepPlan) selective = rok_strategy_plan(ROK_STRATEGY_SELECTIVE, s.trace, s.hw, NULL, NULL);
  g_assert_true(full->options.rebuild_whole_layers);
  g_assert_false(selective->options.rebuild_whole_layers);
  for (gint layer = 0; layer < (gint)s.trace->layers; layer++) {
    g_assert_cmpuint(bytes_with(s.trace, full, layer, ROK_DECISION_KEEP), ==, 2 * sbh);
    g_assert_cmpuint(bytes_with(s.trace, selective, layer, ROK_DECISION_RECOMPUTE), ==, 5 * as2b);
  }
  g_assert_cmpuint(bytes_with(s.trace, full, -1, ROK_DECISION_RECOMPUTE), ==, 0);
  g_assert_cmpuint(bytes_with(s.trace, selective, -1, ROK_DECISION_RECOMPUTE), ==, 0);
  unload(&s);
}

/* Megatron full recompute costs about one extra forward: 1.25-1.40x keep
 * on compute-bound GPT layers. Selective costs a few percent. */
static void test_recompute_cost(gconstpointer data) {
  Setup s = load(data, "a100-80g-sxm-4x980pro");
  g_autoptr(RokSimResult) keep = simulate(&s, ROK_STRATEGY_KEEP);
  g_autoptr(RokSimResult) full = simulate(&s, ROK_STRATEGY_RECOMPUTE);
  g_autoptr(RokSimResult) selective = simulate(&s, ROK_STRATEGY_SELECTIVE);
  double ratio = full->step_time_s / keep->step_time_s;
  g_test_message("%s: recompute %.3fx keep, selective %.3fx", (const char *)data, ratio,
                 selective->step_time_s / keep->step_time_s);
  g_assert_cmpfloat(ratio, >=, 1.25);
  g_assert_cmpfloat(ratio, <=, 1.40);
  g_assert_cmpint(full->step_ns, ==, full->compute_ns + full->exposed_comm_ns + full->stall_total_ns);
  g_assert_cmpint(full->compute_ns - full->recompute_ns, ==, keep->compute_ns);
  g_assert_cmpuint(full->activation_peak_bytes, <, keep->activation_peak_bytes / 4);
  g_assert_cmpfloat(selective->step_time_s / keep->step_time_s, <, 1.10);
  g_assert_cmpuint(selective->activation_peak_bytes, <, keep->activation_peak_bytes);
  g_assert_cmpuint(selective->activation_peak_bytes, >, full->activation_peak_bytes);
  unload(&s);
}

/* SSDTrain's BERT on A100 + 4x P5800X: offloading cuts the activation peak
 * by 28% or more at the throughput of keeping everything. */
static void test_ssdtrain_bert(void) {
  Setup s = load("ssdtrain-bert", "a100-40g-pcie4-4xp5800x");
  g_autoptr(RokSimResult) keep = simulate(&s, ROK_STRATEGY_KEEP);
  RokStrategy strategies[] = {ROK_STRATEGY_OFFLOAD, ROK_STRATEGY_TBA};
  for (guint i = 0; i < G_N_ELEMENTS(strategies); i++) {
    g_autoptr(RokSimResult) r = simulate(&s, strategies[i]);
    double cut = 1.0 - (double)r->activation_peak_bytes / (double)keep->activation_peak_bytes;
    double slower = r->step_time_s / keep->step_time_s;
    g_test_message("%s: activation peak -%.1f%%, step %.4fx keep", rok_strategy_name(strategies[i]), 100 * cut,
                   slower);
    g_assert_cmpfloat(cut, >=, 0.28);
    g_assert_cmpfloat(slower, <=, 1.03);
    g_assert_cmpuint(r->nvme_write_bytes, >, 0);
    g_assert_true(r->fits);
  }
  guint n = 0, total = 0;
  g_assert_true(rok_strategy_tba_modules(s.trace, s.hw, NULL, &n, &total, NULL));
  g_assert_cmpuint(total, ==, 2 * s.trace->layers); /* attention and MLP */
  g_assert_cmpuint(n, >=, 1);
  g_assert_cmpuint(n, <, total); /* the last module is kept */
  g_autoptr(RokStepPlan) tba = rok_strategy_plan(ROK_STRATEGY_TBA, s.trace, s.hw, NULL, NULL);
  g_assert_cmpint(tba->options.prefetch_unit, ==, ROK_PREFETCH_MODULE);
  g_assert_cmpuint(tba->options.prefetch_window, ==, 2);
  /* The last layer's MLP block keeps everything. */
  for (guint t = 0; t < s.trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(s.trace, t);
    if (tensor->layer == (gint)s.trace->layers - 1 && strstr(tensor->name, ".mlp.") != NULL)
      g_assert_cmpint(tba->decisions[t], ==, ROK_DECISION_KEEP);
  }
  unload(&s);
}

/* One SSD at 0.5 GB/s: offloading everything stalls visibly; tba notices
 * and keeps everything. */
static void test_starved_ssds(void) {
  Setup s = load("ssdtrain-bert", "a100-40g-pcie4-4xp5800x");
  s.hw->nvme.devices = 1;
  s.hw->nvme.read_bandwidth = s.hw->nvme.write_bandwidth = 0.5e9;
  g_autoptr(RokSimResult) keep = simulate(&s, ROK_STRATEGY_KEEP);
  g_autoptr(RokSimResult) offload = simulate(&s, ROK_STRATEGY_OFFLOAD);
  g_autoptr(RokSimResult) tba = simulate(&s, ROK_STRATEGY_TBA);
  g_test_message("starved: offload %.3fx keep", offload->step_time_s / keep->step_time_s);
  g_assert_cmpfloat(offload->step_time_s, >, 1.2 * keep->step_time_s);
  g_assert_cmpint(offload->stall_ns[ROK_STALL_READ], >, 0);
  g_assert_cmpint(tba->step_ns, ==, keep->step_ns);
  g_assert_cmpuint(tba->nvme_write_bytes, ==, 0);
  unload(&s);
}

/* Offload moves exactly the saved tensors of the layers at or over the
 * floor; a higher floor moves fewer. */
static void test_offload_floor(void) {
  Setup s = load("gpt3-1.3b", "a100-80g-sxm-4x980pro");
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(ROK_STRATEGY_OFFLOAD, s.trace, s.hw, NULL, NULL);
  RokStrategyOptions options;
  rok_strategy_options_init(&options);
  g_assert_cmpuint(options.offload_min_elements, ==, 8u << 20);
  options.offload_min_elements = 48u << 20;
  g_autoptr(RokStepPlan) high = rok_strategy_plan(ROK_STRATEGY_OFFLOAD, s.trace, s.hw, &options, NULL);
  guint moved = 0, moved_high = 0;
  for (guint t = 0; t < s.trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(s.trace, t);
    guint64 elements = tensor->bytes / rok_dtype_bytes(tensor->dtype);
    gboolean want = tensor->layer >= 0 && rok_tensor_is_saved(tensor) && elements >= (8u << 20);
    g_assert_cmpint(plan->decisions[t] == ROK_DECISION_OFFLOAD_NVME, ==, want);
    moved += want;
    moved_high += high->decisions[t] == ROK_DECISION_OFFLOAD_NVME;
  }
  g_assert_cmpuint(moved, >, 0);
  g_assert_cmpuint(moved_high, <, moved);
  s.hw->nvme.devices = 0;
  g_autoptr(GError) error = NULL;
  g_assert_null(rok_strategy_plan(ROK_STRATEGY_TBA, s.trace, s.hw, NULL, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  unload(&s);
}

static char *run_text(const Setup *s, RokStrategy strategy, char **timeline) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(strategy, s->trace, s->hw, NULL, &error);
  g_autoptr(RokSimResult) r = rok_simulate_recorded(s->trace, s->hw, plan, &error);
  g_assert_no_error(error);
  json_object *summary = rok_sim_result_to_json(r, s->trace);
  json_object *events = rok_sim_timeline_to_json(r, s->trace, &error);
  g_assert_no_error(error);
  *timeline = rok_json_to_string(events);
  char *text = rok_json_to_string(summary);
  json_object_put(summary);
  json_object_put(events);
  return text;
}

/* Same inputs, same bytes: the summary and the timeline. */
static void test_deterministic(void) {
  Setup s = load("gpt3-1.3b", "a100-80g-sxm-4x980pro");
  RokStrategy strategies[] = {ROK_STRATEGY_OFFLOAD, ROK_STRATEGY_RECOMPUTE};
  for (guint i = 0; i < G_N_ELEMENTS(strategies); i++) {
    g_autofree char *timeline1 = NULL, *timeline2 = NULL;
    g_autofree char *json1 = run_text(&s, strategies[i], &timeline1);
    g_autofree char *json2 = run_text(&s, strategies[i], &timeline2);
    g_assert_cmpstr(json1, ==, json2);
    g_assert_cmpstr(timeline1, ==, timeline2);
    g_assert_nonnull(strstr(json1, "\"tokens_per_s\""));
    g_assert_nonnull(strstr(timeline1, "\"ph\": \"C\""));
  }
  /* A simulator reused between plans gives what a fresh one gives. */
  g_autoptr(RokSim) sim = rok_sim_new(s.trace, s.hw, NULL);
  for (guint i = 0; i < ROK_STRATEGY_BASELINE_COUNT; i++) {
    g_autoptr(RokStepPlan) plan = rok_strategy_plan(i, s.trace, s.hw, NULL, NULL);
    g_autoptr(RokSimResult) warm = rok_sim_run(sim, plan, NULL);
    g_autoptr(RokSimResult) cold = rok_simulate(s.trace, s.hw, plan, NULL);
    g_assert_cmpint(warm->step_ns, ==, cold->step_ns);
    g_assert_cmpuint(warm->peak_bytes, ==, cold->peak_bytes);
  }
  unload(&s);
}

/* A timeline needs a recording run. */
static void test_timeline_needs_record(void) {
  Setup s = load("gpt3-1.3b", "a100-80g-sxm-4x980pro");
  g_autoptr(RokSimResult) r = simulate(&s, ROK_STRATEGY_KEEP);
  g_autoptr(GError) error = NULL;
  g_assert_null(rok_sim_timeline_to_json(r, s.trace, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  unload(&s);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/strategy/names", test_names);
  g_test_add_func("/strategy/recompute-structure", test_recompute_structure);
  g_test_add_data_func("/strategy/recompute-cost/gpt3-1.3b", "gpt3-1.3b", test_recompute_cost);
  g_test_add_data_func("/strategy/recompute-cost/gpt3-13b", "gpt3-13b", test_recompute_cost);
  g_test_add_data_func("/strategy/recompute-cost/gpt3-175b", "gpt3-175b", test_recompute_cost);
  g_test_add_func("/strategy/ssdtrain-bert", test_ssdtrain_bert);
  g_test_add_func("/strategy/starved-ssds", test_starved_ssds);
  g_test_add_func("/strategy/offload-floor", test_offload_floor);
  g_test_add_func("/strategy/deterministic", test_deterministic);
  g_test_add_func("/strategy/timeline-needs-record", test_timeline_needs_record);
  return g_test_run();
}
