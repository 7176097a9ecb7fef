/* The ROK curve re-drawn from a plan file (rok-plan/1): its "curve" points
 * and its "curve_baselines" as labelled points, drawn by the planner's own
 * chart (rok_curve_save_chart), so the bytes equal what rok plan drew. */
#include "rok/charts.h"
#include "rok/core.h"
#include "rok/plan.h"

static gboolean read_point(const RokJsonObj *obj, RokCurvePoint *pt, GError **error) {
  return rok_json_get_uint(obj, "peak_bytes", TRUE, 0, G_MAXUINT64, &pt->peak_bytes, error) &&
         rok_json_get_uint(obj, "activation_peak_bytes", TRUE, 0, G_MAXUINT64, &pt->activation_peak_bytes, error) &&
         rok_json_get_double(obj, "step_time_s", TRUE, 0, G_MAXDOUBLE, &pt->step_time_s, error) &&
         rok_json_get_double(obj, "tokens_per_s", TRUE, 0, G_MAXDOUBLE, &pt->tokens_per_s, error);
}

static gboolean read_decisions(const RokJsonObj *point, RokCurvePoint *pt, GError **error) {
  g_auto(RokJsonObj) bytes = {0};
  if (!rok_json_child(point, "decision_bytes", FALSE, &bytes, error))
    return FALSE;
  for (guint d = 0; d < ROK_DECISION_COUNT; d++)
    if (!rok_json_get_uint(&bytes, rok_decision_name(d), FALSE, 0, G_MAXUINT64, &pt->decision_bytes[d], error))
      return FALSE;
  return TRUE;
}

static gboolean read_strategy(const RokJsonObj *obj, const char *key, RokStrategy *strategy, GError **error) {
  g_autofree char *name = NULL;
  g_autoptr(GError) local = NULL;
  if (!rok_json_get_string(obj, key, TRUE, &name, error))
    return FALSE;
  if (rok_strategy_from_name(name, strategy, &local))
    return TRUE;
  g_autofree char *path = g_strdup_printf("%s%s%s", obj->path, *obj->path ? "." : "", key);
  rok_json_error(error, obj->doc, path, "%s", local->message);
  return FALSE;
}

/* One point of "curve" or "curve_baselines": the same fields. */
static gboolean read_curve_point(const RokJsonObj *root, const char *key, json_object *list, gsize i,
                                 RokCurvePoint *pt, GError **error) {
  g_auto(RokJsonObj) obj = {0};
  return rok_json_element(root, key, list, i, &obj, error) && read_point(&obj, pt, error) &&
         rok_json_get_uint(&obj, "budget_bytes", TRUE, 0, G_MAXUINT64, &pt->budget_bytes, error) &&
         read_decisions(&obj, pt, error) && read_strategy(&obj, "source", &pt->source, error);
}

static gboolean read_points(const RokJsonObj *root, RokCurve *curve, GError **error) {
  json_object *points = NULL;
  if (!rok_json_get_array(root, "curve", TRUE, &points, error))
    return FALSE;
  for (gsize i = 0; i < json_object_array_length(points); i++) {
    RokCurvePoint pt = {0};
    if (!read_curve_point(root, "curve", points, i, &pt, error))
      return FALSE;
    g_array_append_val(curve->points, pt);
  }
  return TRUE;
}

/* The baselines exactly as the planner drew them (each on its own, not
 * squeezed into the plan's budget), named by their "source". */
static gboolean read_baselines(const RokJsonObj *root, RokCurve *curve, GError **error) {
  json_object *list = NULL;
  if (!rok_json_get_array(root, "curve_baselines", TRUE, &list, error))
    return FALSE;
  for (gsize i = 0; i < json_object_array_length(list); i++) {
    RokCurvePoint pt = {0};
    if (!read_curve_point(root, "curve_baselines", list, i, &pt, error))
      return FALSE;
    if (pt.source >= ROK_STRATEGY_BASELINE_COUNT) {
      g_autofree char *path = g_strdup_printf("curve_baselines[%" G_GSIZE_FORMAT "].source", i);
      rok_json_error(error, root->doc, path, "rok is not a baseline");
      return FALSE;
    }
    curve->baselines[pt.source] = pt;
    curve->has_baseline[pt.source] = TRUE;
  }
  return TRUE;
}

static gboolean read_machine(const RokJsonObj *root, RokCurve *curve, GError **error) {
  g_auto(RokJsonObj) predicted = {0};
  return rok_json_get_string(root, "model", TRUE, &curve->model_name, error) &&
         rok_json_get_string(root, "hw", TRUE, &curve->hw_name, error) &&
         rok_json_child(root, "predicted", TRUE, &predicted, error) &&
         rok_json_get_uint(&predicted, "fixed_bytes", TRUE, 0, G_MAXUINT64, &curve->fixed_bytes, error) &&
         rok_json_get_uint(&predicted, "gpu_memory_bytes", TRUE, 1, G_MAXUINT64, &curve->gpu_memory_bytes, error);
}

/* The chosen plan ("predicted") and the baselines under the plan's budget
 * ("baselines", those available), as the table of rok plan shows them. */
static gboolean read_marks(const RokJsonObj *root, RokCurveMarks *marks, GError **error) {
  g_auto(RokJsonObj) predicted = {0};
  json_object *list = NULL;
  if (!rok_json_child(root, "predicted", TRUE, &predicted, error) || !read_point(&predicted, &marks->chosen, error) ||
      !rok_json_get_array(root, "baselines", TRUE, &list, error))
    return FALSE;
  marks->has_chosen = TRUE;
  for (gsize i = 0; i < json_object_array_length(list); i++) {
    g_auto(RokJsonObj) obj = {0};
    RokStrategy strategy;
    gboolean available = FALSE;
    if (!rok_json_element(root, "baselines", list, i, &obj, error) ||
        !read_strategy(&obj, "strategy", &strategy, error) ||
        !rok_json_get_bool(&obj, "available", TRUE, &available, error))
      return FALSE;
    if (!available || strategy >= ROK_STRATEGY_BASELINE_COUNT)
      continue;
    if (!read_point(&obj, &marks->baselines[strategy], error))
      return FALSE;
    marks->has_baseline[strategy] = TRUE;
  }
  return TRUE;
}

gboolean rok_charts_plan_curve_save(const RokJsonDoc *doc, const char *path, GError **error) {
  g_auto(RokJsonObj) root = {0};
  guint64 budget = 0;
  if (!rok_json_root(doc, &root, error) || !rok_json_check_format(&root, "rok-plan/1", error) ||
      !rok_json_get_uint(&root, "budget_bytes", TRUE, 1, G_MAXUINT64, &budget, error))
    return FALSE;
  g_autoptr(RokCurve) curve = g_new0(RokCurve, 1);
  curve->points = g_array_new(FALSE, TRUE, sizeof(RokCurvePoint));
  RokCurveMarks marks = {.budget_bytes = budget};
  if (!read_machine(&root, curve, error) || !read_points(&root, curve, error) ||
      !read_baselines(&root, curve, error) || !read_marks(&root, &marks, error))
    return FALSE;
  if (curve->points->len == 0) {
    rok_json_error(error, doc, "curve", "no points to draw");
    return FALSE;
  }
  return rok_curve_save_chart(curve, &marks, path, error);
}
