/* Private to src/sim: the future-event list.
 *
 * A binary min-heap of events keyed by (time in ns, insertion order), so
 * events at the same time come out in the order they were scheduled: the
 * simulation is deterministic. Events live in a pool; a handle names an
 * event until it is popped or cancelled (then the handle may be reused).
 * Push, pop, cancel and reschedule are O(log n); the pool and heap grow
 * by doubling and are kept between runs, so a warm queue does not
 * allocate. */
#pragma once

#include <glib.h>

typedef struct {
  gint64 time;
  guint64 seq;
  guint kind, arg; /* what the event means is the caller's business */
  guint heap_pos;  /* G_MAXUINT when not queued */
} RokEvent;

typedef struct {
  RokEvent *events; /* pool, indexed by handle */
  guint *heap;      /* handles */
  guint *free_list; /* free handles */
  guint size, capacity, n_free, n_used;
  guint64 next_seq;
} RokEventQueue;

void sim_evq_init(RokEventQueue *q);
void sim_evq_clear(RokEventQueue *q); /* frees the memory */
void sim_evq_reset(RokEventQueue *q); /* empties it, keeps the memory */

guint sim_evq_push(RokEventQueue *q, gint64 time, guint kind, guint arg);
/* The earliest event; FALSE when empty. The popped handle is released. */
gboolean sim_evq_pop(RokEventQueue *q, RokEvent *out);
gboolean sim_evq_peek(const RokEventQueue *q, RokEvent *out);
void sim_evq_cancel(RokEventQueue *q, guint handle);
/* Move a queued event to `time`; it counts as scheduled now for ties. */
void sim_evq_reschedule(RokEventQueue *q, guint handle, gint64 time);
gboolean sim_evq_is_queued(const RokEventQueue *q, guint handle);
static inline guint sim_evq_size(const RokEventQueue *q) {
  return q->size;
}
