/* The timeline chart of one simulated step, read back from Chrome /
 * Perfetto trace-event JSON: thread names become rows, complete events
 * ("X") bars coloured by their category, the "gpu memory" counter the
 * memory curve. Other events (frees, the staging buffer) are not drawn. */
#include <string.h>

#include "rok/charts.h"
#include "rok/core.h"

/* Bar kinds in legend order, with colours of their own. */
static const struct {
  const char *category;
  const char *legend;
  guint color;
} kinds[] = {
    {"forward", "forward", ROK_COLOR_BLUE},         {"backward", "backward", ROK_COLOR_GREEN},
    {"recompute", "recompute", ROK_COLOR_PURPLE},   {"optimizer", "optimizer step", ROK_COLOR_BLACK},
    {"offload", "offload (copy out)", ROK_COLOR_SKY}, {"prefetch", "prefetch (read back)", ROK_COLOR_ORANGE},
};

typedef struct {
  gint64 tid;
  guint kind;
  double start, end; /* seconds */
} Bar;

typedef struct {
  gint64 tid;
  gint64 order; /* thread_sort_index, else the tid */
  char *name;
} Track;

typedef struct {
  GArray *tracks;  /* Track */
  GArray *bars;    /* Bar */
  GArray *memory;  /* double pairs: time (s), bytes */
  char *model;     /* from the process name */
  char *strategy, *hw;        /* from otherData, NULL when absent */
  guint64 gpu_memory, budget; /* from otherData, 0 when absent */
} Parsed;

static void track_clear(gpointer data) {
  g_free(((Track *)data)->name);
}

