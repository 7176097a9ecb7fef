/* Private to src/sim: the simulator's context and the compiled program.
 *
 * rok_sim_new() computes what does not depend on the plan (op times,
 * forward releases, which tensors each backward op reads). Each run
 * compiles the plan into a program: the forward items are one per op; the
 * backward items are, in backward order, the re-runs of each recompute
 * group followed by the backward op that first needs them, with the
 * tensors every item needs, allocates and releases. The engine then plays
 * the program for each micro-batch. */
#pragma once

#include "rok/sim.h"
#include "engine.h"

/* In a free list: an intermediate of a rebuild, freed only if the rebuild
 * allocated it (it may have found it live already). */
#define SIM_TEMP_BIT (1u << 31)

/* Effective decision of a tensor in a run: transient ones ignore theirs. */
enum { SIM_TRANSIENT = ROK_DECISION_COUNT };

typedef struct {
  RokActionKind kind;
  guint op;
  gint64 ns;
  guint64 work_bytes;  /* gradient memory taken when the item starts */
  guint64 done_bytes;  /* gradient memory given back when it ends */
  guint64 alloc_bytes; /* outputs it allocates (upper bound: some may be live already) */
  guint chunk;         /* backward items: index of their run of one prefetch unit */
  /* For the prefetcher's reserve: what the item takes when it starts
   * (outputs and gradients) and the ledger's change over the items before
   * it (taken less given back), from the start of backward. */
  guint64 start_bytes;
  gint64 level;
  guint needs, n_needs;   /* tensors that must be ready: offsets into ids */
  guint allocs, n_allocs; /* tensors it allocates when it starts */
  guint frees, n_frees;   /* tensors it releases when it ends */
} SimItem;

/* A release found while compiling: `tensor` (| SIM_TEMP_BIT for an
 * intermediate) is freed when `item` ends. */
typedef struct {
  guint item, tensor;
} SimRelease;

typedef struct {
  /* The backward items of one micro-batch, in order; the lists of the
   * items; the releases being gathered: plain buffers, appended to inline
   * (a run compiles tens of thousands). */
  SimItem *items;
  guint n_items, items_cap;
  guint *ids;
  guint n_ids, ids_cap;
  SimRelease *rel;
  guint n_rel, rel_cap;
  guint8 *eff;   /* effective decision per tensor */
  /* Per op: the device's checksum of its outputs bound for host memory or
   * the SSDs (gpu.checksum_bandwidth, checksum_overhead), which rok's
   * executor takes in the op's forward, after its kernels. */
  gint64 *fwd_check_ns;
  guint *first_need; /* per tensor: first backward item that needs it, or ROK_NO_ID */
  GArray *prefetch;  /* guint: offloaded tensors in order of first need */
  /* scratch for building recompute groups */
  guint8 *op_mark;
  guint *last_use;
  GArray *work, *group_ops, *group_of;
  /* Per layer l, built once: its tensors layer_tensors[layer_t[l] ..
   * layer_t[l + 1]) and its ops layer_ops[layer_o[l] .. layer_o[l + 1]),
   * each in id order, so that a group's closure scans its layer only. */
  guint *layer_t, *layer_tensors, *layer_o, *layer_ops;
  guint *trigger; /* per tensor, built once: the last op that reads it (0 if none) */
  /* Per tensor whose staged SSD write is gathered (sim_gather_requests):
   * the last such tensor its module makes, whose copy out ends the gather
   * (transfer.c, "Gathered writes"); ROK_NO_ID for the others. */
  guint *gather_closer;
} SimProgram;

/* One run of a micro-batch's forward or backward through one model chunk
 * (all of the trace without interleaving). */
typedef struct {
  guint mb;
  guint8 backward, vstage;
} SimBlock;

/* order.c: the stage's order of blocks and the op and item ranges of its
 * model chunks: forward ops fwd_lo[c] .. fwd_lo[c+1] of chunk c; backward
 * items bwd_lo[k] .. bwd_lo[k+1] of chunk chunks-1-k (backward runs the
 * last chunk first). */
typedef struct {
  guint chunks;
  guint *fwd_lo, *bwd_lo, *op_chunk;
  GArray *blocks; /* SimBlock, the order of this run */
  /* Per run: the time blocks took, from the end of the block before to
   * their last item's end (stalls included), summed per direction and
   * chunk: [backward · chunks + chunk], and how many there were. */
  gint64 *block_ns;
  guint *block_count;
  gint64 block_since;
} SimOrder;

