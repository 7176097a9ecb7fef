/* Transfers: offload and prefetch jobs on the d2h, h2d, nvme-write and
 * nvme-read streams, their fluid flows, the staging buffer, and the
 * prefetcher of the micro-batch in backward.
 *
 * A job is a tensor's copy out (write) or back (read) along a path of one
 * or two legs; each leg runs on one stream, which starts its legs in the
 * order they were queued: the d2h and h2d streams one after the other, an
 * SSD stream up to ROK_SSD_LANES at once (stream_try_start). A leg pays
 * its latency, then flows at the rate the fluid model gives it until its
 * bytes have moved. */
#include "sim-private.h"

#include <math.h>

/* Streams of each path's legs, for writes and for reads. */
static const RokStream write_legs[][2] = {
    [PATH_HOST] = {ROK_STREAM_D2H},
    [PATH_DIRECT] = {ROK_STREAM_NVME_WRITE},
    [PATH_STAGED] = {ROK_STREAM_D2H, ROK_STREAM_NVME_WRITE},
};
static const RokStream read_legs[][2] = {
    [PATH_HOST] = {ROK_STREAM_H2D},
    [PATH_DIRECT] = {ROK_STREAM_NVME_READ},
    [PATH_STAGED] = {ROK_STREAM_NVME_READ, ROK_STREAM_H2D},
    [PATH_FROM_STAGING] = {ROK_STREAM_H2D},
};

static RokStream leg_stream(const SimJob *j) {
  return j->is_read ? read_legs[j->path][j->leg] : write_legs[j->path][j->leg];
}

/* The share of its rate at which the copy of an h2d leg primed on a
 * device without a copy engine runs before the leg's turn comes: a fit
 * that stands for when PoCL takes the queued copies and for the wake of a
 * leg that waits for its own (its trace has them run back to back at the
 * full rate, from 47 us after they were enqueued; docs/simulator.md
 * "Copies primed together" says why no calibrated figure takes its place
 * yet). On the development VM, 2026-12-07, in the kept
 * runs of stops 60-61 (validate-gpt's and the LLaMA-shaped model's
 * offload, tba and rok rows; 3,500 h2d legs begun while the one before
 * ran), such a leg ended after the one before by its check and part of
 * its copy (688 KiB after 344 KiB: 254 us, its check 147, its copy 111),
 * where copies taken to run side by side at the full rate left it only
 * its check; one after another at a third to a half of the rate, the
 * size classes' medians came within 0.86-1.27x. Re-predicted at a half,
 * those runs' h2d streams came out -0.3% against keep (median; +3.3%
 * side by side) and 89 of 120 within 15% (86). */
#define QUEUED_COPY_SHARE 0.5

/* The first leg of a staged path reserves the tensor's bytes in the
 * staging buffer. */
static gboolean leg_takes_staging(const SimJob *j) {
  return j->path == PATH_STAGED && j->leg == 0;
}

/* The host's check of a copy that crosses PCIe (host.checksum_*: its
 * first bytes still in the caches, the rest from memory): on the leg's own
 * time, while its link is free. */
static gint64 leg_check(const SimEngine *e, const SimJob *j) {
  return (gint64)llround(rok_hw_host_check_seconds(e->sim->hw, j->bytes) * 1e9);
}

/* The leg's check as a rate over its bytes (0: none modelled). */
static double leg_check_rate(const SimEngine *e, const SimJob *j) {
  double seconds = rok_hw_host_check_seconds(e->sim->hw, j->bytes);
  return seconds > 0 ? (double)j->bytes / seconds : 0;
}

/* A copy in or out of device memory: on a device without a copy engine of
 * its own (gpu.shared_cpus), it runs on the compute processors. */
static gboolean leg_on_cpus(const SimJob *j) {
  RokStream s = leg_stream(j);
  return s == ROK_STREAM_D2H || s == ROK_STREAM_H2D || j->path == PATH_DIRECT;
}

/* On the compute processors (gpu.shared_cpus) a copy's check is part of its
 * flow, slowed with it; elsewhere it runs with the link idle. */
static gboolean check_in_flow(const SimEngine *e, const SimJob *j) {
  return e->shared_cpus > 0 && leg_on_cpus(j);
}

static gboolean leg_on_ssd(const SimJob *j) {
  RokStream s = leg_stream(j);
  return s == ROK_STREAM_NVME_WRITE || s == ROK_STREAM_NVME_READ;
}

/* A leg's requests to the SSDs (0 for a copy leg). */
static guint64 leg_requests(const SimJob *j) {
  return leg_on_ssd(j) ? MAX((j->bytes + ROK_SIM_CHUNK_BYTES - 1) / ROK_SIM_CHUNK_BYTES, 1) : 0;
}

/* The processor time a leg takes on the host besides moving and checking
 * its bytes, half when it is issued and half as it ends, both on the
 * compute processors (0 without shared_cpus): a d2h or h2d leg's
 * gpu.copy_leg_cpu; an SSD leg's nvme.leg_cpu and request_cpu per
 * ROK_SIM_CHUNK_BYTES. */
static gint64 leg_cpu_half(const SimEngine *e, const SimJob *j) {
  RokStream s = leg_stream(j);
  if (s == ROK_STREAM_D2H || s == ROK_STREAM_H2D)
    return e->copy_leg_cpu / 2;
  if (!leg_on_ssd(j) || (e->leg_cpu == 0 && e->request_cpu == 0))
    return 0;
  return (e->leg_cpu + (gint64)leg_requests(j) * e->request_cpu) / 2;
}

/* What an SSD leg pays more for the disk's state (negative: less).
 * nvme.wake_write or wake_read when the leg finds the disk without a
 * request for nvme.wake_after or longer (deep_wake_write or deep_wake_read
 * after deep_wake_after or longer): no other SSD leg in progress on either
 * stream, the last one ended that long ago. A leg that reaches the disk
 * (`submitted` from now) while another still wakes it waits the rest of
 * that wake. A leg begun the moment another ended (leg_chained), and each
 * that joins it while it runs, pays nvme.warm_write or warm_read less: the
 * disk and its host still busy (rok calibrate's chained bursts: on the
 * development VM, 2026-12-07, a lone 256 KiB read took 218 us begun from
 * the completion of one before it, 289 after 1 ms idle). */
static gint64 leg_disk_state(SimEngine *e, const SimJob *j, gint64 submitted) {
  const RokHw *hw = e->sim->hw;
  gboolean write = leg_stream(j) == ROK_STREAM_NVME_WRITE;
  gint64 warm = write ? hw->nvme.warm_write : hw->nvme.warm_read;
  if (j->chained) {
    e->ssd_warm = TRUE;
    return -warm;
  }
  /* The leg itself is in progress already. */
  if (e->streams[ROK_STREAM_NVME_WRITE].running + e->streams[ROK_STREAM_NVME_READ].running > 1)
    return e->ssd_warm ? -warm : MAX(e->ssd_awake_at - e->now - submitted, 0);
  e->ssd_warm = FALSE;
  gint64 idle = e->now - e->ssd_last_end, wake = 0;
  gboolean deep = hw->nvme.deep_wake_write > 0 || hw->nvme.deep_wake_read > 0;
  if (deep && idle >= hw->nvme.deep_wake_after)
    wake = write ? hw->nvme.deep_wake_write : hw->nvme.deep_wake_read;
  else if (idle >= hw->nvme.wake_after)
    wake = write ? hw->nvme.wake_write : hw->nvme.wake_read;
  if (wake <= 0)
    return 0;
  e->ssd_awake_at = e->now + submitted + wake;
  return wake;
}

