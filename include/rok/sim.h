/* The discrete-event simulator: what one training step costs under a plan.
 *
 * A plan says, for every tensor of a trace, what happens to it between its
 * forward and its backward (keep, offload to NVMe or host memory,
 * recompute). The simulator runs the step on a model of the machine
 * (docs/simulator.md): one compute stream; transfer streams
 * d2h, h2d, nvme-write and nvme-read, each running its transfers one after
 * the other, whose flows share the PCIe links and the NVMe array fluidly;
 * the host staging buffer; the GPU memory ledger. Same inputs, same result,
 * bit for bit.
 *
 * The model, in the terms the rest of rok relies on:
 *
 * Compute. An op takes max(flops / (peak_flops · e), bytes / hbm_bandwidth)
 * + launch_overhead, e = matmul_efficiency for GEMM-like kinds (linear,
 * attn_scores, attn_context, flash_attention) and 1 otherwise (with a
 * measured curve in the profile, e = rok_hw_gemm_efficiency() at the op's
 * forward FLOPs, in both directions). With measured rates for the op's
 * kind in the profile (gpu.op_rates), an op takes work / rate(work) +
 * launch_overhead instead, work being rok_op_work() and the rate the
 * kind's curve for that direction at that work. A measured
 * time in the trace (>= 0) wins; input ops take no time. Backward uses the
 * op's backward figures. The optimizer step after the last micro-batch
 * moves fixed.optimizer_step_bytes at HBM bandwidth (+ one launch).
 *
 * Memory. fixed (weights + gradients + optimizer states) + live tensors +
 * activation gradients. An op's outputs are allocated when it starts.
 * A transient tensor (empty needed_by) is freed when its last forward
 * consumer ends. A kept tensor lives until its last backward use.
 * Activation gradients live as autograd keeps them: a floating-point
 * tensor not made by an input op has one when a later op reads it (or,
 * read by nobody, when its producer's backward does not need it: a
 * pipeline stage's last activation, whose gradient arrives from outside
 * and lives while that backward runs); statistics, probabilities and
 * log-sum-exps kept for their producer's own backward have none. The
 * gradient is allocated when the backward of its last forward reader
 * starts (the first to add to it) and freed when its producer's backward
 * ends. Peak is the maximum of the ledger over the step.
 *
 * Offload. The write starts when the producer ends: gpudirect: one flow
 * GPU -> SSD on the nvme-write stream, sharing PCIe d2h and the array;
 * without gpudirect: d2h into the pinned staging buffer (space reserved
 * when the copy starts; waiting for it is a staging stall), then
 * nvme-write from it, the space released when the SSD write ends; host:
 * d2h only. The GPU copy is freed when the copy out of the GPU has ended
 * and the forward no longer reads the tensor. Reads mirror the writes.
 * Copies on the compute processors. With gpu.shared_cpus = N (a CPU
 * device: no copy engine), every running d2h or h2d leg (and gpudirect
 * leg) takes a processor from the N that run the kernels, which keep one:
 * while k such legs run they have min(k, N - 1) processors (N while no
 * kernel runs; with N = 1 they share it, k / (k + 1)), each runs its copy
 * and its check (rok_hw_host_check_seconds) in turn at its share of
 * those, and the compute stream advances at what is left, its busy time what it
 * took; rates are recomputed whenever a leg or a compute item starts or
 * ends. A leg that starts while a kernel is in progress first waits until
 * gpu.copy_kernel_free_at of that kernel's own length has passed since it
 * began (older profiles: copy_kernel_wait times what is left of it; PoCL
 * gives a copy command a processor only when one is done with the kernel;
 * an item is taken as one kernel, a backward as two: a GEMM's dX and dW),
 * not counted as a busy thread;
 * the legs that come while it waits or after it, in the same kernel, go
 * when it goes (the thread that ran out of the kernel's work takes them).
 * One that starts as the kernel is launched (an offload at its producer's
 * end, a prefetch the item's start made ready: the executor enqueues an
 * h2d leg's copies as it is issued and checks them after) is queued ahead
 * of it and does not wait, but for one that reaches the device after the
 * launch (on in-order copy queues, a d2h leg of several commands). An SSD
 * leg's host work
 * (nvme.leg_cpu + requests * nvme.request_cpu of processor time: rok's I/O
 * thread and the kernel's block I/O) is taken from those processors half
 * when it starts and half when it ends: the running compute item's work
 * grows by that time / N (none while no item runs).
 * Every transfer leg first pays its latency (PCIe latency, NVMe latency,
 * both for gpudirect, plus host.copy_overhead, the executor's hand-offs,
 * plus nvme.leg_overhead on the SSD streams (a write's own
 * nvme.write_latency and write_leg_overhead where given), and nvme.wake_write or
 * wake_read for an SSD leg that finds the disk idle for nvme.wake_after)
 * and then moves its bytes. A leg that crosses PCIe (d2h, h2d, gpudirect)
 * on a device with copy engines also pays its check
 * (rok_hw_host_check_seconds) where the profile has one: rok's executor checksums every such
 * copy on the host, with the link idle. With nvme.request_overhead and
 * request_overhead_per_mib, each request of an SSD leg
 * (ROK_SIM_CHUNK_BYTES, or the tensor when smaller) costs that time, and
 * that much per MiB of it, besides its bytes at the array's rate: the
 * leg's rate is capped at request / (overhead + request / MiB * per_mib +
 * request / rate).
 *
 * NVMe array. A transfer is striped over all devices in requests of
 * ROK_SIM_CHUNK_BYTES; a device keeps at most queue_depth requests
 * in flight, so by Little's law it moves at most
 * min(bandwidth, queue_depth · request / latency). An SSD stream runs
 * its legs on ROK_SSD_LANES lanes, starting each in turn beside those in
 * progress while together they ask no more than the array's rate (each a
 * leg's bytes over its latency and its flow alone) and hold fewer
 * requests than the devices' queues. Reads and writes share
 * each device's time: a read at rate r and a write at rate w use
 * r / read_bw + w / write_bw of it.
 *
 * Fluid sharing. Whenever a flow starts or ends every active flow's rate
 * is recomputed: each flow gets the same fraction λ of the rate it would
 * have alone, λ raised until a resource (PCIe d2h, PCIe h2d, the array) is
 * saturated; flows through a saturated resource stop there and the others
 * keep rising (weighted max-min fairness). Two equal flows on one link get
 * half each; a read and a write on the array get half the device time each.
 *
 * Prefetch. In backward the offloaded tensors are read back in the order
 * backward first needs them. The window: while backward runs chunk c (a
 * run of backward work of one unit: a layer, a module — a layer's
 * attention or MLP block, named by the op's second name component — or a
 * leaf op, options.prefetch_unit), tensors first needed up to chunk
 * c + prefetch_window may be read. A read is issued only when live memory
 * plus its bytes plus what the compute work up to and including the
 * tensor's first user will take (each item's outputs and activation
 * gradients, less what the items before it give back) stays within the
 * budget: a prefetch never takes the step over the budget (memory is
 * reserved when the read is issued); with prefetch_window 0, a read is
 * issued only when the compute work that needs it is next. The tensor the
 * next compute work needs is always read, budget or not, so the step
 * cannot deadlock. A read held
 * back by the budget that the compute then waits for is a memory stall.
 * A copy still running when its GPU memory would be freed (after its last
 * use) holds the memory until it ends. Forwarding: a tensor whose GPU copy
 * still exists when its read would be issued (its copy out is still
 * running or queued) is used from GPU memory, is not read back, stays until
 * its last backward use, and a copy not yet started is dropped. A tensor
 * still in the staging buffer is read from there (h2d only).
 *
 * Recompute. A recomputed saved tensor is freed after its last forward
 * consumer (after its producer when it has none). All recomputed tensors of
 * one layer are rebuilt together, once, just before the first backward op
 * (in backward order) that needs any of them: the producer ops are re-run
 * in forward order from the nearest available tensors (kept ones, and
 * offloaded ones, which the rebuild needs like a backward op does);
 * tensors that are neither are rebuilt on the way and freed after their
 * last use by the rebuild. A tensor whose `recompute_from` is empty (a
 * dropout mask: a function of the seed) is rebuilt without inputs, in
 * bytes / rate + launch_overhead, the rate being the op kind's measured
 * "rebuild" rate at those bytes (gpu.op_rates), else hbm_bandwidth; otherwise a re-run costs the op's
 * forward time. Recomputed tensors of layer -1 are rebuilt each on its own.
 * With options.rebuild_whole_layers, a layer's rebuild re-runs all of the
 * layer's ops (everything they make that nobody keeps is an intermediate).
 * Recompute time counts as compute and is also reported as recompute_ns.
 *
 * Memory waits. Compute that would take live memory over the budget waits
 * while copies out of the GPU are running that will free memory when they
 * end (a memory stall); with nothing to wait for it runs anyway and the
 * peak says so.
 *
 * Stalls. Time the compute stream waits, by cause: a read from the SSDs
 * (read), a PCIe copy (pcie; for a gpudirect read whichever of the two
 * limits its rate), staging space (staging), memory (memory).
 *
 * Step. detail_micro_batches micro-batches (at most the trace's count) are
 * simulated one after the other, forward then backward, transfers
 * overlapping across micro-batch boundaries, then the optimizer step. The
 * step ends when its compute ends: every read it needs has arrived by then,
 * and a copy still running is that of a forwarded tensor, which nobody
 * reads (its bytes are still counted). With more micro-batches in the
 * step, the others are taken to repeat the last detailed period (start of
 * the last detailed micro-batch minus start of the one before; with one
 * detailed micro-batch, its own forward and backward), for the time and
 * for every counter.
 *
 * Communication (src/sim/comm.c; only with an "interconnect" section in
 * the profile, else none is costed). Collectives are costed with the
 * alpha-beta model of rok_hw_collective_s (rok/hw.h) on the tensor-,
 * data- or pipeline-parallel group, intra-node while the group fits in a
 * node with Megatron-LM's rank order (tensor, then data, then pipeline).
 * Tensor parallelism (Megatron): per layer two all-reduces forward and two
 * backward, or with sequence parallelism an all-gather before each
 * column-parallel linear (again in backward) and a reduce-scatter after
 * each row-parallel one and of each input gradient; on the critical path,
 * added to the op they surround (so a recompute that re-runs the op
 * re-runs them), but for what a column-parallel backward hides under
 * Megatron (framework megatron): its all-gather under the input-gradient
 * GEMM, its all-reduce or reduce-scatter under the weight-gradient GEMM,
 * each GEMM taken as half the op's backward compute. ZeRO-3 (DeepSpeed): every layer's parameters gathered
 * before its forward and its backward and its gradients reduce-scattered,
 * every micro-batch, prefetched behind the previous layer: what that
 * layer's compute does not hide is added to the layer's first op. Data
 * parallelism (ZeRO 0-2, Megatron's DDP): one reduction of the fp32
 * gradients per step (reduce-scatter and a parameter all-gather with the
 * distributed optimizer, else an all-reduce), overlapped with the last
 * micro-batch's backward in buckets of max(40M, 1M·d) parameters: what
 * that backward does not hide, and at least one bucket, delays the
 * optimizer step. With intra_node_pcie, collectives and sends take their
 * share of the PCIe link beside offload copies (hidden ones too). Not
 * modelled: overlap of tensor-parallel communication with compute beyond
 * that (Megatron's --tp-comm-overlap), a pipeline send blocking its
 * sender, the embedding's gradient all-reduce between the first and last
 * stages.
 *
 * Pipeline parallelism. A stage's trace (rok_trace_new_for_stage) runs
 * its micro-batches in Megatron-LM's order: 1F1B, or interleaved 1F1B with
 * virtual stages (src/sim/order.c); its warm-up forwards are simulated in
 * detail, so the memory of the micro-batches in flight is in the peak.
 * rok_pipeline_simulate() simulates every stage and composes them: each
 * stage's blocks (a micro-batch through one model chunk, forward or
 * backward) take the time they took in the stage's own simulation, a
 * forward waits for the previous chunk's forward of the same micro-batch
 * and a backward for the next chunk's backward, each plus one send between
 * stages (activation bytes over the interconnect: rok/hw.h); the step
 * ends when the last stage's optimizer step does. Every stage's result
 * then carries the pipeline's step and its own bubble. */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/schedule.h"

