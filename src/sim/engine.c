/* The event loop, the compute stream and the GPU memory ledger.
 *
 * The compute stream plays, for each detailed micro-batch, the forward
 * items (one per op) and the compiled backward items, then the optimizer
 * step. An item starts when the previous one has ended, every tensor it
 * needs is ready, and its allocation fits the budget (or nothing in flight
 * could free memory). Time between the previous item's end and its start
 * is a stall, charged to the cause of the moment. */
#include "sim-private.h"

#include <math.h>

#include "rok/core.h"

void sim_engine_init(SimEngine *e, RokSim *sim) {
  memset(e, 0, sizeof *e);
  e->sim = sim;
  e->n_tensors = sim->n_tensors;
  sim_evq_init(&e->evq);
  e->jobs = g_array_new(FALSE, FALSE, sizeof(SimJob));
  e->gather = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint s = 0; s < ROK_STREAM_COUNT; s++)
    e->streams[s].queue = g_array_new(FALSE, FALSE, sizeof(guint));
}

void sim_engine_clear(SimEngine *e) {
  sim_evq_clear(&e->evq);
  g_array_unref(e->jobs);
  g_array_unref(e->gather);
  for (guint s = 0; s < ROK_STREAM_COUNT; s++)
    g_array_unref(e->streams[s].queue);
  g_free(e->ts);
  g_free(e->snapshots);
  g_free(e->mb_start);
  g_clear_pointer(&e->actions, g_array_unref);
  g_clear_pointer(&e->deps, g_array_unref);
  g_clear_pointer(&e->samples, g_array_unref);
}

static void reset_tensors(SimEngine *e) {
  gsize n = (gsize)e->n_mb * e->n_tensors;
  if (n > e->ts_capacity) {
    e->ts = g_renew(SimTensorState, e->ts, n);
    e->ts_capacity = n;
  }
  for (gsize i = 0; i < n; i++)
    e->ts[i] = (SimTensorState){.write_job = ROK_NO_ID, .read_job = ROK_NO_ID,
                                .producer_action = ROK_NO_ID, .stored_action = ROK_NO_ID,
                                .ready_action = ROK_NO_ID, .copy_action = ROK_NO_ID,
                                .use_action = ROK_NO_ID};
}

static void reset_streams(SimEngine *e) {
  g_array_set_size(e->jobs, 0);
  g_array_set_size(e->gather, 0);
  e->gather_requests = 0;
  guint lane = 0;
  for (guint s = 0; s < ROK_STREAM_COUNT; s++) {
    SimStream *st = &e->streams[s];
    g_array_set_size(st->queue, 0);
    GArray *queue = st->queue;
    guint n = s == ROK_STREAM_COMPUTE                                ? 0
              : s == ROK_STREAM_NVME_WRITE || s == ROK_STREAM_NVME_READ ? ROK_SSD_LANES
                                                                       : 1;
    *st = (SimStream){.queue = queue, .first_lane = lane, .n_lanes = n, .last_action = ROK_NO_ID,
                       .last_job = ROK_NO_ID, .ended_action = ROK_NO_ID, .ended_at = -1};
    for (guint l = lane; l < lane + n; l++) {
      e->lanes[l] = (SimLane){.job = ROK_NO_ID, .stream = s, .event = ROK_NO_ID};
      e->flows[l] = (RokFlow){0};
    }
    lane += n;
  }
  g_assert(lane == SIM_LANES);
  e->flowing = 0;
}

