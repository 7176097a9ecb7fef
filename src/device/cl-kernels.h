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
#pragma once

#ifdef ROK_WITH_OPENCL

#include "rok/device.h"

G_BEGIN_DECLS

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
 * `batch` repeats over the same buffers. When the buffers are tiny for the
 * FLOPs, batch caps at 65535 and the FLOPs fall short. */
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

G_END_DECLS

#endif /* ROK_WITH_OPENCL */
