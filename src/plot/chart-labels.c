/* Labels inside the plot: reference-line labels and point labels.
 *
 * Each label has a list of candidate spots around its anchor, nearest first.
 * It takes the first spot inside the plot that overlaps no text and no
 * legend and covers no line or marker; failing that, the spot that covers
 * the fewest lines and markers. Far spots get a thin leader line. */
#include <math.h>
#include <string.h>

#include "chart-layout-private.h"

static void collect_series(LayoutContext *ctx, const RokSeries *series) {
  const RokChartLayout *layout = ctx->layout;
  double half = plot_series_marker_size(series) * 0.75;
  double last_x = 0.0, last_y = 0.0;
  for (guint p = 0; p < series->points->len; p++) {
    const RokPoint *point = &g_array_index(series->points, RokPoint, p);
    double x, y;
    plot_chart_layout_map(layout, point->x, point->y, &x, &y);
    if ((series->style & ROK_SERIES_LINE) && p > 0) {
      RokSegment segment = {last_x, last_y, x, y};
      g_array_append_val(ctx->obstacles.segments, segment);
    }
    if (plot_series_draws_markers(series)) {
      RokBox box = {x - half, y - half, 2 * half, 2 * half};
      g_array_append_val(ctx->obstacles.boxes, box);
    }
    last_x = x;
    last_y = y;
  }
}

void plot_layout_collect_obstacles(LayoutContext *ctx) {
  const RokChart *chart = ctx->chart;
  const RokBox *plot = &ctx->layout->plot;
  g_clear_pointer(&ctx->obstacles.segments, g_array_unref);
  g_clear_pointer(&ctx->obstacles.boxes, g_array_unref);
  g_clear_pointer(&ctx->obstacles.references, g_array_unref);
  ctx->obstacles.segments = g_array_new(FALSE, FALSE, sizeof(RokSegment));
  ctx->obstacles.boxes = g_array_new(FALSE, FALSE, sizeof(RokBox));
  ctx->obstacles.references = g_array_new(FALSE, FALSE, sizeof(RokSegment));
  for (guint s = 0; s < chart->series->len; s++)
    collect_series(ctx, g_ptr_array_index(chart->series, s));
  for (guint r = 0; r < chart->references->len; r++) {
    const RokReference *reference = &g_array_index(chart->references, RokReference, r);
    double x, y;
    plot_chart_layout_map(ctx->layout, reference->value, reference->value, &x, &y);
    RokSegment segment = reference->axis == ROK_AXIS_Y
                             ? (RokSegment){plot->x, y, plot->x + plot->w, y}
                             : (RokSegment){x, plot->y, x, plot->y + plot->h};
    g_array_append_val(ctx->obstacles.references, segment);
  }
}

guint plot_layout_obstacle_hits(const LayoutContext *ctx, const RokBox *box) {
  guint hits = 0;
  for (guint i = 0; i < ctx->obstacles.segments->len; i++) {
    const RokSegment *s = &g_array_index(ctx->obstacles.segments, RokSegment, i);
    hits += plot_box_hits_segment(box, s->x0, s->y0, s->x1, s->y1);
  }
  for (guint i = 0; i < ctx->obstacles.boxes->len; i++)
    hits += plot_box_overlaps(box, &g_array_index(ctx->obstacles.boxes, RokBox, i));
  for (guint i = 0; i < ctx->obstacles.references->len; i++) {
    const RokSegment *s = &g_array_index(ctx->obstacles.references, RokSegment, i);
    hits += plot_box_hits_segment(box, s->x0, s->y0, s->x1, s->y1);
  }
  return hits;
}

/* Whether a reference line's label would sit so close to another reference
 * line that a reader could take it for that line's. */
static gboolean near_other_reference(const LayoutContext *ctx, const RokBox *box, int own) {
  RokBox near = plot_box_grow(*box, 3.0);
  for (guint i = 0; i < ctx->obstacles.references->len; i++) {
    const RokSegment *s = &g_array_index(ctx->obstacles.references, RokSegment, i);
    if ((int)i != own && plot_box_hits_segment(&near, s->x0, s->y0, s->x1, s->y1))
      return TRUE;
  }
  return FALSE;
}

/* Whether a spot may take a label: inside `area`, clear of all text and of
 * the legend; a reference's label (own >= 0) also clear of other references. */
static gboolean spot_allowed(const LayoutContext *ctx, const RokBox *area, const RokBox *box,
                             int own) {
  const RokChartLayout *layout = ctx->layout;
  if (!plot_box_contains(area, box))
    return FALSE;
  if (own >= 0 && near_other_reference(ctx, box, own))
    return FALSE;
  RokBox clearance = plot_box_grow(*box, 1.5);
  if (layout->has_legend && plot_box_overlaps(&clearance, &layout->legend))
    return FALSE;
  for (guint i = 0; i < layout->texts->len; i++)
    if (plot_box_overlaps(&clearance, &g_array_index(layout->texts, RokText, i).box))
      return FALSE;
  return TRUE;
}

