/* The simulator on hand-built traces whose outcome a pencil gives.
 *
 * Tensors are u8 (no backward working memory) and ops carry measured
 * times, so every figure below is exact to the nanosecond and the byte. */
#include <glib.h>
#include <math.h>

#include "rok/core.h"
#include "rok/sim.h"
#include "sim/fluid.h"
#include "test-sim-log.h"

#define MS 1000000
#define US 1000
#define FIXED 1000 /* bytes of weights + gradients + optimizer states */

static RokHw test_hw(void) {
  RokHw hw = {0};
  hw.name = (char *)"test";
  hw.gpu.memory = (guint64)1 << 30;
  hw.gpu.peak_flops = 1e12;
  hw.gpu.matmul_efficiency = 1;
  hw.gpu.hbm_bandwidth = 1e12;
  hw.pcie.h2d_bandwidth = hw.pcie.d2h_bandwidth = 1e9;
  hw.host.memory = (guint64)1 << 34;
  hw.host.pinned_buffer = (guint64)1 << 30;
  hw.host.memcpy_bandwidth = 1e10;
  hw.nvme.devices = 1;
  hw.nvme.read_bandwidth = hw.nvme.write_bandwidth = 1e9;
  hw.nvme.queue_depth = 32;
  hw.nvme.capacity = (guint64)1 << 40;
  hw.nvme.gpudirect = TRUE;
  return hw;
}

static RokTrace *new_trace(void) {
  RokTrace *trace = rok_trace_new("hand");
  trace->tokens_per_micro_batch = 1000;
  trace->micro_batches_per_step = 1;
  trace->fixed.weight_bytes = FIXED;
  return trace;
}

static guint add_op(RokTrace *trace, const char *name, gint layer, RokOpKind kind, double fwd_ms, double bwd_ms) {
  guint id = rok_trace_add_op(trace, name, layer, kind, 1, 1, 1, 1);
  rok_trace_op(trace, id)->fwd_time_s = fwd_ms / 1e3;
  rok_trace_op(trace, id)->bwd_time_s = bwd_ms / 1e3;
  return id;
}

static guint add_tensor(RokTrace *trace, const char *name, gint layer, guint64 bytes, guint producer) {
  return rok_trace_add_tensor(trace, name, layer, ROK_DTYPE_U8, 1, (const guint64[]){bytes}, producer);
}

static void finish(RokTrace *trace) {
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_trace_finish(trace, &error));
  g_assert_no_error(error);
}

static RokSimResult *run(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan) {
  g_autoptr(GError) error = NULL;
  RokSimResult *result = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_no_error(error);
  g_assert_nonnull(result);
  return result;
}


static const RokAction *find_action(const RokSimResult *r, RokActionKind kind, guint id, RokStream stream) {
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *a = &g_array_index(r->actions, RokAction, i);
    guint key = kind == ROK_ACTION_FORWARD || kind == ROK_ACTION_BACKWARD || kind == ROK_ACTION_RECOMPUTE ? a->op
                                                                                                          : a->tensor;
    if (a->kind == kind && key == id && a->stream == stream)
      return a;
  }
  g_assert_not_reached();
}

static gboolean depends_on(const RokSimResult *r, const RokAction *a, const RokAction *on) {
  guint index = (guint)(on - (const RokAction *)r->actions->data);
  for (guint i = 0; i < a->deps_count; i++)
    if (g_array_index(r->deps, guint, a->deps_first + i) == index)
      return TRUE;
  return FALSE;
}

/* op0 makes A (offloaded to host), op1 makes B (kept). The copy out takes
 * latency + bytes / bandwidth on d2h, the read back the same on h2d. */
static void test_offload_pencil(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = add_op(trace, "op0", -1, ROK_OP_OTHER, 1, 1);
  guint a = add_tensor(trace, "A", -1, 1000000, op0);
  guint op1 = add_op(trace, "op1", -1, ROK_OP_OTHER, 2, 2);
  guint b = add_tensor(trace, "B", -1, 2000000, op1);
  rok_trace_need(trace, a, op0);
  rok_trace_need(trace, b, op1);
  finish(trace);
  RokHw hw = test_hw();
  hw.pcie.latency = 10 * US;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_HOST;
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  /* forward 0-1-3 ms; A out 1 -> 2.01 ms; backward 3-5-6 ms; A back 3 -> 4.01 ms. */
  g_assert_cmpint(r->step_ns, ==, 6 * MS);
  g_assert_cmpfloat_with_epsilon(r->tokens_per_s, 1000 / 0.006, 1e-6);
  g_assert_cmpuint(r->peak_bytes, ==, FIXED + 3000000);
  g_assert_cmpuint(r->activation_peak_bytes, ==, 3000000);
  g_assert_cmpint(r->peak_kind, ==, ROK_ACTION_FORWARD);
  g_assert_cmpuint(r->peak_op, ==, op1);
  g_assert_cmpint(r->peak_time_ns, ==, 1 * MS);
  g_assert_true(r->fits);
  g_assert_cmpint(r->compute_ns, ==, 6 * MS);
  g_assert_cmpint(r->stall_total_ns, ==, 0);
  g_assert_cmpuint(r->pcie_d2h_bytes, ==, 1000000);
  g_assert_cmpuint(r->pcie_h2d_bytes, ==, 1000000);
  g_assert_cmpuint(r->nvme_write_bytes + r->nvme_read_bytes, ==, 0);
  g_assert_cmpint(r->busy_ns[ROK_STREAM_D2H], ==, 1010 * US);
  g_assert_cmpint(r->busy_ns[ROK_STREAM_H2D], ==, 1010 * US);
  g_assert_cmpuint(r->host_peak_bytes, ==, 1000000);
  const RokAction *out = find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_D2H);
  g_assert_cmpint(out->start_ns, ==, 1 * MS);
  g_assert_cmpint(out->end_ns, ==, 2010 * US);
  g_assert_true(depends_on(r, out, find_action(r, ROK_ACTION_FORWARD, op0, ROK_STREAM_COMPUTE)));
  const RokAction *freed = find_action(r, ROK_ACTION_FREE, a, ROK_STREAM_D2H);
  g_assert_cmpint(freed->start_ns, ==, 2010 * US);
  g_assert_true(depends_on(r, freed, out));
  const RokAction *back = find_action(r, ROK_ACTION_PREFETCH, a, ROK_STREAM_H2D);
  g_assert_cmpint(back->start_ns, ==, 3 * MS);
  g_assert_cmpint(back->end_ns, ==, 4010 * US);
  g_assert_true(depends_on(r, back, out));
  const RokAction *bwd0 = find_action(r, ROK_ACTION_BACKWARD, op0, ROK_STREAM_COMPUTE);
  g_assert_cmpint(bwd0->start_ns, ==, 5 * MS);
  g_assert_true(depends_on(r, bwd0, back));
  test_sim_check_log(r);
}