/* What a leg pays before its bytes move: the links' latencies, the
 * executor's hand-offs (host.copy_overhead: to the leg's thread and back;
 * a d2h leg queued ahead of the kernels was enqueued without the first;
 * an h2d leg's copies are enqueued as it is issued, but it waits for its
 * thread's wake all the same: on the development VM, 2026-12-04, 33-68
 * us from priming to the h2d thread taking it, against a hand-off round
 * trip of 43-48; with half of it its stream came out 3-51% short),
 * the check (unless it is in the flow) and, on the SSD streams, the
 * disk's latency, nvme.leg_overhead and the disk's wake (rok calibrate's
 * bursts), a write's own latency and leg overhead where the profile has
 * them. A copy leg that follows the one before it on its stream
 * (leg_follows) pays no hand-off and, of its latency, what is left since
 * its copies were enqueued. A primed h2d leg that does not follow pays
 * half a hand-off more: its thread, once it has the leg, waits for the
 * copies and PoCL's completion wakes it (PoCL's traces of validate-gpt's
 * and the LLaMA-shaped model's rok rows, 2026-12-07, tests/bench/
 * pocl_legs.py: such legs ended 24 and 30 us after their copies beyond
 * their checks, median, where the hand-off round trip was 24 and 26; the
 * streams came out 32% and 28% long). */
static gint64 leg_fixed(const SimEngine *e, const SimJob *j) {
  const RokHw *hw = e->sim->hw;
  gint64 base = 0;
  if (!leg_on_ssd(j) || j->path == PATH_DIRECT) { /* crosses PCIe */
    gint64 latency = j->follows ? MAX(j->made + e->pcie_latency - e->now, 0) : e->pcie_latency;
    base = latency + (check_in_flow(e, j) ? 0 : leg_check(e, j));
  }
  if (leg_on_ssd(j)) {
    gboolean write = leg_stream(j) == ROK_STREAM_NVME_WRITE;
    base += rok_hw_nvme_latency(hw, write) + rok_hw_nvme_leg_overhead(hw, write);
  }
  gint64 handoff = j->follows || j->chained ? 0 : j->ahead ? e->copy_overhead / 2 : e->copy_overhead;
  if (!j->follows && leg_stream(j) == ROK_STREAM_H2D && j->primed)
    handoff += e->copy_overhead / 2;
  return base + handoff;
}

/* How long an SSD leg waits for the I/O backend's one thread, which
 * issues every SSD request, to be done issuing the legs begun before it
 * (0 without shared_cpus). A leg that finds the thread idle costs it its
 * half of nvme.leg_cpu and request_cpu (the wake, the disk's kick); one
 * that comes while it is still issuing joins that burst and costs it
 * request_cpu per request. On the development VM, 2026-12-06, the legs
 * of a gather went out so: the second 42-157 us after the first, each
 * next 7-15 us after the one before (request_cpu 7.2 us; validate-gpt's
 * 5 reads of a backward and the LLaMA-shaped model's 4-5 writes and
 * reads), where a leg_cpu half apiece (76 us) put validate-gpt's read
 * stream 27-36% long. */
static gint64 submit_wait(SimEngine *e, const SimJob *j) {
  gint64 cost = leg_on_ssd(j) ? leg_cpu_half(e, j) : 0;
  if (cost == 0)
    return 0;
  gint64 at = e->now;
  if (e->ssd_submitted_at > e->now) {
    at = e->ssd_submitted_at;
    cost = (gint64)leg_requests(j) * e->request_cpu;
  }
  e->ssd_submitted_at = at + cost;
  return at - e->now;
}

/* What a leg waits before its bytes move: the I/O thread (submit_wait),
 * then its fixed part and the disk's state. */
static gint64 leg_latency(SimEngine *e, const SimJob *j) {
  gint64 submitted = submit_wait(e, j);
  return submitted + MAX(leg_fixed(e, j) + (leg_on_ssd(j) ? leg_disk_state(e, j, submitted) : 0), 0);
}

/* The share of a processor a leg on the compute processors gets: the
 * legs' processors (sim_legs_cpus) over the legs. */
static double cpu_share(const SimEngine *e) {
  return e->cpu_legs == 0 ? 1.0 : sim_legs_cpus(e) / (double)e->cpu_legs;
}

/* A leg's own cap (0: none): on the compute processors, its copy and check
 * in turn at its share of a processor (its check alone where its copy was
 * done while it waited for its stream); on the
 * SSD streams, each request (ROK_SIM_CHUNK_BYTES, or the tensor when
 * smaller) takes nvme.request_overhead, and request_overhead_per_mib per
 * MiB of it, besides its bytes at the array's rate. */
static double leg_cap(const SimEngine *e, const SimJob *j, double link) {
  double cap = 0;
  if (check_in_flow(e, j)) {
    double rate = leg_check_rate(e, j);
    double left = j->copy_left; /* its copy's share still to run, then its check */
    double solo = left == 0 ? rate : rate > 0 ? 1.0 / (left / link + 1.0 / rate) : link / left;
    cap = solo * cpu_share(e);
  }
  RokStream s = leg_stream(j);
  gint64 fixed = e->sim->hw->nvme.request_overhead, per_mib = e->sim->hw->nvme.request_overhead_per_mib;
  if ((fixed > 0 || per_mib > 0) && leg_on_ssd(j)) {
    double request = (double)MIN(j->bytes, (guint64)ROK_SIM_CHUNK_BYTES);
    double disk = s == ROK_STREAM_NVME_WRITE ? e->sim->nvme_write_speed : e->sim->nvme_read_speed;
    double own = ((double)fixed + (double)per_mib * request / (1 << 20)) / 1e9;
    double per = request / (own + (disk > 0 ? request / disk : 0));
    cap = cap > 0 ? MIN(cap, per) : per;
  }
  return cap;
}

static void leg_flow(const SimEngine *e, const SimJob *j, RokFlow *flow) {
  *flow = (RokFlow){.active = TRUE};
  switch (leg_stream(j)) {
  case ROK_STREAM_D2H:
    flow->speed[ROK_LINK_D2H] = e->d2h_speed;
    break;
  case ROK_STREAM_H2D:
    flow->speed[ROK_LINK_H2D] = e->h2d_speed;
    break;
  case ROK_STREAM_NVME_WRITE:
    flow->speed[ROK_LINK_NVME] = e->sim->nvme_write_speed;
    if (j->path == PATH_DIRECT)
      flow->speed[ROK_LINK_D2H] = e->d2h_speed;
    break;
  case ROK_STREAM_NVME_READ:
    flow->speed[ROK_LINK_NVME] = e->sim->nvme_read_speed;
    if (j->path == PATH_DIRECT)
      flow->speed[ROK_LINK_H2D] = e->h2d_speed;
    break;
  default:
    g_assert_not_reached();
  }
  double link = 0;
  for (gint r = 0; r < ROK_LINK_COUNT; r++)
    if (flow->speed[r] > 0 && (r == ROK_LINK_D2H || r == ROK_LINK_H2D))
      link = flow->speed[r];
  if (j->copy_left == 0) { /* only its check is left, on the host */
    flow->speed[ROK_LINK_D2H] = flow->speed[ROK_LINK_H2D] = 0;
  } else if (j->copy_left < 1) { /* the rest of its copy over all its bytes */
    flow->speed[ROK_LINK_D2H] /= j->copy_left;
    flow->speed[ROK_LINK_H2D] /= j->copy_left;
  }
  flow->cap = leg_cap(e, j, link);
}

