/* The state of one chart layout while it is being made, shared by
 * chart-layout.c (frame, ticks, titles), chart-legend.c and chart-labels.c. */
#pragma once

#include "plot-private.h"

G_BEGIN_DECLS

/* Sizes in points. Fonts are large enough to read when a 600 pt wide chart
 * is scaled to a column of a paper. */
#define ROK_LAYOUT_PAD 12.0
#define ROK_LAYOUT_GAP 8.0
#define ROK_TITLE_SIZE 15.0
#define ROK_TITLE_MIN 11.0
#define ROK_AXIS_TITLE_SIZE 12.5
#define ROK_AXIS_TITLE_MIN 10.0
#define ROK_TICK_SIZE 11.0
#define ROK_LEGEND_SIZE 11.0
#define ROK_LABEL_SIZE 10.0
#define ROK_TICK_LEN 4.0
#define ROK_TICK_GAP 4.0
#define ROK_LEGEND_SAMPLE 26.0
#define ROK_LEGEND_PAD 7.0

typedef struct {
  double x0, y0, x1, y1;
} RokSegment;

/* What labels and the legend should not cover: lines and markers. */
typedef struct {
  GArray *segments;   /* RokSegment: series lines */
  GArray *boxes;      /* RokBox: markers */
  GArray *references; /* RokSegment: one per reference line, in the chart's order */
} RokObstacles;

typedef struct {
  char *name;       /* the chart's, its phrases glued (see chart-legend.c) */
  GStrv lines;      /* wrapped for a column */
  GStrv grid_lines; /* wrapped for a grid cell */
  guint color;
  RokSeriesStyle style;
  gboolean hollow;
  double marker_size;
  double height;
} RokLegendRow;

typedef enum {
  ROK_LEGEND_INSIDE,
  ROK_LEGEND_RIGHT,
  ROK_LEGEND_BOTTOM,
} RokLegendMode;

typedef struct {
  const RokChart *chart;
  cairo_t *cr;
  RokChartLayout *layout;
  double lo[2], hi[2]; /* data range of each axis, padded */
  double top;          /* first y below the title */
  GStrv axis_lines[2];
  double axis_size[2];
  GArray *legend_rows; /* RokLegendRow */
  RokLegendMode legend_mode;
  double legend_w, legend_h; /* as a column: inside the plot or on the right */
  guint legend_columns;      /* as a grid below the axis title */
  double legend_cell_w, legend_cell_h, legend_grid_w, legend_grid_h;
  RokObstacles obstacles;
  double text_scale; /* below 1 when the canvas is small for its text */
} LayoutContext;

#define ROK_SCALED(ctx, size) ((size) * (ctx)->text_scale)

/* chart-legend.c */
void plot_layout_measure_legend(LayoutContext *ctx);
gboolean plot_layout_legend_inside(LayoutContext *ctx);
/* On the right when it is short enough, else as a grid at the bottom. */
void plot_layout_legend_outside(LayoutContext *ctx);
/* Inside the plot at the spot that covers the fewest lines and markers. */
void plot_layout_legend_least_covering(LayoutContext *ctx);
void plot_layout_emit_legend(LayoutContext *ctx);

/* chart-labels.c */
void plot_layout_collect_obstacles(LayoutContext *ctx);
/* How many lines and markers the box touches. */
guint plot_layout_obstacle_hits(const LayoutContext *ctx, const RokBox *box);
void plot_layout_place_labels(LayoutContext *ctx);

G_END_DECLS
