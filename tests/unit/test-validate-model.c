/* What validation changed in the model the predictions come from: measured
 * op rates in the hardware profile (reading, writing, interpolation, the
 * simulator's use of them, the calibration's curves) and activation
 * gradients that live as autograd keeps them. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "rok/calibrate.h"
#include "rok/core.h"
#include "rok/model.h"
#include "rok/sim.h"

#define PROFILE(rates)                                                                                         \
  "{\"gpu\": {\"memory\": \"8GiB\", \"peak_flops\": 1e11, \"matmul_efficiency\": 0.5, "                      \
  "\"hbm_bandwidth\": 1e10, \"launch_overhead\": \"10us\"" rates "}, \"pcie\": {\"h2d_bandwidth\": 1e9, "    \
  "\"d2h_bandwidth\": 1e9}, \"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", "                    \
  "\"memcpy_bandwidth\": 1e9}}"

static const char *const rates_text =
    ", \"op_rates\": {\"linear\": {\"forward\": [[1e6, 1e9], [1e8, 4e9], [1e10, 8e9]], \"backward\": [[2e6, 2e9]]}, "
    "\"softmax\": {\"backward\": [[1000, 5e8], [4000, 1e9]]}, \"dropout\": {\"rebuild\": [[100, 1e8]]}}";

static RokHw *parse(const char *text, GError **error) {
  return rok_hw_parse("hw.json", text, strlen(text), error);
}

/* HW as rok writes it. */
static char *hw_text(const RokHw *hw) {
  json_object *o = rok_hw_to_json(hw);
  char *out = rok_json_to_string(o);
  json_object_put(o);
  return out;
}

/* HW written and read back. */
static RokHw *round_trip(const RokHw *hw) {
  GError *error = NULL;
  g_autofree char *out = hw_text(hw);
  RokHw *back = parse(out, &error);
  g_assert_no_error(error);
  return back;
}

/* Read, looked up, interpolated, written back and copied. */
static void test_rates_read(void) {
  g_autofree char *text = g_strdup_printf(PROFILE("%s"), rates_text);
  GError *error = NULL;
  g_autoptr(RokHw) hw = parse(text, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(hw->gpu.op_rates_len, ==, 3);
  const RokHwOpRates *linear = rok_hw_op_rates(hw, "linear"), *softmax = rok_hw_op_rates(hw, "softmax");
  g_assert_cmpfloat(rok_hw_op_rate(rok_hw_op_rates(hw, "dropout"), ROK_HW_REBUILD, 5), ==, 1e8);
  g_assert_nonnull(linear);
  g_assert_nonnull(softmax);
  g_assert_null(rok_hw_op_rates(hw, "gelu"));
  g_assert_cmpuint(linear->len[0], ==, 3);
  g_assert_cmpuint(linear->len[1], ==, 1);
  g_assert_cmpuint(softmax->len[0], ==, 0);
  /* Knots exactly; clamped outside; monotone between; none: 0. */
  g_assert_cmpfloat(rok_hw_op_rate(linear, FALSE, 1e8), ==, 4e9);
  g_assert_cmpfloat(rok_hw_op_rate(linear, FALSE, 10), ==, 1e9);
  g_assert_cmpfloat(rok_hw_op_rate(linear, FALSE, 1e12), ==, 8e9);
  double mid = rok_hw_op_rate(linear, FALSE, 1e9);
  g_assert_cmpfloat(mid, >, 4e9);
  g_assert_cmpfloat(mid, <, 8e9);
  g_assert_cmpfloat(rok_hw_op_rate(linear, TRUE, 1e9), ==, 2e9);
  g_assert_cmpfloat(rok_hw_op_rate(softmax, FALSE, 1000), ==, 0);
  g_assert_cmpfloat(rok_hw_op_rate(NULL, FALSE, 1000), ==, 0);
  /* Two knots: linear in log(work). */
  g_assert_cmpfloat_with_epsilon(rok_hw_op_rate(softmax, TRUE, 2000), 7.5e8, 1);

  g_autoptr(RokHw) back = round_trip(hw);
  g_assert_cmpuint(back->gpu.op_rates_len, ==, 3);
  g_assert_cmpuint(back->gpu.op_rates[2].len[ROK_HW_REBUILD], ==, 1);
  g_assert_cmpstr(back->gpu.op_rates[0].kind, ==, "linear");
  g_assert_cmpfloat(back->gpu.op_rates[0].curve[0][2].rate, ==, 8e9);
  g_assert_cmpuint(back->gpu.op_rates[1].len[0], ==, 0); /* softmax has no forward */
  g_assert_cmpuint(back->gpu.op_rates[1].len[1], ==, 2);

  g_autoptr(RokHw) copy = rok_hw_copy(hw);
  g_assert_true(copy->gpu.op_rates != hw->gpu.op_rates);
  copy->gpu.op_rates[0].curve[0][0].rate = 1;
  g_assert_cmpfloat(hw->gpu.op_rates[0].curve[0][0].rate, ==, 1e9);

  /* Without: none written. */
  g_autoptr(RokHw) plain = parse(PROFILE(""), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plain->gpu.op_rates_len, ==, 0);
  json_object *p = rok_hw_to_json(plain);
  g_autofree char *plain_text = rok_json_to_string(p);
  json_object_put(p);
  g_assert_null(strstr(plain_text, "op_rates"));
}

static void test_rates_bad(void) {
  static const struct {
    const char *rates, *expect;
  } cases[] = {
      {", \"op_rates\": 3", "\"gpu.op_rates\""},
      {", \"op_rates\": {\"linear\": 3}", "\"gpu.op_rates.linear\""},
      {", \"op_rates\": {\"linear\": {}}", "must have a \"forward\", \"backward\" or \"rebuild\" curve"},
      {", \"op_rates\": {\"linear\": {\"sideways\": [[1, 1]]}}", "unknown key"},
      {", \"op_rates\": {\"linear\": {\"forward\": []}}", "\"gpu.op_rates.linear.forward\": must hold 1 to"},
      {", \"op_rates\": {\"linear\": {\"forward\": [[1e6]]}}", "\"gpu.op_rates.linear.forward[0]\": must be a pair"},
      {", \"op_rates\": {\"linear\": {\"forward\": [[2e6, 1], [1e6, 1]]}}", "work must be more than the previous"},
      {", \"op_rates\": {\"linear\": {\"backward\": [[1e6, 0]]}}", "\"gpu.op_rates.linear.backward[0]\": rate must be"},
      {", \"op_rates\": {\"linear\": {\"backward\": [[-1, 1]]}}", "work must be positive"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = g_strdup_printf(PROFILE("%s"), cases[i].rates);
    GError *error = NULL;
    g_autoptr(RokHw) hw = parse(text, &error);
    g_assert_null(hw);
    g_test_message("%s", error->message);
    g_assert_cmpint(rok_error_exit_code(error), ==, ROK_EXIT_INVALID);
    g_assert_nonnull(strstr(error->message, cases[i].expect));
    g_assert_nonnull(strstr(error->message, "hw.json:"));
    g_error_free(error);
  }
}

/* ---- the simulator ---- */

static RokTrace *new_trace(void) {
  RokTrace *trace = rok_trace_new("hand");
  trace->tokens_per_micro_batch = 1;
  trace->micro_batches_per_step = 1;
  trace->fixed.weight_bytes = 1000;
  return trace;
}

static void finish(RokTrace *trace) {
  GError *error = NULL;
  g_assert_true(rok_trace_finish(trace, &error));
  g_assert_no_error(error);
}

static guint add_tensor(RokTrace *trace, const char *name, RokDtype dtype, guint64 elements, guint producer) {
  return rok_trace_add_tensor(trace, name, 0, dtype, 1, (const guint64[]){elements}, producer);
}

/* N ops in a row: op i ("op<i>") makes NAMES[i] of BYTES[i] bytes, which
 * its own backward needs, and takes SECONDS[i] each way; their ids in OPS
 * and TENSORS. */
static RokTrace *ops_in_a_row(guint n, const char *const names[], const guint64 bytes[], const double seconds[],
                              guint ops[], guint tensors[]) {
  RokTrace *trace = new_trace();
  for (guint i = 0; i < n; i++) {
    g_autofree char *op = g_strdup_printf("op%u", i);
    ops[i] = rok_trace_add_op(trace, op, 0, ROK_OP_OTHER, 1, 1, 1, 1);
    tensors[i] = add_tensor(trace, names[i], ROK_DTYPE_U8, bytes[i], ops[i]);
  }
  for (guint i = 0; i < n; i++) {
    rok_trace_need(trace, tensors[i], ops[i]);
    rok_trace_op(trace, ops[i])->fwd_time_s = rok_trace_op(trace, ops[i])->bwd_time_s = seconds[i];
  }
  finish(trace);
  return trace;
}

/* A linear takes work / rate + launch where the profile has its rate, the
 * roofline where it has none (its backward) and for other kinds; a
 * misspelt kind is an error naming it. */
static void test_rates_sim(void) {
  g_autofree char *text = g_strdup_printf(PROFILE("%s"), ", \"op_rates\": {\"linear\": {\"forward\": [[1e6, 1e9]]}}");
  GError *error = NULL;
  g_autoptr(RokHw) hw = parse(text, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = new_trace();
  guint op = rok_trace_add_op(trace, "fc", 0, ROK_OP_LINEAR, 1, 100, 100, 50);
  guint gelu = rok_trace_add_op(trace, "act", 0, ROK_OP_GELU, 1, 100, 100, 0);
  RokOp *o = rok_trace_op(trace, op);
  o->fwd_flops = 4000000;
  o->bwd_flops = 8000000;
  o->fwd_bytes = o->bwd_bytes = 1000;
  rok_trace_op(trace, gelu)->fwd_bytes = 1000000;
  guint y = add_tensor(trace, "y", ROK_DTYPE_U8, 10, op);
  rok_trace_add_input(trace, gelu, y);
  add_tensor(trace, "z", ROK_DTYPE_U8, 10, gelu);
  finish(trace);
  g_assert_cmpfloat(rok_op_work(o, FALSE), ==, 4e6);
  g_assert_cmpfloat(rok_op_work(o, TRUE), ==, 8e6);
  g_assert_cmpfloat(rok_op_work(rok_trace_op(trace, gelu), FALSE), ==, 1e6);
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, &error);
  g_assert_no_error(error);
  g_assert_cmpint(rok_sim_op_ns(sim, op, FALSE), ==, 4000000 + 10000); /* 4e6 / 1e9 s + 10 us */
  /* Roofline: 8e6 / (1e11 · 0.5) = 160 us; 1e6 bytes / 1e10 = 100 us. */
  g_assert_cmpint(rok_sim_op_ns(sim, op, TRUE), ==, 160000 + 10000);
  g_assert_cmpint(rok_sim_op_ns(sim, gelu, FALSE), ==, 100000 + 10000);

  g_free(hw->gpu.op_rates[0].kind);
  hw->gpu.op_rates[0].kind = g_strdup("lineer");
  g_autoptr(RokSim) bad = rok_sim_new(trace, hw, &error);
  g_assert_null(bad);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "\"lineer\" is not an op kind"));
  g_assert_nonnull(strstr(error->message, "softmax"));
  g_error_free(error);
}

