/* Figures of a step from its actions' times, computed the same way for
 * what was measured and for what the schedule predicted (the simulator's
 * start and end of each action), so that the two sit side by side under
 * one definition; the predicted stalls and peaks are the simulator's own.
 *
 * Busy time: the time a stream had an action running (the SSD streams'
 * lanes overlap their legs: each moment counts once); a stream's
 * bandwidth is its bytes over its busy time less its staging waits (on
 * the SSD streams, the time a leg ran past its wait, each moment once).
 *
 * Stalls: whenever the compute stream sits idle between two of its
 * actions, the idle time is explained by the dependency of the waiting
 * action that completed last: a free (the action waited for memory), a
 * transfer leg (its stream: an SSD leg is a "read" stall, a PCIe copy
 * "pcie", the leg's own wait for a staging slot "staging"; a read that the
 * schedule held back for the memory budget, "memory", as the simulator
 * counts it); time before
 * that leg started is explained the same way by the leg's own last
 * dependency, and so on back. What nothing explains (the runner's hand-off
 * between threads) is the dispatch time, not a stall. A wait for a
 * communication placeholder is neither: the simulator counts exposed
 * communication apart from stalls too. */
#ifdef ROK_WITH_OPENCL

#include "runner-private.h"

typedef struct {
  gint64 start, end, wait;
  guint64 moved;
} Span;

typedef struct {
  const RunnerProgram *p;
  const Span *span;
  RokExecFigures *f;
  gint64 stall_ns[ROK_STALL_COUNT];
  gint64 dispatch_ns, comm_ns;
} Stalls;

static guint last_dep(const RunnerProgram *p, const Span *span, guint id) {
  const RokAction *a = runner_action(p, id);
  guint last = RUN_NONE;
  for (guint k = 0; k < a->deps_count; k++) {
    guint d = g_array_index(p->schedule->deps, guint, a->deps_first + k);
    if (last == RUN_NONE || span[d].end > span[last].end)
      last = d;
  }
  return last;
}

/* Explain the compute stream's idle time [from, to) before action id. */
static void explain(Stalls *s, guint id, gint64 from, gint64 to) {
  for (guint depth = 0; depth < 64 && from < to; depth++) {
    guint d = last_dep(s->p, s->span, id);
    if (d == RUN_NONE || s->span[d].end <= from)
      break;
    const RokAction *a = runner_action(s->p, d);
    gint64 end = MIN(s->span[d].end, to);
    s->dispatch_ns += to - end;
    guint copy = s->p->actions[d].copy;
    gboolean late = a->kind == ROK_ACTION_PREFETCH && copy != RUN_NONE && runner_copy(s->p, copy)->late;
    if (a->kind == ROK_ACTION_FREE || late) {
      s->stall_ns[ROK_STALL_MEMORY] += end - from;
      return; /* the chain behind a memory wait is the memory wait */
    }
    if (a->stream == ROK_STREAM_COMPUTE) {
      s->dispatch_ns += end - from;
      return;
    }
    gint64 begin = MAX(from, s->span[d].start);
    if (a->stream >= ROK_STREAM_COUNT) { /* a communication placeholder */
      s->comm_ns += end - begin;
      to = begin;
      id = d;
      continue;
    }
    gint64 staging = MIN(s->span[d].wait, end - begin);
    gboolean ssd = a->stream == ROK_STREAM_NVME_READ || a->stream == ROK_STREAM_NVME_WRITE;
    s->stall_ns[ROK_STALL_STAGING] += staging;
    s->stall_ns[ssd ? ROK_STALL_READ : ROK_STALL_PCIE] += end - begin - staging;
    to = begin;
    id = d;
  }
  if (from < to)
    s->dispatch_ns += to - from;
}

static void stalls(const RunnerProgram *p, const Span *span, RokExecFigures *f, double *dispatch_s) {
  Stalls s = {.p = p, .span = span, .f = f};
  const GArray *order = p->order[ROK_STREAM_COMPUTE];
  for (guint i = 1; i < order->len; i++) {
    guint prev = g_array_index(order, guint, i - 1), id = g_array_index(order, guint, i);
    if (span[id].start > span[prev].end)
      explain(&s, id, span[prev].end, span[id].start);
  }
  f->stall_s = 0;
  for (guint c = 0; c < ROK_STALL_COUNT; c++) {
    f->stall_s_by_cause[c] = (double)s.stall_ns[c] / 1e9;
    f->stall_s += f->stall_s_by_cause[c];
  }
  *dispatch_s = (double)s.dispatch_ns / 1e9;
  f->comm_wait_s = (double)s.comm_ns / 1e9;
}

