/* Host <-> device copies through pinned host buffers, on the device's
 * transfer queues, as offloads and prefetches use them: large copies give
 * the bandwidth of each direction, small ones the latency of a transfer.
 * On PoCL's CPU device a copy is a memcpy by a worker thread. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#ifdef ROK_WITH_OPENCL

#include <gsl/gsl_fit.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "calib-private.h"
#include "rok/calibrate.h"
#include "rok/device.h"
#include "rok/core.h"

#define MIB ((guint64)1 << 20)
#define SMALL_COPY 4096
#define LATENCY_GROUPS 5
#define LATENCY_GROUP_SAMPLES 10
#define LATENCY_GROUP_GAP_US 200000
#define LATENCY_SPACING_US 1000
#define CPU_GROUPS 5
#define CPU_GROUP_COPIES 20
#define CPU_GROUP_GAP_US 20000
#define LEG_SIZES 3 /* 256 KiB, 512 KiB, 1 MiB: a staging slot's size and less */
#define LEG_TRIALS 9
#define COPY_SPEED_BYTES (64 * MIB) /* rok_calib_copy_speed's buffers */

static double seconds_since(gint64 start_us) {
  return (double)MAX(g_get_monotonic_time() - start_us, 1) / 1e6;
}

gboolean calib_copy_pair_init(CalibCopyPair *pair, RokClDevice *cl, guint64 bytes, const char *label,
                              GError **error) {
  *pair = (CalibCopyPair){.host = rok_cl_host_buffer_new(cl, bytes, 64, error)};
  pair->dev = pair->host ? rok_cl_buffer_new(cl, ROK_DTYPE_U8, bytes, label, TRUE, error) : NULL;
  if (pair->dev == NULL) {
    calib_copy_pair_clear(pair);
    return FALSE;
  }
  memset(pair->host->ptr, 0x5a, bytes);
  return TRUE;
}

void calib_copy_pair_clear(CalibCopyPair *pair) {
  g_clear_pointer(&pair->dev, rok_cl_buffer_free);
  g_clear_pointer(&pair->host, rok_cl_host_buffer_free);
}

gboolean calib_copy_seconds(const CalibCopyPair *pair, guint64 at, guint64 bytes, gboolean h2d, double *seconds,
                            GError **error) {
  void *place = (guint8 *)pair->host->ptr + at;
  gint64 start = g_get_monotonic_time();
  gboolean ok = h2d ? rok_cl_buffer_write(pair->dev, ROK_CL_QUEUE_H2D, at, bytes, place, TRUE, 0, NULL, NULL, error)
                    : rok_cl_buffer_read(pair->dev, ROK_CL_QUEUE_D2H, at, bytes, place, TRUE, 0, NULL, NULL, error);
  *seconds = seconds_since(start);
  return ok;
}

/* Median bandwidth of TRIALS copies after one untimed (first touch). */
static gboolean bandwidth(const CalibCopyPair *pair, gboolean h2d, guint trials, RokCalibCancel *cancel,
                          RokCalibStat *stat, GError **error) {
  g_autofree double *rates = g_new(double, trials);
  double s = 0;
  if (!calib_copy_seconds(pair, 0, pair->host->bytes, h2d, &s, error))
    return FALSE;
  for (guint t = 0; t < trials; t++) {
    if (rok_calib_check_cancelled(cancel, error) || !calib_copy_seconds(pair, 0, pair->host->bytes, h2d, &s, error))
      return FALSE;
    rates[t] = (double)pair->host->bytes / s;
  }
  *stat = rok_calib_stat(rates, trials);
  return TRUE;
}

/* A small copy's time, each direction in turn: what every transfer pays
 * before its bytes move. Each copy comes a pause after the last, as a
 * step's legs come (one per kernel at most): back to back, PoCL's CPU
 * device flips between two speeds for seconds at a time (the development
 * VM, 2026-12-05: groups of 50 took 4-6 us or 55-92 us, processor time
 * near the wall time in the slow one, the device's threads spinning for
 * the next command beside the waiting one), so that one calibration's
 * figure was 4.5 us and the next 77.5; 1 ms apart, 30 groups of 50 over
 * five calibrations took 19-28 us, and validate's offload rows' d2h legs
 * came to 15-33 us more than their bytes and checks at any calibration.
 * 1 ms apart it still flips, and stays flipped for the whole second or
 * more of its copies until the waiting thread moves to another
 * processor: 2026-12-06, one quick calibration in six took 96 us (the
 * others 29-32), two full ones in five 52-53, while the steps' d2h legs
 * kept to the fast speed (a 128 KiB leg 73-77 us against 107-110
 * predicted on those two). Groups of ten 200 ms apart all came out
 * 47-63 us in two quick calibrations of ten; with each group on the next
 * processor in turn, 28-34 us in all ten but for one group (82). So the
 * copies come in LATENCY_GROUPS groups, each with this thread on another
 * processor, and the figure is the group with the least median. */
