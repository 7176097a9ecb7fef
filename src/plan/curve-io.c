/* The ROK curve as JSON and CSV. */
#include "planner-private.h"

#include "rok/core.h"

/* Per GPU: tokens/s, model FLOP/s and MFU (as RokSimResult's). */
static void per_gpu(const RokCurve *curve, const RokCurvePoint *pt, double out[3]) {
  gboolean known = curve->replica_gpus > 0 && pt->step_time_s > 0;
  out[0] = known ? pt->tokens_per_s / (double)curve->replica_gpus : 0;
  out[1] = known ? curve->model_flops_per_step / pt->step_time_s : 0;
  out[2] = known && curve->peak_flops > 0 ? out[1] / curve->peak_flops : 0;
}

static json_object *point_json(const RokCurve *curve, const RokCurvePoint *pt) {
  double gpu[3];
  per_gpu(curve, pt, gpu);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "budget_bytes", json_object_new_uint64(pt->budget_bytes));
  json_object_object_add(o, "step_time_s", rok_json_new_double(pt->step_time_s));
  json_object_object_add(o, "tokens_per_s", rok_json_new_double(pt->tokens_per_s));
  json_object_object_add(o, "tokens_per_gpu_s", rok_json_new_double(gpu[0]));
  json_object_object_add(o, "model_flops_per_gpu_s", rok_json_new_double(gpu[1]));
  json_object_object_add(o, "mfu", rok_json_new_double(gpu[2]));
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
    json_object_array_add(list, point_json(curve, &g_array_index(curve->points, RokCurvePoint, i)));
  return list;
}

json_object *rok_curve_baselines_to_json(const RokCurve *curve) {
  json_object *list = json_object_new_array();
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    if (curve->has_baseline[b])
      json_object_array_add(list, point_json(curve, &curve->baselines[b]));
  return list;
}

static void csv_row(GString *out, const RokCurve *curve, const char *series, const RokCurvePoint *pt) {
  double gpu[3];
  per_gpu(curve, pt, gpu);
  g_string_append_printf(out,
                         "%s,%" G_GUINT64_FORMAT ",%.17g,%.17g,%.17g,%.17g,%.17g,%" G_GUINT64_FORMAT
                         ",%" G_GUINT64_FORMAT,
                         series, pt->budget_bytes, pt->step_time_s, pt->tokens_per_s, gpu[0], gpu[1], gpu[2],
                         pt->peak_bytes, pt->activation_peak_bytes);
  for (guint d = 0; d < ROK_DECISION_COUNT; d++)
    g_string_append_printf(out, ",%" G_GUINT64_FORMAT, pt->decision_bytes[d]);
  g_string_append_printf(out, ",%s\n", rok_strategy_name(pt->source));
}

char *rok_curve_to_csv(const RokCurve *curve) {
  GString *out = g_string_new("series,budget_bytes,step_time_s,tokens_per_s,tokens_per_gpu_s,model_flops_per_gpu_s,"
                              "mfu,peak_bytes,activation_peak_bytes");
  for (guint d = 0; d < ROK_DECISION_COUNT; d++) {
    g_autofree char *name = g_strdelimit(g_strdup(rok_decision_name(d)), "-", '_');
    g_string_append_printf(out, ",%s_bytes", name);
  }
  g_string_append(out, ",source\n");
  for (guint i = 0; i < curve->points->len; i++)
    csv_row(out, curve, "rok", &g_array_index(curve->points, RokCurvePoint, i));
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    if (curve->has_baseline[b])
      csv_row(out, curve, rok_strategy_name(b), &curve->baselines[b]);
  return g_string_free(out, FALSE);
}

gboolean rok_curve_save_csv(const RokCurve *curve, const char *path, GError **error) {
  g_autofree char *text = rok_curve_to_csv(curve);
  return rok_file_write(path, text, strlen(text), error);
}