/* A dropout mask recomputed alone is rebuilt from the seed: at the
 * profile's rebuild rate for dropout where it has one, else at HBM
 * bandwidth. */
static void test_seed_rebuild(void) {
  static const char model_text[] =
      "{\"arch\": \"gpt\", \"layers\": 1, \"hidden\": 64, \"heads\": 1, \"seq_len\": 64, \"micro_batch\": 1, "
      "\"vocab\": 128}";
  GError *error = NULL;
  g_autoptr(RokModel) model = rok_model_parse("m.json", model_text, strlen(model_text), NULL, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  guint mask = G_MAXUINT;
  for (guint t = 0; t < trace->tensors->len; t++)
    if (g_str_equal(rok_trace_tensor(trace, t)->name, "layer0.attn.dropout_mask"))
      mask = t;
  g_assert_cmpuint(mask, !=, G_MAXUINT);
  const RokTensor *m = rok_trace_tensor(trace, mask);
  g_assert_cmpuint(m->recompute_from->len, ==, 0);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[mask] = ROK_DECISION_RECOMPUTE;
  g_autofree char *text = g_strdup_printf(PROFILE("%s"), ", \"op_rates\": {\"dropout\": {\"rebuild\": [[1, 1e8]]}}");
  g_autoptr(RokHw) rated = parse(text, &error);
  g_assert_no_error(error);
  g_autoptr(RokHw) plain = parse(PROFILE(""), &error);
  g_assert_no_error(error);
  const RokHw *profiles[] = {rated, plain};
  const double rates[] = {1e8, plain->gpu.hbm_bandwidth};
  for (guint i = 0; i < G_N_ELEMENTS(profiles); i++) {
    g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, profiles[i], plan, &error);
    g_assert_no_error(error);
    const RokAction *rebuild = NULL;
    for (guint k = 0; k < r->actions->len; k++) {
      const RokAction *a = &g_array_index(r->actions, RokAction, k);
      if (a->kind == ROK_ACTION_RECOMPUTE && a->op == m->producer)
        rebuild = a;
    }
    g_assert_nonnull(rebuild);
    g_assert_cmpint(rebuild->end_ns - rebuild->start_ns, ==, llround((double)m->bytes / rates[i] * 1e9) + 10000);
  }
}

/* The ledger when each backward starts: the last sample at its start time
 * (frees of the item before come first, then its own allocations). */
static guint64 live_at_start(const RokSimResult *r, guint op) {
  gint64 start = -1;
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *a = &g_array_index(r->actions, RokAction, i);
    if (a->kind == ROK_ACTION_BACKWARD && a->op == op)
      start = a->start_ns;
  }
  g_assert_cmpint(start, >=, 0);
  guint64 live = 0;
  for (guint i = 0; i < r->samples->len; i++) {
    const RokSimSample *s = &g_array_index(r->samples, RokSimSample, i);
    if (s->time_ns <= start)
      live = s->gpu_bytes;
  }
  return live;
}

/* in -> ids (no gradient: data) -> norm -> x (bf16 100 B) + stats (fp32
 * 40 B, kept for norm's own backward: no gradient) -> fc -> y (bf16 200 B)
 * -> add(x, y) -> z (bf16 300 B, read by nobody: its gradient comes from
 * outside). x is read twice: its gradient is made by add's backward (its
 * last reader), lives through fc's backward and is freed after norm's. */
static void test_gradients(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint in = rok_trace_add_op(trace, "in", -1, ROK_OP_INPUT, 1, 1, 1, 0);
  guint ids = add_tensor(trace, "ids", ROK_DTYPE_I64, 2, in);
  guint norm = rok_trace_add_op(trace, "norm", 0, ROK_OP_LAYERNORM, 1, 1, 50, 0);
  rok_trace_add_input(trace, norm, ids);
  guint x = add_tensor(trace, "x", ROK_DTYPE_BF16, 50, norm);
  guint stats = add_tensor(trace, "stats", ROK_DTYPE_FP32, 10, norm);
  guint fc = rok_trace_add_op(trace, "fc", 0, ROK_OP_LINEAR, 1, 1, 100, 50);
  rok_trace_add_input(trace, fc, x);
  guint y = add_tensor(trace, "y", ROK_DTYPE_BF16, 100, fc);
  guint add = rok_trace_add_op(trace, "add", 0, ROK_OP_ADD, 1, 1, 150, 0);
  rok_trace_add_input(trace, add, x);
  rok_trace_add_input(trace, add, y);
  add_tensor(trace, "z", ROK_DTYPE_BF16, 150, add);
  rok_trace_need(trace, stats, norm);
  rok_trace_need(trace, x, fc);
  for (guint o = 0; o < trace->ops->len; o++)
    rok_trace_op(trace, o)->fwd_time_s = rok_trace_op(trace, o)->bwd_time_s = 1e-3;
  finish(trace);
  RokHw hw = {.name = (char *)"test"};
  hw.gpu.memory = 1 << 20;
  hw.gpu.peak_flops = hw.gpu.hbm_bandwidth = 1e12;
  hw.gpu.matmul_efficiency = 1;
  hw.pcie.h2d_bandwidth = hw.pcie.d2h_bandwidth = 1e9;
  hw.host.memory = hw.host.pinned_buffer = 1 << 20;
  hw.host.memcpy_bandwidth = 1e9;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  GError *error = NULL;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, &hw, plan, &error);
  g_assert_no_error(error);
  /* Kept for backward: stats (40) and x (100); y and z are transient. */
  g_assert_cmpuint(live_at_start(r, add), ==, 1000 + 140 + 300 + 100 + 200); /* z from outside; x, y made */
  g_assert_cmpuint(live_at_start(r, fc), ==, 1000 + 140 + 100 + 200);       /* z gone; x's lives on */
  g_assert_cmpuint(live_at_start(r, norm), ==, 1000 + 40 + 100);            /* x used by fc: freed; x's grad */
  g_assert_cmpuint(r->peak_bytes, ==, 1000 + 740);
}

static const RokAction *leg(const RokSimResult *r, RokActionKind kind, RokStream stream) {
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *a = &g_array_index(r->actions, RokAction, i);
    if (a->kind == kind && a->stream == stream)
      return a;
  }
  g_assert_not_reached();
}

/* A profile's host checksum rate is charged to every leg that crosses
 * PCIe, not to the SSD legs; it reads back and is left out when 0. Legs
 * here: 1 MB at 1 GB/s over PCIe and the SSD; the check at 2 GB/s. */
