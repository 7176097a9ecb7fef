/* The schedule compiled for running: every action checked against what the
 * executor can do, each offloaded (micro-batch, tensor) gathered with its
 * legs into a copy, the device residency replayed (runner-replay.c), the
 * dependents of every action, each stream's order, the turns of the legs
 * that hold staging slots, and the sizes the run needs. */
#ifdef ROK_WITH_OPENCL

#include <string.h>

#include "runner-private.h"
#include "rok/core.h"

gboolean runner_program_fail(GError **error, const RunnerProgram *p, guint id, const char *format, ...) {
  const RokAction *a = runner_action(p, id);
  va_list args;
  va_start(args, format);
  g_autofree char *what = g_strdup_vprintf(format, args);
  va_end(args);
  GError *local = g_error_new(ROK_ERROR, ROK_ERROR_INPUT, "schedule action %u (%s on %s, micro-batch %u): %s", id,
                              rok_action_kind_name(a->kind), rok_stream_name(a->stream), a->micro_batch, what);
  rok_schedule_locate_action(p->schedule, id, local);
  g_propagate_error(error, local);
  return FALSE;
}

/* ---- copies ---- */

static RunnerCopy *copy_for(RunnerProgram *p, guint mb, guint tensor) {
  guint *slot = &p->copy_of[runner_key(p, mb, tensor)];
  if (*slot == RUN_NONE) {
    guint64 bytes = rok_trace_tensor(p->trace, tensor)->bytes;
    RunnerCopy c = {.mb = mb,
                 .tensor = tensor,
                 .bytes = bytes,
                 .n_chunks = (guint)((bytes + p->slot_bytes - 1) / p->slot_bytes),
                 .chunk_base = p->n_chunks,
                 .host = p->schedule->plan->decisions[tensor] == ROK_DECISION_OFFLOAD_HOST,
                 .d2h = RUN_NONE,
                 .nvme_write = RUN_NONE,
                 .nvme_read = RUN_NONE,
                 .h2d = RUN_NONE,
                 .producer = RUN_NONE};
    p->n_chunks += c.n_chunks;
    g_array_append_val(p->copies, c);
    *slot = p->copies->len - 1;
  }
  return runner_copy(p, *slot);
}

/* The legs a copy may have, in order: d2h [nvme-write] or nvme-write
 * (gpudirect) on the way out; [nvme-read] h2d or nvme-read (gpudirect) on
 * the way back, after the way out. */
static gboolean add_leg(const RunnerProgram *p, guint id, RunnerCopy *c, GError **error) {
  const RokAction *a = runner_action(p, id);
  const char *name = runner_tensor_name(p, a->tensor);
  RokDecision d = p->schedule->plan->decisions[a->tensor];
  gboolean ssd = a->stream == ROK_STREAM_NVME_WRITE || a->stream == ROK_STREAM_NVME_READ;
  if (!rok_tensor_is_saved(rok_trace_tensor(p->trace, a->tensor)) ||
      (d != ROK_DECISION_OFFLOAD_NVME && d != ROK_DECISION_OFFLOAD_HOST) || (ssd && c->host))
    return runner_program_fail(error, p, id, "tensor '%s' is not offloaded%s (its decision is %s)", name,
                            ssd ? " to the SSDs" : "", rok_decision_name(d));
  gboolean out = c->d2h != RUN_NONE || c->nvme_write != RUN_NONE;
  gboolean back = c->nvme_read != RUN_NONE || c->h2d != RUN_NONE;
  const char *wrong = NULL;
  switch (a->stream) {
  case ROK_STREAM_D2H:
    wrong = out ? "it already left the device" : NULL;
    c->d2h = id;
    break;
  case ROK_STREAM_NVME_WRITE:
    if (c->nvme_write != RUN_NONE || back)
      wrong = "it was already written or read back";
    else if (a->gpudirect && c->d2h != RUN_NONE)
      wrong = "a gpudirect write follows a d2h copy";
    else if (!a->gpudirect && c->d2h == RUN_NONE)
      wrong = "no d2h copy staged it";
    c->nvme_write = id;
    c->gd_write = a->gpudirect;
    break;
  case ROK_STREAM_NVME_READ:
    wrong = back || c->nvme_write == RUN_NONE ? "it is not on the SSDs or was already read" : NULL;
    c->nvme_read = id;
    c->gd_read = a->gpudirect;
    break;
  default: /* h2d: from the SSD read, or from the copy kept in host memory or staging */
    wrong = c->h2d != RUN_NONE || c->gd_read || !out ? "there is no copy to bring back" : NULL;
    c->h2d = id;
  }
  return wrong == NULL || runner_program_fail(error, p, id, "tensor '%s': %s", name, wrong);
}

