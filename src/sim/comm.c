/* Communication between the GPUs of a job, as the simulator costs it. */
#include "sim-private.h"

#include <math.h>
#include <string.h>

/* Megatron-LM places tensor-parallel ranks next to each other, then
 * data-parallel, then pipeline-parallel ranks: neighbouring stages are
 * tensor_parallel × data_parallel ranks apart, in another node once that
 * reaches the node's GPUs. */
static gboolean stages_cross_nodes(const RokModel *m, const RokHw *hw) {
  return m->tensor_parallel * m->data_parallel >= hw->interconnect.gpus_per_node;
}

/* What a stage sends: its residual stream for one micro-batch, split by
 * sequence under sequence parallelism (Megatron's scatter-gather). */
static guint64 send_bytes(const RokModel *m) {
  guint64 tokens = m->seq_len * m->micro_batch / (m->sequence_parallel ? m->tensor_parallel : 1);
  return tokens * m->hidden * rok_dtype_bytes(m->dtype);
}

gint64 sim_send_ns(const RokTrace *trace, const RokHw *hw) {
  const RokModel *m = trace->model;
  if (m == NULL || m->pipeline_parallel < 2)
    return 0;
  double bytes = (double)send_bytes(m);
  return (gint64)llround(1e9 * rok_hw_collective_s(hw, ROK_COLLECTIVE_SEND, bytes, 2, stages_cross_nodes(m, hw)));
}

/* ---- tensor parallelism: on the compute stream's critical path ---- */

/* The role of a linear in Megatron's tensor parallelism, by its name:
 * column-parallel (input replicated or sequence-gathered, output split),
 * row-parallel (input split, output reduced), or the vocabulary-parallel
 * output head; 0 for ops without collectives. */
enum { ROLE_NONE, ROLE_COLUMN, ROLE_ROW, ROLE_HEAD, ROLE_EMBEDDING };

static int op_role(const RokOp *op) {
  const char *dot = strrchr(op->name, '.');
  const char *leaf = dot ? dot + 1 : op->name;
  if (op->kind == ROK_OP_EMBEDDING)
    return ROLE_EMBEDDING;
  if (op->kind != ROK_OP_LINEAR)
    return ROLE_NONE;
  if (g_str_equal(leaf, "logits"))
    return ROLE_HEAD;
  if (g_str_equal(leaf, "qkv") || g_str_equal(leaf, "fc1") || g_str_equal(leaf, "gate_up") ||
      g_str_equal(leaf, "q") || g_str_equal(leaf, "kv"))
    return ROLE_COLUMN;
  if (g_str_equal(leaf, "proj") || g_str_equal(leaf, "fc2"))
    return ROLE_ROW;
  return ROLE_NONE;
}

static gint64 ns_of(double seconds) {
  return (gint64)llround(seconds * 1e9);
}

static guint part(SimCommPart *out, RokCollective collective, guint64 bytes, gint64 ns, gboolean after) {
  *out = (SimCommPart){.collective = collective, .group = ROK_COMM_TENSOR_PARALLEL, .bytes = bytes, .ns = ns,
                       .after = after};
  return 1;
}

/* What of a collective a GEMM of `hide` ns leaves exposed. */
static gint64 exposed(gint64 ns, gint64 hide) {
  return MAX(ns - hide, 0);
}

/* Megatron's collectives around one op in one direction, into out[0..2).
 * Without sequence parallelism: an all-reduce of a row-parallel output
 * (and of the vocabulary-parallel embedding's) in forward, of a column-
 * parallel input's gradient in backward. With it: an all-gather of the
 * sequence-split input before a column-parallel linear (again in
 * backward, to compute the weight gradient) and a reduce-scatter of its
 * input gradient; a reduce-scatter after a row-parallel linear and an
 * all-gather of its output gradient in backward. Megatron-LM issues a
 * column-parallel backward's collectives asynchronously (since 2021-09,
 * LinearWithGradAccumulationAndAsyncCommunication): the all-gather runs
 * under the input-gradient GEMM, the all-reduce or reduce-scatter under
 * the weight-gradient GEMM, so each costs only what `hide` (one of the
 * two GEMMs: half the op's backward compute) leaves; DeepSpeed's are
 * charged whole. */
