/* The device module: the OpenCL device layer and its kernels.
 *
 * Sections: cl-device (listing, opening, buffers, queues, events, pinned host
 * buffers, errors), cl-kernels (every kernel the op interpreter and
 * calibration launch), cl-numeric (host-side conversions of element types),
 * cl-checksum (the 64-bit checksum computed identically on host and
 * device). Everything that needs OpenCL exists only when the build has
 * ROK_WITH_OPENCL. Private to src/device: cl-device-private.h,
 * cl-kernels-private.h, cl-program.h. */
#pragma once

#include <glib.h>

#include "rok/core.h"

G_BEGIN_DECLS

/* ==== cl-device =========================================================== */

/* The OpenCL device layer of the executor: which devices exist, opening one
 * with a context and three in-order command queues (compute, device-to-host,
 * host-to-device, all with profiling enabled), device buffers counted in a
 * memory ledger, transfers, events and pinned host staging buffers.
 *
 * Errors are GError ROK_ERROR_DEVICE whose message names what was being done
 * and the OpenCL status by name ("allocating 'layer3.qkv' (1.0 GiB):
 * CL_MEM_OBJECT_ALLOCATION_FAILURE"); a bad device index is ROK_ERROR_USAGE.
 *
 * Threads: the memory ledger is thread-safe (allocations and frees may come
 * from any thread); queues may be used from several threads as OpenCL allows.
 * Kernel launches (cl-kernels.h) must come from one thread at a time.
 *
 * Everything here exists only when the build has ROK_WITH_OPENCL. */

/* How many nice levels below the process a CPU device's runtime worker
 * threads run, so that a stream's thread woken beside a kernel takes a
 * processor at once (cl-device.c says why). */
#define ROK_CL_CPU_WORKER_NICE 5

#ifdef ROK_WITH_OPENCL

#include <CL/cl.h>
#include <json-c/json.h>


/* ---- Listing --------------------------------------------------------- */

typedef struct {
  guint index;            /* across all platforms, in enumeration order: what --device takes */
  char *name;
  char *vendor;
  char *platform;         /* platform name */
  char *version;          /* CL_DEVICE_VERSION, e.g. "OpenCL 3.0 PoCL ..." */
  char *c_version;        /* CL_DEVICE_OPENCL_C_VERSION */
  char *driver;
  const char *type;       /* "gpu", "cpu", "accelerator" or "other" */
  guint64 global_memory;  /* bytes */
  guint64 max_alloc;      /* bytes in one buffer */
  guint64 local_memory;   /* bytes per work-group */
  guint compute_units;
  gsize max_work_group;
  gboolean little_endian;
  /* CL_DEVICE_QUEUE_PROPERTIES allows out-of-order queues: the copy queues
   * (d2h, h2d) are opened so, every enqueued copy ready at once. */
  gboolean out_of_order;
} RokClDeviceInfo;

void rok_cl_device_info_free(RokClDeviceInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokClDeviceInfo, rok_cl_device_info_free)

/* Every device of every platform, as RokClDeviceInfo (the array owns them).
 * No platform at all is an error naming the ICD packages to install. */
GPtrArray *rok_cl_device_list(GError **error);
/* The index rok_cl_device_open(-1) picks: the first GPU, else the first CPU
 * device, else the first device; -1 for an empty list. */
gint rok_cl_device_default_index(const GPtrArray *infos);
/* The table `rok execute --list-devices` prints (default marked with '*'). */
char *rok_cl_device_list_format(const GPtrArray *infos);
/* The same as a JSON array of objects (sizes in bytes). */
json_object *rok_cl_device_list_to_json(const GPtrArray *infos);

/* ---- An open device ---------------------------------------------------- */

typedef enum {
  ROK_CL_QUEUE_COMPUTE, /* kernels */
  ROK_CL_QUEUE_D2H,     /* offload: device to host */
  ROK_CL_QUEUE_H2D,     /* prefetch: host to device */
  ROK_CL_QUEUE_COUNT
} RokClQueue;

typedef struct _RokClDevice RokClDevice;

/* Open device `index` of rok_cl_device_list(), or the default one when
 * index < 0. On a CPU device its runtime's threads are lowered by
 * ROK_CL_CPU_WORKER_NICE. */
RokClDevice *rok_cl_device_open(gint index, GError **error);
void rok_cl_device_free(RokClDevice *device);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokClDevice, rok_cl_device_free)

const RokClDeviceInfo *rok_cl_device_info(const RokClDevice *device);
cl_device_id rok_cl_device_id(const RokClDevice *device);
cl_context rok_cl_device_context(const RokClDevice *device);
cl_command_queue rok_cl_device_queue(const RokClDevice *device, RokClQueue queue);
const char *rok_cl_queue_name(RokClQueue queue);