static void test_checksum(void) {
  GError *error = NULL;
  g_autofree char *text = g_strdup_printf(PROFILE("%s"), "");
  g_autoptr(RokHw) plain = parse(text, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(plain->host.checksum_bandwidth, ==, 0);
  g_autofree char *with = g_strdup(text);
  char *at = strstr(with, "\"memcpy_bandwidth\": 1e9");
  g_assert_nonnull(at);
  g_autofree char *checked =
      g_strdup_printf("%.*s\"checksum_bandwidth\": \"2GB/s\", %s", (int)(at - with), with, at);
  g_autoptr(RokHw) hw = parse(checked, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(hw->host.checksum_bandwidth, ==, 2e9);
  g_autofree char *out = hw_text(hw);
  g_assert_nonnull(strstr(out, "\"checksum_bandwidth\": 2000000000"));
  g_autofree char *plain_out = hw_text(plain);
  g_assert_null(strstr(plain_out, "checksum_bandwidth"));

  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = rok_trace_add_op(trace, "op0", 0, ROK_OP_OTHER, 1, 1, 1, 1);
  guint a = add_tensor(trace, "A", ROK_DTYPE_U8, 1000000, op0);
  guint op1 = rok_trace_add_op(trace, "op1", 0, ROK_OP_OTHER, 1, 1, 1, 1);
  rok_trace_add_input(trace, op1, a);
  guint b = add_tensor(trace, "B", ROK_DTYPE_U8, 10, op1);
  rok_trace_need(trace, a, op0);
  rok_trace_need(trace, b, op1);
  rok_trace_op(trace, op0)->fwd_time_s = rok_trace_op(trace, op0)->bwd_time_s = 1e-3;
  rok_trace_op(trace, op1)->fwd_time_s = rok_trace_op(trace, op1)->bwd_time_s = 10e-3;
  finish(trace);
  hw->nvme.devices = 1;
  hw->nvme.read_bandwidth = hw->nvme.write_bandwidth = 1e9;
  hw->nvme.queue_depth = 32;
  hw->nvme.capacity = (guint64)1 << 40;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_NVME;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  const RokAction *d2h = leg(r, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H);
  const RokAction *write = leg(r, ROK_ACTION_OFFLOAD, ROK_STREAM_NVME_WRITE);
  const RokAction *h2d = leg(r, ROK_ACTION_PREFETCH, ROK_STREAM_H2D);
  g_assert_cmpint(d2h->end_ns - d2h->start_ns, ==, 1500000);  /* 1 ms + 0.5 ms check */
  g_assert_cmpint(write->end_ns - write->start_ns, ==, 1000000); /* no check */
  g_assert_cmpint(h2d->end_ns - h2d->start_ns, ==, 1500000);
  hw->host.checksum_bandwidth = 0;
  g_autoptr(RokSimResult) unchecked = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  d2h = leg(unchecked, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H);
  g_assert_cmpint(d2h->end_ns - d2h->start_ns, ==, 1000000);
}

/* op0 (1 ms) makes A, copied out to host memory (1 MB at 1 GB/s) while
 * op1 (10 ms of work) runs. With the copy on the compute processors (2 of
 * them), both share them both ways. The copy starts as op1 is launched,
 * so it is queued ahead of op1's kernel and has a processor of its own: 1
 * ms at 1 GB/s, while op1 advances at 1/2 on the other (0.5 ms of its
 * work done by 2 ms); it ends at 11.5 ms. Without, at 11 ms. */
static void test_shared_cpus(void) {
  GError *error = NULL;
  g_autofree char *text = g_strdup_printf(PROFILE("%s"), ", \"shared_cpus\": 2");
  g_autoptr(RokHw) hw = parse(text, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(hw->gpu.shared_cpus, ==, 2);
  g_autofree char *out = hw_text(hw);
  g_assert_nonnull(strstr(out, "\"shared_cpus\": 2"));
  g_autofree char *bad_text = g_strdup_printf(PROFILE("%s"), ", \"shared_cpus\": -1");
  g_autoptr(RokHw) bad = parse(bad_text, &error);
  g_assert_null(bad);
  g_assert_nonnull(strstr(error->message, "\"gpu.shared_cpus\""));
  g_clear_error(&error);

  guint op[2], t[2];
  g_autoptr(RokTrace) trace = ops_in_a_row(2, (const char *const[]){"A", "B"}, (const guint64[]){1000000, 10},
                                           (const double[]){1e-3, 10e-3}, op, t);
  guint op1 = op[1], a = t[0];
  hw->pcie.latency = 0;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_HOST;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  const RokAction *copy = leg(r, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H);
  g_assert_cmpint(copy->start_ns, ==, 1000000);
  g_assert_cmpint(copy->end_ns, ==, 2000000); /* ahead of op1: not slowed */
  const RokAction *fwd1 = NULL;
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *x = &g_array_index(r->actions, RokAction, i);
    if (x->kind == ROK_ACTION_FORWARD && x->op == op1)
      fwd1 = x;
  }
  g_assert_cmpint(fwd1->start_ns, ==, 1000000);
  g_assert_cmpint(fwd1->end_ns, ==, 11500000);
  /* Busy time is what the compute took: 1 + 10.5 forward, 10 + 1 backward
   * (the read back overlaps op1's backward, slowing it as well). */
  g_assert_cmpint(r->compute_ns, >, 22000000);
  hw->gpu.shared_cpus = 0;
  g_autoptr(RokSimResult) own = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  g_assert_cmpint(own->compute_ns, ==, 22000000);
  g_assert_cmpint(own->step_ns, <, r->step_ns);
}

/* The first action of KIND of OP and of TENSOR (ROK_NO_ID: any; NULL: none). */
static const RokAction *first_action(const RokSimResult *r, RokActionKind kind, guint op, guint tensor) {
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *x = &g_array_index(r->actions, RokAction, i);
    if (x->kind == kind && (op == ROK_NO_ID || x->op == op) && (tensor == ROK_NO_ID || x->tensor == tensor))
      return x;
  }
  return NULL;
}

static const RokAction *fwd_of(const RokSimResult *r, guint op) {
  return first_action(r, ROK_ACTION_FORWARD, op, ROK_NO_ID);
}

/* op0 (1 ms) makes A of `bytes` (and A2 of `second` bytes, unless 0),
 * which op1 (one kernel of 10 ms) does not need: their copies out run
 * beside op1. */
static RokTrace *copies_beside_kernel(guint64 bytes, guint64 second, guint *a, guint *a2, guint *op1) {
  RokTrace *trace = new_trace();
  guint op0 = rok_trace_add_op(trace, "op0", 0, ROK_OP_OTHER, 1, 1, 1, 1);
  *a = add_tensor(trace, "A", ROK_DTYPE_U8, bytes, op0);
  if (second > 0)
    *a2 = add_tensor(trace, "A2", ROK_DTYPE_U8, second, op0);
  *op1 = rok_trace_add_op(trace, "op1", 0, ROK_OP_OTHER, 1, 1, 1, 1);
  guint b = add_tensor(trace, "B", ROK_DTYPE_U8, 10, *op1);
  rok_trace_need(trace, *a, op0);
  if (second > 0)
    rok_trace_need(trace, *a2, op0);
  rok_trace_need(trace, b, *op1);
  rok_trace_op(trace, op0)->fwd_time_s = rok_trace_op(trace, op0)->bwd_time_s = 1e-3;
  rok_trace_op(trace, *op1)->fwd_time_s = rok_trace_op(trace, *op1)->bwd_time_s = 10e-3;
  finish(trace);
  return trace;
}

static RokTrace *copy_beside_kernel(guint64 bytes, guint *a, guint *op1) {
  return copies_beside_kernel(bytes, 0, a, NULL, op1);
}

/* A plan that copies A and A2 out to host memory and back. */
static RokStepPlan *both_to_host(const RokTrace *trace, guint a, guint a2) {
  RokStepPlan *plan = rok_step_plan_new(trace);
  plan->decisions[a] = plan->decisions[a2] = ROK_DECISION_OFFLOAD_HOST;
  return plan;
}

static RokSimResult *simulate(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan) {
  GError *error = NULL;
  RokSimResult *r = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  return r;
}

/* Run `pass` of two: the copies checked at 1 GB/s (0) or not at all (1). */
static RokSimResult *simulate_checked(const RokTrace *trace, RokHw *hw, const RokStepPlan *plan, guint pass) {
  hw->host.checksum_bandwidth = pass == 0 ? 1e9 : 0;
  return simulate(trace, hw, plan);
}

/* The executor's costs: read and written back; the copy of
 * test_shared_cpus, handed over as op1 (one kernel of 10 ms) is launched,
 * is queued ahead of op1 and does not wait for it, and pays half of
 * host.copy_overhead (the compute thread enqueued it: only the hand-off
 * back); op1 slows while the leg runs (with one processor they share it);
 * a GPU profile (no shared_cpus) ignores copy_kernel_wait and pays the
 * whole hand-off. */
static void test_copy_costs(void) {
  GError *error = NULL;
  g_autofree char *text = g_strdup_printf(PROFILE("%s"), ", \"shared_cpus\": 2, \"copy_kernel_wait\": 0.5");
  g_autoptr(RokHw) parsed = parse(text, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(parsed->gpu.copy_kernel_wait, ==, 0.5);
  guint a = 0, op1 = 0;
  g_autoptr(RokTrace) trace = copy_beside_kernel(1048576, &a, &op1);
  g_autoptr(RokHw) hw = rok_hw_copy(parsed);
  hw->pcie.latency = 0;
  hw->host.copy_overhead = 50000;
  hw->nvme.request_overhead = 20000;
  g_autoptr(RokHw) back = round_trip(hw);
  g_assert_cmpfloat(back->gpu.copy_kernel_wait, ==, 0.5);
  g_assert_cmpint(back->host.copy_overhead, ==, 50000);
  g_assert_cmpint(back->nvme.request_overhead, ==, 0); /* no nvme section: not written */
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_HOST;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  const RokAction *copy = leg(r, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H);
  g_assert_cmpint(copy->start_ns, ==, 1000000);
  /* 25 us of hand-off, then 1 MiB at 1 ns per byte on a processor of its own */
  g_assert_cmpint(copy->end_ns, ==, 1000000 + 25000 + 1048576);
  /* op1 runs at 1/2 while the leg runs (its hand-off is a thread too) */
  gint64 done = (gint64)llround((25000 + 1048576) * 0.5);
  g_assert_cmpint(llabs(fwd_of(r, op1)->end_ns - (copy->end_ns + 10000000 - done)), <=, 1);
  /* one processor: the leg and op1 share it, half each */
  hw->gpu.shared_cpus = 1;
  g_autoptr(RokSimResult) one = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  copy = leg(one, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H);
  g_assert_cmpint(llabs(copy->end_ns - (1000000 + 25000 + 2 * 1048576)), <=, 1);
  done = (gint64)llround((25000 + 2 * 1048576) * 0.5);
  g_assert_cmpint(llabs(fwd_of(one, op1)->end_ns - (copy->end_ns + 10000000 - done)), <=, 1);
  hw->gpu.shared_cpus = 0;
  g_autoptr(RokSimResult) gpu = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  copy = leg(gpu, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H);
  g_assert_cmpint(copy->end_ns, ==, 1000000 + 50000 + 1048576);
}

/* A CPU device's profile for the copy-wait tests: 2 processors shared
 * with copies, a copy waiting half of what is left of the kernel, 50 us of
 * hand-offs per leg, no PCIe latency, copy queues that run in order (so
 * that d2h legs of several commands, or queued behind another, are not
 * primed ahead of the kernels and wait for them: test_d2h_primed). */
static RokHw *copy_wait_hw(void) {
  GError *error = NULL;
  g_autofree char *text =
      g_strdup_printf(PROFILE("%s"), ", \"shared_cpus\": 2, \"copy_kernel_wait\": 0.5, \"copy_queues_in_order\": true");
  RokHw *hw = parse(text, &error);
  g_assert_no_error(error);
  g_assert_true(hw->gpu.copy_queues_in_order);
  g_autoptr(RokHw) back = round_trip(hw);
  g_assert_true(back->gpu.copy_queues_in_order);
  hw->pcie.latency = 0;
  hw->host.copy_overhead = 50000;
  return hw;
}

/* copy_wait_hw with copy queues out of order, as PoCL's are. */
static RokHw *out_of_order_hw(void) {
  RokHw *hw = copy_wait_hw();
  hw->gpu.copy_queues_in_order = FALSE;
  return hw;
}

/* A copy handed over in the middle of a kernel: A2, of two copy commands
 * (so not primed ahead of op1: test_d2h_primed), follows A on the d2h
 * stream, so it starts while op1 runs, and waits gpu.copy_kernel_wait of
 * what is left of op1 (PoCL gives it a processor only when one is done
 * with the kernel) before its hand-off and bytes; op1 runs at full speed
 * meanwhile (the waiting copy takes no processor). */
static void test_copy_kernel_wait(void) {
  GError *error = NULL;
  g_autoptr(RokHw) hw = copy_wait_hw();
  guint a = 0, a2 = 0, op1 = 0;
  g_autoptr(RokTrace) trace = copies_beside_kernel(1048576, 2097152, &a, &a2, &op1);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = plan->decisions[a2] = ROK_DECISION_OFFLOAD_HOST;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  const RokAction *first = NULL, *second = NULL;
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *x = &g_array_index(r->actions, RokAction, i);
    if (x->kind == ROK_ACTION_OFFLOAD && x->stream == ROK_STREAM_D2H)
      *(x->tensor == a ? &first : &second) = x;
  }
  g_assert_nonnull(first);
  g_assert_nonnull(second);
  /* A as in test_copy_costs: no wait, op1 at 1/2 meanwhile */
  gint64 t1 = 1000000 + 25000 + 1048576;
  g_assert_cmpint(first->end_ns, ==, t1);
  g_assert_cmpint(second->start_ns, ==, t1);
  gint64 left = 10000000 - (gint64)llround((25000 + 1048576) * 0.5);
  gint64 wait = (gint64)llround(0.5 * (double)left);
  /* then 50 us of hand-offs and 2 MiB at 1 ns per byte, on a processor
   * taken from op1 (op1 still runs) */
  g_assert_cmpint(llabs(second->end_ns - (t1 + wait + 50000 + 2097152)), <=, 2);
  /* op1: full speed while A2 waits, on one processor of two while A2 runs */
  gint64 slow = 50000 + 2097152;
  gint64 op1_end = second->end_ns + (left - wait) - (gint64)llround(slow * 0.5);
  g_assert_cmpint(llabs(fwd_of(r, op1)->end_ns - op1_end), <=, 2);
}

/* On copy queues that run in order, a leg of several copy commands
 * handed over as op1 (one kernel of 10 ms) is launched is not queued
 * ahead of it: PoCL readies its second command only after the first,
 * behind op1, so it waits copy_kernel_wait of op1 (5 ms) before its
 * hand-offs and bytes; a leg of one command (1 MiB, as test_copy_costs)
 * does not, nor does this one where the queues run out of order (every
 * command ready at once: ahead, half the hand-offs). */
static void test_copy_commands(void) {
  GError *error = NULL;
  g_autoptr(RokHw) hw = copy_wait_hw();
  guint a = 0, op1 = 0;
  g_autoptr(RokTrace) trace = copy_beside_kernel(4 * 1048576, &a, &op1);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_HOST;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  const RokAction *copy = leg(r, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H);
  /* handed over at op1's launch, 1 ms in; then 5 ms of waiting (op1 at
   * full speed), 50 us of hand-offs, 4 MiB at 1 ns per byte on a
   * processor taken from op1 */
  g_assert_cmpint(llabs(copy->end_ns - (1000000 + 5000000 + 50000 + 4194304)), <=, 2);
  g_assert_cmpint(fwd_of(r, op1)->end_ns, >, 11000000); /* slowed once the copy runs */
  hw->gpu.copy_queues_in_order = FALSE;
  g_autoptr(RokSimResult) ooo = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  copy = leg(ooo, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H);
  g_assert_cmpint(llabs(copy->end_ns - (1000000 + 25000 + 4194304)), <=, 2);
}

/* Once a copy's wait for a kernel has ended, the others in that kernel
 * pass (PoCL's worker that ran out of the kernel's chunks takes them):
 * A3 follows A2 on the d2h stream, starts when A2 ends, still in op1,
 * and takes only its hand-offs and bytes (2 MiB at 1 ns per byte beside
 * op1), where A2 waited half of what was left of op1 (both of two copy
 * commands: not primed). */
static void test_copy_kernel_free(void) {
  GError *error = NULL;
  g_autoptr(RokHw) hw = copy_wait_hw();
  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = rok_trace_add_op(trace, "op0", 0, ROK_OP_OTHER, 1, 1, 1, 1);
  guint a = add_tensor(trace, "A", ROK_DTYPE_U8, 1048576, op0);
  guint a2 = add_tensor(trace, "A2", ROK_DTYPE_U8, 2097152, op0);
  guint a3 = add_tensor(trace, "A3", ROK_DTYPE_U8, 2097152, op0);
  guint op1 = rok_trace_add_op(trace, "op1", 0, ROK_OP_OTHER, 1, 1, 1, 1);
  guint b = add_tensor(trace, "B", ROK_DTYPE_U8, 10, op1);
  rok_trace_need(trace, a, op0);
  rok_trace_need(trace, a2, op0);
  rok_trace_need(trace, a3, op0);
  rok_trace_need(trace, b, op1);
  rok_trace_op(trace, op0)->fwd_time_s = rok_trace_op(trace, op0)->bwd_time_s = 1e-3;
  rok_trace_op(trace, op1)->fwd_time_s = rok_trace_op(trace, op1)->bwd_time_s = 10e-3;
  finish(trace);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = plan->decisions[a2] = plan->decisions[a3] = ROK_DECISION_OFFLOAD_HOST;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  const RokAction *out[3] = {NULL, NULL, NULL};
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *x = &g_array_index(r->actions, RokAction, i);
    if (x->kind == ROK_ACTION_OFFLOAD && x->stream == ROK_STREAM_D2H)
      out[x->tensor == a ? 0 : x->tensor == a2 ? 1 : 2] = x;
  }
  g_assert_true(out[0] && out[1] && out[2]);
  g_assert_cmpint(out[1]->end_ns - out[1]->start_ns, >, 4000000); /* waited for op1 */
  g_assert_cmpint(out[2]->start_ns, ==, out[1]->end_ns);
  g_assert_cmpint(out[2]->end_ns, <, fwd_of(r, op1)->end_ns);
  g_assert_cmpint(llabs(out[2]->end_ns - out[2]->start_ns - (50000 + 2097152)), <=, 2);
}

