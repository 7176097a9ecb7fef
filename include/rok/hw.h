/* Hardware profile: one GPU, its PCIe links, host memory and an NVMe array.
 *
 * Read from configs/hw/NAME.json or written by `rok calibrate` (schema in
 * docs/hardware-profile.md). Bandwidths of the NVMe section are per
 * device; the devices are striped (RAID0). */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/core.h"

G_BEGIN_DECLS

/* The deepest NVMe queue a profile may ask for: what the storage backends
 * accept (storage.h: io_uring and psync take 1 to 1024 per file), so a
 * profile the executor would refuse later is refused where it is read. */
#define ROK_HW_MAX_QUEUE_DEPTH 1024
/* The request an SSD leg is cut into (or the tensor when smaller): the
 * executor's staging slot, the simulator's chunk, and the request size
 * whose rate a calibrated profile's nvme bandwidths are. */
#define ROK_HW_NVME_REQUEST_BYTES ((guint64)1 << 20)

/* One knot of a measured GEMM-efficiency curve: a GEMM launch of `flops`
 * floating-point operations (2·batch·m·n·k) reaches `efficiency` of
 * peak_flops. */
typedef struct {
  double flops;
  double efficiency;
} RokHwGemmPoint;

/* One knot of a measured op-rate curve: an op whose work in one direction
 * is `work` ran at `rate` work per second, the launch overhead taken out. */
typedef struct {
  double work;
  double rate;
} RokHwRatePoint;

/* What an op rate is for: an op's forward, its backward, or the rebuild
 * of its random mask from the seed alone (dropout: the work is the mask's
 * bytes). */
typedef enum {
  ROK_HW_FORWARD,
  ROK_HW_BACKWARD,
  ROK_HW_REBUILD,
  ROK_HW_DIRECTIONS
} RokHwDirection;

/* How fast the device runs the ops of one kind, forward and backward, by
 * size, as `rok calibrate` measures them by running every op of small
 * transformers through the executor's kernels. `kind` is a trace op kind's
 * name ("linear", "softmax", ...; the simulator rejects others). Work is
 * what the trace counts for the op in that direction (rok_op_work):
 * its FLOPs for GEMM-like kinds, its bytes for the others. Knots sorted by
 * work, strictly increasing; a direction may have none. */
typedef struct {
  char *kind;
  RokHwRatePoint *curve[ROK_HW_DIRECTIONS];
  guint len[ROK_HW_DIRECTIONS];
} RokHwOpRates;

/* One GEMM shape [batch, m, n, k]: batch products C[m×n] = A[m×k]·B[k×n]. */
typedef struct {
  guint64 dims[4];
} RokHwGemmDims;

/* One GEMM op `rok calibrate` timed as the executor runs it: its kind as
 * the trace names it ("linear"), its [batch, m, n, k], and its time per
 * direction (forward, backward), launch overhead taken out; -1: not
 * timed in that direction. backward_first: the share of its backward's
 * time that the first of its kernels takes (a linear's dW before its dX),
 * as a copy handed over early in the backward found a processor free;
 * 0: not measured (the simulator then takes half). */
typedef struct {
  char *kind;
  guint64 dims[4];
  gint64 ns[2];
  double backward_first;
} RokHwGemmOp;

/* Shapes a calibrated profile may record, and how far outside their range
 * (a factor, per dimension) a GEMM is "far" from them. */
#define ROK_HW_MAX_SHAPES 4096
#define ROK_HW_FAR_FACTOR 4.0
/* A backward's first kernel takes at least this share of it, and at most
 * 1 minus it (RokHwGemmOp.backward_first). */
#define ROK_HW_FIRST_KERNEL_MIN 0.02

/* GPUs a node section may describe. */
#define ROK_HW_MAX_NODE_GPUS 64

