/* Space inside one data file, in units (the store's stripe unit): first-fit
 * allocation of contiguous runs, with freed runs merged with their
 * neighbours. Not thread-safe (the store locks around it). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _RokExtents RokExtents;

RokExtents *storage_extents_new(guint64 capacity);
void storage_extents_free(RokExtents *extents);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokExtents, storage_extents_free)

/* Takes N (> 0) contiguous units; returns the first one, or -1 when no free
 * run is long enough. */
gint64 storage_extents_alloc(RokExtents *extents, guint64 n);
/* Gives back [START, START + N), which must have been allocated. */
void storage_extents_release(RokExtents *extents, guint64 start, guint64 n);

guint64 storage_extents_capacity(const RokExtents *extents);
/* How many units the capacity must grow by for an N-unit run to fit at the
 * end (0 if it would fit already). */
guint64 storage_extents_shortfall(const RokExtents *extents, guint64 n);
/* Adds units at the end, free. */
void storage_extents_grow(RokExtents *extents, guint64 new_capacity);
/* Units in use. */
guint64 storage_extents_used(const RokExtents *extents);

G_END_DECLS