/* The first allowed spot that covers nothing, else the allowed spot that
 * covers least. Inside the plot if possible, else anywhere on the canvas;
 * a reference's label away from other references if possible, else
 * wherever it overlaps no text. -1 when no spot is allowed at all. */
static int choose_spot(const LayoutContext *ctx, const RokBox *spots, int count, int own) {
  const RokBox canvas = {0.0, 0.0, ctx->chart->width, ctx->chart->height};
  const struct {
    const RokBox *area;
    gboolean strict;
  } tiers[] = {
      {&ctx->layout->plot, TRUE}, {&canvas, TRUE}, {&ctx->layout->plot, FALSE}, {&canvas, FALSE}};
  for (gsize t = 0; t < G_N_ELEMENTS(tiers); t++) {
    if (!tiers[t].strict && own < 0)
      break;
    int best = -1;
    guint best_hits = G_MAXUINT;
    for (int i = 0; i < count; i++) {
      if (!spot_allowed(ctx, tiers[t].area, &spots[i], tiers[t].strict ? own : -1))
        continue;
      RokBox clearance = plot_box_grow(spots[i], 1.0);
      guint hits = plot_layout_obstacle_hits(ctx, &clearance);
      /* A label on its own line crosses that line on purpose. */
      if (own >= 0) {
        const RokSegment *s = &g_array_index(ctx->obstacles.references, RokSegment, own);
        hits -= plot_box_hits_segment(&clearance, s->x0, s->y0, s->x1, s->y1);
      }
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

/* When no spot near the anchor is free: the free spot of the plot nearest
 * to the first one (a leader line will show whose label it is). FALSE when
 * the plot has no room left for the label at all. */
static gboolean nearest_free_spot(const LayoutContext *ctx, const RokBox *wanted, RokBox *found) {
  const RokBox *plot = &ctx->layout->plot;
  double step = MAX(wanted->h / 2.0, 2.0), best = G_MAXDOUBLE;
  for (double y = plot->y; y + wanted->h <= plot->y + plot->h; y += step)
    for (double x = plot->x; x + wanted->w <= plot->x + plot->w; x += step) {
      RokBox box = {x, y, wanted->w, wanted->h};
      double distance = hypot(x - wanted->x, y - wanted->y);
      if (distance < best && spot_allowed(ctx, plot, &box, -1)) {
        best = distance;
        *found = box;
      }
    }
  return best < G_MAXDOUBLE;
}

/* Spots along a reference line, the line's end first: horizontal lines get
 * their label above or below, vertical lines beside them. */
static guint reference_spots(const LayoutContext *ctx, const RokReference *reference, double w,
                             double h, RokBox *spots) {
  const RokBox *plot = &ctx->layout->plot;
  double x, y;
  plot_chart_layout_map(ctx->layout, reference->value, reference->value, &x, &y);
  guint n = 0;
  if (reference->axis == ROK_AXIS_Y) {
    /* Above, below, on the line (its halo breaks the line), further off. */
    const double along[] = {1.0, 0.0, 0.5, 0.75, 0.25};
    const double offsets[] = {-2.0 - h, 2.0, -h / 2.0, -4.0 - 2 * h, 4.0 + h};
    for (gsize o = 0; o < G_N_ELEMENTS(offsets); o++)
      for (gsize a = 0; a < G_N_ELEMENTS(along); a++)
        spots[n++] = (RokBox){plot->x + 4.0 + along[a] * (plot->w - 8.0 - w), y + offsets[o], w, h};
  } else {
    /* Beside the line anywhere along it, then on it. */
    const double along[] = {0.0, 1.0, 0.5, 0.25, 0.75};
    const double offsets[] = {4.0, -4.0 - w, -w / 2.0};
    for (gsize o = 0; o < G_N_ELEMENTS(offsets); o += 2)
      for (gsize a = 0; a < G_N_ELEMENTS(along); a++)
        for (gsize side = o; side < MIN(o + 2, G_N_ELEMENTS(offsets)); side++)
          spots[n++] =
              (RokBox){x + offsets[side], plot->y + 4.0 + along[a] * (plot->h - 8.0 - h), w, h};
  }
  return n;
}

/* Adds a label at the best of the spots (all of the label's size). */
/* Adds a label at the best of the spots (all of the label's size), or NULL
 * when it fits nowhere; *chosen is -1 when it went to a spot of its own. */
static RokText *add_label(LayoutContext *ctx, const char *text, const RokBox *spots, int count,
                          int own, RokRgb color, int *chosen) {
  *chosen = choose_spot(ctx, spots, count, own);
  RokBox box = spots[0];
  if (*chosen >= 0)
    box = spots[*chosen];
  else if (!nearest_free_spot(ctx, &spots[0], &box)) {
    ctx->layout->compromises++;
    return NULL; /* better left out than written over other text */
  }
  RokText *added = plot_text_add(ctx->layout->texts, ctx->cr, text, ROK_SCALED(ctx, ROK_LABEL_SIZE),
                                FALSE, box.x, box.y);
  added->color = color;
  added->halo = TRUE;
  return added;
}

static void place_reference(LayoutContext *ctx, const RokReference *reference, int own) {
  double size = ROK_SCALED(ctx, ROK_LABEL_SIZE);
  /* A label never needs more than the plot's width (or half its height). */
  double room =
      reference->axis == ROK_AXIS_Y ? ctx->layout->plot.w - 8.0 : ctx->layout->plot.w * 0.5;
  g_autofree char *label = plot_text_ellipsize(ctx->cr, reference->label, size, FALSE, room);
  double w = plot_text_width(ctx->cr, label, size, FALSE), h = plot_text_height(ctx->cr, size);
  RokBox spots[32];
  guint count = reference_spots(ctx, reference, w, h, spots);
  int chosen;
  RokText *text =
      add_label(ctx, label, spots, (int)count, own, (RokRgb){0.25, 0.25, 0.25}, &chosen);
  if (text != NULL) {
    text->halo = FALSE;
    text->backdrop = TRUE;
  }
}

#define SPOT_RINGS 4
#define SPOT_DIRECTIONS 8

/* Spots around a point, nearest ring first: right, left, above, below,
 * then the diagonals. */
static void point_spots(double px, double py, double radius, double w, double h, RokBox *spots) {
  static const double rings[SPOT_RINGS] = {4.0, 16.0, 30.0, 48.0};
  static const double directions[SPOT_DIRECTIONS][2] = {{1, 0},  {-1, 0},  {0, -1}, {0, 1},
                                                        {1, -1}, {-1, -1}, {1, 1},  {-1, 1}};
  for (int r = 0; r < SPOT_RINGS; r++)
    for (int d = 0; d < SPOT_DIRECTIONS; d++) {
      double reach = radius + rings[r];
      double dx = directions[d][0], dy = directions[d][1];
      /* The box's near edge or corner sits `reach` from the point. */
      double x = dx > 0   ? px + reach * (dy != 0 ? 0.75 : 1.0)
                 : dx < 0 ? px - reach * (dy != 0 ? 0.75 : 1.0) - w
                          : px - w / 2.0;
      double y = dy > 0   ? py + reach * (dx != 0 ? 0.75 : 1.0)
                 : dy < 0 ? py - reach * (dx != 0 ? 0.75 : 1.0) - h
                          : py - h / 2.0;
      spots[r * SPOT_DIRECTIONS + d] = (RokBox){x, y, w, h};
    }
}

static void place_point_label(LayoutContext *ctx, const RokSeries *series, const RokPoint *point) {
  /* Triangles and stars reach further than half the nominal size. */
  double radius = plot_series_marker_size(series) * 0.75;
  double size = ROK_SCALED(ctx, ROK_LABEL_SIZE);
  g_autofree char *label =
      plot_text_ellipsize(ctx->cr, point->label, size, FALSE, ctx->layout->plot.w * 0.5);
  double w = plot_text_width(ctx->cr, label, size, FALSE), h = plot_text_height(ctx->cr, size);
  double px, py;
  plot_chart_layout_map(ctx->layout, point->x, point->y, &px, &py);
  RokBox spots[SPOT_RINGS * SPOT_DIRECTIONS];
  point_spots(px, py, radius, w, h, spots);
  int chosen;
  const RokText *text =
      add_label(ctx, label, spots, G_N_ELEMENTS(spots), -1, (RokRgb){0.13, 0.13, 0.13}, &chosen);
  if (text == NULL)
    return;
  const RokBox *box = &text->box;
  if (chosen >= SPOT_DIRECTIONS || chosen < 0) {
    /* A far label gets a leader from the marker's edge to its nearest point. */
    double tx = CLAMP(px, box->x, box->x + box->w), ty = CLAMP(py, box->y, box->y + box->h);
    double length = hypot(tx - px, ty - py), skip = radius / length;
    if (length > 2 * radius) {
      RokBox leader = {px + (tx - px) * skip, py + (ty - py) * skip, (tx - px) * (1 - skip),
                       (ty - py) * (1 - skip)};
      g_array_append_val(ctx->layout->leaders, leader);
    }
  }
}

void plot_layout_place_labels(LayoutContext *ctx) {
  const RokChart *chart = ctx->chart;
  for (guint r = 0; r < chart->references->len; r++) {
    const RokReference *reference = &g_array_index(chart->references, RokReference, r);
    if (reference->label != NULL)
      place_reference(ctx, reference, (int)r);
  }
  for (guint s = 0; s < chart->series->len; s++) {
    const RokSeries *series = g_ptr_array_index(chart->series, s);
    for (guint p = 0; p < series->points->len; p++) {
      const RokPoint *point = &g_array_index(series->points, RokPoint, p);
      if (point->label != NULL)
        place_point_label(ctx, series, point);
    }
  }
}
