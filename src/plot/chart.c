/* The chart as the caller builds it, checks on its data, and saving. */
#include <math.h>

#include "plot-private.h"
#include "rok/core.h"

static void point_clear(gpointer data) {
  g_free(((RokPoint *)data)->label);
}

static void series_free(gpointer data) {
  RokSeries *series = data;
  g_free(series->name);
  g_array_unref(series->points);
  g_free(series);
}

static void reference_clear(gpointer data) {
  g_free(((RokReference *)data)->label);
}

RokChart *rok_chart_new(const char *title) {
  RokChart *chart = g_new0(RokChart, 1);
  chart->title = g_strdup(title != NULL ? title : "");
  chart->width = 600.0;
  chart->height = 380.0;
  chart->font_scale = 1.0;
  for (int a = 0; a < 2; a++) {
    chart->axes[a].title = g_strdup("");
    chart->axes[a].include = g_array_new(FALSE, FALSE, sizeof(double));
  }
  chart->series = g_ptr_array_new_with_free_func(series_free);
  chart->references = g_array_new(FALSE, TRUE, sizeof(RokReference));
  g_array_set_clear_func(chart->references, reference_clear);
  return chart;
}

void rok_chart_free(RokChart *chart) {
  if (chart == NULL)
    return;
  g_free(chart->title);
  for (int a = 0; a < 2; a++) {
    g_free(chart->axes[a].title);
    g_free(chart->axes[a].unit_name);
    g_array_unref(chart->axes[a].include);
  }
  g_ptr_array_unref(chart->series);
  g_array_unref(chart->references);
  g_free(chart->hollow_meaning);
  g_free(chart);
}

void rok_chart_set_size(RokChart *chart, double width, double height) {
  g_return_if_fail(chart != NULL && width >= 240.0 && height >= 180.0);
  chart->width = width;
  chart->height = height;
}

void rok_chart_set_font_size(RokChart *chart, double points) {
  g_return_if_fail(chart != NULL && points >= 6.0 && points <= 36.0);
  chart->font_scale = points / ROK_BODY_FONT_SIZE;
}

void rok_chart_set_axis(RokChart *chart, RokAxisId axis, const char *title, RokUnitKind unit,
                        const char *unit_name) {
  g_return_if_fail(chart != NULL && (axis == ROK_AXIS_X || axis == ROK_AXIS_Y));
  RokAxisSpec *spec = &chart->axes[axis];
  g_free(spec->title);
  g_free(spec->unit_name);
  spec->title = g_strdup(title != NULL ? title : "");
  spec->unit = unit;
  spec->unit_name = g_strdup(unit_name);
}

void rok_chart_set_axis_scale(RokChart *chart, RokAxisId axis, RokScale scale) {
  g_return_if_fail(chart != NULL && (axis == ROK_AXIS_X || axis == ROK_AXIS_Y));
  chart->axes[axis].scale = scale;
}

void rok_chart_axis_include(RokChart *chart, RokAxisId axis, double value) {
  g_return_if_fail(chart != NULL && (axis == ROK_AXIS_X || axis == ROK_AXIS_Y));
  g_array_append_val(chart->axes[axis].include, value);
}

guint rok_chart_add_series(RokChart *chart, const char *name, RokSeriesStyle style, guint color) {
  g_return_val_if_fail(chart != NULL, 0);
  RokSeries *series = g_new0(RokSeries, 1);
  series->name = g_strdup(name != NULL ? name : "");
  series->style = style;
  series->color = color;
  series->points = g_array_new(FALSE, TRUE, sizeof(RokPoint));
  g_array_set_clear_func(series->points, point_clear);
  g_ptr_array_add(chart->series, series);
  return chart->series->len - 1;
}

