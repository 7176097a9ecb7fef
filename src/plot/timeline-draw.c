/* Drawing a laid-out timeline: row bands, grid, bars, the memory step curve
 * with its limits, axes, legend swatches, then text. */
#include <math.h>

#include "chart-layout-private.h"

/* Bars narrower than this are widened so that short ops stay visible. */
#define BAR_MIN_WIDTH 0.6

static void draw_rows(cairo_t *cr, const RokTimeline *timeline, const RokTimelineLayout *layout) {
  const RokBox *g = &layout->gantt;
  cairo_save(cr);
  for (guint t = 0; t < timeline->tracks->len; t++) {
    cairo_rectangle(cr, g->x, g->y + t * layout->row_h, g->w, layout->row_h);
    double level = t % 2 == 0 ? 0.965 : 1.0;
    cairo_set_source_rgb(cr, level, level, level);
    cairo_fill(cr);
  }
  cairo_restore(cr);
}

static void draw_time_grid(cairo_t *cr, const RokTimelineLayout *layout) {
  const RokTicks *ticks = &layout->time_ticks;
  cairo_save(cr);
  cairo_set_source_rgb(cr, 0.86, 0.86, 0.86);
  cairo_set_line_width(cr, 0.6);
  for (guint i = 0; i < ticks->count; i++) {
    double x = plot_timeline_layout_x(layout, ticks->values[i] * ticks->scale);
    cairo_move_to(cr, x, layout->gantt.y);
    cairo_line_to(cr, x, layout->gantt.y + layout->gantt.h);
    if (layout->has_memory) {
      cairo_move_to(cr, x, layout->memory.y);
      cairo_line_to(cr, x, layout->memory.y + layout->memory.h);
    }
  }
  const RokTicks *memory = &layout->memory_ticks;
  for (guint i = 0; layout->has_memory && i < memory->count; i++) {
    double y = plot_timeline_layout_memory_y(layout, memory->values[i] * memory->scale);
    cairo_move_to(cr, layout->memory.x, y);
    cairo_line_to(cr, layout->memory.x + layout->memory.w, y);
  }
  cairo_stroke(cr);
  cairo_restore(cr);
}

static void draw_bars(cairo_t *cr, const RokTimeline *timeline, const RokTimelineLayout *layout) {
  cairo_save(cr);
  cairo_set_line_width(cr, 0.5);
  for (guint i = 0; i < timeline->bars->len; i++) {
    const RokBar *bar = &g_array_index(timeline->bars, RokBar, i);
    const RokBarKind *kind = &g_array_index(timeline->kinds, RokBarKind, bar->kind);
    RokRgb color = plot_palette_color(kind->color);
    double x0 = plot_timeline_layout_x(layout, bar->start);
    double x1 = plot_timeline_layout_x(layout, bar->end);
    double w = MAX(x1 - x0, BAR_MIN_WIDTH);
    double y = layout->gantt.y + bar->track * layout->row_h + layout->row_h * 0.18;
    cairo_rectangle(cr, x0, y, w, layout->row_h * 0.64);
    cairo_set_source_rgb(cr, color.r, color.g, color.b);
    /* A hairline between wide neighbours shows where one op ends. */
    if (w >= 3.0) {
      cairo_fill_preserve(cr);
      cairo_set_source_rgb(cr, 1.0, 1.0, 1.0);
      cairo_stroke(cr);
    } else {
      cairo_fill(cr);
    }
  }
  cairo_restore(cr);
}

static void memory_path(cairo_t *cr, const RokTimeline *timeline, const RokTimelineLayout *layout) {
  const GArray *memory = timeline->memory;
  double right = layout->memory.x + layout->memory.w;
  for (guint i = 0; i < memory->len; i++) {
    const RokMemorySample *sample = &g_array_index(memory, RokMemorySample, i);
    double x = plot_timeline_layout_x(layout, sample->time);
    double y = plot_timeline_layout_memory_y(layout, sample->bytes);
    if (i == 0)
      cairo_move_to(cr, x, y);
    else
      cairo_line_to(cr, x, y);
    double next =
        i + 1 < memory->len
            ? plot_timeline_layout_x(layout, g_array_index(memory, RokMemorySample, i + 1).time)
            : plot_timeline_layout_x(layout, plot_timeline_end(timeline));
    cairo_line_to(cr, MIN(next, right), y);
  }
}

