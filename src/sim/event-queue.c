/* The future-event list: an indexed binary heap (see event-queue.h). */
#include "event-queue.h"

void sim_evq_init(RokEventQueue *q) {
  memset(q, 0, sizeof *q);
}

void sim_evq_clear(RokEventQueue *q) {
  g_free(q->events);
  g_free(q->heap);
  g_free(q->free_list);
  sim_evq_init(q);
}

void sim_evq_reset(RokEventQueue *q) {
  q->size = q->n_free = q->n_used = 0;
  q->next_seq = 0;
}

static gboolean before(const RokEventQueue *q, guint a, guint b) {
  const RokEvent *x = &q->events[a], *y = &q->events[b];
  return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

static void place(RokEventQueue *q, guint pos, guint handle) {
  q->heap[pos] = handle;
  q->events[handle].heap_pos = pos;
}

static void sift_up(RokEventQueue *q, guint pos) {
  guint handle = q->heap[pos];
  while (pos > 0) {
    guint parent = (pos - 1) / 2;
    if (!before(q, handle, q->heap[parent]))
      break;
    place(q, pos, q->heap[parent]);
    pos = parent;
  }
  place(q, pos, handle);
}

static void sift_down(RokEventQueue *q, guint pos) {
  guint handle = q->heap[pos];
  for (;;) {
    guint child = 2 * pos + 1;
    if (child >= q->size)
      break;
    if (child + 1 < q->size && before(q, q->heap[child + 1], q->heap[child]))
      child++;
    if (!before(q, q->heap[child], handle))
      break;
    place(q, pos, q->heap[child]);
    pos = child;
  }
  place(q, pos, handle);
}

static guint new_handle(RokEventQueue *q) {
  if (q->n_free > 0)
    return q->free_list[--q->n_free];
  if (q->n_used == q->capacity) {
    q->capacity = MAX(16u, 2 * q->capacity);
    q->events = g_renew(RokEvent, q->events, q->capacity);
    q->heap = g_renew(guint, q->heap, q->capacity);
    q->free_list = g_renew(guint, q->free_list, q->capacity);
  }
  return q->n_used++;
}

guint sim_evq_push(RokEventQueue *q, gint64 time, guint kind, guint arg) {
  guint handle = new_handle(q);
  q->events[handle] = (RokEvent){.time = time, .seq = q->next_seq++, .kind = kind, .arg = arg};
  q->heap[q->size] = handle;
  sift_up(q, q->size++);
  return handle;
}

/* Take the event at heap position `pos` out and release its handle. */
static void remove_at(RokEventQueue *q, guint pos) {
  guint handle = q->heap[pos];
  q->events[handle].heap_pos = G_MAXUINT;
  q->free_list[q->n_free++] = handle;
  if (--q->size == pos)
    return;
  place(q, pos, q->heap[q->size]);
  if (pos > 0 && before(q, q->heap[pos], q->heap[(pos - 1) / 2]))
    sift_up(q, pos);
  else
    sift_down(q, pos);
}

gboolean sim_evq_peek(const RokEventQueue *q, RokEvent *out) {
  if (q->size == 0)
    return FALSE;
  *out = q->events[q->heap[0]];
  return TRUE;
}

gboolean sim_evq_pop(RokEventQueue *q, RokEvent *out) {
  if (!sim_evq_peek(q, out))
    return FALSE;
  remove_at(q, 0);
  return TRUE;
}

gboolean sim_evq_is_queued(const RokEventQueue *q, guint handle) {
  return handle < q->n_used && q->events[handle].heap_pos != G_MAXUINT;
}

void sim_evq_cancel(RokEventQueue *q, guint handle) {
  g_return_if_fail(sim_evq_is_queued(q, handle));
  remove_at(q, q->events[handle].heap_pos);
}

void sim_evq_reschedule(RokEventQueue *q, guint handle, gint64 time) {
  g_return_if_fail(sim_evq_is_queued(q, handle));
  RokEvent *event = &q->events[handle];
  gint64 old = event->time;
  event->time = time;
  event->seq = q->next_seq++;
  /* A later key can only move down, an earlier one only up (the new
   * sequence number makes an equal time a later key). */
  if (time >= old)
    sift_down(q, event->heap_pos);
  else
    sift_up(q, event->heap_pos);
}