static guint tp_parts(const RokModel *m, const RokHw *hw, const RokOp *op, gboolean backward, gint64 bwd_compute_ns,
                      SimCommPart *out) {
  guint64 t = m->tensor_parallel;
  gboolean inter = t > hw->interconnect.gpus_per_node, sp = m->sequence_parallel;
  /* The gathered activation: every token of the micro-batch, all of h. */
  guint64 tokens = op->dims[1]; /* linear: [1, rows, out, in]; embedding: [1, tokens, h, vocab] */
  guint64 bytes = tokens * m->hidden * rok_dtype_bytes(m->dtype);
  double ar = rok_hw_collective_s(hw, ROK_COLLECTIVE_ALL_REDUCE, (double)bytes, t, inter);
  double ag = rok_hw_collective_s(hw, ROK_COLLECTIVE_ALL_GATHER, (double)bytes, t, inter);
  double rs = rok_hw_collective_s(hw, ROK_COLLECTIVE_REDUCE_SCATTER, (double)bytes, t, inter);
  switch (op_role(op)) {
  case ROLE_COLUMN:
  case ROLE_HEAD:
    if (!backward)
      return sp ? part(out, ROK_COLLECTIVE_ALL_GATHER, bytes, ns_of(ag), FALSE) : 0;
    gint64 hide = m->train.framework == ROK_FRAMEWORK_MEGATRON ? bwd_compute_ns / 2 : 0;
    if (!sp)
      return part(out, ROK_COLLECTIVE_ALL_REDUCE, bytes, exposed(ns_of(ar), hide), TRUE);
    /* The pair rounded as one sum, as the op's time has always been. */
    part(out, ROK_COLLECTIVE_ALL_GATHER, bytes, exposed(ns_of(ag), hide), FALSE);
    return 1 + part(out + 1, ROK_COLLECTIVE_REDUCE_SCATTER, bytes, exposed(ns_of(ag + rs) - ns_of(ag), hide), TRUE);
  case ROLE_ROW:
    if (!backward)
      return part(out, sp ? ROK_COLLECTIVE_REDUCE_SCATTER : ROK_COLLECTIVE_ALL_REDUCE, bytes, ns_of(sp ? rs : ar),
                  TRUE);
    return sp ? part(out, ROK_COLLECTIVE_ALL_GATHER, bytes, ns_of(ag), FALSE) : 0;
  case ROLE_EMBEDDING:
    if (backward)
      return 0;
    return part(out, sp ? ROK_COLLECTIVE_REDUCE_SCATTER : ROK_COLLECTIVE_ALL_REDUCE, bytes, ns_of(sp ? rs : ar),
                TRUE);
  default:
    return 0;
  }
}

static gint64 parts_ns(const SimCommPart *parts, guint n) {
  gint64 ns = 0;
  for (guint i = 0; i < n; i++)
    ns += parts[i].ns;
  return ns;
}

/* `bwd_compute`: the op's backward before its communication; `hidden`:
 * what of the backward's collectives it hides. */
static void tp_op(const RokModel *m, const RokHw *hw, const RokOp *op, gint64 bwd_compute, gint64 *fwd, gint64 *bwd,
                  gint64 *hidden) {
  SimCommPart parts[2];
  *fwd = parts_ns(parts, tp_parts(m, hw, op, FALSE, bwd_compute, parts));
  *bwd = parts_ns(parts, tp_parts(m, hw, op, TRUE, bwd_compute, parts));
  *hidden = parts_ns(parts, tp_parts(m, hw, op, TRUE, 0, parts)) - *bwd;
}

/* ---- ZeRO-3: parameters gathered per layer, prefetched ---- */