static guint new_job(SimEngine *e, guint mb, guint tensor, gboolean is_read, SimPath path) {
  SimJob job = {.tensor = tensor, .mb = mb, .is_read = is_read, .path = path,
                .n_legs = path == PATH_STAGED ? 2 : 1, .state = JOB_QUEUED,
                .bytes = rok_trace_tensor(e->sim->trace, tensor)->bytes, .action = ROK_NO_ID,
                .issue_deps = {ROK_NO_ID, ROK_NO_ID}, .gather_dep = ROK_NO_ID};
  g_array_append_val(e->jobs, job);
  return e->jobs->len - 1;
}

/* The share of the array's rate an SSD leg takes alone, over its whole
 * time: its bytes over its latency and their flow at its own rate. */
static double leg_demand(const SimEngine *e, const SimJob *j) {
  RokFlow flow;
  leg_flow(e, j, &flow);
  double solo = sim_fluid_solo_rate(&flow, NULL);
  double bytes = (double)j->bytes, took = (double)leg_fixed(e, j) / 1e9 + bytes / solo;
  return took > 0 ? bytes / took / flow.speed[ROK_LINK_NVME] : 1.0;
}

/* Queue a job's next leg on its stream; an SSD leg's demand is taken
 * now, for stream_try_start to compare without working it out again at
 * every event while the leg waits. */
static void enqueue(SimEngine *e, guint id) {
  SimJob *j = sim_job(e, id);
  SimStream *st = &e->streams[leg_stream(j)];
  j->demand = leg_on_ssd(j) ? leg_demand(e, j) : 0;
  g_array_append_val(st->queue, id);
}

static gboolean primed(const SimEngine *e, const SimJob *j);
static gboolean copies_wait_for_kernels(const SimEngine *e);
static gint64 launch_wait(SimEngine *e);

/* An h2d leg issued in the middle of a kernel on a CPU device: the
 * executor enqueues its copies as it issues it (runner_h2d_prime), and
 * PoCL runs them, with every other copy queued meanwhile, once a
 * processor is done with the launch in progress, whether or not the
 * h2d thread is still checking the legs before. So the leg is made at
 * that free point, not when its turn on the stream comes (bench-small-
 * tensors' 2-layer GPT, 2026-12-03: eight legs read back from the SSDs
 * 4-5% into a 224 ms backward, 15 MiB, ended 4-21 ms later, where the
 * model, each leg waiting in its turn for a launch's free point, took
 * 17-20 ms for each). */
static gboolean primed_in_kernel(const SimEngine *e, const SimJob *j) {
  return leg_stream(j) == ROK_STREAM_H2D && e->shared_cpus > 0 && !e->copies_in_order && e->running &&
         copies_wait_for_kernels(e);
}

/* Nanoseconds to move `bytes` at `rate`, rounded up, forgiving the last
 * bits of floating-point error so that exact cases stay exact. */
static gint64 flow_ns(double bytes, double rate) {
  if (bytes <= 0)
    return 0;
  double ns = bytes * 1e9 / rate;
  return (gint64)ceil(ns - (ns * 1e-12 + 1e-6));
}

/* A copy's d2h leg, or a read's first leg or its h2d leg after the SSD,
 * queued: primed where its copies go ahead of the kernels as it is queued
 * (primed, below), or made at the kernel's free point (primed_in_kernel).
 * A staged write's SSD leg keeps what its d2h leg was. */
static void enqueue_primed(SimEngine *e, guint id) {
  SimJob *j = sim_job(e, id);
  j->made = e->now;
  j->primed = primed(e, j);
  if (!j->primed && primed_in_kernel(e, j)) {
    j->primed = TRUE;
    j->made = e->now + launch_wait(e);
  }
  j->copy_from = j->made;
  if (j->primed && leg_stream(j) == ROK_STREAM_H2D && e->shared_cpus > 0 && e->h2d_speed > 0) {
    SimStream *st = &e->streams[ROK_STREAM_H2D];
    j->copy_from = MAX(j->made, st->copies_until);
    st->copies_until =
        j->copy_from + (gint64)llround((double)flow_ns((double)j->bytes, e->h2d_speed) / QUEUED_COPY_SHARE);
  }
  enqueue(e, id);
}

static void staging_unref(SimEngine *e, SimTensorState *ts, guint64 bytes, guint action) {
  g_assert(ts->staging_refs > 0);
  if (--ts->staging_refs > 0)
    return;
  sim_staging_change(e, bytes, FALSE);
  e->last_staging_release = action;
}

/* ---- fluid flows ---- */

/* Bring every flow up to now, share the links again, and move the flows'
 * end events to match their new rates. */
static void reshare(SimEngine *e) {
  for (guint32 m = e->flowing; m != 0; m &= m - 1) {
    guint l = (guint)__builtin_ctz(m);
    SimLane *ln = &e->lanes[l];
    ln->remaining = MAX(0.0, ln->remaining - e->flows[l].rate * (double)(e->now - ln->last_update) / 1e9);
    ln->last_update = e->now;
  }
  /* Collectives and copies meet on the link as equals: the collectives
   * take what they need up to half of it (their time is in the op's, as
   * the interconnect alone costs it), the copies share the rest. */
  double taken[ROK_LINK_COUNT] = {0};
  taken[ROK_LINK_D2H] = MIN(0.5, e->p2p_busy * e->p2p_link[0]);
  taken[ROK_LINK_H2D] = MIN(0.5, e->p2p_busy * e->p2p_link[1]);
  /* Lanes past the last flowing one have no active flow. */
  sim_fluid_share_taken(e->flows, e->flowing ? 32 - (guint)__builtin_clz(e->flowing) : 0, taken);
  for (guint32 m = e->flowing; m != 0; m &= m - 1) {
    guint l = (guint)__builtin_ctz(m);
    SimLane *ln = &e->lanes[l];
    gint64 end = e->now + flow_ns(ln->remaining, e->flows[l].rate);
    if (ln->event == ROK_NO_ID)
      ln->event = sim_evq_push(&e->evq, end, EV_FLOW, l);
    else if (e->evq.events[ln->event].time != end)
      sim_evq_reschedule(&e->evq, ln->event, end);
  }
}

