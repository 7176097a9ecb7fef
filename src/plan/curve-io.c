/* The ROK curve as JSON and CSV. */
#include "planner-private.h"

#include "rok/core.h"

static json_object *point_json(const RokCurvePoint *pt) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "budget_bytes", json_object_new_uint64(pt->budget_bytes));
  json_object_object_add(o, "step_time_s", rok_json_new_double(pt->step_time_s));
  json_object_object_add(o, "tokens_per_s", rok_json_new_double(pt->tokens_per_s));
  json_object_object_add(o, "peak_bytes", json_object_new_uint64(pt->peak_bytes));
  json_object_object_add(o, "activation_peak_bytes", json_object_new_uint64(pt->activation_peak_bytes));
  json_object *bytes = json_object_new_object();
  for (guint d = 0; d < ROK_DECISION_COUNT; d++)
    json_object_object_add(bytes, rok_decision_name(d), json_object_new_uint64(pt->decision_bytes[d]));
  json_object_object_add(o, "decision_bytes", bytes);
  json_object_object_add(o, "source", json_object_new_string(rok_strategy_name(pt->source)));
  return o;
}

json_object *rok_curve_to_json(const RokCurve *curve) {
  json_object *list = json_object_new_array();
  for (guint i = 0; i < curve->points->len; i++)
    json_object_array_add(list, point_json(&g_array_index(curve->points, RokCurvePoint, i)));
  return list;
}

json_object *rok_curve_baselines_to_json(const RokCurve *curve) {
  json_object *list = json_object_new_array();
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    if (curve->has_baseline[b])
      json_object_array_add(list, point_json(&curve->baselines[b]));
  return list;
}

static void csv_row(GString *out, const char *series, const RokCurvePoint *pt) {
  g_string_append_printf(out, "%s,%" G_GUINT64_FORMAT ",%.17g,%.17g,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT,
                         series, pt->budget_bytes, pt->step_time_s, pt->tokens_per_s, pt->peak_bytes,
                         pt->activation_peak_bytes);
  for (guint d = 0; d < ROK_DECISION_COUNT; d++)
    g_string_append_printf(out, ",%" G_GUINT64_FORMAT, pt->decision_bytes[d]);
  g_string_append_printf(out, ",%s\n", rok_strategy_name(pt->source));
}

char *rok_curve_to_csv(const RokCurve *curve) {
  GString *out = g_string_new("series,budget_bytes,step_time_s,tokens_per_s,peak_bytes,activation_peak_bytes");
  for (guint d = 0; d < ROK_DECISION_COUNT; d++) {
    g_autofree char *name = g_strdelimit(g_strdup(rok_decision_name(d)), "-", '_');
    g_string_append_printf(out, ",%s_bytes", name);
  }
  g_string_append(out, ",source\n");
  for (guint i = 0; i < curve->points->len; i++)
    csv_row(out, "rok", &g_array_index(curve->points, RokCurvePoint, i));
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    if (curve->has_baseline[b])
      csv_row(out, rok_strategy_name(b), &curve->baselines[b]);
  return g_string_free(out, FALSE);
}

gboolean rok_curve_save_csv(const RokCurve *curve, const char *path, GError **error) {
  g_autofree char *text = rok_curve_to_csv(curve);
  return rok_file_write(path, text, strlen(text), error);
}
