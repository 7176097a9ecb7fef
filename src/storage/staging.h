/* The staging pool: pinned host memory between the device and the disks.
 *
 * A bounded pool of equal slots carved from one page-aligned mapping. Every
 * offloaded chunk passes through a slot (device -> slot -> SSD, and back),
 * so the pool's size bounds the bytes in flight, as the hardware profile's
 * host.pinned_buffer does in the simulator. The memory is locked with mlock
 * where the limit allows (the pool works unlocked, only slower to register
 * and liable to be swapped); io_uring registers each slot as a fixed buffer
 * whose index is the slot number; the executor wraps slots as OpenCL host
 * buffers (CL_MEM_USE_HOST_PTR), so slot addresses and sizes are public and
 * stable for the pool's life.
 *
 * Acquire and release are thread-safe. Acquire blocks while the pool is
 * empty; the time it waits is a "staging" stall, summed in the stats. */
#pragma once

#include <glib.h>
#include <sys/uio.h>

G_BEGIN_DECLS

typedef struct _RokStaging RokStaging;

typedef struct {
  guint64 acquires;  /* slots handed out */
  guint64 stalls;    /* acquires that had to wait */
  gint64 stall_ns;   /* total time acquires waited */
  guint min_free;    /* fewest free slots seen */
} RokStagingStats;

/* SLOT_BYTES must be a positive multiple of the page size; TOTAL_BYTES at
 * least one slot (the pool holds TOTAL_BYTES / SLOT_BYTES slots). Bad sizes
 * are ROK_ERROR_INPUT; a failed mapping is ROK_ERROR_IO. */
RokStaging *rok_staging_new(gsize slot_bytes, guint64 total_bytes, GError **error);
void rok_staging_free(RokStaging *pool);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokStaging, rok_staging_free)

guint rok_staging_n_slots(const RokStaging *pool);
gsize rok_staging_slot_bytes(const RokStaging *pool);
/* The slot's memory: page-aligned, rok_staging_slot_bytes() long. */
guint8 *rok_staging_slot(const RokStaging *pool, guint slot);
/* Whether mlock succeeded (if not, errno says why in rok_staging_lock_error). */
gboolean rok_staging_locked(const RokStaging *pool);
int rok_staging_lock_error(const RokStaging *pool);
/* One iovec per slot, for buffer registration. */
const struct iovec *rok_staging_iovecs(const RokStaging *pool);

/* Takes a free slot, waiting up to TIMEOUT_US (-1: forever, 0: don't wait).
 * Returns the slot number, -ETIMEDOUT, or -ECANCELED once the pool is
 * cancelled. If WAITED_NS is not NULL it gets the time spent waiting. */
int rok_staging_acquire(RokStaging *pool, gint64 timeout_us, gint64 *waited_ns);
/* Gives SLOT back; releasing a slot that is not held is a critical warning. */
void rok_staging_release(RokStaging *pool, guint slot);
/* Wakes all waiters and makes every later acquire fail with -ECANCELED
 * (Ctrl-C, or an error elsewhere). Releases still work. */
void rok_staging_cancel(RokStaging *pool);
guint rok_staging_n_free(RokStaging *pool);
void rok_staging_stats(RokStaging *pool, RokStagingStats *stats);

G_END_DECLS
