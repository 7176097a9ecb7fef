/* The timeline chart of one step, from a timeline file (read by
 * rok/schedule.h): thread names become rows, actions bars coloured by
 * their kind, the "gpu memory" counter the memory curve. Frees and the
 * staging buffer are not drawn. */
#include <string.h>

#include "rok/charts.h"
#include "rok/core.h"

/* Bar kinds in legend order, with colours of their own. */
static const struct {
  RokActionKind kind;
  const char *legend;
  guint color;
} kinds[] = {
    {ROK_ACTION_FORWARD, "forward", ROK_COLOR_BLUE},
    {ROK_ACTION_BACKWARD, "backward", ROK_COLOR_GREEN},
    {ROK_ACTION_RECOMPUTE, "recompute", ROK_COLOR_PURPLE},
    {ROK_ACTION_OPTIMIZER, "optimizer step", ROK_COLOR_BLACK},
    {ROK_ACTION_OFFLOAD, "offload (copy out)", ROK_COLOR_SKY},
    {ROK_ACTION_PREFETCH, "prefetch (read back)", ROK_COLOR_ORANGE},
    {ROK_ACTION_COMM, "communication (placeholder)", ROK_COLOR_VERMILLION},
};

static gint compare_tracks(gconstpointer a, gconstpointer b) {
  const RokTimelineTrack *x = a, *y = b;
  return x->order != y->order ? (x->order < y->order ? -1 : 1) : (x->tid > y->tid) - (x->tid < y->tid);
}

/* "One step of gpt3-13b, rok on a100-40g: micro-batches 1-3 of 8 simulated in
 * detail, the rest repeat the last" when the file says which. */
static char *title(const RokTimelineFile *p) {
  const char *model = p->model != NULL ? p->model : "a model";
  GString *t = g_string_new(NULL);
  if (p->strategy != NULL && p->hw != NULL)
    g_string_printf(t, "One step of %s, %s on %s", model, p->strategy, p->hw);
  else
    g_string_printf(t, "One simulated step of %s", model);
  guint64 all = p->micro_batches, detail = MIN(p->detailed_micro_batches, all);
  if (detail > 0 && detail == all)
    g_string_append_printf(t, ": all %" G_GUINT64_FORMAT " micro-batch%s in detail", all, all == 1 ? "" : "es");
  else if (detail == 1)
    g_string_append_printf(t, ": micro-batch 1 of %" G_GUINT64_FORMAT " in detail", all);
  else if (detail > 1)
    g_string_append_printf(t, ": micro-batches 1–%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " in detail",
                           detail, all);
  return g_string_free(t, FALSE);
}

static void add_limits(RokTimeline *timeline, guint64 gpu_memory, guint64 budget) {
  if (gpu_memory > 0) {
    g_autofree char *size = rok_units_format_size(gpu_memory), *label = g_strdup_printf("GPU memory %s", size);
    rok_timeline_add_memory_limit(timeline, (double)gpu_memory, label);
  }
  if (budget > 0 && (gpu_memory == 0 || budget < gpu_memory)) {
    g_autofree char *size = rok_units_format_size(budget), *label = g_strdup_printf("budget %s", size);
    rok_timeline_add_memory_limit(timeline, (double)budget, label);
  }
}

static RokTimeline *build(RokTimelineFile *p, guint64 gpu_memory, guint64 budget) {
  g_autofree char *text = title(p);
  RokTimeline *timeline = rok_charts_timeline_new(text);
  g_array_sort(p->tracks, compare_tracks);
  for (guint i = 0; i < p->tracks->len; i++)
    rok_timeline_add_track(timeline, g_array_index(p->tracks, RokTimelineTrack, i).name);
  /* Only the kinds that occur get a legend entry. */
  guint kind_ids[G_N_ELEMENTS(kinds)];
  for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
    kind_ids[k] = G_MAXUINT;
    for (guint b = 0; b < p->spans->len && kind_ids[k] == G_MAXUINT; b++)
      if (g_array_index(p->spans, RokTimelineSpan, b).kind == kinds[k].kind)
        kind_ids[k] = rok_timeline_add_kind(timeline, kinds[k].legend, kinds[k].color);
  }
  for (guint b = 0; b < p->spans->len; b++) {
    const RokTimelineSpan *span = &g_array_index(p->spans, RokTimelineSpan, b);
    guint k = 0, track = 0;
    while (k < G_N_ELEMENTS(kinds) && kinds[k].kind != span->kind)
      k++;
    if (k == G_N_ELEMENTS(kinds))
      continue;
    while (g_array_index(p->tracks, RokTimelineTrack, track).tid != span->tid)
      track++;
    rok_timeline_add_bar(timeline, track, kind_ids[k], span->start_s, span->end_s);
  }
  for (guint i = 0; i < p->memory->len; i++) {
    const RokTimelineSample *sample = &g_array_index(p->memory, RokTimelineSample, i);
    rok_timeline_add_memory(timeline, sample->time_s, (double)sample->bytes);
  }
  add_limits(timeline, gpu_memory > 0 ? gpu_memory : p->gpu_memory, budget > 0 ? budget : p->budget);
  return timeline;
}

RokTimeline *rok_charts_timeline(const RokJsonDoc *doc, guint64 gpu_memory, guint64 budget, GError **error) {
  g_autoptr(RokTimelineFile) p = rok_timeline_file_read(doc, error);
  if (p == NULL)
    return NULL;
  gboolean drawable = FALSE;
  for (guint b = 0; b < p->spans->len && !drawable; b++)
    drawable = g_array_index(p->spans, RokTimelineSpan, b).kind != ROK_ACTION_FREE;
  if (!drawable) {
    rok_json_error(error, doc, "traceEvents", "no forward, backward or transfer events to draw");
    return NULL;
  }
  return build(p, gpu_memory, budget);
}

gboolean rok_charts_timeline_save(const RokJsonDoc *doc, guint64 gpu_memory, guint64 budget, const char *path,
                               GError **error) {
  g_autoptr(RokTimeline) timeline = rok_charts_timeline(doc, gpu_memory, budget, error);
  return timeline != NULL && rok_timeline_save(timeline, path, error);
}