static void reset(SimEngine *e, const RokStepPlan *plan) {
  const RokSim *sim = e->sim;
  const RokHw *hw = sim->hw;
  const RokFixedMemory *fixed = &sim->trace->fixed;
  sim_evq_reset(&e->evq);
  e->now = e->end_time = 0;
  e->budget = plan->options.memory_budget ? plan->options.memory_budget : hw->gpu.memory;
  e->budget_bound = FALSE;
  e->budget_lo = 0;
  e->budget_hi = G_MAXUINT64;
  e->n_mb = sim_order_detail(sim->trace, plan->options.detail_micro_batches, sim->trace->micro_batches_per_step);
  e->prefetch_window = plan->options.prefetch_window;
  /* Window 0 holds back every read not needed yet: no other is the same. */
  e->window_lo = e->prefetch_window == 0 ? 0 : 1;
  e->window_hi = e->prefetch_window == 0 ? 1 : G_MAXUINT;
  e->gpudirect = hw->nvme.gpudirect;
  e->staging_cap = hw->host.pinned_buffer;
  e->pcie_latency = hw->pcie.latency;
  e->copy_overhead = hw->host.copy_overhead;
  e->copy_kernel_wait = hw->gpu.shared_cpus > 0 ? hw->gpu.copy_kernel_wait : 0;
  e->copy_kernel_free_at = hw->gpu.shared_cpus > 0 ? hw->gpu.copy_kernel_free_at : 0;
  gboolean launch_race = hw->gpu.shared_cpus > 0 && hw->gpu.copy_launch_ahead > 0;
  e->copy_launch_window = launch_race ? hw->gpu.copy_launch_window : 0;
  e->copy_launch_ahead = launch_race && e->copy_launch_window > 0 ? hw->gpu.copy_launch_ahead : 0;
  e->copies_in_order = hw->gpu.shared_cpus > 0 && hw->gpu.copy_queues_in_order;
  e->p2p_busy = 0;
  gboolean p2p = hw->interconnect.intra_node_pcie && hw->interconnect.gpus_per_node > 0;
  e->p2p_link[0] = p2p ? MIN(1.0, hw->interconnect.intra_node_bandwidth / hw->pcie.d2h_bandwidth) : 0;
  e->p2p_link[1] = p2p ? MIN(1.0, hw->interconnect.intra_node_bandwidth / hw->pcie.h2d_bandwidth) : 0;
  e->ssd_last_end = G_MININT64 / 4; /* long idle: the step's first leg finds the disk asleep */
  e->ssd_awake_at = e->ssd_submitted_at = 0;
  e->ssd_warm = FALSE;
  e->leg_cpu = hw->gpu.shared_cpus > 0 ? hw->nvme.leg_cpu : 0;
  e->request_cpu = hw->gpu.shared_cpus > 0 ? hw->nvme.request_cpu : 0;
  e->copy_leg_cpu = hw->gpu.shared_cpus > 0 ? hw->gpu.copy_leg_cpu : 0;
  e->d2h_speed = hw->pcie.d2h_bandwidth;
  e->h2d_speed = hw->pcie.h2d_bandwidth;
  reset_tensors(e);
  reset_streams(e);
  e->live = e->peak = rok_fixed_memory_bytes(fixed);
  e->pending_free = e->staging_used = e->staging_peak = e->host_used = e->host_peak = 0;
  e->peak_time = 0;
  e->peak_kind = ROK_ACTION_FORWARD;
  e->peak_op = 0;
  e->peak_mb = 0;
  e->mb = e->index = 0;
  e->phase = PHASE_FORWARD;
  e->running = e->stalled_on_memory = FALSE;
  e->stall_cause = -1;
  e->compute_action = e->last_compute_action = ROK_NO_ID;
  e->compute_event = ROK_NO_ID;
  e->compute_left = e->compute_since = e->compute_start = e->kernel_ns = 0;
  e->first_base_ns = e->last_base_ns = 0;
  e->idle_cpu_ns = 0;
  e->idle_cpu_at = -1;
  e->last_kernel_start = -1;
  e->items_started = 0;
  e->free_kernel = G_MAXUINT64;
  e->free_at = 0;
  e->shared_cpus = (guint)MIN(hw->gpu.shared_cpus, G_MAXUINT / 2);
  e->cpu_legs = 0;
  e->next_prefetch = 0;
  e->last_free_action = e->last_staging_release = ROK_NO_ID;
  e->counters = (SimCounters){0};
  e->snapshots = g_renew(SimCounters, e->snapshots, e->n_mb + 1);
  e->mb_start = g_renew(gint64, e->mb_start, e->n_mb);
  e->bwd0_end = 0;
  g_clear_pointer(&e->actions, g_array_unref);
  g_clear_pointer(&e->deps, g_array_unref);
  g_clear_pointer(&e->samples, g_array_unref);
  if (e->record) {
    e->actions = g_array_new(FALSE, FALSE, sizeof(RokAction));
    e->deps = g_array_new(FALSE, FALSE, sizeof(guint));
    e->samples = g_array_new(FALSE, FALSE, sizeof(RokSimSample));
    sim_record_sample(e);
  }
}

