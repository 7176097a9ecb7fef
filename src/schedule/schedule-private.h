/* Private to src/schedule. */
#pragma once

#include "rok/core.h"
#include "rok/schedule.h"

/* schedule-read-actions.c: the "actions" member of `root`, appended to
 * s->actions and s->deps (s->trace and s->plan already read), repeats
 * (rok-schedule/2) expanded; `compact` says whether they are allowed. */
gboolean schedule_read_actions(const RokJsonDoc *doc, const RokJsonObj *root, RokSchedule *s, gboolean compact,
                               GError **error);

/* One repeat of the compact form: the block of actions first .. first +
 * count - 1 again `times` times right after it, copy c with micro_batch
 * + c·mb_step, every dependency + c·count, times + c·shift_ns. */
typedef struct {
  guint first, count, times, mb_step;
  gint64 shift_ns;
} ScheduleRepeat;

/* schedule-compact.c: the repeats of s's actions, in order (each starts
 * where its block ends), found greedily; everything else is written out. */
GArray *schedule_compact(const RokSchedule *s);

/* Where an element of "actions" starts: the first action it gives. */
typedef struct {
  guint first;
  gboolean repeat;
} ScheduleElement;
