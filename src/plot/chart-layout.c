/* Where everything of a chart goes, decided before anything is drawn.
 *
 * Text is measured first and the plot area is what is left: margins grow to
 * fit the tick labels and axis titles, x ticks thin out until their labels
 * keep apart, the legend takes the first corner of the plot where it hides
 * no data (else it moves outside on the right), and reference-line and point
 * labels take the first spot next to their anchor that overlaps no other
 * text. Every text lies inside the canvas. */
#include <math.h>

#include "chart-layout-private.h"

#define AXIS_LIMIT 1e300

static void data_range(const RokChart *chart, RokAxisId axis, double *lo, double *hi) {
  double min = INFINITY, max = -INFINITY;
  for (guint s = 0; s < chart->series->len; s++) {
    const RokSeries *series = g_ptr_array_index(chart->series, s);
    for (guint p = 0; p < series->points->len; p++) {
      const RokPoint *point = &g_array_index(series->points, RokPoint, p);
      double v = axis == ROK_AXIS_X ? point->x : point->y;
      min = MIN(min, v);
      max = MAX(max, v);
    }
  }
  for (guint r = 0; r < chart->references->len; r++) {
    const RokReference *reference = &g_array_index(chart->references, RokReference, r);
    if (reference->axis == axis) {
      min = MIN(min, reference->value);
      max = MAX(max, reference->value);
    }
  }
  const GArray *include = chart->axes[axis].include;
  for (guint i = 0; i < include->len; i++) {
    min = MIN(min, g_array_index(include, double, i));
    max = MAX(max, g_array_index(include, double, i));
  }
  gboolean linear = chart->axes[axis].scale == ROK_SCALE_LINEAR;
  /* Finite data near DBL_MAX (1.797e308 tokens/s read from a CSV) would
   * overflow the air below and the ticks' arithmetic to infinities: an
   * axis spans at most ±1e300 (a point beyond is drawn off the frame). */
  if (min <= max) {
    min = linear ? CLAMP(min, -AXIS_LIMIT, AXIS_LIMIT) : CLAMP(min, 1.0 / AXIS_LIMIT, AXIS_LIMIT);
    max = linear ? CLAMP(max, -AXIS_LIMIT, AXIS_LIMIT) : CLAMP(max, 1.0 / AXIS_LIMIT, AXIS_LIMIT);
  }
  if (min > max) {
    *lo = linear ? 0.0 : 1.0;
    *hi = linear ? 1.0 : 10.0;
    return;
  }
  /* A little air so that no point sits on the frame (and a limit line at the
   * top of the data stays visible), without crossing zero. */
  if (!linear) {
    double factor = pow(max / min, 0.04);
    *lo = min / factor;
    *hi = max * factor;
    return;
  }
  double pad = (max - min) * 0.03;
  *lo = min >= 0.0 ? MAX(0.0, min - pad) : min - pad;
  *hi = max <= 0.0 ? MIN(0.0, max + pad) : max + pad;
}

static void place_title(LayoutContext *ctx) {
  const RokChart *chart = ctx->chart;
  ctx->top = ROK_LAYOUT_PAD;
  if (chart->title[0] == '\0')
    return;
  double size;
  g_auto(GStrv) lines =
      plot_text_fit(ctx->cr, chart->title, TRUE, ROK_SCALED(ctx, ROK_TITLE_SIZE),
                   ROK_SCALED(ctx, ROK_TITLE_MIN), chart->width - 2 * ROK_LAYOUT_PAD, 3, &size);
  double line_h = plot_text_height(ctx->cr, size);
  for (char **line = lines; *line != NULL; line++) {
    double w = plot_text_width(ctx->cr, *line, size, TRUE);
    RokText *text = plot_text_add(ctx->layout->texts, ctx->cr, *line, size, TRUE,
                                 (chart->width - w) / 2.0, ctx->top);
    text->color = (RokRgb){0.0, 0.0, 0.0};
    ctx->top += line_h;
  }
  ctx->top += ROK_LAYOUT_GAP;
}

/* Once the plot area is known the title moves to be centred over it, as far
 * as every line of it stays on the canvas. */