/* Parameters of the layer's linears on this rank (the trace's weights). */
static void layer_weights(const RokTrace *trace, double *bytes_per_layer) {
  guint64 elem = trace->model ? rok_dtype_bytes(trace->model->dtype) : 2;
  for (guint o = 0; o < trace->ops->len; o++) {
    const RokOp *op = rok_trace_op(trace, o);
    if (op->kind == ROK_OP_LINEAR && op->layer >= 0)
      bytes_per_layer[op->layer] += (double)(op->dims[2] * op->dims[3] * elem);
  }
}

typedef struct {
  guint first, last; /* its ops; ROK_NO_ID for a layer without any */
  double weights;    /* bytes gathered */
  gint64 ag, rs, exposed_fwd, exposed_bwd;
} Zero3Layer;

/* DeepSpeed's ZeRO-3 gathers a layer's parameters before its forward and
 * again before its backward, and reduce-scatters its gradients after it,
 * for every micro-batch, prefetching so that the gather overlaps the
 * previous layer's compute: what the compute does not hide is charged to
 * the layer's first op in each direction. `folded`: the op times already
 * hold their communication (comm_*_ns), which the layer's compute is not. */
static Zero3Layer *zero3_layers(const RokSim *sim, const RokModel *m, gboolean folded) {
  const RokTrace *trace = sim->trace;
  guint n = trace->layers;
  guint64 d = m->data_parallel;
  gboolean inter = m->tensor_parallel * d > sim->hw->interconnect.gpus_per_node;
  g_autofree double *weights = g_new0(double, MAX(n, 1));
  g_autofree gint64 *fwd = g_new0(gint64, MAX(n, 1)), *bwd = g_new0(gint64, MAX(n, 1));
  Zero3Layer *layers = g_new0(Zero3Layer, MAX(n, 1));
  layer_weights(trace, weights);
  for (guint l = 0; l < n; l++)
    layers[l].first = layers[l].last = ROK_NO_ID;
  for (guint o = 0; o < sim->n_ops; o++) {
    gint l = rok_trace_op(trace, o)->layer;
    if (l < 0)
      continue;
    fwd[l] += sim->fwd_ns[o] - (folded ? sim->comm_fwd_ns[o] : 0);
    bwd[l] += sim->bwd_ns[o] - (folded ? sim->comm_bwd_ns[o] : 0);
    layers[l].first = MIN(layers[l].first, o);
    layers[l].last = layers[l].last == ROK_NO_ID ? o : MAX(layers[l].last, o);
  }
  for (guint l = 0; l < n; l++) {
    Zero3Layer *z = &layers[l];
    /* A gathered shard is the whole layer: d ranks each hold 1/d. */
    z->weights = weights[l];
    z->ag = ns_of(rok_hw_collective_s(sim->hw, ROK_COLLECTIVE_ALL_GATHER, weights[l], d, inter));
    z->rs = ns_of(rok_hw_collective_s(sim->hw, ROK_COLLECTIVE_REDUCE_SCATTER, weights[l], d, inter));
    z->exposed_fwd = MAX(z->ag - fwd[l], 0);
    z->exposed_bwd = MAX(z->ag + z->rs - bwd[l], 0);
  }
  return layers;
}

static void zero3(RokSim *sim, const RokModel *m) {
  g_autofree Zero3Layer *layers = zero3_layers(sim, m, FALSE);
  for (guint l = 0; l < sim->trace->layers; l++) {
    const Zero3Layer *z = &layers[l];
    if (z->first == ROK_NO_ID)
      continue;
    sim->comm_fwd_ns[z->first] += z->exposed_fwd;
    sim->comm_bwd_ns[z->last] += z->exposed_bwd;
    sim->zero3_ns += z->ag * 2 + z->rs;
    sim->zero3_exposed_ns += z->exposed_fwd + z->exposed_bwd;
  }
}

static gboolean has_zero3(const RokModel *m) {
  return m->zero_stage >= 3 && m->data_parallel > 1;
}

