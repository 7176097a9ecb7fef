/* Internals of the chart layer shared by the files of src/plot/ (and its
 * unit test); the contract for everyone else is include/rok/plot.h. */
#pragma once

#include <cairo.h>

#include "rok/plot.h"

G_BEGIN_DECLS

/* ---- ticks.c: units and nice tick values of one axis ---- */

#define ROK_TICKS_MAX 16

/* An axis as shown: data values are divided by `scale` to give shown values
 * in `unit`; the axis runs from `min` to `max` (shown values); `count` ticks
 * at `values` (shown), printed as `labels`. */
typedef struct {
  RokScale kind;
  double scale;
  char unit[32];
  double min, max;
  guint count;
  double values[ROK_TICKS_MAX];
  char labels[ROK_TICKS_MAX][32];
} RokTicks;

/* Ticks for data in [lo, hi] (data units, lo <= hi, finite; > 0 on a log
 * scale), at most max_ticks of them (2..ROK_TICKS_MAX). The unit is chosen
 * from the range; linear ticks step by 1, 2 or 5 times a power of ten and the
 * range is rounded out to whole steps; a zero-width range is widened. */
void plot_ticks_compute(double lo, double hi, RokUnitKind unit, const char *unit_name,
                       RokScale scale, guint max_ticks, RokTicks *ticks);
/* Where a data value lies along the axis: 0 at min, 1 at max. */
double plot_ticks_fraction(const RokTicks *ticks, double value);
/* "Peak memory (GiB)"; just the title when the unit is empty. */
char *plot_ticks_axis_title(const RokTicks *ticks, const char *title);

/* ---- palette.c: Okabe–Ito colours and marker shapes ---- */

typedef struct {
  double r, g, b;
} RokRgb;

RokRgb plot_palette_color(guint index);
/* A marker of shape `index` centred at (x, y), about `size` points across;
 * hollow markers are filled white with a coloured outline. */
void plot_palette_marker(cairo_t *cr, guint index, double x, double y, double size, RokRgb color,
                        gboolean hollow);

/* ---- text.c: fonts, measuring, wrapping, and boxes ---- */

typedef struct {
  double x, y, w, h;
} RokBox;

gboolean plot_box_overlaps(const RokBox *a, const RokBox *b);
gboolean plot_box_contains(const RokBox *outer, const RokBox *inner);
/* Whether the segment (x0,y0)-(x1,y1) passes through the box. */
gboolean plot_box_hits_segment(const RokBox *box, double x0, double y0, double x1, double y1);
RokBox plot_box_grow(RokBox box, double margin);

/* One piece of text as laid out: its box on the canvas (a vertical text is
 * read bottom to top and its box is tall), a single line. */
typedef struct {
  RokBox box;
  char *text;
  double size;
  gboolean bold;
  gboolean vertical;
  gboolean halo;     /* a white outline keeps it legible across lines */
  gboolean backdrop; /* a white box behind it: for a label set on its line */
  RokRgb color;
} RokText;

/* A context for measuring text with the same font options the output uses. */
cairo_t *plot_text_context_new(void);
/* Selects DejaVu Sans at this size with fixed font options (no hinting) so
 * that layout is the same on every surface. */
void plot_text_font(cairo_t *cr, double size, gboolean bold);
double plot_text_width(cairo_t *cr, const char *text, double size, gboolean bold);
/* Height of one line: ascent + descent of the font. */
double plot_text_height(cairo_t *cr, double size);
/* Splits text into lines no wider than max_width at spaces (a single word
 * wider than that stays whole). */
GStrv plot_text_wrap(cairo_t *cr, const char *text, double size, gboolean bold, double max_width);
/* The text, or its longest prefix (whole characters) that fits with "…". */
char *plot_text_ellipsize(cairo_t *cr, const char *text, double size, gboolean bold,
                         double max_width);
/* As plot_text_wrap(), but at most max_lines lines (0: any number), the last
 * one cut short with "…" if the text goes on; no line is wider than
 * max_width. */
GStrv plot_text_wrap_lines(cairo_t *cr, const char *text, double size, gboolean bold,
                          double max_width, guint max_lines);
/* Picks the largest size from `size` down to `min_size` at which text fits
 * on one line; if none does, wraps it at min_size into at most max_lines
 * lines (0: any number). Returns the lines. */
GStrv plot_text_fit(cairo_t *cr, const char *text, gboolean bold, double size, double min_size,
                   double max_width, guint max_lines, double *size_used);
/* Adds one line of text with its top-left corner at (x, y). */
RokText *plot_text_add(GArray *texts, cairo_t *cr, const char *text, double size, gboolean bold,
                      double x, double y);
GArray *plot_text_array_new(void);
void plot_text_draw(cairo_t *cr, const RokText *text);
/* From now on, text drawn on `surface` (an SVG one) is appended to
 * `elements` as SVG <text> elements instead of being drawn. */
void plot_text_collect_svg(cairo_surface_t *surface, GString *elements);

/* ---- surface.c: files by extension ---- */

