/* The legend: one entry per named series (and one for what hollow markers
 * mean). It goes in the first corner of the plot where it covers no line or
 * marker; else as a column right of the plot; else, when that column would
 * be too tall, as a grid beneath the x-axis title; and when even that leaves
 * too little plot, back inside the plot where it covers the least. */
#include <math.h>

#include "chart-layout-private.h"

#define GRID_COLUMN_GAP 16.0
#define ROW_GAP 2.0
/* Longer names are cut short with an ellipsis rather than fill the chart. */
#define ROK_LEGEND_MAX_LINES 2

static void row_clear(gpointer data) {
  RokLegendRow *row = data;
  g_free(row->name);
  g_strfreev(row->lines);
  g_strfreev(row->grid_lines);
}

static double lines_width(LayoutContext *ctx, char **lines) {
  double w = 0.0;
  for (char **line = lines; *line != NULL; line++)
    w = MAX(w, plot_text_width(ctx->cr, *line, ROK_SCALED(ctx, ROK_LEGEND_SIZE), FALSE));
  return w;
}

/* A legend entry wraps between phrases, never inside one: the spaces of a
 * parenthesised phrase ("(fits ≤ 22)") and between a number and its unit
 * ("40.0 GiB") become no-break spaces, which the wrapping keeps. */
static char *glue_phrases(const char *name) {
  GString *out = g_string_new(NULL);
  int depth = 0;
  for (const char *p = name; *p != '\0'; p++) {
    depth += *p == '(' ? 1 : *p == ')' && depth > 0 ? -1 : 0;
    gboolean unit = p > name && g_ascii_isdigit(p[-1]) && g_ascii_isalpha(p[1]);
    if (*p == ' ' && (depth > 0 || unit))
      g_string_append(out, "\u00a0");
    else
      g_string_append_c(out, *p);
  }
  return g_string_free(out, FALSE);
}

static void add_row(LayoutContext *ctx, const char *name, guint color, RokSeriesStyle style,
                    gboolean hollow, double marker_size) {
  RokLegendRow row = {
      .name = glue_phrases(name), .color = color, .style = style, .hollow = hollow, .marker_size = marker_size};
  g_array_append_val(ctx->legend_rows, row);
}

/* As a column: names wrap at a fraction of the canvas width, so that the
 * column can stand beside the plot. */
static void measure_column(LayoutContext *ctx) {
  double line_h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_LEGEND_SIZE));
  double text_w = 0.0, h = 0.0;
  for (guint r = 0; r < ctx->legend_rows->len; r++) {
    RokLegendRow *row = &g_array_index(ctx->legend_rows, RokLegendRow, r);
    row->lines = plot_text_wrap_lines(ctx->cr, row->name, ROK_SCALED(ctx, ROK_LEGEND_SIZE), FALSE,
                                     ctx->chart->width * 0.28, ROK_LEGEND_MAX_LINES);
    row->height = MAX(g_strv_length(row->lines), 1) * line_h;
    text_w = MAX(text_w, lines_width(ctx, row->lines));
    h += row->height + (r > 0 ? ROW_GAP : 0.0);
  }
  ctx->legend_w = text_w + 2 * ROK_LEGEND_PAD + ROK_LEGEND_SAMPLE + 6.0;
  ctx->legend_h = h + 2 * ROK_LEGEND_PAD;
}

/* As a grid under the plot: the number of columns that makes it lowest
 * without cutting names short (if every choice cuts some, the one that cuts
 * fewest). */
