/* The ROK curve as a chart: throughput against activation peak memory,
 * as SSDTrain draws it, with the chosen plan and the baselines as labelled
 * points. */
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
  g_autofree char *label = g_strdup_printf("%s %s \u2212 fixed", size, what);
  rok_chart_add_reference(chart, ROK_AXIS_X, (double)(total - curve->fixed_bytes), label);
}

static void add_point(RokChart *chart, const RokCurvePoint *pt, guint color, guint64 budget, const char *label) {
  guint id = rok_chart_add_series(chart, label, ROK_SERIES_MARKERS | ROK_SERIES_NO_LEGEND, color);
  rok_chart_add_point(chart, id, (double)pt->activation_peak_bytes, pt->tokens_per_s,
                      pt->peak_bytes <= budget ? ROK_POINT_FILLED : ROK_POINT_HOLLOW, label);
}

/* Baselines as the table beside reports them (under the budget), else each
 * on its own. */
static void add_baselines(RokChart *chart, const RokCurve *curve, const RokCurveMarks *marks, guint64 budget) {
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    gboolean has = marks != NULL ? marks->has_baseline[b] : curve->has_baseline[b];
    if (has)
      add_point(chart, marks != NULL ? &marks->baselines[b] : &curve->baselines[b], rok_strategy_color(b), budget,
                rok_strategy_name(b));
  }
  if (marks != NULL && marks->has_chosen) {
    g_autofree char *size = rok_units_format_size(marks->budget_bytes);
    g_autofree char *label = g_strdup_printf("plan chosen at %s", size);
    /* Orange (an inverted triangle) is no strategy's colour: the mark stands
     * out on the planner's line. */
    add_point(chart, &marks->chosen, ROK_COLOR_ORANGE, budget, label);
  }
}

static char *x_title(const RokCurve *curve) {
  g_autofree char *fixed = rok_units_format_size(curve->fixed_bytes);
  return g_strdup_printf("Activation peak = peak memory \u2212 %s fixed", fixed);
}

gboolean rok_curve_save_chart(const RokCurve *curve, const RokCurveMarks *marks, const char *path, GError **error) {
  guint64 budget = marks != NULL && marks->budget_bytes > 0 ? marks->budget_bytes : curve->gpu_memory_bytes;
  g_autofree char *title = g_strdup_printf("ROK curve: %s on %s", curve->model_name ? curve->model_name : "model",
                                           curve->hw_name ? curve->hw_name : "machine");
  g_autoptr(RokChart) chart = rok_charts_chart_new(title);
  g_autofree char *x = x_title(curve);
  rok_chart_set_axis(chart, ROK_AXIS_X, x, ROK_UNIT_BYTES, NULL);
  rok_chart_set_axis(chart, ROK_AXIS_Y, "Throughput per copy of the model", ROK_UNIT_RATE, "tokens/s");
  guint rok = rok_chart_add_series(chart, "rok planner (best plan per budget)", ROK_SERIES_LINE | ROK_SERIES_MARKERS,
                                   rok_strategy_color(ROK_STRATEGY_ROK));
  gboolean any_hollow = FALSE;
  for (guint i = 0; i < curve->points->len; i++) {
    const RokCurvePoint *pt = &g_array_index(curve->points, RokCurvePoint, i);
    any_hollow |= pt->peak_bytes > budget;
    rok_chart_add_point(chart, rok, (double)pt->activation_peak_bytes, pt->tokens_per_s,
                        pt->peak_bytes <= budget ? ROK_POINT_FILLED : ROK_POINT_HOLLOW, NULL);
  }
  add_baselines(chart, curve, marks, budget);
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    any_hollow |= marks != NULL ? marks->has_baseline[b] && marks->baselines[b].peak_bytes > budget
                                : curve->has_baseline[b] && curve->baselines[b].peak_bytes > budget;
  if (any_hollow) {
    g_autofree char *size = rok_units_format_size(budget);
    g_autofree char *meaning = budget == curve->gpu_memory_bytes ? g_strdup_printf("does not fit in %s", size)
                                                                 : g_strdup_printf("over the %s budget", size);
    rok_chart_set_hollow_meaning(chart, meaning);
  }
  add_reference(chart, curve, curve->gpu_memory_bytes, "GPU");
  if (budget != curve->gpu_memory_bytes)
    add_reference(chart, curve, budget, "budget");
  rok_chart_axis_include(chart, ROK_AXIS_X, 0.0);
  rok_chart_axis_include(chart, ROK_AXIS_Y, 0.0);
  return rok_chart_save(chart, path, error);
}
