/* The staging pool: one locked mapping cut into slots, a stack of free slot
 * numbers, and a condition variable for acquirers that must wait. */
#include "rok/storage.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rok/core.h"

struct _RokStaging {
  guint8 *base;
  gsize map_bytes;
  gsize slot_bytes;
  guint n_slots;
  int lock_error;  /* 0 when mlock succeeded */
  struct iovec *iovecs;

  GMutex lock;
  GCond freed;
  guint *free_stack; /* LIFO: the slot used last is warm in cache and TLB */
  guint n_free;
  gboolean *held;
  gboolean cancelled;
  RokStagingStats stats;
};

static gboolean check_sizes(gsize slot_bytes, guint64 total_bytes, GError **error) {
  gsize page = (gsize)sysconf(_SC_PAGESIZE);
  if (slot_bytes == 0 || slot_bytes % page != 0 || slot_bytes > (1u << 30)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "staging slot size %zu bytes: must be a multiple of the page size (%zu) up to 1 GiB",
                slot_bytes, page);
    return FALSE;
  }
  if (total_bytes < slot_bytes || total_bytes / slot_bytes > (1u << 20)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "staging pool of %" G_GUINT64_FORMAT " bytes: must hold between 1 and 2^20 slots of %zu bytes",
                total_bytes, slot_bytes);
    return FALSE;
  }
  return TRUE;
}

#define HUGE_PAGE (2u << 20)

/* An anonymous mapping of BYTES starting on a 2 MiB boundary, with
 * transparent huge pages asked for: a slot of up to 2 MiB then sits in one
 * physically contiguous page, so a 1 MiB request is one DMA segment instead
 * of 256 (which some devices, virtio-blk among them, must split), and
 * pinning and registering it touches fewer pages. Returns NULL with errno. */
static guint8 *map_aligned(gsize bytes) {
  gsize len = bytes + HUGE_PAGE;
  guint8 *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return NULL;
  guint8 *base = (guint8 *)(((guintptr)raw + HUGE_PAGE - 1) & ~(guintptr)(HUGE_PAGE - 1));
  /* Give back the slack before and after the aligned range. */
  if (base > raw)
    munmap(raw, base - raw);
  gsize tail = (raw + len) - (base + bytes);
  if (tail > 0)
    munmap(base + bytes, tail);
  madvise(base, bytes, MADV_HUGEPAGE); /* only a hint: fine if THP is off */
  return base;
}

RokStaging *rok_staging_new(gsize slot_bytes, guint64 total_bytes, GError **error) {
  if (!check_sizes(slot_bytes, total_bytes, error))
    return NULL;
  guint n = (guint)(total_bytes / slot_bytes);
  gsize bytes = (gsize)n * slot_bytes;
  guint8 *base = map_aligned(bytes);
  if (base == NULL) {
    int e = errno;
    g_autofree char *size = rok_units_format_size(bytes);
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "staging pool: cannot map %s: %s", size, g_strerror(e));
    return NULL;
  }
  RokStaging *pool = g_new0(RokStaging, 1);
  pool->base = base;
  pool->map_bytes = bytes;
  pool->slot_bytes = slot_bytes;
  pool->n_slots = n;
  /* Pinned memory must not be shared copy-on-write with a forked child:
   * the device (or the kernel, for registered buffers) would keep writing
   * the parent's pages while the parent got fresh copies. */
  madvise(base, bytes, MADV_DONTFORK);
  pool->lock_error = mlock(base, bytes) == 0 ? 0 : errno;
  pool->iovecs = g_new(struct iovec, n);
  pool->free_stack = g_new(guint, n);
  pool->held = g_new0(gboolean, n);
  for (guint i = 0; i < n; i++) {
    pool->iovecs[i] = (struct iovec){ .iov_base = pool->base + (gsize)i * slot_bytes,
                                      .iov_len = slot_bytes };
    pool->free_stack[i] = n - 1 - i; /* slot 0 on top */
  }
  pool->n_free = n;
  pool->stats.min_free = n;
  g_mutex_init(&pool->lock);
  g_cond_init(&pool->freed);
  return pool;
}

