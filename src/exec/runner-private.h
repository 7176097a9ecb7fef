/* Private to the executor's runner (src/exec/runner*.c): the program worked
 * out from a schedule before anything runs, and the state of a run.
 *
 *   runner-program.c   the schedule checked and compiled: copies, legs,
 *                      dependents, stream order, staging turns, sizes
 *   runner-replay.c    the device residency replayed in schedule order
 *   runner-residency.c device buffers of the tensors, per micro-batch
 *   runner-compute.c   the compute thread: ops, device checksums
 *   runner-copy.c      d2h and h2d legs through staged copies
 *   runner-storage.c   nvme-write and nvme-read legs through the store
 *   runner-integrity.c chunk checksums and mismatch messages
 *   runner-staging.c   reservations of staging slots in schedule order
 *   runner-dispatch.c  the dependency tracker and one step
 *   runner-measure.c   figures of a step from its action times
 *   runner-setup.c     the machine check, device, pools, store
 *   runner.c           rok_exec_run: setup, steps, teardown, report
 *   report*.c, cancel.c the report and its JSON, the cancellation flag */
#pragma once

#include "rok/exec.h"

/* Cancellation hooks (cancel.c): the runner attaches one for its life. */
typedef void (*RokExecCancelHook)(int signo, gpointer data);
/* Attach `hook`; if the flag is already set it runs at once (in this
 * thread). Detaching waits for a running hook to return. */
void exec_cancel_attach(RokExecCancel *cancel, RokExecCancelHook hook, gpointer data);
void exec_cancel_detach(RokExecCancel *cancel);

/* The report's parts that exist without OpenCL (report.c). */
RokExecReport *exec_report_new(void);

#ifdef ROK_WITH_OPENCL

#include "rok/storage.h"
#include "rok/device.h"
#include "rok/ops.h"

#define RUN_NONE G_MAXUINT

/* ---- The program (runner-program.c) ------------------------------------- */

/* One (micro-batch, tensor) that leaves the device, and its legs. */
typedef struct {
  guint mb, tensor;
  guint64 bytes;
  guint n_chunks;                        /* slot-sized pieces */
  guint chunk_base;                      /* its chunks in the runner's per-chunk arrays */
  gboolean host;                         /* offloaded to host memory (else to the SSDs) */
  guint d2h, nvme_write, nvme_read, h2d; /* action ids, RUN_NONE where absent */
  gboolean gd_write, gd_read;            /* the SSD legs are gpudirect */
  guint producer;                        /* its producer's forward action */
  gboolean late;                         /* its read waited for memory under the budget (a free) */
} RunnerCopy;

typedef struct {
  guint copy;                     /* transfers and frees of a copied tensor: the copy; RUN_NONE otherwise */
  guint allocs, n_allocs;         /* compute: outputs to allocate (into ids) */
  guint sums, n_sums;             /* forward: copies whose device checksum it takes (into ids) */
  guint dependents, n_dependents; /* into ids */
  gboolean ends_mb;               /* the last compute action of its micro-batch */
  gboolean seed_only;             /* a recompute of dropout masks alone, from the seed */
  guint ticket;                   /* legs that hold staging slots: their turn, in schedule order; RUN_NONE otherwise */
  guint after;                    /* a d2h or h2d leg: the leg before it on its stream when it depends on it, else RUN_NONE */
} RunnerAction;

/* Threads per SSD stream, ROK_SSD_LANES; every other stream has one. */
static inline guint runner_threads(RokStream s) {
  return s == ROK_STREAM_NVME_WRITE || s == ROK_STREAM_NVME_READ ? ROK_SSD_LANES : 1;
}

/* Legs of a stream issued at once. The d2h and h2d streams' are primed
 * as they are issued (runner_d2h_prime, runner_h2d_prime) and waited for
 * and checked one after the other by the stream's one thread: every leg
 * made ready is issued, so that its copies are enqueued before the compute
 * thread's next kernel even while the leg before is still being checked
 * (issued one at a time, the h2d legs after the first of those a kernel's
 * end made ready were enqueued by the h2d thread as the one before ended,
 * in the middle of the next kernel, and waited for a processor:
 * validate-gpt's rok row, 2026-12-02, 64 KiB legs 156-175 us against
 * 51-60 for those enqueued ahead of it). */