G_BEGIN_DECLS

/* The executor's chunk, its default staging slot: one copy command on
 * PCIe and one NVMe request (the queue-depth limit; see the model above). */
#define ROK_SIM_CHUNK_BYTES ROK_HW_NVME_REQUEST_BYTES

typedef struct {
  gint64 time_ns;
  guint64 gpu_bytes;     /* the ledger, fixed memory included */
  guint64 staging_bytes; /* the pinned staging buffer */
} RokSimSample;

typedef struct {
  gint64 step_ns;
  double step_time_s;
  double tokens_per_s; /* per copy of the model (rok_trace_replica_gpus GPUs) */
  /* Per GPU: tokens/s over the copy's GPUs; model FLOP/s achieved
   * (rok_trace_model_flops per step / step time: no recompute); and model
   * FLOPs utilisation, that over the profile's gpu.peak_flops. */
  double tokens_per_gpu_s, model_flops_per_gpu_s, mfu;
  guint64 micro_batches;          /* in the step */
  guint64 detailed_micro_batches; /* simulated event by event */
  guint64 fixed_bytes, budget_bytes, gpu_memory_bytes;
  guint64 peak_bytes, activation_peak_bytes; /* activation peak = peak - fixed */
  gboolean fits;                             /* peak <= gpu.memory */
  gboolean within_budget;                    /* peak <= budget */
  /* The budget changed the run (a compute waited for memory, a read was
   * held back). When it did not, the run is the same under any larger
   * budget, and with none. */
  gboolean budget_bound;
  /* More precisely: the run is the same (every figure but budget_bytes and
   * within_budget) under any memory_budget in [same_budget_lo,
   * same_budget_hi); hi is G_MAXUINT64 when the budget held nothing back. */
  guint64 same_budget_lo, same_budget_hi;
  /* Likewise for prefetch_window (with the same prefetch_unit), in
   * [same_window_lo, same_window_hi); hi is G_MAXUINT when the window held
   * nothing back. */
  guint same_window_lo, same_window_hi;
  /* Where the peak was reached: the compute work running or next to run. */
  RokActionKind peak_kind;
  guint peak_op, peak_micro_batch;
  gint64 peak_time_ns;
  gint64 compute_ns;   /* the compute stream's busy time, recompute included */
  gint64 recompute_ns; /* of which re-running forward ops */
  gint64 stall_ns[ROK_STALL_COUNT];
  gint64 stall_total_ns;
  gint64 busy_ns[ROK_STREAM_COUNT]; /* per stream, latencies included */
  guint64 pcie_d2h_bytes, pcie_h2d_bytes, nvme_write_bytes, nvme_read_bytes;
  guint64 staging_peak_bytes, host_peak_bytes;
  guint64 forwarded_tensors; /* offloaded tensors used from GPU memory */
  guint64 events;            /* events the engine processed */
  /* Pipeline parallelism: the stage this is (of `stages`) and its model
   * chunks. Without pipelining stage 0 of 1, one chunk, no bubble. */
  guint stage, stages, chunks;
  /* Per chunk, one micro-batch's forward and backward on this stage,
   * stalls and recompute included (mean over the detailed ones). */
  gint64 *chunk_fwd_ns, *chunk_bwd_ns;
  gint64 optimizer_ns;
  gint64 stage_ns;  /* the stage alone: its blocks back to back, then its optimizer step */
  gint64 bubble_ns; /* of step_ns, waiting for other stages (0 when not composed) */
  gint64 send_ns;   /* one activation (or its gradient) between two stages */
  /* The most chunk-micro-batches this stage holds at once under its
   * schedule, and the saved activations the plan keeps in GPU memory for
   * them (Megatron-LM's theoretical activation memory counts these). */
  guint64 in_flight, held_activation_bytes;
  /* Communication (with an interconnect in the profile; see comm.c):
   * exposed_comm_ns is what the step waits for: tensor-parallel
   * collectives and ZeRO-3's unhidden gathers on the compute stream (not
   * in compute_ns), and the data-parallel reduction's exposed part before
   * the optimizer step; tp_comm_ns the former, dp_comm_ns the reduction
   * in all (hidden or not), zero3_comm_ns ZeRO-3's gathers and
   * reductions in all. Pipeline sends are in the bubble. */
  gint64 exposed_comm_ns, tp_comm_ns, dp_comm_ns, dp_exposed_ns, zero3_comm_ns, zero3_exposed_ns;
  /* From a simulator that records (NULL otherwise): RokAction in order of
   * creation, guint action indexes, RokSimSample at every change. */
  GArray *actions, *deps, *samples;
} RokSimResult;

