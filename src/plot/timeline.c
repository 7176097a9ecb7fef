/* The timeline as the caller builds it, checks on its data, and saving. */
#include <math.h>

#include "plot-private.h"
#include "rok/core.h"

static void kind_clear(gpointer data) {
  g_free(((RokBarKind *)data)->name);
}

static void limit_clear(gpointer data) {
  g_free(((RokMemoryLimit *)data)->label);
}

RokTimeline *rok_timeline_new(const char *title) {
  RokTimeline *timeline = g_new0(RokTimeline, 1);
  timeline->title = g_strdup(title != NULL ? title : "");
  timeline->width = 720.0;
  timeline->height = 440.0;
  timeline->font_scale = 1.0;
  timeline->tracks = g_ptr_array_new_with_free_func(g_free);
  timeline->kinds = g_array_new(FALSE, TRUE, sizeof(RokBarKind));
  g_array_set_clear_func(timeline->kinds, kind_clear);
  timeline->bars = g_array_new(FALSE, TRUE, sizeof(RokBar));
  timeline->memory = g_array_new(FALSE, TRUE, sizeof(RokMemorySample));
  timeline->limits = g_array_new(FALSE, TRUE, sizeof(RokMemoryLimit));
  g_array_set_clear_func(timeline->limits, limit_clear);
  return timeline;
}

void rok_timeline_free(RokTimeline *timeline) {
  if (timeline == NULL)
    return;
  g_free(timeline->title);
  g_ptr_array_unref(timeline->tracks);
  g_array_unref(timeline->kinds);
  g_array_unref(timeline->bars);
  g_array_unref(timeline->memory);
  g_array_unref(timeline->limits);
  g_free(timeline);
}

void rok_timeline_set_size(RokTimeline *timeline, double width, double height) {
  g_return_if_fail(timeline != NULL && width >= 300.0 && height >= 200.0);
  timeline->width = width;
  timeline->height = height;
}

void rok_timeline_set_font_size(RokTimeline *timeline, double points) {
  g_return_if_fail(timeline != NULL && points >= 6.0 && points <= 36.0);
  timeline->font_scale = points / ROK_BODY_FONT_SIZE;
}

guint rok_timeline_add_track(RokTimeline *timeline, const char *name) {
  g_return_val_if_fail(timeline != NULL, 0);
  g_ptr_array_add(timeline->tracks, g_strdup(name != NULL ? name : ""));
  return timeline->tracks->len - 1;
}

guint rok_timeline_add_kind(RokTimeline *timeline, const char *name, guint color) {
  g_return_val_if_fail(timeline != NULL, 0);
  RokBarKind kind = {g_strdup(name != NULL ? name : ""), color};
  g_array_append_val(timeline->kinds, kind);
  return timeline->kinds->len - 1;
}

void rok_timeline_add_bar(RokTimeline *timeline, guint track, guint kind, double start,
                          double end) {
  g_return_if_fail(timeline != NULL && track < timeline->tracks->len &&
                   kind < timeline->kinds->len);
  RokBar bar = {track, kind, start, end};
  g_array_append_val(timeline->bars, bar);
}

void rok_timeline_add_memory(RokTimeline *timeline, double time, double bytes) {
  g_return_if_fail(timeline != NULL);
  RokMemorySample sample = {time, bytes};
  g_array_append_val(timeline->memory, sample);
}

void rok_timeline_add_memory_limit(RokTimeline *timeline, double bytes, const char *label) {
  g_return_if_fail(timeline != NULL);
  RokMemoryLimit limit = {bytes, label != NULL && label[0] != '\0' ? g_strdup(label) : NULL};
  g_array_append_val(timeline->limits, limit);
}

static gboolean input_error(GError **error, const RokTimeline *timeline, const char *format, ...)
    G_GNUC_PRINTF(3, 4);

static gboolean input_error(GError **error, const RokTimeline *timeline, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *what = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "timeline \"%s\": %s", timeline->title, what);
  return FALSE;
}

static gboolean validate_bars(const RokTimeline *timeline, GError **error) {
  for (guint i = 0; i < timeline->bars->len; i++) {
    const RokBar *bar = &g_array_index(timeline->bars, RokBar, i);
    const char *track = g_ptr_array_index(timeline->tracks, bar->track);
    if (!isfinite(bar->start) || !isfinite(bar->end))
      return input_error(error, timeline, "bar %u on \"%s\" has a time that is not finite", i + 1,
                         track);
    if (bar->end < bar->start)
      return input_error(error, timeline, "bar %u on \"%s\" ends (%g s) before it starts (%g s)",
                         i + 1, track, bar->end, bar->start);
  }
  return TRUE;
}

static gboolean validate_memory(const RokTimeline *timeline, GError **error) {
  for (guint i = 0; i < timeline->memory->len; i++) {
    const RokMemorySample *sample = &g_array_index(timeline->memory, RokMemorySample, i);
    if (!isfinite(sample->time) || !isfinite(sample->bytes) || sample->bytes < 0.0)
      return input_error(error, timeline, "memory sample %u must have a finite time and bytes >= 0",
                         i + 1);
    if (i > 0 && sample->time < g_array_index(timeline->memory, RokMemorySample, i - 1).time)
      return input_error(error, timeline,
                         "memory sample %u (at %g s) comes before the one it follows", i + 1,
                         sample->time);
  }
  for (guint i = 0; i < timeline->limits->len; i++) {
    const RokMemoryLimit *limit = &g_array_index(timeline->limits, RokMemoryLimit, i);
    if (!isfinite(limit->bytes) || limit->bytes < 0.0)
      return input_error(error, timeline, "memory limit \"%s\" must be finite and >= 0",
                         limit->label != NULL ? limit->label : "");
  }
  return TRUE;
}

gboolean plot_timeline_validate(const RokTimeline *timeline, GError **error) {
  return validate_bars(timeline, error) && validate_memory(timeline, error);
}

double plot_timeline_end(const RokTimeline *timeline) {
  double end = 0.0;
  for (guint i = 0; i < timeline->bars->len; i++)
    end = MAX(end, g_array_index(timeline->bars, RokBar, i).end);
  for (guint i = 0; i < timeline->memory->len; i++)
    end = MAX(end, g_array_index(timeline->memory, RokMemorySample, i).time);
  return end;
}

typedef struct {
  const RokTimeline *timeline;
  const RokTimelineLayout *layout;
} RokTimelineDrawing;

static void draw_timeline(cairo_t *cr, gconstpointer data) {
  const RokTimelineDrawing *drawing = data;
  plot_timeline_draw(cr, drawing->timeline, drawing->layout);
}

gboolean rok_timeline_save(const RokTimeline *timeline, const char *path, GError **error) {
  g_return_val_if_fail(timeline != NULL && path != NULL, FALSE);
  if (!plot_check_path(path, error) || !plot_timeline_validate(timeline, error))
    return FALSE;
  /* The layout decides the height: a timeline without memory may be lower
   * than asked for. */
  g_autoptr(RokTimelineLayout) layout = plot_timeline_layout_new(timeline);
  RokTimelineDrawing drawing = {timeline, layout};
  return plot_write(path, layout->width, layout->height, timeline->title, draw_timeline,
                        &drawing, error);
}