static void measure_grid(LayoutContext *ctx) {
  double line_h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_LEGEND_SIZE));
  double room = ctx->chart->width - 2 * ROK_LAYOUT_PAD - 2 * ROK_LEGEND_PAD;
  guint n = ctx->legend_rows->len;
  double best_h = INFINITY;
  guint best_cut = G_MAXUINT;
  for (guint columns = 1; columns <= n; columns++) {
    double cell_room = (room - (columns - 1) * GRID_COLUMN_GAP) / columns;
    double text_room = cell_room - ROK_LEGEND_SAMPLE - 6.0;
    if (text_room < 40.0 && columns > 1)
      break;
    guint lines = 1, cut = 0;
    double text_w = 0.0;
    for (guint r = 0; r < n; r++) {
      const RokLegendRow *row = &g_array_index(ctx->legend_rows, RokLegendRow, r);
      g_auto(GStrv) whole =
          plot_text_wrap(ctx->cr, row->name, ROK_SCALED(ctx, ROK_LEGEND_SIZE), FALSE, text_room);
      g_auto(GStrv) wrapped =
          plot_text_wrap_lines(ctx->cr, row->name, ROK_SCALED(ctx, ROK_LEGEND_SIZE), FALSE,
                              text_room, ROK_LEGEND_MAX_LINES);
      cut += g_strv_length(whole) > ROK_LEGEND_MAX_LINES || lines_width(ctx, whole) > text_room;
      lines = MAX(lines, g_strv_length(wrapped));
      text_w = MAX(text_w, lines_width(ctx, wrapped));
    }
    guint rows = (n + columns - 1) / columns;
    double h = rows * lines * line_h + (rows - 1) * ROW_GAP;
    if (cut < best_cut || (cut == best_cut && h < best_h - 1e-9)) {
      best_h = h;
      best_cut = cut;
      ctx->legend_columns = columns;
      ctx->legend_cell_w = text_w + ROK_LEGEND_SAMPLE + 6.0;
      ctx->legend_cell_h = lines * line_h;
    }
  }
  double text_room = ctx->legend_cell_w - ROK_LEGEND_SAMPLE - 6.0;
  for (guint r = 0; r < n; r++) {
    RokLegendRow *row = &g_array_index(ctx->legend_rows, RokLegendRow, r);
    row->grid_lines = plot_text_wrap_lines(ctx->cr, row->name, ROK_SCALED(ctx, ROK_LEGEND_SIZE),
                                          FALSE, text_room + 0.01, ROK_LEGEND_MAX_LINES);
  }
  guint columns = ctx->legend_columns;
  ctx->legend_grid_w =
      columns * ctx->legend_cell_w + (columns - 1) * GRID_COLUMN_GAP + 2 * ROK_LEGEND_PAD;
  ctx->legend_grid_h = best_h + 2 * ROK_LEGEND_PAD;
}

void plot_layout_measure_legend(LayoutContext *ctx) {
  const RokChart *chart = ctx->chart;
  ctx->legend_rows = g_array_new(FALSE, TRUE, sizeof(RokLegendRow));
  g_array_set_clear_func(ctx->legend_rows, row_clear);
  for (guint s = 0; s < chart->series->len; s++) {
    const RokSeries *series = g_ptr_array_index(chart->series, s);
    if ((series->style & ROK_SERIES_NO_LEGEND) || series->name[0] == '\0')
      continue;
    add_row(ctx, series->name, series->color, series->style, FALSE, plot_series_marker_size(series));
  }
  if (chart->hollow_meaning != NULL)
    add_row(ctx, chart->hollow_meaning, 0, ROK_SERIES_MARKERS, TRUE, ROK_MARKER_SIZE);
  ctx->layout->has_legend = ctx->legend_rows->len > 0;
  if (ctx->layout->has_legend) {
    measure_column(ctx);
    measure_grid(ctx);
  }
}

/* Spots inside the plot: corners first (readers look there), then edge
 * midpoints. */
static guint inside_spots(LayoutContext *ctx, RokBox spots[8]) {
  const RokBox *plot = &ctx->layout->plot;
  const double inset = 6.0, w = ctx->legend_w, h = ctx->legend_h;
  double left = plot->x + inset, right = plot->x + plot->w - inset - w;
  double top = plot->y + inset, bottom = plot->y + plot->h - inset - h;
  double centre = plot->x + (plot->w - w) / 2.0, middle = plot->y + (plot->h - h) / 2.0;
  const double xy[8][2] = {{left, top},   {right, top},     {right, bottom}, {left, bottom},
                           {centre, top}, {centre, bottom}, {right, middle}, {left, middle}};
  guint n = 0;
  for (guint i = 0; i < 8; i++) {
    RokBox box = {xy[i][0], xy[i][1], w, h};
    if (plot_box_contains(plot, &box))
      spots[n++] = box;
  }
  return n;
}

