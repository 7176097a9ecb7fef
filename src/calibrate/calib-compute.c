/* The compute device: rok's own kernels timed on it, as `rok execute` will
 * run them (bf16 activations). GEMMs over sizes give the efficiency curve,
 * the element-wise add over large buffers the memory bandwidth, tiny
 * kernels back to back the launch overhead. */
#include <math.h>
#include <string.h>

#include "rok/calibrate.h"
#include "rok/core.h"

double rok_calib_action_seconds(const RokCalibDevice *d) {
  return d->action_overhead > 0 ? d->action_overhead : d->launch.median;
}

#ifndef ROK_WITH_OPENCL

gboolean rok_calib_measure_device(const RokCalibOptions *options, RokCalibCancel *cancel, RokCalibDevice *device,
                                  GError **error) {
  (void)options, (void)cancel, (void)device;
  g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
              "this rok was built without OpenCL (ROK_WITH_OPENCL=OFF): calibration needs a compute device");
  return FALSE;
}

#else

#include "rok/device.h"

typedef gboolean (*RunFunc)(gpointer data, GError **error);

typedef struct {
  RokClDevice *cl;
  RokCalibCancel *cancel;
  guint trials;
  double min_seconds; /* a timed trial lasts at least this long */
} Timer;

static double now(void) {
  return (double)g_get_monotonic_time() / 1e6;
}

static gboolean run_reps(const Timer *t, RunFunc run, gpointer data, guint reps, double *seconds, GError **error) {
  double start = now();
  for (guint r = 0; r < reps; r++)
    if (!run(data, error))
      return FALSE;
  if (!rok_cl_device_finish(t->cl, ROK_CL_QUEUE_COMPUTE, error))
    return FALSE;
  *seconds = (now() - start) / reps;
  return TRUE;
}

/* Seconds per run of RUN, one value per trial. An untimed run first (PoCL
 * compiles a kernel at its first launch), a timed one to choose how many
 * runs go back to back in a trial so that it outlasts the timer's noise
 * (itself the first trial when one run is long enough). */
static gboolean time_runs(const Timer *t, RunFunc run, gpointer data, double *per_run, GError **error) {
  double first = 0;
  if (!run_reps(t, run, data, 1, &first, error) || rok_calib_check_cancelled(t->cancel, error) ||
      !run_reps(t, run, data, 1, &first, error))
    return FALSE;
  guint reps = first >= t->min_seconds ? 1 : (guint)MIN(1000.0, ceil(t->min_seconds / MAX(first, 1e-7)));
  guint trial = 0;
  if (reps == 1)
    per_run[trial++] = first;
  for (; trial < t->trials; trial++)
    if (rok_calib_check_cancelled(t->cancel, error) || !run_reps(t, run, data, reps, &per_run[trial], error))
      return FALSE;
  return TRUE;
}

/* A kernel's own time: the launch overhead, measured apart and charged
 * apart by the simulator, taken out (never below a tenth of the run). */
static double kernel_seconds(const RokCalibDevice *d, double per_run) {
  return MAX(per_run - d->launch.median, per_run / 10);
}

/* ---- Launch overhead and element-wise bandwidth ---------------------- */

typedef struct {
  RokClKernels *kernels;
  RokClBuffer *a, *b, *out;
  guint64 n;
  RokClGemm gemm;
} Job;

static gboolean run_add(gpointer data, GError **error) {
  Job *job = data;
  return rok_cl_add(job->kernels, job->a, job->b, job->out, job->n, error);
}

static gboolean add_job(RokClKernels *kernels, guint64 n, Job *job, GError **error) {
  RokClDevice *cl = rok_cl_kernels_device(kernels);
  *job = (Job){.kernels = kernels, .n = n};
  job->a = rok_cl_buffer_new(cl, ROK_DTYPE_BF16, n, "calibrate.a", TRUE, error);
  job->b = job->a ? rok_cl_buffer_new(cl, ROK_DTYPE_BF16, n, "calibrate.b", TRUE, error) : NULL;
  job->out = job->b ? rok_cl_buffer_new(cl, ROK_DTYPE_BF16, n, "calibrate.out", TRUE, error) : NULL;
  /* Zeros: an add takes as long on any finite values, and filling large
   * buffers with random numbers would cost more than the measurement. */
  return job->out != NULL && rok_cl_buffer_zero(job->a, error) && rok_cl_buffer_zero(job->b, error);
}