/* ---- memory ---- */

/* The compute work running or next to run: where a peak happens. */
static void where(const SimEngine *e, RokActionKind *kind, guint *op) {
  if (e->phase == PHASE_FORWARD) {
    *kind = ROK_ACTION_FORWARD;
    *op = e->index;
  } else if (e->phase == PHASE_BACKWARD) {
    const SimItem *item = sim_item(&e->sim->prog, e->index);
    *kind = item->kind;
    *op = item->op;
  } else {
    *kind = ROK_ACTION_OPTIMIZER;
    *op = ROK_NO_ID;
  }
}

void sim_mem_add(SimEngine *e, guint64 bytes) {
  e->live += bytes;
  if (e->live > e->peak) {
    e->peak = e->live;
    e->peak_time = e->now;
    e->peak_mb = e->mb;
    where(e, &e->peak_kind, &e->peak_op);
  }
  if (bytes > 0)
    sim_record_sample(e);
}

void sim_mem_sub(SimEngine *e, guint64 bytes) {
  g_assert(e->live >= bytes);
  e->live -= bytes;
  if (bytes > 0)
    sim_record_sample(e);
}

void sim_staging_change(SimEngine *e, guint64 bytes, gboolean take) {
  g_assert(take || e->staging_used >= bytes);
  e->staging_used = take ? e->staging_used + bytes : e->staging_used - bytes;
  e->staging_peak = MAX(e->staging_peak, e->staging_used);
  sim_record_sample(e);
}

void sim_tensor_alloc(SimEngine *e, guint mb, guint tensor) {
  SimTensorState *ts = sim_ts(e, mb, tensor);
  g_assert(!ts->resident);
  ts->resident = 1;
  sim_mem_add(e, rok_trace_tensor(e->sim->trace, tensor)->bytes);
}

guint sim_tensor_free(SimEngine *e, guint mb, guint tensor, RokStream stream, guint cause) {
  SimTensorState *ts = sim_ts(e, mb, tensor);
  g_assert(ts->resident);
  guint64 bytes = rok_trace_tensor(e->sim->trace, tensor)->bytes;
  ts->resident = 0;
  sim_mem_sub(e, bytes);
  guint action = sim_record_begin(e, ROK_ACTION_FREE, stream, mb, ROK_NO_ID, tensor, bytes);
  sim_record_dep(e, action, cause);
  e->last_free_action = action;
  return action;
}

/* ---- the compute stream ---- */

static void view(const SimEngine *e, SimItemView *v) {
  const RokSim *sim = e->sim;
  *v = (SimItemView){0};
  if (e->phase == PHASE_FORWARD) {
    const RokOp *op = rok_trace_op(sim->trace, e->index);
    v->kind = ROK_ACTION_FORWARD;
    v->op = e->index;
    v->ns = sim->fwd_ns[e->index] + sim->prog.fwd_check_ns[e->index];
    v->allocs = (const guint *)op->outputs->data;
    v->n_allocs = op->outputs->len;
    v->frees = sim->fwd_rel_ids + sim->fwd_rel[e->index];
    v->n_frees = sim->fwd_rel[e->index + 1] - sim->fwd_rel[e->index];
  } else if (e->phase == PHASE_BACKWARD) {
    const SimProgram *prog = &sim->prog;
    const SimItem *item = sim_item(prog, e->index);
    *v = (SimItemView){.kind = item->kind, .op = item->op, .ns = item->ns, .work = item->work_bytes,
                       .done = item->done_bytes, .needs = sim_ids(prog, item->needs), .n_needs = item->n_needs,
                       .allocs = sim_ids(prog, item->allocs), .n_allocs = item->n_allocs,
                       .frees = sim_ids(prog, item->frees), .n_frees = item->n_frees};
  } else {
    v->kind = ROK_ACTION_OPTIMIZER;
    v->op = ROK_NO_ID;
    v->ns = sim->optimizer_ns;
  }
}