/* Memory ledger: bytes of device buffers allocated now, the most at once
 * since open (or the last reset), and the number of live buffers. */
guint64 rok_cl_device_allocated(RokClDevice *device);
guint64 rok_cl_device_peak(RokClDevice *device);
guint rok_cl_device_buffer_count(RokClDevice *device);
void rok_cl_device_reset_peak(RokClDevice *device);

/* ---- Buffers ------------------------------------------------------------ */

/* A device buffer of `elements` elements of `dtype`. Kernels check dtypes and
 * sizes of the buffers they are given. Fields are read-only. */
typedef struct {
  RokClDevice *device;
  cl_mem mem;
  RokDtype dtype;
  guint64 elements;
  guint64 bytes;
  char *label; /* for messages: the tensor name */
} RokClBuffer;

/* Allocate (uninitialised). More bytes than one allocation may have, or than
 * the device has left according to the ledger, fails at once with "out of
 * device memory" naming `label`. OpenCL implementations allocate lazily:
 * pass `commit` = TRUE to touch the buffer and wait for it (on the compute
 * queue), so that a failure shows here rather than at the first kernel
 * that uses it. */
RokClBuffer *rok_cl_buffer_new(RokClDevice *device, RokDtype dtype, guint64 elements, const char *label,
                               gboolean commit, GError **error);
void rok_cl_buffer_free(RokClBuffer *buffer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokClBuffer, rok_cl_buffer_free)

/* Free a buffer, keeping its memory idle for the next buffer of the same
 * size, as a framework's caching allocator does: an implementation backs a
 * new buffer with fresh memory (PoCL's CPU device: pages the OS maps in as
 * the first copy or kernel writes them; a GPU's driver allocates on first
 * use). Every command on it but those of the compute queue has completed;
 * with `compute_pending` those may still run, and it is reused only once
 * the compute queue has been finished, or marked (rok_cl_device_marker
 * with an event) and that marker has completed, since: no command of its
 * own sits between the kernels (until then it is neither reused nor
 * released: the executor marks the queue after every action, calibrate
 * finishes it after every pass). The ledger counts it free at once;
 * idle memory is released where a new buffer needs its room, and when the
 * device is closed. */
void rok_cl_buffer_recycle(RokClBuffer *buffer, gboolean compute_pending);
/* Bytes of buffers recycled and idle now (not in the ledger). */
guint64 rok_cl_device_idle_bytes(RokClDevice *device);

/* Transfers of `bytes` at byte `offset` of the buffer, on `queue`. A
 * non-blocking transfer needs its host memory untouched until its event
 * completes. `wait` (n_wait events, may be NULL) must complete first;
 * `event` (may be NULL) receives the transfer's event, which the caller
 * releases. */
gboolean rok_cl_buffer_write(RokClBuffer *buffer, RokClQueue queue, guint64 offset, guint64 bytes,
                             const void *src, gboolean blocking, guint n_wait, const cl_event *wait,
                             cl_event *event, GError **error);
gboolean rok_cl_buffer_read(RokClBuffer *buffer, RokClQueue queue, guint64 offset, guint64 bytes, void *dst,
                            gboolean blocking, guint n_wait, const cl_event *wait, cl_event *event,
                            GError **error);
/* Fill the whole buffer with zero bytes (on the compute queue). */
gboolean rok_cl_buffer_zero(RokClBuffer *buffer, GError **error);
/* Device-side copy of `bytes` between buffers (on the compute queue). */
gboolean rok_cl_buffer_copy(RokClBuffer *src, guint64 src_offset, RokClBuffer *dst, guint64 dst_offset,
                            guint64 bytes, GError **error);

/* ---- Ordering and timing ---------------------------------------------- */

/* An event that completes when everything enqueued on `queue` so far has. */
gboolean rok_cl_device_marker(RokClDevice *device, RokClQueue queue, cl_event *event, GError **error);
/* Commands enqueued on `queue` from now on wait for `events` (other queues'
 * markers, transfers). */
gboolean rok_cl_device_wait_events(RokClDevice *device, RokClQueue queue, guint n, const cl_event *events,
                                   GError **error);
gboolean rok_cl_device_flush(RokClDevice *device, RokClQueue queue, GError **error);
gboolean rok_cl_device_finish(RokClDevice *device, RokClQueue queue, GError **error);
/* Finish all three queues. */
gboolean rok_cl_device_finish_all(RokClDevice *device, GError **error);
/* Block until the events complete; a failed command is an error. */
gboolean rok_cl_events_wait(guint n, const cl_event *events, GError **error);
/* Profiling times of a completed event, in device-clock nanoseconds (the same
 * clock for every queue of the device, so overlaps can be compared). */