static void centre_title(LayoutContext *ctx) {
  const RokBox *plot = &ctx->layout->plot;
  double shift = plot->x + plot->w / 2.0 - ctx->chart->width / 2.0;
  double lowest = -G_MAXDOUBLE, highest = G_MAXDOUBLE;
  guint lines = 0;
  for (; lines < ctx->layout->texts->len; lines++) {
    const RokText *text = &g_array_index(ctx->layout->texts, RokText, lines);
    if (!text->bold)
      break;
    lowest = MAX(lowest, ROK_LAYOUT_PAD - text->box.x);
    highest = MIN(highest, ctx->chart->width - ROK_LAYOUT_PAD - text->box.x - text->box.w);
  }
  shift = CLAMP(shift, MIN(lowest, 0.0), MAX(highest, 0.0));
  for (guint i = 0; i < lines; i++)
    g_array_index(ctx->layout->texts, RokText, i).box.x += shift;
}

/* Canvas x or y of a data value on an axis of the current frame. */
static double map_axis(const RokChartLayout *layout, RokAxisId axis, double value) {
  double f = plot_ticks_fraction(&layout->ticks[axis], value);
  if (axis == ROK_AXIS_X)
    return layout->plot.x + f * layout->plot.w;
  return layout->plot.y + (1.0 - f) * layout->plot.h;
}

void plot_chart_layout_map(const RokChartLayout *layout, double x, double y, double *px,
                          double *py) {
  *px = map_axis(layout, ROK_AXIS_X, x);
  *py = map_axis(layout, ROK_AXIS_Y, y);
}

static double max_label_width(LayoutContext *ctx, const RokTicks *ticks) {
  double w = 0.0;
  for (guint i = 0; i < ticks->count; i++)
    w = MAX(w, plot_text_width(ctx->cr, ticks->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE));
  return w;
}

/* The most y ticks (up to 8) whose labels stay well apart. */
static void choose_y_ticks(LayoutContext *ctx, double plot_h) {
  const RokAxisSpec *spec = &ctx->chart->axes[ROK_AXIS_Y];
  RokTicks *ticks = &ctx->layout->ticks[ROK_AXIS_Y];
  double need = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_TICK_SIZE)) * 1.9;
  for (guint n = 8; n >= 2; n--) {
    plot_ticks_compute(ctx->lo[1], ctx->hi[1], spec->unit, spec->unit_name, spec->scale, n, ticks);
    gboolean apart = TRUE;
    for (guint i = 0; i + 1 < ticks->count && apart; i++) {
      double f0 = plot_ticks_fraction(ticks, ticks->values[i] * ticks->scale);
      double f1 = plot_ticks_fraction(ticks, ticks->values[i + 1] * ticks->scale);
      apart = (f1 - f0) * plot_h >= need;
    }
    if (apart)
      return;
  }
}

/* The most x ticks (up to 8) whose labels leave a clear gap between them. */
static void choose_x_ticks(LayoutContext *ctx, double plot_w) {
  const RokAxisSpec *spec = &ctx->chart->axes[ROK_AXIS_X];
  RokTicks *ticks = &ctx->layout->ticks[ROK_AXIS_X];
  for (guint n = 8; n >= 2; n--) {
    plot_ticks_compute(ctx->lo[0], ctx->hi[0], spec->unit, spec->unit_name, spec->scale, n, ticks);
    gboolean apart = TRUE;
    for (guint i = 0; i + 1 < ticks->count && apart; i++) {
      double x0 = plot_ticks_fraction(ticks, ticks->values[i] * ticks->scale) * plot_w;
      double x1 = plot_ticks_fraction(ticks, ticks->values[i + 1] * ticks->scale) * plot_w;
      double w0 = plot_text_width(ctx->cr, ticks->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE);
      double w1 =
          plot_text_width(ctx->cr, ticks->labels[i + 1], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE);
      apart = x1 - x0 >= (w0 + w1) / 2.0 + 12.0;
    }
    if (apart)
      return;
  }
}

/* An axis title in at most two lines; when it needs more, the words are cut
 * short but the unit stays: "Model throughput measured… (k tokens/s)". */