static inline guint runner_lanes(RokStream s) {
  return s == ROK_STREAM_D2H || s == ROK_STREAM_H2D ? G_MAXUINT : runner_threads(s);
}

typedef struct {
  const RokSchedule *schedule;
  const RokTrace *trace;
  guint n_actions, n_mb, n_tensors;
  guint64 slot_bytes;
  RunnerAction *actions;
  GArray *ids;                         /* guint: the lists of the actions */
  GArray *copies;                      /* RunnerCopy */
  guint *copy_of;                      /* [mb * n_tensors + tensor]: its copy, or RUN_NONE */
  guint n_chunks;                      /* over all copies */
  GArray *order[ROK_STREAM_ALL_COUNT]; /* guint: each stream's actions, frees excepted */
  /* Sizes, bytes rounded up to whole slots. */
  guint64 stored_total;   /* copies written to the SSDs */
  guint64 staged_largest; /* the largest copy held in staging */
  guint64 host_total;     /* copies kept in host memory */
  guint64 disk_peak;      /* on the SSDs at once, in schedule order */
  guint64 staging_peak;   /* held in staging at once, on the predicted timeline */
  guint n_tickets;
  guint *ticket_needs;    /* [ticket]: the slots its leg reserves */
  guint64 largest_tensor;
  guint gpudirect_legs;
  guint comm_actions; /* communication placeholders (comm and p2p streams) */
  gboolean has_loss;
} RunnerProgram;

