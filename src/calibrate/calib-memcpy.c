/* The host: its memory, how fast one thread copies large buffers (what
 * staging a tensor through host memory costs) and checksums them (what
 * rok's executor spends checking every copy that crosses PCIe). */
#include <string.h>
#include <unistd.h>

#include "rok/calibrate.h"
#include "rok/device.h"
#include "rok/core.h"

#define MIB ((gsize)1 << 20)

/* Keeps the compiler from dropping a copy whose result nobody reads. */
static void clobber(void *p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

static gboolean host_memory(guint64 *bytes, GError **error) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot tell the host's memory size (sysconf)");
    return FALSE;
  }
  *bytes = (guint64)pages * (guint64)page;
  return TRUE;
}

/* The executor's host checksum (cl-checksum.h), one thread, as a copy's
 * leg computes it: over a staging slot's bytes (the executor's default,
 * 1 MiB) just copied there, so bound by arithmetic rather than memory.
 * Each trial the median of many: over the whole 32 MiB of a buffer just
 * allocated the development VM gave 1.7 GB/s in its first passes and 6
 * GB/s after, while a d2h leg of 128 KiB took 55 us, copy and check (7.6
 * GB/s for a slot just written, at every size from 64 KiB to 4 MiB). */
#define CHECKSUM_BYTES MIB
#define CHECKSUM_REPS 64

static gboolean measure_checksum(const RokCalibOptions *o, RokCalibCancel *cancel, const guint8 *src,
                                 RokCalibHost *host, GError **error) {
  rok_calib_progress(o, "host checksum");
  guint trials = MAX(o->trials, 5);
  g_autofree double *rates = g_new(double, trials), *each = g_new(double, CHECKSUM_REPS);
  g_autofree guint8 *slot = g_malloc(CHECKSUM_BYTES);
  volatile guint64 sink = 0;
  for (guint t = 0; t < trials; t++) {
    if (rok_calib_check_cancelled(cancel, error))
      return FALSE;
    for (guint i = 0; i < CHECKSUM_REPS; i++) {
      memcpy(slot, src + (gsize)(t * CHECKSUM_REPS + i) % 16 * CHECKSUM_BYTES, CHECKSUM_BYTES);
      clobber(slot);
      gint64 start = g_get_monotonic_time();
      sink += rok_cl_checksum_bytes(slot, CHECKSUM_BYTES);
      each[i] = (double)CHECKSUM_BYTES / ((double)MAX(g_get_monotonic_time() - start, 1) / 1e6);
    }
    rates[t] = rok_calib_stat(each, CHECKSUM_REPS).median;
  }
  (void)sink;
  host->checksum = rok_calib_stat(rates, trials);
  return TRUE;
}

gboolean rok_calib_measure_host(const RokCalibOptions *o, RokCalibCancel *cancel, RokCalibHost *host,
                                GError **error) {
  if (!host_memory(&host->memory, error))
    return FALSE;
  /* Buffers far larger than any cache, yet a small part of memory. */
  gsize bytes = MIN((o->quick ? 64 : 256) * MIB, (gsize)(host->memory / 16));
  bytes = MAX(bytes, 16 * CHECKSUM_BYTES); /* the checksum's sources */
  g_autofree guint8 *src = g_try_malloc(bytes), *dst = g_try_malloc(bytes);
  if (src == NULL || dst == NULL) {
    g_autofree char *size = rok_units_format_size(bytes);
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot allocate two buffers of %s to time memcpy", size);
    return FALSE;
  }
  rok_calib_progress(o, "host memcpy");
  /* Touch every page first: the first copy would time page faults. */
  memset(src, 0x5a, bytes);
  memset(dst, 0, bytes);
  memcpy(dst, src, bytes);
  clobber(dst);
  guint trials = MAX(o->trials, 5); /* cheap: a few more steady the median */
  g_autofree double *rates = g_new(double, trials);
  for (guint t = 0; t < trials; t++) {
    if (rok_calib_check_cancelled(cancel, error))
      return FALSE;
    gint64 start = g_get_monotonic_time();
    memcpy(dst, src, bytes);
    clobber(dst);
    gint64 us = MAX(g_get_monotonic_time() - start, 1);
    rates[t] = (double)bytes / ((double)us / 1e6);
  }
  host->memcpy_bytes = bytes;
  host->memcpy = rok_calib_stat(rates, trials);
  return measure_checksum(o, cancel, src, host, error);
}