static void draw_memory(cairo_t *cr, const RokTimeline *timeline, const RokTimelineLayout *layout) {
  const RokMemorySample *first = &g_array_index(timeline->memory, RokMemorySample, 0);
  double base = plot_timeline_layout_memory_y(layout, 0.0);
  cairo_save(cr);
  /* Filled area under the step curve, then the curve itself. */
  memory_path(cr, timeline, layout);
  double x_end;
  double y_end;
  cairo_get_current_point(cr, &x_end, &y_end);
  cairo_line_to(cr, x_end, base);
  cairo_line_to(cr, plot_timeline_layout_x(layout, first->time), base);
  cairo_close_path(cr);
  cairo_set_source_rgb(cr, 0.80, 0.87, 0.93);
  cairo_fill(cr);
  memory_path(cr, timeline, layout);
  cairo_set_source_rgb(cr, 0.0, 0.32, 0.55);
  cairo_set_line_width(cr, 1.2);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_MITER);
  cairo_stroke(cr);
  /* Each limit has its own dash pattern, so they differ in greyscale. */
  static const double dashes[][4] = {{6.0, 3.0}, {2.0, 2.0}, {8.0, 2.5, 2.0, 2.5}};
  static const int dash_counts[] = {2, 2, 4};
  cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
  cairo_set_line_width(cr, 1.2);
  for (guint i = 0; i < timeline->limits->len; i++) {
    double y = plot_timeline_layout_memory_y(
        layout, g_array_index(timeline->limits, RokMemoryLimit, i).bytes);
    cairo_set_dash(cr, dashes[i % 3], dash_counts[i % 3], 0.0);
    cairo_move_to(cr, layout->memory.x, y);
    cairo_line_to(cr, layout->memory.x + layout->memory.w, y);
    cairo_stroke(cr);
  }
  cairo_restore(cr);
}

static void draw_axes(cairo_t *cr, const RokTimelineLayout *layout) {
  const RokBox *lowest = layout->has_memory ? &layout->memory : &layout->gantt;
  cairo_save(cr);
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  cairo_set_line_width(cr, 1.0);
  cairo_move_to(cr, layout->gantt.x, layout->gantt.y);
  cairo_line_to(cr, layout->gantt.x, layout->gantt.y + layout->gantt.h);
  if (layout->has_memory) {
    cairo_move_to(cr, layout->memory.x, layout->memory.y);
    cairo_line_to(cr, layout->memory.x, layout->memory.y + layout->memory.h);
    const RokTicks *memory = &layout->memory_ticks;
    for (guint i = 0; i < memory->count; i++) {
      double y = plot_timeline_layout_memory_y(layout, memory->values[i] * memory->scale);
      cairo_move_to(cr, layout->memory.x, y);
      cairo_rel_line_to(cr, -ROK_TICK_LEN, 0.0);
    }
  }
  double bottom = lowest->y + lowest->h;
  cairo_move_to(cr, lowest->x, bottom);
  cairo_line_to(cr, lowest->x + lowest->w, bottom);
  const RokTicks *ticks = &layout->time_ticks;
  for (guint i = 0; i < ticks->count; i++) {
    cairo_move_to(cr, plot_timeline_layout_x(layout, ticks->values[i] * ticks->scale), bottom);
    cairo_rel_line_to(cr, 0.0, ROK_TICK_LEN);
  }
  cairo_stroke(cr);
  cairo_restore(cr);
}

static void draw_legend(cairo_t *cr, const RokTimelineLayout *layout) {
  for (guint i = 0; i < layout->legend_entries->len; i++) {
    const RokLegendEntry *entry = &g_array_index(layout->legend_entries, RokLegendEntry, i);
    RokRgb color = plot_palette_color(entry->color);
    cairo_rectangle(cr, entry->sample_x, entry->sample_y - 5.5, 11.0, 11.0);
    cairo_set_source_rgb(cr, color.r, color.g, color.b);
    cairo_fill(cr);
  }
}

void plot_timeline_draw(cairo_t *cr, const RokTimeline *timeline, const RokTimelineLayout *layout) {
  cairo_set_source_rgb(cr, 1.0, 1.0, 1.0);
  cairo_paint(cr);
  draw_rows(cr, timeline, layout);
  draw_time_grid(cr, layout);
  draw_bars(cr, timeline, layout);
  if (layout->has_memory)
    draw_memory(cr, timeline, layout);
  draw_axes(cr, layout);
  draw_legend(cr, layout);
  for (guint i = 0; i < layout->texts->len; i++)
    plot_text_draw(cr, &g_array_index(layout->texts, RokText, i));
}