static gboolean check_target(const RunnerProgram *p, guint id, GError **error) {
  const RokAction *a = runner_action(p, id);
  if (a->micro_batch >= p->n_mb)
    return runner_program_fail(error, p, id, "micro-batch out of range");
  if (a->kind == ROK_ACTION_OPTIMIZER || runner_is_comm(a))
    return TRUE;
  if (a->stream == ROK_STREAM_COMPUTE && a->kind != ROK_ACTION_FREE)
    return a->op < p->trace->ops->len || runner_program_fail(error, p, id, "op %u is not in the trace", a->op);
  if (a->tensor >= p->n_tensors)
    return runner_program_fail(error, p, id, "tensor %u is not in the trace", a->tensor);
  return TRUE;
}

static gboolean gather_copies(RunnerProgram *p, GError **error) {
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    if (!check_target(p, id, error))
      return FALSE;
    if (runner_is_copy(a) && !add_leg(p, id, copy_for(p, a->micro_batch, a->tensor), error))
      return FALSE;
  }
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    p->actions[id].copy = a->tensor < p->n_tensors ? p->copy_of[runner_key(p, a->micro_batch, a->tensor)] : RUN_NONE;
  }
  for (guint i = 0; i < p->copies->len; i++) {
    RunnerCopy *c = runner_copy(p, i);
    if (c->h2d == RUN_NONE && c->nvme_read != RUN_NONE && !c->gd_read)
      return runner_program_fail(error, p, c->nvme_read,
                              "tensor '%s' is read from the SSDs but never copied to the device",
                              runner_tensor_name(p, c->tensor));
    if (c->bytes == 0)
      return runner_program_fail(error, p, c->d2h != RUN_NONE ? c->d2h : c->nvme_write, "tensor '%s' has no bytes to copy",
                              runner_tensor_name(p, c->tensor));
  }
  return TRUE;
}

/* ---- order, dependents, sizes ---- */

static void link(RunnerProgram *p) {
  const RokSchedule *s = p->schedule;
  g_autofree guint *count = g_new0(guint, p->n_actions + 1);
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    for (guint k = 0; k < a->deps_count; k++)
      count[g_array_index(s->deps, guint, a->deps_first + k)]++;
    if (a->kind != ROK_ACTION_FREE)
      g_array_append_val(p->order[a->stream], id);
    p->comm_actions += runner_is_comm(a);
  }
  guint base = p->ids->len;
  for (guint id = 0; id < p->n_actions; id++) {
    p->actions[id].dependents = base;
    base += count[id];
  }
  g_array_set_size(p->ids, base);
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    for (guint k = 0; k < a->deps_count; k++) {
      RunnerAction *d = &p->actions[g_array_index(s->deps, guint, a->deps_first + k)];
      g_array_index(p->ids, guint, d->dependents + d->n_dependents++) = id;
    }
  }
}

/* A read the simulator held back for the budget depends on a free. */
static void mark_late(RunnerProgram *p) {
  for (guint i = 0; i < p->copies->len; i++) {
    RunnerCopy *c = runner_copy(p, i);
    guint first = c->nvme_read != RUN_NONE ? c->nvme_read : c->h2d;
    if (first == RUN_NONE)
      continue;
    const RokAction *a = runner_action(p, first);
    for (guint k = 0; k < a->deps_count; k++)
      c->late |= runner_action(p, g_array_index(p->schedule->deps, guint, a->deps_first + k))->kind == ROK_ACTION_FREE;
  }
}

static void mark_ends(RunnerProgram *p) {
  g_autofree guint *last = g_new(guint, p->n_mb);
  for (guint mb = 0; mb < p->n_mb; mb++)
    last[mb] = RUN_NONE;
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    if (a->kind == ROK_ACTION_FORWARD || a->kind == ROK_ACTION_BACKWARD || a->kind == ROK_ACTION_RECOMPUTE)
      last[a->micro_batch] = id;
  }
  for (guint mb = 0; mb < p->n_mb; mb++)
    if (last[mb] != RUN_NONE)
      p->actions[last[mb]].ends_mb = TRUE;
}