gboolean rok_cl_event_times(cl_event event, guint64 *start_ns, guint64 *end_ns, GError **error);

/* ---- Pinned host staging buffers -------------------------------------- */

/* Host memory the device can transfer from and to at full speed
 * (CL_MEM_ALLOC_HOST_PTR, mapped). `ptr` is aligned to at least `alignment`
 * bytes (a power of two, e.g. 4096 for O_DIRECT); where the mapped memory is
 * not, it falls back to aligned host memory wrapped with CL_MEM_USE_HOST_PTR
 * (`pinned` says which). Not counted in the device ledger. Wait for the
 * transfers that use `ptr` before freeing it. */
typedef struct {
  RokClDevice *device;
  cl_mem mem;
  void *ptr;
  guint64 bytes;
  gboolean pinned;
  void *owned; /* the aligned allocation in the fallback */
} RokClHostBuffer;

RokClHostBuffer *rok_cl_host_buffer_new(RokClDevice *device, guint64 bytes, gsize alignment, GError **error);
void rok_cl_host_buffer_free(RokClHostBuffer *buffer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokClHostBuffer, rok_cl_host_buffer_free)

/* ---- Errors --------------------------------------------------------- */

/* "CL_OUT_OF_RESOURCES", ... ("CL_ERROR(unknown status)" otherwise). */
const char *rok_cl_status_name(cl_int status);
/* Set `error` to ROK_ERROR_DEVICE "<what>: <status name>" (with a hint for
 * the out-of-memory statuses) and return FALSE. */
gboolean rok_cl_fail(GError **error, cl_int status, const char *format, ...) G_GNUC_PRINTF(3, 4);

#endif /* ROK_WITH_OPENCL */

/* ==== cl-kernels ========================================================== */

/* The compute kernels of the executor: every op of a trace, forward and
 * backward, on an OpenCL device.
 *
 * rok_cl_kernels_new() builds the embedded kernels (the .cl files in
 * kernels/) once for a device and an activation dtype (bf16, fp16 or fp32:
 * how activations, weights and activation gradients are stored). Kernels
 * compute in float and round to the activation dtype on store (bf16: to
 * nearest even). Other element types are fixed: dropout masks u8/u16/u32,
 * token ids i64, norm statistics, log-sum-exp, cross-entropy probabilities
 * and losses fp32, and weight gradients fp32 (accumulated: the kernels add
 * into them).
 *
 * Every launcher enqueues on the device's compute queue (in order) and
 * returns at once; it checks the buffers' dtypes and that every element it
 * will touch lies inside them (ROK_ERROR_DEVICE naming the buffer). Use
 * rok_cl_device_marker() / rok_cl_device_wait_events() to order against the
 * transfer queues. Launchers are not thread-safe: one thread launches.
 *
 * Determinism: every reduction runs in a fixed order with fixed work-group
 * sizes and no float atomics, so the same launch on the same inputs gives
 * the same bits, every time (a recomputed tensor equals the original). The
 * bits differ between devices and between activation dtypes.
 *
 * Layout conventions (all row-major, rows contiguous unless a stride says
 * otherwise): activations [tokens, features] with tokens batch-major, so
 * token t has position t % seq_len. Trace ops map to launchers as follows:
 *   embedding       rok_cl_embedding_forward / _backward
 *   layernorm       rok_cl_layernorm_*   (stats tensor [rows, 2])
 *   rmsnorm         rok_cl_rmsnorm_*     (stats tensor [rows])
 *   linear          rok_cl_gemm (+ bias; rok_cl_bias_backward)
 *   rotary          rok_cl_rotary (q and k heads side by side in one row)
 *   attn_scores     rok_cl_gemm with inner = heads, B transposed, alpha = scale
 *   softmax         rok_cl_softmax_* (causal: queries = seq_q)
 *   dropout         rok_cl_dropout_* (mask regenerable: rok_cl_dropout_mask)
 *   attn_context    rok_cl_gemm with inner = heads
 *   flash_attention rok_cl_attention_forward / _backward
 *   add, gelu, relu, swiglu, cross_entropy: the launchers of those names
 *   other           rok_cl_standin_shape + rok_cl_standin_run */

#ifdef ROK_WITH_OPENCL

typedef struct _RokClKernels RokClKernels;

/* Build for `device` with activations stored as `act_dtype` (bf16, fp16 or
 * fp32). A compiler failure is ROK_ERROR_DEVICE carrying the build log. */