static gboolean ready(const SimTensorState *ts) {
  return ts->resident && ts->read != R_ISSUED;
}

/* Switch the stall being charged to `cause` (-1: no stall). */
static void stall_to(SimEngine *e, gint cause) {
  if (e->stall_cause >= 0)
    e->counters.stall_ns[e->stall_cause] += e->now - e->stall_since;
  e->stall_cause = cause;
  e->stall_since = e->now;
  if (cause == ROK_STALL_MEMORY)
    e->stalled_on_memory = TRUE;
}

static gint blocking_cause(SimEngine *e, const SimItemView *v) {
  for (guint n = 0; n < v->n_needs; n++)
    if (!ready(sim_ts(e, e->mb, v->needs[n])))
      return sim_wait_cause(e, e->mb, v->needs[n]);
  guint64 need = v->work;
  for (guint a = 0; a < v->n_allocs; a++)
    if (!sim_ts(e, e->mb, v->allocs[a])->resident)
      need += rok_trace_tensor(e->sim->trace, v->allocs[a])->bytes;
  /* With nothing about to be freed the compute goes ahead, budget or not. */
  if (e->pending_free > 0 && sim_over_budget(e, e->live + need))
    return ROK_STALL_MEMORY;
  return -1;
}

static void record_start(SimEngine *e, const SimItemView *v) {
  guint action = sim_record_begin(e, v->kind, ROK_STREAM_COMPUTE, e->mb, v->op, ROK_NO_ID, 0);
  e->compute_action = action;
  if (action == ROK_NO_ID)
    return;
  sim_record_dep(e, action, e->last_compute_action);
  if (e->stalled_on_memory)
    sim_record_dep(e, action, e->last_free_action);
  for (guint n = 0; n < v->n_needs; n++)
    sim_record_dep(e, action, sim_ts(e, e->mb, v->needs[n])->ready_action);
}

/* With copies on the compute processors (gpu.shared_cpus = N), k copy
 * legs running take a processor each from the kernels, which keep one:
 * the OS runs a thread that wakes at once, so a leg's copy and check go at
 * a processor's speed and the kernel's work waits on the processor it
 * lost (validate-gpt's offload row, PoCL's trace: 256 KiB h2d legs took
 * 160-235 us, a processor's speed, where sharing the processors fairly
 * with the kernels' threads had them at 282; the GEMMs beside them ran
 * 1.2-2x their time alone). With one processor the legs and the kernels
 * share it. */
double sim_cpus_of_legs(double n, double k, gboolean kernels) {
  if (!kernels)
    return MIN(k, n);
  return n >= 2 ? MIN(k, n - 1) : k / (k + 1);
}

double sim_legs_cpus(const SimEngine *e) {
  return sim_cpus_of_legs(e->shared_cpus, e->cpu_legs, e->running);
}

/* The compute stream's speed: the processors the legs leave it. */
static double compute_pace(const SimEngine *e) {
  if (e->shared_cpus == 0 || e->cpu_legs == 0)
    return 1.0;
  return 1.0 - sim_legs_cpus(e) / (double)e->shared_cpus;
}

static gint64 stretched(const SimEngine *e, gint64 work) {
  double pace = compute_pace(e);
  return pace == 1.0 ? work : (gint64)ceil((double)work / pace - 1e-6);
}