/* gpu.copy_kernel_free_at in copy_kernel_wait's place: A2 (test_copy_kernel_wait)
 * starts in op1 and waits until op1 has run half of its own 10 ms (from
 * its start: A, running beside it, slowed op1 but not the processor that
 * is done first), then its hand-offs and bytes; with op1 free from 5% on,
 * A2 comes after that and does not wait. With op1 of 60 ms, which the
 * executor launches as three of 20 ms (ROK_KERNEL_CHUNK_SECONDS), A2
 * waits for half of the first launch, not of op1. A2 comes 1.07 ms
 * after op1's launch: within a gpu.copy_launch_window of 1.1 ms it goes
 * ahead of op1 in copy_launch_ahead (a quarter) of the cases, and the
 * model waits three quarters of its wait; within one of 1 ms, all of it.
 * Read and written back; beside it copy_kernel_wait is ignored. */
static void test_copy_kernel_free_at(void) {
  GError *error = NULL;
  g_autofree char *text =
      g_strdup_printf(PROFILE("%s"), ", \"shared_cpus\": 2, \"copy_kernel_wait\": 0.9, \"copy_kernel_free_at\": 0.5, "
                                     "\"copy_launch_window\": \"1.1 ms\", \"copy_launch_ahead\": 0.25, "
                                     "\"copy_queues_in_order\": true");
  g_autoptr(RokHw) hw = parse(text, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(hw->gpu.copy_kernel_free_at, ==, 0.5);
  g_autoptr(RokHw) back = round_trip(hw);
  g_assert_cmpfloat(back->gpu.copy_kernel_free_at, ==, 0.5);
  g_assert_cmpint(back->gpu.copy_launch_window, ==, 1100000);
  g_assert_cmpfloat(back->gpu.copy_launch_ahead, ==, 0.25);
  hw->pcie.latency = 0;
  hw->host.copy_overhead = 50000;
  guint a = 0, a2 = 0, op1 = 0;
  g_autoptr(RokTrace) trace = copies_beside_kernel(1048576, 2097152, &a, &a2, &op1);
  g_autoptr(RokStepPlan) plan = both_to_host(trace, a, a2);
  gint64 t1 = 1000000 + 25000 + 1048576; /* A's end, as in test_copy_kernel_wait */
  for (guint k = 0; k < 5; k++) {
    hw->gpu.copy_kernel_free_at = k == 1 ? 0.05 : 0.5;
    hw->gpu.copy_launch_window = k == 3 ? 1100000 : k == 4 ? 1000000 : 0;
    rok_trace_op(trace, op1)->fwd_time_s = k == 2 ? 60e-3 : 10e-3;
    g_autoptr(RokSimResult) r = simulate(trace, hw, plan);
    const RokAction *second = first_action(r, ROK_ACTION_OFFLOAD, ROK_NO_ID, a2);
    g_assert_nonnull(second);
    g_assert_cmpint(second->start_ns, ==, t1);
    gint64 wait = k == 1 ? 0 : 1000000 + (k == 2 ? 10000000 : 5000000) - t1; /* op1 began at 1 ms */
    if (k == 3)
      wait = (gint64)llround(0.75 * (double)wait);
    g_assert_cmpint(llabs(second->end_ns - (t1 + wait + 50000 + 2097152)), <=, 2);
  }
}

/* A d2h leg made as its producer ends is primed (the executor enqueues
 * its copy ahead of the next kernel, the leg before it still running, on
 * copy queues that run out of order): A2 (256 KiB) starts when A ends, in
 * op1, without waiting for op1; the stream's thread goes straight on from
 * A to it (no hand-off) and its copy ran while it waited for A, so only
 * its check is left (256 KiB at 1 GB/s on a processor of its own; nothing
 * without a check). On in-order copy
 * queues A2 is ready only once A has ended, after op1's launch: it waits
 * for op1 (as in test_copy_kernel_wait); on a GPU (no shared_cpus) it pays
 * its whole hand-off and bytes. */
static void test_d2h_primed(void) {
  g_autoptr(RokHw) hw = out_of_order_hw();
  guint a = 0, a2 = 0, op1 = 0;
  g_autoptr(RokTrace) trace = copies_beside_kernel(1048576, 262144, &a, &a2, &op1);
  g_autoptr(RokStepPlan) plan = both_to_host(trace, a, a2);
  for (guint k = 0; k < 2; k++) {
    g_autoptr(RokSimResult) r = simulate_checked(trace, hw, plan, k);
    const RokAction *first = first_action(r, ROK_ACTION_OFFLOAD, ROK_NO_ID, a);
    const RokAction *second = first_action(r, ROK_ACTION_OFFLOAD, ROK_NO_ID, a2);
    g_assert_nonnull(first);
    g_assert_nonnull(second);
    /* A's end, as in test_copy_kernel_wait; checked too, in its flow */
    gint64 t = 1000000 + 25000 + (k == 0 ? 2 : 1) * 1048576;
    g_assert_cmpint(first->end_ns, ==, t);
    g_assert_cmpint(second->start_ns, ==, t);
    g_assert_cmpint(llabs(second->end_ns - (t + (k == 0 ? 262144 : 0))), <=, 2);
  }
  hw->gpu.copy_queues_in_order = TRUE;
  g_autoptr(RokSimResult) in_order = simulate(trace, hw, plan);
  const RokAction *waited = first_action(in_order, ROK_ACTION_OFFLOAD, ROK_NO_ID, a2);
  g_assert_nonnull(waited);
  g_assert_cmpint(waited->end_ns - waited->start_ns, >, 4000000); /* half of what was left of op1 */
  hw->gpu.shared_cpus = 0;
  hw->host.checksum_bandwidth = 0;
  g_autoptr(RokSimResult) gpu = simulate(trace, hw, plan);
  const RokAction *second = first_action(gpu, ROK_ACTION_OFFLOAD, ROK_NO_ID, a2);
  g_assert_nonnull(second);
  g_assert_cmpint(second->end_ns - second->start_ns, ==, 50000 + 262144);
}

/* A leg that follows counts its latency from when its copies were
 * enqueued, not from when it starts: A (1 MiB) leaves as op0 ends and
 * pays 3 ms of PCIe latency; A2, made as op1 ends while A is still in
 * its latency, is primed then, starts as A ends, and waits only what is
 * left of its own 3 ms (no check: its copy ran meanwhile). */
static void test_follow_latency_left(void) {
  g_autoptr(RokHw) hw = out_of_order_hw();
  hw->pcie.latency = 3000000;
  hw->host.checksum_bandwidth = 0;
  guint op[3], t[3];
  g_autoptr(RokTrace) trace = ops_in_a_row(3, (const char *const[]){"A", "A2", "B"}, (const guint64[]){1048576, 262144, 10},
                                           (const double[]){1e-3, 1e-3, 10e-3}, op, t);
  g_autoptr(RokStepPlan) plan = both_to_host(trace, t[0], t[1]);
  g_autoptr(RokSimResult) r = simulate(trace, hw, plan);
  const RokAction *x = first_action(r, ROK_ACTION_OFFLOAD, ROK_NO_ID, t[0]);
  const RokAction *y = first_action(r, ROK_ACTION_OFFLOAD, ROK_NO_ID, t[1]);
  g_assert_true(x != NULL && y != NULL);
  gint64 made = fwd_of(r, op[1])->end_ns;
  g_assert_cmpint(made, <, x->end_ns);
  g_assert_cmpint(made + 3000000, >, x->end_ns); /* A2's latency not over when A ends */
  g_assert_cmpint(y->start_ns, ==, x->end_ns);
  g_assert_cmpint(llabs(y->end_ns - (made + 3000000)), <=, 2);
}

/* An h2d leg's copy is enqueued as it is issued and checked after
 * (runner_h2d_prime), so one that starts as a kernel is launched goes
 * ahead of it and does not wait: A's read back from host memory starts
 * as op1's backward (two kernels of 5 ms) is launched, and pays the
 * whole hand-off (its copy is enqueued first, but it waits for its
 * thread's wake), half a hand-off more (its thread, waiting for the copy,
 * is woken by its end) and its bytes on a processor of its own, with
 * copy_kernel_wait or copy_kernel_free_at. */
static void test_h2d_at_launch(void) {
  GError *error = NULL;
  g_autoptr(RokHw) hw = copy_wait_hw();
  guint a = 0, op1 = 0;
  g_autoptr(RokTrace) trace = copy_beside_kernel(1048576, &a, &op1);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_HOST;
  for (guint k = 0; k < 2; k++) {
    hw->gpu.copy_kernel_free_at = k == 0 ? 0 : 0.5;
    g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, plan, &error);
    g_assert_no_error(error);
    const RokAction *back = first_action(r, ROK_ACTION_BACKWARD, op1, ROK_NO_ID);
    const RokAction *h2d = leg(r, ROK_ACTION_PREFETCH, ROK_STREAM_H2D);
    g_assert_nonnull(back);
    g_assert_cmpint(h2d->start_ns, ==, back->start_ns);
    /* 50 + 25 us of hand-off and wake, 1 MiB at 1 ns per byte on a processor taken from op1 */
    g_assert_cmpint(llabs(h2d->end_ns - (h2d->start_ns + 75000 + 1048576)), <=, 2);
  }
}