void rok_sim_result_free(RokSimResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSimResult, rok_sim_result_free)

/* A simulator for one trace on one machine: op times and the trace's
 * structure are computed once, scratch memory is reused between runs (the
 * planner runs many plans). Borrows `trace` and `hw`, which must outlive it.
 * Fails (ROK_ERROR_INPUT) on a profile the model cannot use (zero rates). */
typedef struct _RokSim RokSim;
RokSim *rok_sim_new(const RokTrace *trace, const RokHw *hw, GError **error);
void rok_sim_free(RokSim *sim);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSim, rok_sim_free)

/* Keep the action log and memory samples of every run (off by default:
 * the planner runs many plans and needs only their figures). */
void rok_sim_set_record(RokSim *sim, gboolean record);
/* The time of one op's forward or backward, in ns. */
gint64 rok_sim_op_ns(const RokSim *sim, guint op, gboolean backward);
/* How many micro-batches a run of the trace with detail_micro_batches =
 * `detail` simulates event by event: at most the step's, at least a
 * pipeline stage's in flight, all of them with virtual stages. */
guint rok_sim_detailed_micro_batches(const RokTrace *trace, guint detail);
/* Simulate one step. Fails (ROK_ERROR_INPUT) on a plan that does not fit
 * the trace: wrong length, recompute of what cannot be recomputed, NVMe
 * offload without SSDs, bad options. */
