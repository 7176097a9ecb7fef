/* rok calibrate: measure this machine into a hardware profile.
 *
 * What is measured, and how (REFERENCES.md, "Measurement practice"):
 *
 *   host     memcpy bandwidth (one thread, large buffers, median of trials);
 *            the executor's host checksum rate; memory from sysconf
 *                                                            calib-memcpy.c
 *   device   rok's own bf16 GEMM kernel over sizes (doubling squares until
 *            one launch takes long, transformer-like shapes, small probes
 *            of tile and wave steps); the element-wise add kernel over
 *            large buffers: hbm_bandwidth; back-to-back tiny kernels: the
 *            launch overhead; global memory                  calib-compute.c
 *   ops      every op of small GPT and LLaMA layers (or of one layer of
 *            --model), forward and backward, through the executor's op
 *            interpreter: a rate curve per op kind and direction
 *                                                            calib-ops.c
 *   fit      the simulator's GEMM model (SMs, tile, full-wave rate; the
 *            element-wise roofline) fitted to every GEMM timed, alone and
 *            as the layers' GEMM ops                         calib-fit.c
 *   copies   host <-> device through pinned host buffers (pcie.*)
 *                                                            calib-copy.c
 *   disks    per directory: a fresh rok-XXXXXX work folder (stale ones swept,
 *            removed on exit, error and Ctrl-C), one data file laid out with
 *            random data, then over a grid of block sizes × queue depths:
 *            O_DIRECT sequential overwrites through io_uring timed through
 *            fdatasync, the cache dropped (posix_fadvise DONTNEED), reads;
 *            best median per direction; QD1 4 KiB random reads: latency
 *                                                            calib-disk.c
 *   checks   virtual disks (sysfs), figures that look cached, two
 *            directories on one file system                  calib-checks.c
 *
 * rok_calib_profile() turns the measurements into a RokHw
 * (calib-profile.c); rok_calibrate() runs everything in order with Ctrl-C
 * handling (calib-run.c). Timed figures are RokCalibStat: the median of the
 * trials, with their spread. */
#pragma once

#include <glib.h>

#include "rok/storage.h"
#include "rok/hw.h"
#include "rok/trace.h"

G_BEGIN_DECLS

#define ROK_CALIB_MAX_GRID 8
#define ROK_CALIB_MAX_ATTEMPTS 10

/* Called with a short line saying what is being measured now. */
typedef void (*RokCalibProgressFunc)(const char *what, gpointer user_data);

typedef struct {
  const char *const *dirs; /* NULL-terminated, one per disk; NULL or empty: no disks (no nvme section) */
  gint device;             /* OpenCL device index; < 0: the default one */
  gboolean quick;          /* small sizes, short passes: seconds, for tests */
  guint trials;            /* timed trials per figure; 0: 3 */
  guint64 file_bytes;      /* data file per directory; 0: 1 GiB (quick: 128 MiB) */
  /* The disk grid; counts 0: 128 KiB, 1 MiB, 4 MiB × QD 1, 8, 32 (quick:
   * 128 KiB, 1 MiB × QD 1, 32). Blocks are multiples of 4 KiB. */
  guint64 blocks[ROK_CALIB_MAX_GRID];
  guint n_blocks;
  guint queue_depths[ROK_CALIB_MAX_GRID];
  guint n_queue_depths;
  double pass_seconds; /* a timed disk pass stops issuing after this; 0: 2 s (quick 0.2 s) */
  /* --model: one layer of the user's model (its trace, made with layers =
   * 1), whose ops are timed instead of the calibration layers, so that the
   * GEMM model is fitted to and the op rates measured at its own shapes.
   * NULL: the calibration layers of doubling width. Borrowed. */
  const RokTrace *model;
  RokCalibProgressFunc progress;
  gpointer progress_data;
  /* The process's signal watch, sent to the calibration's cancellation
   * while it measures and given back after (rok_signal_watch_retarget).
   * NULL: rok_calibrate() makes a watch of its own for that while, which
   * must then be before any other thread starts. Borrowed. */
  RokSignalWatch *signals;
  /* Processors kept busy while the disks are timed (rok_calib_busy_start);
   * 0: none. rok_calibrate() sets it to the processors' count for a CPU
   * device, whose kernels keep them busy while a step's SSD legs run. */
  guint busy_processors;
  /* Measure again while the machine's speed moved, up to this many times
   * in all, keeping the steadiest (rok_calib_unsteadiness): 0: 1 (once). */
  guint attempts;
} RokCalibOptions;

