/* Reading a timeline file back: the tracks, the actions drawn as bars,
 * the GPU memory counter and what the file says of the run. */
#include <string.h>

#include "rok/schedule.h"

static void track_clear(gpointer data) {
  g_free(((RokTimelineTrack *)data)->name);
}

void rok_timeline_file_free(RokTimelineFile *p) {
  if (p == NULL)
    return;
  g_clear_pointer(&p->tracks, g_array_unref);
  g_clear_pointer(&p->spans, g_array_unref);
  g_clear_pointer(&p->memory, g_array_unref);
  g_free(p->model);
  g_free(p->strategy);
  g_free(p->hw);
  g_free(p);
}

static RokTimelineTrack *track_for(RokTimelineFile *p, gint64 tid) {
  for (guint i = 0; i < p->tracks->len; i++)
    if (g_array_index(p->tracks, RokTimelineTrack, i).tid == tid)
      return &g_array_index(p->tracks, RokTimelineTrack, i);
  RokTimelineTrack track = {tid, tid, g_strdup_printf("thread %" G_GINT64_FORMAT, tid)};
  g_array_append_val(p->tracks, track);
  return &g_array_index(p->tracks, RokTimelineTrack, p->tracks->len - 1);
}

static gboolean parse_meta(RokTimelineFile *p, const RokJsonObj *event, GError **error) {
  g_autofree char *name = NULL, *value = NULL;
  g_auto(RokJsonObj) args = {0};
  gint64 tid = 0, order = 0;
  if (!rok_json_get_string(event, "name", TRUE, &name, error) || !rok_json_child(event, "args", FALSE, &args, error))
    return FALSE;
  if (g_str_equal(name, "process_name")) {
    if (!rok_json_get_string(&args, "name", FALSE, &value, error))
      return FALSE;
    /* src/sim/timeline.c names the process "rok simulate: MODEL". */
    if (value != NULL && g_str_has_prefix(value, "rok simulate: ") && p->model == NULL)
      p->model = g_strdup(value + strlen("rok simulate: "));
  } else if (g_str_equal(name, "thread_name")) {
    if (!rok_json_get_int(event, "tid", TRUE, G_MININT64, G_MAXINT64, &tid, error) ||
        !rok_json_get_string(&args, "name", TRUE, &value, error))
      return FALSE;
    RokTimelineTrack *track = track_for(p, tid);
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

static gboolean parse_complete(RokTimelineFile *p, const RokJsonObj *event, GError **error) {
  g_autofree char *category = NULL;
  gint64 tid = 0;
  double ts = 0, dur = 0;
  if (!rok_json_get_string(event, "cat", FALSE, &category, error) ||
      !rok_json_get_int(event, "tid", TRUE, G_MININT64, G_MAXINT64, &tid, error) ||
      !rok_json_get_double(event, "ts", TRUE, 0, G_MAXDOUBLE, &ts, error) ||
      !rok_json_get_double(event, "dur", TRUE, 0, G_MAXDOUBLE, &dur, error))
    return FALSE;
  track_for(p, tid);
  for (guint k = 0; k < ROK_ACTION_KIND_COUNT; k++)
    if (g_strcmp0(category, rok_action_kind_name(k)) == 0) {
      RokTimelineSpan span = {tid, k, ts / 1e6, (ts + dur) / 1e6};
      g_array_append_val(p->spans, span);
    }
  return TRUE;
}

static gboolean parse_counter(RokTimelineFile *p, const RokJsonObj *event, GError **error) {
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
  RokTimelineSample sample = {ts / 1e6, bytes};
  g_array_append_val(p->memory, sample);
  return TRUE;
}

static gboolean parse_event(RokTimelineFile *p, const RokJsonObj *event, GError **error) {
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
static gboolean parse_other(RokTimelineFile *p, const RokJsonObj *root, GError **error) {
  g_auto(RokJsonObj) other = {0};
  return rok_json_child(root, "otherData", FALSE, &other, error) &&
         rok_json_get_string(&other, "strategy", FALSE, &p->strategy, error) &&
         rok_json_get_string(&other, "hw", FALSE, &p->hw, error) &&
         rok_json_get_uint(&other, "gpu_memory_bytes", FALSE, 1, G_MAXUINT64, &p->gpu_memory, error) &&
         rok_json_get_uint(&other, "budget_bytes", FALSE, 1, G_MAXUINT64, &p->budget, error) &&
         rok_json_get_uint(&other, "micro_batches", FALSE, 1, G_MAXUINT64, &p->micro_batches, error) &&
         rok_json_get_uint(&other, "detailed_micro_batches", FALSE, 1, G_MAXUINT64, &p->detailed_micro_batches,
                           error) &&
         rok_json_get_string(&other, "model", FALSE, &p->model, error); /* read before the process's name */
}

static gboolean parse(const RokJsonDoc *doc, RokTimelineFile *p, GError **error) {
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
  return TRUE;
}

RokTimelineFile *rok_timeline_file_read(const RokJsonDoc *doc, GError **error) {
  g_autoptr(RokTimelineFile) p = g_new0(RokTimelineFile, 1);
  p->tracks = g_array_new(FALSE, FALSE, sizeof(RokTimelineTrack));
  p->spans = g_array_new(FALSE, FALSE, sizeof(RokTimelineSpan));
  p->memory = g_array_new(FALSE, FALSE, sizeof(RokTimelineSample));
  g_array_set_clear_func(p->tracks, track_clear);
  return parse(doc, p, error) ? g_steal_pointer(&p) : NULL;
}
