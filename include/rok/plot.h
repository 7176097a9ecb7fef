/* Charts as files: line/scatter charts and step timelines, drawn with cairo.
 *
 * Data in, file out: this module knows nothing of the simulator or planner.
 * A chart is built from series of (x, y) points and saved to PNG, SVG or PDF,
 * chosen by the file name's extension. Charts read like figures in a paper:
 * axis titles carry the unit ("Peak memory (GiB)") and ticks are plain
 * numbers in 1-2-5 steps; the palette is Okabe–Ito (colour-blind safe) and
 * every colour has its own marker shape, so charts read in greyscale too;
 * the legend goes where it hides no data (else beside or below the plot);
 * labels are placed clear of each other and of the legend. On a canvas too
 * small for its text, text gets smaller, long names are cut short with "…"
 * and a point label with no free spot left is left out; nothing runs off
 * the canvas.
 *
 * Output is deterministic: the same data give byte-identical files (fixed
 * font "DejaVu Sans", no timestamps in SVG or PDF). A file is written to a
 * temporary name in the same directory and renamed, so a failed save leaves
 * no partial file. Sizes are in points (1/72 inch); PNGs have 2 pixels per
 * point. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* What an axis measures; it picks the unit shown in the axis title, once per
 * axis, from the range of the data. */
typedef enum {
  ROK_UNIT_NONE,    /* plain numbers; very large ranges get "×10⁶" */
  ROK_UNIT_BYTES,   /* bytes, shown in B, KiB, MiB, GiB, TiB or PiB */
  ROK_UNIT_SECONDS, /* seconds, shown in ns, µs, ms or s */
  ROK_UNIT_RATE,    /* per second, with a unit name ("tokens/s", "B/s") that
                     * gets an SI prefix: "k tokens/s", "GB/s" */
} RokUnitKind;

typedef enum {
  ROK_SCALE_LINEAR,
  ROK_SCALE_LOG10, /* ticks at powers of ten */
  ROK_SCALE_LOG2,  /* ticks at powers of two: micro-batch sizes, sizes */
} RokScale;

typedef enum {
  ROK_AXIS_X,
  ROK_AXIS_Y,
} RokAxisId;

/* How a series is drawn; flags, combine with |. Without LINE, a series is
 * drawn as markers. */
typedef enum {
  ROK_SERIES_LINE = 1 << 0,      /* joins the points in the order added */
  ROK_SERIES_MARKERS = 1 << 1,   /* a marker at every point */
  ROK_SERIES_NO_LEGEND = 1 << 2, /* not listed in the legend (label its points instead) */
} RokSeriesStyle;

typedef enum {
  ROK_POINT_FILLED = 0,
  /* Drawn as a hollow marker, and the line into it dashed: for points that
   * are computed but not feasible (say, do not fit in GPU memory). */
  ROK_POINT_HOLLOW = 1 << 0,
} RokPointFlags;

/* Colour indices into the Okabe–Ito palette; a colour index also picks the
 * marker shape, so one index per strategy keeps it recognisable across
 * charts. Indices wrap around modulo ROK_PLOT_COLORS. */
enum {
  ROK_COLOR_BLUE,       /* #0072B2, circle */
  ROK_COLOR_VERMILLION, /* #D55E00, square */
  ROK_COLOR_GREEN,      /* #009E73, triangle */
  ROK_COLOR_PURPLE,     /* #CC79A7, diamond */
  ROK_COLOR_ORANGE,     /* #E69F00, inverted triangle */
  ROK_COLOR_SKY,        /* #56B4E9, pentagon */
  ROK_COLOR_BLACK,      /* #000000, hexagon */
  ROK_COLOR_YELLOW,     /* #F0E442, star (low contrast on white: last) */
  ROK_PLOT_COLORS
};

typedef struct RokChart RokChart;

