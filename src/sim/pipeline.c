/* Pipeline parallelism: every stage simulated, then composed into one step.
 *
 * Each stage's own simulation (its micro-batches in Megatron-LM's order,
 * src/sim/order.c) says how long a micro-batch takes through each of its
 * model chunks, forward and backward, stalls and exposed communication
 * included. The composition replays every stage's order over all the
 * step's micro-batches with those times, each block starting when its
 * stage is free and its input has arrived: the previous chunk's forward
 * (or the next chunk's backward) of the same micro-batch plus one send. */
#include "sim-private.h"

#include "rok/core.h"

typedef struct {
  guint p, v;
  guint64 m;
  gint64 *fwd_end, *bwd_end; /* [global chunk · m + micro-batch], -1 until run */
} Ends;

static gint64 *end_of(const Ends *ends, gboolean backward, guint global_chunk, guint mb) {
  return &(backward ? ends->bwd_end : ends->fwd_end)[(gsize)global_chunk * ends->m + mb];
}

/* When block `b` of stage `s` may start as far as its input goes; -1
 * while that input is not known yet. */
static gint64 input_ready(const Ends *ends, guint s, const SimBlock *b, gint64 send_ns) {
  guint g = b->vstage * ends->p + s, last = ends->p * ends->v - 1;
  if (!b->backward)
    return g == 0 ? 0 : *end_of(ends, FALSE, g - 1, b->mb) < 0 ? -1 : *end_of(ends, FALSE, g - 1, b->mb) + send_ns;
  if (g == last) /* the loss is on this stage: its own forward */
    return *end_of(ends, FALSE, g, b->mb);
  gint64 next = *end_of(ends, TRUE, g + 1, b->mb);
  return next < 0 ? -1 : next + send_ns;
}

/* Run stage s's blocks as far as their inputs allow; TRUE if any ran. */
static gboolean run_stage(Ends *ends, guint s, const GArray *blocks, guint *next, gint64 *free_at,
                          const gint64 *fwd_ns, const gint64 *bwd_ns, gint64 send_ns, gint64 *busy) {
  gboolean progress = FALSE;
  while (*next < blocks->len) {
    const SimBlock *b = &g_array_index(blocks, SimBlock, *next);
    gint64 ready = input_ready(ends, s, b, send_ns);
    if (ready < 0)
      break;
    gint64 ns = (b->backward ? bwd_ns : fwd_ns)[s * ends->v + b->vstage];
    gint64 start = MAX(*free_at, ready);
    *free_at = start + ns;
    *busy += ns;
    *end_of(ends, b->backward, b->vstage * ends->p + s, b->mb) = *free_at;
    (*next)++;
    progress = TRUE;
  }
  return progress;
}

gint64 rok_pipeline_step_ns(guint stages, guint chunks, guint64 micro_batches, const gint64 *fwd_ns,
                            const gint64 *bwd_ns, gint64 send_ns, const gint64 *optimizer_ns, gint64 *busy_ns) {
  g_return_val_if_fail(stages > 0 && chunks > 0 && micro_batches > 0, 0);
  Ends ends = {.p = stages, .v = chunks, .m = micro_batches};
  gsize cells = (gsize)stages * chunks * micro_batches;
  ends.fwd_end = g_new(gint64, cells);
  ends.bwd_end = g_new(gint64, cells);
  for (gsize i = 0; i < cells; i++)
    ends.fwd_end[i] = ends.bwd_end[i] = -1;
  GArray **blocks = g_new(GArray *, stages);
  g_autofree guint *next = g_new0(guint, stages);
  g_autofree gint64 *free_at = g_new0(gint64, stages), *busy = g_new0(gint64, stages);
  for (guint s = 0; s < stages; s++) {
    blocks[s] = g_array_new(FALSE, FALSE, sizeof(SimBlock));
    sim_order_blocks(blocks[s], s, stages, chunks, (guint)micro_batches);
  }
  /* Megatron's orders never deadlock: every round runs some block. */
  for (gboolean progress = TRUE; progress;) {
    progress = FALSE;
    for (guint s = 0; s < stages; s++)
      progress |= run_stage(&ends, s, blocks[s], &next[s], &free_at[s], fwd_ns, bwd_ns, send_ns, &busy[s]);
  }
  gint64 step = 0;
  for (guint s = 0; s < stages; s++) {
    g_assert(next[s] == blocks[s]->len);
    step = MAX(step, free_at[s] + (optimizer_ns ? optimizer_ns[s] : 0));
    if (busy_ns)
      busy_ns[s] = busy[s];
    g_array_unref(blocks[s]);
  }
  g_free(blocks);
  g_free(ends.fwd_end);
  g_free(ends.bwd_end);
  return step;
}

/* Every stage's result takes the pipeline's step; what it does not spend
 * on its own blocks and optimizer step is its bubble. */
static void compose(RokSimResult **results, guint n, gint64 send_ns) {
  guint v = results[0]->chunks;
  guint64 m = results[0]->micro_batches;
  g_autofree gint64 *fwd = g_new(gint64, (gsize)n * v), *bwd = g_new(gint64, (gsize)n * v);
  g_autofree gint64 *opt = g_new(gint64, n), *busy = g_new(gint64, n);
  for (guint s = 0; s < n; s++) {
    memcpy(fwd + (gsize)s * v, results[s]->chunk_fwd_ns, sizeof(gint64) * v);
    memcpy(bwd + (gsize)s * v, results[s]->chunk_bwd_ns, sizeof(gint64) * v);
    opt[s] = results[s]->optimizer_ns;
  }
  gint64 step = rok_pipeline_step_ns(n, v, m, fwd, bwd, send_ns, opt, busy);
  for (guint s = 0; s < n; s++) {
    RokSimResult *r = results[s];
    r->send_ns = send_ns;
    r->bubble_ns = MAX(step - busy[s] - opt[s], 0);
    double scale = step > 0 ? (double)r->stage_ns / (double)step : 0; /* the stage's rates over the pipeline's step */
    r->tokens_per_s *= scale;
    r->tokens_per_gpu_s *= scale;
    r->model_flops_per_gpu_s *= scale;
    r->mfu *= scale;
    r->step_ns = step;
    r->step_time_s = (double)step / 1e9;
  }
}

gboolean rok_pipeline_simulate(RokTrace *const *traces, const RokHw *hw, RokStepPlan *const *plans, guint n,
                               gboolean record, RokSimResult **results, GError **error) {
  g_return_val_if_fail(n > 0, FALSE);
  for (guint s = 0; s < n; s++) {
    if (traces[s]->stage != s || traces[s]->stages != n) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "pipeline: trace %u is stage %u of %u, not stage %u of %u", s,
                  traces[s]->stage, traces[s]->stages, s, n);
      return FALSE;
    }
    results[s] = (record ? rok_simulate_recorded : rok_simulate)(traces[s], hw, plans[s], error);
    if (results[s] == NULL) {
      g_prefix_error(error, "stage %u: ", s);
      for (guint i = 0; i < s; i++)
        g_clear_pointer(&results[i], rok_sim_result_free);
      return FALSE;
    }
  }
  compose(results, n, sim_send_ns(traces[0], hw));
  return TRUE;
}