void rok_chart_add_point(RokChart *chart, guint series, double x, double y, RokPointFlags flags,
                         const char *label) {
  g_return_if_fail(chart != NULL && series < chart->series->len);
  RokSeries *s = g_ptr_array_index(chart->series, series);
  RokPoint point = {x, y, flags, label != NULL && label[0] != '\0' ? g_strdup(label) : NULL};
  g_array_append_val(s->points, point);
}

void rok_chart_add_reference(RokChart *chart, RokAxisId axis, double value, const char *label) {
  g_return_if_fail(chart != NULL && (axis == ROK_AXIS_X || axis == ROK_AXIS_Y));
  RokReference reference = {axis, value,
                            label != NULL && label[0] != '\0' ? g_strdup(label) : NULL};
  g_array_append_val(chart->references, reference);
}

void rok_chart_set_hollow_meaning(RokChart *chart, const char *text) {
  g_return_if_fail(chart != NULL);
  g_free(chart->hollow_meaning);
  chart->hollow_meaning = text != NULL && text[0] != '\0' ? g_strdup(text) : NULL;
}

double plot_series_marker_size(const RokSeries *series) {
  if (series->points->len == 1)
    return 9.0; /* a single point (a baseline) stands out */
  return series->points->len > 16 ? 5.5 : ROK_MARKER_SIZE;
}

gboolean plot_series_draws_markers(const RokSeries *series) {
  return (series->style & ROK_SERIES_MARKERS) || !(series->style & ROK_SERIES_LINE);
}

static const char *axis_name(RokAxisId axis) {
  return axis == ROK_AXIS_X ? "x" : "y";
}

/* A value the axis can show: finite, and positive on a log scale. */
static gboolean check_value(const RokChart *chart, RokAxisId axis, double value, const char *where,
                            GError **error) {
  if (!isfinite(value)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "chart \"%s\": %s: %s is not a finite number",
                chart->title, where, axis_name(axis));
    return FALSE;
  }
  if (chart->axes[axis].scale != ROK_SCALE_LINEAR && value <= 0.0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "chart \"%s\": %s: %s = %g cannot be shown on a log axis", chart->title, where,
                axis_name(axis), value);
    return FALSE;
  }
  return TRUE;
}

gboolean plot_chart_validate(const RokChart *chart, GError **error) {
  for (guint s = 0; s < chart->series->len; s++) {
    const RokSeries *series = g_ptr_array_index(chart->series, s);
    for (guint p = 0; p < series->points->len; p++) {
      const RokPoint *point = &g_array_index(series->points, RokPoint, p);
      g_autofree char *where = g_strdup_printf("series \"%s\" point %u", series->name, p + 1);
      if (!check_value(chart, ROK_AXIS_X, point->x, where, error) ||
          !check_value(chart, ROK_AXIS_Y, point->y, where, error))
        return FALSE;
    }
  }
  for (guint r = 0; r < chart->references->len; r++) {
    const RokReference *reference = &g_array_index(chart->references, RokReference, r);
    g_autofree char *where =
        g_strdup_printf("reference line \"%s\"", reference->label != NULL ? reference->label : "");
    if (!check_value(chart, reference->axis, reference->value, where, error))
      return FALSE;
  }
  for (int a = 0; a < 2; a++)
    for (guint i = 0; i < chart->axes[a].include->len; i++)
      if (!check_value(chart, a, g_array_index(chart->axes[a].include, double, i),
                       "included axis value", error))
        return FALSE;
  return TRUE;
}

static void draw_chart(cairo_t *cr, gconstpointer data) {
  const RokChart *chart = data;
  g_autoptr(RokChartLayout) layout = plot_chart_layout_new(chart);
  plot_chart_draw(cr, chart, layout);
}

gboolean rok_chart_save(const RokChart *chart, const char *path, GError **error) {
  g_return_val_if_fail(chart != NULL && path != NULL, FALSE);
  if (!plot_check_path(path, error) || !plot_chart_validate(chart, error))
    return FALSE;
  return plot_write(path, chart->width, chart->height, chart->title, draw_chart, chart, error);
}
