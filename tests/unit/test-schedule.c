/* Schedules: made from the simulator's log of every micro-batch, written
 * and read back to the same bytes, and every kind of damage refused with
 * the place named. */
#include <glib/gstdio.h>
#include <string.h>

#include "rok/core.h"
#include "rok/schedule.h"
#include "rok/sim.h"

#define MB 1000000ull

static guint add_op(RokTrace *trace, const char *name, gint layer, double fwd_ms) {
  guint id = rok_trace_add_op(trace, name, layer, ROK_OP_OTHER, 1, 1, 1, 1);
  rok_trace_op(trace, id)->fwd_time_s = fwd_ms / 1e3;
  rok_trace_op(trace, id)->bwd_time_s = 2 * fwd_ms / 1e3;
  return id;
}

/* Two layers of a (3 ms) -> A (24 MB) -> b (1 ms) -> B (8 MB); the head
 * makes a loss (every op makes something: the trace reader of this
 * version trips over an op without outputs under UBSan). */
static RokTrace *small_trace(void) {
  RokTrace *trace = rok_trace_new("small");
  trace->tokens_per_micro_batch = 1000;
  trace->micro_batches_per_step = 3;
  trace->fixed.weight_bytes = 16 * MB;
  trace->layers = 2;
  guint op = add_op(trace, "embed", -1, 0.5);
  guint x = rok_trace_add_tensor(trace, "embed.out", -1, ROK_DTYPE_U8, 1, (const guint64[]){2 * MB}, op);
  for (guint l = 0; l < 2; l++) {
    const char *names[] = {"a", "b"};
    const guint64 bytes[] = {24 * MB, 8 * MB};
    for (guint i = 0; i < 2; i++) {
      g_autofree char *op_name = g_strdup_printf("layer%u.%s", l, names[i]);
      g_autofree char *t_name = g_strdup_printf("layer%u.%s_out", l, names[i]);
      op = add_op(trace, op_name, (gint)l, i == 0 ? 3 : 1);
      rok_trace_add_input(trace, op, x);
      rok_trace_need(trace, x, op);
      x = rok_trace_add_tensor(trace, t_name, (gint)l, ROK_DTYPE_U8, 1, (const guint64[]){bytes[i]}, op);
    }
  }
  op = add_op(trace, "head", -1, 0.5);
  rok_trace_add_input(trace, op, x);
  rok_trace_need(trace, x, op);
  rok_trace_add_tensor(trace, "head.loss", -1, ROK_DTYPE_FP32, 1, (const guint64[]){1}, op);
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_trace_finish(trace, &error));
  return trace;
}

static RokHw small_hw(gboolean gpudirect) {
  RokHw hw = {0};
  hw.name = (char *)"small";
  hw.gpu.memory = (guint64)1 << 33;
  hw.gpu.peak_flops = 1e12;
  hw.gpu.matmul_efficiency = 1;
  hw.gpu.hbm_bandwidth = 1e11;
  hw.gpu.launch_overhead = 1000;
  hw.pcie.h2d_bandwidth = hw.pcie.d2h_bandwidth = 8e9;
  hw.pcie.latency = 2000;
  hw.host.memory = (guint64)1 << 32;
  hw.host.pinned_buffer = (guint64)1 << 28;
  hw.host.memcpy_bandwidth = 1e10;
  hw.nvme.devices = 2;
  hw.nvme.read_bandwidth = 3e9;
  hw.nvme.write_bandwidth = 2.5e9;
  hw.nvme.latency = 10000;
  hw.nvme.queue_depth = 64;
  hw.nvme.capacity = 500000 * MB;
  hw.nvme.endurance_pbw = 0.5;
  hw.nvme.gpudirect = gpudirect;
  return hw;
}

/* Offload A of layer 0 to NVMe, B of layer 0 to host, recompute A of layer 1. */
static RokStepPlan *mixed_plan(const RokTrace *trace) {
  RokStepPlan *plan = rok_step_plan_new(trace);
  plan->decisions[1] = ROK_DECISION_OFFLOAD_NVME;
  plan->decisions[2] = ROK_DECISION_OFFLOAD_HOST;
  plan->decisions[3] = ROK_DECISION_RECOMPUTE;
  plan->options.memory_budget = 100 * MB;
  return plan;
}

static RokSchedule *make(const RokTrace *trace, const RokHw *hw) {
  g_autoptr(RokStepPlan) plan = mixed_plan(trace);
  g_autoptr(GError) error = NULL;
  RokSchedule *s = rok_sim_schedule_new(trace, hw, plan, "rok", 128 * MB, &error);
  g_assert_no_error(error);
  return s;
}

