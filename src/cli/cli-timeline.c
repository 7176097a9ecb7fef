/* --timeline and --timeline-chart of rok simulate and rok plan: one writer
 * and one chart for any simulated plan, so that both commands give the same
 * bytes for the same step. */
#include <string.h>

#include "cli.h"
#include "rok/charts.h"
#include "rok/core.h"

/* What the events alone do not say, for the chart's title and limits
 * ("otherData", read back by rok_timeline_file_read). */
static void add_other(json_object *root, const RokSimResult *r, const RokTrace *trace, const RokHw *hw,
                      const char *strategy) {
  json_object *other = json_object_new_object();
  json_object_object_add(other, "model", json_object_new_string(trace->model_name ? trace->model_name : "trace"));
  json_object_object_add(other, "hw", json_object_new_string(hw->name));
  json_object_object_add(other, "strategy", json_object_new_string(strategy));
  json_object_object_add(other, "gpu_memory_bytes", json_object_new_uint64(r->gpu_memory_bytes));
  json_object_object_add(other, "budget_bytes", json_object_new_uint64(r->budget_bytes));
  json_object_object_add(other, "micro_batches", json_object_new_uint64(r->micro_batches));
  json_object_object_add(other, "detailed_micro_batches", json_object_new_uint64(r->detailed_micro_batches));
  json_object_object_add(root, "otherData", other);
}

/* The chart goes through the timeline's JSON text, as `rok plot` reads it
 * from the file, so that all of them draw the same bytes. */
static gboolean save_chart(json_object *root, const char *path, GError **error) {
  g_autofree char *text = rok_json_to_string(root);
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse("timeline", text, strlen(text), error);
  gboolean ok = doc != NULL && rok_charts_timeline_save(doc, 0, 0, path, error);
  rok_charts_release();
  return ok;
}

gboolean cli_timeline_write(const RokSimResult *r, const RokTrace *trace, const RokHw *hw, const char *strategy,
                            const char *path, const char *chart_path, GError **error) {
  if (path == NULL && chart_path == NULL)
    return TRUE;
  json_object *root = rok_sim_timeline_to_json(r, trace, error);
  if (root == NULL)
    return FALSE;
  add_other(root, r, trace, hw, strategy);
  gboolean ok = (path == NULL || rok_json_write_file(root, path, error)) &&
                (chart_path == NULL || save_chart(root, chart_path, error));
  json_object_put(root);
  return ok;
}