static GStrv axis_title_lines(LayoutContext *ctx, RokAxisId axis, double room) {
  const RokTicks *ticks = &ctx->layout->ticks[axis];
  const char *words = ctx->chart->axes[axis].title;
  g_autofree char *title = plot_ticks_axis_title(ticks, words);
  if (title[0] == '\0')
    return g_new0(char *, 1);
  double *size = &ctx->axis_size[axis];
  GStrv lines = plot_text_fit(ctx->cr, title, FALSE, ROK_SCALED(ctx, ROK_AXIS_TITLE_SIZE),
                             ROK_SCALED(ctx, ROK_AXIS_TITLE_MIN), room, 0, size);
  if (g_strv_length(lines) <= 2 || ticks->unit[0] == '\0' || words[0] == '\0') {
    g_strfreev(lines);
    return plot_text_fit(ctx->cr, title, FALSE, ROK_SCALED(ctx, ROK_AXIS_TITLE_SIZE),
                        ROK_SCALED(ctx, ROK_AXIS_TITLE_MIN), room, 2, size);
  }
  g_strfreev(lines);
  g_autofree char *unit = g_strdup_printf(" (%s)", ticks->unit);
  lines = plot_text_wrap_lines(ctx->cr, words, *size, FALSE, room, 2);
  guint last = g_strv_length(lines) - 1;
  double unit_w = plot_text_width(ctx->cr, unit, *size, FALSE);
  g_autofree char *cut =
      plot_text_ellipsize(ctx->cr, lines[last], *size, FALSE, MAX(room - unit_w, 0.0));
  g_free(lines[last]);
  lines[last] = g_strconcat(cut, unit, NULL);
  return lines;
}

static void fit_axis_titles(LayoutContext *ctx) {
  for (int a = 0; a < 2; a++) {
    g_strfreev(ctx->axis_lines[a]);
    double room = a == ROK_AXIS_X ? ctx->layout->plot.w : ctx->layout->plot.h;
    ctx->axis_lines[a] = axis_title_lines(ctx, a, MAX(room, 40.0));
  }
}

static double axis_title_depth(LayoutContext *ctx, RokAxisId axis) {
  guint n = g_strv_length(ctx->axis_lines[axis]);
  return n == 0 ? 0.0 : n * plot_text_height(ctx->cr, ctx->axis_size[axis]) + ROK_LAYOUT_GAP;
}

static guint axis_title_line_count(const LayoutContext *ctx) {
  return g_strv_length(ctx->axis_lines[0]) * 16 + g_strv_length(ctx->axis_lines[1]);
}

/* One round of sizing the plot area: its height from the x-axis text below
 * it, the y ticks for that height, its left edge from their labels, the x
 * ticks for its width and its right edge from the last x label. */
static void frame_round(LayoutContext *ctx, double right_reserve, double bottom_reserve) {
  RokChartLayout *layout = ctx->layout;
  const RokChart *chart = ctx->chart;
  double tick_size = ROK_SCALED(ctx, ROK_TICK_SIZE);
  double tick_h = plot_text_height(ctx->cr, tick_size);
  double bottom = chart->height - ROK_LAYOUT_PAD - bottom_reserve -
                  axis_title_depth(ctx, ROK_AXIS_X) - tick_h - ROK_TICK_LEN - ROK_TICK_GAP;
  layout->plot.h = MAX(bottom - layout->plot.y, 20.0);
  choose_y_ticks(ctx, layout->plot.h);
  choose_x_ticks(ctx, layout->plot.w);
  /* The first and last x labels are centred on their ticks: they may reach
   * past the plot's edges, not past the canvas's. */
  const RokTicks *xt = &layout->ticks[ROK_AXIS_X];
  double first_w = plot_text_width(ctx->cr, xt->labels[0], tick_size, FALSE);
  double last_w = plot_text_width(ctx->cr, xt->labels[xt->count - 1], tick_size, FALSE);
  double inset_first = plot_ticks_fraction(xt, xt->values[0] * xt->scale) * layout->plot.w;
  double inset_last =
      (1.0 - plot_ticks_fraction(xt, xt->values[xt->count - 1] * xt->scale)) * layout->plot.w;
  layout->plot.x =
      MAX(ROK_LAYOUT_PAD + axis_title_depth(ctx, ROK_AXIS_Y) +
              max_label_width(ctx, &layout->ticks[ROK_AXIS_Y]) + ROK_TICK_GAP + ROK_TICK_LEN,
          ROK_LAYOUT_PAD + first_w / 2.0 - inset_first);
  double right = MAX(last_w / 2.0 - inset_last, 0.0) + 6.0;
  layout->plot.w =
      MAX(chart->width - ROK_LAYOUT_PAD - right_reserve - right - layout->plot.x, 20.0);
}

