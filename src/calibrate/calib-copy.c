/* Host <-> device copies through pinned host buffers, on the device's
 * transfer queues, as offloads and prefetches use them: large copies give
 * the bandwidth of each direction, small ones the latency of a transfer.
 * On PoCL's CPU device a copy is a memcpy by a worker thread. */
#ifdef ROK_WITH_OPENCL

#include <string.h>

#include "rok/calibrate.h"
#include "rok/device.h"
#include "rok/core.h"

#define MIB ((guint64)1 << 20)
#define SMALL_COPY 4096
#define LATENCY_SAMPLES 50

static double seconds_since(gint64 start_us) {
  return (double)MAX(g_get_monotonic_time() - start_us, 1) / 1e6;
}

/* One blocking copy of BYTES in direction H2D (else D2H). */
static gboolean copy_once(RokClBuffer *dev, RokClHostBuffer *host, guint64 bytes, gboolean h2d, double *seconds,
                          GError **error) {
  gint64 start = g_get_monotonic_time();
  gboolean ok = h2d ? rok_cl_buffer_write(dev, ROK_CL_QUEUE_H2D, 0, bytes, host->ptr, TRUE, 0, NULL, NULL, error)
                    : rok_cl_buffer_read(dev, ROK_CL_QUEUE_D2H, 0, bytes, host->ptr, TRUE, 0, NULL, NULL, error);
  *seconds = seconds_since(start);
  return ok;
}

/* Median bandwidth of TRIALS copies after one untimed (first touch). */
static gboolean bandwidth(RokClBuffer *dev, RokClHostBuffer *host, gboolean h2d, guint trials,
                          RokCalibCancel *cancel, RokCalibStat *stat, GError **error) {
  g_autofree double *rates = g_new(double, trials);
  double s = 0;
  if (!copy_once(dev, host, host->bytes, h2d, &s, error))
    return FALSE;
  for (guint t = 0; t < trials; t++) {
    if (rok_calib_check_cancelled(cancel, error) || !copy_once(dev, host, host->bytes, h2d, &s, error))
      return FALSE;
    rates[t] = (double)host->bytes / s;
  }
  *stat = rok_calib_stat(rates, trials);
  return TRUE;
}

/* A small copy's time, each direction in turn: what every transfer pays
 * before its bytes move; and the processor time this process spent on
 * them (getrusage, every thread: enqueueing, the device's threads running
 * and completing the command, the wait's wake-up), per copy. */
static gboolean latency(RokClBuffer *dev, RokClHostBuffer *host, RokCalibStat *stat, double *cpu, GError **error) {
  double samples[LATENCY_SAMPLES], cpu0 = 0;
  for (guint i = 0; i < LATENCY_SAMPLES + 2; i++) {
    double s = 0;
    if (i == 2)
      cpu0 = rok_host_own_cpu_seconds();
    if (!copy_once(dev, host, SMALL_COPY, i % 2 == 0, &s, error))
      return FALSE;
    if (i >= 2) /* the first of each direction warms up */
      samples[i - 2] = s;
  }
  double cpu1 = rok_host_own_cpu_seconds();
  *cpu = cpu0 >= 0 && cpu1 >= cpu0 ? (cpu1 - cpu0) / LATENCY_SAMPLES : 0;
  *stat = rok_calib_stat(samples, LATENCY_SAMPLES);
  return TRUE;
}

gboolean rok_calib_measure_copies(RokClDevice *cl, const RokCalibOptions *o, RokCalibCancel *cancel,
                                  RokCalibDevice *d, GError **error) {
  guint64 bytes = (o->quick ? 64 : 256) * MIB;
  while (bytes > 4 * MIB && bytes > d->memory / 8)
    bytes /= 2;
  rok_calib_progress(o, "host <-> device copies");
  g_autoptr(RokClHostBuffer) host = rok_cl_host_buffer_new(cl, bytes, 64, error);
  if (host == NULL)
    return FALSE;
  g_autoptr(RokClBuffer) dev = rok_cl_buffer_new(cl, ROK_DTYPE_U8, bytes, "calibrate.copy", TRUE, error);
  if (dev == NULL)
    return FALSE;
  memset(host->ptr, 0x3c, bytes);
  d->copy_bytes = bytes;
  d->pinned = host->pinned;
  return bandwidth(dev, host, TRUE, o->trials, cancel, &d->h2d, error) &&
         bandwidth(dev, host, FALSE, o->trials, cancel, &d->d2h, error) &&
         latency(dev, host, &d->copy_latency, &d->copy_cpu, error);
}

#endif /* ROK_WITH_OPENCL */