static void parsed_clear(Parsed *p) {
  g_clear_pointer(&p->tracks, g_array_unref);
  g_clear_pointer(&p->bars, g_array_unref);
  g_clear_pointer(&p->memory, g_array_unref);
  g_clear_pointer(&p->model, g_free);
  g_clear_pointer(&p->strategy, g_free);
  g_clear_pointer(&p->hw, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Parsed, parsed_clear)

static Track *track_for(Parsed *p, gint64 tid) {
  for (guint i = 0; i < p->tracks->len; i++)
    if (g_array_index(p->tracks, Track, i).tid == tid)
      return &g_array_index(p->tracks, Track, i);
  Track track = {tid, tid, g_strdup_printf("thread %" G_GINT64_FORMAT, tid)};
  g_array_append_val(p->tracks, track);
  return &g_array_index(p->tracks, Track, p->tracks->len - 1);
}

static gboolean parse_meta(Parsed *p, const RokJsonObj *event, GError **error) {
  g_autofree char *name = NULL, *value = NULL;
  g_auto(RokJsonObj) args = {0};
  gint64 tid = 0, order = 0;
  if (!rok_json_get_string(event, "name", TRUE, &name, error) || !rok_json_child(event, "args", FALSE, &args, error))
    return FALSE;
  if (g_str_equal(name, "process_name")) {
    if (!rok_json_get_string(&args, "name", FALSE, &value, error))
      return FALSE;
    /* src/sim/timeline.c names the process "rok simulate: MODEL". */
    if (value != NULL && g_str_has_prefix(value, "rok simulate: ")) {
      g_free(p->model);
      p->model = g_strdup(value + strlen("rok simulate: "));
    }
  } else if (g_str_equal(name, "thread_name")) {
    if (!rok_json_get_int(event, "tid", TRUE, G_MININT64, G_MAXINT64, &tid, error) ||
        !rok_json_get_string(&args, "name", TRUE, &value, error))
      return FALSE;
    Track *track = track_for(p, tid);
    g_free(track->name);
    track->name = g_steal_pointer(&value);
  } else if (g_str_equal(name, "thread_sort_index")) {
    if (!rok_json_get_int(event, "tid", TRUE, G_MININT64, G_MAXINT64, &tid, error) ||
        !rok_json_get_int(&args, "sort_index", TRUE, G_MININT64, G_MAXINT64, &order, error))
      return FALSE;
    track_for(p, tid)->order = order;
  }
  return TRUE;
}

static gboolean parse_complete(Parsed *p, const RokJsonObj *event, GError **error) {
  g_autofree char *category = NULL;
  gint64 tid = 0;
  double ts = 0, dur = 0;
  if (!rok_json_get_string(event, "cat", FALSE, &category, error) ||
      !rok_json_get_int(event, "tid", TRUE, G_MININT64, G_MAXINT64, &tid, error) ||
      !rok_json_get_double(event, "ts", TRUE, 0, G_MAXDOUBLE, &ts, error) ||
      !rok_json_get_double(event, "dur", TRUE, 0, G_MAXDOUBLE, &dur, error))
    return FALSE;
  track_for(p, tid);
  for (guint k = 0; k < G_N_ELEMENTS(kinds); k++)
    if (g_strcmp0(category, kinds[k].category) == 0) {
      Bar bar = {tid, k, ts / 1e6, (ts + dur) / 1e6};
      g_array_append_val(p->bars, bar);
    }
  return TRUE;
}

static gboolean parse_counter(Parsed *p, const RokJsonObj *event, GError **error) {
  g_autofree char *name = NULL;
  g_auto(RokJsonObj) args = {0};
  double ts = 0;
  guint64 bytes = 0;
  if (!rok_json_get_string(event, "name", TRUE, &name, error))
    return FALSE;
  if (!g_str_equal(name, "gpu memory"))
    return TRUE;
  if (!rok_json_get_double(event, "ts", TRUE, 0, G_MAXDOUBLE, &ts, error) ||
      !rok_json_child(event, "args", TRUE, &args, error) ||
      !rok_json_get_uint(&args, "bytes", TRUE, 0, G_MAXUINT64, &bytes, error))
    return FALSE;
  double sample[2] = {ts / 1e6, (double)bytes};
  g_array_append_vals(p->memory, sample, 2);
  return TRUE;
}

static gboolean parse_event(Parsed *p, const RokJsonObj *event, GError **error) {
  g_autofree char *phase = NULL;
  if (!rok_json_get_string(event, "ph", TRUE, &phase, error))
    return FALSE;
  if (g_str_equal(phase, "M"))
    return parse_meta(p, event, error);
  if (g_str_equal(phase, "X"))
    return parse_complete(p, event, error);
  if (g_str_equal(phase, "C"))
    return parse_counter(p, event, error);
  return TRUE; /* instant events (frees) and others are not drawn */
}

/* What rok knows of the run beyond the events, when the file says so. */
static gboolean parse_other(Parsed *p, const RokJsonObj *root, GError **error) {
  g_auto(RokJsonObj) other = {0};
  return rok_json_child(root, "otherData", FALSE, &other, error) &&
         rok_json_get_string(&other, "strategy", FALSE, &p->strategy, error) &&
         rok_json_get_string(&other, "hw", FALSE, &p->hw, error) &&
         rok_json_get_uint(&other, "gpu_memory_bytes", FALSE, 1, G_MAXUINT64, &p->gpu_memory, error) &&
         rok_json_get_uint(&other, "budget_bytes", FALSE, 1, G_MAXUINT64, &p->budget, error);
}

static gboolean parse(const RokJsonDoc *doc, Parsed *p, GError **error) {
  g_auto(RokJsonObj) root = {0};
  json_object *events = NULL;
  if (!rok_json_root(doc, &root, error) || !rok_json_get_array(&root, "traceEvents", TRUE, &events, error) ||
      !parse_other(p, &root, error))
    return FALSE;
  for (gsize i = 0; i < json_object_array_length(events); i++) {
    g_auto(RokJsonObj) event = {0};
    if (!rok_json_element(&root, "traceEvents", events, i, &event, error) || !parse_event(p, &event, error))
      return FALSE;
  }
  if (p->bars->len == 0) {
    rok_json_error(error, doc, "traceEvents", "no forward, backward or transfer events to draw");
    return FALSE;
  }
  return TRUE;
}

static gint compare_tracks(gconstpointer a, gconstpointer b) {
  const Track *x = a, *y = b;
  return x->order != y->order ? (x->order < y->order ? -1 : 1) : (x->tid > y->tid) - (x->tid < y->tid);
}

static char *title(const Parsed *p) {
  const char *model = p->model != NULL ? p->model : "a model";
  if (p->strategy != NULL && p->hw != NULL)
    return g_strdup_printf("One step of %s, %s on %s", model, p->strategy, p->hw);
  return g_strdup_printf("One simulated step of %s", model);
}

static void add_limits(RokTimeline *timeline, guint64 gpu_memory, guint64 budget) {
  if (gpu_memory > 0) {
    g_autofree char *size = rok_units_format_size(gpu_memory), *label = g_strdup_printf("GPU memory %s", size);
    rok_timeline_add_memory_limit(timeline, (double)gpu_memory, label);
  }
  if (budget > 0 && (gpu_memory == 0 || budget < gpu_memory)) {
    g_autofree char *size = rok_units_format_size(budget), *label = g_strdup_printf("budget %s", size);
    rok_timeline_add_memory_limit(timeline, (double)budget, label);
  }
}

static RokTimeline *build(Parsed *p, guint64 gpu_memory, guint64 budget) {
  g_autofree char *text = title(p);
  RokTimeline *timeline = rok_timeline_new(text);
  g_array_sort(p->tracks, compare_tracks);
  for (guint i = 0; i < p->tracks->len; i++)
    rok_timeline_add_track(timeline, g_array_index(p->tracks, Track, i).name);
  /* Only the kinds that occur get a legend entry. */
  guint kind_ids[G_N_ELEMENTS(kinds)];
  for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
    kind_ids[k] = G_MAXUINT;
    for (guint b = 0; b < p->bars->len && kind_ids[k] == G_MAXUINT; b++)
      if (g_array_index(p->bars, Bar, b).kind == k)
        kind_ids[k] = rok_timeline_add_kind(timeline, kinds[k].legend, kinds[k].color);
  }
  for (guint b = 0; b < p->bars->len; b++) {
    const Bar *bar = &g_array_index(p->bars, Bar, b);
    guint track = 0;
    while (g_array_index(p->tracks, Track, track).tid != bar->tid)
      track++;
    rok_timeline_add_bar(timeline, track, kind_ids[bar->kind], bar->start, bar->end);
  }
  for (guint i = 0; i + 1 < p->memory->len; i += 2)
    rok_timeline_add_memory(timeline, g_array_index(p->memory, double, i), g_array_index(p->memory, double, i + 1));
  add_limits(timeline, gpu_memory > 0 ? gpu_memory : p->gpu_memory, budget > 0 ? budget : p->budget);
  return timeline;
}

RokTimeline *rok_charts_timeline(const RokJsonDoc *doc, guint64 gpu_memory, guint64 budget, GError **error) {
  g_auto(Parsed) p = {.tracks = g_array_new(FALSE, FALSE, sizeof(Track)),
                      .bars = g_array_new(FALSE, FALSE, sizeof(Bar)),
                      .memory = g_array_new(FALSE, FALSE, sizeof(double))};
  g_array_set_clear_func(p.tracks, track_clear);
  if (!parse(doc, &p, error))
    return NULL;
  return build(&p, gpu_memory, budget);
}

gboolean rok_charts_timeline_save(const RokJsonDoc *doc, guint64 gpu_memory, guint64 budget, const char *path,
                               GError **error) {
  g_autoptr(RokTimeline) timeline = rok_charts_timeline(doc, gpu_memory, budget, error);
  return timeline != NULL && rok_timeline_save(timeline, path, error);
}
