/* The compact form of a schedule's actions: runs of actions that repeat an
 * earlier block exactly, one micro-batch (or one pipeline period) later,
 * written once as a repeat of that block. Found here for the writer; the
 * reader expands them (schedule-read-actions.c). */
#include <string.h>

#include "rok/core.h"
#include "schedule-private.h"

/* Earlier actions of the same signature tried as the start of a block. */
#define CANDIDATES 4

/* What must match for an action to be a copy of another: kind, stream and
 * target (micro-batch, deps and times are shifted). */
static guint64 signature(const RokAction *a) {
  guint target = a->op != ROK_NO_ID ? a->op : a->tensor;
  return (guint64)target << 16 | (guint64)a->kind << 8 | (guint64)a->stream << 1 | (a->op != ROK_NO_ID);
}

/* Action k equals action k - len shifted by (len, mb_step, shift_ns). */
static gboolean is_copy(const RokSchedule *s, guint k, const ScheduleRepeat *r) {
  const RokAction *a = rok_schedule_action(s, k), *b = rok_schedule_action(s, k - r->count);
  if (a->kind != b->kind || a->stream != b->stream || a->op != b->op || a->tensor != b->tensor ||
      a->bytes != b->bytes || a->gpudirect != b->gpudirect || a->deps_count != b->deps_count ||
      a->micro_batch != b->micro_batch + r->mb_step || a->start_ns != b->start_ns + r->shift_ns ||
      a->end_ns != b->end_ns + r->shift_ns || a->collective != b->collective || a->group != b->group)
    return FALSE;
  const guint *da = &g_array_index(s->deps, guint, a->deps_first);
  const guint *db = &g_array_index(s->deps, guint, b->deps_first);
  for (guint d = 0; d < a->deps_count; d++)
    if (da[d] != db[d] + r->count)
      return FALSE;
  return TRUE;
}

/* How many actions from `at` on are copies under `r`. */
static guint matched(const RokSchedule *s, guint at, const ScheduleRepeat *r) {
  guint k = at;
  while (k < s->actions->len && is_copy(s, k, r))
    k++;
  return k - at;
}

typedef struct {
  GHashTable *seen; /* signature -> guint[CANDIDATES] of the latest actions, newest first */
  guint skip_until; /* no repeat is looked for before this action */
} Finder;

static void remember(Finder *f, const RokSchedule *s, guint id) {
  guint64 key = signature(rok_schedule_action(s, id));
  guint *last = g_hash_table_lookup(f->seen, &key);
  if (last == NULL) {
    guint64 *k = g_new(guint64, 1);
    *k = key;
    last = g_new(guint, CANDIDATES);
    for (guint i = 0; i < CANDIDATES; i++)
      last[i] = ROK_NO_ID;
    g_hash_table_insert(f->seen, k, last);
  }
  memmove(last + 1, last, (CANDIDATES - 1) * sizeof(guint));
  last[0] = id;
}

/* The longest whole repeat of an earlier block starting at `at`. */
static gboolean find(Finder *f, const RokSchedule *s, guint at, ScheduleRepeat *best) {
  const RokAction *a = rok_schedule_action(s, at);
  guint64 key = signature(a);
  const guint *last = g_hash_table_lookup(f->seen, &key);
  guint shortest = G_MAXUINT, best_cover = 0;
  for (guint c = 0; last != NULL && c < CANDIDATES && last[c] != ROK_NO_ID && at >= f->skip_until; c++) {
    const RokAction *b = rok_schedule_action(s, last[c]);
    if (b->micro_batch >= a->micro_batch || a->start_ns < b->start_ns)
      continue;
    ScheduleRepeat r = {.first = last[c], .count = at - last[c], .mb_step = a->micro_batch - b->micro_batch,
                        .shift_ns = a->start_ns - b->start_ns};
    guint m = matched(s, at, &r);
    shortest = MIN(shortest, m);
    r.times = m / r.count;
    if (r.times * r.count > best_cover && r.times * r.count >= 2) {
      best_cover = r.times * r.count;
      *best = r;
    }
  }
  /* Where every candidate failed after m matches, those next m starts
   * would fail with them. */
  if (best_cover == 0 && shortest != G_MAXUINT)
    f->skip_until = at + shortest + 1;
  return best_cover > 0;
}

GArray *schedule_compact(const RokSchedule *s) {
  GArray *runs = g_array_new(FALSE, FALSE, sizeof(ScheduleRepeat));
  Finder f = {.seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free)};
  for (guint at = 0; at < s->actions->len;) {
    ScheduleRepeat r;
    guint next = at + 1;
    if (find(&f, s, at, &r)) {
      g_array_append_val(runs, r);
      next = at + r.count * r.times;
    }
    for (; at < next; at++)
      remember(&f, s, at);
  }
  g_hash_table_unref(f.seen);
  return runs;
}
