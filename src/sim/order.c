/* The order in which one pipeline stage runs its micro-batches, as
 * Megatron-LM's schedules run them (megatron/core/pipeline_parallel/
 * schedules.py, read to learn).
 *
 * 1F1B (one model chunk per stage): stage s of p runs w = min(p - s - 1, m)
 * warm-up forwards, then alternates one forward and one backward until every
 * forward has run, then the remaining backwards. Stage s therefore holds
 * min(p - s, m) micro-batches' activations at once; without pipelining
 * (p = 1) the order is forward 0, backward 0, forward 1, ...
 *
 * Interleaved 1F1B (v model chunks per stage, m a multiple of p): the
 * forwards run in groups of p micro-batches per chunk (chunk 0 of micro-
 * batches 0..p-1, chunk 1 of the same, ..., then chunk 0 of p..2p-1), the
 * backwards in the same order with the chunks reversed; stage s runs
 * (p - s - 1)·2 + (v - 1)·p warm-up forwards (all of them when m = p),
 * then one forward and one backward alternately. Stage 0 holds
 * v·p + p - 1 chunk-micro-batches at its peak: p·(1 + (p - 1)/(v·p))
 * micro-batches' worth, Megatron's interleaving memory factor. */
#include "sim-private.h"

static void push(GArray *blocks, guint mb, gboolean backward, guint vstage) {
  SimBlock b = {.mb = mb, .backward = (guint8)backward, .vstage = (guint8)vstage};
  g_array_append_val(blocks, b);
}

/* Virtual micro-batch k of the interleaved schedule as (micro-batch,
 * chunk). */
static void interleaved_block(GArray *blocks, guint k, guint p, guint v, gboolean backward) {
  guint within = k % (p * v), chunk = within / p;
  guint mb = k / (p * v) * p + within % p;
  push(blocks, mb, backward, backward ? v - 1 - chunk : chunk);
}

void sim_order_blocks(GArray *blocks, guint stage, guint stages, guint chunks, guint n_mb) {
  g_array_set_size(blocks, 0);
  n_mb = MAX(n_mb, 1);
  guint p = MAX(stages, 1), v = MAX(chunks, 1);
  if (v == 1) {
    guint warmup = MIN(p - 1 - stage, n_mb);
    for (guint i = 0; i < warmup; i++)
      push(blocks, i, FALSE, 0);
    for (guint i = 0; i + warmup < n_mb; i++) {
      push(blocks, i + warmup, FALSE, 0);
      push(blocks, i, TRUE, 0);
    }
    for (guint i = n_mb - warmup; i < n_mb; i++)
      push(blocks, i, TRUE, 0);
    return;
  }
  guint total = n_mb * v;
  guint warmup = n_mb == p ? total : MIN((p - stage - 1) * 2 + (v - 1) * p, total);
  for (guint k = 0; k < warmup; k++)
    interleaved_block(blocks, k, p, v, FALSE);
  for (guint k = 0; k + warmup < total; k++) {
    interleaved_block(blocks, k + warmup, p, v, FALSE);
    interleaved_block(blocks, k, p, v, TRUE);
  }
  for (guint k = total - MIN(warmup, total); k < total; k++)
    interleaved_block(blocks, k, p, v, TRUE);
}

guint sim_order_detail(const RokTrace *trace, guint detail, guint64 micro_batches) {
  guint64 m = MAX(micro_batches, 1);
  if (trace->chunks > 1) /* the interleaved order repeats only every p micro-batches: all in detail */
    return (guint)m;
  /* The warm-up, then two steady periods: the extrapolation repeats the last. */
  guint64 in_flight = trace->stages > 1 ? trace->stages - trace->stage + 1 : 0;
  return (guint)MIN(m, MAX((guint64)detail, in_flight));
}

guint rok_sim_detailed_micro_batches(const RokTrace *trace, guint detail) {
  return sim_order_detail(trace, MAX(detail, 1), trace->micro_batches_per_step);
}

void sim_order_ranges(RokSim *sim) {
  const RokTrace *trace = sim->trace;
  guint v = MAX(trace->chunks, 1);
  SimOrder *order = &sim->order;
  order->chunks = v;
  order->fwd_lo = g_new0(guint, v + 1);
  order->bwd_lo = g_new0(guint, v + 1);
  order->op_chunk = g_new0(guint, MAX(sim->n_ops, 1));
  for (guint o = sim->n_ops; o-- > 0;) /* from the end: the next layer op's chunk */
    order->op_chunk[o] = rok_trace_op(trace, o)->layer >= 0 || o + 1 == sim->n_ops
                             ? rok_trace_op_chunk(trace, o)
                             : order->op_chunk[o + 1];
  for (guint c = 0; c <= v; c++) {
    guint lo = 0;
    while (lo < sim->n_ops && order->op_chunk[lo] < c)
      lo++;
    order->fwd_lo[c] = lo;
  }
  order->blocks = g_array_new(FALSE, FALSE, sizeof(SimBlock));
  order->block_ns = g_new0(gint64, 2 * v);
  order->block_count = g_new0(guint, 2 * v);
}

void sim_order_block_done(SimOrder *order, const SimBlock *block, gint64 now) {
  guint slot = block->backward * order->chunks + block->vstage;
  order->block_ns[slot] += now - order->block_since;
  order->block_count[slot]++;
  order->block_since = now;
}

/* Backward items run chunk v-1 first: bwd_lo[c] .. bwd_lo[c+1] holds the
 * items of chunk v-1-c. A rebuild belongs to the backward op after it. */
void sim_order_items(RokSim *sim) {
  SimOrder *order = &sim->order;
  const SimProgram *prog = &sim->prog;
  guint n = prog->n_items, v = order->chunks;
  guint chunk = v - 1;
  order->bwd_lo[0] = 0;
  for (guint c = 1; c <= v; c++)
    order->bwd_lo[c] = n;
  for (guint i = n; i-- > 0;) {
    const SimItem *item = sim_item(prog, i);
    if (item->kind == ROK_ACTION_BACKWARD)
      chunk = order->op_chunk[item->op];
    guint position = v - 1 - chunk; /* backward position of this item's chunk */
    order->bwd_lo[position] = i;    /* lowest index seen so far, walking down */
  }
  for (guint c = 1; c < v; c++) /* an empty chunk starts where the next one does */
    order->bwd_lo[c] = MAX(order->bwd_lo[c], order->bwd_lo[c - 1]);
}

void sim_order_clear(SimOrder *order) {
  g_free(order->fwd_lo);
  g_free(order->bwd_lo);
  g_free(order->op_chunk);
  g_free(order->block_ns);
  g_free(order->block_count);
  if (order->blocks)
    g_array_unref(order->blocks);
}
