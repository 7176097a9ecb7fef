/* The validation chart: measured against predicted step time, a point per
 * row, with the line where the two agree and the ±10% band around it; where
 * the kernels were timed, a hollow point per row at its prediction at the
 * machine's speed beside it (at_speed). */
#include <math.h>

#include "validate-private.h"
#include "rok/plot.h"
#include "rok/sweep.h"
#include "rok/charts.h"
#include "rok/core.h"

/* Where a row's prediction at the machine's speed stands against its
 * measured step: as its error places it, each round's step over that
 * round's prediction (rok/validate.h), not the median of the rounds'
 * predictions, which a round at another speed moves. */
static double at_speed(const RokValidateRow *row) {
  return row->measured_step_time_s / (1 + row->error_at_speed);
}

/* The rows' range of times, both axes, padded so that the band shows. */
static void time_range(const RokValidation *v, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = 0;
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    *lo = MIN(*lo, MIN(row->predicted_step_time_s, row->measured_step_time_s));
    *hi = MAX(*hi, MAX(row->predicted_step_time_s, row->measured_step_time_s));
    if (isfinite(row->error_at_speed)) {
      *lo = MIN(*lo, at_speed(row));
      *hi = MAX(*hi, at_speed(row));
    }
  }
  *lo *= 0.85;
  *hi *= 1.15;
}

static void add_line(RokChart *chart, const char *name, guint style, guint color, double factor, double lo,
                     double hi) {
  guint s = rok_chart_add_series(chart, name, ROK_SERIES_LINE | style, color);
  rok_chart_add_point(chart, s, lo, lo * factor, ROK_POINT_FILLED, NULL);
  rok_chart_add_point(chart, s, hi, hi * factor, ROK_POINT_FILLED, NULL);
}

/* A series per strategy, in the order the rows first show it. */
static void add_rows(RokChart *chart, const RokValidation *v) {
  gint series[ROK_STRATEGY_COUNT];
  for (guint s = 0; s < ROK_STRATEGY_COUNT; s++)
    series[s] = -1;
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    RokStrategy s = ROK_STRATEGY_ROK;
    if (!rok_strategy_from_name(row->strategy, &s, NULL))
      continue;
    if (series[s] < 0)
      series[s] = (gint)rok_chart_add_series(chart, s == ROK_STRATEGY_ROK ? "rok planner" : row->strategy,
                                             ROK_SERIES_MARKERS, rok_strategy_color(s));
    g_autofree char *label = NULL;
    if (s == ROK_STRATEGY_ROK)
      label = rok_units_format_size(row->budget_bytes);
    rok_chart_add_point(chart, (guint)series[s], row->predicted_step_time_s, row->measured_step_time_s,
                        ROK_POINT_FILLED, label);
    if (isfinite(row->error_at_speed))
      rok_chart_add_point(chart, (guint)series[s], at_speed(row), row->measured_step_time_s, ROK_POINT_HOLLOW, NULL);
  }
}

gboolean rok_validation_save_chart(const RokValidation *v, const char *path, GError **error) {
  g_autofree char *title = g_strdup_printf("Step time: %s on %s", v->model, v->device ? v->device : v->hw);
  g_autoptr(RokChart) chart = rok_charts_chart_new(title);
  rok_chart_set_axis(chart, ROK_AXIS_X,
                     isnan(v->median_step_time_error_at_speed) ? "Predicted step time"
                                                               : "Predicted step time (hollow: at the machine's speed)",
                     ROK_UNIT_SECONDS, NULL);
  rok_chart_set_axis(chart, ROK_AXIS_Y, "Measured step time", ROK_UNIT_SECONDS, NULL);
  if (v->rows->len > 0) {
    double lo = 0, hi = 0;
    time_range(v, &lo, &hi);
    /* Colours no strategy takes (rok_strategy_color). */
    add_line(chart, "measured = predicted", 0, ROK_COLOR_ORANGE, 1.0, lo, hi);
    add_line(chart, "±10%", 0, ROK_COLOR_YELLOW, 1.1, lo, hi);
    add_line(chart, "-10%", ROK_SERIES_NO_LEGEND, ROK_COLOR_YELLOW, 0.9, lo, hi);
    add_rows(chart, v);
  }
  return rok_chart_save(chart, path, error);
}