/* op0 (1 ms each way) makes A (1 MB), op1 (2 ms forward, 0.5 ms
 * backward) makes B (1 KB): the trace of the SSD tests below; returns A
 * (op0 is op 0). */
static guint ssd_trace(RokTrace *trace) {
  guint op0 = add_op(trace, "op0", -1, ROK_OP_OTHER, 1, 1);
  guint a = add_tensor(trace, "A", -1, 1000000, op0);
  guint op1 = add_op(trace, "op1", -1, ROK_OP_OTHER, 2, 0.5);
  guint b = add_tensor(trace, "B", -1, 1000, op1);
  rok_trace_need(trace, a, op0);
  rok_trace_need(trace, b, op1);
  finish(trace);
  return a;
}

/* A is written by 2.03 ms; the read is issued when backward starts (3 ms,
 * window) or when op0's backward is next (3.5 ms, no look-ahead); it takes
 * 30 us of latency + 1 MB at the SSD's 0.5 GB/s. The backward of op0
 * waits for exactly what is missing. */
static void test_late_prefetch_stalls_exactly(gconstpointer data) {
  guint window = GPOINTER_TO_UINT(data);
  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = 0, a = ssd_trace(trace);
  RokHw hw = test_hw();
  hw.pcie.latency = 10 * US;
  hw.nvme.latency = 20 * US;
  hw.nvme.read_bandwidth = 0.5e9;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_NVME;
  plan->options.prefetch_window = window;
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  gint64 issue = window ? 3 * MS : 3500 * US, arrival = issue + 30 * US + 2 * MS;
  const RokAction *read = find_action(r, ROK_ACTION_PREFETCH, a, ROK_STREAM_NVME_READ);
  g_assert_true(read->gpudirect);
  g_assert_cmpint(read->start_ns, ==, issue);
  g_assert_cmpint(read->end_ns, ==, arrival);
  g_assert_cmpint(r->stall_total_ns, ==, arrival - 3500 * US);
  g_assert_cmpint(r->stall_ns[ROK_STALL_READ], ==, arrival - 3500 * US);
  const RokAction *bwd0 = find_action(r, ROK_ACTION_BACKWARD, op0, ROK_STREAM_COMPUTE);
  g_assert_cmpint(bwd0->start_ns, ==, arrival);
  g_assert_true(depends_on(r, bwd0, read));
  g_assert_cmpint(r->step_ns, ==, arrival + 1 * MS);
  g_assert_cmpint(r->step_ns, ==, r->compute_ns + r->stall_total_ns);
  const RokAction *write = find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_NVME_WRITE);
  g_assert_cmpint(write->end_ns, ==, 1 * MS + 30 * US + 1 * MS);
  g_assert_cmpuint(r->nvme_write_bytes, ==, 1000000);
  g_assert_cmpuint(r->pcie_d2h_bytes, ==, 1000000); /* gpudirect crosses PCIe too */
  g_assert_cmpuint(r->nvme_read_bytes, ==, 1000000);
  test_sim_check_log(r);
}

/* The profile of the SSD tests below: 10 us over PCIe, 20 us to the SSD
 * (30 us of latency per gpudirect leg). */
static RokHw ssd_hw(void) {
  RokHw hw = test_hw();
  hw.pcie.latency = 10 * US;
  hw.nvme.latency = 20 * US;
  return hw;
}

/* The step with tensor A offloaded to the SSDs. */
static RokSimResult *run_to_ssd(RokTrace *trace, const RokHw *hw, guint a) {
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_NVME;
  return run(trace, hw, plan);
}

/* nvme.leg_overhead: every SSD leg pays it once before its bytes move;
 * nvme.request_overhead_per_mib: each request of a leg (1 MiB, or the
 * tensor when smaller) pays that much per MiB of it besides its bytes.
 * The 1 MB write of the test above and its read, 100 us later with the
 * first, 1 MB / MiB * 200 us with the second. */
static void test_leg_overhead(void) {
  const gint64 per_mib_more = (gint64)llround(200e3 * 1e6 / (1 << 20));
  const struct {
    gint64 leg, per_mib, more;
  } cases[] = {{100 * US, 0, 100 * US}, {0, 200 * US, per_mib_more}};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autoptr(RokTrace) trace = new_trace();
    guint a = ssd_trace(trace);
    RokHw hw = ssd_hw();
    hw.nvme.leg_overhead = cases[c].leg;
    hw.nvme.request_overhead_per_mib = cases[c].per_mib;
    g_autoptr(RokSimResult) r = run_to_ssd(trace, &hw, a);
    const RokAction *legs[] = {find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_NVME_WRITE),
                               find_action(r, ROK_ACTION_PREFETCH, a, ROK_STREAM_NVME_READ)};
    for (guint i = 0; i < G_N_ELEMENTS(legs); i++) {
      gint64 took = legs[i]->end_ns - legs[i]->start_ns;
      g_assert_cmpint(took, >=, 30 * US + 1 * MS + cases[c].more - 1);
      g_assert_cmpint(took, <=, 30 * US + 1 * MS + cases[c].more + 1);
    }
    test_sim_check_log(r);
  }
}

/* nvme.write_latency and write_leg_overhead (write_fixed): the write pays
 * them instead of the read's latency and leg_overhead; the read still
 * pays those. The 1 MB write and read of the test above: the write 5 +
 * 10 us (PCIe, gpudirect) + 10 us before its bytes, the read 20 + 10 +
 * 100 us. */
static void test_write_fixed(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint a = ssd_trace(trace);
  RokHw hw = ssd_hw();
  hw.nvme.leg_overhead = 100 * US;
  hw.nvme.write_fixed = TRUE;
  hw.nvme.write_latency = 5 * US;
  hw.nvme.write_leg_overhead = 10 * US;
  g_autoptr(RokSimResult) r = run_to_ssd(trace, &hw, a);
  const RokAction *write = find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_NVME_WRITE);
  const RokAction *read = find_action(r, ROK_ACTION_PREFETCH, a, ROK_STREAM_NVME_READ);
  g_assert_cmpint(write->end_ns - write->start_ns, ==, 25 * US + 1 * MS);
  g_assert_cmpint(read->end_ns - read->start_ns, ==, 130 * US + 1 * MS);
  test_sim_check_log(r);
}

/* nvme.wake_write and wake_read: a leg that finds the disk idle for
 * wake_after or longer pays them; deep_wake_write and deep_wake_read in
 * their place after deep_wake_after or longer. The write comes first in
 * the step (the disk idle since long before): it pays the deepest wake the
 * profile has; the read comes 0.67-0.97 ms after the write ended: with
 * wake_after 5 ms it pays none, with 0.5 ms the wake, and with a deep
 * wake after 0.6 ms that one (after 2 ms, the wake). */
