/* The ROK curve as a chart: throughput against activation peak memory,
 * as SSDTrain draws it, with the baselines as labelled points. */
#include "plan/planner-private.h"

#include "rok/plot.h"
#include "rok/units.h"

/* One colour (and marker) per strategy, the planner's last. */
static const guint colors[ROK_STRATEGY_COUNT] = {
    [ROK_STRATEGY_KEEP] = ROK_COLOR_VERMILLION, [ROK_STRATEGY_RECOMPUTE] = ROK_COLOR_GREEN,
    [ROK_STRATEGY_SELECTIVE] = ROK_COLOR_PURPLE, [ROK_STRATEGY_OFFLOAD] = ROK_COLOR_ORANGE,
    [ROK_STRATEGY_TBA] = ROK_COLOR_SKY,          [ROK_STRATEGY_ROK] = ROK_COLOR_BLUE,
};

static void add_references(RokChart *chart, const RokCurve *curve, guint64 budget) {
  g_autofree char *gpu = rok_units_format_size(curve->gpu_memory_bytes);
  g_autofree char *gpu_label = g_strdup_printf("GPU memory (%s)", gpu);
  if (curve->gpu_memory_bytes > curve->fixed_bytes)
    rok_chart_add_reference(chart, ROK_AXIS_X, (double)(curve->gpu_memory_bytes - curve->fixed_bytes), gpu_label);
  if (budget > curve->fixed_bytes && budget != curve->gpu_memory_bytes) {
    g_autofree char *b = rok_units_format_size(budget);
    g_autofree char *label = g_strdup_printf("budget %s", b);
    rok_chart_add_reference(chart, ROK_AXIS_X, (double)(budget - curve->fixed_bytes), label);
  }
}

gboolean rok_curve_save_chart(const RokCurve *curve, guint64 budget, const char *path, GError **error) {
  g_autofree char *title = g_strdup_printf("ROK curve: %s on %s", curve->model_name ? curve->model_name : "model",
                                           curve->hw_name ? curve->hw_name : "machine");
  g_autoptr(RokChart) chart = rok_chart_new(title);
  rok_chart_set_axis(chart, ROK_AXIS_X, "Activation peak memory", ROK_UNIT_BYTES, NULL);
  rok_chart_set_axis(chart, ROK_AXIS_Y, "Throughput", ROK_UNIT_RATE, "tokens/s");
  guint rok = rok_chart_add_series(chart, "rok planner", ROK_SERIES_LINE | ROK_SERIES_MARKERS,
                                   colors[ROK_STRATEGY_ROK]);
  for (guint i = 0; i < curve->points->len; i++) {
    const RokCurvePoint *pt = &g_array_index(curve->points, RokCurvePoint, i);
    rok_chart_add_point(chart, rok, (double)pt->activation_peak_bytes, pt->tokens_per_s, ROK_POINT_FILLED, NULL);
  }
  gboolean any_hollow = FALSE;
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    if (!curve->has_baseline[b])
      continue;
    const RokCurvePoint *pt = &curve->baselines[b];
    gboolean fits = pt->peak_bytes <= curve->gpu_memory_bytes;
    any_hollow |= !fits;
    guint id = rok_chart_add_series(chart, rok_strategy_name(b), ROK_SERIES_MARKERS | ROK_SERIES_NO_LEGEND,
                                    colors[b]);
    rok_chart_add_point(chart, id, (double)pt->activation_peak_bytes, pt->tokens_per_s,
                        fits ? ROK_POINT_FILLED : ROK_POINT_HOLLOW, rok_strategy_name(b));
  }
  if (any_hollow) {
    g_autofree char *gpu = rok_units_format_size(curve->gpu_memory_bytes);
    g_autofree char *meaning = g_strdup_printf("does not fit in %s", gpu);
    rok_chart_set_hollow_meaning(chart, meaning);
  }
  add_references(chart, curve, budget);
  rok_chart_axis_include(chart, ROK_AXIS_X, 0.0);
  return rok_chart_save(chart, path, error);
}
