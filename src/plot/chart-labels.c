/* Labels inside the plot: reference-line labels and point labels.
 *
 * Each label has a list of candidate spots around its anchor, nearest first.
 * It takes the first spot inside the plot that overlaps no text and no
 * legend and covers no line or marker; failing that, the spot that covers
 * the fewest lines and markers. Far spots get a thin leader line. */
#include <math.h>
#include <string.h>

#include "plot/chart-layout-private.h"

static void collect_series(LayoutContext *ctx, const RokSeries *series) {
  const RokChartLayout *layout = ctx->layout;
  double half = rok_series_marker_size(series) * 0.75;
  double last_x = 0.0, last_y = 0.0;
  for (guint p = 0; p < series->points->len; p++) {
    const RokPoint *point = &g_array_index(series->points, RokPoint, p);
    double x, y;
    rok_chart_layout_map(layout, point->x, point->y, &x, &y);
    if ((series->style & ROK_SERIES_LINE) && p > 0) {
      RokSegment segment = {last_x, last_y, x, y};
      g_array_append_val(ctx->obstacles.segments, segment);
    }
    if (rok_series_draws_markers(series)) {
      RokBox box = {x - half, y - half, 2 * half, 2 * half};
      g_array_append_val(ctx->obstacles.boxes, box);
    }
    last_x = x;
    last_y = y;
  }
}

void rok_layout_collect_obstacles(LayoutContext *ctx) {
  const RokChart *chart = ctx->chart;
  const RokBox *plot = &ctx->layout->plot;
  g_clear_pointer(&ctx->obstacles.segments, g_array_unref);
  g_clear_pointer(&ctx->obstacles.boxes, g_array_unref);
  ctx->obstacles.segments = g_array_new(FALSE, FALSE, sizeof(RokSegment));
  ctx->obstacles.boxes = g_array_new(FALSE, FALSE, sizeof(RokBox));
  for (guint s = 0; s < chart->series->len; s++)
    collect_series(ctx, g_ptr_array_index(chart->series, s));
  for (guint r = 0; r < chart->references->len; r++) {
    const RokReference *reference = &g_array_index(chart->references, RokReference, r);
    double x, y;
    rok_chart_layout_map(ctx->layout, reference->value, reference->value, &x, &y);
    RokSegment segment = reference->axis == ROK_AXIS_Y
                           ? (RokSegment){plot->x, y, plot->x + plot->w, y}
                           : (RokSegment){x, plot->y, x, plot->y + plot->h};
    g_array_append_val(ctx->obstacles.segments, segment);
  }
}

guint rok_layout_obstacle_hits(const LayoutContext *ctx, const RokBox *box) {
  guint hits = 0;
  for (guint i = 0; i < ctx->obstacles.segments->len; i++) {
    const RokSegment *s = &g_array_index(ctx->obstacles.segments, RokSegment, i);
    hits += rok_box_hits_segment(box, s->x0, s->y0, s->x1, s->y1);
  }
  for (guint i = 0; i < ctx->obstacles.boxes->len; i++)
    hits += rok_box_overlaps(box, &g_array_index(ctx->obstacles.boxes, RokBox, i));
  return hits;
}

/* Whether a spot may take a label: inside `area`, clear of all text and of
 * the legend. */
static gboolean spot_allowed(const LayoutContext *ctx, const RokBox *area, const RokBox *box) {
  const RokChartLayout *layout = ctx->layout;
  if (!rok_box_contains(area, box))
    return FALSE;
  RokBox clearance = rok_box_grow(*box, 1.5);
  if (layout->has_legend && rok_box_overlaps(&clearance, &layout->legend))
    return FALSE;
  for (guint i = 0; i < layout->texts->len; i++)
    if (rok_box_overlaps(&clearance, &g_array_index(layout->texts, RokText, i).box))
      return FALSE;
  return TRUE;
}

/* The first allowed spot that covers nothing, else the allowed spot that
 * covers least; inside the plot if possible, else anywhere on the canvas;
 * -1 when no spot is allowed. */
