/* The executor: a rok-schedule/2 run for real, measured (docs/simulator.md,
 * "The executor").
 *
 * rok_exec_run() opens an OpenCL device, builds the kernels, creates the
 * model's parameters (src/ops) and plays the schedule's actions: one
 * warm-up step, then `repeat` measured steps. Each action starts once all
 * its dependencies have completed, on its own stream, in the schedule's
 * order within the stream; nothing else orders them. Compute actions run
 * the op interpreter on one thread (forward, backward, recompute; the
 * optimizer step has no kernel and takes no time); d2h and h2d copies run
 * on the device's transfer queues from their own threads (a leg enqueues
 * all its chunks at once); nvme-write and nvme-read move the tensor through
 * the tensor store (src/storage), chunk by chunk between the files and a
 * bounded pool of pinned staging slots; a free releases the tensor's device
 * buffer. A copy bound for the SSDs holds its slots from its d2h copy until
 * its write (and any read back from staging) is done, as the simulator's
 * pinned buffer does; the pool is the peak of the simulator's own staging
 * timeline (within the profile's host.pinned_buffer, at least the largest
 * copy), and slots are granted to those legs in schedule order, so a leg
 * whose stream runs ahead cannot take the room a leg before it needs. An
 * offload to host memory keeps its staged copy (in a pool of its own) until
 * the read back. gpudirect legs cannot be done here: they run as a copy
 * through a staging slot plus the SSD leg, chunk by chunk, and the report
 * says so.
 *
 * Integrity: every tensor that leaves the device gets a checksum computed
 * on the device right after its producer ran (cl-checksum.h), checked
 * again on the staged copy, with one checksum per chunk; when it comes back
 * each chunk and the whole are checked before its bytes reach the device.
 * A mismatch stops the run with ROK_ERROR_INTEGRITY naming the tensor, the
 * micro-batch and, for a chunk read from a disk, the file and offset.
 *
 * Measurement: every action's start and end on the monotonic clock. The
 * step time is from the step's first action to the end of its last compute
 * action (as the simulator counts it); the report gives the median over the
 * measured steps and their spread, and the figures of the median step:
 * per-stream busy time, bytes and achieved bandwidth per stream (bytes over
 * the time the stream was busy, waits for a staging slot excepted), time
 * the compute stream waited by cause (a read from the SSDs, a PCIe copy, a
 * staging slot, memory: the cause of the dependency it waited for, followed
 * back along the chain of last-completing dependencies), the device memory
 * ledger's peak (fixed memory and activations), and the median step's
 * timeline beside the predicted one. Gradients are zeroed before each step,
 * so the gradient checksum is that of one step; it must be the same in
 * every step (the kernels are deterministic), or the run fails.
 *
 * Safety: the store writes only in its own rok-XXXXXX work folders and
 * removes them on success, error and cancellation; a cancelled run
 * (rok_exec_cancel_trigger, e.g. from a signal watch) stops the staging
 * pools and the store, drains them and fails with ROK_ERROR_CANCELLED.
 * Before anything runs, the schedule is checked against this machine: the
 * device memory it needs (parameters, their gradients and the predicted
 * activation peak), the host memory for staging, the disk space for the
 * peak of offloaded bytes; too big is ROK_ERROR_DEVICE or ROK_ERROR_IO
 * saying how much is needed and how much there is.
 *
 * Without ROK_WITH_OPENCL, rok_exec_run fails with ROK_ERROR_DEVICE. */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/schedule.h"
#include "rok/core.h"

G_BEGIN_DECLS

/* ---- Cancellation ----------------------------------------------------- */

/* A flag that stops a run from another thread (a signal watch's thread):
 * create it before the run, trigger it from anywhere. */
typedef struct _RokExecCancel RokExecCancel;

RokExecCancel *rok_exec_cancel_new(void);
void rok_exec_cancel_free(RokExecCancel *cancel);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokExecCancel, rok_exec_cancel_free)
/* Thread-safe, idempotent; `signo` is the signal that asked (0: none). */
void rok_exec_cancel_trigger(RokExecCancel *cancel, int signo);
gboolean rok_exec_cancel_is_set(RokExecCancel *cancel);
/* The signal passed to the first trigger, 0 if none. */
int rok_exec_cancel_signal(RokExecCancel *cancel);

