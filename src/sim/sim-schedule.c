/* The producing side of the schedule: a plan simulated with every
 * micro-batch in detail, its action log becoming the program, with the
 * communication the simulator folds into op times split out as comm
 * actions (collectives on the comm stream, pipeline sends on p2p). */
#include "rok/sim.h"
#include "sim-private.h"

typedef struct {
  const RokSim *sim;
  const RokSimResult *log;
  SimComm comm;
  GArray *actions, *deps; /* the program being made */
  guint *map;             /* old action -> the new action that ends it */
  guint last_on[ROK_STREAM_ALL_COUNT - ROK_STREAM_COUNT]; /* the latest comm / p2p action */
} Split;

static guint append(Split *sp, RokAction a, const guint *deps, guint n, guint extra) {
  a.deps_first = sp->deps->len;
  for (guint d = 0; d < n; d++)
    g_array_append_val(sp->deps, deps[d]);
  if (extra != ROK_NO_ID) { /* the stream's previous action, unless already there */
    gboolean seen = FALSE;
    for (guint d = 0; d < n; d++)
      seen |= deps[d] == extra;
    if (!seen)
      g_array_append_val(sp->deps, extra);
  }
  a.deps_count = sp->deps->len - a.deps_first;
  g_array_append_val(sp->actions, a);
  return sp->actions->len - 1;
}

static guint append_comm(Split *sp, const SimCommPart *p, RokStream stream, guint mb, gint64 start, const guint *deps,
                         guint n) {
  RokAction a = {.kind = ROK_ACTION_COMM, .stream = stream, .micro_batch = mb, .op = ROK_NO_ID, .tensor = ROK_NO_ID,
                 .bytes = p->bytes, .collective = p->collective, .group = p->group, .start_ns = start,
                 .end_ns = start + p->ns};
  guint *last = &sp->last_on[stream - ROK_STREAM_COUNT];
  *last = append(sp, a, deps, n, *last);
  return *last;
}

/* The comm parts of a compute action; 0 for other actions. */
static guint parts_of(const Split *sp, const RokAction *a, const SimCommPart **parts) {
  guint slot;
  if (a->kind == ROK_ACTION_FORWARD || a->kind == ROK_ACTION_RECOMPUTE)
    slot = 2 * a->op;
  else if (a->kind == ROK_ACTION_BACKWARD)
    slot = 2 * a->op + 1;
  else if (a->kind == ROK_ACTION_OPTIMIZER)
    slot = 2 * sp->sim->n_ops;
  else
    return 0;
  *parts = &g_array_index(sp->comm.parts, SimCommPart, sp->comm.first[slot]);
  return sp->comm.first[slot + 1] - sp->comm.first[slot];
}

/* Old action i as its collectives before, its compute, its collectives
 * after, chained; what waited for i waits for the last of them. */
static void split_action(Split *sp, guint i) {
  RokAction a = g_array_index(sp->log->actions, RokAction, i);
  g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint d = 0; d < a.deps_count; d++)
    g_array_append_val(deps, sp->map[g_array_index(sp->log->deps, guint, a.deps_first + d)]);
  const SimCommPart *parts = NULL;
  guint n = parts_of(sp, &a, &parts);
  gint64 before = 0, after = 0;
  for (guint k = 0; k < n; k++)
    *(parts[k].after ? &after : &before) += parts[k].ns;
  /* A seed-only rebuild takes no time and no collective. */
  if (n == 0 || a.end_ns - a.start_ns < before + after) {
    sp->map[i] = append(sp, a, (const guint *)deps->data, deps->len, ROK_NO_ID);
    return;
  }
  gint64 t = a.start_ns;
  for (guint k = 0; k < n; k++)
    if (!parts[k].after) {
      guint id = append_comm(sp, &parts[k], ROK_STREAM_COMM, a.micro_batch, t, (const guint *)deps->data, deps->len);
      t += parts[k].ns;
      g_array_set_size(deps, 1);
      g_array_index(deps, guint, 0) = id;
    }
  gint64 end = a.end_ns;
  a.start_ns = t;
  a.end_ns = end - after;
  guint id = append(sp, a, (const guint *)deps->data, deps->len, ROK_NO_ID);
  t = a.end_ns;
  for (guint k = 0; k < n; k++)
    if (parts[k].after) {
      id = append_comm(sp, &parts[k], ROK_STREAM_COMM, a.micro_batch, t, &id, 1);
      t += parts[k].ns;
    }
  sp->map[i] = id;
}