/* A chart with a title (may be NULL or ""); 600 × 380 points by default. */
RokChart *rok_chart_new(const char *title);
void rok_chart_free(RokChart *chart);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokChart, rok_chart_free)

/* At least 240 × 180 points. */
void rok_chart_set_size(RokChart *chart, double width, double height);
/* The size of body text (tick labels, legend) in points, 6 to 36 (default
 * 11); titles and labels keep their proportions to it. */
void rok_chart_set_font_size(RokChart *chart, double points);

/* The axis title without unit ("Peak memory"); the unit is added to it. For
 * ROK_UNIT_RATE, unit_name is the unit per second ("tokens/s"); otherwise it
 * is ignored and may be NULL. */
void rok_chart_set_axis(RokChart *chart, RokAxisId axis, const char *title, RokUnitKind unit,
                        const char *unit_name);
void rok_chart_set_axis_scale(RokChart *chart, RokAxisId axis, RokScale scale);
/* Extends the axis range to contain this value (0, to start a linear axis at
 * zero). Reference lines and all points are always contained. */
void rok_chart_axis_include(RokChart *chart, RokAxisId axis, double value);

/* Adds a series and returns its index for rok_chart_add_point(). */
guint rok_chart_add_series(RokChart *chart, const char *name, RokSeriesStyle style, guint color);
/* label, if not NULL, is written next to the point. */
void rok_chart_add_point(RokChart *chart, guint series, double x, double y, RokPointFlags flags,
                         const char *label);

/* A labelled dashed line across the plot: horizontal at y = value for
 * ROK_AXIS_Y (a memory capacity), vertical at x = value for ROK_AXIS_X. */
void rok_chart_add_reference(RokChart *chart, RokAxisId axis, double value, const char *label);

/* What a hollow marker means ("does not fit in 40 GiB"); adds a legend entry. */
void rok_chart_set_hollow_meaning(RokChart *chart, const char *text);

/* Writes the chart to PATH as .png, .svg or .pdf (case-insensitive).
 * ROK_ERROR_USAGE for another extension, ROK_ERROR_INPUT for data that cannot
 * be drawn (NaN, infinities, a value <= 0 on a log axis), ROK_ERROR_IO when
 * writing fails. */
gboolean rok_chart_save(const RokChart *chart, const char *path, GError **error);

/* A timeline of one step: a Gantt chart with one row per resource ("track"),
 * bars coloured by kind, and beneath it the GPU memory in use over time as a
 * step curve, with limit lines (capacity, budget). Times are in seconds,
 * memory in bytes. 720 × 440 points by default. */
typedef struct RokTimeline RokTimeline;

RokTimeline *rok_timeline_new(const char *title);
void rok_timeline_free(RokTimeline *timeline);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokTimeline, rok_timeline_free)

/* At least 300 × 200 points. */
void rok_timeline_set_size(RokTimeline *timeline, double width, double height);
/* As rok_chart_set_font_size. */
void rok_timeline_set_font_size(RokTimeline *timeline, double points);
/* Rows are drawn top to bottom in the order added. */
guint rok_timeline_add_track(RokTimeline *timeline, const char *name);
/* A kind of bar (forward, backward, ...): a legend entry and its colour. */
guint rok_timeline_add_kind(RokTimeline *timeline, const char *name, guint color);
void rok_timeline_add_bar(RokTimeline *timeline, guint track, guint kind, double start, double end);
/* Memory in use is `bytes` from `time` until the next sample's time; samples
 * must come in nondecreasing time order. Without samples there is no memory
 * panel, and the chart may come out lower than its set height. */
void rok_timeline_add_memory(RokTimeline *timeline, double time, double bytes);
void rok_timeline_add_memory_limit(RokTimeline *timeline, double bytes, const char *label);

/* As rok_chart_save(); ROK_ERROR_INPUT also for a bar that ends before it
 * starts or memory samples out of time order. */
gboolean rok_timeline_save(const RokTimeline *timeline, const char *path, GError **error);

G_END_DECLS