struct _RokSim {
  const RokTrace *trace;
  const RokHw *hw;
  guint n_ops, n_tensors;
  gint64 *fwd_ns, *bwd_ns;
  /* Per op: the share of its backward its first kernel takes (the
   * profile's calibrated_shapes.gemm_ops backward_first; 0.5 otherwise). */
  double *bwd_first;
  /* Per op on a CPU device (gpu.shared_cpus): its backward's first kernel
   * has fewer work-groups than the device has processors, so one is idle
   * through it and takes a copy at once (first_kernel_idle). */
  gboolean *bwd_first_idle;
  gint64 optimizer_ns;
  /* Per op, activation gradients: taken when its backward starts (those
   * of its inputs it is the first to add to, and of outputs whose gradient
   * comes from outside the trace) and given back when it ends (its
   * outputs'). */
  guint64 *grad_start_bytes, *grad_end_bytes;
  guint64 *out_bytes;       /* per op: bytes of its outputs */
  guint *fwd_uses;          /* per tensor: forward ops that read it */
  guint *fwd_rel, *fwd_rel_ids; /* per op (CSR): tensors whose forward use ends with it */
  guint *bwd_need, *bwd_need_ids; /* per op (CSR): saved tensors its backward reads */
  guint *op_module;         /* per op: its module (layer and block, "layer3.attn"), numbered in forward order */
  double nvme_read_speed, nvme_write_speed; /* the array, bytes/s */
  /* comm.c: communication on the critical path of each op (included in
   * fwd_ns / bwd_ns), its sum over one micro-batch, ZeRO-3's gathers and
   * reductions in all, and the data-parallel reduction (its exposed part
   * is in optimizer_ns); hidden_bwd_ns: the collectives of each op's
   * backward that its GEMMs hide (on the link all the same). */
  gint64 *comm_fwd_ns, *comm_bwd_ns, *hidden_bwd_ns;
  gint64 comm_mb_ns, zero3_ns, zero3_exposed_ns, dp_ns, dp_exposed_ns;
  SimProgram prog;
  SimOrder order;
  SimEngine engine;
};

/* comm.c: one send between neighbouring pipeline stages (0 without an
 * interconnect in the profile). */
gint64 sim_send_ns(const RokTrace *trace, const RokHw *hw);
void sim_comm_ops(RokSim *sim);
void sim_comm_dp(RokSim *sim);

/* comm.c, for schedules: the communication folded into each op's time and
 * the optimizer step's, as parts the schedule writer splits out of the
 * compute actions. A part before the compute (after: the compute first). */
typedef struct {
  RokCollective collective;
  RokCommGroup group;
  guint64 bytes;
  gint64 ns;
  gboolean after;
} SimCommPart;
typedef struct {
  GArray *parts; /* SimCommPart */
  /* parts[first[i] .. first[i + 1]) of slot i: 2·op forward (recompute
   * too), 2·op + 1 backward, 2·n_ops the optimizer step. */
  guint *first;
  gint64 send_ns; /* a pipeline send and its bytes; 0 without one */
  guint64 send_bytes;
} SimComm;
void sim_comm_parts(const RokSim *sim, SimComm *comm);
void sim_comm_clear(SimComm *comm);

/* order.c */
void sim_order_ranges(RokSim *sim);
void sim_order_items(RokSim *sim);
void sim_order_clear(SimOrder *order);
/* A block has ended: its time counts for its direction and chunk. */
void sim_order_block_done(SimOrder *order, const SimBlock *block, gint64 now);
/* Megatron-LM's order of blocks for `n_mb` micro-batches on `stage`. */
void sim_order_blocks(GArray *blocks, guint stage, guint stages, guint chunks, guint n_mb);
/* Micro-batches to simulate in detail: the plan's count, or enough to
 * pass the stage's warm-up (all of them when interleaved). */
guint sim_order_detail(const RokTrace *trace, guint detail, guint64 micro_batches);

/* sim.c: a mask rebuilt from the seed alone by op `op`, `bytes` of it:
 * at the op kind's measured rebuild rate, else at HBM bandwidth. */
gint64 sim_seed_rebuild_ns(const RokSim *sim, guint op, guint64 bytes);
/* A GEMM-like op's seconds in one direction by the GEMM model
 * (rok_hw_gemm_op_seconds over the op's shapes; gemm-shape.c). */
double sim_gemm_seconds(const RokHw *hw, const RokOp *op, gboolean backward, double flops, double bytes);

/* program.c */
void sim_program_init(SimProgram *prog, guint n_ops, guint n_tensors);
void sim_program_clear(SimProgram *prog);
gboolean sim_program_build(RokSim *sim, const RokStepPlan *plan, GError **error);
/* An SSD write of fewer requests (ROK_SIM_CHUNK_BYTES) than this waits
 * to go with others (0: none does): half of what the array keeps in
 * flight, nvme.queue_depth per device. */
guint64 sim_gather_requests(const RokHw *hw);

static inline const SimItem *sim_item(const SimProgram *prog, guint index) {
  return &prog->items[index];
}
static inline const guint *sim_ids(const SimProgram *prog, guint offset) {
  return prog->ids + offset;
}

/* result.c: the result of the run the engine has just played. */
RokSimResult *sim_result_new(RokSim *sim);
