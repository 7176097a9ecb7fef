/* Where everything of a timeline goes: title, a legend of bar kinds in rows
 * beneath it, the Gantt panel (one row per track, names on the left), the
 * memory panel beneath it sharing its time axis, then time ticks and the
 * axis title. Text is measured first; panels get what is left. */
#include <math.h>

#include "chart-layout-private.h"

#define ROW_MAX_HEIGHT 34.0
#define SWATCH 11.0
#define MEMORY_MIN_HEIGHT 40.0
/* Rows lower than this make the text smaller everywhere. */
#define ROW_MIN_HEIGHT 9.0

typedef struct {
  const RokTimeline *timeline;
  cairo_t *cr;
  RokTimelineLayout *layout;
  double top;
  double time_lo, time_hi, memory_hi;
  double text_scale; /* below 1 when the canvas is small for its text */
} TimelineContext;

double plot_timeline_layout_x(const RokTimelineLayout *layout, double time) {
  const RokBox *panel = &layout->gantt;
  return panel->x + plot_ticks_fraction(&layout->time_ticks, time) * panel->w;
}

double plot_timeline_layout_memory_y(const RokTimelineLayout *layout, double bytes) {
  const RokBox *panel = &layout->memory;
  return panel->y + (1.0 - plot_ticks_fraction(&layout->memory_ticks, bytes)) * panel->h;
}

static void data_ranges(TimelineContext *ctx) {
  const RokTimeline *timeline = ctx->timeline;
  double start = 0.0, top = 0.0;
  for (guint i = 0; i < timeline->bars->len; i++)
    start = MIN(start, g_array_index(timeline->bars, RokBar, i).start);
  for (guint i = 0; i < timeline->memory->len; i++) {
    const RokMemorySample *sample = &g_array_index(timeline->memory, RokMemorySample, i);
    start = MIN(start, sample->time);
    top = MAX(top, sample->bytes);
  }
  for (guint i = 0; i < timeline->limits->len; i++)
    top = MAX(top, g_array_index(timeline->limits, RokMemoryLimit, i).bytes);
  ctx->time_lo = start;
  ctx->time_hi = plot_timeline_end(timeline);
  ctx->memory_hi = top * 1.03; /* air above the top line */
}

static void place_title(TimelineContext *ctx) {
  const RokTimeline *timeline = ctx->timeline;
  ctx->top = ROK_LAYOUT_PAD;
  if (timeline->title[0] == '\0')
    return;
  double size;
  g_auto(GStrv) lines =
      plot_text_fit(ctx->cr, timeline->title, TRUE, ROK_SCALED(ctx, ROK_TITLE_SIZE),
                   ROK_SCALED(ctx, ROK_TITLE_MIN), timeline->width - 2 * ROK_LAYOUT_PAD, 3, &size);
  double line_h = plot_text_height(ctx->cr, size);
  for (char **line = lines; *line != NULL; line++, ctx->top += line_h) {
    double w = plot_text_width(ctx->cr, *line, size, TRUE);
    RokText *text = plot_text_add(ctx->layout->texts, ctx->cr, *line, size, TRUE,
                                 (timeline->width - w) / 2.0, ctx->top);
    text->color = (RokRgb){0.0, 0.0, 0.0};
  }
  ctx->top += ROK_LAYOUT_GAP;
}