void rok_staging_free(RokStaging *pool) {
  if (pool == NULL)
    return;
  munmap(pool->base, pool->map_bytes);
  g_mutex_clear(&pool->lock);
  g_cond_clear(&pool->freed);
  g_free(pool->iovecs);
  g_free(pool->free_stack);
  g_free(pool->held);
  g_free(pool);
}

guint rok_staging_n_slots(const RokStaging *pool) { return pool->n_slots; }
gsize rok_staging_slot_bytes(const RokStaging *pool) { return pool->slot_bytes; }
gboolean rok_staging_locked(const RokStaging *pool) { return pool->lock_error == 0; }
int rok_staging_lock_error(const RokStaging *pool) { return pool->lock_error; }
const struct iovec *rok_staging_iovecs(const RokStaging *pool) { return pool->iovecs; }

guint8 *rok_staging_slot(const RokStaging *pool, guint slot) {
  g_return_val_if_fail(slot < pool->n_slots, NULL);
  return pool->base + (gsize)slot * pool->slot_bytes;
}

/* Waits for a free slot until DEADLINE (monotonic us, or G_MAXINT64);
 * returns 0 or -errno. Called with the lock held. */
static int wait_free_locked(RokStaging *pool, gint64 deadline) {
  while (pool->n_free == 0 && !pool->cancelled) {
    if (deadline == G_MAXINT64)
      g_cond_wait(&pool->freed, &pool->lock);
    else if (!g_cond_wait_until(&pool->freed, &pool->lock, deadline) && pool->n_free == 0)
      return pool->cancelled ? -ECANCELED : -ETIMEDOUT;
  }
  return pool->cancelled ? -ECANCELED : 0;
}

int rok_staging_acquire(RokStaging *pool, gint64 timeout_us, gint64 *waited_ns) {
  gint64 start = 0, waited = 0;
  g_mutex_lock(&pool->lock);
  int r = pool->cancelled ? -ECANCELED : 0;
  if (r == 0 && pool->n_free == 0) {
    start = g_get_monotonic_time();
    gint64 deadline = timeout_us < 0 ? G_MAXINT64 : start + timeout_us;
    r = timeout_us == 0 ? -ETIMEDOUT : wait_free_locked(pool, deadline);
    waited = (g_get_monotonic_time() - start) * 1000;
    pool->stats.stalls++;
    pool->stats.stall_ns += waited;
  }
  if (r == 0) {
    r = (int)pool->free_stack[--pool->n_free];
    pool->held[r] = TRUE;
    pool->stats.acquires++;
    pool->stats.min_free = MIN(pool->stats.min_free, pool->n_free);
  }
  g_mutex_unlock(&pool->lock);
  if (waited_ns != NULL)
    *waited_ns = waited;
  return r;
}

void rok_staging_release(RokStaging *pool, guint slot) {
  g_return_if_fail(slot < pool->n_slots);
  g_mutex_lock(&pool->lock);
  if (!pool->held[slot]) {
    g_mutex_unlock(&pool->lock);
    g_critical("rok_staging_release: slot %u is not held", slot);
    return;
  }
  pool->held[slot] = FALSE;
  pool->free_stack[pool->n_free++] = slot;
  g_cond_signal(&pool->freed);
  g_mutex_unlock(&pool->lock);
}

void rok_staging_cancel(RokStaging *pool) {
  g_mutex_lock(&pool->lock);
  pool->cancelled = TRUE;
  g_cond_broadcast(&pool->freed);
  g_mutex_unlock(&pool->lock);
}

guint rok_staging_n_free(RokStaging *pool) {
  g_mutex_lock(&pool->lock);
  guint n = pool->n_free;
  g_mutex_unlock(&pool->lock);
  return n;
}

void rok_staging_stats(RokStaging *pool, RokStagingStats *stats) {
  g_mutex_lock(&pool->lock);
  *stats = pool->stats;
  g_mutex_unlock(&pool->lock);
}