/* Defaults (see above), nothing measured yet. */
void rok_calib_options_init(RokCalibOptions *options);
/* Fills the defaults in and checks the grid and sizes (ROK_ERROR_USAGE
 * naming the option). */
gboolean rok_calib_options_resolve(RokCalibOptions *options, GError **error);

/* The median of a figure's trials and their spread. */
typedef struct {
  double median, min, max;
  guint n;
} RokCalibStat;

/* Of N values (reordered in place); all zero for n = 0. */
RokCalibStat rok_calib_stat(double *values, guint n);

/* ---- Measurements ------------------------------------------------------ */

typedef struct {
  guint64 memory;       /* bytes of RAM */
  guint64 memcpy_bytes; /* per copy */
  RokCalibStat memcpy;  /* bytes/s */
  RokCalibStat checksum; /* bytes/s: the executor's host checksum, one thread */
} RokCalibHost;

typedef struct {
  const char *label; /* "square", "linear x·W", ... (static) */
  guint64 batch, m, n, k;
  gboolean trans_b;
  double flops;      /* per launch: 2·batch·m·n·k */
  RokCalibStat rate; /* FLOP/s, launch overhead taken out */
} RokCalibGemm;

/* One op of a calibration model in one direction: the work the trace
 * counts for it (rok_op_work; a rebuild: the mask's bytes) and the
 * rate its kernels reached. */
typedef struct {
  char *label; /* the calibration model: "calibrate-gpt-256" */
  RokOpKind kind;
  RokHwDirection direction; /* forward, backward, or a mask's rebuild from the seed */
  guint64 dims[4];          /* the op's [batch, m, n, k] (trace.h) */
  double work;
  double bytes;             /* what the trace counts the op moving in this direction */
  RokCalibStat rate; /* work per second, launch overhead taken out */
  /* A GEMM op's backward on a CPU device: when a copy handed over early
   * in it found a processor free (its first kernel done), as a share of
   * its time; n = 0: not measured. */
  RokCalibStat first_free;
} RokCalibOp;

/* Leg sizes whose check after a copy is timed: 64 KiB to 16 MiB. */
#define ROK_CALIB_CHECK_SIZES 5

typedef struct {
  char *name;
  char *type; /* "gpu", "cpu", ... */
  guint index;
  guint compute_units;
  gboolean out_of_order; /* its copy queues run out of order (RokClDeviceInfo) */
  guint64 memory;           /* global memory, bytes */
  GArray *gemms;            /* RokCalibGemm, in the order measured */
  guint64 elementwise_bytes; /* moved per add launch (2 read + 1 written) */
  RokCalibStat elementwise; /* bytes/s */
  /* The same add launched once and waited for, before each timed pass of
   * the ops (their rates are medians over the passes), and five times
   * right before and right after them: a VM's host can slow the memory
   * for seconds while the GEMMs before and after run at their speed
   * (2026-12-05: element-wise ops at half their rate, the reference GEMM
   * within 1% at both ends). `elementwise` itself, the first thing timed,
   * is no reference: 13.8-25.7 GB/s in five calibrations where these took
   * 24.4-25.5 on the development VM. n = 0: not timed. */
  RokCalibStat elementwise_ops, elementwise_around; /* bytes/s */
  /* The same add five times right before and right after the copies are
   * timed, all ten: how fast the memory went then against the ops
   * (rok_calib_copies_memory_speed); and the five before [0] and after
   * [1] apart (rok_calib_copies_memory_change). n = 0: not timed. */
  RokCalibStat elementwise_copies; /* bytes/s */
  RokCalibStat elementwise_copies_around[2];
  RokCalibStat launch;      /* seconds per tiny kernel, back to back */
  /* The device's checksum of a tensor as the executor takes it after a
   * forward (two kernels, the value read back): seconds per tensor
   * besides its bytes, and bytes/s; 0 when not measured. */
  double checksum_overhead, checksum_bandwidth;
  GArray *ops;              /* RokCalibOp, in the order measured */
  guint64 copy_bytes;
  gboolean pinned;          /* host buffers were CL_MEM_ALLOC_HOST_PTR (else wrapped host memory) */
  RokCalibStat h2d, d2h;    /* bytes/s */
  /* A CPU device only: each direction's rate over copies of a staging
   * slot's size or less at successive places, as a step's legs copy
   * (bytes/s, the slope of their times); 0: not measured. */
  double h2d_legs, d2h_legs;
  RokCalibStat copy_latency; /* seconds of a 4 KiB copy */
  /* The host's check of a leg's bytes right after their copy out of the
   * device, as the executor's d2h thread takes it, over legs of
   * copied_check_bytes[i], smallest first: each trial's bytes/s, and the
   * bytes over the time of all (the mean a prediction needs); n 0: not
   * timed (a device too small for that size, and those after it). */
  guint64 copied_check_bytes[ROK_CALIB_CHECK_SIZES];
  RokCalibStat copied_check[ROK_CALIB_CHECK_SIZES];
  double copied_check_rate[ROK_CALIB_CHECK_SIZES];
  double copy_cpu;           /* this process's processor seconds per 4 KiB copy (getrusage); 0: unknown */
  /* A CPU device only (calib-contention.c), while kernels run: a copy's
   * wait for the processors, and a hand-off to another thread and back;
   * contention FALSE when not measured. */
  RokCalibStat copy_kernel_free_at; /* when a copy's wait ended, over the kernel's length */
  /* Copies issued moments after a kernel's launch: how long after it one
   * still went ahead of the kernel (seconds; 0: none did), and the share
   * of those issued within that time that did. */
  double copy_launch_window, copy_launch_ahead;
  RokCalibStat handoff;   /* seconds */
  RokHostWake handoff_wake; /* how the thread handed to was scheduled */
  gboolean contention;
  /* Another device (a GPU): what the executor pays per action beyond the
   * kernel, a tiny kernel launched and waited for plus a hand-off to the
   * compute thread and back (which looks for its next action before it
   * sleeps; nothing competing); per copy leg, the same with a hand-off to a
   * thread that sleeps between legs. 0 when not measured. */
  double action_overhead, leg_action_overhead; /* seconds */
  /* The reference GEMM, gemms[speed_gemm] (the first square of 10 ms a
   * launch, else the largest), timed again once the GEMMs and ops are
   * timed (before the copies): a virtual machine's host or a power limit can change the speed
   * while they are taken, and the profile would mix both. n = 0: not
   * timed again. */
  guint speed_gemm;
  RokCalibStat speed_again; /* FLOP/s */
} RokCalibDevice;