/* The plot area and ticks, given the room the legend takes outside it.
 * Labels depend on the area and the area on the labels: a few rounds settle
 * it; the last round keeps its titles, fitted to nearly the same area. */
static void frame(LayoutContext *ctx) {
  RokChartLayout *layout = ctx->layout;
  const RokChart *chart = ctx->chart;
  double tick_h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_TICK_SIZE));
  double right_reserve =
      ctx->legend_mode == ROK_LEGEND_RIGHT ? ctx->legend_w + ROK_LAYOUT_GAP : 0.0;
  double bottom_reserve =
      ctx->legend_mode == ROK_LEGEND_BOTTOM ? ctx->legend_grid_h + ROK_LAYOUT_GAP : 0.0;
  layout->plot = (RokBox){ROK_LAYOUT_PAD + 40.0, ctx->top + tick_h / 2.0 + 2.0, chart->width * 0.7,
                          chart->height * 0.6};
  fit_axis_titles(ctx);
  for (int round = 0; round < 8; round++) {
    RokBox before = layout->plot;
    guint lines_before = axis_title_line_count(ctx);
    frame_round(ctx, right_reserve, bottom_reserve);
    if (round == 7)
      break;
    fit_axis_titles(ctx);
    if (axis_title_line_count(ctx) == lines_before && fabs(before.x - layout->plot.x) < 0.01 &&
        fabs(before.w - layout->plot.w) < 0.01 && fabs(before.h - layout->plot.h) < 0.01)
      break;
  }
}

static void emit_tick_labels(LayoutContext *ctx) {
  RokChartLayout *layout = ctx->layout;
  double tick_h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_TICK_SIZE));
  const RokTicks *xt = &layout->ticks[ROK_AXIS_X], *yt = &layout->ticks[ROK_AXIS_Y];
  for (guint i = 0; i < xt->count; i++) {
    double x = map_axis(layout, ROK_AXIS_X, xt->values[i] * xt->scale);
    double w = plot_text_width(ctx->cr, xt->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE);
    plot_text_add(layout->texts, ctx->cr, xt->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE,
                 x - w / 2.0, layout->plot.y + layout->plot.h + ROK_TICK_LEN + ROK_TICK_GAP);
  }
  for (guint i = 0; i < yt->count; i++) {
    double y = map_axis(layout, ROK_AXIS_Y, yt->values[i] * yt->scale);
    double w = plot_text_width(ctx->cr, yt->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE);
    plot_text_add(layout->texts, ctx->cr, yt->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE,
                 layout->plot.x - ROK_TICK_LEN - ROK_TICK_GAP - w, y - tick_h / 2.0);
  }
}

static void emit_axis_titles(LayoutContext *ctx) {
  RokChartLayout *layout = ctx->layout;
  const RokBox *plot = &layout->plot;
  double line_h = plot_text_height(ctx->cr, ctx->axis_size[ROK_AXIS_X]);
  double y = plot->y + plot->h + ROK_TICK_LEN + ROK_TICK_GAP +
             plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_TICK_SIZE)) + ROK_LAYOUT_GAP;
  for (char **line = ctx->axis_lines[ROK_AXIS_X]; *line != NULL; line++, y += line_h) {
    double w = plot_text_width(ctx->cr, *line, ctx->axis_size[ROK_AXIS_X], FALSE);
    plot_text_add(layout->texts, ctx->cr, *line, ctx->axis_size[ROK_AXIS_X], FALSE,
                 plot->x + (plot->w - w) / 2.0, y);
  }
  line_h = plot_text_height(ctx->cr, ctx->axis_size[ROK_AXIS_Y]);
  double x = ROK_LAYOUT_PAD;
  for (char **line = ctx->axis_lines[ROK_AXIS_Y]; *line != NULL; line++, x += line_h) {
    RokText *text =
        plot_text_add(layout->texts, ctx->cr, *line, ctx->axis_size[ROK_AXIS_Y], FALSE, x, 0.0);
    double length = text->box.w;
    text->vertical = TRUE;
    text->box = (RokBox){x, plot->y + (plot->h - length) / 2.0, line_h, length};
  }
}

static double frame_area(LayoutContext *ctx, RokLegendMode mode) {
  ctx->legend_mode = mode;
  frame(ctx);
  return ctx->layout->plot.w * ctx->layout->plot.h;
}