RokClKernels *rok_cl_kernels_new(RokClDevice *device, RokDtype act_dtype, GError **error);
void rok_cl_kernels_free(RokClKernels *kernels);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokClKernels, rok_cl_kernels_free)

RokClDevice *rok_cl_kernels_device(const RokClKernels *kernels);
RokDtype rok_cl_kernels_act_dtype(const RokClKernels *kernels);
/* The options the program was built with (tile sizes, work-group sizes). */
const char *rok_cl_kernels_build_options(const RokClKernels *kernels);
/* A flag (read atomically, non-zero: stop) that long launches check between
 * their chunks; NULL: none. A GEMM or flash attention pass of more work
 * than a chunk runs as several launches (bit-identical to one launch: the
 * chunks split tiles, tile rows, batch entries and heads, never k), at most
 * two of them queued at a time; with the flag set it stops queueing and
 * fails with ROK_ERROR_CANCELLED. The flag must outlive its use.
 *
 * A chunk is ROK_KERNEL_CHUNK_SECONDS (rok/core.h) of work at the rate the device last
 * showed over a chunk (ROK_CL_CHUNK_FLOPS until one is measured): with two
 * queued, Ctrl-C stops a run within a second even on a slow or busy device
 * (SIGINT during a stand-in GEMM of 1e15 FLOPs to exit: 0.01-0.4 s on
 * PoCL's 2-core CPU device under a load average of 15-20,
 * tests/cli/execute-cancel.sh), while a GPU
 * gets chunks large enough that launching them costs nothing (the next is
 * queued before the host waits, so the device does not idle). Not split:
 * one tile of C (its k products), one attention work-group (its queries
 * against every key), and the element-wise and row kernels, whose work is
 * bounded by the bytes of tensors that fit the device. */
void rok_cl_kernels_set_cancel(RokClKernels *kernels, const gint *flag);
#define ROK_CL_CHUNK_FLOPS (G_GUINT64_CONSTANT(1) << 28)
/* A fixed chunk of `flops` (at least 1) instead of the measured rate's; 0:
 * the measured rate again. The tests split small GEMMs with it to check
 * that chunks give the same bits. */
void rok_cl_kernels_set_chunk_flops(RokClKernels *kernels, guint64 flops);

/* ---- GEMM -------------------------------------------------------------- */

/* One operand of a batched GEMM. Element (r, c) of the logical matrix of
 * batch entry z = outer·inner + head is stored at
 *   offset + outer·stride + (head / group)·head_stride + (trans ? c·ld + r : r·ld + c).
 * group 0 means 1. For C, trans and group are ignored, and its rows may not
 * overlap (ld >= n); inputs may overlap themselves. */
typedef struct {
  RokClBuffer *buffer;
  guint64 offset; /* elements */
  guint64 ld;     /* elements between stored rows */
  guint64 stride;
  guint64 head_stride;
  guint64 group;
  gboolean trans;
} RokClMatrix;

/* C = alpha·op(A)·op(B) + beta·C (+ bias[col]) for `batch` entries;
 * op(A) is m×k, op(B) k×n, C m×n. A, B and bias are activations; C is
 * activations or fp32 (weight gradients: beta = 1 accumulates). C must not
 * overlap A or B. `inner` splits the batch index into (outer, head); 0 or
 * 1 for a plain batch. */
typedef struct {
  guint64 batch, inner;
  guint64 m, n, k;
  RokClMatrix a, b, c;
  float alpha, beta;
  RokClBuffer *bias; /* NULL: none */
} RokClGemm;

/* A dense operand: the whole buffer from element 0, rows `ld` apart. */
RokClMatrix rok_cl_matrix(RokClBuffer *buffer, guint64 ld, gboolean trans);
gboolean rok_cl_gemm(RokClKernels *kernels, const RokClGemm *gemm, GError **error);

/* ---- Stand-in for ops with no kernel --------------------------------- */

/* A GEMM of about `flops` floating-point operations (2·batch·m·n·k) that
 * reads a buffer of `in_elements` and writes one of `out_elements`: C is a
 * dense m×n <= out_elements; A (m×k) and B (k×n) are sliding windows over
 * the input (row i starts at element i), so m + k and k + n <= in_elements;
 * `batch` repeats over the same buffers. k is at most ROK_CL_STANDIN_MAX_K
 * so that one tile of C, which no chunk splits, stays a bounded amount of
 * work (2^27 FLOPs for a 128 × 128 tile). When the buffers are tiny for the FLOPs, batch caps at 2^32 − 1
 * and the FLOPs fall short. */
#define ROK_CL_STANDIN_MAX_K 4096
typedef struct {
  guint64 batch, m, n, k;
} RokClStandin;