void sim_comm_ops(RokSim *sim) {
  const RokModel *m = sim->trace->model;
  if (m == NULL || sim->hw->interconnect.gpus_per_node == 0)
    return;
  for (guint o = 0; o < sim->n_ops; o++) {
    if (m->tensor_parallel > 1)
      tp_op(m, sim->hw, rok_trace_op(sim->trace, o), sim->bwd_ns[o], &sim->comm_fwd_ns[o], &sim->comm_bwd_ns[o],
            &sim->hidden_bwd_ns[o]);
  }
  if (has_zero3(m))
    zero3(sim, m);
  for (guint o = 0; o < sim->n_ops; o++) {
    sim->fwd_ns[o] += sim->comm_fwd_ns[o];
    sim->bwd_ns[o] += sim->comm_bwd_ns[o];
    sim->comm_mb_ns += sim->comm_fwd_ns[o] + sim->comm_bwd_ns[o];
  }
}

/* ---- data parallelism: the gradient reduction at the end of the step ---- */

/* Megatron-LM reduces gradients once per step (fp32 main gradients under
 * mixed precision), in buckets of max(40M, 1M·d) parameters, overlapped
 * with the last micro-batch's backward (--overlap-grad-reduce): all of it
 * but what that backward cannot hide, and at least the last bucket, is
 * exposed. The distributed optimizer (ZeRO-1/2) reduce-scatters and
 * all-gathers the updated parameters after the step; without it one
 * all-reduce. ZeRO-3 reduces per layer and micro-batch (zero3()). */
typedef struct {
  RokCollective reduce_kind;
  double grad_bytes, param_bytes;
  double reduce, gather, exposed; /* seconds */
} DpComm;

/* The reduction of a step (after sim_comm_ops); FALSE without one. */
static gboolean dp_comm(const RokSim *sim, DpComm *dp) {
  const RokModel *m = sim->trace->model;
  if (m == NULL || sim->hw->interconnect.gpus_per_node == 0 || m->data_parallel < 2 || m->zero_stage >= 3)
    return FALSE;
  guint64 d = m->data_parallel, params = sim->trace->fixed.params_per_gpu;
  gboolean inter = m->tensor_parallel * d > sim->hw->interconnect.gpus_per_node;
  gboolean mixed = m->precision == ROK_PRECISION_MIXED && m->dtype != ROK_DTYPE_FP32;
  dp->grad_bytes = (double)params * (mixed ? 4 : (double)rok_dtype_bytes(m->dtype));
  dp->param_bytes = (double)(params * rok_dtype_bytes(m->dtype));
  dp->reduce_kind = m->zero_stage >= 1 ? ROK_COLLECTIVE_REDUCE_SCATTER : ROK_COLLECTIVE_ALL_REDUCE;
  dp->reduce = rok_hw_collective_s(sim->hw, dp->reduce_kind, dp->grad_bytes, d, inter);
  dp->gather = m->zero_stage >= 1 ? rok_hw_collective_s(sim->hw, ROK_COLLECTIVE_ALL_GATHER, dp->param_bytes, d, inter)
                                  : 0;
  double buckets = ceil((double)params / MAX(40e6, 1e6 * (double)d));
  double backward = 0;
  for (guint o = 0; o < sim->n_ops; o++)
    backward += (double)sim->bwd_ns[o] / 1e9;
  dp->exposed = MAX(dp->reduce - backward, dp->reduce / MAX(buckets, 1)) + dp->gather;
  return TRUE;
}

/* Megatron-LM reduces gradients once per step (fp32 main gradients under
 * mixed precision), in buckets of max(40M, 1M·d) parameters, overlapped
 * with the last micro-batch's backward (--overlap-grad-reduce): all of it
 * but what that backward cannot hide, and at least the last bucket, is
 * exposed. The distributed optimizer (ZeRO-1/2) reduce-scatters and
 * all-gathers the updated parameters after the step; without it one
 * all-reduce. ZeRO-3 reduces per layer and micro-batch (zero3()). */