/* The running item's work left now (ns at full speed). */
static gint64 work_left(const SimEngine *e) {
  gint64 done = (gint64)llround((double)(e->now - e->compute_since) * compute_pace(e));
  return MAX(e->compute_left - done, 0);
}

gint64 sim_kernel_left(const SimEngine *e) {
  if (!e->running)
    return 0;
  gint64 left = work_left(e);
  if (left > e->kernel_ns) /* a backward's first kernel: the second is still to come */
    left -= e->kernel_ns;
  return stretched(e, left);
}

/* When the running item's last kernel began: -1 while its first runs.
 * The pace has not changed since compute_since (every change banks), so
 * a crossing since then is where the work left met the last kernel's. */
static gint64 last_kernel_began(const SimEngine *e) {
  if (e->last_kernel_start >= 0 || work_left(e) > e->kernel_ns)
    return e->last_kernel_start;
  return e->compute_since + (gint64)ceil((double)(e->compute_left - e->kernel_ns) / compute_pace(e));
}

/* The launch in progress of the kernel in progress: its start, its own
 * length and its index among the kernel's launches. On a CPU device the
 * executor launches a kernel of more than ROK_KERNEL_CHUNK_SECONDS of
 * work as launches of about that much, and PoCL frees a processor for
 * copies once one is done with the launch, not the kernel
 * (bench-small-tensors' 2-layer GPT, 2026-12-03: the first h2d leg issued
 * 3-22% into a 224-715 ms backward ended 3-12 ms later, where the model,
 * one launch a kernel, had it wait 137-266 ms). */
static guint64 launch_in_progress(const SimEngine *e, gint64 *start, gint64 *length) {
  *start = last_kernel_began(e);
  *length = e->last_base_ns;
  if (*start < 0) {
    *start = e->compute_start;
    *length = e->first_base_ns;
  }
  gint64 chunk = (gint64)(ROK_KERNEL_CHUNK_SECONDS * 1e9);
  if (e->shared_cpus == 0 || *length <= chunk)
    return 0;
  gint64 launches = (*length + chunk - 1) / chunk, each = *length / launches;
  gint64 at = CLAMP((e->now - *start) / each, 0, launches - 1);
  *start += at * each;
  *length = each;
  return (guint64)at;
}

/* The kernels' own lengths, not as the copies beside them and the host's
 * threads stretched them: those take from one processor at a time, and
 * the one they took least from is done when the kernel alone would be
 * (PoCL traces of validate-gpt's offload row: a GEMM's first copy went at
 * 0.98 of the GEMM's shortest run over the steps, 0.78 of its run then). */
gint64 sim_kernel_until(const SimEngine *e, double share) {
  if (!e->running)
    return 0;
  gint64 start = 0, length = 0;
  launch_in_progress(e, &start, &length);
  return MAX(start + (gint64)llround(share * (double)length) - e->now, 0);
}

gboolean sim_kernel_leaves_cpu(const SimEngine *e) {
  const SimItemView *v = &e->running_view;
  return e->running && v->kind == ROK_ACTION_BACKWARD && v->op < e->sim->n_ops && e->sim->bwd_first_idle[v->op] &&
         last_kernel_began(e) < 0;
}

guint64 sim_kernel_id(const SimEngine *e) {
  gint64 start = 0, length = 0;
  guint64 launch = e->running ? launch_in_progress(e, &start, &length) : 0;
  return ((2 * e->items_started + (work_left(e) <= e->kernel_ns)) << 20) + launch;
}

/* Bring the running item's work left up to now at the current pace. */
static void compute_bank(SimEngine *e) {
  e->last_kernel_start = last_kernel_began(e);
  e->compute_left = work_left(e);
  e->compute_since = e->now;
}