typedef struct {
  char *name;
  char *source; /* free text: datasheets or the calibration run (may be NULL) */
  /* Optional ("calibrated_busy", as `rok calibrate` writes it): the share
   * of the host's processors other processes used while the profile was
   * measured, which can have made its figures that much slower. 0
   * (absent): none known. */
  double calibrated_busy;
  /* Optional ("calibrated_copies_memory_speed", as `rok calibrate`
   * writes it): how fast the device's memory went while the copies were
   * timed, over how fast it went while the ops were (an element-wise add's
   * rate each time, rok_calib_copies_memory_speed), so that `rok validate`
   * can carry the kernels' speed it times over to the copies. 0 (absent):
   * not known. */
  double calibrated_copies_memory_speed;
  struct {
    guint64 memory;
    double peak_flops;        /* dense 16-bit FLOP/s */
    double matmul_efficiency; /* fraction of peak that GEMMs reach, (0, 1] */
    double hbm_bandwidth;     /* bytes/s */
    gint64 launch_overhead;   /* ns per kernel */
    /* Optional ("gemm_efficiency": [[flops, efficiency], ...] as `rok
     * calibrate` writes it): efficiency by GEMM size, flops strictly
     * increasing, efficiencies in (0, 1]. NULL / 0 when the profile has
     * none: then matmul_efficiency applies to every GEMM. */
    RokHwGemmPoint *gemm_curve;
    guint gemm_curve_len;
    /* Optional ("op_rates": {"linear": {"forward": [[work, rate], ...],
     * "backward": [...]}, "dropout": {..., "rebuild": [...]}, ...}):
     * measured rates per op kind, which take
     * the place of the roofline for the kinds they cover. NULL / 0 when
     * the profile has none. */
    RokHwOpRates *op_rates;
    guint op_rates_len;
    /* Optional: the device runs its kernels on this many of the host's
     * processors, and copies in and out of it run there too (an OpenCL CPU
     * device such as PoCL's has no copy engine: a copy is a memcpy on one
     * of the threads that run kernels, and the executor's checks run
     * beside them). 0 (absent): the device has processors and copy
     * engines of its own, as a GPU has. */
    guint64 shared_cpus;
    /* Optional, with shared_cpus: the share of what is left of the kernel
     * in progress that a copy handed over during it waits before its
     * commands run (PoCL gives a command a processor only when one is done
     * with the kernel). 0: none. */
    double copy_kernel_wait;
    /* Optional, with shared_cpus, and in its place where above 0: the
     * share of a kernel's own length (its time alone, from its start)
     * after which one of the processors that run it is done with its
     * work-groups and takes copies; a copy handed over before then waits
     * until then, one after it does not wait (measured: the point hardly
     * moves with when the copy comes). */
    double copy_kernel_free_at;
    /* Optional, with shared_cpus and copy_kernel_free_at: a copy handed
     * over within copy_launch_window (ns) of an item's launch, before the
     * device's threads are at work on its kernel, goes ahead of it in
     * copy_launch_ahead of the cases (0-1), and waits for the kernel's
     * free point in the others. 0 (absent): it waits. */
    gint64 copy_launch_window;
    double copy_launch_ahead;
    /* Optional, with shared_cpus: the device's copy queues run in order
     * (it cannot run them out of order, as rok's executor opens them where
     * it can): a copy command enqueued behind another is ready only once
     * that one has ended, so a d2h leg of several commands, or one queued
     * behind another leg, waits for the kernel launched meanwhile. FALSE
     * (absent): every copy enqueued is ready at once. */
    gboolean copy_queues_in_order;
    /* Optional, with shared_cpus: the processor time a d2h or h2d leg
     * takes besides moving and checking its bytes (ns: enqueueing its
     * commands, the device's scheduling and completing them, the waiting
     * threads' wake-ups), which the kernels on those processors lose. 0
     * (absent): none. */
    gint64 copy_leg_cpu;
    /* Optional: the device's own checksum of a tensor bound for host
     * memory or the SSDs, which rok's executor takes in its producer's
     * forward, after the op's kernels (two kernels and a read of the
     * result): bytes/s, and ns per tensor besides its bytes. 0 (absent):
     * not modelled. */
    double checksum_bandwidth;
    gint64 checksum_overhead;
    /* Optional, together: streaming multiprocessors and the output tile
     * [rows, cols] a GEMM kernel computes per thread block. With them a
     * GEMM's time counts its tile and wave quantisation
     * (rok_hw_gemm_utilisation); 0 (absent): it does not. */
    guint64 sm_count;
    guint64 gemm_tile[2];
  } gpu;
  /* Optional ("calibrated_shapes", as `rok calibrate` writes it): the GEMM
   * shapes it timed (those its GEMM model was fitted to) and the smallest
   * and largest bytes of the element-wise ops it timed. gemms_len 0 /
   * elementwise_bytes {0, 0}: none recorded (a datasheet profile). */
  struct {
    RokHwGemmDims *gemms;
    guint gemms_len;
    guint64 elementwise_bytes[2];
    /* The GEMM ops timed, one per kind and shape; gemm_ops_len 0: none. */
    RokHwGemmOp *gemm_ops;
    guint gemm_ops_len;
  } calibrated;
  struct {
    double h2d_bandwidth, d2h_bandwidth; /* bytes/s, each direction */
    gint64 latency;                      /* ns per transfer */
  } pcie;
  struct {
    guint64 memory;
    guint64 pinned_buffer;   /* staging buffer for GPU <-> SSD traffic */
    double memcpy_bandwidth; /* bytes/s */
    /* Optional: how fast the host checksums a copy (bytes/s). rok's
     * executor checks every tensor that crosses PCIe on the host, on the
     * copy's own thread; with this figure the simulator charges it to each
     * d2h and h2d leg. 0 (absent): no check is modelled. */
    double checksum_bandwidth;
    /* Optional ("checksum_rates", [[bytes, rate], ...] as `rok calibrate`
     * writes it): the check of a leg of `work` bytes right after its copy
     * out of the device ran at `rate` bytes/s (what is still in the
     * processors' caches goes several times faster than from memory); in
     * place of checksum_bandwidth where given (rok_hw_host_check_seconds).
     * checksum_rates_len 0: none. */
    RokHwRatePoint *checksum_rates;
    guint checksum_rates_len;
    /* Optional: the executor's own fixed cost per transfer leg (ns): the
     * hand-offs between its dispatcher, the leg's thread and the I/O
     * completions, and the staging bookkeeping. 0 (absent): none. */
    gint64 copy_overhead;
  } host;
  struct {
    guint64 devices;        /* 0: no SSDs */
    double read_bandwidth;  /* bytes/s per device */
    double write_bandwidth; /* bytes/s per device */
    gint64 latency;         /* ns per request */
    guint64 queue_depth; /* 1 to ROK_HW_MAX_QUEUE_DEPTH */
    guint64 capacity;       /* bytes per device */
    double endurance_pbw;   /* petabytes written per device over its life; 0: unknown */
    gboolean gpudirect;     /* SSD <-> GPU without the host staging buffer */
    /* Optional: what one request costs besides its bytes (ns): an SSD leg
     * moves at most one request (1 MiB, or the whole tensor when smaller)
     * per this time plus the request at the array's bandwidth. 0 (absent):
     * no cost. */
    gint64 request_overhead;
    /* Optional: what each request costs per MiB of it besides its bytes
     * at the array's bandwidth (ns per MiB): a request the disk serves
     * more slowly than the array's best figure (a lone request, one of
     * the executor's 1 MiB requests). 0 (absent): nothing. */
    gint64 request_overhead_per_mib;
    /* Optional: what an SSD leg pays once before its bytes move, beyond
     * latency (ns). 0: nothing. */
    gint64 leg_overhead;
    /* Optional: a write's latency and leg overhead where they differ from
     * a read's (a disk or its host's cache that takes a write sooner than
     * it answers a read), given when write_fixed is TRUE; otherwise a
     * write pays latency and leg_overhead as a read does. */
    gboolean write_fixed;
    gint64 write_latency, write_leg_overhead;
    /* Optional: what an SSD leg pays more, writing or reading (ns), when
     * the disk has had no request for wake_after or longer (a virtual
     * disk's host thread asleep, an SSD in a power-saving state). 0: none.
     * deep_wake_*: the same for a deeper sleep, after deep_wake_after or
     * longer (more than wake_after), in place of the wake above. */
    gint64 wake_write, wake_read, wake_after;
    gint64 deep_wake_write, deep_wake_read, deep_wake_after;
    /* Optional: what an SSD leg begun the moment another ended (the
     * executor issues it from that leg's completion) pays less, writing
     * or reading (ns), and each leg that goes with it: the disk and its
     * host thread still busy. At most latency (reads) and the write's
     * latency (writes). 0: nothing. */
    gint64 warm_write, warm_read;
    /* Optional: the disk completes the requests queued together at one
     * moment (a virtual disk whose host signals a batch of completions
     * at once), so that an SSD leg another SSD leg joins (of either
     * stream) ends with it. FALSE (absent): each leg ends when its own bytes have
     * moved, as an NVMe drive completes each request. */
    gboolean completes_together;
    /* Optional, with gpu.shared_cpus: the host processor time an SSD leg
     * takes once and per request (ns: submitting, completing and handing
     * it back, rok's threads and the kernel's I/O path), which the kernels
     * on those processors lose. 0 (absent): none. */
    gint64 leg_cpu, request_cpu;
  } nvme;
  /* Optional ("interconnect"): how the GPU reaches the others of its job.
   * gpus_per_node 0 (section absent): no figures, so no communication can
   * be costed (rok says so where a layout needs it). Bandwidths are what
   * one GPU moves per direction; a collective spanning nodes runs at the
   * inter-node figures. intra_node_pcie: peer-to-peer traffic inside the
   * node crosses the GPU's PCIe link (no NVLink), which host and SSD
   * copies also use. */
  struct {
    guint64 gpus_per_node;
    double intra_node_bandwidth; /* bytes/s, NVLink/NVSwitch or PCIe peer-to-peer */
    gint64 intra_node_latency;   /* ns per message */
    double inter_node_bandwidth; /* bytes/s per GPU (its share of the node's NICs) */
    gint64 inter_node_latency;
    gboolean intra_node_pcie;
  } interconnect;
  /* Optional ("node"): the profile describes a whole node whose `gpus`
   * GPUs share its host memory, pinned buffer and SSDs; gpu, pcie and
   * interconnect are each GPU's. nvme_devices[g] (nvme_devices_len = gpus,
   * or 0) says how many of the node's drives GPU g stripes over (its own
   * RAID0 array, as SSDTrain ran one per GPU); without it the drives are
   * divided evenly. rok plans one GPU: rok_hw_gpu_share() gives its share,
   * which carries `gpu` (its index) and is_share. gpus 1 (absent): the
   * profile is one GPU's and owns everything in it. */
  struct {
    guint64 gpus;
    guint64 nvme_devices[ROK_HW_MAX_NODE_GPUS];
    guint nvme_devices_len;
    guint64 gpu;
    gboolean is_share;
  } node;
} RokHw;

