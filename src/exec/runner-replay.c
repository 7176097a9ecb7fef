/* The device residency of a schedule replayed in its order, before it runs:
 * which outputs each recompute rebuilds (those whose next event is their
 * free: the others it makes only on the way, into scratch), whether it
 * rebuilds dropout masks alone from the seed, which copies each forward
 * checksums on the device, and that every tensor an action reads is in
 * device memory when it runs (a schedule that says otherwise is refused,
 * naming the action). */
#ifdef ROK_WITH_OPENCL

#include "runner-private.h"

typedef struct {
  RunnerProgram *p;
  guint *need; /* per op (CSR): saved tensors its backward reads */
  guint *need_ids;
  GArray *rebuild; /* guint: per recompute action, outputs whose next event is their free */
  guint *rebuild_at, *rebuild_n;
} Replay;

static void index_needs(Replay *b) {
  const RokTrace *trace = b->p->trace;
  guint n_ops = trace->ops->len;
  b->need = g_new0(guint, n_ops + 1);
  for (guint t = 0; t < trace->tensors->len; t++) {
    const GArray *by = rok_trace_tensor(trace, t)->needed_by;
    for (guint i = 0; i < by->len; i++)
      b->need[g_array_index(by, guint, i) + 1]++;
  }
  for (guint o = 0; o < n_ops; o++)
    b->need[o + 1] += b->need[o];
  b->need_ids = g_new(guint, MAX(b->need[n_ops], 1));
  g_autofree guint *fill = g_memdup2(b->need, sizeof(guint) * n_ops);
  for (guint t = 0; t < trace->tensors->len; t++) {
    const GArray *by = rok_trace_tensor(trace, t)->needed_by;
    for (guint i = 0; i < by->len; i++)
      b->need_ids[fill[g_array_index(by, guint, i)]++] = t;
  }
}

/* The action that brings a copy back into device memory. */
static gboolean is_first_read(const RunnerProgram *p, guint id) {
  const RokAction *a = runner_action(p, id);
  guint c = p->actions[id].copy;
  if (a->kind != ROK_ACTION_PREFETCH || c == RUN_NONE)
    return FALSE;
  const RunnerCopy *copy = runner_copy(p, c);
  return copy->nvme_read != RUN_NONE ? id == copy->nvme_read : id == copy->h2d;
}

enum { NEXT_NONE, NEXT_FREE, NEXT_ALLOC };

/* Backwards: a recompute rebuilds those outputs of its op whose next event
 * is their free (the others it computes only on the way, into scratch). */
static void find_rebuilds(Replay *b) {
  RunnerProgram *p = b->p;
  g_autofree guint8 *next = g_new0(guint8, (gsize)p->n_mb * p->n_tensors);
  b->rebuild = g_array_new(FALSE, FALSE, sizeof(guint));
  b->rebuild_at = g_new0(guint, p->n_actions);
  b->rebuild_n = g_new0(guint, p->n_actions);
  for (guint id = p->n_actions; id-- > 0;) {
    const RokAction *a = runner_action(p, id);
    if (a->kind == ROK_ACTION_FREE) {
      next[runner_key(p, a->micro_batch, a->tensor)] = NEXT_FREE;
    } else if (is_first_read(p, id)) {
      next[runner_key(p, a->micro_batch, a->tensor)] = NEXT_ALLOC;
    } else if (a->kind == ROK_ACTION_FORWARD || a->kind == ROK_ACTION_RECOMPUTE) {
      const GArray *outs = rok_trace_op(p->trace, a->op)->outputs;
      b->rebuild_at[id] = b->rebuild->len;
      for (guint i = 0; i < outs->len; i++) {
        guint t = g_array_index(outs, guint, i);
        if (a->kind == ROK_ACTION_RECOMPUTE && next[runner_key(p, a->micro_batch, t)] == NEXT_FREE) {
          g_array_append_val(b->rebuild, t);
          b->rebuild_n[id]++;
        }
        next[runner_key(p, a->micro_batch, t)] = NEXT_ALLOC;
      }
    }
  }
}

static gboolean require(Replay *b, const guint8 *resident, guint id, guint tensor, GError **error) {
  const RunnerProgram *p = b->p;
  const RokAction *a = runner_action(p, id);
  if (resident[runner_key(p, a->micro_batch, tensor)])
    return TRUE;
  const char *what = a->kind == ROK_ACTION_FREE ? "frees" : runner_is_copy(a) ? "copies" : "needs";
  if (a->stream == ROK_STREAM_COMPUTE && a->kind != ROK_ACTION_FREE)
    return runner_program_fail(error, p, id, "'%s' needs tensor '%s', which is not in device memory then",
                            rok_trace_op(p->trace, a->op)->name, runner_tensor_name(p, tensor));
  return runner_program_fail(error, p, id, "it %s tensor '%s', which is not in device memory then", what,
                          runner_tensor_name(p, tensor));
}

static void append_ids(RunnerProgram *p, guint *first, guint *count, const guint *ids, guint n) {
  *first = p->ids->len;
  *count = n;
  g_array_append_vals(p->ids, ids, n);
}

/* Whether a recompute rebuilds only tensors that need no input (dropout
 * masks, functions of the seed), as the simulator then charges it. */
