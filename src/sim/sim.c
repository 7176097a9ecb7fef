/* The simulator's context: what does not depend on the plan, and runs. */
#include "sim-private.h"

#include <string.h>

#include <math.h>

#include "rok/core.h"

static gboolean is_float(RokDtype dtype) {
  return dtype == ROK_DTYPE_BF16 || dtype == ROK_DTYPE_FP16 || dtype == ROK_DTYPE_FP32;
}

/* An op's time in seconds, launch overhead aside: measured, at the
 * profile's measured rate for its kind, as the profile timed its kind and
 * shape, by the GEMM model, or the roofline. */
static double op_seconds(const RokHw *hw, const RokOp *op, gboolean backward) {
  double measured = backward ? op->bwd_time_s : op->fwd_time_s;
  if (measured >= 0)
    return measured;
  if (op->kind == ROK_OP_INPUT)
    return 0;
  double work = rok_op_work(op, backward);
  double measured_rate = rok_hw_op_rate(rok_hw_op_rates(hw, rok_op_kind_name(op->kind)),
                                        backward ? ROK_HW_BACKWARD : ROK_HW_FORWARD, work);
  if (measured_rate > 0)
    return work / measured_rate;
  /* A GEMM op of a kind and shape the calibration timed: that time, which
   * the GEMM model only approximates (its fit is 15-25% off per shape). */
  gint64 timed = rok_op_kind_is_gemm(op->kind)
                     ? rok_hw_gemm_op_measured(hw, rok_op_kind_name(op->kind), op->dims, backward)
                     : -1;
  if (timed >= 0)
    return (double)timed / 1e9;
  double flops = (double)(backward ? op->bwd_flops : op->fwd_flops);
  double bytes = (double)(backward ? op->bwd_bytes : op->fwd_bytes);
  /* Without a curve, the GEMM model: the tile and wave quantisation of the
   * op's GEMM shapes scales matmul_efficiency (with gpu.sm_count). */
  if (rok_op_kind_is_gemm(op->kind) && hw->gpu.gemm_curve_len == 0)
    return sim_gemm_seconds(hw, op, backward, flops, bytes);
  /* A backward runs GEMMs of the forward's shape (two for a linear), so the
   * forward FLOPs are the size that picks the efficiency from a curve. */
  double efficiency = rok_op_kind_is_gemm(op->kind) ? rok_hw_gemm_efficiency(hw, (double)op->fwd_flops) : 1.0;
  double rate = hw->gpu.peak_flops * efficiency;
  return MAX(flops / rate, bytes / hw->gpu.hbm_bandwidth);
}

/* The optimizer step: its traffic at HBM bandwidth, or its GEMMs (APOLLO's
 * projections) at matmul_efficiency, whichever takes longer, + a launch. */
static gint64 optimizer_ns(const RokTrace *trace, const RokHw *hw) {
  const RokFixedMemory *f = &trace->fixed;
  if (f->optimizer_step_bytes == 0 && f->optimizer_step_flops == 0)
    return 0;
  double seconds = MAX((double)f->optimizer_step_bytes / hw->gpu.hbm_bandwidth,
                       (double)f->optimizer_step_flops / (hw->gpu.peak_flops * hw->gpu.matmul_efficiency));
  return (gint64)llround(seconds * 1e9) + hw->gpu.launch_overhead;
}

static gint64 op_time(const RokHw *hw, const RokOp *op, gboolean backward) {
  double measured = backward ? op->bwd_time_s : op->fwd_time_s;
  if (measured >= 0) /* a measured time includes its launch */
    return (gint64)llround(measured * 1e9);
  if (op->kind == ROK_OP_INPUT)
    return 0; /* data arrives: no kernel */
  return (gint64)llround(op_seconds(hw, op, backward) * 1e9) + hw->gpu.launch_overhead;
}

/* Times are whole nanoseconds in 64 bits: a profile whose rates are so low
 * that a step (every op forward, twice backward, every saved byte over the
 * slowest link both ways, every micro-batch) would outlast ~30 years is
 * refused, rather than overflow the clock. */
