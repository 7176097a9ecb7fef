/* Private to src/schedule. */
#pragma once

#include "rok/core.h"
#include "rok/schedule.h"

/* The SHA-256 of the trace's canonical rok-trace/1 text; the text too
 * when `text` is not NULL. */
char *schedule_trace_sha256(const RokTrace *trace, char **text);

/* schedule-read-actions.c: the "actions" member of `root`, appended to
 * s->actions and s->deps (s->trace and s->plan already read). */
gboolean schedule_read_actions(const RokJsonDoc *doc, const RokJsonObj *root, RokSchedule *s, GError **error);
