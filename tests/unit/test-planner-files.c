/* SSD figures worked out by hand, and rok-plan/1 files: written, read
 * back to the same bytes, and refused when they do not match the trace. */
#include <math.h>
#include <string.h>

#include "rok/core.h"
#include "rok/plan.h"

#define MB 1000000ull

static guint add_op(RokTrace *trace, const char *name, gint layer, double fwd_ms) {
  guint id = rok_trace_add_op(trace, name, layer, ROK_OP_OTHER, 1, 1, 1, 1);
  rok_trace_op(trace, id)->fwd_time_s = fwd_ms / 1e3;
  rok_trace_op(trace, id)->bwd_time_s = 2 * fwd_ms / 1e3;
  return id;
}

/* embed (0.5 ms) -> layer0.a (4 ms) -> A (30 MB) -> layer0.b (2 ms) -> B (10 MB) -> head (0.5 ms). */
static RokTrace *small_trace(void) {
  RokTrace *trace = rok_trace_new("small");
  trace->tokens_per_micro_batch = 1000;
  trace->micro_batches_per_step = 2;
  trace->fixed.weight_bytes = 8 * MB;
  trace->layers = 1;
  guint e = add_op(trace, "embed", -1, 0.5);
  guint x = rok_trace_add_tensor(trace, "embed.out", -1, ROK_DTYPE_U8, 1, (const guint64[]){2 * MB}, e);
  guint a = add_op(trace, "layer0.a", 0, 4);
  rok_trace_add_input(trace, a, x);
  rok_trace_need(trace, x, a);
  guint ta = rok_trace_add_tensor(trace, "layer0.a_out", 0, ROK_DTYPE_U8, 1, (const guint64[]){30 * MB}, a);
  guint b = add_op(trace, "layer0.b", 0, 2);
  rok_trace_add_input(trace, b, ta);
  rok_trace_need(trace, ta, b);
  guint tb = rok_trace_add_tensor(trace, "layer0.b_out", 0, ROK_DTYPE_U8, 1, (const guint64[]){10 * MB}, b);
  guint h = add_op(trace, "head", -1, 0.5);
  rok_trace_add_input(trace, h, tb);
  rok_trace_need(trace, tb, h);
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_trace_finish(trace, &error));
  return trace;
}

static RokHw small_hw(void) {
  RokHw hw = {0};
  hw.name = (char *)"small";
  hw.gpu.memory = (guint64)1 << 33;
  hw.gpu.peak_flops = 1e12;
  hw.gpu.matmul_efficiency = 1;
  hw.gpu.hbm_bandwidth = 1e11;
  hw.pcie.h2d_bandwidth = hw.pcie.d2h_bandwidth = 8e9;
  hw.host.memory = (guint64)1 << 32;
  hw.host.pinned_buffer = (guint64)1 << 28;
  hw.host.memcpy_bandwidth = 1e10;
  hw.nvme.devices = 2;
  hw.nvme.read_bandwidth = 3e9;
  hw.nvme.write_bandwidth = 2.5e9;
  hw.nvme.queue_depth = 64;
  hw.nvme.capacity = 500000 * MB;
  hw.nvme.endurance_pbw = 0.5;
  hw.nvme.gpudirect = TRUE;
  return hw;
}

static void test_ssd_by_hand(void) {
  g_autoptr(RokTrace) trace = small_trace();
  RokHw hw = small_hw();
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[1] = ROK_DECISION_OFFLOAD_NVME; /* layer0.a_out, 30 MB */
  RokSimResult result = {.step_time_s = 2.0, .nvme_write_bytes = 60 * MB};
  RokSsdFigures s;
  RokSsdModel model;
  rok_ssd_model_init(&model);
  model.write_amplification = 2.5;
  rok_ssd_figures(trace, &hw, plan, &result, &model, &s);
  double forward = 0.0005 + 0.004 + 0.002 + 0.0005;
  g_assert_cmpuint(s.offload_bytes_per_micro_batch, ==, 30 * MB);
  g_assert_cmpfloat_with_epsilon(s.forward_time_s, forward, 1e-12);
  g_assert_cmpfloat_with_epsilon(s.required_write_bandwidth, 30e6 / (1.5 * forward), 1e-3);
  g_assert_cmpuint(s.write_bytes_per_step, ==, 60 * MB);
  g_assert_cmpfloat_with_epsilon(s.write_bytes_per_day, 60e6 * 43200, 1);
  g_assert_cmpfloat_with_epsilon(s.average_write_bandwidth, 30e6, 1e-6);
  g_assert_cmpfloat(s.array_write_bandwidth, ==, 5e9);
  g_assert_cmpfloat(s.path_write_bandwidth, ==, 5e9);
  g_assert_cmpfloat(s.endurance_bytes, ==, 1e15);
  g_assert_cmpfloat_with_epsilon(s.lifetime_years, 1e15 / (60e6 * 43200 * 2.5) / 365.25, 1e-9);
  g_assert_cmpuint(s.capacity_bytes, ==, 1000000 * MB);
  /* Nothing written: an unbounded lifetime, null in JSON. */
  result.nvme_write_bytes = 0;
  plan->decisions[1] = ROK_DECISION_KEEP;
  rok_ssd_figures(trace, &hw, plan, &result, NULL, &s);
  g_assert_true(isinf(s.lifetime_years));
  json_object *json = rok_ssd_figures_to_json(&s);
  json_object *life = NULL;
  g_assert_true(json_object_object_get_ex(json, "lifetime_years", &life));
  g_assert_null(life);
  g_assert_true(json_object_object_get_ex(json, "required_write_bandwidth", NULL));
  g_assert_true(json_object_object_get_ex(json, "write_bytes_per_step", NULL));
  json_object_put(json);
}

