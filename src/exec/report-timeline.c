/* The median step of a run as Chrome/Perfetto trace-event JSON, beside the
 * schedule's prediction: process 1 is what ran, process 2 what the
 * simulator predicted, each with one track per stream (as `rok simulate
 * --timeline` draws them; the predicted tracks have threads of their own,
 * "compute, predicted", ..., so that `rok plot`, which goes by thread,
 * draws them under the measured ones), complete events for compute and
 * copies and instants for frees. Microseconds with three decimals. */
#include "runner-private.h"
#include "rok/core.h"

static json_object *micros(double seconds) {
  gint64 ns = (gint64)(seconds * 1e9 + (seconds >= 0 ? 0.5 : -0.5));
  char text[48];
  g_snprintf(text, sizeof text, "%" G_GINT64_FORMAT ".%03d", ns / 1000, (int)ABS(ns % 1000));
  return json_object_new_double_s((double)ns / 1e3, text);
}

static json_object *meta(const char *name, int pid, int tid, const char *key, json_object *value) {
  json_object *event = json_object_new_object();
  json_object_object_add(event, "name", json_object_new_string(name));
  json_object_object_add(event, "ph", json_object_new_string("M"));
  json_object_object_add(event, "pid", json_object_new_int(pid));
  json_object_object_add(event, "tid", json_object_new_int(tid));
  json_object *args = json_object_new_object();
  json_object_object_add(args, key, value);
  json_object_object_add(event, "args", args);
  return event;
}

/* Threads: measured streams 1.., predicted streams after them. */
static int thread_of(RokStream stream, int pid) {
  return (int)stream + 1 + (pid - 1) * ROK_STREAM_COUNT;
}

static json_object *span_event(const RokExecSpan *span, int pid, double start, double end) {
  json_object *event = json_object_new_object();
  gboolean instant = span->kind == ROK_ACTION_FREE;
  json_object_object_add(event, "name", json_object_new_string(span->name));
  json_object_object_add(event, "cat", json_object_new_string(rok_action_kind_name(span->kind)));
  json_object_object_add(event, "ph", json_object_new_string(instant ? "i" : "X"));
  json_object_object_add(event, "pid", json_object_new_int(pid));
  json_object_object_add(event, "tid", json_object_new_int(thread_of(span->stream, pid)));
  json_object_object_add(event, "ts", micros(start));
  if (instant)
    json_object_object_add(event, "s", json_object_new_string("t"));
  else
    json_object_object_add(event, "dur", micros(end - start));
  json_object *args = json_object_new_object();
  json_object_object_add(args, "action", json_object_new_uint64(span->action));
  json_object_object_add(args, "micro_batch", json_object_new_uint64(span->micro_batch));
  if (span->bytes > 0)
    json_object_object_add(args, "bytes", json_object_new_uint64(span->bytes));
  json_object_object_add(event, "args", args);
  return event;
}

json_object *rok_exec_report_timeline_to_json(const RokExecReport *r) {
  json_object *events = json_object_new_array();
  const char *titles[] = {"rok execute: measured", "rok execute: predicted"};
  for (int p = 0; p < 2; p++) {
    g_autofree char *title = g_strdup_printf("%s (%s, %s)", titles[p], r->model, r->strategy);
    json_object_array_add(events, meta("process_name", p + 1, 0, "name", json_object_new_string(title)));
    json_object_array_add(events, meta("process_sort_index", p + 1, 0, "sort_index", json_object_new_int(p)));
    for (guint s = 0; s < ROK_STREAM_COUNT; s++) {
      int tid = thread_of(s, p + 1);
      const char *stream = rok_stream_name(s);
      g_autofree char *name = p == 0 ? g_strdup(stream) : g_strdup_printf("%s, predicted", stream);
      json_object_array_add(events, meta("thread_name", p + 1, tid, "name", json_object_new_string(name)));
      json_object_array_add(events, meta("thread_sort_index", p + 1, tid, "sort_index", json_object_new_int(tid)));
    }
  }
  for (guint i = 0; i < r->timeline->len; i++) {
    const RokExecSpan *span = &g_array_index(r->timeline, RokExecSpan, i);
    json_object_array_add(events, span_event(span, 1, span->start_s, span->end_s));
    json_object_array_add(events, span_event(span, 2, span->predicted_start_s, span->predicted_end_s));
  }
  json_object *root = json_object_new_object();
  json_object_object_add(root, "displayTimeUnit", json_object_new_string("ns"));
  json_object_object_add(root, "traceEvents", events);
  return root;
}

gboolean rok_exec_report_timeline_save(const RokExecReport *report, const char *path, GError **error) {
  json_object *root = rok_exec_report_timeline_to_json(report);
  gboolean ok = rok_json_write_file(root, path, error);
  json_object_put(root);
  return ok;
}