static void keep_on(const cpu_set_t *allowed, guint nth) {
  int n = CPU_COUNT(allowed), seen = 0;
  for (int cpu = 0; n > 1 && cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, allowed) && seen++ == (int)(nth % (guint)n)) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof one, &one);
      return;
    }
}

static gboolean latency(const CalibCopyPair *pair, RokCalibStat *stat, GError **error) {
  double samples[LATENCY_GROUP_SAMPLES]; /* one group's: only its median is kept */
  cpu_set_t allowed;
  gboolean pinned = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
  gboolean ok = TRUE;
  for (guint g = 0; ok && g < LATENCY_GROUPS; g++) {
    if (g > 0)
      g_usleep(LATENCY_GROUP_GAP_US);
    if (pinned)
      keep_on(&allowed, g);
    for (guint i = 0; ok && i < LATENCY_GROUP_SAMPLES + 2; i++) {
      double s = 0;
      g_usleep(LATENCY_SPACING_US);
      ok = calib_copy_seconds(pair, 0, SMALL_COPY, i % 2 == 0, &s, error);
      if (i >= 2) /* the first of each direction warms up */
        samples[i - 2] = s;
    }
    if (!ok)
      break;
    RokCalibStat group = rok_calib_stat(samples, LATENCY_GROUP_SAMPLES);
    if (g == 0 || group.median < stat->median)
      *stat = group;
  }
  if (pinned)
    sched_setaffinity(0, sizeof allowed, &allowed);
  return ok;
}

/* The processor time this process spends on a small copy (getrusage,
 * every thread: enqueueing, the device's threads running and completing
 * the command, the wait's wake-up): the least per copy of a few groups
 * back to back. Spaced copies hold the device's threads spinning for a
 * next command, which in a step is the next kernel (61-81 us a copy on
 * the development VM, 2026-12-05), and back to back the slow speed above
 * comes with spinning too (52-60 us); its groups at the fast one took
 * 5-14 us. */
static gboolean copy_cpu(const CalibCopyPair *pair, double *cpu, GError **error) {
  *cpu = 0;
  for (guint g = 0; g < CPU_GROUPS; g++) {
    double cpu0 = rok_host_own_cpu_seconds(), s = 0;
    for (guint i = 0; i < CPU_GROUP_COPIES; i++)
      if (!calib_copy_seconds(pair, 0, SMALL_COPY, i % 2 == 0, &s, error))
        return FALSE;
    double cpu1 = rok_host_own_cpu_seconds();
    if (cpu0 < 0 || cpu1 < cpu0) { /* not measured: unknown */
      *cpu = 0;
      return TRUE;
    }
    double each = (cpu1 - cpu0) / CPU_GROUP_COPIES;
    *cpu = g == 0 ? each : MIN(*cpu, each);
    g_usleep(CPU_GROUP_GAP_US);
  }
  return TRUE;
}

/* The check of a leg just copied out of the device, timed apart from the
 * copy: the executor's d2h thread checks a leg's slots as soon as their
 * copies end, and what of them is still in the processors' caches goes
 * several times faster than from memory (the development VM: 7.4 GB/s at
 * 256 KiB, 4.3 at 1 MiB, 2.3 at 4 MiB, 1.8 at 32 MiB). Each leg lands at
 * the next place in the host buffer, as legs take the pool's slots in
 * turn; a trial is as many legs as make 32 MiB (4 to 32), its figure their
 * bytes over their time. */