static gint compare_start(gconstpointer a, gconstpointer b) {
  const Span *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* The time a stream had at least one action running (`active`: running
 * past its wait for staging slots, which comes first): its actions may
 * overlap (the SSD streams' lanes; a d2h or h2d leg primed while the one
 * before is checked), each moment counts once. */
static double union_ns(const RunnerProgram *p, const Span *span, RokStream s, gboolean active) {
  const GArray *order = p->order[s];
  g_autofree Span *sorted = g_new(Span, MAX(order->len, 1));
  for (guint i = 0; i < order->len; i++) {
    sorted[i] = span[g_array_index(order, guint, i)];
    if (active)
      sorted[i].start = MIN(sorted[i].start + sorted[i].wait, sorted[i].end);
  }
  qsort(sorted, order->len, sizeof(Span), compare_start);
  double total = 0;
  gint64 reached = G_MININT64;
  for (guint i = 0; i < order->len; i++) {
    gint64 from = MAX(sorted[i].start, reached);
    if (sorted[i].end > from)
      total += (double)(sorted[i].end - from);
    reached = MAX(reached, sorted[i].end);
  }
  return total;
}

static double rate(guint64 bytes, double ns) {
  return bytes > 0 && ns > 0 ? (double)bytes / (ns / 1e9) : 0;
}

static void figures(const RunnerProgram *p, const Span *span, gint64 origin, RokExecFigures *f, double *dispatch_s) {
  /* Sums in double: a schedule's predicted times (up to 1e9 s each, over
   * millions of actions) would overflow 64-bit nanoseconds. */
  double busy[ROK_STREAM_ALL_COUNT] = {0}, waits[ROK_STREAM_ALL_COUNT] = {0}, recompute = 0;
  gint64 end = origin;
  guint64 moved[ROK_STREAM_ALL_COUNT] = {0}, gd_out = 0, gd_in = 0;
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    if (a->kind == ROK_ACTION_FREE)
      continue;
    double length = (double)span[id].end - (double)span[id].start;
    busy[a->stream] += length;
    waits[a->stream] += (double)span[id].wait;
    moved[a->stream] += span[id].moved;
    recompute += a->kind == ROK_ACTION_RECOMPUTE ? length : 0;
    gd_out += a->gpudirect && a->stream == ROK_STREAM_NVME_WRITE ? span[id].moved : 0;
    gd_in += a->gpudirect && a->stream == ROK_STREAM_NVME_READ ? span[id].moved : 0;
    if (rok_exec_action_ends_step(a))
      end = MAX(end, span[id].end);
  }
  double active[ROK_STREAM_COUNT] = {0};
  for (RokStream s = 0; s < ROK_STREAM_COUNT; s++)
    active[s] = busy[s] - waits[s];
  for (RokStream s = ROK_STREAM_D2H; s < ROK_STREAM_COUNT; s++) { /* the transfer streams */
    busy[s] = union_ns(p, span, s, FALSE);
    active[s] = union_ns(p, span, s, TRUE);
  }
  f->step_time_s = ((double)end - (double)origin) / 1e9;
  for (guint s = 0; s < ROK_STREAM_COUNT; s++) {
    f->busy_s[s] = busy[s] / 1e9;
    f->active_s[s] = active[s] / 1e9;
  }
  f->compute_s = f->busy_s[ROK_STREAM_COMPUTE];
  f->recompute_s = recompute / 1e9;
  f->comm_s = busy[ROK_STREAM_COMM] / 1e9;
  f->p2p_s = busy[ROK_STREAM_P2P] / 1e9;
  f->d2h_bytes = moved[ROK_STREAM_D2H] + gd_out;
  f->h2d_bytes = moved[ROK_STREAM_H2D] + gd_in;
  f->nvme_write_bytes = moved[ROK_STREAM_NVME_WRITE];
  f->nvme_read_bytes = moved[ROK_STREAM_NVME_READ];
  f->d2h_bandwidth = rate(moved[ROK_STREAM_D2H], active[ROK_STREAM_D2H]);
  f->h2d_bandwidth = rate(moved[ROK_STREAM_H2D], active[ROK_STREAM_H2D]);
  f->nvme_write_bandwidth = rate(moved[ROK_STREAM_NVME_WRITE], active[ROK_STREAM_NVME_WRITE]);
  f->nvme_read_bandwidth = rate(moved[ROK_STREAM_NVME_READ], active[ROK_STREAM_NVME_READ]);
  stalls(p, span, f, dispatch_s);
}

void runner_measure_step(const Runner *r, RunnerStepFigures *out) {
  const RunnerProgram *p = &r->prog;
  g_autofree Span *span = g_new(Span, p->n_actions);
  *out = (RunnerStepFigures){0};
  for (guint id = 0; id < p->n_actions; id++) {
    const RunnerRecord *rec = &r->rec[id];
    span[id] = (Span){.start = rec->start_ns, .end = rec->end_ns, .wait = rec->wait_ns, .moved = rec->moved};
    out->staging_waits += rec->waits;
    out->staging_wait_s += (double)rec->wait_ns / 1e9;
  }
  figures(p, span, r->step_start_ns, &out->figures, &out->dispatch_s);
}

static guint64 json_size(json_object *obj, const char *key) {
  json_object *value = NULL;
  return obj != NULL && json_object_object_get_ex(obj, key, &value) ? (guint64)json_object_get_uint64(value) : 0;
}

static double json_seconds(json_object *obj, const char *key) {
  json_object *value = NULL;
  return obj != NULL && json_object_object_get_ex(obj, key, &value) ? json_object_get_double(value) : 0;
}

void runner_measure_predicted(const RunnerProgram *p, RokExecFigures *out) {
  g_autofree Span *span = g_new(Span, p->n_actions);
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    gboolean moves = a->kind != ROK_ACTION_FREE && !runner_is_comm(a);
    span[id] = (Span){.start = a->start_ns, .end = a->end_ns, .moved = moves ? a->bytes : 0};
  }
  double dispatch = 0;
  *out = (RokExecFigures){0};
  figures(p, span, 0, out, &dispatch);
  /* The simulator's own stall figures: it knows why it held a read back
   * (staging, budget) where the action log shows only what waited. */
  json_object *predicted = p->schedule->predicted, *causes = NULL;
  out->peak_device_bytes = json_size(predicted, "peak_bytes");
  out->activation_peak_bytes = json_size(predicted, "activation_peak_bytes");
  out->stall_s = json_seconds(predicted, "stall_s");
  if (predicted != NULL && json_object_object_get_ex(predicted, "stall_s_by_cause", &causes))
    for (guint c = 0; c < ROK_STALL_COUNT; c++)
      out->stall_s_by_cause[c] = json_seconds(causes, rok_stall_cause_name(c));
}

#endif /* ROK_WITH_OPENCL */