static void job_clear(Job *job) {
  rok_cl_buffer_free(job->a);
  rok_cl_buffer_free(job->b);
  rok_cl_buffer_free(job->out);
}

/* As the executor runs an action: launched, then waited for. */
static gboolean run_add_waited(gpointer data, GError **error) {
  Job *job = data;
  return run_add(data, error) &&
         rok_cl_device_finish(rok_cl_kernels_device(job->kernels), ROK_CL_QUEUE_COMPUTE, error);
}

/* Back to back (what a GEMM timed in a row pays per launch), and on a GPU
 * also one at a time and waited for, as the executor runs an action: there
 * the wait (tens of microseconds) dwarfs the launch. The compute thread
 * runs its next action itself; a copy leg is handed to its thread and its
 * end back, a message there and back on top. A CPU device's hand-offs are
 * measured beside running kernels instead (calib-contention.c), as
 * host.copy_overhead. */
static gboolean measure_launch(RokClKernels *kernels, const Timer *timer, RokCalibDevice *d, GError **error) {
  Job job;
  Timer t = *timer;
  t.min_seconds = timer->min_seconds / 2;
  g_autofree double *s = g_new(double, t.trials);
  gboolean ok = add_job(kernels, 64, &job, error) && time_runs(&t, run_add, &job, s, error);
  if (ok)
    d->launch = rok_calib_stat(s, t.trials);
  if (ok && g_strcmp0(d->type, "cpu") != 0) {
    RokCalibStat leg;
    ok = time_runs(&t, run_add_waited, &job, s, error) &&
         rok_calib_measure_handoff(rok_cl_kernels_device(kernels), &leg, error);
    if (ok) {
      d->action_overhead = rok_calib_stat(s, t.trials).median;
      d->leg_action_overhead = d->action_overhead + leg.median;
    }
  }
  job_clear(&job);
  return ok;
}

/* Element-wise add: reads two buffers and writes one, as the trace's
 * element-wise ops do; buffers far larger than any cache. */
static gboolean measure_elementwise(RokClKernels *kernels, const Timer *t, const RokCalibOptions *o,
                                    RokCalibDevice *d, GError **error) {
  guint64 n = (o->quick ? 32 : 64) * ((guint64)1 << 20);
  while (n > ((guint64)1 << 16) && 3 * 2 * n > d->memory / 4)
    n /= 2;
  Job job;
  g_autofree double *s = g_new(double, t->trials);
  gboolean ok = add_job(kernels, n, &job, error) && time_runs(t, run_add, &job, s, error);
  job_clear(&job);
  if (!ok)
    return FALSE;
  d->elementwise_bytes = 3 * 2 * n;
  for (guint i = 0; i < t->trials; i++)
    s[i] = (double)d->elementwise_bytes / kernel_seconds(d, s[i]);
  d->elementwise = rok_calib_stat(s, t->trials);
  return TRUE;
}

/* The add of measure_elementwise, once, before each timed pass of the ops
 * (what their medians need is the memory at its speed for most passes),
 * and AROUND times before and after them. */
#define AROUND 5
typedef struct {
  Job job;
  const Timer *t;
  const RokCalibDevice *d;
  GArray *rates; /* double, bytes/s */
} AddProbe;

static gboolean add_probe(gpointer data, GError **error) {
  AddProbe *p = data;
  double s = 0;
  if (!run_reps(p->t, run_add, &p->job, 1, &s, error))
    return FALSE;
  double rate = (double)p->d->elementwise_bytes / kernel_seconds(p->d, s);
  g_array_append_val(p->rates, rate);
  return TRUE;
}

/* The add of measure_elementwise run once untimed (its buffers' pages
 * touched: the first run on them took 20-40 times as long, 2026-12-08),
 * then AROUND times right before WORK and AROUND times right after it;
 * WORK may run the add between its own passes (PROBE). RATES gets every
 * add's rate in order, N how many came before, during and after WORK. */
typedef gboolean (*AddBracketed)(gpointer data, AddProbe *probe, GError **error);