typedef struct {
  guint64 block;
  guint queue_depth;
  RokCalibStat write, read; /* bytes/s */
} RokCalibDiskPoint;

/* REQUESTS requests of REQUEST_BYTES submitted together after GAP_S with
 * the disk idle, as the executor submits a leg's (GAP_S 0: from the last
 * completion of a burst like it, itself after the shortest gap, as the
 * executor begins a leg the end of another made ready): seconds to the last
 * completion, and the processor time this process spent on it (getrusage:
 * the submitting thread, the backend's thread and the kernel's work on
 * their behalf); medians over the repetitions. */
typedef struct {
  guint requests;
  guint64 request_bytes;
  double gap_s;
  RokCalibStat write, read;
  RokCalibStat write_cpu, read_cpu;
} RokCalibBurst;
#define ROK_CALIB_MAX_BURSTS 12

/* What an SSD leg pays more after the disk has been idle AFTER seconds or
 * longer, writing and reading (seconds): one level per gap the bursts
 * were timed after beyond the shortest (a drive's deeper power state, a
 * virtual disk's host thread deeper asleep). */
typedef struct {
  double after, write, read;
} RokCalibWake;
#define ROK_CALIB_WAKES 2

/* What an SSD leg of N requests of B bytes takes, fitted to the bursts:
 * fixed + N * request + N * B / rate, fixed and rate the direction's
 * ([0] writes, [1] reads); the simulator's nvme.write_latency and latency,
 * request_overhead, write_bandwidth and read_bandwidth. */
typedef struct {
  gboolean fitted;
  double fixed[2];   /* seconds */
  double request;    /* seconds */
  double rate[2];    /* bytes/s */
} RokCalibLegFit;