static void test_wake(void) {
  const struct {
    gint64 wake_after, deep_write, deep_read, deep_after, write_pays, read_pays;
  } cases[] = {
      {5 * MS, 0, 0, 0, 100 * US, 0},
      {500 * US, 0, 0, 0, 100 * US, 40 * US},
      {500 * US, 300 * US, 200 * US, 600 * US, 300 * US, 200 * US},
      {500 * US, 300 * US, 200 * US, 2 * MS, 300 * US, 40 * US},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autoptr(RokTrace) trace = new_trace();
    guint a = ssd_trace(trace);
    RokHw hw = ssd_hw();
    hw.nvme.wake_write = 100 * US;
    hw.nvme.wake_read = 40 * US;
    hw.nvme.wake_after = cases[c].wake_after;
    hw.nvme.deep_wake_write = cases[c].deep_write;
    hw.nvme.deep_wake_read = cases[c].deep_read;
    hw.nvme.deep_wake_after = cases[c].deep_after;
    g_autoptr(RokSimResult) r = run_to_ssd(trace, &hw, a);
    const RokAction *write = find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_NVME_WRITE);
    g_assert_cmpint(write->end_ns - write->start_ns, ==, 30 * US + cases[c].write_pays + 1 * MS);
    const RokAction *read = find_action(r, ROK_ACTION_PREFETCH, a, ROK_STREAM_NVME_READ);
    g_assert_cmpint(read->start_ns - write->end_ns, >, 600 * US);
    g_assert_cmpint(read->start_ns - write->end_ns, <, 1 * MS);
    g_assert_cmpint(read->end_ns - read->start_ns, ==, 30 * US + cases[c].read_pays + 1 * MS);
    test_sim_check_log(r);
  }
}

/* Op0 (1 ms) makes four 100 KB tensors T (T0-T3) that op1 reads, all
 * offloaded to the SSDs, run on HW. */
static RokSimResult *run_four_to_ssd(RokTrace *trace, const RokHw *hw, guint t[4]) {
  guint op0 = add_op(trace, "op0", -1, ROK_OP_OTHER, 1, 1);
  for (guint i = 0; i < 4; i++) {
    g_autofree char *name = g_strdup_printf("T%u", i);
    t[i] = add_tensor(trace, name, -1, 100000, op0);
  }
  guint op1 = add_op(trace, "op1", -1, ROK_OP_OTHER, 2, 0.5);
  for (guint i = 0; i < 4; i++)
    rok_trace_need(trace, t[i], op1);
  finish(trace);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  for (guint i = 0; i < 4; i++)
    plan->decisions[t[i]] = ROK_DECISION_OFFLOAD_NVME;
  return run(trace, hw, plan);
}

/* ssd_hw with REQUEST of nvme.request_overhead and a queue of DEPTH. */
static RokHw lanes_hw(gint64 request, guint64 depth) {
  RokHw hw = ssd_hw();
  hw.nvme.request_overhead = request;
  hw.nvme.queue_depth = depth;
  return hw;
}

/* Tensor T's SSD write began START after op0's end (1 ms) and took TOOK. */
static void assert_write(const RokSimResult *r, guint t, gint64 start, gint64 took) {
  const RokAction *w = find_action(r, ROK_ACTION_OFFLOAD, t, ROK_STREAM_NVME_WRITE);
  g_assert_cmpint(llabs(w->start_ns - (1 * MS + start)), <=, 1);
  g_assert_cmpint(llabs(w->end_ns - w->start_ns - took), <=, 2);
}

/* An SSD stream's lanes (ROK_SSD_LANES): op0 (1 ms) makes four 100 KB
 * tensors that op1 reads, all written gpudirect as op0 ends, at 1 ms.
 * With 400 us of nvme.request_overhead per request a leg moves 0.2 GB/s
 * and, over its 30 us of latency too, asks 0.19 of the array's 1 GB/s:
 * the four go together, each done 530 us after it began, the stream busy
 * that long (each moment counted once). With a queue depth of one request
 * they go in turn; with a wake of 100 us the first pays it and the others,
 * begun beside it, wait it out. With 100 us per request a leg moves 0.5
 * GB/s and asks 0.43 of the array: two go together, then the other two. */
static void test_ssd_lanes(void) {
  const struct {
    gint64 request, wake;
    guint64 depth;
    gint64 start[4], took, busy;
  } cases[] = {
      {400 * US, 0, 32, {0, 0, 0, 0}, 530 * US, 530 * US},
      {400 * US, 0, 1, {0, 530 * US, 1060 * US, 1590 * US}, 530 * US, 2120 * US},
      {400 * US, 100 * US, 32, {0, 0, 0, 0}, 630 * US, 630 * US},
      {100 * US, 0, 32, {0, 0, 230 * US, 230 * US}, 230 * US, 460 * US},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autoptr(RokTrace) trace = new_trace();
    guint t[4];
    RokHw hw = lanes_hw(cases[c].request, cases[c].depth);
    hw.nvme.wake_write = cases[c].wake;
    hw.nvme.wake_after = 5 * MS;
    g_autoptr(RokSimResult) r = run_four_to_ssd(trace, &hw, t);
    for (guint i = 0; i < G_N_ELEMENTS(t); i++)
      assert_write(r, t[i], cases[c].start[i], cases[c].took);
    g_assert_cmpint(llabs(r->busy_ns[ROK_STREAM_NVME_WRITE] - cases[c].busy), <=, 2);
    test_sim_check_log(r);
  }
}

/* A leg begun the moment another SSD leg ended (the executor issues it
 * from that leg's completion, on the I/O thread) pays no hand-off and
 * nvme.warm_write less, and so does each leg begun beside it: the four
 * writes of test_ssd_lanes (400 us per request: 530 us each), in turn
 * with a queue of one request, the first 530 us, the others 15 us less;
 * with 50 us of host.copy_overhead the first pays it, the others not.
 * With 100 us per request two go together, then, as they end, the other
 * two, each 15 us less than the first two. */
static void test_warm(void) {
  const struct {
    gint64 request, overhead;
    guint64 depth;
    gint64 start[4], took[4];
  } cases[] = {
      {400 * US, 0, 1, {0, 530 * US, 1045 * US, 1560 * US}, {530 * US, 515 * US, 515 * US, 515 * US}},
      {400 * US, 50 * US, 1, {0, 580 * US, 1095 * US, 1610 * US}, {580 * US, 515 * US, 515 * US, 515 * US}},
      {100 * US, 0, 32, {0, 0, 230 * US, 230 * US}, {230 * US, 230 * US, 215 * US, 215 * US}},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autoptr(RokTrace) trace = new_trace();
    guint t[4];
    RokHw hw = lanes_hw(cases[c].request, cases[c].depth);
    hw.nvme.warm_write = 15 * US;
    hw.nvme.warm_read = 5 * US;
    hw.host.copy_overhead = cases[c].overhead;
    g_autoptr(RokSimResult) r = run_four_to_ssd(trace, &hw, t);
    for (guint i = 0; i < G_N_ELEMENTS(t); i++)
      assert_write(r, t[i], cases[c].start[i], cases[c].took[i]);
    test_sim_check_log(r);
  }
}