/* Every h2d leg a kernel's end made ready is primed (the executor issues
 * them all and enqueues their copies before the next kernel), not only
 * the first: A and A2 are read back as op1's backward is launched; A2's
 * leg starts once A's has ended and the stream's thread goes straight on
 * to it. Its copy runs after A's, at half the rate (QUEUED_COPY_SHARE):
 * with checks (k = 0) it has run 75 us of A's 2.1 ms leg at half the rate
 * by then, and A2's leg runs the rest of its copy (224.6 us) and its
 * check (262 us); without (k = 1) A's leg took 1.12 ms and A2's copy has
 * not begun: its leg copies all of it. Its PCIe latency counts from when
 * its copy was enqueued, with A's: A pays a long one, A2 none of it after
 * A. */
static void test_h2d_primed(void) {
  g_autoptr(RokHw) hw = out_of_order_hw();
  guint a = 0, a2 = 0, op1 = 0;
  g_autoptr(RokTrace) trace = copies_beside_kernel(1048576, 262144, &a, &a2, &op1);
  g_autoptr(RokStepPlan) plan = both_to_host(trace, a, a2);
  hw->gpu.copy_kernel_free_at = 0.5;
  for (guint k = 0; k < 2; k++) {
    g_autoptr(RokSimResult) r = simulate_checked(trace, hw, plan, k);
    const RokAction *back = first_action(r, ROK_ACTION_BACKWARD, op1, ROK_NO_ID);
    const RokAction *x = first_action(r, ROK_ACTION_PREFETCH, ROK_NO_ID, a);
    const RokAction *y = first_action(r, ROK_ACTION_PREFETCH, ROK_NO_ID, a2);
    g_assert_true(back != NULL && x != NULL && y != NULL);
    /* A first (the larger, needed as soon), then A2 */
    g_assert_cmpint(x->start_ns, ==, back->start_ns);
    gint64 t = x->start_ns + 75000 + (k == 0 ? 2 : 1) * 1048576; /* hand-off and wake */
    g_assert_cmpint(llabs(x->end_ns - t), <=, 2);
    g_assert_cmpint(llabs(y->start_ns - x->end_ns), <=, 2);
    /* what its copy has not run by then, and its check */
    g_assert_cmpint(llabs(y->end_ns - (y->start_ns + (k == 0 ? 262144 - 37500 + 262144 : 262144))), <=, 2);
  }
  hw->pcie.latency = 3000000;
  g_autoptr(RokSimResult) r = simulate_checked(trace, hw, plan, 1);
  const RokAction *x = first_action(r, ROK_ACTION_PREFETCH, ROK_NO_ID, a);
  const RokAction *y = first_action(r, ROK_ACTION_PREFETCH, ROK_NO_ID, a2);
  g_assert_cmpint(llabs(x->end_ns - (x->start_ns + 3000000 + 75000 + 1048576)), <=, 2);
  g_assert_cmpint(y->start_ns, ==, x->end_ns);
  g_assert_cmpint(y->end_ns, ==, x->end_ns);
}