static void measure_sizes(RunnerProgram *p) {
  guint64 on_disk = 0;
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    p->gpudirect_legs += runner_is_copy(a) && a->gpudirect;
    guint c = p->actions[id].copy;
    if (c == RUN_NONE || !runner_is_copy(a))
      continue;
    const RunnerCopy *copy = runner_copy(p, c);
    guint64 rounded = copy->n_chunks * p->slot_bytes;
    if (id == copy->nvme_write)
      on_disk += rounded;
    p->disk_peak = MAX(p->disk_peak, on_disk);
    if (id == copy->nvme_read || (id == copy->nvme_write && copy->nvme_read == RUN_NONE))
      on_disk -= rounded;
  }
  for (guint i = 0; i < p->copies->len; i++) {
    const RunnerCopy *c = runner_copy(p, i);
    guint64 rounded = c->n_chunks * p->slot_bytes;
    gboolean holds = c->d2h != RUN_NONE || (c->nvme_read != RUN_NONE && !c->gd_read);
    if (c->host)
      p->host_total += rounded;
    else if (holds)
      p->staged_largest = MAX(p->staged_largest, rounded);
    if (c->nvme_write != RUN_NONE)
      p->stored_total += rounded;
  }
  for (guint t = 0; t < p->n_tensors; t++)
    p->largest_tensor = MAX(p->largest_tensor, rok_trace_tensor(p->trace, t)->bytes);
  for (guint o = 0; o < p->trace->ops->len; o++)
    p->has_loss |= rok_trace_op(p->trace, o)->kind == ROK_OP_CROSS_ENTROPY;
}

static gboolean depends(const RunnerProgram *p, guint id, guint on) {
  const RokAction *a = runner_action(p, id);
  for (guint k = 0; k < a->deps_count; k++)
    if (g_array_index(p->schedule->deps, guint, a->deps_first + k) == on)
      return TRUE;
  return FALSE;
}

/* Each d2h and h2d leg's dependency on the leg before it on its stream,
 * which the tracker lets it overlap (its copies primed while the one
 * before is checked). An SSD leg's is kept: the simulator records it only
 * where the leg waited for that one, and the stream's lanes run beside
 * each other the legs it ran so (ROK_SSD_LANES). */
static void mark_after(RunnerProgram *p) {
  for (guint id = 0; id < p->n_actions; id++)
    p->actions[id].after = RUN_NONE;
  for (RokStream s = 0; s < ROK_STREAM_ALL_COUNT; s++) {
    if (s != ROK_STREAM_D2H && s != ROK_STREAM_H2D)
      continue;
    const GArray *order = p->order[s];
    for (guint i = 1; i < order->len; i++) {
      guint id = g_array_index(order, guint, i), prev = g_array_index(order, guint, i - 1);
      if (depends(p, id, prev))
        p->actions[id].after = prev;
    }
  }
}

/* What the data path relies on: a copy's legs wait for what made their
 * bytes (the producer, for its checksum too; the leg before; a read back
 * from the staged copy, for its d2h copy or, once written, the write). */
static gboolean check_leg_deps(const RunnerProgram *p, GError **error) {
  for (guint i = 0; i < p->copies->len; i++) {
    const RunnerCopy *c = runner_copy(p, i);
    guint out = c->d2h != RUN_NONE ? c->d2h : c->nvme_write;
    guint back = c->nvme_read != RUN_NONE ? c->nvme_read : c->h2d;
    struct {
      guint id, on, or ;
      const char *what;
    } need[] = {{out, c->producer, RUN_NONE, "the forward that makes it"},
                {c->d2h != RUN_NONE ? c->nvme_write : RUN_NONE, c->d2h, RUN_NONE, "its d2h copy"},
                {back, c->nvme_read != RUN_NONE ? c->nvme_write : c->d2h, c->nvme_write, "the copy it reads"},
                {c->nvme_read != RUN_NONE ? c->h2d : RUN_NONE, c->nvme_read, RUN_NONE, "its SSD read"}};
    for (guint k = 0; k < G_N_ELEMENTS(need); k++)
      if (need[k].id != RUN_NONE && !depends(p, need[k].id, need[k].on) &&
          (need[k].or == RUN_NONE || !depends(p, need[k].id, need[k].or)))
        return runner_program_fail(error, p, need[k].id, "tensor '%s': it does not wait for %s (action %u)",
                                runner_tensor_name(p, c->tensor), need[k].what, need[k].on);
  }
  return TRUE;
}

/* Legs that hold staging slots get a turn, in schedule order: the d2h copy
 * of a tensor bound for the SSDs (held until its write and any read back
 * from staging are done) and a staged SSD read (held until its h2d). */
static void number_tickets(RunnerProgram *p) {
  g_autoptr(GArray) needs = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint id = 0; id < p->n_actions; id++) {
    p->actions[id].ticket = RUN_NONE;
    guint c = p->actions[id].copy;
    if (c == RUN_NONE || runner_copy(p, c)->host)
      continue;
    const RunnerCopy *copy = runner_copy(p, c);
    if (id == copy->d2h || (id == copy->nvme_read && !copy->gd_read)) {
      p->actions[id].ticket = p->n_tickets++;
      g_array_append_val(needs, copy->n_chunks);
    }
  }
  p->ticket_needs = (guint *)g_array_free(g_steal_pointer(&needs), FALSE);
}

typedef struct {
  gint64 time;
  gint64 slots; /* > 0 taken, < 0 given back */
} Hold;