/* nvme.completes_together: op0 (1 ms) makes a 100 KB and a 300 KB tensor,
 * both written gpudirect as it ends, beside each other (400 us of
 * nvme.request_overhead: 0.19 and 0.41 of the array's 1 GB/s). Each on
 * its own, the small write ends 30 + 500 us after it began, the large one
 * 30 + 700; on a disk that completes together what was queued together,
 * the small one ends with the large one. In the third case a 550 KB
 * tensor goes to host memory beside them, sharing the d2h link with the
 * gpudirect writes (which slows the large one): its copy ends after the
 * small write's bytes have moved (1.89 ms) and before the large write
 * (2.06 ms), and the held write ends with the large one, not with the
 * copy. */
static void test_completes_together(void) {
  for (guint c = 0; c < 3; c++) {
    g_autoptr(RokTrace) trace = new_trace();
    guint op0 = add_op(trace, "op0", -1, ROK_OP_OTHER, 1, 1);
    guint small = add_tensor(trace, "S", -1, 100000, op0), large = add_tensor(trace, "L", -1, 300000, op0);
    guint host = c == 2 ? add_tensor(trace, "H", -1, 550000, op0) : ROK_NO_ID;
    guint op1 = add_op(trace, "op1", -1, ROK_OP_OTHER, 2, 0.5);
    rok_trace_need(trace, small, op1);
    rok_trace_need(trace, large, op1);
    if (host != ROK_NO_ID)
      rok_trace_need(trace, host, op1);
    finish(trace);
    RokHw hw = ssd_hw();
    hw.nvme.request_overhead = 400 * US;
    hw.nvme.completes_together = c > 0;
    g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
    plan->decisions[small] = plan->decisions[large] = ROK_DECISION_OFFLOAD_NVME;
    if (host != ROK_NO_ID)
      plan->decisions[host] = ROK_DECISION_OFFLOAD_HOST;
    g_autoptr(RokSimResult) r = run(trace, &hw, plan);
    const RokAction *s = find_action(r, ROK_ACTION_OFFLOAD, small, ROK_STREAM_NVME_WRITE);
    const RokAction *l = find_action(r, ROK_ACTION_OFFLOAD, large, ROK_STREAM_NVME_WRITE);
    g_assert_cmpint(llabs(s->start_ns - 1 * MS), <=, 1);
    g_assert_cmpint(llabs(l->start_ns - 1 * MS), <=, 1);
    g_assert_cmpint(llabs(s->end_ns - (c > 0 ? l->end_ns : 1 * MS + 530 * US)), <=, 2);
    if (host == ROK_NO_ID) {
      g_assert_cmpint(llabs(l->end_ns - (1 * MS + 730 * US)), <=, 2);
      g_assert_cmpint(llabs(r->busy_ns[ROK_STREAM_NVME_WRITE] - 730 * US), <=, 2);
    } else {
      const RokAction *h = find_action(r, ROK_ACTION_OFFLOAD, host, ROK_STREAM_D2H);
      g_assert_cmpint(h->end_ns, >, 1 * MS + 730 * US);
      g_assert_cmpint(h->end_ns, <, l->end_ns - 100 * US);
    }
    test_sim_check_log(r);
  }
}

/* Gathered writes (sim_gather_requests: half the queue depth): op0 and
 * op1 (1 ms each, module layer0.attn) make A and B, op2 (layer0.mlp)
 * makes C, 100 KB each, all to the SSDs through the staging buffer (100 us
 * a copy out, 100 us a write alone at 1 GB/s). With a depth of 32, A's
 * write waits for B, the last of its module: both begin as B's copy out
 * ends (2.1 ms), after it in the schedule, and share the disk; C's goes
 * alone as its copy out ends. Backward (at 13 ms, after the head op)
 * reads them back in turn, C first. With a depth of 2 none is gathered:
 * each write follows its copy out. With a staging buffer of 150 KB, B's
 * copy out finds A's bytes in the way: A's write goes as op1 ends (2 ms),
 * and B's copy out after it; the reads wait for the buffer's room too. */
static void test_gathered_writes(void) {
  const struct {
    guint64 depth, staging;
    gint64 a_write, b_copy, b_read;
  } cases[] = {
      {32, 1 << 30, 2100 * US, 2000 * US, 13100 * US},
      {2, 1 << 30, 1100 * US, 2000 * US, 13100 * US},
      {32, 150000, 2000 * US, 2100 * US, 13200 * US},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autoptr(RokTrace) trace = new_trace();
    guint op[3], t[3];
    const char *names[] = {"layer0.attn.a", "layer0.attn.b", "layer0.mlp.c"};
    for (guint i = 0; i < 3; i++) {
      op[i] = add_op(trace, names[i], 0, ROK_OP_OTHER, 1, 1);
      g_autofree char *name = g_strdup_printf("layer0.T%u", i);
      t[i] = add_tensor(trace, name, 0, 100000, op[i]);
      rok_trace_need(trace, t[i], op[i]);
    }
    add_op(trace, "head", -1, ROK_OP_OTHER, 10, 1);
    finish(trace);
    RokHw hw = test_hw();
    hw.nvme.gpudirect = FALSE;
    hw.nvme.queue_depth = cases[c].depth;
    hw.host.pinned_buffer = cases[c].staging;
    g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
    for (guint i = 0; i < 3; i++)
      plan->decisions[t[i]] = ROK_DECISION_OFFLOAD_NVME;
    g_autoptr(RokSimResult) r = run(trace, &hw, plan);
    const RokAction *wa = find_action(r, ROK_ACTION_OFFLOAD, t[0], ROK_STREAM_NVME_WRITE);
    const RokAction *wb = find_action(r, ROK_ACTION_OFFLOAD, t[1], ROK_STREAM_NVME_WRITE);
    const RokAction *wc = find_action(r, ROK_ACTION_OFFLOAD, t[2], ROK_STREAM_NVME_WRITE);
    const RokAction *cb = find_action(r, ROK_ACTION_OFFLOAD, t[1], ROK_STREAM_D2H);
    const RokAction *cc = find_action(r, ROK_ACTION_OFFLOAD, t[2], ROK_STREAM_D2H);
    g_assert_cmpint(wa->start_ns, ==, cases[c].a_write);
    g_assert_cmpint(cb->start_ns, ==, cases[c].b_copy);
    g_assert_cmpint(wb->start_ns, ==, cb->end_ns);
    g_assert_cmpint(wc->start_ns, ==, cc->end_ns);
    if (c == 0) {
      g_assert_true(depends_on(r, wa, cb));
      g_assert_cmpint(wa->end_ns, ==, wb->end_ns); /* the disk shared */
      g_assert_cmpint(wa->end_ns - wa->start_ns, ==, 200 * US);
    } else if (c == 1) {
      g_assert_false(depends_on(r, wa, cb));
    } else {
      g_assert_true(depends_on(r, wa, find_action(r, ROK_ACTION_FORWARD, op[1], ROK_STREAM_COMPUTE)));
      g_assert_true(depends_on(r, cb, wa));
    }
    g_assert_cmpint(find_action(r, ROK_ACTION_PREFETCH, t[2], ROK_STREAM_NVME_READ)->start_ns, ==, 13 * MS);
    g_assert_cmpint(find_action(r, ROK_ACTION_PREFETCH, t[1], ROK_STREAM_NVME_READ)->start_ns, ==, cases[c].b_read);
    test_sim_check_log(r);
  }
}