/* Every op's outputs rebuilt from the seed at its kind's rebuild rate. */
static double rebuild_seconds(const RokTrace *trace, const RokHw *hw) {
  double seconds = 0;
  for (guint i = 0; i < trace->ops->len; i++) {
    const RokOp *op = rok_trace_op(trace, i);
    const RokHwOpRates *rates = rok_hw_op_rates(hw, rok_op_kind_name(op->kind));
    if (rates == NULL || rates->len[ROK_HW_REBUILD] == 0)
      continue;
    for (guint o = 0; o < op->outputs->len; o++) {
      double bytes = (double)rok_trace_tensor(trace, g_array_index(op->outputs, guint, o))->bytes;
      seconds += bytes / rok_hw_op_rate(rates, ROK_HW_REBUILD, bytes);
    }
  }
  return seconds;
}

static gboolean check_magnitude(const RokTrace *trace, const RokHw *hw, GError **error) {
  double seconds = 0, bytes = 0;
  for (guint i = 0; i < trace->ops->len; i++) {
    const RokOp *op = rok_trace_op(trace, i);
    seconds += op_seconds(hw, op, FALSE) + 2 * op_seconds(hw, op, TRUE) + 3e-9 * (double)hw->gpu.launch_overhead;
  }
  for (guint t = 0; t < trace->tensors->len; t++)
    bytes += (double)rok_trace_tensor(trace, t)->bytes;
  double slowest = MIN(hw->pcie.d2h_bandwidth, hw->pcie.h2d_bandwidth);
  if (hw->nvme.devices > 0)
    slowest = MIN(slowest, MIN(hw->nvme.read_bandwidth, hw->nvme.write_bandwidth));
  seconds += 2 * bytes / slowest + (double)trace->fixed.optimizer_step_bytes / hw->gpu.hbm_bandwidth +
             (double)trace->fixed.optimizer_step_flops / (hw->gpu.peak_flops * hw->gpu.matmul_efficiency);
  if (hw->host.checksum_bandwidth > 0) /* every copy checked both ways */
    seconds += 2 * bytes / hw->host.checksum_bandwidth;
  if (hw->gpu.checksum_bandwidth > 0) /* and on the device as it leaves */
    seconds += bytes / hw->gpu.checksum_bandwidth;
  seconds += 1e-9 * (double)hw->gpu.checksum_overhead * (double)trace->tensors->len;
  seconds += rebuild_seconds(trace, hw);
  if (hw->gpu.shared_cpus > 0) { /* copies on all four streams taking processors from the compute */
    double n = (double)hw->gpu.shared_cpus;
    seconds *= n / (n - sim_cpus_of_legs(n, ROK_STREAM_COUNT - 1, TRUE));
  }
  seconds *= (double)MAX(trace->micro_batches_per_step, 1);
  if (seconds < 1e9)
    return TRUE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
              "hardware profile %s: a step of %s would take more than 30 years at these rates: "
              "they are implausibly low (check gpu.peak_flops and the bandwidths)",
              hw->name ? hw->name : "(unnamed)", trace->model_name ? trace->model_name : "this model");
  return FALSE;
}

/* Whether KIND names an op kind (a GEMM's, with GEMM). */
static gboolean known_kind(const char *kind, gboolean gemm) {
  RokOpKind k = rok_op_kind_from_name(kind);
  return k != ROK_OP_KIND_COUNT && (!gemm || rok_op_kind_is_gemm(k));
}

static gboolean bad_kind(const RokHw *hw, const char *where, const char *kind, gboolean gemm, GError **error) {
  const char *const *names = rok_op_kind_names();
  g_autoptr(GStrvBuilder) known = g_strv_builder_new();
  for (guint k = 0; names[k] != NULL; k++)
    if (!gemm || rok_op_kind_is_gemm((RokOpKind)k))
      g_strv_builder_add(known, names[k]);
  g_auto(GStrv) list = g_strv_builder_end(known);
  g_autofree char *text = g_strjoinv(", ", list);
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "hardware profile %s: %s: \"%s\" is not %s (known: %s)",
              hw->name ? hw->name : "(unnamed)", where, kind, gemm ? "a GEMM op kind" : "an op kind", text);
  return FALSE;
}