typedef struct {
  char *dir;
  guint64 st_dev;        /* the file system's device number */
  char *disk;            /* block device ("vda"); NULL when unknown */
  char *virtual_reason;  /* why the disk is virtual or not a disk; NULL: it looks real */
  char *backend;         /* "io_uring" or "psync" */
  gboolean direct;       /* O_DIRECT (else buffered, with a warning) */
  guint64 file_bytes;
  guint64 capacity;      /* bytes of the file system (statvfs) */
  GArray *points;        /* RokCalibDiskPoint, blocks outer, queue depths inner */
  guint best_write, best_read; /* indexes into points: highest median */
  RokCalibStat latency;  /* seconds, QD1 4 KiB random reads */
  RokCalibStat write_latency; /* seconds, QD1 4 KiB random writes */
  guint busy_processors; /* spinners beside every figure of this disk (RokCalibOptions) */
  double busy_seconds;   /* the processor time they took */
  /* Bursts shaped like the executor's SSD legs, and what they say a leg
   * costs (rok_calib_disk_fit_legs; fitted FALSE when none was timed) and
   * the disk's wakes, shallowest first (rok_calib_disk_fit_wakes; n_wakes
   * 0 when not timed). */
  guint n_bursts;
  RokCalibBurst bursts[ROK_CALIB_MAX_BURSTS];
  RokCalibLegFit legs;
  RokCalibWake wakes[ROK_CALIB_WAKES];
  guint n_wakes;
  /* What a leg begun from the completion of another takes less than one
   * after the shortest gap, writes then reads (seconds,
   * rok_calib_disk_fit_warm; warm_fitted FALSE: not timed). */
  double warm[2];
  gboolean warm_fitted;
  /* Legs joined by another (4 x 1 MiB, then 64 KiB a quarter of the way
   * through), writes then reads: the second's time over the rest of the
   * first's (n 0: not timed); completes_together when both medians are
   * 0.6 or more (the simulator's nvme.completes_together). */
  RokCalibStat join_ratio[2];
  gboolean completes_together;
  /* The bursts after 1 ms idle timed again after all the rest, in rounds
   * of one of each, writes then reads: each round's time over the sum of
   * the same bursts' medians at first (n 0: not timed;
   * rok_calib_disk_change). */
  RokCalibStat again[2];
  /* What the processor time of the bursts says a leg and a request take
   * (seconds, rok_calib_disk_fit_cpu). */
  double request_cpu, leg_cpu;
} RokCalibDisk;

/* The grid point whose WRITE (else read) rate is the profile's: the best
 * of those of ROK_HW_NVME_REQUEST_BYTES blocks, the executor's requests
 * (a disk may do better at other sizes it never gets: the development
 * VM's virtio disk 4.3 GB/s writes at 128 KiB QD 32 against 3.8 at 1 MiB,
 * whose legs the executor's 1-16 MiB took 20-30% longer than predicted
 * from the former), else the best of all; NULL without points. */
const RokCalibDiskPoint *rok_calib_disk_rate_point(const RokCalibDisk *d, gboolean write);
void rok_calib_disk_clear(RokCalibDisk *disk);
/* The leg model that best predicts D's bursts after the shortest gap: a
 * leg of N requests of B bytes takes fixed + N * (request + B / rate),
 * fixed and rate the direction's, rate at most its ceiling
 * (rok_calib_disk_leg_ceiling: bursts streaming slower, a per-MiB cost,
 * lower it); weighted least squares of the errors
 * relative to each burst's time weighted by that time (weights 1 / t: a
 * stream's time is the sum of its legs', so a 16 MiB leg's 10% counts
 * more than a 64 KiB one's), every figure at least 0 (one the bursts
 * cannot tell apart is 0; a fixed part below the disk's random 4 KiB
 * latency is taken as fitted: sequential bursts answer sooner). FALSE
 * (fitted FALSE, all 0) without bursts or grid points. */
gboolean rok_calib_disk_fit_legs(const RokCalibDisk *d, RokCalibLegFit *fit);
/* The fastest D's legs may stream writing (else reading), bytes/s: its
 * rate point's (rok_calib_disk_rate_point), or where the largest burst
 * after the shortest gap moved its bytes faster in its time, that rate
 * (a floor on what the bursts stream at: their fixed part is in it). The
 * grid's passes stream for seconds, which the executor's legs never do:
 * on the development VM, 2026-12-06, a full calibration's 2 s passes
 * wrote 5.1 GB/s at 1 MiB while its bursts moved 7.0 from 1 to 16 MiB, and
 * a fit held at the former gave a leg's fixed part 47 us where the bursts'
 * own line has 96, so validate's small write legs came out 32-74% short.
 * 0 without grid points. */
double rok_calib_disk_leg_ceiling(const RokCalibDisk *d, gboolean write);
/* nvme.wake_* and deep_wake_*: for each gap beyond the shortest (up to
 * ROK_CALIB_WAKES, shortest first), what a lone request took more after it
 * than after the shortest, the median over request sizes, at least 0 and
 * at least the shallower level's (a deeper sleep wakes no sooner); after:
 * the gap's and the one before's geometric mean. WAKES gets *N levels;
 * FALSE (*N 0) without bursts after two gaps. */
