/* The executor's costs around a copy on a device without a copy engine,
 * measured while the device runs kernels back to back (as it does while
 * `rok execute` offloads): how far into the kernel in progress a copy
 * waits (PoCL gives a command a processor only when one is done with
 * the kernel), and the time a hand-off between two threads takes there
 * (the executor hands every leg to its thread, and the leg's end back to
 * the compute thread), and the host's check of a leg just copied out. A
 * GPU runs copies on its copy engines and its host threads on idle
 * processors: only the checks are timed, nothing beside them. */
#define _GNU_SOURCE /* sched_getcpu, sched_setaffinity, CPU_SET */
#ifdef ROK_WITH_OPENCL

#include <gsl/gsl_sort.h>
#include <math.h>
#include <sched.h>
#include <string.h>

#include "calib-private.h"
#include "rok/calibrate.h"
#include "rok/device.h"
#include "rok/core.h"

#define WAIT_SAMPLES 12
#define WAIT_TRIES (3 * WAIT_SAMPLES)
#define WAIT_KERNELS 6 /* the copy is issued 2 to 2.5 kernels in, and outlasted */
#define MIB ((guint64)1 << 20)
#define HANDOFF_SAMPLES 200
#define GEMM_N 512 /* a kernel of a small transformer layer's size */
#define LAUNCH_COPIES 48
#define LAUNCH_SPAN_S 200e-6 /* copies issued up to this long after a launch */

typedef struct {
  RokClKernels *kernels;
  RokClBuffer *a, *b, *c;
  RokClGemm gemm;
} Busy;

static void busy_clear(Busy *b) {
  g_clear_pointer(&b->a, rok_cl_buffer_free);
  g_clear_pointer(&b->b, rok_cl_buffer_free);
  g_clear_pointer(&b->c, rok_cl_buffer_free);
  g_clear_pointer(&b->kernels, rok_cl_kernels_free);
}

static gboolean busy_init(Busy *b, RokClDevice *cl, GError **error) {
  guint64 n = GEMM_N;
  *b = (Busy){.kernels = rok_cl_kernels_new(cl, ROK_DTYPE_BF16, error)};
  if (b->kernels == NULL)
    return FALSE;
  b->a = rok_cl_buffer_new(cl, ROK_DTYPE_BF16, n * n, "calibrate.busy.A", TRUE, error);
  b->b = b->a ? rok_cl_buffer_new(cl, ROK_DTYPE_BF16, n * n, "calibrate.busy.B", TRUE, error) : NULL;
  b->c = b->b ? rok_cl_buffer_new(cl, ROK_DTYPE_BF16, n * n, "calibrate.busy.C", TRUE, error) : NULL;
  if (b->c == NULL)
    return FALSE;
  b->gemm = (RokClGemm){.batch = 1, .m = n, .n = n, .k = n, .alpha = 1.0f, .beta = 0.0f};
  b->gemm.a = (RokClMatrix){.buffer = b->a, .ld = n, .stride = n * n};
  b->gemm.b = (RokClMatrix){.buffer = b->b, .ld = n, .stride = n * n};
  b->gemm.c = (RokClMatrix){.buffer = b->c, .ld = n, .stride = n * n};
  return rok_cl_fill_uniform(b->kernels, b->a, 7, 5, -1, 1, error) &&
         rok_cl_fill_uniform(b->kernels, b->b, 7, 6, -1, 1, error);
}

/* Keep the compute queue busy with REPS kernels, flushed so they run. */
static gboolean busy_start(Busy *b, RokClDevice *cl, guint reps, GError **error) {
  for (guint r = 0; r < reps; r++)
    if (!rok_cl_gemm(b->kernels, &b->gemm, error))
      return FALSE;
  return rok_cl_device_flush(cl, ROK_CL_QUEUE_COMPUTE, error);
}

/* One of B's kernels, launched and waited for, as the executor's compute
 * thread runs its next action. */
static gboolean busy_kernel(Busy *b, RokClDevice *cl, GError **error) {
  return rok_cl_gemm(b->kernels, &b->gemm, error) && rok_cl_device_finish(cl, ROK_CL_QUEUE_COMPUTE, error);
}