static gboolean between_adds(RokClKernels *kernels, const Timer *t, const RokCalibDevice *d, AddBracketed work,
                             gpointer data, GArray *rates, guint n[3], GError **error) {
  AddProbe p = {.t = t, .d = d, .rates = rates};
  double first = 0;
  gboolean ok = add_job(kernels, d->elementwise_bytes / 6, &p.job, error) &&
                run_reps(t, run_add, &p.job, 1, &first, error);
  for (guint i = 0; ok && i < AROUND; i++)
    ok = add_probe(&p, error);
  n[0] = rates->len;
  ok = ok && work(data, &p, error);
  n[1] = rates->len - n[0];
  for (guint i = 0; ok && i < AROUND; i++)
    ok = add_probe(&p, error);
  n[2] = rates->len - n[0] - n[1];
  job_clear(&p.job);
  return ok;
}

/* What the measurements between the adds need besides the probe. */
typedef struct {
  RokClKernels *kernels;
  const RokCalibOptions *o;
  RokCalibCancel *cancel;
  RokCalibDevice *d;
} Bracketed;

static gboolean ops_work(gpointer data, AddProbe *probe, GError **error) {
  Bracketed *b = data;
  return rok_calib_measure_ops(b->kernels, b->o, b->cancel, b->d, add_probe, probe, error);
}

static gboolean copies_work(gpointer data, AddProbe *probe, GError **error) {
  (void)probe;
  Bracketed *b = data;
  return rok_calib_measure_copies(rok_cl_kernels_device(b->kernels), b->o, b->cancel, b->d, error);
}

/* The ops timed, the add before each pass (elementwise_ops) and around
 * them (elementwise_around). */
static gboolean measure_ops_probed(RokClKernels *kernels, const Timer *t, const RokCalibOptions *o,
                                   RokCalibCancel *cancel, RokCalibDevice *d, GError **error) {
  Bracketed b = {.kernels = kernels, .o = o, .cancel = cancel, .d = d};
  g_autoptr(GArray) rates = g_array_new(FALSE, FALSE, sizeof(double));
  guint n[3];
  if (!between_adds(kernels, t, d, ops_work, &b, rates, n, error))
    return FALSE;
  if (n[1] > 0) {
    double *r = (double *)(void *)rates->data;
    d->elementwise_ops = rok_calib_stat(r + n[0], n[1]);
    memmove(r + n[0], r + n[0] + n[1], sizeof(double) * n[2]); /* before and after, together */
    d->elementwise_around = rok_calib_stat(r, n[0] + n[2]);
  }
  return TRUE;
}

/* ---- The device's checksum of a tensor ---------------------------------- */

typedef struct {
  Job op; /* a tiny add: the forward the checksum follows */
  RokClBuffer *data, *sum;
  guint64 bytes; /* 0: the forward alone */
} Sum;

/* An action as the executor runs a forward that makes a tensor bound for
 * host memory or the SSDs: its kernel, the checksum's two kernels behind
 * it, the wait for them all, the value read back (runner-compute.c). */
static gboolean run_sum(gpointer data, GError **error) {
  Sum *s = data;
  guint64 value = 0;
  return run_add(&s->op, error) &&
         (s->bytes == 0 || rok_cl_checksum_enqueue(s->op.kernels, s->data, 0, s->bytes, s->sum, 0, error)) &&
         rok_cl_device_finish(rok_cl_kernels_device(s->op.kernels), ROK_CL_QUEUE_COMPUTE, error) &&
         (s->bytes == 0 ||
          rok_cl_buffer_read(s->sum, ROK_CL_QUEUE_COMPUTE, 0, sizeof value, &value, TRUE, 0, NULL, NULL, error));
}

/* What the checksum adds to such an action, of a small tensor and of a
 * large one: the cost per tensor and the rate are the line through the
 * two. */