/* Swatches and names in rows from the left edge of the panels. */
static void place_legend(TimelineContext *ctx, double left) {
  RokTimelineLayout *layout = ctx->layout;
  const GArray *kinds = ctx->timeline->kinds;
  double line_h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_LEGEND_SIZE));
  double x = left, y = ctx->top, right = ctx->timeline->width - ROK_LAYOUT_PAD;
  for (guint k = 0; k < kinds->len; k++) {
    const RokBarKind *kind = &g_array_index(kinds, RokBarKind, k);
    double w =
        SWATCH + 5.0 + plot_text_width(ctx->cr, kind->name, ROK_SCALED(ctx, ROK_LEGEND_SIZE), FALSE);
    if (x > left && x + w > right) {
      x = left;
      y += line_h + 3.0;
    }
    RokLegendEntry entry = {.box = {x, y, w, line_h},
                            .color = kind->color,
                            .sample_x = x,
                            .sample_y = y + line_h / 2.0};
    g_array_append_val(layout->legend_entries, entry);
    plot_text_add(layout->texts, ctx->cr, kind->name, ROK_SCALED(ctx, ROK_LEGEND_SIZE), FALSE,
                 x + SWATCH + 5.0, y);
    x += w + 16.0;
  }
  if (kinds->len > 0)
    ctx->top = y + line_h + ROK_LAYOUT_GAP;
}

static double widest(TimelineContext *ctx, const RokTicks *ticks) {
  double w = 0.0;
  for (guint i = 0; ticks != NULL && i < ticks->count; i++)
    w = MAX(w, plot_text_width(ctx->cr, ticks->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE));
  for (guint t = 0; t < ctx->timeline->tracks->len; t++)
    w = MAX(w, plot_text_width(ctx->cr, g_ptr_array_index(ctx->timeline->tracks, t),
                              ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE));
  return w;
}

/* Memory ticks at least two label heights apart. */
static void choose_memory_ticks(TimelineContext *ctx, double panel_h) {
  double need = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_TICK_SIZE)) * 1.9;
  guint n = (guint)CLAMP(floor(panel_h / need) + 1, 2, 6);
  for (; n >= 2; n--) {
    plot_ticks_compute(0.0, ctx->memory_hi, ROK_UNIT_BYTES, NULL, ROK_SCALE_LINEAR, n,
                      &ctx->layout->memory_ticks);
    const RokTicks *ticks = &ctx->layout->memory_ticks;
    if (ticks->count < 2 || panel_h / (ticks->count - 1) >= need)
      return;
  }
}

/* Time ticks whose labels leave a clear gap between them. */
static void choose_time_ticks(TimelineContext *ctx, double panel_w) {
  RokTicks *ticks = &ctx->layout->time_ticks;
  for (guint n = 10; n >= 2; n--) {
    plot_ticks_compute(ctx->time_lo, ctx->time_hi, ROK_UNIT_SECONDS, NULL, ROK_SCALE_LINEAR, n,
                      ticks);
    double widest_label = 0.0;
    for (guint i = 0; i < ticks->count; i++)
      widest_label = MAX(widest_label, plot_text_width(ctx->cr, ticks->labels[i],
                                                      ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE));
    if (ticks->count < 2 || panel_w / (ticks->count - 1) >= widest_label + 14.0)
      return;
  }
}

/* Panel heights: rows of the Gantt chart up to a comfortable height, the
 * memory panel gets at least 40% of the room. */
static void split_panels(TimelineContext *ctx, double room, double memory_title_h) {
  RokTimelineLayout *layout = ctx->layout;
  guint tracks = MAX(ctx->timeline->tracks->len, 1);
  if (!layout->has_memory) {
    layout->row_h = MIN(room / tracks, ROW_MAX_HEIGHT * 1.75);
    layout->gantt.h = layout->row_h * tracks;
    return;
  }
  /* The memory panel keeps room for a few ticks; on a low canvas the rows
   * give way (and their names get smaller). */
  double panels = room - ROK_LAYOUT_GAP * 1.5 - memory_title_h;
  layout->row_h = MIN(panels * 0.6 / tracks, ROW_MAX_HEIGHT);
  layout->row_h = MAX(MIN(layout->row_h, (panels - MEMORY_MIN_HEIGHT) / tracks), 4.0);
  layout->gantt.h = layout->row_h * tracks;
  layout->memory.h = MAX(panels - layout->gantt.h, 20.0);
  layout->memory.y = layout->gantt.y + layout->gantt.h + ROK_LAYOUT_GAP * 1.5 + memory_title_h;
}