static double now_s(void) {
  return (double)g_get_monotonic_time() / 1e6;
}

/* One 1 MiB copy command out of the device, waited for: the executor's
 * staging slot, the size of most legs of a small model. (A leg of several
 * commands can wait more: a kernel launched meanwhile can run before its
 * next command.) */
static gboolean copy_s(const CalibCopyPair *pair, double *seconds, GError **error) {
  return calib_copy_seconds(pair, 0, MIB, FALSE, seconds, error);
}

/* One of B's kernels' time alone, two back to back. */
static gboolean busy_seconds(Busy *b, RokClDevice *cl, double *seconds, GError **error) {
  double start = now_s();
  if (!busy_start(b, cl, 2, error) || !rok_cl_device_finish(cl, ROK_CL_QUEUE_COMPUTE, error))
    return FALSE;
  *seconds = (now_s() - start) / 2;
  return TRUE;
}

/* Kernels one after the other, each launched when the one before has
 * ended, as the executor's compute thread runs them: with many queued at
 * once PoCL may run several before a copy issued meanwhile. */
typedef struct {
  Busy *busy;
  RokClDevice *cl;
  double start[WAIT_KERNELS], end[WAIT_KERNELS];
  gboolean ok;
  GError *error;
} Chain;

static gpointer chain_run(gpointer data) {
  Chain *c = data;
  c->ok = TRUE;
  for (guint k = 0; c->ok && k < WAIT_KERNELS; k++) {
    c->start[k] = now_s();
    c->ok = busy_kernel(c->busy, c->cl, &c->error);
    c->end[k] = now_s();
  }
  return NULL;
}

/* The kernel in progress at `t`, or -1 (none ran then). */
static gint kernel_at(const Chain *c, double t) {
  for (guint k = 0; k < WAIT_KERNELS; k++)
    if (c->start[k] <= t && t < c->end[k])
      return (gint)k;
  return -1;
}

/* A copy issued at spread points into the first half of a kernel in a
 * run of them: when its wait (its time less the same copy's alone) ended,
 * as a share of that kernel's length, from the kernels' thread's own
 * timestamps. That is when a processor is done with its last work-groups,
 * a little before the kernel ends; it hardly moves with when the copy
 * came (PoCL's trace of validate-gpt's offload row: a worker free at
 * 0.98 of a GEMM's shortest run, whenever the copy came before then),
 * where the share of the remainder waited falls the later the copy comes
 * (0.77 in a GEMM's first quarter, 0.39 in its second, the same trace).
 * A copy issued in the second half may come after that point and say
 * nothing of it. */
static gboolean measure_wait(RokClDevice *cl, Busy *b, RokCalibCancel *cancel, RokCalibStat *stat, GError **error) {
  g_auto(CalibCopyPair) pair = {0};
  double kernel = 0, alone = 0, samples[WAIT_SAMPLES];
  if (!calib_copy_pair_init(&pair, cl, MIB, "calibrate.wait", error) || !busy_seconds(b, cl, &kernel, error))
    return FALSE;
  GRand *rand = g_rand_new_with_seed(17); /* the same points every run */
  gboolean ok = TRUE;
  guint n = 0;
  for (guint i = 0; ok && n < WAIT_SAMPLES && i < WAIT_TRIES; i++) {
    ok = !rok_calib_check_cancelled(cancel, error) && copy_s(&pair, &alone, error);
    if (!ok)
      break;
    Chain chain = {.busy = b, .cl = cl};
    GThread *thread = g_thread_new("rok-calib-kernels", chain_run, &chain);
    g_usleep((gulong)((2 + 0.5 * g_rand_double(rand)) * kernel * 1e6));
    double issued = now_s(), busy = 0;
    ok = copy_s(&pair, &busy, error);
    g_thread_join(thread);
    if (ok && !chain.ok)
      g_propagate_error(error, g_steal_pointer(&chain.error));
    ok = ok && chain.ok;
    g_clear_error(&chain.error); /* the copy failed first: its error is the one reported */
    gint k = kernel_at(&chain, issued);
    double length = k >= 0 ? chain.end[k] - chain.start[k] : 0, into = k >= 0 ? issued - chain.start[k] : 0;
    if (ok && k >= 0 && into < length / 2) /* past the kernel's end: free at its end */
      samples[n++] = MIN((into + MAX(busy - alone, 0)) / length, 1.0);
  }
  g_rand_free(rand);
  if (ok && n == 0)
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "copies beside kernels: none of %u copies came in the first half of a kernel",
                WAIT_TRIES);
  if (ok && n > 0)
    *stat = rok_calib_stat(samples, n);
  return ok && n > 0;
}