/* Measured op rates and GEMM op times must name kinds the trace knows: a
 * misspelt kind would silently fall back to the roofline or the model. */
static gboolean check_op_kinds(const RokHw *hw, GError **error) {
  for (guint i = 0; i < hw->gpu.op_rates_len; i++)
    if (!known_kind(hw->gpu.op_rates[i].kind, FALSE))
      return bad_kind(hw, "gpu.op_rates", hw->gpu.op_rates[i].kind, FALSE, error);
  for (guint i = 0; i < hw->calibrated.gemm_ops_len; i++)
    if (!known_kind(hw->calibrated.gemm_ops[i].kind, TRUE))
      return bad_kind(hw, "calibrated_shapes.gemm_ops", hw->calibrated.gemm_ops[i].kind, TRUE, error);
  return TRUE;
}

static gboolean check_hw(const RokHw *hw, GError **error) {
  if (!check_op_kinds(hw, error))
    return FALSE;
  const char *bad = NULL;
  if (!(hw->gpu.peak_flops > 0))
    bad = "gpu.peak_flops";
  else if (!(hw->gpu.matmul_efficiency > 0 && hw->gpu.matmul_efficiency <= 1))
    bad = "gpu.matmul_efficiency";
  else if (!(hw->gpu.hbm_bandwidth > 0))
    bad = "gpu.hbm_bandwidth";
  else if (!(hw->pcie.d2h_bandwidth > 0))
    bad = "pcie.d2h_bandwidth";
  else if (!(hw->pcie.h2d_bandwidth > 0))
    bad = "pcie.h2d_bandwidth";
  else if (hw->gpu.launch_overhead < 0 || hw->pcie.latency < 0 || hw->nvme.latency < 0)
    bad = "a latency";
  else if (hw->nvme.devices > 0 && !(hw->nvme.read_bandwidth > 0))
    bad = "nvme.read_bandwidth";
  else if (hw->nvme.devices > 0 && !(hw->nvme.write_bandwidth > 0))
    bad = "nvme.write_bandwidth";
  else if (hw->nvme.devices > 0 && hw->nvme.queue_depth == 0)
    bad = "nvme.queue_depth";
  if (bad)
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "hardware profile %s: %s must be positive to simulate",
                hw->name ? hw->name : "(unnamed)", bad);
  return bad == NULL;
}

/* The array's rate in one direction: every device, each limited by its
 * bandwidth and by Little's law on its queue. */
static double array_speed(const RokHw *hw, double device_bandwidth, gint64 latency) {
  if (hw->nvme.devices == 0)
    return 0;
  double per_device = device_bandwidth;
  if (latency > 0)
    per_device =
        MIN(per_device, (double)hw->nvme.queue_depth * (double)ROK_SIM_CHUNK_BYTES / ((double)latency / 1e9));
  return per_device * (double)hw->nvme.devices;
}

static gboolean listed_before(const GArray *ids, guint upto, guint id) {
  for (guint i = 0; i < upto; i++)
    if (g_array_index(ids, guint, i) == id)
      return TRUE;
  return FALSE;
}

/* The share of an op's backward that its first kernel takes, where the
 * profile measured its kind and shape; half otherwise (two GEMMs of equal
 * FLOPs: a linear's dW and dX, which on a CPU device need not take equal
 * time: in validate-gpt's and the LLaMA-shaped model's fc2 backward the
 * first h2d leg got through at 0.37-0.41 of it, and rok calibrate put its
 * first kernel at 0.37-0.40, 2026-12-07). */
static double backward_first(const RokHw *hw, const RokOp *op) {
  const RokHwGemmOp *timed = rok_op_kind_is_gemm(op->kind)
                                 ? rok_hw_gemm_op_find(hw->calibrated.gemm_ops, hw->calibrated.gemm_ops_len,
                                                       rok_op_kind_name(op->kind), op->dims)
                                 : NULL;
  return timed != NULL && timed->backward_first > 0 ? timed->backward_first : 0.5;
}

