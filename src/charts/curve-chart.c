/* The ROK curve as a chart: throughput against activation peak memory,
 * as SSDTrain draws it, with the baselines as labelled points. */
#include "rok/charts.h"

#include "rok/plot.h"
#include "rok/sweep.h"
#include "rok/core.h"


/* The x axis counts activations only: a line at a total of `total` bytes
 * stands where the fixed memory leaves that much for activations. */
static void add_reference(RokChart *chart, const RokCurve *curve, guint64 total, const char *what) {
  if (total <= curve->fixed_bytes)
    return;
  g_autofree char *size = rok_units_format_size(total);
  g_autofree char *label = g_strdup_printf("%s %s", what, size);
  rok_chart_add_reference(chart, ROK_AXIS_X, (double)(total - curve->fixed_bytes), label);
}

static void add_references(RokChart *chart, const RokCurve *curve, guint64 budget) {
  add_reference(chart, curve, curve->gpu_memory_bytes, "GPU memory");
  if (budget != curve->gpu_memory_bytes)
    add_reference(chart, curve, budget, "budget");
}

gboolean rok_curve_save_chart(const RokCurve *curve, guint64 budget, const char *path, GError **error) {
  g_autofree char *title = g_strdup_printf("ROK curve: %s on %s", curve->model_name ? curve->model_name : "model",
                                           curve->hw_name ? curve->hw_name : "machine");
  g_autoptr(RokChart) chart = rok_chart_new(title);
  /* x: peak memory less weights, gradients and optimizer states, as in SSDTrain. */
  rok_chart_set_axis(chart, ROK_AXIS_X, "Activation peak memory", ROK_UNIT_BYTES, NULL);
  rok_chart_set_axis(chart, ROK_AXIS_Y, "Throughput", ROK_UNIT_RATE, "tokens/s");
  guint rok = rok_chart_add_series(chart, "rok planner", ROK_SERIES_LINE | ROK_SERIES_MARKERS,
                                   rok_strategy_color(ROK_STRATEGY_ROK));
  gboolean any_hollow = FALSE;
  for (guint i = 0; i < curve->points->len; i++) {
    const RokCurvePoint *pt = &g_array_index(curve->points, RokCurvePoint, i);
    gboolean fits = pt->peak_bytes <= curve->gpu_memory_bytes;
    any_hollow |= !fits;
    rok_chart_add_point(chart, rok, (double)pt->activation_peak_bytes, pt->tokens_per_s,
                        fits ? ROK_POINT_FILLED : ROK_POINT_HOLLOW, NULL);
  }
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    if (!curve->has_baseline[b])
      continue;
    const RokCurvePoint *pt = &curve->baselines[b];
    gboolean fits = pt->peak_bytes <= curve->gpu_memory_bytes;
    any_hollow |= !fits;
    guint id = rok_chart_add_series(chart, rok_strategy_name(b), ROK_SERIES_MARKERS | ROK_SERIES_NO_LEGEND,
                                    rok_strategy_color(b));
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
