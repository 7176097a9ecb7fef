/* rok-plan/1: reading a plan file back, checked against its trace. */
#include "rok/core.h"
#include "rok/plan.h"

static const char *const top_keys[] = {
    "format",  "strategy",  "model", "hw",     "trace_sha256", "budget_bytes", "feasible",
    "options", "summary",   "predicted", "baselines", "curve", "curve_baselines", "ssd", "layers", "min_budget_bytes",
    "min_budget_how", "tensors", NULL};
/* The report: kept as read, checked for its kind of value only. */
static const struct {
  const char *key;
  json_type type;
} report_keys[] = {
    {"summary", json_type_string}, {"predicted", json_type_object}, {"baselines", json_type_array},
    {"curve", json_type_array},    {"curve_baselines", json_type_array}, {"ssd", json_type_object},
    {"layers", json_type_array},
    {"min_budget_bytes", json_type_int}, {"min_budget_how", json_type_string},
};

/* The next saved tensor at or after `from`, or the count of tensors. */
static guint next_saved(const RokTrace *trace, guint from) {
  while (from < trace->tensors->len && !rok_tensor_is_saved(rok_trace_tensor(trace, from)))
    from++;
  return from;
}

static gboolean read_tensor(const RokJsonObj *e, const RokTrace *trace, guint expected, RokDecision *d,
                            GError **error) {
  static const char *const keys[] = {"id", "name", "layer", "bytes", "decision", NULL};
  const RokTensor *t = rok_trace_tensor(trace, expected);
  guint64 id = 0, bytes = 0;
  gint64 layer = 0;
  g_autofree char *name = NULL;
  int decision = 0;
  if (!rok_json_only_keys(e, keys, error) || !rok_json_get_uint(e, "id", TRUE, 0, G_MAXUINT, &id, error) ||
      !rok_json_get_string(e, "name", TRUE, &name, error) ||
      !rok_json_get_int(e, "layer", TRUE, -1, G_MAXINT, &layer, error) ||
      !rok_json_get_uint(e, "bytes", TRUE, 0, G_MAXUINT64, &bytes, error))
    return FALSE;
  const char *decisions[ROK_DECISION_COUNT + 1] = {NULL};
  for (guint i = 0; i < ROK_DECISION_COUNT; i++)
    decisions[i] = rok_decision_name(i);
  if (!rok_json_get_enum(e, "decision", TRUE, decisions, &decision, error))
    return FALSE;
  if (id != expected || g_strcmp0(name, t->name) != 0 || layer != t->layer || bytes != t->bytes) {
    rok_json_error(error, e->doc, e->path, "expected saved tensor %u (%s, layer %d, %" G_GUINT64_FORMAT
                   " bytes) of the trace", expected, t->name, t->layer, t->bytes);
    return FALSE;
  }
  if (decision == ROK_DECISION_RECOMPUTE && !t->recomputable) {
    rok_json_error(error, e->doc, e->path, "%s cannot be recomputed", t->name);
    return FALSE;
  }
  *d = decision;
  return TRUE;
}

static gboolean read_tensors(const RokJsonObj *root, const RokTrace *trace, RokStepPlan *plan, GError **error) {
  json_object *list = NULL;
  if (!rok_json_get_array(root, "tensors", TRUE, &list, error))
    return FALSE;
  guint expected = next_saved(trace, 0);
  gsize n = json_object_array_length(list);
  for (gsize i = 0; i < n; i++) {
    g_auto(RokJsonObj) e = {0};
    if (expected >= trace->tensors->len) {
      g_autofree char *path = g_strdup_printf("tensors[%zu]", i);
      rok_json_error(error, root->doc, path, "the trace has only %zu saved tensors", i);
      return FALSE;
    }
    if (!rok_json_element(root, "tensors", list, i, &e, error) ||
        !read_tensor(&e, trace, expected, &plan->decisions[expected], error))
      return FALSE;
    expected = next_saved(trace, expected + 1);
  }
  if (expected < trace->tensors->len) {
    rok_json_error(error, root->doc, "tensors", "saved tensor %u (%s) is missing", expected,
                   rok_trace_tensor(trace, expected)->name);
    return FALSE;
  }
  return TRUE;
}

static gboolean read_report(const RokJsonObj *root, RokPlanFile *file, GError **error) {
  file->report = json_object_new_object();
  for (guint i = 0; i < G_N_ELEMENTS(report_keys); i++) {
    json_object *value = NULL;
    if (!json_object_object_get_ex(root->obj, report_keys[i].key, &value))
      continue;
    if (!json_object_is_type(value, report_keys[i].type)) {
      rok_json_error(error, root->doc, report_keys[i].key, "must be %s", json_type_to_name(report_keys[i].type));
      return FALSE;
    }
    json_object_object_add(file->report, report_keys[i].key, json_object_get(value));
  }
  return TRUE;
}

static gboolean read_head(const RokJsonObj *root, const RokTrace *trace, RokPlanFile *file, GError **error) {
  if (!rok_json_check_format(root, "rok-plan/1", error) || !rok_json_only_keys(root, top_keys, error) ||
      !rok_json_get_string(root, "strategy", TRUE, &file->strategy, error) ||
      !rok_json_get_string(root, "model", TRUE, &file->model_name, error) ||
      !rok_json_get_string(root, "hw", TRUE, &file->hw_name, error) ||
      !rok_json_get_string(root, "trace_sha256", TRUE, &file->trace_sha256, error) ||
      !rok_json_get_uint(root, "budget_bytes", TRUE, 0, ROK_MAX_TRACE_COUNT, &file->budget_bytes, error) ||
      !rok_json_get_bool(root, "feasible", TRUE, &file->feasible, error))
    return FALSE;
  RokStrategy strategy;
  if (!rok_strategy_from_name(file->strategy, &strategy, NULL)) {
    rok_json_error(error, root->doc, "strategy", "unknown strategy \"%s\"", file->strategy);
    return FALSE;
  }
  g_autofree char *hash = rok_trace_sha256(trace, NULL);
  if (g_strcmp0(hash, file->trace_sha256) != 0) {
    rok_json_error(error, root->doc, "trace_sha256", "the plan was made for another trace (this one is %s)", hash);
    return FALSE;
  }
  return TRUE;
}

RokPlanFile *rok_plan_file_parse(const char *name, const char *text, gsize length, const RokTrace *trace,
                                 GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse(name, text, length, error);
  g_auto(RokJsonObj) root = {0};
  if (doc == NULL || !rok_json_root(doc, &root, error))
    return NULL;
  g_autoptr(RokPlanFile) file = g_new0(RokPlanFile, 1);
  if (!read_head(&root, trace, file, error) || !read_report(&root, file, error))
    return NULL;
  if (file->feasible) {
    file->plan = rok_step_plan_new(trace);
    if (!rok_step_options_read(&root, &file->plan->options, error) || !read_tensors(&root, trace, file->plan, error))
      return NULL;
  }
  return g_steal_pointer(&file);
}

RokPlanFile *rok_plan_file_load(const char *path, const RokTrace *trace, GError **error) {
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!rok_json_read_file(path, &text, &length, error))
    return NULL;
  return rok_plan_file_parse(path, text, length, trace, error);
}