/* ---- Options ---------------------------------------------------------- */

typedef struct {
  guint step;  /* 0: the warm-up, then 1 .. steps - 1 */
  guint steps; /* repeat + 1 */
  guint done;  /* actions of this step completed */
  guint total; /* actions in the schedule */
} RokExecProgress;

/* Called from the thread that runs rok_exec_run, about ten times a second
 * and at the end of each step. */
typedef void (*RokExecProgressFunc)(const RokExecProgress *progress, gpointer user_data);

typedef struct {
  const char *const *dirs; /* NULL-terminated; needed when the schedule writes to SSDs */
  gint device;             /* index of rok_cl_device_list(); -1: the default device */
  guint repeat;            /* measured steps after the warm-up (>= 1) */
  guint64 seed;            /* parameters, token ids and dropout masks */
  guint64 slot_bytes;      /* staging slot and stripe unit; 0: 1 MiB */
  const char *faults;      /* fault injection (src/storage/fault.h); NULL: $ROK_FAULT */
  const char *backend;     /* "auto" (or NULL), "io_uring" or "psync" */
  RokExecCancel *cancel;   /* may be NULL */
  RokExecProgressFunc progress;
  gpointer progress_data;
} RokExecOptions;

#define ROK_EXEC_DEFAULT_REPEAT 3
/* Measured steps of one run: the median of 1000 is as steady as it gets,
 * and each step may take minutes. */
#define ROK_EXEC_MAX_REPEAT 1000
#define ROK_EXEC_DEFAULT_SEED 1234
#define ROK_EXEC_DEFAULT_SLOT_BYTES ((guint64)1 << 20)

/* device -1, repeat 3, seed 1234, everything else default. */
void rok_exec_options_init(RokExecOptions *options);

/* ---- The report --------------------------------------------------------- */

/* Figures under the same names for what was measured and what the schedule
 * predicted. Bandwidths are bytes over the stream's busy time (0 when the
 * stream moved nothing). */
typedef struct {
  double step_time_s;
  guint64 peak_device_bytes;     /* the memory ledger's peak, fixed memory included */
  guint64 activation_peak_bytes; /* the peak less the fixed memory */
  guint64 d2h_bytes, h2d_bytes, nvme_write_bytes, nvme_read_bytes;
  double d2h_bandwidth, h2d_bandwidth, nvme_write_bandwidth, nvme_read_bandwidth;
  double busy_s[ROK_STREAM_COUNT];
  /* Of the busy time, what was not a wait for staging slots (the
   * bandwidths' denominators; the SSD streams' lanes each moment once). */
  double active_s[ROK_STREAM_COUNT];
  double compute_s, recompute_s;
  double stall_s;
  double stall_s_by_cause[ROK_STALL_COUNT];
  /* Communication placeholders (schedules with comm actions): busy time
   * of the comm and p2p streams, and the compute stream's idle time that
   * waiting for them explains (neither a stall nor dispatch). */
  double comm_s, p2p_s, comm_wait_s;
} RokExecFigures;

/* Whether a step's time runs to ACTION's end, for what was measured and
 * what was predicted alike: a step ends with its last compute action or
 * collective (a data-parallel gather after the optimizer step); its
 * transfers and pipeline sends are the next step's or the bubble's. */
gboolean rok_exec_action_ends_step(const RokAction *action);

/* One action of the median step, measured and predicted (seconds from the
 * step's start). */
typedef struct {
  guint action;
  RokActionKind kind;
  RokStream stream;
  guint micro_batch;
  char *name; /* the op or the tensor */
  guint64 bytes;
  double start_s, end_s;
  double wait_s; /* of it, waiting for staging slots before any byte moved */
  double predicted_start_s, predicted_end_s;
} RokExecSpan;