gboolean plot_layout_legend_inside(LayoutContext *ctx) {
  RokBox spots[8];
  guint n = inside_spots(ctx, spots);
  for (guint i = 0; i < n; i++) {
    RokBox clearance = plot_box_grow(spots[i], 3.0);
    if (plot_layout_obstacle_hits(ctx, &clearance) == 0) {
      ctx->layout->legend = spots[i];
      return TRUE;
    }
  }
  return FALSE;
}

void plot_layout_legend_least_covering(LayoutContext *ctx) {
  RokBox spots[8];
  guint n = inside_spots(ctx, spots), best_hits = G_MAXUINT;
  ctx->layout->compromises++;
  const RokBox *plot = &ctx->layout->plot;
  ctx->layout->legend =
      (RokBox){plot->x + plot->w - ctx->legend_w, plot->y, ctx->legend_w, ctx->legend_h};
  for (guint i = 0; i < n; i++) {
    guint hits = plot_layout_obstacle_hits(ctx, &spots[i]);
    if (hits < best_hits) {
      best_hits = hits;
      ctx->layout->legend = spots[i];
    }
  }
}

void plot_layout_legend_outside(LayoutContext *ctx) {
  const RokChart *chart = ctx->chart;
  if (ctx->legend_mode == ROK_LEGEND_RIGHT)
    ctx->layout->legend = (RokBox){chart->width - ROK_LAYOUT_PAD - ctx->legend_w,
                                   ctx->layout->plot.y, ctx->legend_w, ctx->legend_h};
  else
    ctx->layout->legend = (RokBox){(chart->width - ctx->legend_grid_w) / 2.0,
                                   chart->height - ROK_LAYOUT_PAD - ctx->legend_grid_h,
                                   ctx->legend_grid_w, ctx->legend_grid_h};
}

static void emit_entry(LayoutContext *ctx, const RokLegendRow *row, char **lines, double x,
                       double y, double w, double h) {
  double line_h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_LEGEND_SIZE));
  RokLegendEntry entry = {
      .box = {x, y, w, h},
      .color = row->color,
      .style = row->style,
      .hollow = row->hollow,
      .marker_size = row->marker_size,
      .sample_x = x,
      .sample_y = y + line_h / 2.0,
  };
  g_array_append_val(ctx->layout->legend_entries, entry);
  for (char **line = lines; *line != NULL; line++, y += line_h)
    plot_text_add(ctx->layout->texts, ctx->cr, *line, ROK_SCALED(ctx, ROK_LEGEND_SIZE), FALSE,
                 x + ROK_LEGEND_SAMPLE + 6.0, y);
}

void plot_layout_emit_legend(LayoutContext *ctx) {
  RokChartLayout *layout = ctx->layout;
  if (!layout->has_legend)
    return;
  double x = layout->legend.x + ROK_LEGEND_PAD, y = layout->legend.y + ROK_LEGEND_PAD;
  for (guint r = 0; r < ctx->legend_rows->len; r++) {
    const RokLegendRow *row = &g_array_index(ctx->legend_rows, RokLegendRow, r);
    if (ctx->legend_mode == ROK_LEGEND_BOTTOM) {
      guint column = r % ctx->legend_columns, line = r / ctx->legend_columns;
      emit_entry(ctx, row, row->grid_lines, x + column * (ctx->legend_cell_w + GRID_COLUMN_GAP),
                 y + line * (ctx->legend_cell_h + ROW_GAP), ctx->legend_cell_w, ctx->legend_cell_h);
    } else {
      emit_entry(ctx, row, row->lines, x, y, layout->legend.w - 2 * ROK_LEGEND_PAD, row->height);
      y += row->height + ROW_GAP;
    }
  }
}