void sim_comm_dp(RokSim *sim) {
  DpComm dp;
  if (!dp_comm(sim, &dp))
    return;
  sim->dp_ns = ns_of(dp.reduce + dp.gather);
  sim->dp_exposed_ns = ns_of(dp.exposed);
  sim->optimizer_ns += sim->dp_exposed_ns;
}

/* ---- the parts of each op's time, for schedules ---- */

static void add_part(GArray *parts, RokCollective collective, RokCommGroup group, double bytes, gint64 ns,
                     gboolean after) {
  SimCommPart p = {.collective = collective, .group = group, .bytes = (guint64)bytes, .ns = ns, .after = after};
  if (ns > 0)
    g_array_append_val(parts, p);
}

/* Op o in one direction: ZeRO-3's exposed gathers (charged where zero3()
 * charges them, backward's split between gather and reduce-scatter by
 * their full times), then its tensor-parallel collectives. */
static void op_parts(const RokSim *sim, const Zero3Layer *layers, guint o, gboolean backward, GArray *parts) {
  const RokModel *m = sim->trace->model;
  gint l = rok_trace_op(sim->trace, o)->layer;
  if (layers != NULL && l >= 0 && !backward && layers[l].first == o)
    add_part(parts, ROK_COLLECTIVE_ALL_GATHER, ROK_COMM_ZERO3, layers[l].weights, layers[l].exposed_fwd, FALSE);
  if (layers != NULL && l >= 0 && backward && layers[l].last == o) {
    const Zero3Layer *z = &layers[l];
    gint64 ag = z->ag + z->rs > 0 ? (gint64)llround((double)z->exposed_bwd * (double)z->ag / (double)(z->ag + z->rs)) : 0;
    add_part(parts, ROK_COLLECTIVE_ALL_GATHER, ROK_COMM_ZERO3, z->weights, ag, FALSE);
    add_part(parts, ROK_COLLECTIVE_REDUCE_SCATTER, ROK_COMM_ZERO3, z->weights, z->exposed_bwd - ag, FALSE);
  }
  if (m->tensor_parallel > 1) {
    SimCommPart tp[2];
    guint n = tp_parts(m, sim->hw, rok_trace_op(sim->trace, o), backward, sim->bwd_ns[o] - sim->comm_bwd_ns[o], tp);
    for (guint i = 0; i < n; i++)
      add_part(parts, tp[i].collective, tp[i].group, (double)tp[i].bytes, tp[i].ns, tp[i].after);
  }
}

void sim_comm_parts(const RokSim *sim, SimComm *comm) {
  const RokModel *m = sim->trace->model;
  guint slots = 2 * sim->n_ops + 1;
  *comm = (SimComm){.parts = g_array_new(FALSE, FALSE, sizeof(SimCommPart)), .first = g_new0(guint, slots + 1)};
  gboolean any = m != NULL && sim->hw->interconnect.gpus_per_node > 0;
  g_autofree Zero3Layer *layers = any && has_zero3(m) ? zero3_layers(sim, m, TRUE) : NULL;
  for (guint slot = 0; slot < slots; slot++) {
    comm->first[slot] = comm->parts->len;
    if (any && slot < 2 * sim->n_ops)
      op_parts(sim, layers, slot / 2, slot % 2, comm->parts);
  }
  DpComm dp;
  if (dp_comm(sim, &dp)) {
    gint64 gather = ns_of(dp.gather);
    add_part(comm->parts, dp.reduce_kind, ROK_COMM_DATA_PARALLEL, dp.grad_bytes, sim->dp_exposed_ns - gather, FALSE);
    add_part(comm->parts, ROK_COLLECTIVE_ALL_GATHER, ROK_COMM_DATA_PARALLEL, dp.param_bytes, gather, TRUE);
  }
  comm->first[slots] = comm->parts->len;
  comm->send_ns = sim_send_ns(sim->trace, sim->hw);
  comm->send_bytes = comm->send_ns > 0 ? send_bytes(m) : 0;
}

void sim_comm_clear(SimComm *comm) {
  g_clear_pointer(&comm->parts, g_array_unref);
  g_clear_pointer(&comm->first, g_free);
}