/* Copies issued moments after a kernel's launch, before the device's
 * threads are at work on it, may go ahead of it: PoCL's workers take a
 * while to wake to a new kernel, and one that takes the copy first runs
 * it (the development VM, 2026-12-07: 1 MiB copies issued 10-60 us after
 * a 384^3 or 512^3 GEMM's launch went ahead in 42 of 114, none of 30 at
 * once, none of 72 at 100-200 us). LAUNCH_COPIES copies at spread times up to
 * LAUNCH_SPAN_S after a launch (a fixed shuffle, so that a drift in the
 * machine's speed falls on all), each from a thread scheduled as the
 * executor's stream threads are and awake until its time, as a stream
 * thread woken by a read's completion is: one that took less than the
 * copy alone and a quarter of the kernel went ahead. The window is the latest
 * of those (past the latest tenth of them: a stray late one says little),
 * the share how many issued within it went ahead. */
typedef struct {
  RokClDevice *cl;
  Busy *busy;
  RokCalibCancel *cancel;
  double kernel, alone, delay[LAUNCH_COPIES];
  gboolean went[LAUNCH_COPIES], ok;
  GError *error;
} Launch;

static gpointer launch_run(gpointer data) {
  Launch *l = data;
  rok_host_thread_prompt();
  g_auto(CalibCopyPair) pair = {0};
  l->ok = calib_copy_pair_init(&pair, l->cl, MIB, "calibrate.launch", &l->error);
  for (guint i = 0; l->ok && i < LAUNCH_COPIES; i++) {
    double copy = 0;
    l->ok = !rok_calib_check_cancelled(l->cancel, &l->error) && copy_s(&pair, &copy, &l->error);
    l->alone = i == 0 ? copy : MIN(l->alone, copy);
    if (!l->ok)
      break;
    g_usleep(500); /* the device's threads asleep, as between a step's kernels */
    double launched = now_s();
    l->ok = rok_cl_gemm(l->busy->kernels, &l->busy->gemm, &l->error) &&
            rok_cl_device_flush(l->cl, ROK_CL_QUEUE_COMPUTE, &l->error);
    while (l->ok && now_s() < launched + l->delay[i])
      ;
    l->ok = l->ok && copy_s(&pair, &copy, &l->error) &&
            rok_cl_device_finish(l->cl, ROK_CL_QUEUE_COMPUTE, &l->error);
    l->went[i] = copy < l->alone + l->kernel / 4;
  }
  return NULL;
}

static gboolean measure_launch(RokClDevice *cl, Busy *b, RokCalibCancel *cancel, RokCalibDevice *d, GError **error) {
  Launch l = {.cl = cl, .busy = b, .cancel = cancel};
  if (!busy_seconds(b, cl, &l.kernel, error))
    return FALSE;
  GRand *rand = g_rand_new_with_seed(23); /* the same order every run */
  for (guint i = 0; i < LAUNCH_COPIES; i++)
    l.delay[i] = LAUNCH_SPAN_S * (i + 0.5) / LAUNCH_COPIES;
  for (guint i = LAUNCH_COPIES - 1; i > 0; i--) {
    guint j = (guint)g_rand_int_range(rand, 0, (gint32)i + 1);
    double t = l.delay[i];
    l.delay[i] = l.delay[j];
    l.delay[j] = t;
  }
  g_rand_free(rand);
  g_thread_join(g_thread_new("rok-calib-launch", launch_run, &l));
  if (!l.ok) {
    g_propagate_error(error, g_steal_pointer(&l.error));
    return FALSE;
  }
  double went[LAUNCH_COPIES];
  guint n = 0;
  for (guint i = 0; i < LAUNCH_COPIES; i++)
    if (l.went[i])
      went[n++] = l.delay[i];
  d->copy_launch_window = d->copy_launch_ahead = 0;
  if (n == 0)
    return TRUE;
  gsl_sort(went, 1, n);
  double window = went[(guint)floor(0.9 * (n - 1))];
  guint within = 0, ahead = 0;
  for (guint i = 0; i < LAUNCH_COPIES; i++)
    if (l.delay[i] <= window) {
      within++;
      ahead += l.went[i];
    }
  d->copy_launch_window = window;
  d->copy_launch_ahead = (double)ahead / within;
  return TRUE;
}