RokHw *rok_hw_load(const char *path, GError **error);
RokHw *rok_hw_parse(const char *name, const char *text, gsize length, GError **error);
/* A parsed document as a profile, after writing `overrides` into it
 * ("nvme.devices=2", as `--hw-set` gives them; NULL-terminated, may be
 * NULL; messages name them "--hw-set KEY=VALUE"). Values that parse but are
 * implausible as written (a plain number is bytes or seconds: "memory": 80
 * is 80 bytes, "latency": 70 is 70 s; "80GB" of GPU memory is 74.5 GiB
 * where parts sold as 80 GB have 80 GiB) add a sentence each to `warnings`
 * (char *; may be NULL). */
RokHw *rok_hw_from_doc(RokJsonDoc *doc, const char *const *overrides, GPtrArray *warnings, GError **error);
/* Whether `key` ("nvme.devices", "gpu") names a field of a hardware
 * profile, for messages that tell the two kinds of override apart. */
gboolean rok_hw_is_key(const char *key);
RokHw *rok_hw_copy(const RokHw *hw);
void rok_hw_free(RokHw *hw);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokHw, rok_hw_free)

/* The profile in base units; reads back to an equal profile. */
json_object *rok_hw_to_json(const RokHw *hw);
gboolean rok_hw_save(const RokHw *hw, const char *path, GError **error);

