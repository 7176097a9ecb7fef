/* rok-plan/1: writing a plan file.
 *
 * The file names the trace by the SHA-256 of its rok-trace/1 text rather
 * than embedding it (the schedule file embeds it: that is the one an
 * executor runs), lists the decision of every saved tensor, and carries
 * the report (predicted figures, baselines, curve, SSD figures, the
 * per-layer table) as it was made. */
#include "rok/core.h"
#include "rok/plan.h"

void rok_plan_file_free(RokPlanFile *file) {
  if (file == NULL)
    return;
  g_free(file->strategy);
  g_free(file->model_name);
  g_free(file->hw_name);
  g_free(file->trace_sha256);
  rok_step_plan_free(file->plan);
  if (file->report != NULL)
    json_object_put(file->report);
  g_free(file);
}

static json_object *tensors_json(const RokStepPlan *plan, const RokTrace *trace) {
  json_object *list = json_object_new_array();
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (!rok_tensor_is_saved(tensor))
      continue;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_uint64(t));
    json_object_object_add(o, "name", json_object_new_string(tensor->name));
    json_object_object_add(o, "layer", json_object_new_int(tensor->layer));
    json_object_object_add(o, "bytes", json_object_new_uint64(tensor->bytes));
    json_object_object_add(o, "decision", json_object_new_string(rok_decision_name(plan->decisions[t])));
    json_object_array_add(list, o);
  }
  return list;
}

json_object *rok_plan_file_to_json(const RokPlanFile *file, const RokTrace *trace) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "format", json_object_new_string("rok-plan/1"));
  json_object_object_add(o, "strategy", json_object_new_string(file->strategy));
  json_object_object_add(o, "model", json_object_new_string(file->model_name ? file->model_name : ""));
  json_object_object_add(o, "hw", json_object_new_string(file->hw_name ? file->hw_name : ""));
  json_object_object_add(o, "trace_sha256", json_object_new_string(file->trace_sha256 ? file->trace_sha256 : ""));
  json_object_object_add(o, "budget_bytes", json_object_new_uint64(file->budget_bytes));
  json_object_object_add(o, "feasible", json_object_new_boolean(file->feasible));
  if (file->plan != NULL)
    json_object_object_add(o, "options", rok_step_options_to_json(&file->plan->options));
  if (file->report != NULL) {
    json_object_object_foreach(file->report, key, value) json_object_object_add(o, key, json_object_get(value));
  }
  if (file->plan != NULL)
    json_object_object_add(o, "tensors", tensors_json(file->plan, trace));
  return o;
}

gboolean rok_plan_file_save(const RokPlanFile *file, const RokTrace *trace, const char *path, GError **error) {
  json_object *doc = rok_plan_file_to_json(file, trace);
  GError *local = NULL;
  gboolean ok = rok_json_write_file(doc, path, &local);
  json_object_put(doc);
  if (!ok) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "%s", local->message);
    g_error_free(local);
  }
  return ok;
}