gboolean rok_cl_standin_shape(guint64 flops, guint64 in_elements, guint64 out_elements, RokClStandin *shape,
                              GError **error);
/* Run it: `in` and `out` are activation buffers at least as large as the
 * shape needs. */
gboolean rok_cl_standin_run(RokClKernels *kernels, const RokClStandin *shape, RokClBuffer *in, RokClBuffer *out,
                            GError **error);
/* "op 'x' (kind other) has no kernel: runs a stand-in GEMM of ... FLOPs". */
char *rok_cl_standin_describe(const char *op_name, const char *kind, const RokClStandin *shape);

/* ---- Normalisation ---------------------------------------------------- */

/* y = (x − mean)·rstd·gamma + beta per row of x [rows, cols]; saves the
 * statistics as the trace's `_stats` tensor: fp32 [rows, 2] = (mean, rstd). */
gboolean rok_cl_layernorm_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *gamma, RokClBuffer *beta,
                                  RokClBuffer *y, RokClBuffer *stats, guint64 rows, guint64 cols, float eps,
                                  GError **error);
/* dx from the saved x and stats; dgamma, dbeta (fp32 [cols]) accumulate.
 * dgamma and dbeta may be NULL (frozen parameters). */
gboolean rok_cl_layernorm_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *gamma, RokClBuffer *stats,
                                   RokClBuffer *dy, RokClBuffer *dx, RokClBuffer *dgamma, RokClBuffer *dbeta,
                                   guint64 rows, guint64 cols, GError **error);
/* y = x·rstd·gamma; stats are fp32 [rows] = rstd. dgamma may be NULL. */
gboolean rok_cl_rmsnorm_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *gamma, RokClBuffer *y,
                                RokClBuffer *rstd, guint64 rows, guint64 cols, float eps, GError **error);
gboolean rok_cl_rmsnorm_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *gamma, RokClBuffer *rstd,
                                 RokClBuffer *dy, RokClBuffer *dx, RokClBuffer *dgamma, guint64 rows, guint64 cols,
                                 GError **error);
/* dbias (fp32 [cols]) += column sums of dy [rows, cols]: a linear bias. */
gboolean rok_cl_bias_backward(RokClKernels *kernels, RokClBuffer *dy, RokClBuffer *dbias, guint64 rows,
                              guint64 cols, GError **error);

/* ---- Softmax ------------------------------------------------------------ */

/* y = softmax(scale·x) per row of [rows, cols]. With `causal`, rows come in
 * blocks of `queries` and row r (query q = r % queries) sees keys
 * j <= q + cols − queries; masked entries are 0. */
gboolean rok_cl_softmax_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *y, guint64 rows, guint64 cols,
                                gboolean causal, guint64 queries, float scale, GError **error);
/* dx = scale·y·(dy − Σ y·dy), from the saved output y. */
gboolean rok_cl_softmax_backward(RokClKernels *kernels, RokClBuffer *y, RokClBuffer *dy, RokClBuffer *dx,
                                 guint64 rows, guint64 cols, float scale, GError **error);

/* ---- Element-wise --------------------------------------------------------- */

/* GeLU (tanh approximation) and ReLU on n elements. GeLU's backward reads
 * the saved input; ReLU's reads its saved input or output alike (both are
 * positive at the same elements: the trace saves the output). y may be x. */
gboolean rok_cl_gelu_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *y, guint64 n, GError **error);
gboolean rok_cl_gelu_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *dy, RokClBuffer *dx, guint64 n,
                              GError **error);
gboolean rok_cl_relu_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *y, guint64 n, GError **error);
gboolean rok_cl_relu_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *dy, RokClBuffer *dx, guint64 n,
                              GError **error);
/* x [rows, 2·cols] = [gate | up]; y [rows, cols] = silu(gate)·up; dx is
 * [rows, 2·cols]. */
gboolean rok_cl_swiglu_forward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *y, guint64 rows, guint64 cols,
                               GError **error);
gboolean rok_cl_swiglu_backward(RokClKernels *kernels, RokClBuffer *x, RokClBuffer *dy, RokClBuffer *dx,
                                guint64 rows, guint64 cols, GError **error);
/* out = a + b (residual add; also sums gradients). out may be a or b. */
gboolean rok_cl_add(RokClKernels *kernels, RokClBuffer *a, RokClBuffer *b, RokClBuffer *out, guint64 n,
                    GError **error);

/* ---- Dropout -------------------------------------------------------------- */

