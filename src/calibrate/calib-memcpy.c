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
 * leg computes it: bound by arithmetic rather than memory. */
#define CHECKSUM_BYTES (32 * MIB)

static gboolean measure_checksum(const RokCalibOptions *o, RokCalibCancel *cancel, const guint8 *data, gsize bytes,
                                 RokCalibHost *host, GError **error) {
  rok_calib_progress(o, "host checksum");
  guint trials = MAX(o->trials, 5);
  g_autofree double *rates = g_new(double, trials);
  volatile guint64 sink = rok_cl_checksum_bytes(data, bytes); /* warm */
  for (guint t = 0; t < trials; t++) {
    if (rok_calib_check_cancelled(cancel, error))
      return FALSE;
    gint64 start = g_get_monotonic_time();
    sink += rok_cl_checksum_bytes(data, bytes);
    gint64 us = MAX(g_get_monotonic_time() - start, 1);
    rates[t] = (double)bytes / ((double)us / 1e6);
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
  bytes = MAX(bytes, MIB);
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
  return measure_checksum(o, cancel, src, MIN(bytes, CHECKSUM_BYTES), host, error);
}
