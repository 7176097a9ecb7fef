/* Private to src/sim: the state of one simulated step.
 *
 * engine.c runs the event loop, the compute stream and the memory ledger;
 * transfer.c the transfer streams, their flows and the prefetcher;
 * record.c the action log. All of it lives in one SimEngine that a RokSim
 * keeps between runs, so a warm simulator does not allocate per event. */
#pragma once

#include "rok/sim.h"
#include "event-queue.h"
#include "fluid.h"

typedef struct _RokSim RokSim;

/* EV_KERNEL_WAIT: a copy leg's wait for the kernel in progress ends;
 * EV_LATENCY: its latency; EV_FLOW: its bytes have moved. */
enum { EV_COMPUTE, EV_KERNEL_WAIT, EV_LATENCY, EV_FLOW };

/* Where an offloaded tensor's copy out of the GPU stands. */
enum {
  W_NONE,
  W_QUEUED,    /* waiting for its stream */
  W_GPU_LEG,   /* copying out of GPU memory */
  W_SECOND,    /* staged: out of the GPU, in the staging buffer, SSD write pending */
  W_DONE,      /* on the SSDs or in host memory */
  W_CANCELLED, /* dropped: forwarded before it started, or read back from staging */
};
enum { R_NONE, R_ISSUED, R_READY, R_FORWARDED };

/* A compute item as the engine plays it (engine.c). */
typedef struct {
  RokActionKind kind;
  guint op;
  gint64 ns;
  guint64 work, done; /* gradient memory taken at the start, given back at the end */
  const guint *needs, *allocs, *frees;
  guint n_needs, n_allocs, n_frees;
} SimItemView;

typedef struct {
  guint8 resident;     /* counted in the ledger */
  guint8 fwd_done;     /* forward no longer reads it */
  guint8 bwd_done;     /* backward no longer reads it */
  guint8 pinned;       /* forwarded: stays until its last backward use */
  guint8 owned;        /* allocated by the rebuild that frees it */
  guint8 write, read;  /* W_*, R_* */
  guint8 staging_refs; /* legs that still need its bytes in the staging buffer */
  guint8 host_copy;    /* counted in host memory */
  guint8 late;         /* its prefetch was held back by the budget */
  guint8 pending;      /* counted in pending_free */
  guint write_job, read_job;
  guint producer_action, stored_action, ready_action;
  guint copy_action; /* the copy out of GPU memory */
  guint use_action;  /* the compute after which nothing more reads it */
} SimTensorState;

typedef enum { PATH_HOST, PATH_DIRECT, PATH_STAGED, PATH_FROM_STAGING } SimPath;
enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_CANCELLED };

typedef struct {
  guint tensor, mb;
  guint8 is_read, path, leg, n_legs, state;
  guint8 waited_staging, late;
  guint8 ahead;   /* a d2h leg queued ahead of the kernels or primed (transfer.c: queued_ahead, primed), which
                   * pays half of host.copy_overhead; never an h2d leg (it waits for its thread's wake) */
  guint8 primed;  /* a d2h or h2d leg whose copy was enqueued ahead of the kernels as it was queued (transfer.c: primed) */
  guint8 follows; /* a primed copy leg its stream's thread took straight after the leg before (transfer.c: leg_follows) */
  guint8 chained; /* an SSD leg begun as another ended, from the I/O thread's completion (transfer.c: leg_chained) */
  gint64 made;    /* when it was queued */
  gint64 copy_from; /* a primed leg's: when its copy began (transfer.c: enqueue_primed) */
  double copy_left; /* the share of its copy still to run as it starts (transfer.c: start_leg); 0: only its check */
  double demand;  /* an SSD leg's share of the array's rate alone, as it was queued (transfer.c: leg_demand) */
  guint64 bytes;
  guint action;       /* the current leg's action */
  guint issue_deps[2]; /* reads: what allowed the read to be issued */
  /* A gathered SSD write (transfer.c, "Gathered writes"): it goes with the
   * others of its gather, beside them on the stream's lanes, once the
   * action gather_dep (a d2h leg's or a compute's) has ended. */
  guint8 gathered;
  guint gather_dep;
} SimJob;

/* A leg in progress on one of a stream's lanes (transfer.c). */
typedef struct {
  guint job; /* running, or ROK_NO_ID */
  RokStream stream;
  gint64 last_update; /* flowing (SimEngine.flowing): when remaining was last brought up to date */
  double remaining;
  guint event; /* pending event, or ROK_NO_ID */
  gboolean held; /* its bytes moved, it ends with the last SSD leg at work (nvme.completes_together) */
} SimLane;

