/* Where the time of a step goes: the median step's actions (the report's
 * timeline) summed by part, predicted beside measured. */
#include "validate-private.h"

static void part_clear(gpointer data) {
  g_free(((RokValidatePart *)data)->part);
}

GArray *validate_parts_new(void) {
  GArray *parts = g_array_new(FALSE, TRUE, sizeof(RokValidatePart));
  g_array_set_clear_func(parts, part_clear);
  return parts;
}

static RokValidatePart *part(GArray *parts, const char *name) {
  for (guint i = 0; i < parts->len; i++)
    if (g_str_equal(g_array_index(parts, RokValidatePart, i).part, name))
      return &g_array_index(parts, RokValidatePart, i);
  RokValidatePart p = {.part = g_strdup(name)};
  g_array_append_val(parts, p);
  return &g_array_index(parts, RokValidatePart, parts->len - 1);
}

/* Compute actions by op kind and action kind, in op-kind order so that
 * every row lists them alike; then the transfer streams. */
static char *part_name(const RokAction *a, const RokTrace *trace, guint *order) {
  if (a->stream != ROK_STREAM_COMPUTE) {
    *order = ROK_OP_KIND_COUNT * ROK_ACTION_KIND_COUNT + a->stream;
    return g_strdup(rok_stream_name(a->stream));
  }
  if (a->op == ROK_NO_ID) {
    *order = ROK_OP_KIND_COUNT * ROK_ACTION_KIND_COUNT;
    return g_strdup(rok_action_kind_name(a->kind));
  }
  RokOpKind kind = rok_trace_op(trace, a->op)->kind;
  *order = kind * ROK_ACTION_KIND_COUNT + a->kind;
  return g_strdup_printf("%s %s", rok_op_kind_name(kind), rok_action_kind_name(a->kind));
}

typedef struct {
  guint order;
  RokValidatePart part;
} Ordered;

static int by_order(gconstpointer a, gconstpointer b) {
  guint x = ((const Ordered *)a)->order, y = ((const Ordered *)b)->order;
  return (x > y) - (x < y);
}

typedef struct {
  double from, to;
} Interval;

static int by_from(gconstpointer a, gconstpointer b) {
  double x = ((const Interval *)a)->from, y = ((const Interval *)b)->from;
  return (x > y) - (x < y);
}

/* Seconds INTERVALS cover, each moment once. */
static double covered(GArray *intervals) {
  g_array_sort(intervals, by_from);
  double total = 0, reached = -G_MAXDOUBLE;
  for (guint i = 0; i < intervals->len; i++) {
    const Interval *v = &g_array_index(intervals, Interval, i);
    total += MAX(v->to - MAX(v->from, reached), 0);
    reached = MAX(reached, v->to);
  }
  return total;
}

/* An SSD stream's time is the time it had a leg moving bytes: the
 * executor runs its legs in lanes, several at once, each first waiting
 * for its staging slots (the simulator starts a leg when they are free),
 * so the legs' lengths do not add. */
static int ssd_index(RokStream s) {
  return s == ROK_STREAM_NVME_WRITE ? 0 : s == ROK_STREAM_NVME_READ ? 1 : -1;
}

void validate_parts_fill(GArray *parts, const RokExecReport *report, const RokSchedule *schedule) {
  g_autoptr(GArray) found = g_array_new(FALSE, FALSE, sizeof(Ordered));
  GArray *moving[2], *planned[2];
  guint ssd_part[2] = {G_MAXUINT, G_MAXUINT};
  for (guint d = 0; d < 2; d++) {
    moving[d] = g_array_new(FALSE, FALSE, sizeof(Interval));
    planned[d] = g_array_new(FALSE, FALSE, sizeof(Interval));
  }
  for (guint i = 0; i < report->timeline->len; i++) {
    const RokExecSpan *span = &g_array_index(report->timeline, RokExecSpan, i);
    if (span->kind == ROK_ACTION_FREE || span->action >= schedule->actions->len)
      continue;
    guint order = 0;
    g_autofree char *name = part_name(rok_schedule_action(schedule, span->action), schedule->trace, &order);
    guint k = 0;
    while (k < found->len && !g_str_equal(g_array_index(found, Ordered, k).part.part, name))
      k++;
    if (k == found->len) {
      Ordered o = {.order = order, .part = {.part = g_steal_pointer(&name)}};
      g_array_append_val(found, o);
    }
    RokValidatePart *p = &g_array_index(found, Ordered, k).part;
    p->actions++;
    int d = ssd_index(span->stream);
    if (d >= 0) {
      Interval m = {MIN(span->start_s + span->wait_s, span->end_s), span->end_s};
      Interval q = {span->predicted_start_s, span->predicted_end_s};
      g_array_append_val(moving[d], m);
      g_array_append_val(planned[d], q);
      ssd_part[d] = k;
      continue;
    }
    p->predicted_s += span->predicted_end_s - span->predicted_start_s;
    p->measured_s += span->end_s - span->start_s;
  }
  for (guint d = 0; d < 2; d++) {
    if (ssd_part[d] != G_MAXUINT) {
      RokValidatePart *p = &g_array_index(found, Ordered, ssd_part[d]).part;
      p->measured_s = covered(moving[d]);
      p->predicted_s = covered(planned[d]);
    }
    g_array_unref(moving[d]);
    g_array_unref(planned[d]);
  }
  g_array_sort(found, by_order); /* stable in glib: ties keep their order */
  for (guint k = 0; k < found->len; k++)
    g_array_append_val(parts, g_array_index(found, Ordered, k).part);
}

void validate_parts_add(GArray *into, const GArray *from) {
  for (guint i = 0; i < from->len; i++) {
    const RokValidatePart *f = &g_array_index(from, RokValidatePart, i);
    RokValidatePart *p = part(into, f->part);
    p->actions += f->actions;
    p->predicted_s += f->predicted_s;
    p->measured_s += f->measured_s;
  }
}
