/* Where the time of a step goes: the median step's actions (the report's
 * timeline) summed by part, predicted beside measured. */
#include <math.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "validate-private.h"

static void part_clear(gpointer data) {
  g_free(((RokValidatePart *)data)->part);
}

GArray *validate_parts_new(void) {
  GArray *parts = g_array_new(FALSE, TRUE, sizeof(RokValidatePart));
  g_array_set_clear_func(parts, part_clear);
  return parts;
}

/* A part of NAME (taken), nothing counted yet, with no interval. */
static RokValidatePart part_new(char *name) {
  return (RokValidatePart){.part = name, .median_s = NAN, .ci_low_s = NAN, .ci_high_s = NAN,
                           .error_against_keep = NAN, .predicted_at_copy_speed_s = NAN, .error_at_copy_speed = NAN};
}

static RokValidatePart *part(GArray *parts, const char *name) {
  for (guint i = 0; i < parts->len; i++)
    if (g_str_equal(g_array_index(parts, RokValidatePart, i).part, name))
      return &g_array_index(parts, RokValidatePart, i);
  RokValidatePart p = part_new(g_strdup(name));
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

/* A stream's legs may overlap: the executor runs an SSD stream's legs in
 * lanes, several at once, and primes a d2h leg while the one before is
 * still checked, so a transfer stream's time is the time it had a leg
 * running, each moment once, as the step's figures count it
 * (stream_time). An SSD leg counts from its staging slots on (the
 * simulator starts a leg when they are free); a copy leg from its start. */
static gboolean counts_past_slots(RokStream s) {
  return s == ROK_STREAM_NVME_WRITE || s == ROK_STREAM_NVME_READ;
}

typedef struct {
  GArray *moving[ROK_STREAM_COUNT], *planned[ROK_STREAM_COUNT]; /* Interval, per transfer stream */
  guint part[ROK_STREAM_COUNT];                                 /* their parts in `found`, G_MAXUINT if none */
} StreamTime;

static void stream_add(StreamTime *t, RokStream s, guint part, const RokExecSpan *span) {
  double wait = counts_past_slots(s) ? span->wait_s : 0;
  Interval m = {MIN(span->start_s + wait, span->end_s), span->end_s};
  Interval q = {span->predicted_start_s, span->predicted_end_s};
  g_array_append_val(t->moving[s], m);
  g_array_append_val(t->planned[s], q);
  t->part[s] = part;
}

double validate_schedule_copy_s(const RokSchedule *schedule, RokStream s) {
  g_autoptr(GArray) legs = g_array_new(FALSE, FALSE, sizeof(Interval));
  for (guint id = 0; id < schedule->actions->len; id++) {
    const RokAction *a = rok_schedule_action(schedule, id);
    if (a->stream != s || a->kind == ROK_ACTION_FREE)
      continue;
    Interval v = {(double)a->start_ns / 1e9, (double)a->end_ns / 1e9};
    g_array_append_val(legs, v);
  }
  return covered(legs);
}

/* Sets the transfer streams' parts' times and frees T's arrays. */
static void stream_finish(StreamTime *t, GArray *found) {
  for (RokStream s = ROK_STREAM_D2H; s < ROK_STREAM_COUNT; s++) {
    if (t->part[s] != G_MAXUINT) {
      RokValidatePart *p = &g_array_index(found, Ordered, t->part[s]).part;
      p->measured_s = covered(t->moving[s]);
      p->predicted_s = covered(t->planned[s]);
    }
    g_array_unref(t->moving[s]);
    g_array_unref(t->planned[s]);
  }
}

/* The index in FOUND of the part named NAME, appended (taking NAME) if new. */
static guint found_part(GArray *found, char **name, guint order) {
  guint k = 0;
  while (k < found->len && !g_str_equal(g_array_index(found, Ordered, k).part.part, *name))
    k++;
  if (k == found->len) {
    Ordered o = {.order = order, .part = part_new(g_steal_pointer(name))};
    g_array_append_val(found, o);
  }
  return k;
}

void validate_parts_fill(GArray *parts, const RokExecReport *report, const RokSchedule *schedule) {
  g_autoptr(GArray) found = g_array_new(FALSE, FALSE, sizeof(Ordered));
  StreamTime streams = {0};
  for (RokStream s = ROK_STREAM_D2H; s < ROK_STREAM_COUNT; s++) {
    streams.part[s] = G_MAXUINT;
    streams.moving[s] = g_array_new(FALSE, FALSE, sizeof(Interval));
    streams.planned[s] = g_array_new(FALSE, FALSE, sizeof(Interval));
  }
  for (guint i = 0; i < report->timeline->len; i++) {
    const RokExecSpan *span = &g_array_index(report->timeline, RokExecSpan, i);
    if (span->kind == ROK_ACTION_FREE || span->action >= schedule->actions->len)
      continue;
    guint order = 0;
    g_autofree char *name = part_name(rok_schedule_action(schedule, span->action), schedule->trace, &order);
    guint k = found_part(found, &name, order);
    RokValidatePart *p = &g_array_index(found, Ordered, k).part;
    p->actions++;
    if (span->stream != ROK_STREAM_COMPUTE && span->stream < ROK_STREAM_COUNT) {
      stream_add(&streams, span->stream, k, span);
    } else {
      p->predicted_s += span->predicted_end_s - span->predicted_start_s;
      p->measured_s += span->end_s - span->start_s;
    }
  }
  stream_finish(&streams, found);
  g_array_sort(found, by_order); /* stable in glib: ties keep their order */
  for (guint k = 0; k < found->len; k++)
    g_array_append_val(parts, g_array_index(found, Ordered, k).part);
}

double rok_validate_part_error(const RokValidatePart *part) {
  return validate_relative(isnan(part->median_s) ? part->measured_s : part->median_s, part->predicted_s);
}

/* A transfer stream's time in one step, as its part counts it, each
 * moment once: an SSD stream's past its legs' waits for staging slots
 * (active_s), a copy stream's from its legs' starts (busy_s). */
static double stream_time(const RokExecFigures *f, RokStream s) {
  return counts_past_slots(s) ? f->active_s[s] : f->busy_s[s];
}

RokStream validate_part_stream(const RokValidatePart *part) {
  RokStream s = ROK_STREAM_D2H;
  while (s < ROK_STREAM_COUNT && !g_str_equal(part->part, rok_stream_name(s)))
    s++;
  return s;
}

gboolean validate_part_copy_measured(const RokValidatePart *part) {
  RokStream s = validate_part_stream(part);
  return (s == ROK_STREAM_D2H || s == ROK_STREAM_H2D) && !isnan(part->median_s);
}

void validate_parts_spread(GArray *parts, const GPtrArray *reports) {
  g_autoptr(GArray) times = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint k = 0; k < parts->len; k++) {
    RokValidatePart *p = &g_array_index(parts, RokValidatePart, k);
    RokStream s = validate_part_stream(p);
    if (s == ROK_STREAM_COUNT)
      continue; /* compute, or communication placeholders */
    g_array_set_size(times, 0);
    for (guint r = 0; r < reports->len; r++) {
      const GArray *steps = ((const RokExecReport *)g_ptr_array_index(reports, r))->step_figures;
      for (guint i = 0; i < steps->len; i++) {
        double t = stream_time(&g_array_index(steps, RokExecFigures, i), s);
        g_array_append_val(times, t);
      }
    }
    if (times->len == 0)
      continue;
    double *sorted = (double *)(void *)times->data, coverage = 0;
    gsl_sort(sorted, 1, times->len);
    p->median_s = gsl_stats_median_from_sorted_data(sorted, 1, times->len);
    validate_median_interval(sorted, times->len, &p->ci_low_s, &p->ci_high_s, &coverage);
    p->within_noise = p->ci_low_s <= p->predicted_s && p->predicted_s <= p->ci_high_s;
  }
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