gboolean runner_program_build(RunnerProgram *prog, const RokSchedule *schedule, guint64 slot_bytes, GError **error);
void runner_program_clear(RunnerProgram *prog);
/* runner-replay.c: residency replayed (allocs, sums, seed_only, checks). */
gboolean runner_program_replay(RunnerProgram *prog, GError **error);
/* ROK_ERROR_INPUT "schedule action N (kind on stream, micro-batch m): ..."; returns FALSE. */
gboolean runner_program_fail(GError **error, const RunnerProgram *prog, guint id, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

static inline const guint *runner_ids(const RunnerProgram *prog, guint offset) {
  return &g_array_index(prog->ids, guint, offset);
}
static inline RunnerCopy *runner_copy(const RunnerProgram *prog, guint id) {
  return &g_array_index(prog->copies, RunnerCopy, id);
}
static inline const RokAction *runner_action(const RunnerProgram *prog, guint id) {
  return rok_schedule_action(prog->schedule, id);
}
static inline guint runner_key(const RunnerProgram *prog, guint mb, guint tensor) {
  return mb * prog->n_tensors + tensor;
}
static inline const char *runner_tensor_name(const RunnerProgram *prog, guint tensor) {
  return rok_trace_tensor(prog->trace, tensor)->name;
}
static inline gboolean runner_is_comm(const RokAction *a) {
  return a->kind == ROK_ACTION_COMM;
}
static inline gboolean runner_is_copy(const RokAction *a) {
  return a->kind == ROK_ACTION_OFFLOAD || a->kind == ROK_ACTION_PREFETCH;
}

/* ---- A run ---------------------------------------------------------------- */

/* One action in the current step; written by the thread that runs it,
 * read by the tracker (under track_lock) once it has ended. */
typedef struct {
  gint64 start_ns, end_ns; /* monotonic */
  gint64 wait_ns;          /* waiting for a staging slot */
  guint64 moved;           /* bytes it moved */
  guint waits;             /* slot acquisitions that waited */
  guint pending;           /* dependencies not completed yet */
  guint8 state;            /* RUN_WAITING, RUN_ISSUED, RUN_DONE */
} RunnerRecord;

enum { RUN_WAITING, RUN_ISSUED, RUN_DONE };

/* A copy's bytes on their way: where they are now. */
typedef struct {
  RokStaging *pool;       /* the pool its chunks' slots come from */
  gint refs;              /* legs that still read the staged chunks (atomic) */
  guint reserved;         /* staging slots it holds a reservation for */
  RokStoreTensor *stored; /* on the SSDs */
  guint64 device_sum;     /* from the device, after the producer ran */
  guint64 host_sum;       /* of the staged copy on its way out */
  /* Its d2h or h2d leg primed (runner_d2h_prime, runner_h2d_prime): its
   * copies' events, and the error that stopped their enqueuing. */
  gboolean primed;
  cl_event *events;
  guint n_events;
  GError *prime_error;
} RunnerCopyState;

typedef struct _Runner Runner;

typedef struct {
  Runner *r;
  RokStream stream;
} RunnerWorker;

struct _Runner {
  const RokSchedule *schedule;
  const RokTrace *trace;
  RokExecOptions options;
  RunnerProgram prog;

  RokClDevice *device;
  RokClKernels *kernels;
  RokExecModel *model;
  RokClBuffer *sums; /* i64, one device checksum per copy */
  RokClBuffer *reserved; /* the fixed memory the model's parameters leave: optimizer states */
  RokStaging *staging, *host_pool;
  cl_mem pinned[2]; /* the pools registered with OpenCL (CL_MEM_USE_HOST_PTR), or NULL */
  void *pinned_ptr[2];
  RokStore *store;

  /* Residency: device buffers of (micro-batch, tensor). */
  GMutex lock;
  RokClBuffer **buffers; /* [mb * n_tensors + tensor] */

  /* Copies. */
  RunnerCopyState *copies;
  int *slots; /* per chunk: its slot, or -1 */
  /* Reservations of staging slots, granted in ticket order or out of it
   * where room is left for every turn before (see runner-staging.c). */
  GMutex gate_lock;
  GCond gate_cond;
  guint gate_next;     /* the first ticket not yet granted */
  guint8 *gate_taken;  /* [ticket]: granted this step */
  guint64 gate_reserved, gate_limit;
  guint64 *chunk_sums; /* per chunk: its share of the checksum on the way out */

  /* The step: the tracker's state, under track_lock (whichever thread
   * ends an action updates it and issues what that made ready). */
  GMutex track_lock;
  RunnerRecord *rec;
  guint cursor[ROK_STREAM_ALL_COUNT]; /* next position in prog.order */
  guint busy[ROK_STREAM_ALL_COUNT];   /* actions issued and not completed */
  guint done, in_flight;
  GArray *to_store; /* staged SSD legs issued, not yet handed to the store (runner-dispatch.c: pump) */
  gint64 step_start_ns;
  double step_others_cpu_s; /* rok_host_others_cpu_seconds() when the step started */
  guint64 step_fixed;       /* device bytes allocated when the step started */
  GAsyncQueue *completions; /* to the step's thread: the step may be over, a task's end, a cancellation */
  GAsyncQueue *work[ROK_STREAM_ALL_COUNT];
  GThread *threads[ROK_STREAM_ALL_COUNT][ROK_SSD_LANES];
  RunnerWorker workers[ROK_STREAM_ALL_COUNT];
  RokClBuffer **view; /* the compute thread's tensor table */
  /* d2h legs issued without their slots, not yet taken by the d2h
   * thread (atomic): while there are, no leg is primed, so that slots go
   * in the stream's order. */
  gint d2h_slotless;
  /* The weakest scheduling a stream's thread got (RokHostWake, atomic). */
  gint stream_wake;

  /* Per step, from the compute thread. */
  guint64 gradient_checksum;
  double loss_sum;
  guint loss_count;
  gint verified;           /* copies checked on their way back (atomic) */
  gint integrity_failures; /* atomic */

  /* The first error wins; later ones are dropped. */
  GMutex error_lock;
  GError *error;
  gint failed;    /* atomic */
  gint cancelled; /* atomic */

  RokExecReport *report;
  GPtrArray *notes;
  GError *removal_error; /* the work folders could not be removed entirely */
};

/* Messages to the step's thread. */
#define RUN_MSG_WAKE (G_MAXUINT - 6) /* nothing left in flight: the step is over, failed or stuck */
#define RUN_MSG_CANCEL (G_MAXUINT - 1)
#define RUN_MSG_TASK (G_MAXUINT - 2) /* a compute-thread task finished */
/* Tasks for the compute thread beyond the action ids. */
#define RUN_TASK_ZERO (G_MAXUINT - 3)
#define RUN_TASK_CHECKSUM (G_MAXUINT - 4)
#define RUN_TASK_STOP (G_MAXUINT - 5)

static inline gpointer runner_msg(guint value) {
  return GUINT_TO_POINTER(value + 1u);
}
static inline guint runner_msg_value(gpointer msg) {
  return GPOINTER_TO_UINT(msg) - 1u;
}

/* Keep the first error (consumes `error`), then stop everything. */
void runner_fail(Runner *r, GError *error);
gboolean runner_failed(Runner *r);

/* runner-residency.c */
RokClBuffer *runner_buffer_get(Runner *r, guint mb, guint tensor);
/* A new device buffer for (mb, tensor), entered in the table. */
RokClBuffer *runner_buffer_alloc(Runner *r, guint mb, guint tensor, GError **error);
void runner_buffer_free(Runner *r, guint mb, guint tensor);
/* Fill `view` with micro-batch mb's buffers. */
void runner_buffer_view(Runner *r, guint mb, RokClBuffer **view);
/* Free every buffer left; returns how many there were. */
guint runner_buffers_clear(Runner *r);

/* runner-integrity.c */
typedef struct {
  RokClChecksum state;
} RunnerSum;
void runner_sum_init(RunnerSum *sum);
/* Add a chunk; returns its share (a difference of sums, so that a chunk's
 * share does not depend on how the others went). */
guint64 runner_sum_chunk(RunnerSum *sum, const void *data, gsize bytes);
guint64 runner_sum_finish(const RunnerSum *sum);
/* A chunk on its way out: its share is recorded. */
void runner_integrity_out(Runner *r, const RunnerCopy *c, RunnerSum *sum, guint chunk, const void *data, gsize bytes);
/* After the last chunk out: the staged copy must equal the device's. */
gboolean runner_integrity_out_done(Runner *r, guint copy, const RunnerSum *sum, GError **error);
/* A chunk on its way back, before it reaches the device. */
gboolean runner_integrity_in(Runner *r, guint copy, RunnerSum *sum, guint chunk, const void *data, gsize bytes,
                          GError **error);
gboolean runner_integrity_in_done(Runner *r, guint copy, const RunnerSum *sum, GError **error);

/* runner-compute.c: the compute stream's actions, and tasks between steps
 * (RUN_TASK_ZERO: zero the gradients; RUN_TASK_CHECKSUM: their checksum). */
gboolean runner_compute_action(Runner *r, guint id, GError **error);
gboolean runner_compute_special(Runner *r, guint task, GError **error);

/* runner-copy.c: the d2h and h2d legs, and the staged copies' slots. */
gboolean run_d2h_leg(Runner *r, guint id, GError **error);
/* As the d2h leg `id` is issued (under the tracker's lock, so in the
 * stream's order): its copies enqueued, if the slots can be had without
 * waiting and no leg before it waits for its own; the d2h thread then
 * waits for them (run_d2h_leg). Issued by a kernel's end, they are
 * enqueued before the compute thread launches its next kernel. Without
 * this the d2h thread, woken a few microseconds later or still checking
 * the leg before, enqueued them behind that kernel, and a device whose
 * copies run on the kernels' processors (PoCL) ran them only once it was
 * done. */
void runner_d2h_prime(Runner *r, guint id);
/* After a failure, where the d2h or h2d leg `id` is not run: its primed
 * copies settled. */
void runner_copy_settle(Runner *r, guint id);
/* As the h2d leg `id` is issued (under the tracker's lock): its device
 * buffer taken, where it needs one, and its copies enqueued; the h2d
 * thread then waits for them and checks the chunks (run_h2d_leg). Issued
 * by a kernel's end, they go ahead of the compute thread's next kernel. */
void runner_h2d_prime(Runner *r, guint id);
gboolean run_h2d_leg(Runner *r, guint id, GError **error);
/* The slot memory of a chunk (which must hold one). */
guint8 *runner_chunk_data(Runner *r, guint copy, guint chunk);
/* A slot of `pool` into *slot, waiting if need be (counted in rec). */
gboolean runner_slot_acquire(Runner *r, RokStaging *pool, RunnerRecord *rec, int *slot, GError **error);
/* One chunk device -> its slot, blocking, on the d2h queue. */
gboolean runner_chunk_out(Runner *r, RokClBuffer *buffer, guint copy, guint chunk, GError **error);
/* One chunk checked, then its slot -> device, blocking, on the h2d queue. */
gboolean runner_chunk_in(Runner *r, RokClBuffer *buffer, guint copy, guint chunk, RunnerSum *sum, GError **error);
/* A staged SSD read's slots (reserved in its turn). */
gboolean runner_read_slots(Runner *r, guint id, guint copy, GError **error);
/* The same where they can be had without waiting; FALSE otherwise (those
 * taken are kept for the wait). */
gboolean runner_read_slots_now(Runner *r, guint id, guint copy);
/* One leg fewer needs the staged chunks; the last gives the slots back. */
void runner_copy_unref(Runner *r, guint copy);
void runner_copy_release_chunk(Runner *r, guint copy, guint chunk);
/* What a step left of the copies: slots, stored tensors (store drained). */
void runner_copies_clear(Runner *r);

/* runner-staging.c: reservations of staging slots. */
/* Wait for the leg's turn and room for `slots`; the wait is a staging
 * wait in rec. Fails once the run has failed. */
gboolean runner_gate_reserve(Runner *r, guint id, guint copy, RunnerRecord *rec, GError **error);
/* The reservation if it can be had without waiting; FALSE otherwise. */
gboolean runner_gate_try_reserve(Runner *r, guint id, guint copy);
void runner_gate_release(Runner *r, guint copy);
/* A new step: tickets from the first. */
void runner_gate_reset(Runner *r);
/* Wake every waiter (the run failed). */
void runner_gate_wake(Runner *r);

/* runner-storage.c: the nvme-write and nvme-read legs. A staged leg's
 * chunks are submitted and the call returns with *deferred set: the last
 * completion ends the leg (records its end and issues what that made
 * ready through runner_leg_done), so no thread waits for the disk. */
gboolean runner_nvme_write_leg(Runner *r, guint id, gboolean *deferred, GError **error);
/* Whether SSD leg `id` goes through staging (not gpudirect): such a leg
 * can begin on the store's own thread. */
gboolean runner_ssd_leg_staged(const Runner *r, guint id);
/* Staged SSD legs `ids`, issued together, begun on the store's own thread
 * in that order in one hand-over, which submits every request (no
 * hand-off from a stream's thread; a read whose slots are not all free is
 * passed on to its lane there); FALSE where the store has no such thread:
 * give them to their lanes. Called under the tracker's lock, once they
 * are issued. */
gboolean runner_ssd_legs_on_store(Runner *r, const GArray *ids);
gboolean runner_nvme_read_leg(Runner *r, guint id, gboolean *deferred, GError **error);
/* runner-dispatch.c: an action run elsewhere has ended (error: NULL, or
 * its failure, taken); the calling thread issues what that made ready. */
void runner_leg_done(Runner *r, guint id, GError *error);
/* The same, ended at END_NS (its last I/O completion, seen then). */
void runner_leg_done_at(Runner *r, guint id, gint64 end_ns, GError *error);

/* runner-dispatch.c; a comm or p2p action: its modelled duration waited out. */
gboolean runner_comm_placeholder(Runner *r, guint id, GError **error);
gpointer runner_worker_thread(gpointer data); /* a RunnerWorker */
gboolean runner_step(Runner *r, guint step, GError **error);
/* Run a task on the compute thread and wait for it. */
gboolean runner_compute_task(Runner *r, guint task, GError **error);

/* runner-measure.c */
typedef struct {
  RokExecFigures figures;
  double dispatch_s;
  guint64 staging_waits;
  double staging_wait_s;
} RunnerStepFigures;
/* Figures of the step just run, from the records (peak and bytes from
 * the caller). */
void runner_measure_step(const Runner *r, RunnerStepFigures *out);
/* The schedule's predicted figures. */
void runner_measure_predicted(const RunnerProgram *prog, RokExecFigures *out);

/* runner-setup.c */
gboolean runner_setup(Runner *r, GError **error);
void runner_teardown(Runner *r);

#endif /* ROK_WITH_OPENCL */