gboolean rok_calib_disk_fit_wakes(const RokCalibDisk *d, RokCalibWake *wakes, guint *n);
/* nvme.warm_write and warm_read: what a lone request begun from the last
 * completion of one like it (a chained burst) took less than one after
 * the shortest gap, the median over request sizes timed both ways, at
 * least 0, writes into WARM[0], reads into WARM[1]; FALSE (both 0) where
 * no size was. */
gboolean rok_calib_disk_fit_warm(const RokCalibDisk *d, double warm[2]);
/* The simulator's nvme.request_cpu and nvme.leg_cpu: the processor time
 * of a burst of N requests (after the shortest gap) taken as leg + N *
 * request, least squares over both directions' medians (0 with one burst
 * size). FALSE (both 0) without bursts. */
gboolean rok_calib_disk_fit_cpu(const RokCalibDisk *d, double *request, double *leg);

/* One attempt of rok_calibrate(): rok_calib_unsteadiness and its WHAT
 * (a static string; NULL: steady). */
typedef struct {
  double unsteadiness;
  const char *what;
} RokCalibAttempt;

typedef struct {
  gboolean quick;
  guint trials;
  char *model_name; /* --model's, whose layer was timed; NULL: the calibration layers */
  double load[2];   /* 1-minute load average before and after (0: not read) */
  double others_share; /* of the processors, used by other processes during the run; negative: unknown */
  guint cpus;       /* processors online */
  RokCalibHost host;
  RokCalibDevice device;
  GArray *disks;       /* RokCalibDisk, in --dir order */
  GPtrArray *warnings; /* strings for the user, in the order found */
  /* rok_calibrate() measured `attempts` times (RokCalibOptions.attempts)
   * and kept this, attempt number `attempt` (from 1): what each one's
   * rok_calib_unsteadiness said, in order. 0 / NULL: not from
   * rok_calibrate(). */
  gsize attempts;
  guint attempt;
  RokCalibAttempt *seen;
} RokCalibration;

RokCalibration *rok_calibration_new(void);
void rok_calibration_free(RokCalibration *calibration);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokCalibration, rok_calibration_free)

/* ---- Cancellation ------------------------------------------------------ */

/* Ctrl-C: a flag every measurement loop polls, and the disk backend now
 * running, cancelled at once so that a long pass ends early. */
typedef struct {
  GMutex lock;
  gint cancelled; /* atomic */
  RokIoBackend *backend;
} RokCalibCancel;

void rok_calib_cancel_init(RokCalibCancel *cancel);
void rok_calib_cancel_clear(RokCalibCancel *cancel);
void rok_calib_cancel_now(RokCalibCancel *cancel);
/* Registers the running backend (NULL when it stops). */
void rok_calib_cancel_set_backend(RokCalibCancel *cancel, RokIoBackend *backend);
/* TRUE (with ROK_ERROR_CANCELLED) once cancelled. CANCEL may be NULL. */
gboolean rok_calib_check_cancelled(RokCalibCancel *cancel, GError **error);

/* ---- The parts ---------------------------------------------------------- */

void rok_calib_progress(const RokCalibOptions *options, const char *format, ...) G_GNUC_PRINTF(2, 3);

gboolean rok_calib_measure_host(const RokCalibOptions *options, RokCalibCancel *cancel, RokCalibHost *host,
                                GError **error);
/* Device index options->device; ROK_ERROR_DEVICE when the build has no
 * OpenCL or the machine no device. */
gboolean rok_calib_measure_device(const RokCalibOptions *options, RokCalibCancel *cancel, RokCalibDevice *device,
                                  GError **error);
/* Seconds the executor pays per action beyond the kernel: the measured
 * action overhead where there is one, else the back-to-back launch
 * (calib-compute.c; the profile takes it with or without OpenCL). */
double rok_calib_action_seconds(const RokCalibDevice *device);
#ifdef ROK_WITH_OPENCL
typedef struct _RokClDevice RokClDevice;
typedef struct _RokClKernels RokClKernels;
/* GEMM curve, element-wise bandwidth and launch overhead with an open
 * device's kernels (calib-compute.c); pinned host <-> device copies
 * (calib-copy.c). */
gboolean rok_calib_measure_compute(RokClKernels *kernels, const RokCalibOptions *options, RokCalibCancel *cancel,
                                   RokCalibDevice *device, GError **error);
/* Run before each timed pass of the ops: the caller's check of the
 * machine's speed meanwhile. */
typedef gboolean (*RokCalibProbe)(gpointer data, GError **error);
/* Every op of calibration layers of doubling sizes (calib-ops.c); PROBE
 * (may be NULL) before each timed pass. */