/* A gather whose last tensor is forwarded to backward before its copy out
 * began: op0 (1 ms, layer0.attn) makes A (1 MB, its copy out 1-2 ms), op1
 * (0.1 ms, the same module) makes B (100 KB), whose copy out waits behind
 * A's; backward starts at 1.1 ms with op1's (10 ms), which takes B from
 * GPU memory, so B's copy out is dropped. A's write, which would have
 * waited for B, goes as A's copy out ends, long before op0's backward
 * reads A back (no prefetch window: at 11.1 ms); held any longer, that
 * read would take A from the staging buffer and A would never be
 * written. */
static void test_gather_last_forwarded(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = add_op(trace, "layer0.attn.a", 0, ROK_OP_OTHER, 1, 1);
  guint a = add_tensor(trace, "layer0.A", 0, 1000000, op0);
  guint op1 = add_op(trace, "layer0.attn.b", 0, ROK_OP_OTHER, 0.1, 10);
  guint b = add_tensor(trace, "layer0.B", 0, 100000, op1);
  rok_trace_need(trace, a, op0);
  rok_trace_need(trace, b, op1);
  finish(trace);
  RokHw hw = test_hw();
  hw.nvme.gpudirect = FALSE;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = plan->decisions[b] = ROK_DECISION_OFFLOAD_NVME;
  plan->options.prefetch_window = 0;
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  const RokAction *copy = find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_D2H);
  g_assert_cmpint(copy->end_ns, ==, 2 * MS);
  const RokAction *write = find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_NVME_WRITE);
  g_assert_cmpint(write->start_ns, ==, copy->end_ns);
  g_assert_cmpuint(r->nvme_write_bytes, ==, 1000000); /* B never left the GPU */
  test_sim_check_log(r);
}

/* The I/O thread issues a gather's legs one after the other: with a CPU
 * device (gpu.shared_cpus), 40 us of nvme.leg_cpu and 4 us of
 * request_cpu, the first of a gather of three writes costs it half of
 * 40 + 4 us, each next one 4 us (it joins the burst being issued), so the
 * third begins its latency 26 us after the first; each leg held to 0.2
 * GB/s by 400 us of nvme.request_overhead, all end as the third does
 * (completes_together), 26 us later than without the processor time. With
 * a disk that wakes (100 us of wake_write after 1 us idle) the later legs
 * reach it while it wakes and wait only the rest: the gather ends when it
 * would have without the processor time. */
static void test_gather_submitted_in_turn(void) {
  const struct {
    gint64 leg_cpu, request_cpu, wake;
  } cases[] = {{0, 0, 0}, {40 * US, 4 * US, 0}, {0, 0, 100 * US}, {40 * US, 4 * US, 100 * US}};
  gint64 ends[G_N_ELEMENTS(cases)];
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autoptr(RokTrace) trace = new_trace();
    guint t[3];
    for (guint i = 0; i < G_N_ELEMENTS(t); i++) {
      g_autofree char *op_name = g_strdup_printf("layer0.attn.op%u", i);
      guint op = add_op(trace, op_name, 0, ROK_OP_OTHER, 1, 1);
      g_autofree char *name = g_strdup_printf("layer0.T%u", i);
      t[i] = add_tensor(trace, name, 0, 100000, op);
      rok_trace_need(trace, t[i], op);
    }
    add_op(trace, "head", -1, ROK_OP_OTHER, 10, 1);
    finish(trace);
    RokHw hw = test_hw();
    hw.nvme.gpudirect = FALSE;
    hw.nvme.completes_together = TRUE;
    hw.nvme.request_overhead = 400 * US; /* each leg held to 0.2 GB/s: the disk has room for all */
    hw.gpu.shared_cpus = 2;
    hw.nvme.leg_cpu = cases[c].leg_cpu;
    hw.nvme.request_cpu = cases[c].request_cpu;
    hw.nvme.wake_write = cases[c].wake;
    hw.nvme.wake_after = cases[c].wake > 0 ? 1 * US : 0;
    g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
    for (guint i = 0; i < G_N_ELEMENTS(t); i++)
      plan->decisions[t[i]] = ROK_DECISION_OFFLOAD_NVME;
    g_autoptr(RokSimResult) r = run(trace, &hw, plan);
    const RokAction *last = find_action(r, ROK_ACTION_OFFLOAD, t[2], ROK_STREAM_NVME_WRITE);
    for (guint i = 0; i < G_N_ELEMENTS(t); i++) {
      const RokAction *w = find_action(r, ROK_ACTION_OFFLOAD, t[i], ROK_STREAM_NVME_WRITE);
      g_assert_cmpint(w->start_ns, ==, find_action(r, ROK_ACTION_OFFLOAD, t[2], ROK_STREAM_D2H)->end_ns);
      g_assert_cmpint(w->end_ns, ==, last->end_ns);
    }
    ends[c] = last->end_ns;
    test_sim_check_log(r);
  }
  g_assert_cmpint(llabs(ends[1] - ends[0] - 26 * US), <=, 2);
  g_assert_cmpint(llabs(ends[2] - ends[0] - 100 * US), <=, 2);
  g_assert_cmpint(llabs(ends[3] - ends[2]), <=, 2);
}

/* Two copies out at once on the d2h link, one to host memory (1 MB), one
 * gpudirect to the SSD (3 MB, the SSD 10x faster): half the link each
 * until the small one ends at 3 ms, then all of it for the rest. */