/* The N processors lose cpu_ns of their time to the running item's
 * kernels: its work grows by cpu_ns / N (as a thread beside them would
 * cost it), the kernel in progress with it (sim_kernel_left: the last
 * kernel's length grows when it is the one running). While nothing runs
 * the processors had it to spare, unless an item starts at that very
 * moment: a backward's prefetches are issued as the item before ends, and
 * the executor launches the next item's kernels first (validate-gpt's
 * offload row, 2026-12-07: the reads of layer 3 went out 63 us into the
 * loss's backward and stretched it from 494 us to 1.13 ms, where the
 * model charged them to no kernel and its loss took 477 us). */
void sim_cpu_take(SimEngine *e, gint64 cpu_ns) {
  if (e->shared_cpus == 0 || cpu_ns <= 0)
    return;
  if (!e->running) {
    if (e->idle_cpu_at != e->now)
      e->idle_cpu_ns = 0;
    e->idle_cpu_ns += cpu_ns;
    e->idle_cpu_at = e->now;
    return;
  }
  compute_bank(e);
  gint64 lost = (cpu_ns + e->shared_cpus - 1) / e->shared_cpus;
  if (e->compute_left <= e->kernel_ns)
    e->kernel_ns += lost;
  e->compute_left += lost;
  sim_evq_reschedule(&e->evq, e->compute_event, e->now + stretched(e, e->compute_left));
}

void sim_cpu_legs_change(SimEngine *e, gboolean start) {
  if (e->shared_cpus == 0)
    return;
  if (e->running)
    compute_bank(e);
  g_assert(start || e->cpu_legs > 0);
  e->cpu_legs = start ? e->cpu_legs + 1 : e->cpu_legs - 1;
  if (e->running)
    sim_evq_reschedule(&e->evq, e->compute_event, e->now + stretched(e, e->compute_left));
  sim_cpu_flows_update(e);
}

/* The share of the running item's time its collectives spend on the PCIe
 * link (all of an op's communication taken as peer-to-peer within the
 * node: tensor parallelism's, those its GEMMs hide included, and ZeRO-3's
 * exposed gathers). */
static double p2p_share(const SimEngine *e, const SimItemView *v) {
  if (e->p2p_link[0] <= 0 || v->op == ROK_NO_ID || v->ns <= 0)
    return 0;
  const RokSim *sim = e->sim;
  gint64 comm = v->kind == ROK_ACTION_BACKWARD ? sim->comm_bwd_ns[v->op] + sim->hidden_bwd_ns[v->op]
                                               : sim->comm_fwd_ns[v->op];
  return MIN(1.0, (double)comm / (double)v->ns);
}

static void compute_try_start(SimEngine *e) {
  if (e->running || e->phase == PHASE_DONE)
    return;
  SimItemView v;
  view(e, &v);
  gint cause = blocking_cause(e, &v);
  stall_to(e, cause);
  if (cause >= 0)
    return;
  e->running = TRUE;
  e->running_view = v;
  record_start(e, &v);
  e->stalled_on_memory = FALSE;
  for (guint a = 0; a < v.n_allocs; a++) {
    SimTensorState *ts = sim_ts(e, e->mb, v.allocs[a]);
    ts->owned = !ts->resident;
    if (!ts->resident)
      sim_tensor_alloc(e, e->mb, v.allocs[a]);
    if (v.kind == ROK_ACTION_FORWARD)
      ts->producer_action = e->compute_action;
  }
  sim_mem_add(e, v.work);
  e->compute_left = v.ns;
  /* A copy waits for the kernel in progress (gpu.copy_kernel_free_at or
   * copy_kernel_wait): an item is taken as one kernel, a backward as two
   * (a GEMM's dW and dX), the first of the calibrated share. */
  e->kernel_ns = e->last_base_ns =
      v.kind == ROK_ACTION_BACKWARD && v.op < e->sim->n_ops
          ? v.ns - (gint64)llround(e->sim->bwd_first[v.op] * (double)v.ns)
          : v.ns;
  e->first_base_ns = v.ns - e->kernel_ns;
  e->compute_since = e->compute_start = e->now;
  e->last_kernel_start = e->first_base_ns > 0 ? -1 : e->now;
  e->items_started++;
  e->compute_event = sim_evq_push(&e->evq, e->now + stretched(e, v.ns), EV_COMPUTE, 0);
  sim_transfer_kernel_launched(e);
  if (e->cpu_legs > 0) /* the kernels take the processors back from the copies */
    sim_cpu_flows_update(e);
  if (e->idle_cpu_at == e->now && e->idle_cpu_ns > 0)
    sim_cpu_take(e, e->idle_cpu_ns);
  e->idle_cpu_ns = 0;
  sim_p2p_update(e, p2p_share(e, &v));
}