static guint count(const RokSchedule *s, RokActionKind kind, RokStream stream) {
  guint n = 0;
  for (guint i = 0; i < s->actions->len; i++)
    n += rok_schedule_action(s, i)->kind == kind && rok_schedule_action(s, i)->stream == stream;
  return n;
}

static void test_contents(void) {
  g_autoptr(RokTrace) trace = small_trace();
  RokHw hw = small_hw(FALSE);
  g_autoptr(RokSchedule) s = make(trace, &hw);
  /* Every micro-batch in detail, each op once forward and once backward. */
  g_assert_cmpuint(s->plan->options.detail_micro_batches, ==, 3);
  g_assert_cmpuint(count(s, ROK_ACTION_FORWARD, ROK_STREAM_COMPUTE), ==, 3 * trace->ops->len);
  g_assert_cmpuint(count(s, ROK_ACTION_BACKWARD, ROK_STREAM_COMPUTE), ==, 3 * trace->ops->len);
  g_assert_cmpuint(count(s, ROK_ACTION_RECOMPUTE, ROK_STREAM_COMPUTE), ==, 3);
  g_assert_cmpuint(count(s, ROK_ACTION_OPTIMIZER, ROK_STREAM_COMPUTE), ==, 1);
  /* Staged NVMe offload: d2h then nvme-write; host offload: d2h only. */
  g_assert_cmpuint(count(s, ROK_ACTION_OFFLOAD, ROK_STREAM_NVME_WRITE), ==, 3);
  g_assert_cmpuint(count(s, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H), ==, 6);
  for (guint i = 0; i < s->actions->len; i++) {
    const RokAction *a = rok_schedule_action(s, i);
    g_assert_cmpint(a->start_ns, <=, a->end_ns);
    for (guint d = 0; d < a->deps_count; d++)
      g_assert_cmpuint(g_array_index(s->deps, guint, a->deps_first + d), <, i);
  }
  /* The predicted totals are those of the run the log came from. */
  g_autoptr(RokStepPlan) plan = mixed_plan(trace);
  plan->options.detail_micro_batches = 3;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSimResult) r = rok_simulate(trace, &hw, plan, &error);
  json_object *step = NULL;
  g_assert_true(json_object_object_get_ex(s->predicted, "step_time_s", &step));
  g_assert_cmpfloat(json_object_get_double(step), ==, r->step_time_s);
  const RokAction *last = rok_schedule_action(s, s->actions->len - 1);
  g_assert_cmpint(last->end_ns, ==, r->step_ns);
}

static void same_action(const RokAction *a, const RokAction *b) {
  g_assert_cmpint(a->kind, ==, b->kind);
  g_assert_cmpint(a->stream, ==, b->stream);
  g_assert_cmpuint(a->micro_batch, ==, b->micro_batch);
  g_assert_cmpuint(a->op, ==, b->op);
  g_assert_cmpuint(a->tensor, ==, b->tensor);
  g_assert_cmpuint(a->bytes, ==, b->bytes);
  g_assert_cmpint(a->gpudirect, ==, b->gpudirect);
  g_assert_cmpint(a->start_ns, ==, b->start_ns);
  g_assert_cmpint(a->end_ns, ==, b->end_ns);
  g_assert_cmpuint(a->deps_first, ==, b->deps_first);
  g_assert_cmpuint(a->deps_count, ==, b->deps_count);
}

static void test_round_trip(void) {
  g_autoptr(RokTrace) trace = small_trace();
  RokHw hw = small_hw(TRUE);
  g_autoptr(RokSchedule) s = make(trace, &hw);
  g_autofree char *text = rok_schedule_to_string(s);
  g_autofree char *dir = g_dir_make_tmp("rok-schedule-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "schedule.json", NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_schedule_save(s, path, &error));
  g_autoptr(RokSchedule) back = rok_schedule_load(path, &error);
  g_assert_no_error(error);
  g_autofree char *again = rok_schedule_to_string(back);
  g_assert_cmpstr(text, ==, again);
  g_assert_cmpuint(back->actions->len, ==, s->actions->len);
  for (guint i = 0; i < s->actions->len; i++) /* field by field: structs have padding */
    same_action(rok_schedule_action(back, i), rok_schedule_action(s, i));
  g_assert_cmpmem(back->deps->data, s->deps->len * sizeof(guint), s->deps->data, s->deps->len * sizeof(guint));
  g_assert_cmpmem(back->plan->decisions, trace->tensors->len * sizeof(RokDecision), s->plan->decisions,
                  trace->tensors->len * sizeof(RokDecision));
  g_assert_cmpuint(back->plan->options.memory_budget, ==, 100 * MB);
  g_assert_cmpuint(back->trace->ops->len, ==, trace->ops->len);
  g_assert_cmpfloat(back->hw->nvme.write_bandwidth, ==, hw.nvme.write_bandwidth);
  g_assert_cmpstr(back->trace_sha256, ==, s->trace_sha256);
  g_assert_nonnull(strstr(text, "\"gpudirect\": true"));
  g_unlink(path);
  g_rmdir(dir);
}

static void expect_error(const char *text, gint code, const char *needle) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSchedule) s = rok_schedule_parse("schedule.json", text, strlen(text), &error);
  g_assert_null(s);
  g_assert_error(error, ROK_ERROR, code);
  if (g_test_verbose())
    g_printerr("  %s\n", error->message);
  if (strstr(error->message, needle) == NULL)
    g_error("expected \"%s\" in: %s", needle, error->message);
}