static void test_fluid_sharing_in_engine(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = add_op(trace, "op0", -1, ROK_OP_OTHER, 1, 1);
  guint a = add_tensor(trace, "A", -1, 1000000, op0);
  guint b = add_tensor(trace, "B", -1, 3000000, op0);
  guint op1 = add_op(trace, "op1", -1, ROK_OP_OTHER, 10, 1);
  rok_trace_need(trace, a, op0);
  rok_trace_need(trace, b, op0);
  (void)op1;
  finish(trace);
  RokHw hw = test_hw();
  hw.nvme.write_bandwidth = 10e9;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_HOST;
  plan->decisions[b] = ROK_DECISION_OFFLOAD_NVME;
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  const RokAction *wa = find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_D2H);
  const RokAction *wb = find_action(r, ROK_ACTION_OFFLOAD, b, ROK_STREAM_NVME_WRITE);
  g_assert_cmpint(wa->start_ns, ==, 1 * MS);
  g_assert_cmpint(wb->start_ns, ==, 1 * MS);
  g_assert_cmpint(wa->end_ns, ==, 3 * MS);
  g_assert_cmpint(wb->end_ns, ==, 5 * MS);
  g_assert_cmpuint(r->pcie_d2h_bytes, ==, 4000000);
  test_sim_check_log(r);
}

static RokFlow flow2(RokLink r1, double s1, RokLink r2, double s2) {
  RokFlow f = {.active = TRUE};
  f.speed[r1] = s1;
  if (s2 > 0)
    f.speed[r2] = s2;
  return f;
}

static void test_fluid_rates(void) {
  /* Two equal flows on one link: half each. */
  RokFlow two[] = {flow2(ROK_LINK_D2H, 24e9, 0, 0), flow2(ROK_LINK_D2H, 24e9, 0, 0)};
  sim_fluid_share(two, 2);
  g_assert_cmpfloat(two[0].rate, ==, 12e9);
  g_assert_cmpfloat(two[1].rate, ==, 12e9);
  g_assert_cmpint(two[0].bottleneck, ==, ROK_LINK_D2H);
  /* A read and a write on the array share its time: half of each speed. */
  RokFlow rw[] = {flow2(ROK_LINK_NVME, 7.2e9, 0, 0), flow2(ROK_LINK_NVME, 6.2e9, 0, 0)};
  sim_fluid_share(rw, 2);
  g_assert_cmpfloat_with_epsilon(rw[0].rate, 3.6e9, 1);
  g_assert_cmpfloat_with_epsilon(rw[1].rate, 3.1e9, 1);
  /* gpudirect write (SSD 6 GB/s) + host copy on a 24 GB/s link: the link
   * saturates at λ = 0.8. */
  RokFlow mix[] = {flow2(ROK_LINK_NVME, 6e9, ROK_LINK_D2H, 24e9), flow2(ROK_LINK_D2H, 24e9, 0, 0)};
  sim_fluid_share(mix, 2);
  g_assert_cmpfloat_with_epsilon(mix[0].rate, 4.8e9, 1);
  g_assert_cmpfloat_with_epsilon(mix[1].rate, 19.2e9, 1);
  g_assert_cmpint(mix[0].bottleneck, ==, ROK_LINK_D2H);
  /* Alone, a flow runs at its slowest resource; an inactive one is left out. */
  RokFlow solo[] = {flow2(ROK_LINK_NVME, 2e9, ROK_LINK_H2D, 1e9), {.active = FALSE}};
  sim_fluid_share(solo, 2);
  g_assert_cmpfloat(solo[0].rate, ==, 1e9);
  g_assert_cmpint(solo[0].bottleneck, ==, ROK_LINK_H2D);
  /* Its own cap binds first. */
  RokFlow capped[] = {flow2(ROK_LINK_D2H, 24e9, 0, 0)};
  capped[0].cap = 5e9;
  sim_fluid_share(capped, 1);
  g_assert_cmpfloat(capped[0].rate, ==, 5e9);
  g_assert_cmpint(capped[0].bottleneck, ==, -1);
}

/* A's copy out takes 10 ms; backward needs it at 2 ms: it is used from GPU
 * memory, not read back, and freed only when the copy has read it (11 ms).
 * C's copy, queued behind A's, is dropped. */
static void test_forwarding(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = add_op(trace, "op0", -1, ROK_OP_OTHER, 1, 1);
  guint a = add_tensor(trace, "A", -1, 1000000, op0);
  guint c = add_tensor(trace, "C", -1, 1000000, op0);
  guint op1 = add_op(trace, "op1", -1, ROK_OP_OTHER, 1, 1);
  rok_trace_need(trace, a, op0);
  rok_trace_need(trace, c, op0);
  (void)op1;
  finish(trace);
  RokHw hw = test_hw();
  hw.pcie.d2h_bandwidth = 1e8;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = plan->decisions[c] = ROK_DECISION_OFFLOAD_HOST;
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  g_assert_cmpint(r->step_ns, ==, 4 * MS);
  g_assert_cmpint(r->stall_total_ns, ==, 0);
  g_assert_cmpuint(r->forwarded_tensors, ==, 2);
  g_assert_cmpuint(r->pcie_h2d_bytes, ==, 0);
  g_assert_cmpuint(r->pcie_d2h_bytes, ==, 1000000);
  const RokAction *free_a = find_action(r, ROK_ACTION_FREE, a, ROK_STREAM_D2H);
  g_assert_cmpint(free_a->start_ns, ==, 11 * MS);
  g_assert_true(depends_on(r, free_a, find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_D2H)));
  g_assert_true(depends_on(r, free_a, find_action(r, ROK_ACTION_BACKWARD, op0, ROK_STREAM_COMPUTE)));
  g_assert_cmpint(find_action(r, ROK_ACTION_FREE, c, ROK_STREAM_COMPUTE)->start_ns, ==, 4 * MS);
  g_assert_cmpuint(r->peak_bytes, ==, FIXED + 2000000);
  test_sim_check_log(r);
}

/* X (layer 0's input) -> op1 -> Y -> op2 -> Z (layer 1's input) -> op3 -> W.
 * Recomputing Y frees it after op2 and re-runs op1 before op2's backward. */
static RokTrace *chain_trace(void) {
  RokTrace *trace = new_trace();
  guint op0 = add_op(trace, "embed", -1, ROK_OP_OTHER, 1, 1);
  guint x = add_tensor(trace, "X", 0, 1000000, op0);
  guint op1 = add_op(trace, "l0.a", 0, ROK_OP_OTHER, 2, 2);
  rok_trace_add_input(trace, op1, x);
  guint y = add_tensor(trace, "Y", 0, 2000000, op1);
  guint op2 = add_op(trace, "l0.b", 0, ROK_OP_OTHER, 1, 1);
  rok_trace_add_input(trace, op2, y);
  guint z = add_tensor(trace, "Z", 1, 500000, op2);
  guint op3 = add_op(trace, "l1.c", 1, ROK_OP_OTHER, 1, 1);
  rok_trace_add_input(trace, op3, z);
  guint w = add_tensor(trace, "W", 1, 4000000, op3);
  rok_trace_need(trace, x, op1);
  rok_trace_need(trace, y, op2);
  rok_trace_need(trace, z, op3);
  rok_trace_need(trace, w, op3);
  trace->layers = 2;
  finish(trace);
  return trace;
}