/* A kernel launched while an h2d leg runs does not hold it either (its
 * copy is on the device's queue already, its check on the host): A's read
 * back starts as op2's short backward (20 us) is launched, and op1's (two
 * kernels of 5 ms) is launched while A still runs; A takes its hand-off,
 * then its copy and its check in turn (1 MiB at 1 GB/s each), or its copy
 * alone without a host check. */
static void test_h2d_check_then_launch(void) {
  GError *error = NULL;
  g_autoptr(RokHw) hw = copy_wait_hw();
  hw->gpu.copy_kernel_free_at = 0.5;
  hw->gpu.launch_overhead = 0;
  guint op[3], t[3];
  g_autoptr(RokTrace) trace = ops_in_a_row(3, (const char *const[]){"A", "B", "C"}, (const guint64[]){1048576, 10, 10},
                                           (const double[]){1e-3, 10e-3, 20e-6}, op, t);
  guint op1 = op[1], op2 = op[2], a = t[0];
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_HOST;
  for (guint k = 0; k < 2; k++) {
    hw->host.checksum_bandwidth = k == 0 ? 1e9 : 0;
    g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, plan, &error);
    g_assert_no_error(error);
    const RokAction *back2 = first_action(r, ROK_ACTION_BACKWARD, op2, ROK_NO_ID);
    const RokAction *back1 = first_action(r, ROK_ACTION_BACKWARD, op1, ROK_NO_ID);
    const RokAction *h2d = leg(r, ROK_ACTION_PREFETCH, ROK_STREAM_H2D);
    g_assert_true(back2 != NULL && back1 != NULL && h2d != NULL);
    g_assert_cmpint(h2d->start_ns, ==, back2->start_ns);
    g_assert_cmpint(back1->start_ns, <, h2d->start_ns + 1048576);
    /* 50 + 25 us of hand-off and wake (a primed h2d leg's thread waits for its copy) */
    g_assert_cmpint(llabs(h2d->end_ns - (h2d->start_ns + 75000 + (k == 0 ? 2 : 1) * 1048576)), <=, 2);
  }
}

/* A (1 MiB) offloaded by DECISION beside op1 (copy_beside_kernel), the
 * step simulated with HW and with NONE (HW without the figure a test is
 * about). */
typedef struct {
  RokTrace *trace;
  RokStepPlan *plan;
  RokSimResult *with, *without;
  guint a, op1;
} Beside;

static void beside_run(Beside *b, const RokHw *hw, const RokHw *none, RokDecision decision) {
  GError *error = NULL;
  b->trace = copy_beside_kernel(1048576, &b->a, &b->op1);
  b->plan = rok_step_plan_new(b->trace);
  b->plan->decisions[b->a] = decision;
  b->with = rok_simulate_recorded(b->trace, hw, b->plan, &error);
  g_assert_no_error(error);
  b->without = rok_simulate_recorded(b->trace, none, b->plan, &error);
  g_assert_no_error(error);
}

static void beside_clear(Beside *b) {
  rok_sim_result_free(b->with);
  rok_sim_result_free(b->without);
  rok_step_plan_free(b->plan);
  rok_trace_free(b->trace);
}

/* On a GPU (no shared_cpus) that figure changes nothing. */
static void assert_no_change_on_gpu(RokHw *hw, RokHw *none, RokDecision decision) {
  hw->gpu.shared_cpus = none->gpu.shared_cpus = 0;
  Beside b;
  beside_run(&b, hw, none, decision);
  g_assert_cmpfloat(b.with->step_time_s, ==, b.without->step_time_s);
  g_assert_cmpint(fwd_of(b.with, b.op1)->end_ns, ==, fwd_of(b.without, b.op1)->end_ns);
  beside_clear(&b);
}

/* A CPU device's profile (2 shared processors, GPU: more in `gpu`) with
 * an SSD of 1 GB/s each way (more in `nvme`), without PCIe latency. */
static RokHw *ssd_profile(const char *gpu, const char *nvme) {
  GError *error = NULL;
  g_autofree char *extra = g_strdup_printf(", \"shared_cpus\": 2%s", gpu);
  g_autofree char *head = g_strdup_printf(PROFILE("%s"), extra);
  head[strlen(head) - 1] = '\0'; /* the root's closing brace: an nvme section follows */
  g_autofree char *text = g_strdup_printf("%s, \"nvme\": {\"read_bandwidth\": 1e9, \"write_bandwidth\": 1e9, "
                                          "\"capacity\": \"1TB\"%s}}", head, nvme);
  RokHw *hw = parse(text, &error);
  g_assert_no_error(error);
  hw->pcie.latency = 0;
  return hw;
}

/* An SSD leg's processor time (nvme.leg_cpu, request_cpu) with
 * gpu.shared_cpus: A's staged write runs beside op1 (10 ms), its SSD leg
 * of one request taking 100 + 10 us of the two processors, half when it
 * starts and half when it ends: op1 ends (100 + 10) / 2 us later than
 * without the figures (each half costs each processor half its time). On a GPU (no shared_cpus) they change nothing. */
static void test_ssd_cpu(void) {
  g_autoptr(RokHw) hw = ssd_profile("", ", \"leg_cpu\": \"100us\", \"request_cpu\": \"10us\"");
  g_assert_cmpint(hw->nvme.leg_cpu, ==, 100000);
  g_autoptr(RokHw) none = rok_hw_copy(hw);
  none->nvme.leg_cpu = none->nvme.request_cpu = 0;
  Beside b;
  beside_run(&b, hw, none, ROK_DECISION_OFFLOAD_NVME);
  const RokSimResult *with = b.with, *without = b.without;
  guint op1 = b.op1;
  const RokAction *ssd = leg(with, ROK_ACTION_OFFLOAD, ROK_STREAM_NVME_WRITE);
  g_assert_cmpint(ssd->end_ns, <, fwd_of(with, op1)->end_ns); /* both halves while op1 runs */
  g_assert_cmpint(fwd_of(with, op1)->end_ns - fwd_of(without, op1)->end_ns, ==, 55000);
  /* A's read comes back during op1's backward: issued at the moment that
   * backward starts (its submission finds no kernel yet, but the executor
   * launches the backward's kernels first), both halves taken from it. */
  const RokAction *back_with = NULL, *back_without = NULL;
  for (guint i = 0; i < with->actions->len; i++) {
    const RokAction *x = &g_array_index(with->actions, RokAction, i), *y = &g_array_index(without->actions, RokAction, i);
    if (x->kind == ROK_ACTION_BACKWARD && x->op == op1) {
      back_with = x;
      back_without = y;
    }
  }
  g_assert_nonnull(back_with);
  g_assert_cmpint(back_with->end_ns - back_with->start_ns, ==, back_without->end_ns - back_without->start_ns + 55000);
  beside_clear(&b);
  assert_no_change_on_gpu(hw, none, ROK_DECISION_OFFLOAD_NVME);
}

/* A (1 MiB) and A2 (256 KiB) offloaded to the SSDs beside op1 (100 ms
 * each way) on a CPU device whose copies pass at 0.95 of a launch, with
 * one request in the disk's queue (A's read goes before A2's, not beside
 * it: on lanes of their own the smaller would come back first). TRACE
 * (the caller's to free after the result) and OP1 are set; X and Y are
 * the two h2d legs, in order. */
static RokSimResult *reads_in_kernel(const RokHw *hw, RokTrace **trace, guint *op1, const RokAction **x,
                                     const RokAction **y) {
  guint a = 0, a2 = 0;
  *trace = copies_beside_kernel(1048576, 262144, &a, &a2, op1);
  rok_trace_op(*trace, *op1)->fwd_time_s = rok_trace_op(*trace, *op1)->bwd_time_s = 100e-3;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(*trace);
  plan->decisions[a] = plan->decisions[a2] = ROK_DECISION_OFFLOAD_NVME;
  RokSimResult *r = simulate(*trace, hw, plan);
  *x = *y = NULL;
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *h = &g_array_index(r->actions, RokAction, i);
    if (h->kind == ROK_ACTION_PREFETCH && h->stream == ROK_STREAM_H2D)
      *(*x == NULL ? x : y) = h;
  }
  g_assert_true(*x != NULL && *y != NULL);
  return r;
}

