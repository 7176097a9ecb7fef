/* The median step of a run as Chrome/Perfetto trace-event JSON, beside the
 * schedule's prediction: process 1 is what ran, process 2 what the
 * simulator predicted, each with one track per stream (as `rok simulate
 * --timeline` draws them; the predicted tracks have threads of their own,
 * "compute, predicted", ..., so that `rok plot`, which goes by thread,
 * draws them under the measured ones). rok/schedule.h writes the format. */
#include "runner-private.h"
#include "rok/core.h"

static gint64 to_ns(double seconds) {
  return (gint64)(seconds * 1e9 + (seconds >= 0 ? 0.5 : -0.5));
}

/* Threads: measured streams 1.., predicted streams after them; the comm
 * and p2p streams after all those (named only when used). */
static int thread_of(RokStream stream, int pid) {
  if (stream >= ROK_STREAM_COUNT)
    return 2 * ROK_STREAM_COUNT + 1 + (int)(stream - ROK_STREAM_COUNT) + (pid - 1) * (ROK_STREAM_ALL_COUNT - ROK_STREAM_COUNT);
  return (int)stream + 1 + (pid - 1) * ROK_STREAM_COUNT;
}

static void add_span(RokTimelineJson *timeline, const RokExecSpan *span, int pid, double start, double end) {
  RokTimelineAction event = {.name = span->name, .kind = span->kind, .action = span->action,
                             .micro_batch = span->micro_batch, .start_ns = to_ns(start),
                             .end_ns = to_ns(start) + (to_ns(end - start)), .show_bytes = span->bytes > 0,
                             .bytes = span->bytes};
  rok_timeline_json_add_action(timeline, pid, thread_of(span->stream, pid), &event);
}

json_object *rok_exec_report_timeline_to_json(const RokExecReport *r) {
  RokTimelineJson *timeline = rok_timeline_json_new();
  const char *titles[] = {"rok execute: measured", "rok execute: predicted"};
  for (int p = 0; p < 2; p++) {
    g_autofree char *title = g_strdup_printf("%s (%s, %s)", titles[p], r->model, r->strategy);
    rok_timeline_json_name_process(timeline, p + 1, title, p);
    for (guint s = 0; s < (r->comm_actions > 0 ? ROK_STREAM_ALL_COUNT : ROK_STREAM_COUNT); s++) {
      int tid = thread_of(s, p + 1);
      const char *stream = rok_stream_name(s);
      g_autofree char *name = p == 0 ? g_strdup(stream) : g_strdup_printf("%s, predicted", stream);
      /* With comm streams, a process's tracks stay together. */
      int order = r->comm_actions > 0 ? p * ROK_STREAM_ALL_COUNT + (int)s + 1 : tid;
      rok_timeline_json_name_thread(timeline, p + 1, tid, name, order);
    }
  }
  for (guint i = 0; i < r->timeline->len; i++) {
    const RokExecSpan *span = &g_array_index(r->timeline, RokExecSpan, i);
    add_span(timeline, span, 1, span->start_s, span->end_s);
    add_span(timeline, span, 2, span->predicted_start_s, span->predicted_end_s);
  }
  return rok_timeline_json_finish(timeline);
}

gboolean rok_exec_report_timeline_save(const RokExecReport *report, const char *path, GError **error) {
  json_object *root = rok_exec_report_timeline_to_json(report);
  gboolean ok = rok_json_write_file(root, path, error);
  json_object_put(root);
  return ok;
}