/* The d2h and h2d streams' one lane each, then each SSD stream's
 * ROK_SSD_LANES: a stream's lanes are SimStream.first_lane onwards, and a
 * lane's flow is SimEngine.flows at the same index. */
#define SIM_LANES (2 + 2 * ROK_SSD_LANES)
G_STATIC_ASSERT(SIM_LANES <= 32); /* SimEngine.flowing */

typedef struct {
  GArray *queue; /* guint job ids */
  guint head;
  gboolean staging_wait;
  guint first_lane, n_lanes;
  guint running;     /* legs in progress */
  guint64 requests;  /* their requests to the SSDs (ROK_SIM_CHUNK_BYTES each) */
  double demand;     /* their demands (SimJob.demand) */
  gint64 busy_since; /* since when some leg has been in progress */
  guint last_action, last_job; /* the leg started last */
  guint ended_action;           /* the leg ended last, at ended_at */
  gint64 ended_at;
  gint64 copies_until; /* h2d: when the copies of the legs primed so far are done (transfer.c: enqueue_primed) */
} SimStream;

typedef struct {
  gint64 compute_ns, recompute_ns;
  gint64 stall_ns[ROK_STALL_COUNT];
  gint64 busy_ns[ROK_STREAM_COUNT];
  guint64 d2h_bytes, h2d_bytes, nvme_write_bytes, nvme_read_bytes;
  guint64 forwarded, events;
} SimCounters;

enum { PHASE_FORWARD, PHASE_BACKWARD, PHASE_OPTIMIZER, PHASE_DONE };

typedef struct {
  RokSim *sim;
  guint n_tensors;
  RokEventQueue evq;
  gint64 now;
  guint64 budget, staging_cap;
  gboolean budget_bound; /* the budget made a compute wait or held a read back */
  /* Every comparison with the budget comes out the same under any budget
   * in [budget_lo, budget_hi): the most that passed, the least that did
   * not (sim_over_budget). */
  guint64 budget_lo, budget_hi;
  /* The same for prefetch_window (sim_beyond_window): [window_lo, window_hi). */
  guint window_lo, window_hi;
  guint n_mb, prefetch_window;
  gboolean record, gpudirect;
  gint64 pcie_latency;
  gint64 copy_overhead;                   /* the executor's hand-offs of a leg, ns (0: none) */
  gint64 leg_cpu, request_cpu;            /* an SSD leg's processor time, ns (0: none or no shared_cpus) */
  gint64 copy_leg_cpu;                    /* a d2h or h2d leg's, ns (0: none or no shared_cpus) */
  gint64 ssd_last_end;                    /* when the last SSD leg ended (nvme.wake_after) */
  gint64 ssd_awake_at;                    /* when the disk's last wake ended or ends */
  gboolean ssd_warm;                      /* the SSD legs in progress began chained (nvme.warm_*) */
  gint64 ssd_submitted_at;                /* when the I/O thread is done issuing the SSD legs begun so far */
  double copy_kernel_wait;                /* gpu.copy_kernel_wait, 0 without shared_cpus */
  double copy_kernel_free_at;             /* gpu.copy_kernel_free_at, 0 without shared_cpus */
  gint64 copy_launch_window;              /* gpu.copy_launch_window, ns; 0 without shared_cpus or ahead */
  double copy_launch_ahead;               /* gpu.copy_launch_ahead, with the window */
  gboolean copies_in_order;               /* gpu.copy_queues_in_order, FALSE without shared_cpus */
  double d2h_speed, h2d_speed;
  /* Peer-to-peer traffic on the PCIe link (interconnect.intra_node_pcie):
   * the share of each direction one GPU's collectives take at full rate,
   * and the share of the running compute item they take (its
   * communication over its time, at that rate). */
  double p2p_link[2], p2p_busy;

  SimTensorState *ts; /* [mb * n_tensors + tensor] */
  gsize ts_capacity;
  GArray *jobs;
  SimStream streams[ROK_STREAM_COUNT]; /* the compute entry is unused */
  SimLane lanes[SIM_LANES];
  RokFlow flows[SIM_LANES];
  guint32 flowing; /* bit l: lanes[l] is flowing */

  /* memory */
  guint64 live, peak, pending_free, staging_used, staging_peak, host_used, host_peak;
  gint64 peak_time;
  RokActionKind peak_kind;
  guint peak_op, peak_mb;

  /* the compute stream: the item running or next to run, in block `block`
   * of the stage's order, which ends before item `end` */
  guint mb, phase, index;
  guint block, end;
  gboolean running;
  SimItemView running_view; /* the item running, as it started */
  gint stall_cause; /* -1: not stalled */
  gboolean stalled_on_memory;
  gint64 stall_since;
  guint compute_action, last_compute_action;
  /* Its pace where copies share its processors (gpu.shared_cpus): the
   * running item's work left (ns at full speed) as of compute_since, its
   * start and its end event; copy legs now on those processors. */
  gint64 compute_left, compute_since, compute_start, kernel_ns;
  /* The running item's kernels' own lengths (work at full speed: the
   * first is 0 for an item of one kernel) and when its last kernel began
   * (-1 until then): gpu.copy_kernel_free_at counts from a kernel's start. */
  gint64 first_base_ns, last_base_ns, last_kernel_start;
  guint compute_event;
  guint64 items_started;
  /* The kernel (sim_kernel_id) whose copies pass from free_at on: PoCL's
   * worker that runs out of a kernel's chunks takes every copy queued
   * until the kernel ends, so the first copy's wait ends the others'. */
  guint64 free_kernel;
  gint64 free_at;
  guint shared_cpus, cpu_legs;
  /* Processor time legs took at `idle_cpu_at` while no item ran: the
   * item that starts at that same moment pays it (sim_cpu_take). */
  gint64 idle_cpu_ns, idle_cpu_at;

  /* The staged SSD writes held back to go together (transfer.c:
   * "Gathered writes"): job ids, and their requests. */
  GArray *gather;
  guint64 gather_requests;

  /* prefetch of the micro-batch in backward */
  guint next_prefetch;
  guint last_free_action, last_staging_release;

  SimCounters counters;
  SimCounters *snapshots; /* at the start of each micro-batch, then at the end of backward 0 */
  gint64 *mb_start;
  gint64 bwd0_end;
  gint64 end_time;

  GArray *actions, *deps, *samples;
} SimEngine;