/* Element e is kept when Philox4x32-10 word e of (seed, stream) is at least
 * round(p·2³²); kept elements are scaled by 1/(1−p). The mask (a u8, u16
 * or u32 buffer, as wide as the trace's mask dtype; 1 = kept) is a pure
 * function of (seed, stream, e): give every dropout op its own stream (e.g.
 * its op id) and regenerating its mask during recompute is bit-identical.
 * p in [0, 1). */
typedef struct {
  guint64 seed;
  guint64 stream;
  double p;
} RokClDropout;

gboolean rok_cl_dropout_forward(RokClKernels *kernels, const RokClDropout *dropout, RokClBuffer *x,
                                RokClBuffer *mask, RokClBuffer *y, guint64 n, GError **error);
/* The mask dropout_forward writes, alone. */
gboolean rok_cl_dropout_mask(RokClKernels *kernels, const RokClDropout *dropout, RokClBuffer *mask, guint64 n,
                             GError **error);
/* dx = dy·mask/(1−p) from the saved mask. */
gboolean rok_cl_dropout_backward(RokClKernels *kernels, const RokClDropout *dropout, RokClBuffer *mask,
                                 RokClBuffer *dy, RokClBuffer *dx, guint64 n, GError **error);

/* ---- Embedding, loss, rotary ------------------------------------------ */

/* y [tokens, hidden] = table[ids[t]] (+ positions[t % seq_len]); ids i64,
 * positions may be NULL. Ids outside [0, vocab) give zero rows. */
gboolean rok_cl_embedding_forward(RokClKernels *kernels, RokClBuffer *ids, RokClBuffer *table,
                                  RokClBuffer *positions, RokClBuffer *y, guint64 tokens, guint64 hidden,
                                  guint64 vocab, guint64 seq_len, GError **error);
/* dtable (fp32 [vocab, hidden]) += the rows of dy by id; dpositions (fp32
 * [seq_len, hidden], may be NULL) += by position. Deterministic: each row's
 * tokens are summed in token order (a counting sort, no float atomics). */
gboolean rok_cl_embedding_backward(RokClKernels *kernels, RokClBuffer *ids, RokClBuffer *dy, RokClBuffer *dtable,
                                   RokClBuffer *dpositions, guint64 tokens, guint64 hidden, guint64 vocab,
                                   guint64 seq_len, GError **error);

/* probs (fp32 [tokens, vocab]) = softmax(logits); loss (fp32 [tokens]) =
 * −log probs[label]. Labels outside [0, vocab) (−100) give loss 0. */
gboolean rok_cl_cross_entropy_forward(RokClKernels *kernels, RokClBuffer *logits, RokClBuffer *labels,
                                      RokClBuffer *probs, RokClBuffer *loss, guint64 tokens, guint64 vocab,
                                      GError **error);
/* dlogits = scale·(probs − onehot(label)); scale = dloss per token. */
gboolean rok_cl_cross_entropy_backward(RokClKernels *kernels, RokClBuffer *probs, RokClBuffer *labels,
                                       RokClBuffer *dlogits, guint64 tokens, guint64 vocab, float scale,
                                       GError **error);

/* Rotary embedding of `heads` heads of head_dim values per token row (row t
 * at offset + t·ld, heads contiguous), the first rot_dim dimensions of each
 * head rotated (GPT-NeoX pairing i, i + rot_dim/2), base usually 10000.
 * Backward rotates back. y may be x. */
typedef struct {
  guint64 tokens, heads, head_dim, rot_dim, seq_len;
  double base;
  guint64 x_offset, x_ld, y_offset, y_ld;
} RokClRotary;

gboolean rok_cl_rotary(RokClKernels *kernels, const RokClRotary *rotary, RokClBuffer *x, RokClBuffer *y,
                       gboolean backward, GError **error);

/* ---- Fused attention ---------------------------------------------------- */

/* A [batch, heads, rows, head_dim] view: element (b, h, r, c) at
 * offset + b·batch_stride + h·head_stride + r·row_stride + c. */
typedef struct {
  RokClBuffer *buffer;
  guint64 offset, row_stride, batch_stride, head_stride;
} RokClHeads;

/* O = dropout(softmax(scale·Q·Kᵀ, causal))·V per (batch, head). Q and O have
 * `heads` heads, K and V `kv_heads` (heads a multiple of it). Dropout, when
 * p > 0, draws element (bh, i, j) of stream `dropout.stream` as
 * rok_cl_dropout_mask() would for a [batch·heads, queries, keys] tensor. */
typedef struct {
  guint64 batch, heads, kv_heads, queries, keys, head_dim;
  gboolean causal;
  float scale;
  RokClDropout dropout;
  RokClHeads q, k, v, o;
} RokClAttention;

/* The largest head_dim the fused kernels take. */
#define ROK_CL_ATTENTION_MAX_HEAD_DIM 256