/* Whether a linear op's backward leaves a processor idle through its first
 * kernel, dW [k x n], on a CPU device that computes a GEMM as one
 * work-group per output tile (gpu.gemm_tile) on its shared_cpus
 * processors: fewer tiles than processors. A copy handed over then goes at
 * once (validate-gpt's attn.proj backward, 2026-12-07: its dW of one
 * 128x128 tile on two processors let the h2d legs of tba's row through
 * 0.2-0.4 into it with no wait, and rok calibrate's probe copies 0.15 into
 * it went as fast as alone). */
static gboolean first_kernel_idle(const RokHw *hw, const RokOp *op) {
  if (op->kind != ROK_OP_LINEAR || hw->gpu.shared_cpus == 0)
    return FALSE;
  guint64 tiles = rok_hw_gemm_tiles(hw, op->dims[0], op->dims[3], op->dims[2]);
  return tiles > 0 && tiles < hw->gpu.shared_cpus;
}

/* Per op: forward and backward time, its backward's first kernel; bytes of
 * its outputs. */
static void compute_ops(RokSim *sim) {
  const RokTrace *trace = sim->trace;
  for (guint o = 0; o < sim->n_ops; o++) {
    const RokOp *op = rok_trace_op(trace, o);
    sim->fwd_ns[o] = op_time(sim->hw, op, FALSE);
    sim->bwd_ns[o] = op_time(sim->hw, op, TRUE);
    sim->bwd_first[o] = backward_first(sim->hw, op);
    sim->bwd_first_idle[o] = first_kernel_idle(sim->hw, op);
    for (guint i = 0; i < op->outputs->len; i++)
      sim->out_bytes[o] += rok_trace_tensor(trace, g_array_index(op->outputs, guint, i))->bytes;
  }
}

static gboolean needed_by(const RokTensor *tensor, guint op) {
  for (guint i = 0; i < tensor->needed_by->len; i++)
    if (g_array_index(tensor->needed_by, guint, i) == op)
      return TRUE;
  return FALSE;
}

/* Activation gradients as autograd keeps them: a tensor has one if it is
 * floating point, made by an op that is not an input, and either read by
 * a later op (the gradient flows back through it) or read by nobody and
 * not kept for its own producer's backward (a pipeline stage's last
 * activation: its gradient comes from the next stage). Statistics,
 * probabilities and log-sum-exps kept for the producer's own backward have
 * none. A gradient is made by the first backward that adds to it (that of
 * the tensor's last forward reader) and freed when its producer's backward
 * has used it; one that comes from outside lives during its producer's
 * backward. Needs compute_lists' last readers. */
static void compute_grads(RokSim *sim, const guint *last) {
  const RokTrace *trace = sim->trace;
  for (guint t = 0; t < sim->n_tensors; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    guint producer = tensor->producer;
    if (!is_float(tensor->dtype) || rok_trace_op(trace, producer)->kind == ROK_OP_INPUT)
      continue;
    if (sim->fwd_uses[t] > 0) {
      sim->grad_start_bytes[last[t]] += tensor->bytes;
      sim->grad_end_bytes[producer] += tensor->bytes;
    } else if (!needed_by(tensor, producer)) {
      sim->grad_start_bytes[producer] += tensor->bytes;
      sim->grad_end_bytes[producer] += tensor->bytes;
    }
  }
}

/* Forward releases: each tensor goes with its last forward reader, or
 * with its producer when nothing reads it. Backward needs: the saved
 * tensors each op's backward reads, in tensor order. Both as CSR. */