static void forward_release(SimEngine *e, guint tensor) {
  SimTensorState *ts = sim_ts(e, e->mb, tensor);
  ts->fwd_done = 1;
  ts->use_action = e->compute_action;
  switch (e->sim->prog.eff[tensor]) {
  case ROK_DECISION_OFFLOAD_NVME:
  case ROK_DECISION_OFFLOAD_HOST:
    sim_offload_maybe_free(e, e->mb, tensor, ROK_STREAM_COMPUTE, e->compute_action);
    break;
  case ROK_DECISION_KEEP:
    break;
  default: /* transient, recomputed */
    if (ts->resident)
      sim_tensor_free(e, e->mb, tensor, ROK_STREAM_COMPUTE, e->compute_action);
  }
}

static void backward_release(SimEngine *e, guint entry) {
  guint tensor = entry & ~SIM_TEMP_BIT;
  SimTensorState *ts = sim_ts(e, e->mb, tensor);
  if (entry & SIM_TEMP_BIT) {
    if (ts->owned && ts->resident)
      sim_tensor_free(e, e->mb, tensor, ROK_STREAM_COMPUTE, e->compute_action);
    ts->owned = 0;
    return;
  }
  guint8 eff = e->sim->prog.eff[tensor];
  if (eff == ROK_DECISION_OFFLOAD_NVME || eff == ROK_DECISION_OFFLOAD_HOST)
    sim_offload_release(e, e->mb, tensor, e->compute_action);
  else if (ts->resident)
    sim_tensor_free(e, e->mb, tensor, ROK_STREAM_COMPUTE, e->compute_action);
}

static void snapshot(SimEngine *e, guint slot) {
  e->snapshots[slot] = e->counters;
}

/* Enter block `block` of the stage's order: the first forward of a
 * micro-batch starts its period (counters and start time); a backward
 * block prefetches from its first item on. */
static void enter_block(SimEngine *e, guint block) {
  const SimOrder *order = &e->sim->order;
  const SimBlock *b = &g_array_index(order->blocks, SimBlock, block);
  guint position = order->chunks - 1 - b->vstage;
  e->block = block;
  e->mb = b->mb;
  e->phase = b->backward ? PHASE_BACKWARD : PHASE_FORWARD;
  e->index = b->backward ? order->bwd_lo[position] : order->fwd_lo[b->vstage];
  e->end = b->backward ? order->bwd_lo[position + 1] : order->fwd_lo[b->vstage + 1];
  if (!b->backward && b->vstage == 0 && b->mb > 0) {
    e->mb_start[e->mb] = e->now;
    snapshot(e, e->mb);
  }
  if (b->backward) {
    const SimProgram *prog = &e->sim->prog;
    e->next_prefetch = 0;
    while (e->next_prefetch < prog->prefetch->len &&
           prog->first_need[g_array_index(prog->prefetch, guint, e->next_prefetch)] < e->index)
      e->next_prefetch++;
  }
}

static void advance(SimEngine *e) {
  if (e->phase == PHASE_OPTIMIZER) {
    e->phase = PHASE_DONE;
    e->end_time = e->now;
    return;
  }
  if (++e->index < e->end)
    return;
  const SimBlock *b = &g_array_index(e->sim->order.blocks, SimBlock, e->block);
  sim_order_block_done(&e->sim->order, b, e->now);
  if (b->backward && b->mb == 0 && b->vstage == 0) {
    snapshot(e, e->n_mb);
    e->bwd0_end = e->now;
  }
  if (e->block + 1 < e->sim->order.blocks->len)
    enter_block(e, e->block + 1);
  else
    e->phase = PHASE_OPTIMIZER;
}