typedef void (*RokDrawFunc)(cairo_t *cr, gconstpointer data);

/* Checks that PATH ends in .png, .svg or .pdf (ROK_ERROR_USAGE otherwise). */
gboolean plot_check_path(const char *path, GError **error);
/* Renders with `draw` on a width × height points canvas into PATH through a
 * temporary file in the same directory. */
gboolean plot_write(const char *path, double width, double height, const char *title,
                        RokDrawFunc draw, gconstpointer data, GError **error);

/* ---- chart.c: the chart as built by the caller ---- */

typedef struct {
  double x, y;
  RokPointFlags flags;
  char *label;
} RokPoint;

typedef struct {
  char *name;
  RokSeriesStyle style;
  guint color;
  GArray *points; /* RokPoint */
} RokSeries;

typedef struct {
  RokAxisId axis;
  double value;
  char *label;
} RokReference;

typedef struct {
  char *title;
  RokUnitKind unit;
  char *unit_name;
  RokScale scale;
  GArray *include; /* double */
} RokAxisSpec;

/* Body text size (tick labels, legend) by default, in points; the layouts'
 * sizes are for it and scale with a chart's own. */
#define ROK_BODY_FONT_SIZE 11.0

struct RokChart {
  char *title;
  double width, height;
  double font_scale; /* font size / ROK_BODY_FONT_SIZE */
  RokAxisSpec axes[2];
  GPtrArray *series;  /* RokSeries */
  GArray *references; /* RokReference */
  char *hollow_meaning;
};

#define ROK_MARKER_SIZE 7.5

/* Markers of a series with many points are smaller, so that the line still
 * shows between them; a lone point's marker is larger. */
double plot_series_marker_size(const RokSeries *series);
gboolean plot_series_draws_markers(const RokSeries *series);

/* ROK_ERROR_INPUT naming the series and point that cannot be drawn. */
gboolean plot_chart_validate(const RokChart *chart, GError **error);

/* ---- chart-layout.c ---- */

typedef struct {
  RokBox box;
  guint color;
  RokSeriesStyle style;
  gboolean hollow; /* the "hollow means ..." entry */
  double marker_size;
  double sample_x, sample_y;
} RokLegendEntry;

typedef struct {
  double width, height;
  RokBox plot;
  RokTicks ticks[2];
  GArray *texts; /* RokText: everything drawn as text */
  gboolean has_legend;
  RokBox legend;          /* frame of the legend */
  GArray *legend_entries; /* RokLegendEntry */
  GArray *leaders;        /* RokBox used as segments (x,y)-(x+w,y+h): label leader lines */
  guint compromises;      /* a legend over data, labels left out: fewer is better */
} RokChartLayout;

RokChartLayout *plot_chart_layout_new(const RokChart *chart);
void plot_chart_layout_free(RokChartLayout *layout);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokChartLayout, plot_chart_layout_free)
/* Canvas position of a data point. */
void plot_chart_layout_map(const RokChartLayout *layout, double x, double y, double *px, double *py);

/* ---- chart-draw.c ---- */

void plot_chart_draw(cairo_t *cr, const RokChart *chart, const RokChartLayout *layout);

/* ---- timeline.c: the timeline as built by the caller ---- */

typedef struct {
  guint track, kind;
  double start, end;
} RokBar;

typedef struct {
  char *name;
  guint color;
} RokBarKind;

typedef struct {
  double time, bytes;
} RokMemorySample;

typedef struct {
  double bytes;
  char *label;
} RokMemoryLimit;

struct RokTimeline {
  char *title;
  double width, height;
  double font_scale;
  GPtrArray *tracks; /* char *: row names */
  GArray *kinds;     /* RokBarKind */
  GArray *bars;      /* RokBar */
  GArray *memory;    /* RokMemorySample */
  GArray *limits;    /* RokMemoryLimit */
};

gboolean plot_timeline_validate(const RokTimeline *timeline, GError **error);
/* The time the chart ends: the last bar end or memory sample. */
double plot_timeline_end(const RokTimeline *timeline);

/* ---- timeline-layout.c ---- */

typedef struct {
  double width, height;
  RokBox gantt; /* the bar panel; one row of row_h per track */
  double row_h;
  gboolean has_memory;
  RokBox memory;       /* the memory panel beneath */
  RokTicks time_ticks; /* shared by both panels */
  RokTicks memory_ticks;
  GArray *texts;          /* RokText */
  GArray *legend_entries; /* RokLegendEntry: one swatch per kind */
} RokTimelineLayout;

RokTimelineLayout *plot_timeline_layout_new(const RokTimeline *timeline);
void plot_timeline_layout_free(RokTimelineLayout *layout);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokTimelineLayout, plot_timeline_layout_free)
double plot_timeline_layout_x(const RokTimelineLayout *layout, double time);
double plot_timeline_layout_memory_y(const RokTimelineLayout *layout, double bytes);

/* ---- timeline-draw.c ---- */

void plot_timeline_draw(cairo_t *cr, const RokTimeline *timeline, const RokTimelineLayout *layout);

G_END_DECLS