typedef struct {
  char *strategy, *model;
  char *device, *device_type, *platform;
  char *backend;   /* "io_uring", "psync", or NULL without a store */
  gboolean direct; /* O_DIRECT in every directory */
  GPtrArray *dirs; /* the work folders (char *), removed by now */
  guint repeat;
  guint micro_batches; /* micro-batches the schedule runs (its detailed ones) */
  guint actions;
  RokExecFigures measured; /* of the median step; step_time_s is the median */
  RokExecFigures predicted;
  GArray *step_times_s; /* double, the measured steps in order */
  /* double per measured step: processor seconds other processes used while
   * it ran (rok_host_others_cpu_seconds); negative: unknown */
  GArray *others_cpu_s;
  GArray *step_figures; /* RokExecFigures of each measured step, in order */
  double step_time_min_s, step_time_max_s, warmup_time_s;
  double dispatch_s;             /* compute waits that no transfer or free explains: the runner's own overhead */
  RokHostWake stream_wake;       /* the weakest scheduling a stream's thread got */
  guint64 fixed_device_bytes;    /* allocated when the step started: parameters, gradients */
  guint64 predicted_fixed_bytes; /* the schedule's: weights, gradients, optimizer states */
  guint64 staging_bytes, host_pool_bytes, slot_bytes;
  guint64 staging_waits; /* slot acquisitions that waited, in the median step */
  double staging_wait_s;
  guint64 integrity_failures; /* 0: a failure stops the run */
  guint64 tensors_verified;   /* copies checked on their way back, per step */
  guint64 gradient_checksum;
  double loss;      /* mean over the micro-batches; NaN without cross-entropy */
  GPtrArray *notes; /* char *: what was emulated or given up, and why */
  /* Comm actions, all run as timed placeholders, in all and per group. */
  guint comm_actions, comm_by_group[ROK_COMM_GROUP_COUNT];
  GArray *timeline; /* RokExecSpan of the median step, in schedule order */
} RokExecReport;

void rok_exec_report_free(RokExecReport *report);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokExecReport, rok_exec_report_free)

/* ---- Running ------------------------------------------------------------ */

/* Run `schedule` as described above. Errors: bad options ROK_ERROR_USAGE; a
 * schedule the executor cannot follow ROK_ERROR_INPUT naming the action; I/O
 * ROK_ERROR_IO naming the file; the device ROK_ERROR_DEVICE; a checksum
 * mismatch ROK_ERROR_INTEGRITY; cancellation ROK_ERROR_CANCELLED. */
RokExecReport *rok_exec_run(const RokSchedule *schedule, const RokExecOptions *options, GError **error);

/* rok-report/1: format, strategy, model, device {name, type, platform},
 * storage {backend, direct, dirs, slot_bytes, staging_bytes,
 * host_pool_bytes}, repeat, micro_batches, actions, the measured figures at
 * the top level (step_time_s, peak_device_bytes, activation_peak_bytes,
 * d2h_bytes, h2d_bytes, nvme_write_bytes, nvme_read_bytes, d2h_bandwidth,
 * h2d_bandwidth, nvme_write_bandwidth, nvme_read_bandwidth, busy_s {per
 * stream}, compute_s, recompute_s, stall_s, stall_s_by_cause {read, pcie,
 * staging, memory}), step_time_min_s, step_time_max_s, step_times_s,
 * others_cpu_s, warmup_time_s, dispatch_s, stream_threads ("real-time", "short
 * slice" or "fair": how the stream threads were scheduled, the weakest),
 * fixed_device_bytes, staging_waits,
 * staging_wait_s, integrity_failures, tensors_verified, gradient_checksum
 * (16 hex digits, a string: JSON numbers lose 64-bit precision), loss,
 * predicted {the same figures, from the schedule, and fixed_bytes},
 * relative_error {(measured - predicted) / predicted per figure; 0 where
 * both are 0, null where only the prediction is}, communication (only for
 * a schedule with comm actions: placeholders, by_group, comm_s, p2p_s,
 * compute_waited_s, predicted {the three}), notes. Sizes in bytes, times in seconds, rates in
 * bytes per second. */
json_object *rok_exec_report_to_json(const RokExecReport *report);
gboolean rok_exec_report_save(const RokExecReport *report, const char *path, GError **error);

/* The median step as Chrome/Perfetto trace-event JSON: two processes, the
 * measured run and the schedule's prediction, one track per stream each,
 * so that the two line up in one view. */
json_object *rok_exec_report_timeline_to_json(const RokExecReport *report);
gboolean rok_exec_report_timeline_save(const RokExecReport *report, const char *path, GError **error);

G_END_DECLS
