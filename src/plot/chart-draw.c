/* Drawing a laid-out chart: grid, reference lines, series, axes, legend,
 * text, in that order so that text is never hidden. */
#include <math.h>

#include "chart-layout-private.h"

static void set_grey(cairo_t *cr, double level) {
  cairo_set_source_rgb(cr, level, level, level);
}

static void draw_grid(cairo_t *cr, const RokChartLayout *layout) {
  const RokBox *plot = &layout->plot;
  cairo_save(cr);
  set_grey(cr, 0.9);
  cairo_set_line_width(cr, 0.6);
  for (int a = 0; a < 2; a++) {
    const RokTicks *ticks = &layout->ticks[a];
    for (guint i = 0; i < ticks->count; i++) {
      double f = plot_ticks_fraction(ticks, ticks->values[i] * ticks->scale);
      if (a == ROK_AXIS_X) {
        cairo_move_to(cr, plot->x + f * plot->w, plot->y);
        cairo_line_to(cr, plot->x + f * plot->w, plot->y + plot->h);
      } else {
        cairo_move_to(cr, plot->x, plot->y + (1 - f) * plot->h);
        cairo_line_to(cr, plot->x + plot->w, plot->y + (1 - f) * plot->h);
      }
    }
  }
  cairo_stroke(cr);
  cairo_restore(cr);
}

static void draw_references(cairo_t *cr, const RokChart *chart, const RokChartLayout *layout) {
  const RokBox *plot = &layout->plot;
  static const double dash[] = {6.0, 3.0};
  cairo_save(cr);
  set_grey(cr, 0.3);
  cairo_set_line_width(cr, 1.2);
  cairo_set_dash(cr, dash, G_N_ELEMENTS(dash), 0.0);
  for (guint r = 0; r < chart->references->len; r++) {
    const RokReference *reference = &g_array_index(chart->references, RokReference, r);
    double x, y;
    plot_chart_layout_map(layout, reference->value, reference->value, &x, &y);
    if (reference->axis == ROK_AXIS_Y) {
      cairo_move_to(cr, plot->x, y);
      cairo_line_to(cr, plot->x + plot->w, y);
    } else {
      cairo_move_to(cr, x, plot->y);
      cairo_line_to(cr, x, plot->y + plot->h);
    }
    cairo_stroke(cr);
  }
  cairo_restore(cr);
}

/* A line into or out of a hollow (infeasible) point is dashed. */
static void draw_series_line(cairo_t *cr, const RokChartLayout *layout, const RokSeries *series) {
  static const double dash[] = {4.0, 3.0};
  RokRgb color = plot_palette_color(series->color);
  cairo_save(cr);
  cairo_set_source_rgb(cr, color.r, color.g, color.b);
  cairo_set_line_width(cr, 1.8);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  for (guint p = 1; p < series->points->len; p++) {
    const RokPoint *a = &g_array_index(series->points, RokPoint, p - 1);
    const RokPoint *b = &g_array_index(series->points, RokPoint, p);
    gboolean dashed = ((a->flags | b->flags) & ROK_POINT_HOLLOW) != 0;
    double x0, y0, x1, y1;
    plot_chart_layout_map(layout, a->x, a->y, &x0, &y0);
    plot_chart_layout_map(layout, b->x, b->y, &x1, &y1);
    cairo_set_dash(cr, dash, dashed ? G_N_ELEMENTS(dash) : 0, 0.0);
    cairo_move_to(cr, x0, y0);
    cairo_line_to(cr, x1, y1);
    /* Solid runs are one path so that their joins are round. */
    const RokPoint *c =
        p + 1 < series->points->len ? &g_array_index(series->points, RokPoint, p + 1) : NULL;
    while (!dashed && c != NULL && ((b->flags | c->flags) & ROK_POINT_HOLLOW) == 0) {
      plot_chart_layout_map(layout, c->x, c->y, &x1, &y1);
      cairo_line_to(cr, x1, y1);
      p++;
      b = c;
      c = p + 1 < series->points->len ? &g_array_index(series->points, RokPoint, p + 1) : NULL;
    }
    cairo_stroke(cr);
  }
  cairo_restore(cr);
}

static void draw_series_markers(cairo_t *cr, const RokChartLayout *layout,
                                const RokSeries *series) {
  RokRgb color = plot_palette_color(series->color);
  for (guint p = 0; p < series->points->len; p++) {
    const RokPoint *point = &g_array_index(series->points, RokPoint, p);
    double x, y;
    plot_chart_layout_map(layout, point->x, point->y, &x, &y);
    plot_palette_marker(cr, series->color, x, y, plot_series_marker_size(series), color,
                       (point->flags & ROK_POINT_HOLLOW) != 0);
  }
}