RokSimResult *rok_sim_run(RokSim *sim, const RokStepPlan *plan, GError **error);
/* rok_sim_new + rok_sim_run + rok_sim_free; the second records. */
RokSimResult *rok_simulate(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, GError **error);
/* A warning when the times of some of the trace's GEMM ops come from the
 * profile's GEMM model at shapes far from those it was calibrated on
 * (rok_hw_gemm_far): how many, the first, and the calibrated range. NULL
 * when none are (or the profile records no shapes). */
char *rok_sim_far_shapes(const RokTrace *trace, const RokHw *hw);
RokSimResult *rok_simulate_recorded(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, GError **error);

/* The schedule of `plan`: simulated with every micro-batch of the step in
 * detail (its other options kept), the action log becoming the program.
 * Borrows `trace` and `hw`, which must outlive it. */
RokSchedule *rok_sim_schedule_new(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const char *strategy,
                                  guint64 budget_bytes, GError **error);

/* ---- Pipeline parallelism ---- */

/* The step of a pipeline of `stages` stages of `chunks` chunks each over
 * `micro_batches` micro-batches, when a forward of chunk c on stage s takes
 * fwd_ns[s·chunks + c] (backward: bwd_ns), every send between stages
 * send_ns and stage s's optimizer step optimizer_ns[s] (may be NULL):
 * when the last stage finishes. busy_ns[s] (may be NULL) receives the time
 * stage s computes. With equal stages, one chunk and no sends the step is
 * (m + p - 1)·(f + b): a bubble of (p - 1)/(m + p - 1). */