static int choose_spot(const LayoutContext *ctx, const RokBox *spots, int count) {
  const RokBox canvas = {0.0, 0.0, ctx->chart->width, ctx->chart->height};
  const RokBox *areas[] = {&ctx->layout->plot, &canvas};
  for (gsize a = 0; a < G_N_ELEMENTS(areas); a++) {
    int best = -1;
    guint best_hits = G_MAXUINT;
    for (int i = 0; i < count; i++) {
      if (!spot_allowed(ctx, areas[a], &spots[i]))
        continue;
      RokBox clearance = rok_box_grow(spots[i], 1.0);
      guint hits = rok_layout_obstacle_hits(ctx, &clearance);
      if (hits == 0)
        return i;
      if (hits < best_hits) {
        best = i;
        best_hits = hits;
      }
    }
    if (best >= 0)
      return best;
  }
  return -1;
}

/* A box that does not fit anywhere is pushed inside the plot at least. */
static RokBox clamp_to_plot(const RokBox *plot, RokBox box) {
  box.x = CLAMP(box.x, plot->x, MAX(plot->x, plot->x + plot->w - box.w));
  box.y = CLAMP(box.y, plot->y, MAX(plot->y, plot->y + plot->h - box.h));
  return box;
}

/* Spots along a reference line, the line's end first: horizontal lines get
 * their label above or below, vertical lines beside them. */
static guint reference_spots(const LayoutContext *ctx, const RokReference *reference, double w,
                             double h, RokBox *spots) {
  const RokBox *plot = &ctx->layout->plot;
  double x, y;
  rok_chart_layout_map(ctx->layout, reference->value, reference->value, &x, &y);
  guint n = 0;
  if (reference->axis == ROK_AXIS_Y) {
    const double along[] = {1.0, 0.0, 0.5, 0.75, 0.25};
    const double offsets[] = {-2.0 - h, 2.0, -4.0 - 2 * h, 4.0 + h};
    for (gsize o = 0; o < G_N_ELEMENTS(offsets); o++)
      for (gsize a = 0; a < G_N_ELEMENTS(along); a++)
        spots[n++] = (RokBox){plot->x + 4.0 + along[a] * (plot->w - 8.0 - w), y + offsets[o], w, h};
  } else {
    const double along[] = {0.0, 1.0, 0.5, 0.25, 0.75};
    const double offsets[] = {4.0, -4.0 - w};
    for (gsize a = 0; a < G_N_ELEMENTS(along); a++)
      for (gsize o = 0; o < G_N_ELEMENTS(offsets); o++)
        spots[n++] = (RokBox){x + offsets[o], plot->y + 4.0 + along[a] * (plot->h - 8.0 - h), w, h};
  }
  return n;
}

/* Adds a label at the best of the spots (all of the label's size). */
static const RokBox *add_label(LayoutContext *ctx, const char *text, const RokBox *spots,
                               int count, RokRgb color, int *chosen) {
  *chosen = choose_spot(ctx, spots, count);
  RokBox box = *chosen >= 0 ? spots[*chosen] : clamp_to_plot(&ctx->layout->plot, spots[0]);
  RokText *added = rok_text_add(ctx->layout->texts, ctx->cr, text,
                                ROK_SCALED(ctx, ROK_LABEL_SIZE), FALSE, box.x, box.y);
  added->color = color;
  return &added->box;
}

static void place_reference(LayoutContext *ctx, const RokReference *reference) {
  double size = ROK_SCALED(ctx, ROK_LABEL_SIZE);
  /* A label never needs more than the plot's width (or half its height). */
  double room = reference->axis == ROK_AXIS_Y ? ctx->layout->plot.w - 8.0
                                              : ctx->layout->plot.w * 0.5;
  g_autofree char *label = rok_text_ellipsize(ctx->cr, reference->label, size, FALSE, room);
  double w = rok_text_width(ctx->cr, label, size, FALSE), h = rok_text_height(ctx->cr, size);
  RokBox spots[20];
  guint count = reference_spots(ctx, reference, w, h, spots);
  int chosen;
  add_label(ctx, label, spots, (int)count, (RokRgb){0.25, 0.25, 0.25}, &chosen);
}

