/* The action log as Chrome/Perfetto trace-event JSON (the "JSON Array
 * Format" inside an object): one thread per stream, complete events
 * ("X") for compute and transfer legs, instant events for frees, and
 * counter tracks for GPU memory and the staging buffer. Timestamps are
 * microseconds written with exactly three decimals, so files are
 * byte-identical across runs. */
#include "rok/sim.h"

#include "rok/core.h"

enum { PID = 1 };

static json_object *micros(gint64 ns) {
  char text[48];
  g_snprintf(text, sizeof text, "%" G_GINT64_FORMAT ".%03d", ns / 1000, (int)(ns % 1000));
  return json_object_new_double_s((double)ns / 1e3, text);
}

static json_object *meta(const char *name, int tid, const char *key, json_object *value) {
  json_object *event = json_object_new_object();
  json_object_object_add(event, "name", json_object_new_string(name));
  json_object_object_add(event, "ph", json_object_new_string("M"));
  json_object_object_add(event, "pid", json_object_new_int(PID));
  json_object_object_add(event, "tid", json_object_new_int(tid));
  json_object *args = json_object_new_object();
  json_object_object_add(args, key, value);
  json_object_object_add(event, "args", args);
  return event;
}

static const char *action_name(const RokAction *a, const RokTrace *trace) {
  if (a->op != ROK_NO_ID && a->op < trace->ops->len)
    return rok_trace_op(trace, a->op)->name;
  if (a->tensor != ROK_NO_ID && a->tensor < trace->tensors->len)
    return rok_trace_tensor(trace, a->tensor)->name;
  return rok_action_kind_name(a->kind);
}

static json_object *action_event(const RokAction *a, guint index, const RokTrace *trace) {
  json_object *event = json_object_new_object();
  json_object_object_add(event, "name", json_object_new_string(action_name(a, trace)));
  json_object_object_add(event, "cat", json_object_new_string(rok_action_kind_name(a->kind)));
  gboolean instant = a->kind == ROK_ACTION_FREE;
  json_object_object_add(event, "ph", json_object_new_string(instant ? "i" : "X"));
  json_object_object_add(event, "pid", json_object_new_int(PID));
  json_object_object_add(event, "tid", json_object_new_int((int)a->stream + 1));
  json_object_object_add(event, "ts", micros(a->start_ns));
  if (instant)
    json_object_object_add(event, "s", json_object_new_string("t"));
  else
    json_object_object_add(event, "dur", micros(a->end_ns - a->start_ns));
  json_object *args = json_object_new_object();
  json_object_object_add(args, "action", json_object_new_uint64(index));
  json_object_object_add(args, "micro_batch", json_object_new_uint64(a->micro_batch));
  if (a->bytes > 0 || a->tensor != ROK_NO_ID)
    json_object_object_add(args, "bytes", json_object_new_uint64(a->bytes));
  if (a->gpudirect)
    json_object_object_add(args, "gpudirect", json_object_new_boolean(TRUE));
  json_object_object_add(event, "args", args);
  return event;
}

static json_object *counter(const char *name, gint64 ns, guint64 bytes) {
  json_object *event = json_object_new_object();
  json_object_object_add(event, "name", json_object_new_string(name));
  json_object_object_add(event, "ph", json_object_new_string("C"));
  json_object_object_add(event, "pid", json_object_new_int(PID));
  json_object_object_add(event, "ts", micros(ns));
  json_object *args = json_object_new_object();
  json_object_object_add(args, "bytes", json_object_new_uint64(bytes));
  json_object_object_add(event, "args", args);
  return event;
}

json_object *rok_sim_timeline_to_json(const RokSimResult *result, const RokTrace *trace, GError **error) {
  if (result->actions == NULL || result->samples == NULL) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE,
                        "a timeline needs a simulation run that records its actions");
    return NULL;
  }
  json_object *events = json_object_new_array();
  g_autofree char *title = g_strdup_printf("rok simulate: %s", trace->model_name ? trace->model_name : "trace");
  json_object_array_add(events, meta("process_name", 0, "name", json_object_new_string(title)));
  for (guint s = 0; s < ROK_STREAM_COUNT; s++) {
    json_object_array_add(events, meta("thread_name", (int)s + 1, "name", json_object_new_string(rok_stream_name(s))));
    json_object_array_add(events, meta("thread_sort_index", (int)s + 1, "sort_index", json_object_new_int((int)s)));
  }
  for (guint i = 0; i < result->actions->len; i++)
    json_object_array_add(events, action_event(&g_array_index(result->actions, RokAction, i), i, trace));
  for (guint i = 0; i < result->samples->len; i++) {
    const RokSimSample *sample = &g_array_index(result->samples, RokSimSample, i);
    json_object_array_add(events, counter("gpu memory", sample->time_ns, sample->gpu_bytes));
    json_object_array_add(events, counter("staging buffer", sample->time_ns, sample->staging_bytes));
  }
  json_object *root = json_object_new_object();
  json_object_object_add(root, "displayTimeUnit", json_object_new_string("ns"));
  json_object_object_add(root, "traceEvents", events);
  return root;
}

gboolean rok_sim_timeline_save(const RokSimResult *result, const RokTrace *trace, const char *path,
                               GError **error) {
  json_object *root = rok_sim_timeline_to_json(result, trace, error);
  if (root == NULL)
    return FALSE;
  gboolean ok = rok_json_write_file(root, path, error);
  json_object_put(root);
  return ok;
}