static void compute_end(SimEngine *e) {
  SimItemView v = e->running_view; /* the program does not change during a run */
  e->running = FALSE;
  e->compute_event = ROK_NO_ID;
  if (e->cpu_legs > 0)
    sim_cpu_flows_update(e);
  sim_p2p_update(e, 0);
  gint64 elapsed = e->now - e->compute_start; /* v.ns, unless copies slowed it */
  e->counters.compute_ns += elapsed;
  e->counters.busy_ns[ROK_STREAM_COMPUTE] += elapsed;
  if (v.kind == ROK_ACTION_RECOMPUTE)
    e->counters.recompute_ns += elapsed;
  sim_record_end(e, e->compute_action);
  if (v.kind == ROK_ACTION_FORWARD) {
    for (guint a = 0; a < v.n_allocs; a++) {
      guint8 eff = e->sim->prog.eff[v.allocs[a]];
      if (eff == ROK_DECISION_OFFLOAD_NVME || eff == ROK_DECISION_OFFLOAD_HOST)
        sim_offload_start(e, e->mb, v.allocs[a]);
    }
  }
  sim_mem_sub(e, v.done);
  for (guint f = 0; f < v.n_frees; f++) {
    if (v.kind == ROK_ACTION_FORWARD)
      forward_release(e, v.frees[f]);
    else
      backward_release(e, v.frees[f]);
  }
  e->last_compute_action = e->compute_action;
  advance(e);
}

/* Copies out start before reads are issued, so that a tensor needed the
 * moment it was made is still copied out, as it would be for real. */
static void pump(SimEngine *e) {
  sim_streams_pump(e);
  sim_prefetch_pump(e);
  sim_streams_pump(e);
  if (!e->running) /* checked here: most events come while an item runs */
    compute_try_start(e);
}

gboolean sim_engine_run(SimEngine *e, const RokStepPlan *plan, GError **error) {
  reset(e, plan);
  const RokTrace *trace = e->sim->trace;
  SimOrder *order = &e->sim->order;
  sim_order_blocks(order->blocks, trace->stage, trace->stages, trace->chunks, e->n_mb);
  memset(order->block_ns, 0, sizeof(gint64) * 2 * order->chunks);
  memset(order->block_count, 0, sizeof(guint) * 2 * order->chunks);
  order->block_since = 0;
  e->mb_start[0] = 0;
  snapshot(e, 0);
  enter_block(e, 0);
  pump(e);
  RokEvent event;
  while (sim_evq_pop(&e->evq, &event)) {
    g_assert(event.time >= e->now);
    e->now = event.time;
    e->counters.events++;
    if (event.kind == EV_COMPUTE)
      compute_end(e);
    else
      sim_transfer_event(e, event.kind, event.arg);
    pump(e);
  }
  /* Only a bug can fail these: every wait has something in flight, and
   * every tensor is released once it is no longer needed. */
  const RokFixedMemory *fixed = &e->sim->trace->fixed;
  guint64 fixed_bytes = rok_fixed_memory_bytes(fixed);
  if (e->phase != PHASE_DONE) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "internal error: simulation stopped with work left (micro-batch %u, %s item %u)", e->mb,
                e->phase == PHASE_FORWARD ? "forward" : "backward", e->index);
    return FALSE;
  }
  if (e->live != fixed_bytes || e->staging_used != 0 || e->host_used != 0 || e->pending_free != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "internal error: %" G_GUINT64_FORMAT " bytes of GPU memory, %" G_GUINT64_FORMAT
                " of staging and %" G_GUINT64_FORMAT " of host memory left at the end of the step",
                e->live - fixed_bytes, e->staging_used, e->host_used);
    return FALSE;
  }
  return TRUE;
}