/* The legend's rows depend on the left margin, the panels on the legend,
 * the memory tick labels on the panels and the margin on those labels: a
 * few rounds settle it. */
static void frame(TimelineContext *ctx) {
  RokTimelineLayout *layout = ctx->layout;
  const RokTimeline *timeline = ctx->timeline;
  double tick_h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_TICK_SIZE));
  double axis_h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_AXIS_TITLE_SIZE));
  double memory_title_h = tick_h + tick_h / 2.0 + 2.0;
  double bottom = timeline->height - ROK_LAYOUT_PAD - axis_h - ROK_LAYOUT_GAP / 2.0 - tick_h -
                  ROK_TICK_LEN - ROK_TICK_GAP;
  double below_title = ctx->top;
  guint title_texts = layout->texts->len;
  double left = ROK_LAYOUT_PAD + widest(ctx, NULL) + ROK_TICK_LEN + ROK_TICK_GAP;
  for (int round = 0; round < 3; round++) {
    g_array_set_size(layout->texts, title_texts);
    g_array_set_size(layout->legend_entries, 0);
    ctx->top = below_title;
    place_legend(ctx, left);
    layout->gantt = (RokBox){left, ctx->top, 0.0, 0.0};
    split_panels(ctx, bottom - ctx->top, memory_title_h);
    if (!layout->has_memory)
      break;
    choose_memory_ticks(ctx, layout->memory.h);
    double needed =
        ROK_LAYOUT_PAD + widest(ctx, &layout->memory_ticks) + ROK_TICK_LEN + ROK_TICK_GAP;
    if (needed == left)
      break;
    left = needed;
  }
  choose_time_ticks(ctx, timeline->width - left - ROK_LAYOUT_PAD);
  const RokTicks *tt = &layout->time_ticks;
  double last_w =
      plot_text_width(ctx->cr, tt->labels[tt->count - 1], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE);
  layout->gantt.w = timeline->width - ROK_LAYOUT_PAD - MAX(last_w / 2.0, 4.0) - left;
  layout->memory.x = layout->gantt.x;
  layout->memory.w = layout->gantt.w;
}

static void emit_texts(TimelineContext *ctx);

static RokTimelineLayout *layout_at_scale(const RokTimeline *timeline, double text_scale) {
  RokTimelineLayout *layout = g_new0(RokTimelineLayout, 1);
  layout->width = timeline->width;
  layout->height = timeline->height;
  layout->has_memory = timeline->memory->len > 0;
  layout->texts = plot_text_array_new();
  layout->legend_entries = g_array_new(FALSE, TRUE, sizeof(RokLegendEntry));
  TimelineContext ctx = {.timeline = timeline,
                         .cr = plot_text_context_new(),
                         .layout = layout,
                         .text_scale = text_scale};
  data_ranges(&ctx);
  place_title(&ctx);
  frame(&ctx);
  emit_texts(&ctx);
  cairo_destroy(ctx.cr);
  if (!layout->has_memory) {
    /* Rows do not grow without bound: the canvas ends below the axis title. */
    double bottom = 0.0;
    for (guint i = 0; i < layout->texts->len; i++) {
      const RokBox *box = &g_array_index(layout->texts, RokText, i).box;
      bottom = MAX(bottom, box->y + box->h);
    }
    layout->height = MIN(layout->height, ceil(bottom + ROK_LAYOUT_PAD));
  }
  return layout;
}

/* A low canvas with many tracks: all text a little smaller, until the rows
 * are high enough to read. */
RokTimelineLayout *plot_timeline_layout_new(const RokTimeline *timeline) {
  static const double scales[] = {1.0, 0.9, 0.8, 0.7};
  RokTimelineLayout *layout = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(scales); i++) {
    g_clear_pointer(&layout, plot_timeline_layout_free);
    layout = layout_at_scale(timeline, scales[i] * timeline->font_scale);
    if (layout->row_h >= ROW_MIN_HEIGHT)
      break;
  }
  return layout;
}