static gboolean copied_check(const CalibCopyPair *pair, guint64 bytes, guint trial, RokCalibCancel *cancel,
                             double *seconds, GError **error) {
  guint legs = (guint)CLAMP(32 * MIB / bytes, 4, 32);
  volatile guint64 sink = 0;
  guint64 places = MAX(pair->host->bytes / bytes, 1);
  *seconds = 0;
  for (guint i = 0; i < legs; i++) {
    guint64 at = ((guint64)trial * legs + i) % places * bytes;
    guint8 *slot = (guint8 *)pair->host->ptr + at;
    double copied = 0;
    if (rok_calib_check_cancelled(cancel, error) || !calib_copy_seconds(pair, at, bytes, FALSE, &copied, error))
      return FALSE;
    struct timespec start, end; /* ns: a 64 KiB check takes 10 us */
    clock_gettime(CLOCK_MONOTONIC, &start);
    sink += rok_cl_checksum_bytes(slot, bytes);
    clock_gettime(CLOCK_MONOTONIC, &end);
    *seconds += (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
  }
  (void)sink;
  *seconds = MAX(*seconds, 1e-9) / legs;
  return TRUE;
}

/* Trials take the sizes in turn, so that each size sees the machine's
 * phases alike: beside kernels a leg's check runs at one of two speeds for
 * a while (the development VM: 3.7 or 7.5 GB/s at 256 KiB, one or the
 * other for a whole trial), as it finds the bytes in its own processor's
 * cache or the other's, and a prediction needs the mean: each size's rate
 * is its bytes over its time in all trials. */
gboolean rok_calib_measure_copied_checks(RokClDevice *cl, const RokCalibOptions *o, RokCalibCancel *cancel,
                                         RokCalibDevice *d, GError **error) {
  guint64 largest = (guint64)64 << 10 << (2 * (ROK_CALIB_CHECK_SIZES - 1)), bytes = 4 * largest;
  while (bytes > largest && bytes > d->memory / 8)
    bytes /= 2;
  g_auto(CalibCopyPair) pair = {0};
  if (!calib_copy_pair_init(&pair, cl, bytes, "calibrate.check", error))
    return FALSE;
  guint trials = MAX(o->trials, 5), sizes = 0;
  while (sizes < ROK_CALIB_CHECK_SIZES && (guint64)64 << 10 << (2 * sizes) <= bytes)
    sizes++; /* 64 KiB (a small model's leg) to 16 MiB, 4x apart */
  g_autofree double *rates = g_new(double, (gsize)sizes * trials);
  double total[ROK_CALIB_CHECK_SIZES] = {0};
  for (guint t = 0; t < trials; t++)
    for (guint i = 0; i < sizes; i++) {
      guint64 leg = (guint64)64 << 10 << (2 * i);
      double seconds = 0;
      if (!copied_check(&pair, leg, t, cancel, &seconds, error))
        return FALSE;
      rates[i * trials + t] = (double)leg / seconds;
      total[i] += seconds;
    }
  for (guint i = 0; i < sizes; i++) {
    d->copied_check_bytes[i] = (guint64)64 << 10 << (2 * i);
    d->copied_check[i] = rok_calib_stat(&rates[i * trials], trials);
    d->copied_check_rate[i] = (double)d->copied_check_bytes[i] * trials / total[i];
  }
  return TRUE;
}

/* Each direction's rate as a step's legs copy, on a CPU device: a
 * command of a staging slot or less (a leg copies slot by slot), at the
 * next place in the pinned buffer each time (a leg's bytes were written
 * long before, and go to a tensor's own buffer), 1 ms apart. The whole
 * buffer copied again and again runs faster than a leg's copies do: on
 * the development VM's Intel host, 2026-12-07, 11.5 GB/s where 192-704
 * KiB legs copied at 5.8-7.0 GB/s (tests/bench/pocl_legs.py) and such
 * copies in a probe at ~7 both ways; the rate is the slope of the
 * sizes' median times (least squares), so that the copy's own latency,
 * timed apart, does not count twice. The trials take the sizes in turn, so
 * that a change in the machine's speed while they run falls on every size
 * alike rather than tilting the slope (the development VM, 2026-12-07:
 * one calibration's h2d rate, its sizes taken one after another, came out
 * 8.5 GB/s where quick calibrations minutes later gave 6.7 and 7.2, and
 * three with the sizes in turn 6.4-6.6). */
static gboolean leg_medians(const CalibCopyPair *pair, gboolean h2d, RokCalibCancel *cancel,
                            double bytes[LEG_SIZES], double median[LEG_SIZES], GError **error) {
  double times[LEG_SIZES][LEG_TRIALS];
  guint64 at = 0;
  for (guint t = 0; t < LEG_TRIALS; t++)
    for (guint k = 0; k < LEG_SIZES; k++) {
      guint64 n = (MIB / 4) << k;
      if (at + n > pair->host->bytes)
        at = 0;
      g_usleep(LATENCY_SPACING_US);
      if (rok_calib_check_cancelled(cancel, error) || !calib_copy_seconds(pair, at, n, h2d, &times[k][t], error))
        return FALSE;
      at += n;
    }
  for (guint k = 0; k < LEG_SIZES; k++) {
    bytes[k] = (double)((MIB / 4) << k);
    median[k] = rok_calib_stat(times[k], LEG_TRIALS).median;
  }
  return TRUE;
}

static gboolean leg_rate(const CalibCopyPair *pair, gboolean h2d, RokCalibCancel *cancel, double *rate,
                         GError **error) {
  double bytes[LEG_SIZES], median[LEG_SIZES];
  if (!leg_medians(pair, h2d, cancel, bytes, median, error))
    return FALSE;
  double c0 = 0, c1 = 0, cov00 = 0, cov01 = 0, cov11 = 0, sumsq = 0;
  gsl_fit_linear(bytes, 1, median, 1, LEG_SIZES, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);
  *rate = c1 > 0 ? 1.0 / c1 : 0; /* 0: no slope to take (the whole buffer's rate stands) */
  return TRUE;
}

gboolean rok_calib_measure_copies(RokClDevice *cl, const RokCalibOptions *o, RokCalibCancel *cancel,
                                  RokCalibDevice *d, GError **error) {
  guint64 bytes = (o->quick ? 64 : 256) * MIB;
  while (bytes > 4 * MIB && bytes > d->memory / 8)
    bytes /= 2;
  rok_calib_progress(o, "host <-> device copies");
  g_auto(CalibCopyPair) pair = {0};
  if (!calib_copy_pair_init(&pair, cl, bytes, "calibrate.copy", error))
    return FALSE;
  d->copy_bytes = bytes;
  d->pinned = pair.host->pinned;
  gboolean cpu = g_strcmp0(d->type, "cpu") == 0;
  d->h2d_legs = d->d2h_legs = 0;
  return bandwidth(&pair, TRUE, o->trials, cancel, &d->h2d, error) &&
         bandwidth(&pair, FALSE, o->trials, cancel, &d->d2h, error) &&
         (!cpu || (leg_rate(&pair, TRUE, cancel, &d->h2d_legs, error) &&
                   leg_rate(&pair, FALSE, cancel, &d->d2h_legs, error))) &&
         latency(&pair, &d->copy_latency, error) && copy_cpu(&pair, &d->copy_cpu, error);
}

gboolean rok_calib_copy_speed(gint device, const RokHw *hw, RokCalibCancel *cancel, double ratio[2],
                              GError **error) {
  g_autoptr(RokClDevice) cl = rok_cl_device_open(device, error);
  if (cl == NULL)
    return FALSE;
  /* As large as a quick calibration's, so that the places it copies from
   * are as far from the caches. */
  guint64 bytes = COPY_SPEED_BYTES, memory = rok_cl_device_info(cl)->global_memory;
  while (bytes > 4 * MIB && bytes > memory / 8)
    bytes /= 2;
  g_auto(CalibCopyPair) pair = {0};
  double first = 0; /* the pages touched each way first, as calibrate's whole-buffer copies did */
  if (!calib_copy_pair_init(&pair, cl, bytes, "validate.copy_speed", error) ||
      !calib_copy_seconds(&pair, 0, bytes, TRUE, &first, error) ||
      !calib_copy_seconds(&pair, 0, bytes, FALSE, &first, error))
    return FALSE;
  const double rate[2] = {hw->pcie.d2h_bandwidth, hw->pcie.h2d_bandwidth};
  for (guint d = 0; d < 2; d++) {
    double sizes[LEG_SIZES], median[LEG_SIZES], took = 0, model = 0;
    if (!leg_medians(&pair, d == 1, cancel, sizes, median, error))
      return FALSE;
    for (guint k = 0; k < LEG_SIZES; k++) {
      took += median[k];
      model += (double)hw->pcie.latency / 1e9 + sizes[k] / rate[d];
    }
    ratio[d] = took / model;
  }
  return TRUE;
}

#else /* ROK_WITH_OPENCL */

#include "rok/calibrate.h"
#include "rok/core.h"

gboolean rok_calib_copy_speed(gint device, const RokHw *hw, RokCalibCancel *cancel, double ratio[2],
                              GError **error) {
  (void)device, (void)hw, (void)cancel, (void)ratio;
  g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "this rok was built without OpenCL (ROK_WITH_OPENCL=OFF)");
  return FALSE;
}

#endif /* ROK_WITH_OPENCL */