static void test_recompute_pencil(void) {
  g_autoptr(RokTrace) trace = chain_trace();
  RokHw hw = test_hw();
  g_autoptr(RokStepPlan) keep = rok_step_plan_new(trace);
  g_autoptr(RokSimResult) k = run(trace, &hw, keep);
  g_assert_cmpint(k->step_ns, ==, 10 * MS);
  g_assert_cmpuint(k->peak_bytes, ==, FIXED + 7500000);
  g_assert_cmpint(k->recompute_ns, ==, 0);

  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[1] = ROK_DECISION_RECOMPUTE; /* Y */
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  g_assert_cmpint(r->step_ns, ==, 12 * MS);
  g_assert_cmpint(r->recompute_ns, ==, 2 * MS);
  g_assert_cmpint(r->compute_ns, ==, 12 * MS);
  g_assert_cmpuint(r->peak_bytes, ==, FIXED + 5500000);
  g_assert_cmpint(r->peak_kind, ==, ROK_ACTION_FORWARD);
  g_assert_cmpuint(r->peak_op, ==, 3);
  const RokAction *re = find_action(r, ROK_ACTION_RECOMPUTE, 1, ROK_STREAM_COMPUTE);
  g_assert_cmpint(re->start_ns, ==, 6 * MS);
  g_assert_cmpint(re->end_ns, ==, 8 * MS);
  g_assert_cmpint(find_action(r, ROK_ACTION_FREE, 1, ROK_STREAM_COMPUTE)->start_ns, ==, 4 * MS);
  test_sim_check_log(r);
}

/* Y and V of one layer, both recomputed, share one rebuild: op1 and op2
 * run once each. The dropout mask M is rebuilt from the seed alone:
 * 1 MB / 1 TB/s + 0.5 us launch. */
static void test_rebuild_once_and_masks(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = add_op(trace, "embed", -1, ROK_OP_OTHER, 1, 1);
  guint x = add_tensor(trace, "X", 0, 1000000, op0);
  guint op1 = add_op(trace, "l0.a", 0, ROK_OP_OTHER, 2, 2);
  rok_trace_add_input(trace, op1, x);
  guint y = add_tensor(trace, "Y", 0, 1000000, op1);
  guint op2 = add_op(trace, "l0.b", 0, ROK_OP_OTHER, 3, 1);
  rok_trace_add_input(trace, op2, y);
  guint v = add_tensor(trace, "V", 0, 1000000, op2);
  guint op3 = add_op(trace, "l0.drop", 0, ROK_OP_DROPOUT, 1, 1);
  rok_trace_add_input(trace, op3, v);
  rok_trace_op(trace, op3)->fwd_time_s = -1; /* modelled: a mask-only re-run has no measured time */
  guint m = add_tensor(trace, "M", 0, 1000000, op3);
  guint d = rok_trace_add_tensor(trace, "D", 0, ROK_DTYPE_BF16, 1, (const guint64[]){500000}, op3);
  rok_trace_need(trace, x, op1);
  rok_trace_need(trace, y, op2);
  rok_trace_need(trace, v, op2);
  rok_trace_need(trace, m, op3);
  (void)d;
  trace->layers = 1;
  finish(trace);
  g_assert_cmpuint(rok_trace_tensor(trace, m)->recompute_from->len, ==, 0);
  RokHw hw = test_hw();
  hw.gpu.launch_overhead = 500;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[y] = plan->decisions[v] = plan->decisions[m] = ROK_DECISION_RECOMPUTE;
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  g_assert_cmpint(r->recompute_ns, ==, 2 * MS + 3 * MS + 1500);
  guint rebuilds[4] = {0};
  for (guint i = 0; i < r->actions->len; i++) {
    const RokAction *a = &g_array_index(r->actions, RokAction, i);
    if (a->kind == ROK_ACTION_RECOMPUTE)
      rebuilds[a->op]++;
  }
  g_assert_cmpuint(rebuilds[op1], ==, 1);
  g_assert_cmpuint(rebuilds[op2], ==, 1);
  g_assert_cmpuint(rebuilds[op3], ==, 1);
  /* The mask is rebuilt from the seed: it reads nothing. */
  const RokAction *mask = find_action(r, ROK_ACTION_RECOMPUTE, op3, ROK_STREAM_COMPUTE);
  g_assert_cmpint(mask->end_ns - mask->start_ns, ==, 1500);
  g_assert_cmpuint(mask->deps_count, ==, 1); /* the previous compute only */
  g_assert_cmpint(r->step_ns, ==, r->compute_ns);
  test_sim_check_log(r);
}

/* The budget holds A or B, not both: op1 waits for A's copy out (1 ms), and
 * A's read back is held until B is freed. */
static void test_memory_stalls(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = add_op(trace, "op0", -1, ROK_OP_OTHER, 1, 1);
  guint a = add_tensor(trace, "A", -1, 1000000, op0);
  guint op1 = add_op(trace, "op1", -1, ROK_OP_OTHER, 1, 1);
  guint b = add_tensor(trace, "B", -1, 1000000, op1);
  rok_trace_need(trace, a, op0);
  rok_trace_need(trace, b, op1);
  finish(trace);
  RokHw hw = test_hw();
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = ROK_DECISION_OFFLOAD_HOST;
  plan->options.memory_budget = FIXED + 1500000;
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  g_assert_cmpint(find_action(r, ROK_ACTION_FORWARD, op1, ROK_STREAM_COMPUTE)->start_ns, ==, 2 * MS);
  g_assert_cmpint(find_action(r, ROK_ACTION_PREFETCH, a, ROK_STREAM_H2D)->start_ns, ==, 4 * MS);
  g_assert_cmpint(r->stall_ns[ROK_STALL_MEMORY], ==, 2 * MS);
  g_assert_cmpint(r->stall_total_ns, ==, 2 * MS);
  g_assert_cmpint(r->step_ns, ==, 6 * MS);
  g_assert_cmpuint(r->peak_bytes, ==, FIXED + 1000000);
  g_assert_cmpuint(r->budget_bytes, ==, FIXED + 1500000);
  g_assert_true(r->within_budget);
  test_sim_check_log(r);
}

/* Without gpudirect, the staging buffer holds one tensor: B's copy out
 * waits until A has reached the SSD. */