static RokPlanFile *make_file(const RokTrace *trace) {
  RokPlanFile *file = g_new0(RokPlanFile, 1);
  file->strategy = g_strdup("rok");
  file->model_name = g_strdup("small");
  file->hw_name = g_strdup("small");
  file->trace_sha256 = rok_trace_sha256(trace, NULL);
  file->budget_bytes = 123 * MB;
  file->feasible = TRUE;
  file->plan = rok_step_plan_new(trace);
  file->plan->decisions[1] = ROK_DECISION_OFFLOAD_NVME;
  file->plan->decisions[2] = ROK_DECISION_RECOMPUTE;
  file->plan->options.memory_budget = 100 * MB;
  file->report = json_object_new_object();
  json_object_object_add(file->report, "summary", json_object_new_string("Recommendation: things."));
  json_object *predicted = json_object_new_object();
  json_object_object_add(predicted, "step_time_s", rok_json_new_double(0.1 + 0.2));
  json_object_object_add(file->report, "predicted", predicted);
  json_object_object_add(file->report, "layers", rok_plan_layers_to_json(trace, file->plan));
  return file;
}

static char *file_text(const RokPlanFile *file, const RokTrace *trace) {
  json_object *doc = rok_plan_file_to_json(file, trace);
  char *text = rok_json_to_string(doc);
  json_object_put(doc);
  return text;
}

static void test_plan_file_round_trip(void) {
  g_autoptr(RokTrace) trace = small_trace();
  g_autoptr(RokPlanFile) file = make_file(trace);
  g_autofree char *text = file_text(file, trace);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokPlanFile) back = rok_plan_file_parse("plan.json", text, strlen(text), trace, &error);
  g_assert_no_error(error);
  g_assert_cmpint(back->plan->decisions[1], ==, ROK_DECISION_OFFLOAD_NVME);
  g_assert_cmpint(back->plan->decisions[2], ==, ROK_DECISION_RECOMPUTE);
  g_assert_cmpuint(back->plan->options.memory_budget, ==, 100 * MB);
  g_assert_cmpuint(back->budget_bytes, ==, 123 * MB);
  g_autofree char *again = file_text(back, trace);
  g_assert_cmpstr(text, ==, again);
  g_assert_nonnull(strstr(text, "\"format\": \"rok-plan/1\""));
  g_assert_nonnull(strstr(text, "\"decision\": \"offload-nvme\""));
}

static void expect_error(const RokTrace *trace, const char *text, gint code, const char *needle) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokPlanFile) file = rok_plan_file_parse("plan.json", text, strlen(text), trace, &error);
  g_assert_null(file);
  g_assert_error(error, ROK_ERROR, code);
  if (g_test_verbose())
    g_printerr("  %s\n", error->message);
  if (strstr(error->message, needle) == NULL)
    g_error("expected \"%s\" in: %s", needle, error->message);
}

static char *replace(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  g_assert_nonnull(at);
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

static void test_plan_file_errors(void) {
  g_autoptr(RokTrace) trace = small_trace();
  g_autoptr(RokPlanFile) file = make_file(trace);
  g_autofree char *text = file_text(file, trace);
  g_autofree char *format = replace(text, "rok-plan/1", "rok-plan/2");
  expect_error(trace, format, ROK_ERROR_FORMAT, "rok-plan/1");
  g_autofree char *decision = replace(text, "\"decision\": \"offload-nvme\"", "\"decision\": \"offload-tape\"");
  expect_error(trace, decision, ROK_ERROR_INPUT, "plan.json:");
  g_autofree char *name = replace(text, "\"layer0.b_out\"", "\"layer0.c_out\"");
  expect_error(trace, name, ROK_ERROR_INPUT, "expected saved tensor 2 (layer0.b_out");
  g_autofree char *key = replace(text, "\"feasible\"", "\"feasable\"");
  expect_error(trace, key, ROK_ERROR_INPUT, "feasable");
  g_autofree char *strategy = replace(text, "\"strategy\": \"rok\"", "\"strategy\": \"rock\"");
  expect_error(trace, strategy, ROK_ERROR_INPUT, "unknown strategy");
  /* Another trace: the hash says so. */
  g_autoptr(RokTrace) other = small_trace();
  rok_trace_tensor(other, 1)->recomputable = FALSE;
  rok_trace_op(other, 1)->fwd_time_s = 0.005;
  expect_error(other, text, ROK_ERROR_INPUT, "made for another trace");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/planner/ssd-by-hand", test_ssd_by_hand);
  g_test_add_func("/planner/plan-file/round-trip", test_plan_file_round_trip);
  g_test_add_func("/planner/plan-file/errors", test_plan_file_errors);
  return g_test_run();
}