void sim_engine_init(SimEngine *e, RokSim *sim);
void sim_engine_clear(SimEngine *e);
/* Play the compiled program; fills the engine's counters and memory figures. */
gboolean sim_engine_run(SimEngine *e, const RokStepPlan *plan, GError **error);

static inline SimTensorState *sim_ts(SimEngine *e, guint mb, guint tensor) {
  return &e->ts[(gsize)mb * e->n_tensors + tensor];
}
static inline SimJob *sim_job(SimEngine *e, guint id) {
  return &g_array_index(e->jobs, SimJob, id);
}

/* engine.c: memory */
/* Whether a read `ahead` prefetch units past the compute's is beyond the
 * window (window 0: every read not needed yet is); every such comparison
 * goes through here, as for the budget. */
static inline gboolean sim_beyond_window(SimEngine *e, guint ahead) {
  if (e->prefetch_window == 0)
    return TRUE;
  if (ahead > e->prefetch_window) {
    e->window_hi = MIN(e->window_hi, ahead);
    return TRUE;
  }
  e->window_lo = MAX(e->window_lo, ahead);
  return FALSE;
}
void sim_mem_add(SimEngine *e, guint64 bytes);
/* Whether live memory at `level` would exceed the budget; every such
 * comparison goes through here, so that the run knows the budgets under
 * which it is the same. */
static inline gboolean sim_over_budget(SimEngine *e, guint64 level) {
  if (level > e->budget) {
    e->budget_bound = TRUE;
    e->budget_hi = MIN(e->budget_hi, level);
    return TRUE;
  }
  e->budget_lo = MAX(e->budget_lo, level);
  return FALSE;
}
void sim_mem_sub(SimEngine *e, guint64 bytes);
void sim_tensor_alloc(SimEngine *e, guint mb, guint tensor);
/* Free a tensor's GPU memory; `cause` is the action after which it goes.
 * Returns the free's action (ROK_NO_ID when not recording). */
guint sim_tensor_free(SimEngine *e, guint mb, guint tensor, RokStream stream, guint cause);
/* Take or give back bytes of the staging buffer. */
void sim_staging_change(SimEngine *e, guint64 bytes, gboolean take);
/* engine.c: a copy leg on the compute processors starts (TRUE) or ends. */
void sim_cpu_legs_change(SimEngine *e, gboolean start);
/* engine.c: the processors K copy legs have of N compute processors
 * (gpu.shared_cpus) while KERNELS run or not: the kernels run on the rest. */