static void test_staging(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint op0 = add_op(trace, "op0", -1, ROK_OP_OTHER, 1, 1);
  guint a = add_tensor(trace, "A", -1, 1000000, op0);
  guint b = add_tensor(trace, "B", -1, 1000000, op0);
  guint op1 = add_op(trace, "op1", -1, ROK_OP_OTHER, 10, 1);
  rok_trace_need(trace, a, op0);
  rok_trace_need(trace, b, op0);
  (void)op1;
  finish(trace);
  RokHw hw = test_hw();
  hw.nvme.gpudirect = FALSE;
  hw.host.pinned_buffer = 1000000;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[a] = plan->decisions[b] = ROK_DECISION_OFFLOAD_NVME;
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  const RokAction *a1 = find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_D2H);
  const RokAction *a2 = find_action(r, ROK_ACTION_OFFLOAD, a, ROK_STREAM_NVME_WRITE);
  const RokAction *b1 = find_action(r, ROK_ACTION_OFFLOAD, b, ROK_STREAM_D2H);
  const RokAction *b2 = find_action(r, ROK_ACTION_OFFLOAD, b, ROK_STREAM_NVME_WRITE);
  g_assert_cmpint(a1->start_ns, ==, 1 * MS);
  g_assert_cmpint(a1->end_ns, ==, 2 * MS);
  g_assert_cmpint(a2->start_ns, ==, 2 * MS);
  g_assert_cmpint(a2->end_ns, ==, 3 * MS);
  g_assert_cmpint(b1->start_ns, ==, 3 * MS);
  g_assert_cmpint(b2->end_ns, ==, 5 * MS);
  g_assert_false(a2->gpudirect);
  g_assert_true(depends_on(r, a2, a1));
  g_assert_true(depends_on(r, b1, a2)); /* the staging space it waited for */
  g_assert_cmpint(find_action(r, ROK_ACTION_FREE, b, ROK_STREAM_D2H)->start_ns, ==, 4 * MS);
  g_assert_cmpuint(r->staging_peak_bytes, ==, 1000000);
  g_assert_cmpuint(r->nvme_write_bytes, ==, 2000000);
  g_assert_cmpuint(r->nvme_read_bytes, ==, 2000000);
  g_assert_cmpuint(r->pcie_h2d_bytes, ==, 2000000);
  test_sim_check_log(r);
}

static void expect_error(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const char *needle) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(trace, hw, plan, &error);
  g_assert_null(r);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  if (!strstr(error->message, needle))
    g_error("message \"%s\" does not mention \"%s\"", error->message, needle);
}

static void test_bad_plans(void) {
  g_autoptr(RokTrace) trace = new_trace();
  guint in = add_op(trace, "batch", -1, ROK_OP_INPUT, 0, 0);
  guint tokens = add_tensor(trace, "tokens", -1, 1000, in);
  guint op1 = add_op(trace, "embed", -1, ROK_OP_EMBEDDING, 1, 1);
  rok_trace_add_input(trace, op1, tokens);
  guint e = add_tensor(trace, "E", 0, 1000, op1);
  rok_trace_need(trace, tokens, op1);
  rok_trace_need(trace, e, op1);
  finish(trace);
  RokHw hw = test_hw();
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  plan->decisions[tokens] = ROK_DECISION_RECOMPUTE;
  expect_error(trace, &hw, plan, "tokens");
  plan->decisions[tokens] = ROK_DECISION_KEEP;
  plan->decisions[e] = ROK_DECISION_OFFLOAD_NVME;
  hw.nvme.devices = 0;
  expect_error(trace, &hw, plan, "no NVMe");
  hw = test_hw();
  plan->options.detail_micro_batches = 0;
  expect_error(trace, &hw, plan, "detail");
  plan->options.detail_micro_batches = 1;
  plan->n_tensors = 1;
  expect_error(trace, &hw, plan, "decisions");
  plan->n_tensors = trace->tensors->len;
  hw.pcie.h2d_bandwidth = 0;
  expect_error(trace, &hw, plan, "pcie.h2d_bandwidth");
}

/* Eight micro-batches, three simulated: the rest repeat the period. */
static void test_micro_batches(void) {
  g_autoptr(RokTrace) trace = chain_trace();
  trace->micro_batches_per_step = 8;
  trace->fixed.optimizer_step_bytes = 1000000000; /* 1 ms at 1 TB/s */
  RokHw hw = test_hw();
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  g_autoptr(RokSimResult) r = run(trace, &hw, plan);
  g_assert_cmpuint(r->detailed_micro_batches, ==, 3);
  g_assert_cmpint(r->step_ns, ==, 8 * 10 * MS + 1 * MS);
  g_assert_cmpint(r->compute_ns, ==, 8 * 10 * MS + 1 * MS);
  g_assert_cmpfloat_with_epsilon(r->tokens_per_s, 8000 / 0.081, 1e-6);
  /* With offload, detailed and extrapolated steps agree. */
  plan->decisions[3] = ROK_DECISION_OFFLOAD_NVME; /* W */
  g_autoptr(RokSimResult) three = run(trace, &hw, plan);
  plan->options.detail_micro_batches = 8;
  g_autoptr(RokSimResult) all = run(trace, &hw, plan);
  g_assert_cmpuint(all->detailed_micro_batches, ==, 8);
  g_assert_cmpint(three->step_ns, ==, all->step_ns);
  g_assert_cmpuint(three->nvme_write_bytes, ==, all->nvme_write_bytes);
  g_assert_cmpuint(all->nvme_write_bytes, ==, 8 * 4000000);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sim/offload-pencil", test_offload_pencil);
  g_test_add_func("/sim/leg-overhead", test_leg_overhead);
  g_test_add_func("/sim/write-fixed", test_write_fixed);
  g_test_add_func("/sim/wake", test_wake);
  g_test_add_func("/sim/warm", test_warm);
  g_test_add_func("/sim/ssd-lanes", test_ssd_lanes);
  g_test_add_func("/sim/gathered-writes", test_gathered_writes);
  g_test_add_func("/sim/gather-submitted-in-turn", test_gather_submitted_in_turn);
  g_test_add_func("/sim/gather-last-forwarded", test_gather_last_forwarded);
  g_test_add_func("/sim/completes-together", test_completes_together);
  g_test_add_data_func("/sim/late-prefetch/demand", GUINT_TO_POINTER(0), test_late_prefetch_stalls_exactly);
  g_test_add_data_func("/sim/late-prefetch/window", GUINT_TO_POINTER(2), test_late_prefetch_stalls_exactly);
  g_test_add_func("/sim/fluid/engine", test_fluid_sharing_in_engine);
  g_test_add_func("/sim/fluid/rates", test_fluid_rates);
  g_test_add_func("/sim/forwarding", test_forwarding);
  g_test_add_func("/sim/recompute", test_recompute_pencil);
  g_test_add_func("/sim/recompute/once-and-masks", test_rebuild_once_and_masks);
  g_test_add_func("/sim/memory-stalls", test_memory_stalls);
  g_test_add_func("/sim/staging", test_staging);
  g_test_add_func("/sim/bad-plans", test_bad_plans);
  g_test_add_func("/sim/micro-batches", test_micro_batches);
  return g_test_run();
}