/* Kernels back to back on a thread of their own, each launched when the
 * one before has ended, from kernels_start until kernels_stop. */
typedef struct {
  Busy *busy;
  RokClDevice *cl;
  GThread *thread;
  gint stop;
  gboolean ok;
  GError *error;
} Kernels;

static gpointer kernels_run(gpointer data) {
  Kernels *k = data;
  while (k->ok && !g_atomic_int_get(&k->stop))
    k->ok = busy_kernel(k->busy, k->cl, &k->error);
  return NULL;
}

static void kernels_start(Kernels *k, Busy *b, RokClDevice *cl) {
  *k = (Kernels){.busy = b, .cl = cl, .ok = TRUE};
  k->thread = g_thread_new("rok-calib-kernels", kernels_run, k);
}

/* FALSE where a kernel failed: ERROR says why, unless it holds an error
 * already. */
static gboolean kernels_stop(Kernels *k, GError **error) {
  g_atomic_int_set(&k->stop, 1);
  g_thread_join(k->thread);
  if (!k->ok && error != NULL && *error == NULL)
    g_propagate_error(error, g_steal_pointer(&k->error));
  g_clear_error(&k->error);
  return k->ok;
}

typedef struct {
  GAsyncQueue *in, *out;
  int cpu;          /* the processor it runs on; -1: any */
  RokHostWake wake; /* what it got, as the executor's stream threads get */
} Echo;

/* Keeps the calling thread on CPU. */
static void pin_to(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  sched_setaffinity(0, sizeof one, &one);
}

/* Every message from `in` back on `out`, until the message 1; scheduled as
 * the executor's stream threads are. */
static gpointer echo(gpointer data) {
  Echo *e = data;
  if (e->cpu >= 0)
    pin_to(e->cpu);
  e->wake = rok_host_thread_prompt();
  for (;;) {
    gpointer m = g_async_queue_pop(e->in);
    g_async_queue_push(e->out, m);
    if (GPOINTER_TO_UINT(m) == 1)
      return NULL;
  }
}

/* Another processor of those this thread may use than the one it is on,
 * and the thread kept on its own (*SAVED: its mask before); -1 (and
 * nothing changed) where it has only one. */
static int other_processor(cpu_set_t *saved) {
  int here = sched_getcpu();
  if (here < 0 || sched_getaffinity(0, sizeof *saved, saved) != 0)
    return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (cpu != here && CPU_ISSET(cpu, saved)) {
      pin_to(here);
      return cpu;
    }
  return -1;
}

/* A message to another thread and back, through the queues the executor
 * uses, while B's kernels run back to back (B may be NULL: nothing
 * beside): a copy leg's, whose thread sleeps between legs (100 us apart
 * here). Beside kernels the two threads are kept on different
 * processors, as the executor's compute thread, busy with the kernels, and
 * a leg's thread are: left free, the scheduler now and then woke the
 * echo on the sender's own processor for a whole calibration (the
 * development VM, 2026-12-04: 3-5 us in 3 of 6 quick calibrations, 40-43
 * in the others, as a step's legs pay), a hand-off no leg gets. The
 * kernels run until the last sample (a batch of 4 once ran out first). */