/* The forward or backward block (micro-batch, chunk, direction) of a
 * compute action; FALSE for the rest (a recompute is inside a backward). */
static gboolean block_key(const RokTrace *trace, const RokAction *a, guint64 *key) {
  if (a->kind != ROK_ACTION_FORWARD && a->kind != ROK_ACTION_BACKWARD)
    return FALSE;
  *key = (guint64)a->micro_batch << 32 | (guint64)rok_trace_op_chunk(trace, a->op) << 1 |
         (a->kind == ROK_ACTION_BACKWARD);
  return TRUE;
}

/* Per action: it ends its block (the next forward or backward action is
 * of another block). */
static gboolean *block_ends(const Split *sp) {
  const GArray *log = sp->log->actions;
  gboolean *ends = g_new0(gboolean, MAX(log->len, 1));
  gboolean have_next = FALSE;
  guint64 next = 0, key = 0;
  for (guint i = log->len; i-- > 0;)
    if (block_key(sp->sim->trace, &g_array_index(log, RokAction, i), &key)) {
      ends[i] = !have_next || key != next;
      have_next = TRUE;
      next = key;
    }
  return ends;
}

/* After a block, Megatron's send of its output to the next stage (of the
 * gradient to the previous one), unless the model ends (starts) here:
 * a placeholder on the p2p stream that nothing on this stage waits for. */
static void send_after(Split *sp, guint i) {
  const RokTrace *trace = sp->sim->trace;
  const RokAction *a = &g_array_index(sp->log->actions, RokAction, i);
  guint model_chunk = rok_trace_op_chunk(trace, a->op) * trace->stages + trace->stage;
  gboolean backward = a->kind == ROK_ACTION_BACKWARD;
  if ((backward && model_chunk == 0) || (!backward && model_chunk + 1 == trace->stages * trace->chunks))
    return;
  SimCommPart p = {.collective = ROK_COLLECTIVE_SEND, .group = ROK_COMM_PIPELINE, .bytes = sp->comm.send_bytes,
                   .ns = sp->comm.send_ns};
  guint last = sp->last_on[ROK_STREAM_P2P - ROK_STREAM_COUNT];
  gint64 start = a->end_ns;
  if (last != ROK_NO_ID) /* one send at a time on the stream */
    start = MAX(start, g_array_index(sp->actions, RokAction, last).end_ns);
  append_comm(sp, &p, ROK_STREAM_P2P, a->micro_batch, start, &sp->map[i], 1);
}

static void split_log(Split *sp) {
  guint n = sp->log->actions->len;
  sp->actions = g_array_sized_new(FALSE, FALSE, sizeof(RokAction), n + sp->comm.parts->len);
  sp->deps = g_array_new(FALSE, FALSE, sizeof(guint));
  sp->map = g_new(guint, MAX(n, 1));
  for (guint s = 0; s < G_N_ELEMENTS(sp->last_on); s++)
    sp->last_on[s] = ROK_NO_ID;
  g_autofree gboolean *ends = sp->comm.send_ns > 0 ? block_ends(sp) : NULL;
  for (guint i = 0; i < n; i++) {
    split_action(sp, i);
    if (ends != NULL && ends[i])
      send_after(sp, i);
  }
  g_free(sp->map);
}

RokSchedule *rok_sim_schedule_new(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const char *strategy,
                                  guint64 budget_bytes, GError **error) {
  g_autoptr(RokStepPlan) run = rok_step_plan_copy(plan);
  run->options.detail_micro_batches = (guint)MAX(trace->micro_batches_per_step, 1);
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, error);
  if (sim == NULL)
    return NULL;
  rok_sim_set_record(sim, TRUE);
  g_autoptr(RokSimResult) result = rok_sim_run(sim, run, error);
  if (result == NULL)
    return NULL;
  Split sp = {.sim = sim, .log = result};
  sim_comm_parts(sim, &sp.comm);
  if (sp.comm.parts->len == 0 && sp.comm.send_ns == 0) { /* nothing to split: the log as it is */
    sp.actions = g_steal_pointer(&result->actions);
    sp.deps = g_steal_pointer(&result->deps);
  } else {
    split_log(&sp);
  }
  sim_comm_clear(&sp.comm);
  return rok_schedule_new(trace, hw, run, strategy, budget_bytes, rok_sim_result_to_json(result, trace), sp.actions,
                          sp.deps);
}