gboolean rok_calib_measure_ops(RokClKernels *kernels, const RokCalibOptions *options, RokCalibCancel *cancel,
                               RokCalibDevice *device, RokCalibProbe probe, gpointer probe_data, GError **error);
gboolean rok_calib_measure_copies(RokClDevice *cl, const RokCalibOptions *options, RokCalibCancel *cancel,
                                  RokCalibDevice *device, GError **error);
/* The host's check of legs of 64 KiB to 16 MiB right after their copy out
 * of the device (calib-copy.c): device->copied_check. */
gboolean rok_calib_measure_copied_checks(RokClDevice *cl, const RokCalibOptions *options, RokCalibCancel *cancel,
                                         RokCalibDevice *device, GError **error);
/* On a CPU device, copies, hand-offs and the checks of copies beside
 * running kernels (calib-contention.c); on another device the checks
 * alone, nothing else running (its copies land in host memory by DMA and
 * its kernels leave the host's processors idle). */
/* A message to another thread and back through a GAsyncQueue, nothing else
 * running, the other thread asleep between messages as a leg's thread is
 * (calib-contention.c). */
gboolean rok_calib_measure_handoff(RokClDevice *cl, RokCalibStat *stat, GError **error);
gboolean rok_calib_measure_contention(RokClDevice *cl, const RokCalibOptions *options, RokCalibCancel *cancel,
                                      RokCalibDevice *device, GError **error);
#endif
/* N child processes ("spinners") streaming through ROK_CALIB_BUSY_BYTES
 * of memory each, ROK_CL_CPU_WORKER_NICE nice levels below this thread
 * (the CPU device's worker threads' level) until stopped: the processors
 * and caches a CPU device's kernels keep busy during a step, while the
 * disks are timed (calib-busy.c says why). Stopping returns the processor
 * time they took, which is not another process's load. They die with the
 * thread that started them (PR_SET_PDEATHSIG), so start them from one
 * that outlives their use. */
#define ROK_CALIB_BUSY_BYTES ((guint64)4 << 20)
typedef struct _RokCalibBusy RokCalibBusy;
RokCalibBusy *rok_calib_busy_start(guint n);
guint rok_calib_busy_processes(const RokCalibBusy *busy);
double rok_calib_busy_stop(RokCalibBusy *busy);

/* One directory; what it gave up (O_DIRECT, io_uring) and stale folders it
 * swept go to NOTES. Leaves nothing behind, on error and cancellation too.
 * With options->busy_processors, timed beside that many spinners. */
gboolean rok_calib_measure_disk(const char *dir, const RokCalibOptions *options, RokCalibCancel *cancel,
                                RokCalibDisk *disk, GPtrArray *notes, GError **error);

/* How fast the disk under DIR runs its bursts now against HW's leg model
 * (nvme.latency or write_latency, leg_overhead or write_leg_overhead,
 * request_overhead and request_overhead_per_mib, the bandwidths: what rok
 * calibrate fitted to the same bursts, and a hand-written profile's
 * figures as the simulator uses them): ROUNDS rounds of bursts after
 * 1 ms idle of 1 and 4 requests of 1 MiB and 256 KiB and one of 64 KiB, as
 * rok calibrate times them (beside gpu.shared_cpus spinners), writes then
 * reads, each direction's summed medians over what the model gives them:
 * RATIO[0] writes, [1] reads (1.25: 25% slower than the profile). On a
 * file of its own in a work folder under DIR, removed after. */
gboolean rok_calib_disk_speed(const char *dir, const RokHw *hw, guint rounds, RokCalibCancel *cancel,
                              double ratio[2], GError **error);

/* How fast the copies of the OpenCL device DEVICE (-1: the default) run
 * now against HW's pcie rates: the copies rok calibrate times a CPU
 * device's leg rates with (256 KiB, 512 KiB and 1 MiB, nine of each, 1 ms
 * apart, each at the next place in the buffers), each direction's summed
 * median times over what pcie.latency and its bandwidth give them:
 * RATIO[0] d2h, [1] h2d (1.25: 25% slower than the profile).
 * ROK_ERROR_DEVICE when the build has no OpenCL or the machine no device. */
gboolean rok_calib_copy_speed(gint device, const RokHw *hw, RokCalibCancel *cancel, double ratio[2],
                              GError **error);

/* Every op of TRACE timed on the OpenCL device DEVICE (-1: the default)
 * as rok calibrate times its op rates (calib-ops.c), again and again: the
 * trace's tensors all on the device, made once with a warm-up pass; each
 * pass runs its ops one at a time as the executor's compute thread runs
 * them (forward in order, each dropout's mask rebuilt, backward in
 * reverse), each launched and waited for. NULL with ROK_ERROR_USAGE where
 * the trace needs more of the device's memory than leaves BESIDE bytes
 * for other work (the runs it is timed between), ROK_ERROR_DEVICE when
 * the build has no OpenCL or the machine no device. */