void sim_cpu_flows_update(SimEngine *e) {
  if (e->shared_cpus == 0)
    return;
  gboolean changed = FALSE;
  for (guint32 m = e->flowing; m != 0; m &= m - 1) {
    guint l = (guint)__builtin_ctz(m);
    SimLane *ln = &e->lanes[l];
    if (!leg_on_cpus(sim_job(e, ln->job)))
      continue;
    RokFlow flow;
    leg_flow(e, sim_job(e, ln->job), &flow);
    changed |= flow.cap != e->flows[l].cap;
    e->flows[l].cap = flow.cap;
  }
  if (changed)
    reshare(e);
}

void sim_p2p_update(SimEngine *e, double busy) {
  if (busy == e->p2p_busy)
    return;
  e->p2p_busy = busy;
  reshare(e);
}

static void begin_flow(SimEngine *e, guint lane) {
  SimLane *ln = &e->lanes[lane];
  e->flowing |= 1u << lane;
  ln->remaining = (double)sim_job(e, ln->job)->bytes;
  ln->last_update = e->now;
  leg_flow(e, sim_job(e, ln->job), &e->flows[lane]);
  reshare(e);
}

/* ---- legs ---- */

static void record_leg(SimEngine *e, RokStream s, guint id) {
  SimJob *j = sim_job(e, id);
  SimTensorState *ts = sim_ts(e, j->mb, j->tensor);
  guint action = sim_record_begin(e, j->is_read ? ROK_ACTION_PREFETCH : ROK_ACTION_OFFLOAD, s, j->mb,
                                  ROK_NO_ID, j->tensor, j->bytes);
  if (j->path == PATH_DIRECT)
    sim_record_gpudirect(e, action);
  /* The leg before on the stream, unless it runs beside this one on
   * another lane (the executor issues a stream's legs in order, and
   * starts one beside another only where the schedule lets it); and the
   * leg whose end made room for this one on an SSD stream's lanes. */
  const SimStream *st = &e->streams[s];
  const SimJob *before = st->last_job != ROK_NO_ID ? sim_job(e, st->last_job) : NULL;
  if (before == NULL || before->state != JOB_RUNNING || leg_stream(before) != s)
    sim_record_dep(e, action, st->last_action);
  if (st->ended_at == e->now)
    sim_record_dep(e, action, st->ended_action);
  if (j->leg > 0)
    sim_record_dep(e, action, j->action);
  else if (!j->is_read)
    sim_record_dep(e, action, ts->producer_action);
  else {
    sim_record_dep(e, action, ts->stored_action);
    sim_record_dep(e, action, j->issue_deps[0]);
    sim_record_dep(e, action, j->issue_deps[1]);
  }
  if (j->waited_staging)
    sim_record_dep(e, action, e->last_staging_release);
  sim_record_dep(e, action, j->gather_dep);
  j->action = action;
  e->streams[s].last_job = id;
  if (action != ROK_NO_ID)
    e->streams[s].last_action = action;
}

/* A leg that starts as a kernel is launched but reaches the device after
 * it: on copy queues that run in order (gpu.copy_queues_in_order) a d2h
 * leg of several copy commands runs mostly after that kernel
 * (queued_ahead below says why). An h2d leg never does: its copies are
 * enqueued as it is issued, before the compute thread's next kernel, and
 * checked after (runner-copy.c runner_h2d_prime; checked first, 50 of 122
 * legs begun at a GEMM's launch in validate-gpt's rok rows, 2026-12-02,
 * waited for half of it). */
static gboolean waits_for_launched(const SimEngine *e, const SimJob *j) {
  return leg_stream(j) == ROK_STREAM_D2H && e->copies_in_order && j->bytes > ROK_SIM_CHUNK_BYTES;
}

/* Whether copies wait for the kernel in progress (a CPU device's
 * profile says how: gpu.copy_kernel_free_at or copy_kernel_wait). */
static gboolean copies_wait_for_kernels(const SimEngine *e) {
  return e->copy_kernel_free_at > 0 || e->copy_kernel_wait > 0;
}

/* The wait of a copy handed over in the middle of the kernel in progress:
 * PoCL gives a command a processor only when one is done with the kernel,
 * once gpu.copy_kernel_free_at of its own length has passed since it began
 * (sim_kernel_until; in older profiles, copy_kernel_wait of what is left
 * of it). The worker that ran out of the kernel's chunks then takes every
 * copy that comes until the kernel ends, so a leg that comes while the
 * first one waits, or after it, goes when the first one goes
 * (validate-gpt's offload row: the first of six h2d legs in a 3.2-3.9 ms
 * backward waited 0.4-1.7 ms, the next ones took 164-280 us, their copy
 * alone). The free point is the same for every copy of a kernel; the
 * first copy's end of wait is kept for copy_kernel_wait, whose wait
 * depends on when the copy came. */
static gint64 wait_in_kernel(SimEngine *e) {
  if (sim_kernel_leaves_cpu(e))
    return 0;
  guint64 kernel = sim_kernel_id(e);
  if (kernel == e->free_kernel)
    return MAX(e->free_at - e->now, 0);
  gint64 wait = e->copy_kernel_free_at > 0 ? sim_kernel_until(e, e->copy_kernel_free_at)
                                           : (gint64)llround(e->copy_kernel_wait * (double)sim_kernel_left(e));
  e->free_kernel = kernel;
  e->free_at = e->now + wait;
  return wait;
}

/* wait_in_kernel, for a copy handed over moments after an item's launch,
 * before the device's threads are at work on its kernel: such a copy goes
 * ahead of it in gpu.copy_launch_ahead of the cases, and the model waits
 * for the rest of them, an expectation over a step's many legs (the
 * development VM, 2026-12-07: 1 MiB copies issued 10-60 us after a
 * 384^3 or 512^3 GEMM's launch went ahead in 42 of 114, none of 72 at
 * 100-200 us;
 * validate-gpt's tba row, 12-06: h2d legs +10..+62 us after a GEMM's
 * launch went at once, +76..+122 us waited). */
static gint64 launch_wait(SimEngine *e) {
  gint64 wait = wait_in_kernel(e);
  if (e->now - e->compute_start <= e->copy_launch_window)
    wait = (gint64)llround((1 - e->copy_launch_ahead) * (double)wait);
  return wait;
}

/* How long a leg on the compute processors waits before its first copy
 * command runs (wait_in_kernel). One handed over as the kernel is
 * launched, or between kernels, does not wait, but for one that reaches
 * the device after the launch (waits_for_launched); a primed leg waits
 * only until it was made (its copy went ahead of the kernels as it was
 * queued, or at the free point of the kernel it was queued in). */
static gint64 kernel_wait(SimEngine *e, const SimJob *j) {
  if (j->primed)
    return MAX(j->made - e->now, 0);
  if (!copies_wait_for_kernels(e) || !check_in_flow(e, j) || !e->running ||
      (e->compute_start == e->now && !waits_for_launched(e, j)))
    return 0;
  return launch_wait(e);
}