/* Writes o and lse (fp32 [batch·heads·queries]). */
gboolean rok_cl_attention_forward(RokClKernels *kernels, const RokClAttention *attention, RokClBuffer *lse,
                                  GError **error);
/* From the saved q, k, v, o and lse: dq, dk, dv (same layouts as q, k, v).
 * Recomputes the probabilities. */
gboolean rok_cl_attention_backward(RokClKernels *kernels, const RokClAttention *attention, RokClBuffer *lse,
                                   const RokClHeads *dout, const RokClHeads *dq, const RokClHeads *dk,
                                   const RokClHeads *dv, GError **error);

/* ---- Initial values --------------------------------------------------- */

/* Uniform values in [low, high) (activation or fp32 buffers) and token ids
 * in [0, vocab) (i64), a pure function of (seed, stream, element). */
gboolean rok_cl_fill_uniform(RokClKernels *kernels, RokClBuffer *buffer, guint64 seed, guint64 stream, float low,
                             float high, GError **error);
gboolean rok_cl_fill_tokens(RokClKernels *kernels, RokClBuffer *ids, guint64 seed, guint64 stream, guint64 vocab,
                            GError **error);

/* ---- Mixture of experts (moe.cl) --------------------------------------- */

/* A MoE layer's routing sizes: T tokens, E experts, top-k picks a token;
 * a "choice" i = t·k + j is token t's j-th pick (T·k of them). */
typedef struct {
  guint64 tokens, experts, top_k;
} RokClMoe;

/* Router: probs [T, E] fp32 = softmax(logits [T, E]); indices [T, k] i64
 * the top k (ties to the lower expert); weights [T, k] fp32 the picked
 * probabilities renormalised to sum 1. */
gboolean rok_cl_moe_route_forward(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *logits, RokClBuffer *probs,
                                  RokClBuffer *indices, RokClBuffer *weights, GError **error);
/* counts [E] i64: how many choices picked each expert. */
gboolean rok_cl_moe_count(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *indices, RokClBuffer *counts,
                          GError **error);
/* dlogits [T, E] (overwritten) from dweights [T, k] fp32 and, when
 * counts != NULL, the load-balancing loss aux_scale · Σ_e counts[e] ·
 * Σ_t probs[t][e]. */
gboolean rok_cl_moe_route_backward(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *probs,
                                   RokClBuffer *indices, RokClBuffer *dweights, RokClBuffer *counts, float aux_scale,
                                   RokClBuffer *dlogits, GError **error);
/* The rows of each expert, grouped by expert in choice order: row_token
 * [rows] i64 (the choice, -1 for padding) and row_weight [rows] fp32.
 * capacity 0: dropless (rows = T·k, expert e's rows after the counts of
 * the experts before it); else every expert has `capacity` rows
 * (rows = E·capacity), keeps its first choices and pads the rest. */
gboolean rok_cl_moe_place(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *indices, RokClBuffer *weights,
                          RokClBuffer *counts, guint64 capacity, RokClBuffer *row_token, RokClBuffer *row_weight,
                          guint64 rows, GError **error);
/* inv [T·k] i64: the row of each choice, -1 where none holds it. */
gboolean rok_cl_moe_invert(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *row_token, guint64 rows,
                           RokClBuffer *inv, GError **error);
/* dst [rows, hidden] = the token rows of src [T, hidden] (· scale[r] fp32
 * when scale != NULL); zeros for padding rows. */
gboolean rok_cl_moe_gather(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *row_token, RokClBuffer *src,
                           RokClBuffer *scale, RokClBuffer *dst, guint64 rows, guint64 hidden, GError **error);
/* out [T, hidden] = Σ over each token's picks in slot order of (scale[r] ·)
 * y[r], r = inv[choice] (y [rows, hidden]). */
gboolean rok_cl_moe_combine(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *inv, RokClBuffer *y,
                            RokClBuffer *scale, RokClBuffer *out, guint64 rows, guint64 hidden, GError **error);
/* drow [rows] fp32 (+)= dout[token of r] · y[r] (0 for padding). */
gboolean rok_cl_moe_row_dot(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *row_token, RokClBuffer *dout,
                            RokClBuffer *y, RokClBuffer *drow, gboolean accumulate, guint64 rows, guint64 hidden,
                            GError **error);
/* dchoice [T·k] fp32 (+)= drow[inv[i]] (0 for a dropped choice). */
gboolean rok_cl_moe_unpermute(RokClKernels *kernels, const RokClMoe *moe, RokClBuffer *inv, RokClBuffer *drow,
                              guint64 rows, RokClBuffer *dchoice, gboolean accumulate, GError **error);