/* The fraction of peak_flops a GEMM launch of FLOPS operations reaches:
 * matmul_efficiency without a curve; with one, the curve interpolated in
 * log(flops) with Steffen's monotone method (no overshoot between knots;
 * linear with two knots), clamped to the end knots outside them. */
double rok_hw_gemm_efficiency(const RokHw *hw, double flops);

/* The fraction of the SMs' math that a GEMM of `batch` products C[m×n] =
 * A[m×k]·B[k×n] keeps busy: its useful output over the tiles of the waves
 * it runs (NVIDIA's Matrix Multiplication Background User's Guide, tile and
 * wave quantisation); 1 without sm_count. */
double rok_hw_gemm_utilisation(const RokHw *hw, guint64 batch, guint64 m, guint64 n, guint64 k);
/* The output tiles (gpu.gemm_tile) of `batch` products C[m×n]: the
 * thread blocks, or a CPU device's work-groups, a GEMM runs as; 0 without
 * gemm_tile. */
guint64 rok_hw_gemm_tiles(const RokHw *hw, guint64 batch, guint64 m, guint64 n);

/* How an op's GEMMs map onto thread blocks: a plain (batched) GEMM, whose
 * backward runs dX [m×k] over n and dW [k×n] over m; or flash attention
 * (FlashAttention-2), one block per block of query rows forward, of key
 * rows backward, each one tile column wide. */
typedef enum {
  ROK_HW_GEMM_PLAIN,
  ROK_HW_GEMM_FLASH
} RokHwGemmShape;

/* The utilisation (rok_hw_gemm_utilisation) of an op's GEMMs of dims
 * [batch, m, n, k] in one direction; two GEMMs of equal FLOPs (a plain
 * backward) combine as the harmonic mean (their times add). 1 without
 * sm_count. */
double rok_hw_gemm_op_utilisation(const RokHw *hw, RokHwGemmShape shape, const guint64 dims[4], gboolean backward);
/* The GEMM model's seconds for such an op moving `bytes` for `flops` in
 * one direction, launch overhead aside: the larger of flops / (peak_flops
 * · matmul_efficiency · utilisation) and bytes / hbm_bandwidth (the
 * roofline of small shapes). What the simulator charges without a
 * gemm_efficiency curve, and what `rok calibrate` fits. */