void plot_timeline_layout_free(RokTimelineLayout *layout) {
  if (layout == NULL)
    return;
  g_array_unref(layout->texts);
  g_array_unref(layout->legend_entries);
  g_free(layout);
}

/* ---- text around the panels ---- */

/* Names at the tick size, smaller when rows are too low for it. */
static void emit_track_names(TimelineContext *ctx) {
  RokTimelineLayout *layout = ctx->layout;
  double size = ROK_SCALED(ctx, ROK_TICK_SIZE);
  while (size > 4.0 && plot_text_height(ctx->cr, size) > layout->row_h)
    size -= 0.5;
  double h = plot_text_height(ctx->cr, size);
  for (guint t = 0; t < ctx->timeline->tracks->len; t++) {
    const char *name = g_ptr_array_index(ctx->timeline->tracks, t);
    double w = plot_text_width(ctx->cr, name, size, FALSE);
    double y = layout->gantt.y + (t + 0.5) * layout->row_h - h / 2.0;
    plot_text_add(layout->texts, ctx->cr, name, size, FALSE, layout->gantt.x - ROK_TICK_GAP - w, y);
  }
}

static void emit_memory_axis(TimelineContext *ctx) {
  RokTimelineLayout *layout = ctx->layout;
  const RokTicks *ticks = &layout->memory_ticks;
  double h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_TICK_SIZE));
  for (guint i = 0; i < ticks->count; i++) {
    double y = plot_timeline_layout_memory_y(layout, ticks->values[i] * ticks->scale);
    double w = plot_text_width(ctx->cr, ticks->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE);
    plot_text_add(layout->texts, ctx->cr, ticks->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE,
                 layout->memory.x - ROK_TICK_LEN - ROK_TICK_GAP - w, y - h / 2.0);
  }
  g_autofree char *title = plot_ticks_axis_title(ticks, "GPU memory");
  plot_text_add(layout->texts, ctx->cr, title, ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE, ROK_LAYOUT_PAD,
               layout->memory.y - h / 2.0 - 2.0 - h);
}

static void emit_time_axis(TimelineContext *ctx) {
  RokTimelineLayout *layout = ctx->layout;
  const RokTicks *ticks = &layout->time_ticks;
  const RokBox *panel = layout->has_memory ? &layout->memory : &layout->gantt;
  double y = panel->y + panel->h + ROK_TICK_LEN + ROK_TICK_GAP;
  for (guint i = 0; i < ticks->count; i++) {
    double x = plot_timeline_layout_x(layout, ticks->values[i] * ticks->scale);
    double w = plot_text_width(ctx->cr, ticks->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE);
    plot_text_add(layout->texts, ctx->cr, ticks->labels[i], ROK_SCALED(ctx, ROK_TICK_SIZE), FALSE,
                 x - w / 2.0, y);
  }
  g_autofree char *title = plot_ticks_axis_title(ticks, "Time");
  double w = plot_text_width(ctx->cr, title, ROK_SCALED(ctx, ROK_AXIS_TITLE_SIZE), FALSE);
  y += plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_TICK_SIZE)) + ROK_LAYOUT_GAP / 2.0;
  plot_text_add(layout->texts, ctx->cr, title, ROK_SCALED(ctx, ROK_AXIS_TITLE_SIZE), FALSE,
               panel->x + (panel->w - w) / 2.0, y);
}

/* The highest memory in use between two canvas x positions. */
static double memory_peak_between(TimelineContext *ctx, double x0, double x1) {
  const GArray *memory = ctx->timeline->memory;
  double peak = 0.0;
  for (guint i = 0; i < memory->len; i++) {
    const RokMemorySample *sample = &g_array_index(memory, RokMemorySample, i);
    double from = plot_timeline_layout_x(ctx->layout, sample->time);
    double to =
        i + 1 < memory->len
            ? plot_timeline_layout_x(ctx->layout, g_array_index(memory, RokMemorySample, i + 1).time)
            : ctx->layout->memory.x + ctx->layout->memory.w;
    if (to >= x0 && from <= x1)
      peak = MAX(peak, sample->bytes);
  }
  return peak;
}