/* Beside the plot if the column fits the height and leaves the plot most of
 * the width; else beneath it if the plot keeps enough height; else inside
 * where it covers least, if it fits there; else wherever the plot keeps the
 * most room. */
static void place_legend_outside(LayoutContext *ctx) {
  const RokChart *chart = ctx->chart;
  const RokBox *plot = &ctx->layout->plot;
  double right_area = frame_area(ctx, ROK_LEGEND_RIGHT);
  gboolean right_fits = plot->y + ctx->legend_h <= chart->height - ROK_LAYOUT_PAD;
  if (!right_fits || plot->w < chart->width * 0.4) {
    double bottom_area = frame_area(ctx, ROK_LEGEND_BOTTOM);
    if (plot->h < chart->height * 0.3) {
      frame_area(ctx, ROK_LEGEND_INSIDE);
      if (ctx->legend_w <= plot->w - 12.0 && ctx->legend_h <= plot->h - 12.0) {
        plot_layout_collect_obstacles(ctx);
        plot_layout_legend_least_covering(ctx);
        return;
      }
      frame_area(ctx,
                 right_fits && right_area > bottom_area ? ROK_LEGEND_RIGHT : ROK_LEGEND_BOTTOM);
    }
  }
  plot_layout_collect_obstacles(ctx);
  plot_layout_legend_outside(ctx);
}

static void layout_clear(LayoutContext *ctx) {
  for (int a = 0; a < 2; a++)
    g_strfreev(ctx->axis_lines[a]);
  g_clear_pointer(&ctx->obstacles.segments, g_array_unref);
  g_clear_pointer(&ctx->obstacles.boxes, g_array_unref);
  g_clear_pointer(&ctx->obstacles.references, g_array_unref);
  g_clear_pointer(&ctx->legend_rows, g_array_unref);
  cairo_destroy(ctx->cr);
}

static RokChartLayout *layout_at_scale(const RokChart *chart, double text_scale) {
  RokChartLayout *layout = g_new0(RokChartLayout, 1);
  layout->width = chart->width;
  layout->height = chart->height;
  layout->texts = plot_text_array_new();
  layout->legend_entries = g_array_new(FALSE, TRUE, sizeof(RokLegendEntry));
  layout->leaders = g_array_new(FALSE, TRUE, sizeof(RokBox));
  LayoutContext ctx = {
      .chart = chart, .cr = plot_text_context_new(), .layout = layout, .text_scale = text_scale};
  data_range(chart, ROK_AXIS_X, &ctx.lo[0], &ctx.hi[0]);
  data_range(chart, ROK_AXIS_Y, &ctx.lo[1], &ctx.hi[1]);
  place_title(&ctx);
  plot_layout_measure_legend(&ctx);
  frame(&ctx);
  plot_layout_collect_obstacles(&ctx);
  if (layout->has_legend && !plot_layout_legend_inside(&ctx))
    place_legend_outside(&ctx);
  centre_title(&ctx);
  emit_tick_labels(&ctx);
  emit_axis_titles(&ctx);
  plot_layout_emit_legend(&ctx);
  plot_layout_place_labels(&ctx);
  layout_clear(&ctx);
  return layout;
}

/* A small canvas with much text: all text a little smaller, until the plot
 * keeps a fair share of the canvas and nothing had to give way (else the
 * layout where least did). */
RokChartLayout *plot_chart_layout_new(const RokChart *chart) {
  static const double scales[] = {1.0, 0.9, 0.8, 0.7};
  RokChartLayout *best = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(scales); i++) {
    RokChartLayout *layout = layout_at_scale(chart, scales[i] * chart->font_scale);
    if (layout->plot.w < chart->width * 0.35 || layout->plot.h < chart->height * 0.3)
      layout->compromises++;
    if (best == NULL || layout->compromises < best->compromises) {
      g_clear_pointer(&best, plot_chart_layout_free);
      best = layout;
    } else {
      plot_chart_layout_free(layout);
    }
    if (best->compromises == 0)
      break;
  }
  return best;
}

void plot_chart_layout_free(RokChartLayout *layout) {
  if (layout == NULL)
    return;
  g_array_unref(layout->texts);
  g_array_unref(layout->legend_entries);
  g_array_unref(layout->leaders);
  g_free(layout);
}
