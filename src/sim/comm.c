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

gint64 sim_send_ns(const RokTrace *trace, const RokHw *hw) {
  const RokModel *m = trace->model;
  if (m == NULL || m->pipeline_parallel < 2)
    return 0;
  /* What a stage sends: its residual stream for one micro-batch, split by
   * sequence under sequence parallelism (Megatron's scatter-gather). */
  guint64 tokens = m->seq_len * m->micro_batch / (m->sequence_parallel ? m->tensor_parallel : 1);
  double bytes = (double)(tokens * m->hidden * rok_dtype_bytes(m->dtype));
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

/* Megatron's collectives around one op, forward and backward. Without
 * sequence parallelism: an all-reduce of a row-parallel output (and of
 * the vocabulary-parallel embedding's) in forward, of a column-parallel
 * input's gradient in backward. With it: an all-gather of the sequence-
 * split input before a column-parallel linear (again in backward, to
 * compute the weight gradient) and a reduce-scatter of its input
 * gradient; a reduce-scatter after a row-parallel linear and an all-
 * gather of its output gradient in backward. */
static void tp_op(const RokModel *m, const RokHw *hw, const RokOp *op, gint64 *fwd, gint64 *bwd) {
  guint64 t = m->tensor_parallel;
  gboolean inter = t > hw->interconnect.gpus_per_node, sp = m->sequence_parallel;
  /* The gathered activation: every token of the micro-batch, all of h. */
  guint64 tokens = op->dims[1]; /* linear: [1, rows, out, in]; embedding: [1, tokens, h, vocab] */
  double bytes = (double)(tokens * m->hidden * rok_dtype_bytes(m->dtype));
  double ar = rok_hw_collective_s(hw, ROK_COLLECTIVE_ALL_REDUCE, bytes, t, inter);
  double ag = rok_hw_collective_s(hw, ROK_COLLECTIVE_ALL_GATHER, bytes, t, inter);
  double rs = rok_hw_collective_s(hw, ROK_COLLECTIVE_REDUCE_SCATTER, bytes, t, inter);
  *fwd = *bwd = 0;
  switch (op_role(op)) {
  case ROLE_COLUMN:
  case ROLE_HEAD:
    *fwd = ns_of(sp ? ag : 0);
    *bwd = ns_of(sp ? ag + rs : ar);
    break;
  case ROLE_ROW:
    *fwd = ns_of(sp ? rs : ar);
    *bwd = ns_of(sp ? ag : 0);
    break;
  case ROLE_EMBEDDING:
    *fwd = ns_of(sp ? rs : ar);
    break;
  default:
    break;
  }
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

/* DeepSpeed's ZeRO-3 gathers a layer's parameters before its forward and
 * again before its backward, and reduce-scatters its gradients after it,
 * for every micro-batch, prefetching so that the gather overlaps the
 * previous layer's compute: what the compute does not hide is charged to
 * the layer's first op in each direction. */
static void zero3(RokSim *sim, const RokModel *m) {
  const RokTrace *trace = sim->trace;
  guint n = trace->layers;
  guint64 d = m->data_parallel;
  gboolean inter = m->tensor_parallel * d > sim->hw->interconnect.gpus_per_node;
  g_autofree double *weights = g_new0(double, MAX(n, 1));
  g_autofree gint64 *fwd = g_new0(gint64, MAX(n, 1)), *bwd = g_new0(gint64, MAX(n, 1));
  g_autofree guint *first = g_new(guint, MAX(n, 1)), *last = g_new(guint, MAX(n, 1));
  layer_weights(trace, weights);
  for (guint l = 0; l < n; l++)
    first[l] = last[l] = ROK_NO_ID;
  for (guint o = 0; o < sim->n_ops; o++) {
    gint l = rok_trace_op(trace, o)->layer;
    if (l < 0)
      continue;
    fwd[l] += sim->fwd_ns[o];
    bwd[l] += sim->bwd_ns[o];
    first[l] = MIN(first[l], o);
    last[l] = last[l] == ROK_NO_ID ? o : MAX(last[l], o);
  }
  for (guint l = 0; l < n; l++) {
    if (first[l] == ROK_NO_ID)
      continue;
    /* A gathered shard is the whole layer: d ranks each hold 1/d. */
    gint64 ag = ns_of(rok_hw_collective_s(sim->hw, ROK_COLLECTIVE_ALL_GATHER, weights[l], d, inter));
    gint64 rs = ns_of(rok_hw_collective_s(sim->hw, ROK_COLLECTIVE_REDUCE_SCATTER, weights[l], d, inter));
    gint64 exposed_fwd = MAX(ag - fwd[l], 0), exposed_bwd = MAX(ag + rs - bwd[l], 0);
    sim->comm_fwd_ns[first[l]] += exposed_fwd;
    sim->comm_bwd_ns[last[l]] += exposed_bwd;
    sim->zero3_ns += ag * 2 + rs;
    sim->zero3_exposed_ns += exposed_fwd + exposed_bwd;
  }
}

void sim_comm_ops(RokSim *sim) {
  const RokModel *m = sim->trace->model;
  if (m == NULL || sim->hw->interconnect.gpus_per_node == 0)
    return;
  for (guint o = 0; o < sim->n_ops; o++) {
    if (m->tensor_parallel > 1)
      tp_op(m, sim->hw, rok_trace_op(sim->trace, o), &sim->comm_fwd_ns[o], &sim->comm_bwd_ns[o]);
  }
  if (m->zero_stage >= 3 && m->data_parallel > 1)
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
void sim_comm_dp(RokSim *sim) {
  const RokModel *m = sim->trace->model;
  if (m == NULL || sim->hw->interconnect.gpus_per_node == 0 || m->data_parallel < 2 || m->zero_stage >= 3)
    return;
  guint64 d = m->data_parallel, params = sim->trace->fixed.params_per_gpu;
  gboolean inter = m->tensor_parallel * d > sim->hw->interconnect.gpus_per_node;
  gboolean mixed = m->precision == ROK_PRECISION_MIXED && m->dtype != ROK_DTYPE_FP32;
  double grad_bytes = (double)params * (mixed ? 4 : (double)rok_dtype_bytes(m->dtype));
  double reduce = m->zero_stage >= 1
                      ? rok_hw_collective_s(sim->hw, ROK_COLLECTIVE_REDUCE_SCATTER, grad_bytes, d, inter)
                      : rok_hw_collective_s(sim->hw, ROK_COLLECTIVE_ALL_REDUCE, grad_bytes, d, inter);
  double gather = m->zero_stage >= 1 ? rok_hw_collective_s(sim->hw, ROK_COLLECTIVE_ALL_GATHER,
                                                           (double)(params * rok_dtype_bytes(m->dtype)), d, inter)
                                     : 0;
  double buckets = ceil((double)params / MAX(40e6, 1e6 * (double)d));
  double backward = 0;
  for (guint o = 0; o < sim->n_ops; o++)
    backward += (double)sim->bwd_ns[o] / 1e9;
  double exposed = MAX(reduce - backward, reduce / MAX(buckets, 1)) + gather;
  sim->dp_ns = ns_of(reduce + gather);
  sim->dp_exposed_ns = ns_of(exposed);
  sim->optimizer_ns += sim->dp_exposed_ns;
}