static gboolean measure_handoff(RokClDevice *cl, Busy *b, RokCalibStat *stat, RokHostWake *wake, GError **error) {
  Kernels k = {0};
  if (b != NULL) {
    kernels_start(&k, b, cl);
    g_usleep(2000); /* the first kernel under way */
  }
  cpu_set_t saved;
  Echo e = {.in = g_async_queue_new(), .out = g_async_queue_new(), .cpu = b != NULL ? other_processor(&saved) : -1};
  GThread *thread = g_thread_new("rok-calib-echo", echo, &e);
  g_autofree double *samples = g_new(double, HANDOFF_SAMPLES);
  for (guint i = 0; i < HANDOFF_SAMPLES; i++) {
    double start = now_s();
    g_async_queue_push(e.in, GUINT_TO_POINTER(2));
    g_async_queue_pop(e.out);
    samples[i] = now_s() - start;
    g_usleep(100);
  }
  g_async_queue_push(e.in, GUINT_TO_POINTER(1));
  g_async_queue_pop(e.out);
  g_thread_join(thread);
  g_async_queue_unref(e.in);
  g_async_queue_unref(e.out);
  if (e.cpu >= 0)
    sched_setaffinity(0, sizeof saved, &saved);
  if (b != NULL && !kernels_stop(&k, error))
    return FALSE;
  *stat = rok_calib_stat(samples, HANDOFF_SAMPLES);
  if (wake != NULL)
    *wake = e.wake;
  return TRUE;
}

gboolean rok_calib_measure_handoff(RokClDevice *cl, RokCalibStat *stat, GError **error) {
  return measure_handoff(cl, NULL, stat, NULL, error);
}

/* The checks of copies beside kernels, as a step's legs run: the copy waits
 * for a processor, and the check shares the memory and the caches with
 * the kernel (the development VM, 2026-12-04: a 16 MiB leg's check at
 * 1.5 GB/s in a step against 2.5-2.9 with nothing else running; 512 KiB
 * 4.1-4.3 against 4.3-7.5). They run on a thread of their own on a short
 * slice, as the executor's d2h thread: on the calling thread's slice a
 * check shared its processor with a kernel's worker for whole trials
 * (2026-12-05: 256 KiB checks 1.1-5.2 GB/s, a mean of 2.3-2.5, where the
 * step's 256 KiB legs checked at about 5.8). */
typedef struct {
  RokClDevice *cl;
  const RokCalibOptions *o;
  RokCalibCancel *cancel;
  RokCalibDevice *d;
  gboolean ok;
  GError *error;
} Checks;

static gpointer checks_run(gpointer data) {
  Checks *c = data;
  rok_host_thread_prompt();
  c->ok = rok_calib_measure_copied_checks(c->cl, c->o, c->cancel, c->d, &c->error);
  return NULL;
}

static gboolean measure_checks(RokClDevice *cl, Busy *b, const RokCalibOptions *o, RokCalibCancel *cancel,
                               RokCalibDevice *d, GError **error) {
  Kernels k = {0};
  Checks c = {.cl = cl, .o = o, .cancel = cancel, .d = d};
  kernels_start(&k, b, cl);
  g_thread_join(g_thread_new("rok-calib-checks", checks_run, &c));
  if (!c.ok)
    g_propagate_error(error, g_steal_pointer(&c.error));
  return kernels_stop(&k, error) && c.ok;
}

gboolean rok_calib_measure_contention(RokClDevice *cl, const RokCalibOptions *o, RokCalibCancel *cancel,
                                      RokCalibDevice *d, GError **error) {
  if (g_strcmp0(d->type, "cpu") != 0) {
    rok_calib_progress(o, "checks of copies");
    return rok_calib_measure_copied_checks(cl, o, cancel, d, error);
  }
  rok_calib_progress(o, "copies, hand-offs and checks beside kernels");
  Busy b;
  gboolean ok = busy_init(&b, cl, error) && measure_wait(cl, &b, cancel, &d->copy_kernel_free_at, error) &&
                measure_launch(cl, &b, cancel, d, error) &&
                measure_handoff(cl, &b, &d->handoff, &d->handoff_wake, error) &&
                measure_checks(cl, &b, o, cancel, d, error);
  busy_clear(&b);
  d->contention = ok;
  return ok;
}

#endif /* ROK_WITH_OPENCL */