/* An h2d leg issued in the middle of a kernel is primed too: its copy
 * goes at the free point of the executor's launch in progress, with every
 * copy queued in that launch, whether or not the leg before it is still
 * checked. A (1 MiB) and A2 (256 KiB) come back from the SSD early in
 * op1's first backward kernel (50 ms, launched as three of 16.7 ms),
 * before the first launch's free point (0.95 of it): both copies go at
 * that point; A2's leg, begun after A's in the second launch, does not
 * wait for that launch's free point (32.5 ms in). */
static void test_h2d_primed_in_kernel(void) {
  g_autoptr(RokHw) hw = ssd_profile(", \"copy_kernel_free_at\": 0.95", ", \"queue_depth\": 1");
  g_autoptr(RokTrace) trace = NULL;
  guint op1 = 0;
  const RokAction *x = NULL, *y = NULL;
  g_autoptr(RokSimResult) r = reads_in_kernel(hw, &trace, &op1, &x, &y);
  const RokAction *back = first_action(r, ROK_ACTION_BACKWARD, op1, ROK_NO_ID);
  g_assert_nonnull(back);
  gint64 free_at = back->start_ns + (gint64)llround(0.95 * 50e6 / 3);
  g_assert_cmpint(x->start_ns, <, free_at); /* A came back before it */
  g_assert_cmpint(x->end_ns, >, free_at);
  g_assert_cmpint(x->end_ns, >, back->start_ns + 50000000 / 3); /* into the second launch */
  g_assert_cmpint(y->start_ns, ==, x->end_ns);
  g_assert_cmpint(y->end_ns, <, back->start_ns + 25000000);
}

/* The copies of h2d legs primed in one launch run one after another, at
 * half the rate (QUEUED_COPY_SHARE: the worker that takes them shares a
 * processor with the h2d thread's checks), from that launch's free point,
 * and a leg whose copy has not run by its turn runs the rest in it. As in
 * test_h2d_primed_in_kernel, A (1 MiB) and A2 (256 KiB) have both copies
 * go at the first launch's free point: A2's begins once A's has run at
 * half the rate (2.1 ms in), after A's leg has ended (A's copy at the
 * full rate, 1.05 ms, with no check in this profile), so A2's leg runs its
 * whole copy (262 us at 1 GB/s), where taking the copies to run side by
 * side at the full rate left it nothing to do. With a check of 1 GB/s
 * (host.checksum_bandwidth) A's leg ends 2.1 ms after the free point and
 * A2's copy has not begun either: its leg copies and checks its 256 KiB.
 * With a check of 0.4 GB/s A's leg takes 1.05 + 2.62 ms and A2's copy,
 * begun 2.1 ms in, is done (1.57 ms at half the rate, over 0.52 ms): its
 * leg only checks (655 us). With no check and a PCIe latency of 1.5 ms,
 * A's leg ends about 2.55 ms after the free point, and A2's copy has run
 * half of what passed since 2.1 ms in: its leg copies the rest at the
 * full rate. */
static void test_h2d_copies_in_turn(void) {
  const double check[] = {0, 1e9, 0.4e9, 0};
  const gint64 took[] = {262144, 2 * 262144, 655360, -1}, latency[] = {0, 0, 0, 1500000};
  for (guint k = 0; k < G_N_ELEMENTS(check); k++) {
    g_autoptr(RokHw) hw = ssd_profile(", \"copy_kernel_free_at\": 0.95", ", \"queue_depth\": 1");
    hw->host.checksum_bandwidth = check[k];
    hw->pcie.latency = latency[k];
    g_autoptr(RokTrace) trace = NULL;
    guint op1 = 0;
    const RokAction *x = NULL, *y = NULL;
    g_autoptr(RokSimResult) r = reads_in_kernel(hw, &trace, &op1, &x, &y);
    g_test_message("check %g: A %" G_GINT64_FORMAT " ns, A2 %" G_GINT64_FORMAT " ns", check[k],
                   x->end_ns - x->start_ns, y->end_ns - y->start_ns);
    g_assert_cmpint(y->start_ns, ==, x->end_ns);
    gint64 expect = took[k];
    if (expect < 0) { /* A2's copy began 2 x 1.05 ms after the free point, at half the rate */
      const RokAction *back = first_action(r, ROK_ACTION_BACKWARD, op1, ROK_NO_ID);
      gint64 ran = (x->end_ns - (back->start_ns + (gint64)llround(0.95 * 50e6 / 3) + 2 * 1048576)) / 2;
      g_assert_cmpint(ran, >, 0);
      g_assert_cmpint(ran, <, 262144);
      expect = 262144 - ran;
    }
    g_assert_cmpint(llabs(y->end_ns - y->start_ns - expect), <=, 2);
  }
}

/* A backward's first kernel where the profile measured it
 * (calibrated_shapes.gemm_ops backward_first): op1, a linear op of 30 ms
 * backward, as test_h2d_primed_in_kernel, has A come back early in it;
 * A's h2d leg waits for 0.95 of the first kernel, 0.3 of the backward
 * (9 ms), where without the figure it waits for 0.95 of half (15 ms):
 * 5.7 ms sooner. Another shape is not split by it. Where the first
 * kernel, op1's dW, has fewer output tiles (gpu.gemm_tile) than the
 * device has processors, one is idle and the leg does not wait at all. */
static void test_backward_first(void) {
  g_autoptr(RokHw) hw = ssd_profile(", \"copy_kernel_free_at\": 0.95", ", \"queue_depth\": 1");
  guint a = 0, a2 = 0, op1 = 0;
  g_autoptr(RokTrace) trace = copies_beside_kernel(1048576, 262144, &a, &a2, &op1);
  RokOp *linear = rok_trace_op(trace, op1);
  linear->kind = ROK_OP_LINEAR;
  linear->bwd_time_s = 30e-3;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = plan->decisions[a2] = ROK_DECISION_OFFLOAD_NVME;
  gint64 end[4] = {0}, took = 0;
  for (guint k = 0; k < 4; k++) {
    g_autoptr(RokHw) with = rok_hw_copy(hw);
    if (k == 3) /* op1's dW, [1 x 1], is one 128x128 tile on two processors */
      with->gpu.gemm_tile[0] = with->gpu.gemm_tile[1] = 128;
    with->calibrated.gemm_ops = g_new0(RokHwGemmOp, 1);
    with->calibrated.gemm_ops_len = 1;
    RokHwGemmOp *timed = &with->calibrated.gemm_ops[0];
    timed->kind = g_strdup("linear");
    memcpy(timed->dims, linear->dims, sizeof timed->dims);
    timed->dims[3] += k == 2; /* another shape */
    timed->ns[0] = -1;
    timed->ns[1] = 30000000;
    timed->backward_first = k == 0 ? 0 : 0.3;
    g_autoptr(RokHw) back = round_trip(with);
    g_assert_cmpfloat(back->calibrated.gemm_ops[0].backward_first, ==, timed->backward_first);
    g_autoptr(RokSimResult) r = simulate(trace, with, plan);
    const RokAction *x = NULL;
    for (guint i = 0; i < r->actions->len && x == NULL; i++) {
      const RokAction *h = &g_array_index(r->actions, RokAction, i);
      if (h->kind == ROK_ACTION_PREFETCH && h->stream == ROK_STREAM_H2D && h->tensor == a)
        x = h;
    }
    const RokAction *bwd = first_action(r, ROK_ACTION_BACKWARD, op1, ROK_NO_ID);
    g_assert_true(x != NULL && bwd != NULL);
    g_assert_cmpint(x->start_ns, <, bwd->start_ns + 8000000); /* came back before the first kernel's free point */
    end[k] = x->end_ns - bwd->start_ns;
    took = x->end_ns - x->start_ns;
  }
  g_assert_cmpint(llabs(end[1] - end[0] + 5700000), <=, 2);
  g_assert_cmpint(end[2], ==, end[0]);
  g_assert_cmpint(took, ==, 1048576); /* its copy alone: no wait */
}

/* A copy leg's own processor time (gpu.copy_leg_cpu) with shared_cpus:
 * A's copy to host memory takes 100 us of the two processors, half when
 * it starts and half when it ends. It starts at the moment op1 is
 * launched (its first half taken from op1, which starts then, as for an
 * SSD leg), and ends during op1 (10 ms): op1 ends 2 x 50 / 2 us later
 * than without it. On a GPU it changes nothing. */
static void test_copy_leg_cpu(void) {
  GError *error = NULL;
  g_autofree char *text = g_strdup_printf(PROFILE("%s"), ", \"shared_cpus\": 2, \"copy_leg_cpu\": \"100us\"");
  g_autoptr(RokHw) hw = parse(text, &error);
  g_assert_no_error(error);
  g_assert_cmpint(hw->gpu.copy_leg_cpu, ==, 100000);
  hw->pcie.latency = 0;
  g_autoptr(RokHw) none = rok_hw_copy(hw);
  none->gpu.copy_leg_cpu = 0;
  Beside b;
  beside_run(&b, hw, none, ROK_DECISION_OFFLOAD_HOST);
  const RokAction *out = leg(b.with, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H);
  g_assert_cmpint(out->start_ns, ==, fwd_of(b.with, b.op1)->start_ns);
  g_assert_cmpint(out->end_ns, <, fwd_of(b.with, b.op1)->end_ns);
  g_assert_cmpint(fwd_of(b.with, b.op1)->end_ns - fwd_of(b.without, b.op1)->end_ns, ==, 50000);
  beside_clear(&b);
  assert_no_change_on_gpu(hw, none, ROK_DECISION_OFFLOAD_HOST);
}