/* Qwen2-MoE's shared-expert gate: out [T, hidden] = y · sigmoid(g [T]);
 * backward dy = dout · s, dg = Σ_col dout·y · s(1 - s) (both overwritten). */
gboolean rok_cl_moe_gate_forward(RokClKernels *kernels, RokClBuffer *y, RokClBuffer *g, RokClBuffer *out,
                                 guint64 tokens, guint64 hidden, GError **error);
gboolean rok_cl_moe_gate_backward(RokClKernels *kernels, RokClBuffer *y, RokClBuffer *g, RokClBuffer *dout,
                                  RokClBuffer *dy, RokClBuffer *dg, guint64 tokens, guint64 hidden, GError **error);

#endif /* ROK_WITH_OPENCL */

/* ==== cl-numeric ========================================================== */

/* Host mirrors of the kernels' number handling, so the host can produce and
 * read device data bit for bit: 16-bit float conversions (round to nearest
 * even, as the kernels store), the Philox4x32-10 generator and the dropout
 * threshold. Plain C: available with or without OpenCL. */


float rok_cl_bf16_to_float(guint16 bits);
guint16 rok_cl_float_to_bf16(float value);
float rok_cl_fp16_to_float(guint16 bits);
guint16 rok_cl_float_to_fp16(float value);

/* Convert n elements between float and a float dtype (bf16, fp16, fp32) as
 * stored on the device; FALSE for other dtypes. */
gboolean rok_cl_dtype_from_float(RokDtype dtype, const float *src, void *dst, gsize n);
gboolean rok_cl_dtype_to_float(RokDtype dtype, const void *src, float *dst, gsize n);

/* Philox4x32-10 of Random123: out = philox(counter, key). */
void rok_cl_philox4x32_10(const guint32 counter[4], const guint32 key[2], guint32 out[4]);
/* Word `element` of stream `stream` under `seed`: what the kernels draw
 * (word element % 4 of the block with counter (element / 4, stream) and
 * key seed). */
guint32 rok_cl_random_word(guint64 seed, guint64 stream, guint64 element);
/* Elements whose word is at least this are kept: round(p·2³²), p in [0, 1). */
guint32 rok_cl_dropout_threshold(double p);

/* ==== cl-checksum ========================================================= */

/* Integrity checksums of tensor bytes, computed on the device before a
 * tensor leaves it and on the host (or the device again) after it returns.
 *
 * The value is a 64-bit function of the bytes and their count: the bytes are
 * read as little-endian 64-bit words (the last padded with zeros), word w
 * contributes fmix64(word ^ (w·0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019)),
 * contributions add modulo 2⁶⁴ and the sum is mixed with the length. As the
 * per-word mix is a bijection, any change confined to one 64-bit word — in
 * particular any single flipped bit or changed byte — always changes the
 * value; other corruptions go unnoticed with probability about 2⁻⁶⁴. The sum
 * is order-free, so the host can stream the bytes in pieces and the device
 * can split them among work-groups, and both get the same value.
 *
 * The host functions are plain C (available without OpenCL). */


/* The checksum of `bytes` bytes at `data`. */
guint64 rok_cl_checksum_bytes(const void *data, guint64 bytes);

/* The same over bytes that arrive in pieces, in order. */
typedef struct {
  guint64 sum;
  guint64 bytes;        /* seen so far */
  guint8 pending[8];    /* the current partial word */
} RokClChecksum;

void rok_cl_checksum_init(RokClChecksum *state);
void rok_cl_checksum_update(RokClChecksum *state, const void *data, gsize bytes);
guint64 rok_cl_checksum_finish(const RokClChecksum *state);

/* Combine per-tensor checksums into one value (the gradients' checksum at
 * the end of a run): order-sensitive, so list them in a fixed order. */
guint64 rok_cl_checksum_combine(const guint64 *values, gsize n);

#ifdef ROK_WITH_OPENCL
/* Enqueue the checksum of `bytes` bytes at byte `offset` (a multiple of 8)
 * of `buffer` on the compute queue; the value lands in element `slot` of
 * `results` (an i64 buffer) when the queue gets there. Read it back with
 * rok_cl_buffer_read(). */
gboolean rok_cl_checksum_enqueue(RokClKernels *kernels, RokClBuffer *buffer, guint64 offset, guint64 bytes,
                                 RokClBuffer *results, guint64 slot, GError **error);
/* The same, waited for: the checksum of the whole buffer. */
gboolean rok_cl_checksum_buffer(RokClKernels *kernels, RokClBuffer *buffer, guint64 *value, GError **error);
#endif

G_END_DECLS