double sim_cpus_of_legs(double n, double k, gboolean kernels);
/* engine.c: sim_cpus_of_legs for the legs running now. */
double sim_legs_cpus(const SimEngine *e);
/* transfer.c: a kernel was launched; a copy leg on the compute
 * processors that began at this moment but reaches the device after the
 * launch (on in-order copy queues, a d2h leg of several copy commands:
 * PoCL makes a queue's next command ready only when the one before has
 * ended) waits for it too (gpu.copy_kernel_free_at or copy_kernel_wait). */
void sim_transfer_kernel_launched(SimEngine *e);
/* engine.c: `cpu_ns` of processor time taken by other work on the compute
 * processors now (gpu.shared_cpus): the running item loses its share. */
void sim_cpu_take(SimEngine *e, gint64 cpu_ns);
/* engine.c: time until the kernel in progress ends at the current pace
 * (0 while no compute item runs). */
gint64 sim_kernel_left(const SimEngine *e);
/* Whether the kernel in progress leaves one of the shared processors
 * idle (a backward's first kernel of fewer work-groups than processors:
 * RokSim.bwd_first_idle), which takes a copy at once. */
gboolean sim_kernel_leaves_cpu(const SimEngine *e);
/* engine.c: time until `share` of the kernel in progress's own length has
 * passed since it began (0 once it has, or while no compute item runs):
 * when the processor that was slowed least is done with it. On a CPU
 * device, of the executor's launch in progress where it splits the
 * kernel (ROK_KERNEL_CHUNK_SECONDS). */
gint64 sim_kernel_until(const SimEngine *e, double share);
/* engine.c: the kernel in progress, unique over the run (an item's one
 * kernel, or a backward's first or second, and its launch where the
 * executor splits it); meaningless while none runs. */
guint64 sim_kernel_id(const SimEngine *e);

/* transfer.c */
void sim_offload_start(SimEngine *e, guint mb, guint tensor);
void sim_prefetch_pump(SimEngine *e);
void sim_streams_pump(SimEngine *e);
/* An event of the leg on `lane` (an index into SimEngine.lanes). */
void sim_transfer_event(SimEngine *e, guint kind, guint lane);
/* The threads on the compute processors have changed (a copy leg or the
 * compute started or ended): the copies there get their new shares. */
void sim_cpu_flows_update(SimEngine *e);
/* The running item's peer-to-peer share of the PCIe link changed to `busy`
 * (transfer.c): the copies on the link are shared again. */
void sim_p2p_update(SimEngine *e, double busy);
/* Why backward waits for `tensor` (a RokStallCause). */
RokStallCause sim_wait_cause(SimEngine *e, guint mb, guint tensor);
/* The last backward use of an offloaded tensor has ended. */
void sim_offload_release(SimEngine *e, guint mb, guint tensor, guint cause);
/* The GPU copy of an offloaded tensor may go, if nothing holds it. */
void sim_offload_maybe_free(SimEngine *e, guint mb, guint tensor, RokStream stream, guint cause);

/* record.c: what a recording run keeps. The checks are inline: the
 * planner's runs record nothing and call these at every event. */
guint sim_record_action(SimEngine *e, RokActionKind kind, RokStream stream, guint mb, guint op, guint tensor,
                        guint64 bytes);
void sim_record_dep_of(SimEngine *e, guint action, guint dep);
void sim_record_end_of(SimEngine *e, guint action);
void sim_record_gpudirect(SimEngine *e, guint action);
void sim_record_memory(SimEngine *e);
static inline guint sim_record_begin(SimEngine *e, RokActionKind kind, RokStream stream, guint mb, guint op,
                                     guint tensor, guint64 bytes) {
  return e->record ? sim_record_action(e, kind, stream, mb, op, tensor, bytes) : ROK_NO_ID;
}
static inline void sim_record_dep(SimEngine *e, guint action, guint dep) {
  if (action != ROK_NO_ID && dep != ROK_NO_ID)
    sim_record_dep_of(e, action, dep);
}
static inline void sim_record_end(SimEngine *e, guint action) {
  if (action != ROK_NO_ID)
    sim_record_end_of(e, action);
}
static inline void sim_record_sample(SimEngine *e) {
  if (e->record)
    sim_record_memory(e);
}
