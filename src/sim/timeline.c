/* The action log as a timeline file (rok/schedule.h writes the format):
 * one process, a thread per stream, and counter tracks for GPU memory and
 * the staging buffer. */
#include "rok/sim.h"

#include "rok/core.h"

enum { PID = 1 };

static const char *action_name(const RokAction *a, const RokTrace *trace) {
  if (a->op != ROK_NO_ID && a->op < trace->ops->len)
    return rok_trace_op(trace, a->op)->name;
  if (a->tensor != ROK_NO_ID && a->tensor < trace->tensors->len)
    return rok_trace_tensor(trace, a->tensor)->name;
  return rok_action_kind_name(a->kind);
}

json_object *rok_sim_timeline_to_json(const RokSimResult *result, const RokTrace *trace, GError **error) {
  if (result->actions == NULL || result->samples == NULL) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE,
                        "a timeline needs a simulation run that records its actions");
    return NULL;
  }
  RokTimelineJson *timeline = rok_timeline_json_new();
  g_autofree char *title = g_strdup_printf("rok simulate: %s", trace->model_name ? trace->model_name : "trace");
  rok_timeline_json_name_process(timeline, PID, title, -1);
  for (guint s = 0; s < ROK_STREAM_COUNT; s++)
    rok_timeline_json_name_thread(timeline, PID, (int)s + 1, rok_stream_name(s), (int)s);
  for (guint i = 0; i < result->actions->len; i++) {
    const RokAction *a = &g_array_index(result->actions, RokAction, i);
    RokTimelineAction event = {.name = action_name(a, trace), .kind = a->kind, .action = i,
                               .micro_batch = a->micro_batch, .start_ns = a->start_ns, .end_ns = a->end_ns,
                               .show_bytes = a->bytes > 0 || a->tensor != ROK_NO_ID, .bytes = a->bytes,
                               .gpudirect = a->gpudirect};
    rok_timeline_json_add_action(timeline, PID, (int)a->stream + 1, &event);
  }
  for (guint i = 0; i < result->samples->len; i++) {
    const RokSimSample *sample = &g_array_index(result->samples, RokSimSample, i);
    rok_timeline_json_add_counter(timeline, PID, "gpu memory", sample->time_ns, sample->gpu_bytes);
    rok_timeline_json_add_counter(timeline, PID, "staging buffer", sample->time_ns, sample->staging_bytes);
  }
  return rok_timeline_json_finish(timeline);
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