/* A d2h leg that starts as its producer ends is enqueued by the compute
 * thread before it launches the next kernel (the executor's
 * runner_d2h_prime; an h2d leg a kernel's end made ready alike,
 * runner_h2d_prime), so PoCL runs it first, on a processor of its own
 * (as every leg on the processors has, sim_legs_cpus), and it pays only
 * the hand-off back of host.copy_overhead. Measured on the development VM, such legs
 * copied and checked at the rate of an idle processor (validate-gpt's
 * offload row: 99-171 us for 192 KiB, 127-202 us for 256 KiB). The
 * executor's copy queues run out of order, so every command of the leg is
 * ready at once and goes first (the 2-layer GPT of bench-small-tensors,
 * 2026-12-02: 3-16 MiB legs took 2.3-20 ms; on in-order queues 9-126 ms,
 * the 16 MiB ones beside 97 ms kernels). On in-order queues
 * (gpu.copy_queues_in_order) only a leg of one command: PoCL makes a
 * queue's next command ready when the one before has ended, after the
 * kernel, so a leg of several commands runs mostly after it: it waits for
 * that kernel (kernel_wait, or sim_transfer_kernel_launched where it began
 * at the launch's instant but before it) and pays the whole hand-off. */
static gboolean queued_ahead(const SimEngine *e, const SimJob *j) {
  RokStream s = leg_stream(j);
  return e->shared_cpus > 0 && (s == ROK_STREAM_D2H || s == ROK_STREAM_H2D) && !waits_for_launched(e, j) &&
         (!e->running || e->compute_start == e->now);
}

/* The executor primes every d2h and h2d leg as it is issued, the one
 * before it on the stream still running or not (runner_d2h_prime,
 * runner_h2d_prime): one queued ahead
 * of the kernels as its producer ends goes ahead of the next kernel even
 * when it starts later, once the leg before is checked, unless a leg
 * before it waits for its slots or its own would have to wait. Its copy
 * ran meanwhile (on the development VM, 2026-12-02: a primed leg's copies
 * had ended 1-3 us after its stream's thread took it, 1-4 ms after it was
 * primed; the thread was checking the leg before, or waking), so a leg
 * that waited for its stream as long as its copy takes has only its check
 * left. On in-order copy queues a leg behind another is ready only once
 * that one has ended, after the kernel: not primed (validate-gpt's offload
 * row, 2026-12-02: 256 KiB dropout outputs primed behind their masks ended
 * 1.3-1.4 ms after them, a 1.5 ms kernel later). */
static gboolean primed(const SimEngine *e, const SimJob *j) {
  if (!queued_ahead(e, j))
    return FALSE;
  const SimStream *st = &e->streams[leg_stream(j)];
  if (e->copies_in_order && (st->running > 0 || st->head < st->queue->len))
    return FALSE;
  guint64 staged = leg_takes_staging(j) ? j->bytes : 0;
  for (guint i = st->head; i < st->queue->len; i++) {
    const SimJob *q = &g_array_index(e->jobs, SimJob, g_array_index(st->queue, guint, i));
    if (q->state != JOB_QUEUED)
      continue;
    if (!q->primed)
      return FALSE;
    staged += leg_takes_staging(q) ? q->bytes : 0;
  }
  return staged == 0 || e->staging_used + staged <= e->staging_cap;
}

/* A primed d2h or h2d leg whose copy has been made, begun as the leg
 * before it on its stream ends: the stream's thread goes straight on from
 * that leg's check to waiting for this one's copies, which were enqueued
 * when it was primed, so it pays no hand-off, and of its copy's latency
 * only what has not passed since (leg_fixed). On the development VM,
 * 2026-12-06, validate-gpt's offload, tba and rok rows: such h2d legs
 * ended a median 9 us sooner than the end of the leg before them plus
 * their own copy and check (183 legs), where the model had each pay a
 * hand-off and the latency (90 us), and a backward's burst of six
 * prefetches came out 55% long. */
static gboolean leg_follows(const SimEngine *e, const SimStream *st, const SimJob *j) {
  RokStream s = leg_stream(j);
  return j->primed && (s == ROK_STREAM_D2H || s == ROK_STREAM_H2D) && j->made <= e->now && st->ended_at == e->now;
}

/* An SSD leg begun the moment another ended: the executor issues what an
 * SSD leg's end makes ready from the I/O backend's completion, on its own
 * thread, and the legs it hands the store then go out on that thread's
 * next turn without a wake-up (storage/backend-uring.c), so such a leg
 * pays no hand-off. On the development VM, 2026-12-07: the read legs of
 * validate-gpt's and the LLaMA-shaped model's offload and tba rows that
 * began within 50 us of the last SSD leg's end (all of those that did not
 * begin after 4.5 ms idle or more) came out 1.28x and 1.38x shorter than
 * predicted, median, where those after idle were within 6%. */
static gboolean leg_chained(const SimEngine *e, const SimJob *j) {
  return leg_on_ssd(j) && e->ssd_last_end == e->now;
}

/* The share of a copy leg's copy still to run as the leg starts: none
 * where it was primed and its copy has run since (copy_from), all of it
 * otherwise. A d2h leg's copy runs at the link's rate from the moment it
 * was made; on a device without a copy engine h2d legs primed together
 * run theirs one after another at QUEUED_COPY_SHARE of it
 * (enqueue_primed). */
static double copy_left(const SimEngine *e, const SimJob *j) {
  gboolean h2d = leg_stream(j) == ROK_STREAM_H2D;
  double speed = h2d ? e->h2d_speed : e->d2h_speed;
  if (!j->primed || !(speed > 0) || j->bytes == 0)
    return 1;
  double copy = (double)flow_ns((double)j->bytes, speed), ran = (double)(e->now - j->copy_from);
  if (h2d && e->shared_cpus > 0)
    ran *= QUEUED_COPY_SHARE;
  return ran >= copy ? 0 : 1 - MAX(ran, 0) / copy;
}

/* After a leg's wait for the kernel: its thread on the processors, its
 * latency, then its bytes. */
static void leg_go(SimEngine *e, guint lane) {
  SimLane *ln = &e->lanes[lane];
  SimJob *j = sim_job(e, ln->job);
  if (leg_on_cpus(j))
    sim_cpu_legs_change(e, TRUE);
  sim_cpu_take(e, leg_cpu_half(e, j));
  gint64 latency = leg_latency(e, j);
  if (latency > 0)
    ln->event = sim_evq_push(&e->evq, e->now + latency, EV_LATENCY, lane);
  else
    begin_flow(e, lane);
}

static void start_leg(SimEngine *e, RokStream s, guint lane, guint id) {
  SimStream *st = &e->streams[s];
  SimJob *j = sim_job(e, id);
  SimTensorState *ts = sim_ts(e, j->mb, j->tensor);
  j->state = JOB_RUNNING;
  e->lanes[lane].job = id;
  if (st->running++ == 0)
    st->busy_since = e->now;
  st->demand += j->demand;
  st->requests += leg_requests(j);
  if (!j->is_read && j->leg == 0) {
    ts->write = W_GPU_LEG;
    if (j->path == PATH_HOST && !ts->host_copy) {
      ts->host_copy = 1;
      e->host_used += j->bytes;
      e->host_peak = MAX(e->host_peak, e->host_used);
    }
  }
  if (leg_takes_staging(j)) {
    ts->staging_refs++;
    sim_staging_change(e, j->bytes, TRUE);
  }
  record_leg(e, s, id);
  if (!j->is_read && j->leg == 0)
    ts->copy_action = j->action;
  j->waited_staging = FALSE;
  j->ahead = s != ROK_STREAM_H2D && (queued_ahead(e, j) || j->primed);
  j->follows = leg_follows(e, st, j);
  j->chained = leg_chained(e, j);
  j->copy_left = copy_left(e, j);
  gint64 wait = kernel_wait(e, j);
  if (wait > 0)
    e->lanes[lane].event = sim_evq_push(&e->evq, e->now + wait, EV_KERNEL_WAIT, lane);
  else
    leg_go(e, lane);
}