gint64 rok_pipeline_step_ns(guint stages, guint chunks, guint64 micro_batches, const gint64 *fwd_ns,
                            const gint64 *bwd_ns, gint64 send_ns, const gint64 *optimizer_ns, gint64 *busy_ns);

/* Simulate stage s's trace traces[s] under plans[s] for s < n (n the
 * model's pipeline_parallel), recorded or not, and compose the pipeline:
 * results[s] (freed by the caller) carry the pipeline's step, their
 * bubble and the send time. */
gboolean rok_pipeline_simulate(RokTrace *const *traces, const RokHw *hw, RokStepPlan *const *plans, guint n,
                               gboolean record, RokSimResult **results, GError **error);

/* The summary as JSON: step_time_s, tokens_per_s, peak_bytes,
 * activation_peak_bytes, compute_s, recompute_s, stall_s, pcie_d2h_bytes,
 * pcie_h2d_bytes, nvme_write_bytes, nvme_read_bytes, fits, and more
 * (stall_s_by_cause, busy_s, peak_at, ...). */
json_object *rok_sim_result_to_json(const RokSimResult *result, const RokTrace *trace);

/* The action log as Chrome/Perfetto trace-event JSON: one track per
 * stream, GPU memory and staging buffer as counter tracks. Needs a result
 * of a recorded run (ROK_ERROR_USAGE otherwise). */
json_object *rok_sim_timeline_to_json(const RokSimResult *result, const RokTrace *trace, GError **error);
gboolean rok_sim_timeline_save(const RokSimResult *result, const RokTrace *trace, const char *path,
                               GError **error);

G_END_DECLS