/* `text` with the first `from` after `after` replaced by `to`. */
static char *replace(const char *text, const char *after, const char *from, const char *to) {
  const char *start = after ? strstr(text, after) : text;
  g_assert_nonnull(start);
  const char *at = strstr(start, from);
  g_assert_nonnull(at);
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

static void test_damage(void) {
  g_autoptr(RokTrace) trace = small_trace();
  RokHw hw = small_hw(TRUE);
  g_autoptr(RokSchedule) s = make(trace, &hw);
  g_autofree char *text = rok_schedule_to_string(s);
  const struct {
    const char *after, *from, *to;
    gint code;
    const char *needle;
  } cases[] = {
      {NULL, "rok-schedule/2", "rok-schedule/3", ROK_ERROR_FORMAT, "rok-schedule/2"},
      {"{\"id\": 3,", "\"deps\": [1]", "\"deps\": [4]", ROK_ERROR_INPUT, "actions[3].deps[0]"},
      {"{\"id\": 5,", "\"id\": 5", "\"id\": 6", ROK_ERROR_INPUT, "actions[5]"},
      {"{\"id\": 3,", "\"stream\": \"compute\"", "\"stream\": \"tape\"", ROK_ERROR_INPUT, "actions[3].stream"},
      {"\"kind\": \"offload\"", "\"kind\": \"offload\"", "\"kind\": \"prefetch\"", ROK_ERROR_INPUT,
       "cannot run on the nvme-write stream"},
      {"\"kind\": \"offload\"", "\"bytes\": 24000000", "\"bytes\": 24000001", ROK_ERROR_INPUT, "has 24000000 bytes"},
      {"{\"id\": 1,", "\"micro_batch\": 0", "\"micro_batch\": 3", ROK_ERROR_INPUT, "actions[1].micro_batch"},
      {"{\"id\": 1,", "\"start_s\": ", "\"start_s\": 9", ROK_ERROR_INPUT, "end_s is before start_s"},
      {"{\"id\": 1,", "\"op\": 1", "\"op\": 99", ROK_ERROR_INPUT, "actions[1].op"},
      {"{\"id\": 1,", "\"op\": 1", "\"tensor\": 1", ROK_ERROR_INPUT, "names an op and no tensor"},
      {"\"trace_sha256\"", "\": \"", "\": \"0", ROK_ERROR_INPUT, "does not match the embedded trace"},
      {"\"plan\"", "\"decision\": \"keep\"", "\"decision\": \"burn\"", ROK_ERROR_INPUT, "plan[0].decision"},
      {"\"plan\"", "\"name\": \"embed.out\"", "\"name\": \"embed.in\"", ROK_ERROR_INPUT, "expected saved tensor 0"},
      {"\"options\"", "\"detail_micro_batches\": 3", "\"detail_micro_batches\": 2", ROK_ERROR_INPUT,
       "detail_micro_batches"},
      {NULL, "\"strategy\": \"rok\"", "\"strategy\": \"ro k\"", ROK_ERROR_INPUT, "letters, digits"},
      {NULL, "\"budget_bytes\"", "\"budget_byte\"", ROK_ERROR_INPUT, "budget_byte"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *bad = replace(text, cases[i].after, cases[i].from, cases[i].to);
    expect_error(bad, cases[i].code, cases[i].needle);
  }
  /* Errors in an action name the file and the place. */
  g_autofree char *bad = replace(text, "{\"id\": 3,", "\"deps\": [1]", "\"deps\": [4]");
  g_autoptr(GError) error = NULL;
  g_assert_null(rok_schedule_parse("schedule.json", bad, strlen(bad), &error));
  g_assert_true(g_str_has_prefix(error->message, "schedule.json:"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/schedule/contents", test_contents);
  g_test_add_func("/schedule/round-trip", test_round_trip);
  g_test_add_func("/schedule/damage", test_damage);
  return g_test_run();
}