/* A free lane of the stream, or ROK_NO_ID. */
static guint free_lane(const SimEngine *e, const SimStream *st) {
  for (guint l = st->first_lane; l < st->first_lane + st->n_lanes; l++)
    if (e->lanes[l].job == ROK_NO_ID)
      return l;
  return ROK_NO_ID;
}

/* Whether an SSD leg may start beside the legs in progress on its
 * stream: they keep fewer requests in flight than the disks take
 * (nvme.queue_depth per device; the executor's I/O backend holds the rest
 * in a FIFO), and it is of a gather, which goes together, or together
 * they would not ask more of the array than its rate (leg_demand), so
 * that none is slowed by another and the tensors come back in the order
 * they are needed. Small legs, whose latency and per-request costs keep
 * each below the array's rate, go together. */
static gboolean joins_lanes(const SimEngine *e, const SimStream *st, const SimJob *j) {
  if (st->running == 0)
    return TRUE;
  const RokHw *hw = e->sim->hw;
  if (st->requests >= hw->nvme.queue_depth * MAX(hw->nvme.devices, 1))
    return FALSE;
  return j->gathered || st->demand + j->demand <= 1.0 + 1e-9;
}

/* ---- Gathered writes ----
 *
 * A staged SSD write of fewer requests than sim_gather_requests (half the
 * array's queue depth) waits in the staging buffer, after its copy out of
 * the GPU, for the others of its module, and they go together on the
 * stream's lanes, so that the disks see many requests at once rather than
 * one small write after another, each paying its latency and the disk's
 * wake alone (the development VM's virtio disk, 2026-12-06: a 2-layer
 * GPT's 0.5-8 MiB writes, two steps' write stream 60.8 ms one at a time,
 * 53.2 gathered, medians of six runs). The gather goes when its requests reach
 * sim_gather_requests, when its module's last such copy out has ended, or
 * when a copy out waits for room in the staging buffer; the schedule has
 * each of its legs wait for the action that sent it, so that the
 * executor sends them together too. The GPU's copy is freed as before,
 * with the copy out. */

static gboolean gathers(const SimEngine *e, const SimJob *j) {
  return !j->is_read && j->path == PATH_STAGED && e->sim->prog.gather_closer[j->tensor] != ROK_NO_ID;
}

/* Queue every write of the gather, after action `dep`. */
static void gather_send(SimEngine *e, guint dep) {
  for (guint i = 0; i < e->gather->len; i++) {
    guint id = g_array_index(e->gather, guint, i);
    SimJob *j = sim_job(e, id);
    if (j->state == JOB_CANCELLED) /* read back from the staging buffer meanwhile */
      continue;
    j->gathered = TRUE;
    j->gather_dep = dep;
    enqueue(e, id);
  }
  g_array_set_size(e->gather, 0);
  e->gather_requests = 0;
}

/* A staged write's SSD leg, its copy out of the GPU done by action `dep`:
 * queued, or held in the gather until it has enough requests or its
 * module's closer has been copied out, or will never be (forwarded to
 * backward before its copy out began: then each goes as it comes). */
static void write_second_leg(SimEngine *e, guint id, guint dep) {
  SimJob *j = sim_job(e, id);
  if (!gathers(e, j)) {
    enqueue(e, id);
    return;
  }
  g_array_append_val(e->gather, id);
  e->gather_requests += leg_requests(j);
  guint closer = e->sim->prog.gather_closer[j->tensor];
  if (e->gather_requests >= sim_gather_requests(e->sim->hw) || closer == j->tensor ||
      sim_ts(e, j->mb, closer)->write == W_CANCELLED)
    gather_send(e, dep);
}

/* TENSOR's copy out will not reach the SSDs (forwarded to backward): if
 * it closes its module's gather, the gather goes now, after `dep`. */
static void gather_closer_dropped(SimEngine *e, guint tensor, guint dep) {
  if (e->sim->prog.gather_closer[tensor] == tensor && e->gather->len > 0)
    gather_send(e, dep);
}

/* Start the stream's queued legs in order while it has a free lane (an
 * SSD stream's: joins_lanes). */
static void stream_try_start(SimEngine *e, RokStream s) {
  SimStream *st = &e->streams[s];
  st->staging_wait = FALSE;
  while (st->head < st->queue->len) {
    guint lane = free_lane(e, st);
    if (lane == ROK_NO_ID)
      return;
    guint id = g_array_index(st->queue, guint, st->head);
    SimJob *j = sim_job(e, id);
    if (j->state == JOB_CANCELLED) {
      st->head++;
      continue;
    }
    if (!joins_lanes(e, st, j))
      return;
    /* A tensor larger than the whole buffer goes through an empty one. */
    if (leg_takes_staging(j) && e->staging_used > 0 && e->staging_used + j->bytes > e->staging_cap) {
      st->staging_wait = TRUE;
      j->waited_staging = TRUE;
      if (e->gather->len > 0) /* the gather holds room: it goes now, after what brought the copy here */
        gather_send(e, st->ended_at == e->now ? st->ended_action
                       : j->is_read            ? j->issue_deps[0]
                                               : sim_ts(e, j->mb, j->tensor)->producer_action);
      return;
    }
    st->head++;
    start_leg(e, s, lane, id);
  }
  if (st->head > 0) { /* all taken: start the queue afresh */
    g_array_set_size(st->queue, 0);
    st->head = 0;
  }
}

void sim_streams_pump(SimEngine *e) {
  for (guint s = 1; s < ROK_STREAM_COUNT; s++)
    stream_try_start(e, s);
}

static void count_bytes(SimEngine *e, RokStream s, const SimJob *j) {
  SimCounters *c = &e->counters;
  switch (s) {
  case ROK_STREAM_D2H:
    c->d2h_bytes += j->bytes;
    break;
  case ROK_STREAM_H2D:
    c->h2d_bytes += j->bytes;
    break;
  case ROK_STREAM_NVME_WRITE:
    c->nvme_write_bytes += j->bytes;
    c->d2h_bytes += j->path == PATH_DIRECT ? j->bytes : 0;
    break;
  default:
    c->nvme_read_bytes += j->bytes;
    c->h2d_bytes += j->path == PATH_DIRECT ? j->bytes : 0;
  }
}

static void write_leg_done(SimEngine *e, guint id, RokStream s) {
  SimJob *j = sim_job(e, id);
  SimTensorState *ts = sim_ts(e, j->mb, j->tensor);
  ts->stored_action = j->action;
  if (j->leg == 1) {
    j->state = JOB_DONE;
    ts->write = W_DONE;
    staging_unref(e, ts, j->bytes, j->action);
    return;
  }
  if (j->path != PATH_STAGED) {
    j->state = JOB_DONE;
    ts->write = W_DONE;
  } else if (ts->pinned) { /* forwarded meanwhile: no need to reach the SSD */
    j->state = JOB_DONE;
    ts->write = W_CANCELLED;
    staging_unref(e, ts, j->bytes, j->action);
    gather_closer_dropped(e, j->tensor, j->action);
  } else {
    j->leg = 1;
    j->state = JOB_QUEUED;
    ts->write = W_SECOND;
    write_second_leg(e, id, j->action);
  }
  sim_offload_maybe_free(e, j->mb, j->tensor, s, j->action);
}