static void compute_lists(RokSim *sim) {
  const RokTrace *trace = sim->trace;
  g_autofree guint *last = g_new(guint, MAX(sim->n_tensors, 1));
  for (guint t = 0; t < sim->n_tensors; t++)
    last[t] = rok_trace_tensor(trace, t)->producer;
  for (guint o = 0; o < sim->n_ops; o++) {
    const GArray *inputs = rok_trace_op(trace, o)->inputs;
    for (guint i = 0; i < inputs->len; i++) {
      guint t = g_array_index(inputs, guint, i);
      if (!listed_before(inputs, i, t))
        sim->fwd_uses[t]++;
      last[t] = MAX(last[t], o);
    }
  }
  for (guint t = 0; t < sim->n_tensors; t++) {
    sim->fwd_rel[last[t] + 1]++;
    const GArray *needed_by = rok_trace_tensor(trace, t)->needed_by;
    for (guint i = 0; i < needed_by->len; i++)
      sim->bwd_need[g_array_index(needed_by, guint, i) + 1]++;
  }
  compute_grads(sim, last);
  for (guint o = 0; o < sim->n_ops; o++) {
    sim->fwd_rel[o + 1] += sim->fwd_rel[o];
    sim->bwd_need[o + 1] += sim->bwd_need[o];
  }
  g_autofree guint *fill_rel = g_memdup2(sim->fwd_rel, sizeof(guint) * sim->n_ops);
  g_autofree guint *fill_need = g_memdup2(sim->bwd_need, sizeof(guint) * sim->n_ops);
  sim->fwd_rel_ids = g_new(guint, MAX(sim->fwd_rel[sim->n_ops], 1));
  sim->bwd_need_ids = g_new(guint, MAX(sim->bwd_need[sim->n_ops], 1));
  for (guint t = 0; t < sim->n_tensors; t++) {
    sim->fwd_rel_ids[fill_rel[last[t]]++] = t;
    const GArray *needed_by = rok_trace_tensor(trace, t)->needed_by;
    for (guint i = 0; i < needed_by->len; i++)
      sim->bwd_need_ids[fill_need[g_array_index(needed_by, guint, i)]++] = t;
  }
}

/* The module of an op: within a layer its name's first two components
 * ("layer3.attn" of "layer3.attn.qkv"), outside the layers the first. */
static void number_modules(RokSim *sim) {
  const char *prev = NULL;
  gsize prev_len = 0;
  guint module = 0;
  for (guint i = 0; i < sim->n_ops; i++) {
    const RokOp *op = rok_trace_op(sim->trace, i);
    const char *dot = strchr(op->name, '.');
    if (dot != NULL && op->layer >= 0 && strchr(dot + 1, '.') != NULL)
      dot = strchr(dot + 1, '.');
    gsize len = dot != NULL ? (gsize)(dot - op->name) : strlen(op->name);
    if (i > 0 && (len != prev_len || strncmp(prev, op->name, len) != 0))
      module++;
    sim->op_module[i] = module;
    prev = op->name;
    prev_len = len;
  }
}

RokSim *rok_sim_new(const RokTrace *trace, const RokHw *hw, GError **error) {
  g_return_val_if_fail(trace != NULL && hw != NULL, NULL);
  if (!check_hw(hw, error) || !check_magnitude(trace, hw, error))
    return NULL;
  if (trace->ops->len == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "trace %s has no ops to simulate",
                trace->model_name ? trace->model_name : "(unnamed)");
    return NULL;
  }
  RokSim *sim = g_new0(RokSim, 1);
  sim->trace = trace;
  sim->hw = hw;
  sim->n_ops = trace->ops->len;
  sim->n_tensors = trace->tensors->len;
  sim->fwd_ns = g_new0(gint64, sim->n_ops);
  sim->bwd_ns = g_new0(gint64, sim->n_ops);
  sim->bwd_first = g_new0(double, sim->n_ops);
  sim->bwd_first_idle = g_new0(gboolean, sim->n_ops);
  sim->grad_start_bytes = g_new0(guint64, sim->n_ops);
  sim->grad_end_bytes = g_new0(guint64, sim->n_ops);
  sim->out_bytes = g_new0(guint64, sim->n_ops);
  sim->fwd_uses = g_new0(guint, MAX(sim->n_tensors, 1));
  sim->fwd_rel = g_new0(guint, sim->n_ops + 1);
  sim->bwd_need = g_new0(guint, sim->n_ops + 1);
  sim->op_module = g_new0(guint, sim->n_ops);
  sim->comm_fwd_ns = g_new0(gint64, sim->n_ops);
  sim->comm_bwd_ns = g_new0(gint64, sim->n_ops);
  sim->hidden_bwd_ns = g_new0(gint64, sim->n_ops);
  compute_ops(sim);
  compute_lists(sim);
  number_modules(sim);
  sim->optimizer_ns = optimizer_ns(trace, hw);
  sim_comm_ops(sim);
  sim_comm_dp(sim);
  sim->nvme_read_speed = array_speed(hw, hw->nvme.read_bandwidth, rok_hw_nvme_latency(hw, FALSE));
  sim->nvme_write_speed = array_speed(hw, hw->nvme.write_bandwidth, rok_hw_nvme_latency(hw, TRUE));
  sim_program_init(&sim->prog, sim->n_ops, sim->n_tensors);
  sim_order_ranges(sim);
  sim_engine_init(&sim->engine, sim);
  return sim;
}

