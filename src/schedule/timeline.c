/* The timeline file: a step as Chrome/Perfetto trace-event JSON, written
 * the same way for a simulated step and for a measured one. */
#include "rok/schedule.h"

struct _RokTimelineJson {
  json_object *events; /* the "traceEvents" array, in the order added */
};

RokTimelineJson *rok_timeline_json_new(void) {
  RokTimelineJson *t = g_new0(RokTimelineJson, 1);
  t->events = json_object_new_array();
  return t;
}

void rok_timeline_json_free(RokTimelineJson *t) {
  if (t == NULL)
    return;
  json_object_put(t->events);
  g_free(t);
}

/* Microseconds with exactly three decimals: whole nanoseconds, the same
 * text on every run. */
static json_object *micros(gint64 ns) {
  char text[48];
  guint64 magnitude = ns < 0 ? (guint64)0 - (guint64)ns : (guint64)ns;
  g_snprintf(text, sizeof text, "%s%" G_GUINT64_FORMAT ".%03u", ns < 0 ? "-" : "", magnitude / 1000,
             (guint)(magnitude % 1000));
  return json_object_new_double_s((double)ns / 1e3, text);
}

static void add_meta(RokTimelineJson *t, const char *name, int pid, int tid, const char *key, json_object *value) {
  json_object *event = json_object_new_object();
  json_object_object_add(event, "name", json_object_new_string(name));
  json_object_object_add(event, "ph", json_object_new_string("M"));
  json_object_object_add(event, "pid", json_object_new_int(pid));
  json_object_object_add(event, "tid", json_object_new_int(tid));
  json_object *args = json_object_new_object();
  json_object_object_add(args, key, value);
  json_object_object_add(event, "args", args);
  json_object_array_add(t->events, event);
}

void rok_timeline_json_name_process(RokTimelineJson *t, int pid, const char *name, int sort_index) {
  add_meta(t, "process_name", pid, 0, "name", json_object_new_string(name));
  if (sort_index >= 0)
    add_meta(t, "process_sort_index", pid, 0, "sort_index", json_object_new_int(sort_index));
}

void rok_timeline_json_name_thread(RokTimelineJson *t, int pid, int tid, const char *name, int sort_index) {
  add_meta(t, "thread_name", pid, tid, "name", json_object_new_string(name));
  add_meta(t, "thread_sort_index", pid, tid, "sort_index", json_object_new_int(sort_index));
}

void rok_timeline_json_add_action(RokTimelineJson *t, int pid, int tid, const RokTimelineAction *a) {
  json_object *event = json_object_new_object();
  gboolean instant = a->kind == ROK_ACTION_FREE;
  json_object_object_add(event, "name", json_object_new_string(a->name));
  json_object_object_add(event, "cat", json_object_new_string(rok_action_kind_name(a->kind)));
  json_object_object_add(event, "ph", json_object_new_string(instant ? "i" : "X"));
  json_object_object_add(event, "pid", json_object_new_int(pid));
  json_object_object_add(event, "tid", json_object_new_int(tid));
  json_object_object_add(event, "ts", micros(a->start_ns));
  if (instant)
    json_object_object_add(event, "s", json_object_new_string("t"));
  else
    json_object_object_add(event, "dur", micros(a->end_ns - a->start_ns));
  json_object *args = json_object_new_object();
  json_object_object_add(args, "action", json_object_new_uint64(a->action));
  json_object_object_add(args, "micro_batch", json_object_new_uint64(a->micro_batch));
  if (a->show_bytes)
    json_object_object_add(args, "bytes", json_object_new_uint64(a->bytes));
  if (a->gpudirect)
    json_object_object_add(args, "gpudirect", json_object_new_boolean(TRUE));
  json_object_object_add(event, "args", args);
  json_object_array_add(t->events, event);
}

void rok_timeline_json_add_counter(RokTimelineJson *t, int pid, const char *name, gint64 ns, guint64 bytes) {
  json_object *event = json_object_new_object();
  json_object_object_add(event, "name", json_object_new_string(name));
  json_object_object_add(event, "ph", json_object_new_string("C"));
  json_object_object_add(event, "pid", json_object_new_int(pid));
  json_object_object_add(event, "ts", micros(ns));
  json_object *args = json_object_new_object();
  json_object_object_add(args, "bytes", json_object_new_uint64(bytes));
  json_object_object_add(event, "args", args);
  json_object_array_add(t->events, event);
}

json_object *rok_timeline_json_finish(RokTimelineJson *t) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "displayTimeUnit", json_object_new_string("ns"));
  json_object_object_add(root, "traceEvents", g_steal_pointer(&t->events));
  rok_timeline_json_free(t);
  return root;
}