static void read_leg_done(SimEngine *e, guint id) {
  SimJob *j = sim_job(e, id);
  SimTensorState *ts = sim_ts(e, j->mb, j->tensor);
  if (j->leg + 1 < j->n_legs) {
    j->leg++;
    j->state = JOB_QUEUED;
    enqueue_primed(e, id);
    return;
  }
  j->state = JOB_DONE;
  ts->read = R_READY;
  ts->ready_action = j->action;
  if (j->path == PATH_STAGED || j->path == PATH_FROM_STAGING)
    staging_unref(e, ts, j->bytes, j->action);
}

static void finish_leg(SimEngine *e, guint lane) {
  RokStream s = e->lanes[lane].stream;
  SimStream *st = &e->streams[s];
  guint id = e->lanes[lane].job;
  SimJob *j = sim_job(e, id);
  e->lanes[lane].job = ROK_NO_ID;
  st->ended_action = j->action;
  st->ended_at = e->now;
  st->requests -= leg_requests(j);
  st->demand -= j->demand;
  if (--st->running == 0) { /* each moment once, however many lanes were busy */
    e->counters.busy_ns[s] += e->now - st->busy_since;
    st->demand = 0; /* no rounding left over */
  }
  if (leg_on_cpus(j))
    sim_cpu_legs_change(e, FALSE);
  sim_cpu_take(e, leg_cpu_half(e, j));
  if (leg_on_ssd(j))
    e->ssd_last_end = e->now;
  count_bytes(e, s, j);
  sim_record_end(e, j->action);
  if (j->is_read)
    read_leg_done(e, id);
  else
    write_leg_done(e, id, s);
}

void sim_transfer_kernel_launched(SimEngine *e) {
  /* The d2h stream's one lane: busy since its leg began. */
  guint lane = e->streams[ROK_STREAM_D2H].first_lane;
  SimLane *ln = &e->lanes[lane];
  if (!copies_wait_for_kernels(e) || ln->job == ROK_NO_ID || ln->event == ROK_NO_ID ||
      e->streams[ROK_STREAM_D2H].busy_since != e->now)
    return;
  SimJob *j = sim_job(e, ln->job);
  if (!check_in_flow(e, j) || !waits_for_launched(e, j))
    return;
  /* Begun just before the launch, at this instant, so not yet waiting
   * (kernel_wait): from its latency or its flow back to waiting, now for
   * this kernel. */
  gboolean went = e->evq.events[ln->event].kind != EV_KERNEL_WAIT; /* leg_go ran */
  sim_evq_cancel(&e->evq, ln->event);
  if (e->flowing & (1u << lane)) {
    e->flowing &= ~(1u << lane);
    e->flows[lane].active = FALSE;
    reshare(e);
  }
  if (went)
    sim_cpu_legs_change(e, FALSE);
  ln->event = sim_evq_push(&e->evq, e->now + wait_in_kernel(e), EV_KERNEL_WAIT, lane);
}

/* The lanes of both SSD streams: [*FIRST, *END). */
static void ssd_lanes(const SimEngine *e, guint *first, guint *end) {
  const SimStream *w = &e->streams[ROK_STREAM_NVME_WRITE], *r = &e->streams[ROK_STREAM_NVME_READ];
  g_assert(r->first_lane == w->first_lane + w->n_lanes);
  *first = w->first_lane;
  *end = r->first_lane + r->n_lanes;
}

/* With nvme.completes_together, an SSD leg whose bytes have moved while
 * another SSD leg is still at work (in its latency or moving bytes) is
 * held, to end with the last of them: a disk that completes the requests
 * queued together at one moment (the development VM's virtio disk: three
 * 128 KiB reads begun 34 us apart all ended within 6 us, 300 us after the
 * first began, where one alone takes 145; fio's 64 KiB reads beside
 * bursts of 4 x 1 MiB from another file, 659 us at the median against 79
 * alone). */
static gboolean held_for_others(SimEngine *e, guint lane) {
  if (!e->sim->hw->nvme.completes_together || !leg_on_ssd(sim_job(e, e->lanes[lane].job)))
    return FALSE;
  guint first, end;
  ssd_lanes(e, &first, &end);
  for (guint l = first; l < end; l++)
    if (l != lane && e->lanes[l].job != ROK_NO_ID && !e->lanes[l].held)
      return TRUE;
  return FALSE;
}

/* LANE's leg ends, then, where it is an SSD leg, the SSD legs held for
 * it, in lane order (the lanes are noted first: an ending leg may start
 * another). A copy leg ending leaves them held. */
static void finish_with_held(SimEngine *e, guint lane) {
  guint first, end, ending[SIM_LANES], n = 0;
  ssd_lanes(e, &first, &end);
  ending[n++] = lane;
  if (e->sim->hw->nvme.completes_together && lane >= first && lane < end)
    for (guint l = first; l < end; l++)
      if (l != lane && e->lanes[l].job != ROK_NO_ID && e->lanes[l].held)
        ending[n++] = l;
  for (guint i = 0; i < n; i++) {
    e->lanes[ending[i]].held = FALSE;
    finish_leg(e, ending[i]);
  }
}

void sim_transfer_event(SimEngine *e, guint kind, guint lane) {
  SimLane *ln = &e->lanes[lane];
  ln->event = ROK_NO_ID;
  if (kind == EV_KERNEL_WAIT) {
    leg_go(e, lane);
    return;
  }
  if (kind == EV_LATENCY) {
    begin_flow(e, lane);
    return;
  }
  e->flowing &= ~(1u << lane);
  ln->remaining = 0;
  e->flows[lane].active = FALSE;
  reshare(e);
  if (held_for_others(e, lane))
    ln->held = TRUE;
  else
    finish_with_held(e, lane);
}

/* ---- offload ---- */

void sim_offload_start(SimEngine *e, guint mb, guint tensor) {
  SimTensorState *ts = sim_ts(e, mb, tensor);
  SimPath path = e->sim->prog.eff[tensor] == ROK_DECISION_OFFLOAD_HOST ? PATH_HOST
                 : e->gpudirect                                        ? PATH_DIRECT
                                                                       : PATH_STAGED;
  guint id = new_job(e, mb, tensor, FALSE, path);
  ts->write = W_QUEUED;
  ts->write_job = id;
  enqueue_primed(e, id);
}

/* Free the GPU copy when nothing holds it any more: the forward, a
 * backward that was forwarded the copy, or the copy out of the GPU. Keeps
 * pending_free (memory that a running copy will free) up to date. */