/* The device's checksum of a tensor bound for host memory or the SSDs
 * (gpu.checksum_bandwidth, checksum_overhead): rok's executor takes it in
 * the producer's forward after the op's kernels, so op0's forward lasts
 * 20 us + 1 MiB at 1 GB/s longer and A's copy out starts after it; a
 * tensor kept pays nothing; the same on a GPU, whose executor takes it
 * too. Read and written back. */
static void test_device_checksum(void) {
  GError *error = NULL;
  g_autofree char *text =
      g_strdup_printf(PROFILE("%s"), ", \"checksum_bandwidth\": \"1GB/s\", \"checksum_overhead\": \"20us\"");
  g_autoptr(RokHw) hw = parse(text, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(hw->gpu.checksum_bandwidth, ==, 1e9);
  g_assert_cmpint(hw->gpu.checksum_overhead, ==, 20000);
  g_autoptr(RokHw) back = round_trip(hw);
  g_assert_cmpfloat(back->gpu.checksum_bandwidth, ==, 1e9);
  g_assert_cmpint(back->gpu.checksum_overhead, ==, 20000);
  g_autoptr(RokHw) none = rok_hw_copy(hw);
  none->gpu.checksum_bandwidth = 0;
  none->gpu.checksum_overhead = 0;
  g_autofree char *none_text = hw_text(none);
  g_assert_null(strstr(none_text, "checksum_overhead"));
  static const RokDecision decisions[] = {ROK_DECISION_OFFLOAD_HOST, ROK_DECISION_OFFLOAD_NVME, ROK_DECISION_KEEP};
  hw->nvme.devices = none->nvme.devices = 1;
  hw->nvme.read_bandwidth = hw->nvme.write_bandwidth = none->nvme.read_bandwidth = none->nvme.write_bandwidth = 1e9;
  hw->nvme.queue_depth = none->nvme.queue_depth = 32;
  hw->nvme.capacity = none->nvme.capacity = (guint64)1 << 40;
  for (guint i = 0; i < G_N_ELEMENTS(decisions); i++) {
    Beside b;
    beside_run(&b, hw, none, decisions[i]);
    const RokAction *with = fwd_of(b.with, 0), *without = fwd_of(b.without, 0);
    gint64 extra = decisions[i] == ROK_DECISION_KEEP ? 0 : 20000 + 1048576;
    g_assert_cmpint(with->end_ns - with->start_ns, ==, without->end_ns - without->start_ns + extra);
    if (decisions[i] != ROK_DECISION_KEEP)
      g_assert_cmpint(leg(b.with, ROK_ACTION_OFFLOAD, ROK_STREAM_D2H)->start_ns, >=, with->end_ns);
    beside_clear(&b);
  }
}

/* ---- the calibration's curves ---- */

static void add_op(RokCalibration *c, RokOpKind kind, RokHwDirection direction, double work, double rate) {
  RokCalibOp op = {.label = g_strdup("calibrate-gpt-128"), .kind = kind, .direction = direction, .work = work};
  op.rate = (RokCalibStat){.median = rate, .min = rate, .max = rate, .n = 1};
  g_array_append_val(c->device.ops, op);
}

/* Knots sorted by work, ops of equal work merged at their mean rate, one
 * entry per kind measured but those the GEMM model times, named as the
 * trace names kinds; the profile reads back and the simulator takes it. */
static void test_calibrated_curves(void) {
  g_autoptr(RokCalibration) c = rok_calibration_new();
  c->trials = 1;
  c->host = (RokCalibHost){.memory = (guint64)1 << 34, .memcpy = {.median = 1e10}};
  RokCalibDevice *d = &c->device;
  d->name = g_strdup("Test");
  d->type = g_strdup("cpu");
  d->memory = (guint64)1 << 33;
  RokCalibGemm g = {.label = "square", .batch = 1, .m = 128, .n = 128, .k = 128, .flops = 2.0 * 128 * 128 * 128};
  g.rate.median = 1e10;
  g_array_append_val(d->gemms, g);
  d->elementwise.median = 1e10;
  d->launch.median = 5e-6;
  d->h2d.median = d->d2h.median = 1e10;
  add_op(c, ROK_OP_FLASH_ATTENTION, ROK_HW_FORWARD, 4e8, 9e9);
  add_op(c, ROK_OP_FLASH_ATTENTION, ROK_HW_FORWARD, 1e8, 6e9);
  add_op(c, ROK_OP_FLASH_ATTENTION, ROK_HW_FORWARD, 4e8, 7e9);
  add_op(c, ROK_OP_SOFTMAX, ROK_HW_BACKWARD, 2e5, 3e8);
  add_op(c, ROK_OP_DROPOUT, ROK_HW_REBUILD, 1e5, 2e8);
  add_op(c, ROK_OP_LINEAR, ROK_HW_FORWARD, 4e8, 9e9); /* the GEMM model's kind, without a shape: left out */
  GError *error = NULL;
  g_autoptr(RokHw) hw = rok_calib_profile(c, "cal", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(hw->gpu.op_rates_len, ==, 3);
  g_assert_null(rok_hw_op_rates(hw, "linear"));
  g_assert_cmpuint(hw->calibrated.gemms_len, ==, 1);
  const RokHwOpRates *dropout = rok_hw_op_rates(hw, "dropout");
  g_assert_cmpuint(dropout->len[ROK_HW_FORWARD] + dropout->len[ROK_HW_BACKWARD], ==, 0);
  g_assert_cmpuint(dropout->len[ROK_HW_REBUILD], ==, 1);
  g_assert_cmpfloat(rok_hw_op_rate(dropout, ROK_HW_REBUILD, 1e7), ==, 2e8);
  const RokHwOpRates *linear = rok_hw_op_rates(hw, "flash_attention");
  g_assert_cmpuint(linear->len[0], ==, 2);
  g_assert_cmpuint(linear->len[1], ==, 0);
  g_assert_cmpfloat(linear->curve[0][0].work, ==, 1e8);
  g_assert_cmpfloat(linear->curve[0][1].work, ==, 4e8);
  g_assert_cmpfloat(linear->curve[0][1].rate, ==, 8e9);
  const RokHwOpRates *softmax = rok_hw_op_rates(hw, "softmax");
  g_assert_cmpuint(softmax->len[0], ==, 0);
  g_assert_cmpuint(softmax->len[1], ==, 1);

  g_autoptr(RokTrace) trace = new_trace();
  guint op = rok_trace_add_op(trace, "attn", 0, ROK_OP_FLASH_ATTENTION, 1, 1, 1, 1);
  rok_trace_op(trace, op)->fwd_flops = 400000000;
  add_tensor(trace, "y", ROK_DTYPE_U8, 1, op);
  finish(trace);
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, &error);
  g_assert_no_error(error);
  g_assert_cmpint(rok_sim_op_ns(sim, op, FALSE), ==, 50000000 + 5000);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate-model/rates/read", test_rates_read);
  g_test_add_func("/validate-model/rates/bad", test_rates_bad);
  g_test_add_func("/validate-model/rates/sim", test_rates_sim);
  g_test_add_func("/validate-model/gradients", test_gradients);
  g_test_add_func("/validate-model/seed-rebuild", test_seed_rebuild);
  g_test_add_func("/validate-model/checksum", test_checksum);
  g_test_add_func("/validate-model/shared-cpus", test_shared_cpus);
  g_test_add_func("/validate-model/copy-costs", test_copy_costs);
  g_test_add_func("/validate-model/copy-kernel-wait", test_copy_kernel_wait);
  g_test_add_func("/validate-model/copy-kernel-free-at", test_copy_kernel_free_at);
  g_test_add_func("/validate-model/d2h-primed", test_d2h_primed);
  g_test_add_func("/validate-model/copy-commands", test_copy_commands);
  g_test_add_func("/validate-model/copy-kernel-free", test_copy_kernel_free);
  g_test_add_func("/validate-model/h2d-at-launch", test_h2d_at_launch);
  g_test_add_func("/validate-model/h2d-check-then-launch", test_h2d_check_then_launch);
  g_test_add_func("/validate-model/h2d-primed", test_h2d_primed);
  g_test_add_func("/validate-model/follow-latency-left", test_follow_latency_left);
  g_test_add_func("/validate-model/h2d-primed-in-kernel", test_h2d_primed_in_kernel);
  g_test_add_func("/validate-model/h2d-copies-in-turn", test_h2d_copies_in_turn);
  g_test_add_func("/validate-model/backward-first", test_backward_first);
  g_test_add_func("/validate-model/ssd-cpu", test_ssd_cpu);
  g_test_add_func("/validate-model/copy-leg-cpu", test_copy_leg_cpu);
  g_test_add_func("/validate-model/device-checksum", test_device_checksum);
  g_test_add_func("/validate-model/calibrated-curves", test_calibrated_curves);
  return g_test_run();
}
