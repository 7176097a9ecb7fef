/* Charts the command line draws from saved data: the timeline of one
 * simulated step, from the trace-event JSON that `rok simulate --timeline`
 * writes, and the ROK curve of a plan file. (Sweep charts are in
 * rok/sweep.h, the ROK curve's drawing in rok/plan.h.) */
#pragma once

#include <glib.h>

#include "rok/core.h"
#include "rok/plot.h"

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