static gboolean measure_checksum(RokClKernels *kernels, const Timer *t, const RokCalibOptions *o, RokCalibDevice *d,
                                 GError **error) {
  const guint64 sizes[3] = {0, (guint64)64 << 10, (guint64)(o->quick ? 4 : 16) << 20};
  RokClDevice *cl = rok_cl_kernels_device(kernels);
  Sum s = {0};
  gboolean ok = add_job(kernels, (guint64)1 << 18, &s.op, error);
  s.data = ok ? rok_cl_buffer_new(cl, ROK_DTYPE_BF16, sizes[2] / 2, "calibrate.checksum", TRUE, error) : NULL;
  s.sum = s.data != NULL ? rok_cl_buffer_new(cl, ROK_DTYPE_I64, 1, "calibrate.sum", TRUE, error) : NULL;
  ok = s.sum != NULL && rok_cl_buffer_zero(s.data, error);
  double median[3] = {0};
  g_autofree double *per_run = g_new(double, t->trials);
  for (guint i = 0; ok && i < G_N_ELEMENTS(sizes); i++) {
    s.bytes = sizes[i];
    ok = time_runs(t, run_sum, &s, per_run, error);
    median[i] = ok ? rok_calib_stat(per_run, t->trials).median : 0;
  }
  job_clear(&s.op);
  rok_cl_buffer_free(s.data);
  rok_cl_buffer_free(s.sum);
  if (!ok)
    return FALSE;
  double per_byte = (median[2] - median[1]) / (double)(sizes[2] - sizes[1]);
  if (!(per_byte > 0)) /* the large one no slower: its rate alone */
    per_byte = (median[2] - median[0]) / (double)sizes[2];
  per_byte = MAX(per_byte, 0); /* no rate measured: the small one's extra is all overhead */
  d->checksum_bandwidth = per_byte > 0 ? 1 / per_byte : 0;
  d->checksum_overhead = MAX(median[1] - median[0] - (double)sizes[1] * per_byte, 0);
  return TRUE;
}

/* ---- GEMMs -------------------------------------------------------------- */

static gboolean run_gemm(gpointer data, GError **error) {
  Job *job = data;
  return rok_cl_gemm(job->kernels, &job->gemm, error);
}

/* Whether the operands of G fit comfortably on the device. */
static gboolean gemm_fits(const RokClDeviceInfo *info, const RokCalibGemm *g) {
  guint64 a = g->batch * g->m * g->k * 2, b = g->batch * g->k * g->n * 2, c = g->batch * g->m * g->n * 2;
  return MAX(a, MAX(b, c)) <= info->max_alloc && a + b + c <= info->global_memory / 2;
}

/* G's rate over the timer's trials (G's shape set, its flops and rate
 * filled in). */
static gboolean time_gemm(RokClKernels *kernels, const Timer *t, const RokCalibDevice *d, RokCalibGemm *g,
                          GError **error) {
  RokClDevice *cl = rok_cl_kernels_device(kernels);
  Job job = {.kernels = kernels};
  job.a = rok_cl_buffer_new(cl, ROK_DTYPE_BF16, g->batch * g->m * g->k, "calibrate.A", TRUE, error);
  job.b = job.a ? rok_cl_buffer_new(cl, ROK_DTYPE_BF16, g->batch * g->k * g->n, "calibrate.B", TRUE, error) : NULL;
  job.out = job.b ? rok_cl_buffer_new(cl, ROK_DTYPE_BF16, g->batch * g->m * g->n, "calibrate.C", TRUE, error) : NULL;
  job.gemm = (RokClGemm){.batch = g->batch, .m = g->m, .n = g->n, .k = g->k, .alpha = 1.0f, .beta = 0.0f};
  job.gemm.a = (RokClMatrix){.buffer = job.a, .ld = g->k, .stride = g->m * g->k};
  job.gemm.b = (RokClMatrix){.buffer = job.b, .ld = g->trans_b ? g->k : g->n, .stride = g->k * g->n,
                             .trans = g->trans_b};
  job.gemm.c = (RokClMatrix){.buffer = job.out, .ld = g->n, .stride = g->m * g->n};
  g_autofree double *s = g_new(double, t->trials);
  gboolean ok = job.out != NULL && rok_cl_fill_uniform(kernels, job.a, 7, 3, -1, 1, error) &&
                rok_cl_fill_uniform(kernels, job.b, 7, 4, -1, 1, error) && time_runs(t, run_gemm, &job, s, error);
  job_clear(&job);
  if (!ok)
    return FALSE;
  g->flops = 2.0 * (double)g->batch * (double)g->m * (double)g->n * (double)g->k;
  for (guint i = 0; i < t->trials; i++)
    s[i] = g->flops / kernel_seconds(d, s[i]);
  g->rate = rok_calib_stat(s, t->trials);
  return TRUE;
}

static gboolean measure_gemm(RokClKernels *kernels, const Timer *t, RokCalibDevice *d, RokCalibGemm *g,
                             GError **error) {
  if (!time_gemm(kernels, t, d, g, error))
    return FALSE;
  g_array_append_val(d->gemms, *g);
  return TRUE;
}