double rok_hw_gemm_op_seconds(const RokHw *hw, RokHwGemmShape shape, const guint64 dims[4], gboolean backward,
                              double flops, double bytes);

/* Whether a GEMM of these dims is far from the shapes the profile was
 * calibrated on: its m, n, k or FLOPs more than ROK_HW_FAR_FACTOR times
 * below the smallest or above the largest recorded. FALSE when the profile
 * records none. */
gboolean rok_hw_gemm_far(const RokHw *hw, const guint64 dims[4]);
/* The GEMM op of this kind and dims among the first N of OPS; NULL when
 * none. */
const RokHwGemmOp *rok_hw_gemm_op_find(const RokHwGemmOp *ops, guint n, const char *kind, const guint64 dims[4]);
/* The time the profile measured for a GEMM op of this kind and dims in
 * one direction (calibrated_shapes.gemm_ops), launch overhead aside, in
 * ns; -1 when it has none. */
gint64 rok_hw_gemm_op_measured(const RokHw *hw, const char *kind, const guint64 dims[4], gboolean backward);
/* "m 64-4096, n 64-4096, k 64-1024": the recorded GEMMs' ranges; NULL
 * when none are recorded. */
char *rok_hw_gemm_range_text(const RokHw *hw);

/* The measured rates of op kind `kind`; NULL when the profile has none. */
const RokHwOpRates *rok_hw_op_rates(const RokHw *hw, const char *kind);
/* The rate (work per second) an op of `work` reaches in one direction: the
 * direction's curve interpolated in log(work) as the GEMM curve is
 * (Steffen's monotone method, linear between two knots, clamped to the end
 * knots); 0 when the direction has no knot or `rates` is NULL. */
double rok_hw_op_rate(const RokHwOpRates *rates, RokHwDirection direction, double work);

/* Collectives as NCCL runs them, costed with the alpha-beta model over
 * `ranks` GPUs, each moving `bytes` (the whole buffer): ring all-gather and
 * reduce-scatter take (n-1)·α + (n-1)/n·bytes/β; all-reduce the faster of
 * the ring, 2(n-1)·α + 2(n-1)/n·bytes/β, and the (double binary) tree,
 * 2·⌈log2 n⌉·α + 2·bytes/β; a send α + bytes/β. α and β are the intra-node
 * figures when the group fits in a node, else the inter-node ones.
 * Seconds; 0 for one rank or a profile without an interconnect. */
typedef enum {
  ROK_COLLECTIVE_ALL_REDUCE,
  ROK_COLLECTIVE_ALL_GATHER,
  ROK_COLLECTIVE_REDUCE_SCATTER,
  ROK_COLLECTIVE_SEND
} RokCollective;
double rok_hw_collective_s(const RokHw *hw, RokCollective collective, double bytes, guint64 ranks,
                           gboolean inter_node);

/* GPU `gpu` of a node profile as one GPU's profile: host memory and the
 * pinned buffer divided by the node's GPUs, the SSDs it reaches (its
 * array, or its even share of the drives). A profile of one GPU, or a
 * share already, is copied as it is. ROK_ERROR_USAGE for a GPU the node
 * does not have. */
RokHw *rok_hw_gpu_share(const RokHw *hw, guint64 gpu, GError **error);
/* The GPU of the node with the fewest drives (the first of them): the one
 * whose plan the node's SSDs limit most. */
guint64 rok_hw_node_weakest_gpu(const RokHw *hw);

/* Derived rates of the whole array (all devices striped). */
double rok_hw_nvme_read_bandwidth(const RokHw *hw);
double rok_hw_nvme_write_bandwidth(const RokHw *hw);
/* What one SSD request waits in each direction (ns): a write's own
 * nvme.write_latency where the profile has one (write_fixed), else
 * nvme.latency; and what a leg pays once beyond it, leg_overhead or
 * write_leg_overhead alike. */
/* Seconds the host's check of a leg of BYTES takes: at the rate
 * host.checksum_rates gives that size (interpolated in log(bytes) with
 * Steffen's monotone method, clamped to the end knots), else at
 * host.checksum_bandwidth; 0 where the profile has neither. */
double rok_hw_host_check_seconds(const RokHw *hw, guint64 bytes);
gint64 rok_hw_nvme_latency(const RokHw *hw, gboolean write);
gint64 rok_hw_nvme_leg_overhead(const RokHw *hw, gboolean write);

G_END_DECLS