void sim_offload_maybe_free(SimEngine *e, guint mb, guint tensor, RokStream stream, guint cause) {
  SimTensorState *ts = sim_ts(e, mb, tensor);
  guint64 bytes = rok_trace_tensor(e->sim->trace, tensor)->bytes;
  gboolean copying = ts->write == W_QUEUED || ts->write == W_GPU_LEG;
  gboolean wanted = !ts->fwd_done || (ts->pinned && !ts->bwd_done) || ts->read == R_ISSUED ||
                    (ts->read == R_READY && !ts->bwd_done);
  gboolean pending = ts->resident && !wanted && copying;
  if (pending != ts->pending) {
    e->pending_free = pending ? e->pending_free + bytes : e->pending_free - bytes;
    ts->pending = pending;
  }
  if (ts->resident && !wanted && !copying) {
    /* It waited for both its last reader and its copy out. */
    guint action = sim_tensor_free(e, mb, tensor, stream, cause);
    sim_record_dep(e, action, ts->use_action);
    sim_record_dep(e, action, ts->copy_action);
  }
}

void sim_offload_release(SimEngine *e, guint mb, guint tensor, guint cause) {
  SimTensorState *ts = sim_ts(e, mb, tensor);
  ts->bwd_done = 1;
  ts->use_action = cause;
  if (ts->host_copy) {
    ts->host_copy = 0;
    e->host_used -= rok_trace_tensor(e->sim->trace, tensor)->bytes;
  }
  sim_offload_maybe_free(e, mb, tensor, ROK_STREAM_COMPUTE, cause);
}

/* ---- prefetch ---- */

static void issue_forwarded(SimEngine *e, guint mb, guint tensor) {
  SimTensorState *ts = sim_ts(e, mb, tensor);
  /* Made again by a rebuild that re-runs a whole layer: the rebuild must
   * not free it after its own last use, backward takes it from here. */
  ts->owned = 0;
  ts->pinned = 1;
  ts->read = R_FORWARDED;
  e->counters.forwarded++;
  if (ts->write == W_QUEUED) { /* not started: drop it */
    sim_job(e, ts->write_job)->state = JOB_CANCELLED;
    ts->write = W_CANCELLED;
    gather_closer_dropped(e, tensor, e->last_compute_action);
  }
  sim_offload_maybe_free(e, mb, tensor, ROK_STREAM_COMPUTE, ROK_NO_ID);
}

static void issue(SimEngine *e, guint mb, guint tensor) {
  SimTensorState *ts = sim_ts(e, mb, tensor);
  if (ts->resident) {
    issue_forwarded(e, mb, tensor);
    return;
  }
  guint64 bytes = rok_trace_tensor(e->sim->trace, tensor)->bytes;
  SimPath path;
  if (ts->write == W_SECOND) { /* still in the staging buffer */
    path = PATH_FROM_STAGING;
    ts->staging_refs++;
    SimJob *w = sim_job(e, ts->write_job);
    if (w->state == JOB_QUEUED) {
      w->state = JOB_CANCELLED;
      ts->write = W_CANCELLED;
      staging_unref(e, ts, bytes, ROK_NO_ID);
    }
  } else {
    g_assert(ts->write == W_DONE);
    path = e->sim->prog.eff[tensor] == ROK_DECISION_OFFLOAD_HOST ? PATH_HOST
           : e->gpudirect                                        ? PATH_DIRECT
                                                                 : PATH_STAGED;
  }
  sim_tensor_alloc(e, mb, tensor); /* reserved when the read is issued */
  guint id = new_job(e, mb, tensor, TRUE, path);
  SimJob *j = sim_job(e, id);
  j->late = ts->late;
  j->issue_deps[0] = e->last_compute_action;
  j->issue_deps[1] = ts->late ? e->last_free_action : ROK_NO_ID;
  ts->read = R_ISSUED;
  ts->read_job = id;
  enqueue_primed(e, id);
}

/* The most the compute work from the next item to start through item
 * `last` will add to live memory at any item's start (at least 0), by the
 * program's levels; `*from` and `*most` carry the scan between calls. */
static guint64 reserve_through(const SimEngine *e, guint last, guint *from, gint64 *most) {
  const SimProgram *prog = &e->sim->prog;
  const SimItem *cur = sim_item(prog, e->index);
  /* A running item has taken its start already. */
  gint64 base = cur->level + (e->running ? (gint64)cur->start_bytes : 0);
  for (; *from <= last; (*from)++) {
    const SimItem *item = sim_item(prog, *from);
    *most = MAX(*most, item->level + (gint64)item->start_bytes - base);
  }
  return (guint64)MAX(*most, 0);
}

/* Issue the reads the window allows: in order of first need, up to
 * prefetch_window chunks ahead of the compute, while live memory, the read
 * and what the compute up to the read's user takes stay within the
 * budget; the reads the next compute item needs go regardless. */
void sim_prefetch_pump(SimEngine *e) {
  if (e->phase != PHASE_BACKWARD)
    return;
  const SimProgram *prog = &e->sim->prog;
  guint chunk = sim_item(prog, e->index)->chunk;
  guint from = e->index + (e->running ? 1 : 0);
  gint64 most = 0;
  while (e->next_prefetch < prog->prefetch->len) {
    guint tensor = g_array_index(prog->prefetch, guint, e->next_prefetch);
    guint first = prog->first_need[tensor];
    if (first >= e->end) /* another model chunk's: its own backward block reads it */
      return;
    gboolean demand = first <= e->index;
    if (!demand && sim_beyond_window(e, sim_item(prog, first)->chunk - chunk))
      return;
    SimTensorState *ts = sim_ts(e, e->mb, tensor);
    guint64 bytes = ts->resident ? 0 : rok_trace_tensor(e->sim->trace, tensor)->bytes;
    if (!demand && sim_over_budget(e, e->live + bytes + reserve_through(e, first, &from, &most))) {
      ts->late = 1;
      return;
    }
    issue(e, e->mb, tensor);
    e->next_prefetch++;
  }
}

static RokStallCause stream_cause(RokStream s) {
  return s == ROK_STREAM_NVME_READ || s == ROK_STREAM_NVME_WRITE ? ROK_STALL_READ : ROK_STALL_PCIE;
}

RokStallCause sim_wait_cause(SimEngine *e, guint mb, guint tensor) {
  SimTensorState *ts = sim_ts(e, mb, tensor);
  if (ts->read != R_ISSUED)
    return ROK_STALL_MEMORY;
  guint id = ts->read_job;
  const SimJob *j = sim_job(e, id);
  if (j->late)
    return ROK_STALL_MEMORY;
  RokStream s = leg_stream(j);
  const SimStream *st = &e->streams[s];
  if (j->state == JOB_QUEUED) {
    gboolean head = st->head < st->queue->len && g_array_index(st->queue, guint, st->head) == id;
    return st->staging_wait && head ? ROK_STALL_STAGING : stream_cause(s);
  }
  guint lane = st->first_lane;
  while (lane < st->first_lane + st->n_lanes && e->lanes[lane].job != id)
    lane++;
  if (lane < st->first_lane + st->n_lanes && (e->flowing & (1u << lane))) {
    gint b = e->flows[lane].bottleneck;
    if (b == ROK_LINK_NVME)
      return ROK_STALL_READ;
    if (b == ROK_LINK_D2H || b == ROK_LINK_H2D)
      return ROK_STALL_PCIE;
  }
  return stream_cause(s);
}