static gboolean clear_of_texts(const RokTimelineLayout *layout, const RokBox *box) {
  RokBox clearance = plot_box_grow(*box, 1.5);
  for (guint i = 0; i < layout->texts->len; i++)
    if (plot_box_overlaps(&clearance, &g_array_index(layout->texts, RokText, i).box))
      return FALSE;
  return TRUE;
}

/* Whether the box comes near a limit line other than its own: a reader
 * could take the label for that line's. */
static gboolean near_other_limit(TimelineContext *ctx, const RokBox *box, guint own) {
  RokBox near = plot_box_grow(*box, 3.0);
  for (guint i = 0; i < ctx->timeline->limits->len; i++) {
    double y = plot_timeline_layout_memory_y(
        ctx->layout, g_array_index(ctx->timeline->limits, RokMemoryLimit, i).bytes);
    if (i != own && near.y <= y && y <= near.y + near.h)
      return TRUE;
  }
  return FALSE;
}

/* Above the line at the right, else at the left, else below, else on the
 * line (its halo breaks the line); a spot that hides the memory curve only
 * if nothing else is free. */
static void emit_limit_label(TimelineContext *ctx, guint own) {
  const RokMemoryLimit *limit = &g_array_index(ctx->timeline->limits, RokMemoryLimit, own);
  RokTimelineLayout *layout = ctx->layout;
  const RokBox *panel = &layout->memory;
  double w = plot_text_width(ctx->cr, limit->label, ROK_SCALED(ctx, ROK_LABEL_SIZE), FALSE);
  double h = plot_text_height(ctx->cr, ROK_SCALED(ctx, ROK_LABEL_SIZE));
  double y = plot_timeline_layout_memory_y(layout, limit->bytes);
  double right = panel->x + panel->w - 4.0 - w, left = panel->x + 4.0;
  double centre = panel->x + (panel->w - w) / 2.0;
  RokBox spots[] = {{right, y - 2.0 - h, w, h}, {left, y - 2.0 - h, w, h},
                    {right, y + 2.0, w, h},     {left, y + 2.0, w, h},
                    {right, y - h / 2.0, w, h}, {left, y - h / 2.0, w, h},
                    {centre, y - h / 2.0, w, h}};
  int chosen = -1;
  for (int pass = 0; pass < 2 && chosen < 0; pass++)
    for (int i = 0; i < (int)G_N_ELEMENTS(spots) && chosen < 0; i++) {
      const RokBox *s = &spots[i];
      if (!plot_box_contains(panel, s) || !clear_of_texts(layout, s) ||
          near_other_limit(ctx, s, own))
        continue;
      double curve_y =
          plot_timeline_layout_memory_y(layout, memory_peak_between(ctx, s->x, s->x + s->w));
      if (pass == 1 || s->y + s->h <= curve_y - 1.0)
        chosen = i;
    }
  RokBox box = chosen >= 0 ? spots[chosen] : spots[4];
  box.y = CLAMP(box.y, panel->y, panel->y + panel->h - h);
  RokText *text = plot_text_add(layout->texts, ctx->cr, limit->label,
                               ROK_SCALED(ctx, ROK_LABEL_SIZE), FALSE, box.x, box.y);
  text->color = (RokRgb){0.2, 0.2, 0.2};
  text->backdrop = TRUE;
}

static void emit_texts(TimelineContext *ctx) {
  emit_track_names(ctx);
  if (ctx->layout->has_memory) {
    emit_memory_axis(ctx);
    for (guint i = 0; i < ctx->timeline->limits->len; i++)
      if (g_array_index(ctx->timeline->limits, RokMemoryLimit, i).label != NULL)
        emit_limit_label(ctx, i);
  }
  emit_time_axis(ctx);
}