static void draw_series(cairo_t *cr, const RokChart *chart, const RokChartLayout *layout) {
  for (guint s = 0; s < chart->series->len; s++) {
    const RokSeries *series = g_ptr_array_index(chart->series, s);
    if (series->style & ROK_SERIES_LINE)
      draw_series_line(cr, layout, series);
  }
  /* All markers above all lines. */
  for (guint s = 0; s < chart->series->len; s++) {
    const RokSeries *series = g_ptr_array_index(chart->series, s);
    if (plot_series_draws_markers(series))
      draw_series_markers(cr, layout, series);
  }
}

static void draw_axes(cairo_t *cr, const RokChartLayout *layout) {
  const RokBox *plot = &layout->plot;
  cairo_save(cr);
  set_grey(cr, 0.2);
  cairo_set_line_width(cr, 1.0);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_SQUARE);
  cairo_move_to(cr, plot->x, plot->y);
  cairo_line_to(cr, plot->x, plot->y + plot->h);
  cairo_line_to(cr, plot->x + plot->w, plot->y + plot->h);
  cairo_stroke(cr);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  for (int a = 0; a < 2; a++) {
    const RokTicks *ticks = &layout->ticks[a];
    for (guint i = 0; i < ticks->count; i++) {
      double f = plot_ticks_fraction(ticks, ticks->values[i] * ticks->scale);
      if (a == ROK_AXIS_X) {
        cairo_move_to(cr, plot->x + f * plot->w, plot->y + plot->h);
        cairo_rel_line_to(cr, 0.0, ROK_TICK_LEN);
      } else {
        cairo_move_to(cr, plot->x, plot->y + (1 - f) * plot->h);
        cairo_rel_line_to(cr, -ROK_TICK_LEN, 0.0);
      }
    }
  }
  cairo_stroke(cr);
  cairo_restore(cr);
}

static void draw_legend(cairo_t *cr, const RokChartLayout *layout) {
  if (!layout->has_legend)
    return;
  const RokBox *box = &layout->legend;
  cairo_save(cr);
  cairo_rectangle(cr, box->x, box->y, box->w, box->h);
  cairo_set_source_rgb(cr, 1.0, 1.0, 1.0);
  cairo_fill_preserve(cr);
  set_grey(cr, 0.75);
  cairo_set_line_width(cr, 0.8);
  cairo_stroke(cr);
  for (guint e = 0; e < layout->legend_entries->len; e++) {
    const RokLegendEntry *entry = &g_array_index(layout->legend_entries, RokLegendEntry, e);
    RokRgb color = entry->hollow ? (RokRgb){0.35, 0.35, 0.35} : plot_palette_color(entry->color);
    double mid = entry->sample_x + ROK_LEGEND_SAMPLE / 2.0;
    if (entry->style & ROK_SERIES_LINE) {
      cairo_set_source_rgb(cr, color.r, color.g, color.b);
      cairo_set_line_width(cr, 1.8);
      cairo_move_to(cr, entry->sample_x, entry->sample_y);
      cairo_line_to(cr, entry->sample_x + ROK_LEGEND_SAMPLE, entry->sample_y);
      cairo_stroke(cr);
    }
    if ((entry->style & ROK_SERIES_MARKERS) || !(entry->style & ROK_SERIES_LINE))
      plot_palette_marker(cr, entry->hollow ? 0 : entry->color, mid, entry->sample_y,
                         entry->marker_size, color, entry->hollow);
  }
  cairo_restore(cr);
}

static void draw_leaders(cairo_t *cr, const RokChartLayout *layout) {
  cairo_save(cr);
  set_grey(cr, 0.45);
  cairo_set_line_width(cr, 0.7);
  for (guint i = 0; i < layout->leaders->len; i++) {
    const RokBox *leader = &g_array_index(layout->leaders, RokBox, i);
    cairo_move_to(cr, leader->x, leader->y);
    cairo_rel_line_to(cr, leader->w, leader->h);
  }
  cairo_stroke(cr);
  cairo_restore(cr);
}

void plot_chart_draw(cairo_t *cr, const RokChart *chart, const RokChartLayout *layout) {
  cairo_set_source_rgb(cr, 1.0, 1.0, 1.0);
  cairo_paint(cr);
  draw_grid(cr, layout);
  draw_references(cr, chart, layout);
  draw_series(cr, chart, layout);
  draw_axes(cr, layout);
  draw_legend(cr, layout);
  draw_leaders(cr, layout);
  for (guint i = 0; i < layout->texts->len; i++)
    plot_text_draw(cr, &g_array_index(layout->texts, RokText, i));
}