static gint hold_compare(gconstpointer a, gconstpointer b) {
  const Hold *x = a, *y = b;
  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  return (y->slots > 0) - (x->slots > 0); /* taking first: the peak errs high */
}

static void add_hold(GArray *holds, const RunnerProgram *p, guint from, guint64 until_ns, guint n) {
  Hold take = {runner_action(p, from)->start_ns, n}, give = {(gint64)until_ns, -(gint64)n};
  g_array_append_val(holds, take);
  g_array_append_val(holds, give);
}

static gint64 end_of(const RunnerProgram *p, guint id) {
  return id == RUN_NONE ? 0 : runner_action(p, id)->end_ns;
}

/* The most slots the simulator's timeline holds in staging at once (its
 * bytes within the profile's pinned buffer, here in whole slots): the size
 * of the reservations the run may hold. */
static void staging_peak(RunnerProgram *p) {
  g_autoptr(GArray) holds = g_array_new(FALSE, FALSE, sizeof(Hold));
  for (guint i = 0; i < p->copies->len; i++) {
    const RunnerCopy *c = runner_copy(p, i);
    if (c->host)
      continue;
    if (c->d2h != RUN_NONE) {
      gint64 until = MAX(end_of(p, c->d2h), end_of(p, c->nvme_write));
      if (c->nvme_read == RUN_NONE)
        until = MAX(until, end_of(p, c->h2d));
      add_hold(holds, p, c->d2h, until, c->n_chunks);
    }
    if (c->nvme_read != RUN_NONE && !c->gd_read)
      add_hold(holds, p, c->nvme_read, end_of(p, c->h2d), c->n_chunks);
  }
  g_array_sort(holds, hold_compare);
  gint64 held = 0, peak = 0;
  for (guint i = 0; i < holds->len; i++) {
    held += g_array_index(holds, Hold, i).slots;
    peak = MAX(peak, held);
  }
  p->staging_peak = (guint64)peak * p->slot_bytes;
}

/* 2^26 guints, 256 MiB: a step of 64 micro-batches of a 175B model's
 * 600,000-odd tensors fits; anything bigger would not run in a lifetime. */
#define RUNNER_MAX_COPY_ENTRIES (1u << 26)

gboolean runner_program_build(RunnerProgram *p, const RokSchedule *schedule, guint64 slot_bytes, GError **error) {
  memset(p, 0, sizeof *p);
  p->schedule = schedule;
  p->trace = schedule->trace;
  p->n_actions = schedule->actions->len;
  p->n_tensors = p->trace->tensors->len;
  p->n_mb = MAX(schedule->plan->options.detail_micro_batches, 1);
  p->slot_bytes = slot_bytes;
  p->actions = g_new0(RunnerAction, MAX(p->n_actions, 1));
  p->ids = g_array_new(FALSE, FALSE, sizeof(guint));
  p->copies = g_array_new(FALSE, FALSE, sizeof(RunnerCopy));
  for (guint s = 0; s < ROK_STREAM_ALL_COUNT; s++)
    p->order[s] = g_array_new(FALSE, FALSE, sizeof(guint));
  if (p->n_actions == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "the schedule has no actions to run");
    return FALSE;
  }
  /* Bounded before it is allocated: one entry per micro-batch and tensor. */
  if ((guint64)p->n_mb * p->n_tensors > RUNNER_MAX_COPY_ENTRIES) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "the schedule's %u micro-batches of %u tensors are more than the executor keeps track of (%u "
                "micro-batch tensors)",
                p->n_mb, p->n_tensors, (guint)RUNNER_MAX_COPY_ENTRIES);
    return FALSE;
  }
  p->copy_of = g_new(guint, (gsize)p->n_mb * p->n_tensors);
  memset(p->copy_of, 0xff, sizeof(guint) * (gsize)p->n_mb * p->n_tensors);
  if (!gather_copies(p, error) || !runner_program_replay(p, error) || !check_leg_deps(p, error))
    return FALSE;
  link(p);
  mark_late(p);
  mark_ends(p);
  mark_after(p);
  measure_sizes(p);
  number_tickets(p);
  staging_peak(p);
  return TRUE;
}

void runner_program_clear(RunnerProgram *p) {
  g_free(p->actions);
  g_free(p->copy_of);
  g_free(p->ticket_needs);
  if (p->ids != NULL)
    g_array_unref(p->ids);
  if (p->copies != NULL)
    g_array_unref(p->copies);
  for (guint s = 0; s < ROK_STREAM_ALL_COUNT; s++)
    if (p->order[s] != NULL)
      g_array_unref(p->order[s]);
  memset(p, 0, sizeof *p);
}

#endif /* ROK_WITH_OPENCL */