static gboolean seed_only(const Replay *b, guint id) {
  const RunnerProgram *p = b->p;
  const RokAction *a = runner_action(p, id);
  if (a->kind != ROK_ACTION_RECOMPUTE || rok_trace_op(p->trace, a->op)->kind != ROK_OP_DROPOUT || b->rebuild_n[id] == 0)
    return FALSE;
  for (guint k = 0; k < b->rebuild_n[id]; k++) {
    guint t = g_array_index(b->rebuild, guint, b->rebuild_at[id] + k);
    if (rok_trace_tensor(p->trace, t)->recompute_from->len > 0)
      return FALSE;
  }
  return TRUE;
}

/* A forward or a recompute: inputs resident (but for a seed-only one); its
 * outputs (all, or those rebuilt) become resident; a forward checksums the
 * copies it makes. */
static gboolean replay_compute(Replay *b, guint8 *resident, guint id, GError **error) {
  RunnerProgram *p = b->p;
  const RokAction *a = runner_action(p, id);
  const RokOp *op = rok_trace_op(p->trace, a->op);
  p->actions[id].seed_only = seed_only(b, id);
  for (guint i = 0; i < op->inputs->len && !p->actions[id].seed_only; i++)
    if (!require(b, resident, id, g_array_index(op->inputs, guint, i), error))
      return FALSE;
  g_autoptr(GArray) allocs = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GArray) sums = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < op->outputs->len; i++) {
    guint t = g_array_index(op->outputs, guint, i);
    gboolean wanted = a->kind == ROK_ACTION_FORWARD;
    for (guint k = 0; k < b->rebuild_n[id]; k++)
      wanted |= g_array_index(b->rebuild, guint, b->rebuild_at[id] + k) == t;
    guint8 *res = &resident[runner_key(p, a->micro_batch, t)];
    if (wanted && *res && a->kind == ROK_ACTION_FORWARD)
      return runner_program_fail(error, p, id, "its output '%s' is already in device memory", runner_tensor_name(p, t));
    if (!wanted || *res)
      continue;
    *res = 1;
    g_array_append_val(allocs, t);
    guint c = p->copy_of[runner_key(p, a->micro_batch, t)];
    if (a->kind == ROK_ACTION_FORWARD && c != RUN_NONE) {
      g_array_append_val(sums, c);
      runner_copy(p, c)->producer = id;
    }
  }
  append_ids(p, &p->actions[id].allocs, &p->actions[id].n_allocs, (guint *)allocs->data, allocs->len);
  append_ids(p, &p->actions[id].sums, &p->actions[id].n_sums, (guint *)sums->data, sums->len);
  return TRUE;
}

static gboolean replay_one(Replay *b, guint8 *resident, guint id, GError **error) {
  const RunnerProgram *p = b->p;
  const RokAction *a = runner_action(p, id);
  guint8 *res = a->tensor < p->n_tensors ? &resident[runner_key(p, a->micro_batch, a->tensor)] : NULL;
  if (a->kind == ROK_ACTION_FORWARD || a->kind == ROK_ACTION_RECOMPUTE)
    return replay_compute(b, resident, id, error);
  if (a->kind == ROK_ACTION_BACKWARD) {
    for (guint i = b->need[a->op]; i < b->need[a->op + 1]; i++)
      if (!require(b, resident, id, b->need_ids[i], error))
        return FALSE;
    return TRUE;
  }
  if (is_first_read(p, id)) {
    if (*res)
      return runner_program_fail(error, p, id, "tensor '%s' is still in device memory", runner_tensor_name(p, a->tensor));
    *res = 1;
    return TRUE;
  }
  gboolean reads_device = a->kind == ROK_ACTION_FREE || a->stream == ROK_STREAM_D2H ||
                          (a->stream == ROK_STREAM_NVME_WRITE && a->gpudirect);
  if (reads_device && !require(b, resident, id, a->tensor, error))
    return FALSE;
  if (a->kind == ROK_ACTION_FREE)
    *res = 0;
  return TRUE;
}

static gboolean replay(Replay *b, GError **error) {
  RunnerProgram *p = b->p;
  index_needs(b);
  find_rebuilds(b);
  g_autofree guint8 *resident = g_new0(guint8, (gsize)p->n_mb * p->n_tensors);
  for (guint id = 0; id < p->n_actions; id++)
    if (!replay_one(b, resident, id, error))
      return FALSE;
  for (guint i = 0; i < p->copies->len; i++) {
    RunnerCopy *c = runner_copy(p, i);
    if (c->producer == RUN_NONE)
      return runner_program_fail(error, p, c->d2h != RUN_NONE ? c->d2h : c->nvme_write,
                              "tensor '%s' leaves the device before it is produced", runner_tensor_name(p, c->tensor));
  }
  return TRUE;
}

gboolean runner_program_replay(RunnerProgram *p, GError **error) {
  Replay b = {.p = p};
  gboolean ok = replay(&b, error);
  g_free(b.need);
  g_free(b.need_ids);
  if (b.rebuild != NULL)
    g_array_unref(b.rebuild);
  g_free(b.rebuild_at);
  g_free(b.rebuild_n);
  return ok;
}

#endif /* ROK_WITH_OPENCL */