/* Squares of doubling size until one launch takes `long_run` seconds (the
 * device is saturated long before on a CPU; a GPU needs the large ones). */
static gboolean measure_squares(RokClKernels *kernels, const Timer *t, const RokCalibOptions *o, RokCalibDevice *d,
                                GError **error) {
  const RokClDeviceInfo *info = rok_cl_device_info(rok_cl_kernels_device(kernels));
  guint64 largest = o->quick ? 1024 : 16384;
  double long_run = o->quick ? 0.1 : 0.5;
  for (guint64 n = 128; n <= largest; n *= 2) {
    RokCalibGemm g = {.label = "square", .batch = 1, .m = n, .n = n, .k = n};
    if (!gemm_fits(info, &g))
      break;
    rok_calib_progress(o, "device GEMM %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT, n, n, n);
    if (!measure_gemm(kernels, t, d, &g, error))
      return FALSE;
    if (g.flops / g.rate.median >= long_run)
      break;
  }
  return TRUE;
}

/* Shapes of a transformer layer (hidden 1024, 16 heads, 1024 tokens), each
 * skipped where the rates so far say one launch would take too long. */
static gboolean measure_shapes(RokClKernels *kernels, const Timer *t, const RokCalibOptions *o, RokCalibDevice *d,
                               GError **error) {
  static const RokCalibGemm shapes[] = {
      {.label = "attention Q·Kᵀ", .batch = 16, .m = 512, .n = 512, .k = 64, .trans_b = TRUE},
      {.label = "linear x·W", .batch = 1, .m = 1024, .n = 4096, .k = 1024},
      {.label = "linear dy·Wᵀ", .batch = 1, .m = 1024, .n = 1024, .k = 4096, .trans_b = TRUE},
  };
  const RokClDeviceInfo *info = rok_cl_device_info(rok_cl_kernels_device(kernels));
  double best = 0;
  for (guint i = 0; i < d->gemms->len; i++)
    best = MAX(best, g_array_index(d->gemms, RokCalibGemm, i).rate.median);
  for (guint i = 0; i < (o->quick ? 1 : G_N_ELEMENTS(shapes)); i++) {
    RokCalibGemm g = shapes[i];
    double flops = 2.0 * (double)g.batch * (double)g.m * (double)g.n * (double)g.k;
    if (!gemm_fits(info, &g) || flops / best > (o->quick ? 0.2 : 3.0))
      continue;
    rok_calib_progress(o, "device GEMM %s", g.label);
    if (!measure_gemm(kernels, t, d, &g, error))
      return FALSE;
  }
  return TRUE;
}

/* Small GEMMs whose tile and wave counts step (1, 2, 3, 4, 9, ... tiles of
 * 64×64; ragged edges of other tiles), for the fit of the GEMM model's SMs
 * and tile: their times step where the model's do. Cheap on any device. */
static gboolean measure_probes(RokClKernels *kernels, const Timer *t, const RokCalibOptions *o, RokCalibDevice *d,
                               GError **error) {
  static const guint64 probes[][3] = {{32, 32, 256},   {64, 64, 256},   {96, 96, 256},   {128, 128, 256},
                                      {64, 128, 256},  {64, 192, 256},  {192, 192, 256}, {256, 256, 256},
                                      {320, 64, 256},  {384, 384, 256}, {200, 40, 512},  {512, 512, 64},
                                      {256, 256, 1024}, {512, 512, 256}};
  const RokClDeviceInfo *info = rok_cl_device_info(rok_cl_kernels_device(kernels));
  for (guint i = 0; i < G_N_ELEMENTS(probes); i += o->quick ? 2 : 1) {
    RokCalibGemm g = {.label = "probe", .batch = 1, .m = probes[i][0], .n = probes[i][1], .k = probes[i][2]};
    if (!gemm_fits(info, &g))
      continue;
    rok_calib_progress(o, "device GEMM probe %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT, g.m, g.n,
                       g.k);
    if (!measure_gemm(kernels, t, d, &g, error))
      return FALSE;
  }
  return TRUE;
}

/* The first square whose launch takes 10 ms (long enough to time well,
 * short enough to time again), else the largest; G_MAXUINT if none. */
static guint reference_gemm(const RokCalibDevice *d) {
  guint found = G_MAXUINT;
  for (guint i = 0; i < d->gemms->len; i++) {
    const RokCalibGemm *g = &g_array_index(d->gemms, RokCalibGemm, i);
    if (!g_str_equal(g->label, "square") || g->rate.median <= 0)
      continue;
    found = i;
    if (g->flops / g->rate.median >= 0.01)
      break;
  }
  return found;
}

/* The reference GEMM again, once the other GEMMs and the ops are timed
 * (RokCalibDevice.speed_again). */
static gboolean recheck_speed(RokClKernels *kernels, const Timer *t, const RokCalibOptions *o, RokCalibDevice *d,
                              GError **error) {
  guint i = reference_gemm(d);
  if (i == G_MAXUINT)
    return TRUE;
  RokCalibGemm g = g_array_index(d->gemms, RokCalibGemm, i);
  rok_calib_progress(o, "device GEMM %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT " again", g.m,
                     g.n, g.k);
  if (!time_gemm(kernels, t, d, &g, error))
    return FALSE;
  d->speed_gemm = i;
  d->speed_again = g.rate;
  return TRUE;
}

gboolean rok_calib_measure_compute(RokClKernels *kernels, const RokCalibOptions *o, RokCalibCancel *cancel,
                                   RokCalibDevice *d, GError **error) {
  RokClDevice *cl = rok_cl_kernels_device(kernels);
  Timer t = {.cl = cl, .cancel = cancel, .trials = o->trials, .min_seconds = o->quick ? 0.01 : 0.05};
  rok_calib_progress(o, "device launch overhead");
  if (!measure_launch(kernels, &t, d, error))
    return FALSE;
  rok_calib_progress(o, "device element-wise bandwidth");
  if (!measure_elementwise(kernels, &t, o, d, error))
    return FALSE;
  rok_calib_progress(o, "device checksum");
  return measure_checksum(kernels, &t, o, d, error) && measure_squares(kernels, &t, o, d, error) &&
         measure_shapes(kernels, &t, o, d, error) && measure_probes(kernels, &t, o, d, error) &&
         measure_ops_probed(kernels, &t, o, cancel, d, error) && recheck_speed(kernels, &t, o, d, error);
}

/* The copies timed, the add right before and after them
 * (elementwise_copies, elementwise_copies_around). */
static gboolean measure_copies_probed(RokClKernels *kernels, const RokCalibOptions *o, RokCalibCancel *cancel,
                                      RokCalibDevice *d, GError **error) {
  Timer t = {.cl = rok_cl_kernels_device(kernels), .cancel = cancel, .trials = 1};
  Bracketed b = {.kernels = kernels, .o = o, .cancel = cancel, .d = d};
  g_autoptr(GArray) rates = g_array_new(FALSE, FALSE, sizeof(double));
  guint n[3];
  if (!between_adds(kernels, &t, d, copies_work, &b, rates, n, error))
    return FALSE;
  double *r = (double *)(void *)rates->data;
  d->elementwise_copies_around[0] = rok_calib_stat(r, n[0]);
  d->elementwise_copies_around[1] = rok_calib_stat(r + n[0], n[2]);
  d->elementwise_copies = rok_calib_stat(r, n[0] + n[2]);
  return TRUE;
}

gboolean rok_calib_measure_device(const RokCalibOptions *o, RokCalibCancel *cancel, RokCalibDevice *d,
                                  GError **error) {
  rok_calib_progress(o, "device: opening");
  g_autoptr(RokClDevice) cl = rok_cl_device_open(o->device, error);
  if (cl == NULL)
    return FALSE;
  const RokClDeviceInfo *info = rok_cl_device_info(cl);
  d->name = g_strdup(info->name);
  d->type = g_strdup(info->type);
  d->index = info->index;
  d->compute_units = info->compute_units;
  d->out_of_order = info->out_of_order;
  d->memory = info->global_memory;
  rok_calib_progress(o, "device: building kernels");
  g_autoptr(RokClKernels) kernels = rok_cl_kernels_new(cl, ROK_DTYPE_BF16, error);
  return kernels != NULL && rok_calib_measure_compute(kernels, o, cancel, d, error) &&
         measure_copies_probed(kernels, o, cancel, d, error) && rok_calib_measure_contention(cl, o, cancel, d, error);
}

#endif /* ROK_WITH_OPENCL */