#define SPOT_RINGS 4
#define SPOT_DIRECTIONS 8

/* Spots around a point, nearest ring first: right, left, above, below,
 * then the diagonals. */
static void point_spots(double px, double py, double w, double h, RokBox *spots) {
  static const double rings[SPOT_RINGS] = {4.0, 16.0, 30.0, 48.0};
  static const double directions[SPOT_DIRECTIONS][2] = {{1, 0},  {-1, 0}, {0, -1}, {0, 1},
                                                        {1, -1}, {-1, -1}, {1, 1},  {-1, 1}};
  for (int r = 0; r < SPOT_RINGS; r++)
    for (int d = 0; d < SPOT_DIRECTIONS; d++) {
      double reach = ROK_MARKER_SIZE * 0.75 + rings[r];
      double dx = directions[d][0], dy = directions[d][1];
      /* The box's near edge or corner sits `reach` from the point. */
      double x = dx > 0 ? px + reach * (dy != 0 ? 0.75 : 1.0)
                 : dx < 0 ? px - reach * (dy != 0 ? 0.75 : 1.0) - w
                          : px - w / 2.0;
      double y = dy > 0 ? py + reach * (dx != 0 ? 0.75 : 1.0)
                 : dy < 0 ? py - reach * (dx != 0 ? 0.75 : 1.0) - h
                          : py - h / 2.0;
      spots[r * SPOT_DIRECTIONS + d] = (RokBox){x, y, w, h};
    }
}

static void place_point_label(LayoutContext *ctx, const RokPoint *point) {
  double size = ROK_SCALED(ctx, ROK_LABEL_SIZE);
  g_autofree char *label =
    rok_text_ellipsize(ctx->cr, point->label, size, FALSE, ctx->layout->plot.w * 0.5);
  double w = rok_text_width(ctx->cr, label, size, FALSE), h = rok_text_height(ctx->cr, size);
  double px, py;
  rok_chart_layout_map(ctx->layout, point->x, point->y, &px, &py);
  RokBox spots[SPOT_RINGS * SPOT_DIRECTIONS];
  point_spots(px, py, w, h, spots);
  int chosen;
  const RokBox *box =
    add_label(ctx, label, spots, G_N_ELEMENTS(spots), (RokRgb){0.13, 0.13, 0.13}, &chosen);
  if (chosen >= SPOT_DIRECTIONS || chosen < 0) {
    /* A far label gets a leader from the marker's edge to its nearest point. */
    double tx = CLAMP(px, box->x, box->x + box->w), ty = CLAMP(py, box->y, box->y + box->h);
    double length = hypot(tx - px, ty - py), skip = ROK_MARKER_SIZE * 0.75 / length;
    if (length > ROK_MARKER_SIZE) {
      RokBox leader = {px + (tx - px) * skip, py + (ty - py) * skip, (tx - px) * (1 - skip),
                       (ty - py) * (1 - skip)};
      g_array_append_val(ctx->layout->leaders, leader);
    }
  }
}

void rok_layout_place_labels(LayoutContext *ctx) {
  const RokChart *chart = ctx->chart;
  for (guint r = 0; r < chart->references->len; r++) {
    const RokReference *reference = &g_array_index(chart->references, RokReference, r);
    if (reference->label != NULL)
      place_reference(ctx, reference);
  }
  for (guint s = 0; s < chart->series->len; s++) {
    const RokSeries *series = g_ptr_array_index(chart->series, s);
    for (guint p = 0; p < series->points->len; p++) {
      const RokPoint *point = &g_array_index(series->points, RokPoint, p);
      if (point->label != NULL)
        place_point_label(ctx, point);
    }
  }
}
