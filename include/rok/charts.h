/* The charts module: the figures of rok's results, drawn with rok/plot.h.
 *
 * The ROK curve of a planner run or of a plan file, the throughput and
 * memory charts of a sweep, and the timeline of one step read back from
 * its trace-event JSON. Every chart depends only on the data it is given,
 * so the same data gives the same bytes whichever command draws it. */
#pragma once

#include <glib.h>

#include "rok/core.h"
#include "rok/plan.h"
#include "rok/plot.h"
#include "rok/sweep.h"

G_BEGIN_DECLS

/* ---- The ROK curve ---- */

/* What rok plan reports at its budget, marked on the curve: the plan it
 * chose and each baseline as its table shows it, squeezed into the same
 * budget (has_* FALSE: not drawn). */
typedef struct {
  guint64 budget_bytes;
  gboolean has_chosen;
  RokCurvePoint chosen;
  gboolean has_baseline[ROK_STRATEGY_BASELINE_COUNT];
  RokCurvePoint baselines[ROK_STRATEGY_BASELINE_COUNT];
} RokCurveMarks;

/* The chart: throughput (per copy of the model) against activation peak
 * (peak memory less the fixed memory, as SSDTrain draws it), from 0 on both
 * axes: the planner's curve, the chosen plan and the baselines under the
 * budget as labelled points (hollow where they exceed the budget; without
 * marks, the curve's own baselines, each on its own under the GPU's
 * memory), and vertical lines where the activation room of the GPU's
 * memory and of the budget ends. PNG, SVG or PDF by the file's extension
 * (see rok/plot.h). */
gboolean rok_curve_save_chart(const RokCurve *curve, const RokCurveMarks *marks, const char *path, GError **error);

/* The step's Gantt chart (a row per stream: compute, d2h, h2d, nvme-write,
 * nvme-read; bars by kind: forward, backward, recompute, optimizer,
 * offload, prefetch) over the GPU memory counter, with a line at
 * `gpu_memory` and one at `budget` when it is less (0: none, or the
 * values in the file's "otherData" when it has them). The chart depends on
 * the document and the two figures only, so the same timeline gives the
 * same chart whichever command draws it. ROK_ERROR_INPUT, located in the
 * document, when it is not such a timeline. */
RokTimeline *rok_charts_timeline(const RokJsonDoc *doc, guint64 gpu_memory, guint64 budget, GError **error);

/* Draw a timeline document to PATH (.png, .svg, .pdf). */
gboolean rok_charts_timeline_save(const RokJsonDoc *doc, guint64 gpu_memory, guint64 budget, const char *path,
                               GError **error);

/* The ROK curve of a plan file (rok-plan/1, as `rok plan -o DIR` writes
 * it): the planner's points, the baselines as labelled points, the GPU's
 * memory and the plan's budget as lines, drawn to PATH by
 * rok_curve_save_chart(). Errors located in the document. */
gboolean rok_charts_plan_curve_save(const RokJsonDoc *doc, const char *path, GError **error);

/* Drop cairo's and fontconfig's caches once a command has drawn its last
 * chart, so that sanitizer builds see no leaks at exit. Call it only when
 * no other thread draws. */
void rok_charts_release(void);

/* How every chart this process draws from now on looks: the commands'
 * --width, --height, --font-size and --title. Zero sizes and a NULL title
 * keep each chart's own (600 × 380 points, 720 × 440 for timelines; body
 * text 11 points). The title replaces the chart's; "" leaves it out. */
typedef struct {
  double width, height; /* points */
  double font_size;     /* body text, points */
  char *title; /* g_malloc'd (as GOption leaves it); the style takes it */
} RokChartStyle;
/* ROK_ERROR_USAGE for sizes out of range (width at least 300, height at
 * least 200, font 6 to 36 points), naming the option. Copies `style` and
 * takes its title (style->title becomes NULL). */
gboolean rok_charts_set_style(RokChartStyle *style, GError **error);
/* A new chart or timeline titled `title` unless the style says otherwise,
 * with the style's size and font. */
RokChart *rok_charts_chart_new(const char *title);
RokTimeline *rok_charts_timeline_new(const char *title);

/* ---- Sweep charts ---- */

typedef enum {
  ROK_SWEEP_CHART_THROUGHPUT, /* tokens/s, hollow where a strategy does not fit */
  ROK_SWEEP_CHART_MEMORY,     /* peak memory, with the GPU's memory (and budget) as lines */
} RokSweepChartKind;

/* The colour index (rok/plot.h) of a strategy on sweep charts: keep black,
 * recompute reddish purple, selective green, offload sky blue, tba blue,
 * rok vermillion. Kept apart are the pairs a reader compares (keep and the
 * offloading strategies, rok and all); the one near pair, offload and tba,
 * are kin and differ in marker shape. For every chart that shows
 * strategies, so that each looks the same on all of them. */
guint rok_strategy_color(RokStrategy strategy);

/* Which rows a chart shows: those whose axes other than `x` equal `at`. */
typedef struct {
  RokSweepAxis x;
  guint64 at[ROK_SWEEP_AXIS_COUNT];
} RokSweepView;

/* x: the first axis (micro_batch, seq_len, nvme_devices, budget_bytes) with
 * more than one value, else micro_batch; at: each axis's smallest value. */
void rok_sweep_view_init(const RokSweep *sweep, RokSweepView *view);
/* Set `at` for one axis to `value`, which must be one of its values
 * (ROK_ERROR_USAGE listing them otherwise). */
gboolean rok_sweep_view_set(const RokSweep *sweep, RokSweepView *view, RokSweepAxis axis, guint64 value,
                            GError **error);

/* Draw a chart of the view (NULL: rok_sweep_view_init) to PATH (.png,
 * .svg, .pdf). One series per strategy, in a colour and marker of its own
 * on every chart; strategies whose points coincide throughout are one
 * series ("keep = selective"). ROK_ERROR_INPUT when the view holds no row. */
gboolean rok_sweep_save_chart(const RokSweep *sweep, RokSweepChartKind kind, const RokSweepView *view,
                              const char *path, GError **error);

G_END_DECLS
