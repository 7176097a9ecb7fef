/* First-fit extent allocator over a sorted array of free runs. A schedule
 * holds at most a few thousand tensors at once, so a linear scan is cheap
 * and keeps allocations low in the file (sequential, like fio's layout). */
#include "extents.h"

typedef struct {
  guint64 start, n;
} Run;

struct _RokExtents {
  GArray *free; /* Run, sorted by start, never adjacent (merged) */
  guint64 capacity;
  guint64 used;
};

RokExtents *storage_extents_new(guint64 capacity) {
  RokExtents *ex = g_new0(RokExtents, 1);
  ex->free = g_array_new(FALSE, FALSE, sizeof(Run));
  storage_extents_grow(ex, capacity);
  return ex;
}

void storage_extents_free(RokExtents *ex) {
  if (ex == NULL)
    return;
  g_array_unref(ex->free);
  g_free(ex);
}

guint64 storage_extents_capacity(const RokExtents *ex) { return ex->capacity; }
guint64 storage_extents_used(const RokExtents *ex) { return ex->used; }

gint64 storage_extents_alloc(RokExtents *ex, guint64 n) {
  g_return_val_if_fail(n > 0, -1);
  for (guint i = 0; i < ex->free->len; i++) {
    Run *r = &g_array_index(ex->free, Run, i);
    if (r->n < n)
      continue;
    guint64 start = r->start;
    r->start += n;
    r->n -= n;
    if (r->n == 0)
      g_array_remove_index(ex->free, i);
    ex->used += n;
    return (gint64)start;
  }
  return -1;
}

/* Index of the first free run starting after START. */
static guint upper_bound(const RokExtents *ex, guint64 start) {
  guint lo = 0, hi = ex->free->len;
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    if (g_array_index(ex->free, Run, mid).start <= start)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Inserts a free run, merging it with the runs it touches; FALSE (and a
 * critical warning) if it overlaps a free run: a double release. */
static gboolean insert_free(RokExtents *ex, guint64 start, guint64 n) {
  guint i = upper_bound(ex, start);
  Run *prev = i > 0 ? &g_array_index(ex->free, Run, i - 1) : NULL;
  Run *next = i < ex->free->len ? &g_array_index(ex->free, Run, i) : NULL;
  g_return_val_if_fail(prev == NULL || prev->start + prev->n <= start, FALSE);
  g_return_val_if_fail(next == NULL || start + n <= next->start, FALSE);
  gboolean join_prev = prev != NULL && prev->start + prev->n == start;
  gboolean join_next = next != NULL && start + n == next->start;
  if (join_prev && join_next) {
    prev->n += n + next->n;
    g_array_remove_index(ex->free, i);
  } else if (join_prev) {
    prev->n += n;
  } else if (join_next) {
    next->start = start;
    next->n += n;
  } else {
    Run run = { start, n };
    g_array_insert_val(ex->free, i, run);
  }
  return TRUE;
}

void storage_extents_release(RokExtents *ex, guint64 start, guint64 n) {
  g_return_if_fail(n > 0 && start + n <= ex->capacity && n <= ex->used);
  if (insert_free(ex, start, n))
    ex->used -= n;
}

guint64 storage_extents_shortfall(const RokExtents *ex, guint64 n) {
  for (guint i = 0; i < ex->free->len; i++)
    if (g_array_index(ex->free, Run, i).n >= n)
      return 0;
  guint64 tail = 0;
  if (ex->free->len > 0) {
    const Run *last = &g_array_index(ex->free, Run, ex->free->len - 1);
    if (last->start + last->n == ex->capacity)
      tail = last->n;
  }
  return n - tail;
}

void storage_extents_grow(RokExtents *ex, guint64 new_capacity) {
  g_return_if_fail(new_capacity >= ex->capacity);
  if (new_capacity > ex->capacity)
    insert_free(ex, ex->capacity, new_capacity - ex->capacity);
  ex->capacity = new_capacity;
}
