/* Private to src/schedule. */
#pragma once

#include "rok/core.h"
#include "rok/schedule.h"

/* schedule-read-actions.c: the "actions" member of `root`, appended to
 * s->actions and s->deps (s->trace and s->plan already read). */
gboolean schedule_read_actions(const RokJsonDoc *doc, const RokJsonObj *root, RokSchedule *s, GError **error);