typedef struct _RokCalibOpTimer RokCalibOpTimer;
RokCalibOpTimer *rok_calib_op_timer_new(gint device, const RokTrace *trace, guint64 beside, GError **error);
void rok_calib_op_timer_free(RokCalibOpTimer *timer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokCalibOpTimer, rok_calib_op_timer_free)
/* One pass: SECONDS ([op * ROK_HW_DIRECTIONS + direction]) gets each op's
 * time in each direction (0 where it has no such direction). */
gboolean rok_calib_op_timer_pass(RokCalibOpTimer *timer, RokCalibCancel *cancel, double *seconds, GError **error);

/* ---- Checks ------------------------------------------------------------- */

/* How the reference GEMM's rate timed again at the end differs from its
 * first (-0.2: 20% slower at the end); NAN where it was not timed again. */
double rok_calib_speed_change(const RokCalibDevice *device);
/* How the element-wise add's rate between the op passes (the median)
 * differs from its rate right before and after them; NAN where not
 * timed. */
double rok_calib_elementwise_change(const RokCalibDevice *device);
/* The element-wise add's rate around the copies over its rate between the
 * op passes (1.1: the memory 10% faster while the copies were timed than
 * while the ops were); 0 where either was not timed. */
double rok_calib_copies_memory_speed(const RokCalibDevice *device);
/* How the element-wise add's rate right after the copies differs from its
 * rate right before them (-0.2: 20% slower after); NAN where not timed.
 * Beyond ROK_CALIB_SPEED_CHANGE either way, rok_calib_check warns that the
 * memory's speed changed while the copies were timed. */
double rok_calib_copies_memory_change(const RokCalibDevice *device);

/* How much longer (> 0) or shorter the disk's bursts took when timed
 * again at the end in direction WRITE (else read), as a fraction; NaN
 * when they were not timed again. Beyond ROK_CALIB_SPEED_CHANGE either
 * way, rok_calib_check warns that the disk's speed changed. */
double rok_calib_disk_change(const RokCalibDisk *disk, gboolean write);
/* Beyond this either way, rok_calib_check warns that the speed changed. */
#define ROK_CALIB_SPEED_CHANGE 0.10

/* How unsteady the machine was while C was measured: the largest of the
 * changes rok_calib_check warns of (the reference GEMM's speed at the end,
 * the element-wise add's between the op passes and across the copies,
 * each disk's bursts timed
 * again: beyond ROK_CALIB_SPEED_CHANGE) and the share of the processors
 * others used (beyond ROK_HOST_BUSY_SHARE), as a fraction; 0: none beyond
 * its limit. *WHAT (may be NULL) gets which, in words (NULL for 0).
 * `rok calibrate --attempts` keeps the attempt where it is least. */
double rok_calib_unsteadiness(const RokCalibration *c, const char **what);

/* Why a block device is virtual, from what sysfs says of it (any may be
 * NULL): the vendor or model naming QEMU, VirtIO, VMware, Xen, Hyper-V or
 * the virtio PCI vendor 0x1af4, a device path through a virtio bus or a
 * Xen/Hyper-V one, or a name of a memory or loop device (zram, ram, loop).
 * NULL when it looks like a real disk. */
char *rok_calib_virtual_reason(const char *name, const char *vendor, const char *model, const char *device_path);
/* The whole disk under the file system of DIR, looked up in SYS_ROOT
 * ("/sys"; a test gives a fake tree): *disk gets its name (NULL when the
 * file system has no block device, e.g. tmpfs, overlay, NFS), and the
 * result is the reason it is virtual or not a disk (NULL: looks real). */
char *rok_calib_disk_kind(const char *sys_root, const char *dir, char **disk);
/* Warnings for figures that cannot be a disk's (reads or writes above
 * 20 GB/s or above memcpy: a cache), for virtual disks, for directories
 * that share a file system, and for a machine busy with other work (load
 * average above half its processors): appended to c->warnings. */
void rok_calib_check(RokCalibration *c);

/* ---- The GEMM model ---------------------------------------------------- */

/* One timed GEMM op for the fit: how its GEMMs map onto thread blocks, its
 * dims [batch, m, n, k], the direction, the FLOPs and bytes of that
 * direction, and its seconds with the launch overhead taken out. */