void rok_sim_free(RokSim *sim) {
  if (sim == NULL)
    return;
  sim_engine_clear(&sim->engine);
  sim_program_clear(&sim->prog);
  sim_order_clear(&sim->order);
  g_free(sim->fwd_ns);
  g_free(sim->bwd_ns);
  g_free(sim->bwd_first);
  g_free(sim->bwd_first_idle);
  g_free(sim->comm_fwd_ns);
  g_free(sim->comm_bwd_ns);
  g_free(sim->hidden_bwd_ns);
  g_free(sim->grad_start_bytes);
  g_free(sim->grad_end_bytes);
  g_free(sim->out_bytes);
  g_free(sim->fwd_uses);
  g_free(sim->fwd_rel);
  g_free(sim->fwd_rel_ids);
  g_free(sim->bwd_need);
  g_free(sim->bwd_need_ids);
  g_free(sim->op_module);
  g_free(sim);
}

gint64 sim_seed_rebuild_ns(const RokSim *sim, guint op, guint64 bytes) {
  const RokHw *hw = sim->hw;
  const RokOp *o = rok_trace_op(sim->trace, op);
  double rate = rok_hw_op_rate(rok_hw_op_rates(hw, rok_op_kind_name(o->kind)), ROK_HW_REBUILD, (double)bytes);
  if (!(rate > 0))
    rate = hw->gpu.hbm_bandwidth;
  return (gint64)llround((double)bytes / rate * 1e9) + hw->gpu.launch_overhead;
}

gint64 rok_sim_op_ns(const RokSim *sim, guint op, gboolean backward) {
  g_return_val_if_fail(op < sim->n_ops, 0);
  return backward ? sim->bwd_ns[op] : sim->fwd_ns[op];
}

static gboolean check_plan(const RokSim *sim, const RokStepPlan *plan, GError **error) {
  if (plan->n_tensors != sim->n_tensors) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "plan has %u decisions, trace %s has %u tensors",
                plan->n_tensors, sim->trace->model_name ? sim->trace->model_name : "(unnamed)", sim->n_tensors);
    return FALSE;
  }
  if (plan->options.detail_micro_batches == 0) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_INPUT,
                        "plan: at least one micro-batch must be simulated in detail");
    return FALSE;
  }
  return TRUE;
}

RokSimResult *rok_sim_run(RokSim *sim, const RokStepPlan *plan, GError **error) {
  g_return_val_if_fail(sim != NULL && plan != NULL, NULL);
  if (!check_plan(sim, plan, error) || !sim_program_build(sim, plan, error))
    return NULL;
  sim_order_items(sim);
  if (!sim_engine_run(&sim->engine, plan, error))
    return NULL;
  return sim_result_new(sim);
}

void rok_sim_set_record(RokSim *sim, gboolean record) {
  sim->engine.record = record; /* the engine keeps it across runs */
}

static RokSimResult *simulate(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, gboolean record,
                              GError **error) {
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, error);
  if (sim == NULL)
    return NULL;
  rok_sim_set_record(sim, record);
  return rok_sim_run(sim, plan, error);
}

RokSimResult *rok_simulate(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, GError **error) {
  return simulate(trace, hw, plan, FALSE, error);
}

RokSimResult *rok_simulate_recorded(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, GError **error) {
  return simulate(trace, hw, plan, TRUE, error);
}