typedef struct {
  RokHwGemmShape shape;
  guint64 dims[4];
  gboolean backward;
  double flops, bytes, seconds;
  double weight; /* of its squared log error in the fit; 0 counts as 1 */
} RokCalibGemmObs;

/* The GEMM model (rok_hw_gemm_op_seconds) fitted to timings. */
typedef struct {
  guint64 sm_count, tile[2];
  double rate;                      /* FLOP/s of full waves: peak_flops · matmul_efficiency */
  double rms_log_error;             /* weighted root mean square of log(model / measured) */
  double median_error, worst_error; /* of |model / measured - 1| */
} RokCalibGemmFit;

/* The SMs (1 to max_sms), the tile (rows and columns each 8 to 256, powers
 * of two) and the rate of full waves whose model times are closest to the
 * observed ones in squared log error, with hbm_bandwidth the roofline's
 * bandwidth (calib-fit.c). FALSE without observations or with one that is
 * not positive. */
gboolean rok_calib_fit_gemm(const RokCalibGemmObs *obs, guint n, double hbm_bandwidth, guint max_sms,
                            RokCalibGemmFit *fit);
/* A profile holding only what the GEMM model reads (no names, no other
 * sections, nothing to free): the fit's SMs and tile, its rate as
 * peak_flops at matmul_efficiency 1, and the roofline's bandwidth. */
RokHw rok_calib_gemm_fit_hw(const RokCalibGemmFit *fit, double hbm_bandwidth);
/* The median and largest |model / measured - 1| of HW's GEMM model over
 * the observations. */
void rok_calib_gemm_errors(const RokHw *hw, const RokCalibGemmObs *obs, guint n, double *median, double *worst);
/* The op kinds whose kernels are rok's GEMM, which the fitted model times
 * (linear, attn_scores, attn_context): a calibrated profile carries no
 * measured rates for them, but their times by shape. */
gboolean rok_calib_kind_fitted(RokOpKind kind);
/* Whether a timed op is one of those GEMM ops, with a shape and a time in
 * a forward or backward (what the fit and calibrated_shapes.gemm_ops take). */
gboolean rok_calib_op_fitted(const RokCalibOp *op);
/* A calibration's observations: the GEMMs timed alone first (*n_gemms of
 * them), then the fitted kinds' ops in each direction (those with a shape:
 * no dimension 0); when there are both,
 * each group weighs half of the fit (a few ops of --model's layer count as
 * much as the many GEMMs timed alone). */
RokCalibGemmObs *rok_calib_gemm_observations(const RokCalibDevice *d, guint *n, guint *n_gemms);

/* The fit of a calibration, and how well the GEMMs timed alone predict the
 * layers' GEMM ops (held out of that fit). */
typedef struct {
  guint n_gemms, n_ops;
  RokCalibGemmFit fit;        /* to every observation */
  RokCalibGemmFit kernel_fit; /* to the GEMMs timed alone */
  double held_out_median, held_out_worst; /* kernel_fit's errors on the ops (when n_ops > 0) */
} RokCalibGemmReport;
/* FALSE when nothing usable was timed. */
gboolean rok_calib_gemm_report(const RokCalibDevice *d, RokCalibGemmReport *r);

/* ---- The profile ------------------------------------------------------- */

/* The hardware profile these measurements make, named NAME. The GEMM
 * model fitted (rok_calib_gemm_report): sm_count, gemm_tile, and
 * matmul_efficiency = the full-wave rate over peak_flops, where peak_flops
 * is the best median rate of a single GEMM (OpenCL does not tell a
 * device's true peak) or the fitted rate when higher; no efficiency curve;
 * op rates for every kind measured but those the model times; the shapes
 * in calibrated_shapes. Per disk, the best median of the grid; the array
 * (one device per directory) takes the slowest disk's bandwidths, the
 * longest latency, the smallest capacity. Endurance is unknown (left out).
 * The result has been through the profile reader: `rok plan` takes it.
 * Measurements that give no positive figure are ROK_ERROR_IO. */
RokHw *rok_calib_profile(const RokCalibration *c, const char *name, GError **error);
/* The free text of the profile's "source": what was measured and how. */
char *rok_calib_source(const RokCalibration *c);

/* Everything above, in order: host, device and copies, disks, checks. Call
 * from the main thread before any other thread starts (it watches
 * SIGINT/SIGTERM/SIGHUP: Ctrl-C ends with ROK_ERROR_CANCELLED and leaves no
 * file behind). */
RokCalibration *rok_calibrate(const RokCalibOptions *options, GError **error);

G_END_DECLS
