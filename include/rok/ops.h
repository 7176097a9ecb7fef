/* The executor's op interpreter: what every op of a trace means, run as
 * OpenCL kernels at the trace's shapes (src/device/cl-kernels.h).
 *
 * A RokExecModel owns the model's parameters (16-bit or fp32 values in the
 * kernels' activation dtype, fp32 gradient accumulators), the activation
 * gradients of the micro-batches in backward, and each op's meaning: which
 * kernels it runs, on which parameters, with which shapes. The runner owns
 * the activation tensors: it allocates them (rok_exec_model_alloc_tensor),
 * moves them between the device, host and disks as its schedule says, and
 * hands them in as an array indexed by tensor id (NULL where a tensor is
 * not resident now).
 *
 * Semantics, from the trace and, where the trace has one, its model config:
 *  - linear: y = x·W (+ bias for GPT and BERT); LLaMA's "attn.qkv" writes
 *    its column blocks into its two outputs (qk, v). GPT, BERT and T5 tie
 *    the output head ("head.logits", the linear feeding cross_entropy) to
 *    the token embedding (BERT adds a vocabulary bias); T5's decoder shares
 *    the encoder's embedding table. GPT and BERT add learned positions.
 *  - attention: scale 1/sqrt(head_dim); causal for GPT, LLaMA and T5's
 *    decoder self-attention, not for BERT, T5's encoder or cross-attention.
 *    Heads and key/value heads per rank come from the model (GQA: a key/value
 *    head serves heads/kv_heads query heads). Where q, k and v lie is read
 *    from the widths of the op's inputs (one [tokens, (h+2kv)·d] tensor, or
 *    qk + v, or q + kv). T5's relative position bias is not modelled.
 *  - layernorm eps 1e-5 (gamma, beta); rmsnorm eps 1e-6 (gamma); GeLU (tanh
 *    approximation), ReLU, SwiGLU, residual add, rotary (full head, base
 *    10000), softmax (the scores' scale is applied by the scores GEMM).
 *  - dropout: the mask of op `o` in micro-batch `mb` is a pure function of
 *    (seed, mb, o) (Philox), so a recomputed mask equals the original;
 *    flash attention's internal dropout likewise.
 *  - mixture of experts (op-moe.c): moe_router takes softmax(logits) in
 *    fp32 and each token's top k (ties to the lower expert), weights the
 *    picks renormalised to sum 1 (Mixtral's routing, for every family);
 *    moe_dispatch groups the rows by expert, each expert's in token order:
 *    dropless (rows = top_k × tokens, groups as large as the experts' loads)
 *    or, with a capacity factor, rows / experts per expert, its first
 *    choices kept, the rest dropped and the group zero-padded; row_token
 *    holds each row's choice t·top_k + slot (-1: padding). The linears over
 *    the routed rows have one weight per expert (stacked: [experts·in,
 *    out]) and run one GEMM per expert group; moe_combine sums each token's
 *    weighted rows in slot order. Qwen2-MoE's shared-expert gate (an
 *    `other` op) runs as y · sigmoid(g). aux_loss adds the gradient of
 *    Megatron's load-balancing loss, coef · E / (T²·k) · Σ_e tokens_e ·
 *    Σ_t p_te, to the router's (its value is not in the reported loss).
 *    The routing weights' gradients are fp32. Dispatch forward reads the
 *    experts' row counts back to the host (a synchronisation, as in
 *    Megatron's dropless MoE); the model keeps them per micro-batch and
 *    layer for the expert GEMMs' forward and backward. Expert parallelism
 *    and sequence parallelism in MoE layers are ROK_ERROR_INPUT.
 *  - input: token ids (and labels) are uniform in [0, vocab) from (seed, mb,
 *    tensor); the vocabulary is the embedding's (labels: the cross-entropy's,
 *    which is the rank's share of it under tensor parallelism).
 *  - cross_entropy: loss = mean over the micro-batch's tokens; gradients of
 *    successive micro-batches add up (no division by their number).
 *  - tensor parallelism: the trace's shapes are one rank's, and run as they
 *    are. Sequence parallelism: where a linear or embedding reads or writes a
 *    tensor with 1/t of the rows it computes, the all-gather is stood in for
 *    by repeating the rank's rows and the reduce-scatter by summing the t row
 *    blocks (their exact adjoints run in backward), so the rank computes the
 *    op's full FLOPs and its gradients stay exact for what it computed.
 *  - pipeline parallelism: a stage's last activation, which no op of its
 *    trace reads, gets a small gradient seeded by (seed, mb, tensor) in place
 *    of the one the next stage would send.
 *  - traces without a model (imported): ops of known kinds run from their
 *    dims and tensor shapes where these determine them (linear, norms,
 *    element-wise ops, dropout, softmax without a causal mask, embedding,
 *    cross_entropy); attention cores and rotary need the model's heads.
 *    Whatever cannot run as itself (kind "other", or shapes that do not fit
 *    the kind) runs a stand-in GEMM of the op's FLOPs on buffers of its
 *    bytes, and rok_exec_model_op_note() says so and why.
 *
 * Determinism: every kernel is deterministic and every accumulation happens
 * in an order fixed by the trace (backward ops in reverse forward order), so
 * re-running an op's forward gives bitwise the same outputs, and the weight
 * gradients after a step are bitwise the same whatever the plan recomputed,
 * offloaded or kept.
 *
 * Errors: a tensor that must be resident and is not (tensors[id] == NULL) is
 * ROK_ERROR_INTEGRITY naming the op and the tensor; a buffer of the wrong
 * dtype or size, a backward out of order, or an op or tensor id out of range
 * is ROK_ERROR_INPUT; kernel and allocation failures are ROK_ERROR_DEVICE.
 * After an error the micro-batch's gradients are unspecified.
 *
 * Threads: not thread-safe. Call from the one thread that launches kernels;
 * everything is enqueued on the device's compute queue. Ordering against
 * the transfer queues (a tensor being prefetched) is the runner's job
 * (rok_cl_device_marker / rok_cl_device_wait_events).
 *
 * Everything here exists only when the build has ROK_WITH_OPENCL. */
#pragma once

#ifdef ROK_WITH_OPENCL

#include <glib.h>

#include "rok/device.h"
#include "rok/trace.h"

G_BEGIN_DECLS

typedef struct _RokExecModel RokExecModel;

/* Parameters for every op with weights, initialised deterministically from
 * `seed` (Philox on the device, small uniform values scaled by fan-in), fp32
 * gradient accumulators zeroed; each op's semantics checked against the
 * trace's shapes. All parameters of the trace are allocated here (values
 * and gradients, in the ledger under their names: a model too large for the
 * device fails here with "out of device memory"). The kernels' activation
 * dtype must be the trace's model dtype (ROK_ERROR_INPUT otherwise).
 * `trace` and `kernels` must outlive the model. */
RokExecModel *rok_exec_model_new(RokClKernels *kernels, const RokTrace *trace, guint64 seed, GError **error);
void rok_exec_model_free(RokExecModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokExecModel, rok_exec_model_free)

const RokTrace *rok_exec_model_trace(const RokExecModel *model);
RokClKernels *rok_exec_model_kernels(const RokExecModel *model);

/* A device buffer for tensor `tensor` (its dtype and element count from the
 * trace), counted in the device's memory ledger under the tensor's name. The
 * caller owns it (rok_cl_buffer_free). Contents are undefined until the
 * tensor's producer runs forward. */
RokClBuffer *rok_exec_model_alloc_tensor(RokExecModel *model, guint tensor, GError **error);

/* Forward of `op` for micro-batch `mb`. Reads its inputs from tensors[id]
 * (all must be resident) and writes its outputs into tensors[id]; an output
 * whose entry is NULL is computed into a scratch buffer and dropped (a
 * recompute that needs only some of an op's outputs). Re-running an op for
 * the same mb on equal inputs writes bitwise-equal outputs: this is
 * recompute. `tensors` has one entry per trace tensor. */
gboolean rok_exec_model_forward(RokExecModel *model, guint op, guint mb, RokClBuffer *const *tensors, GError **error);

/* The seed-only rebuild of a dropout mask (a mask's recompute_from is
 * empty): writes the mask of dropout op `op` into tensors[mask], bitwise
 * what its forward wrote, reading nothing else. ROK_ERROR_INPUT when `op`
 * is not a dropout that runs as itself or the mask has no buffer. */
gboolean rok_exec_model_rebuild_mask(RokExecModel *model, guint op, guint mb, RokClBuffer *const *tensors,
                                     GError **error);

/* Backward of `op` for micro-batch `mb`. Reads only the tensors the trace
 * saves for it (those whose needed_by holds op: they must be resident,
 * others may be NULL), the parameters and the gradients of its outputs;
 * adds the gradients of its activation inputs into the model's gradient
 * buffers (allocated when first written, counted in the ledger) and its
 * weight gradients into the parameters' accumulators, then frees the
 * gradients of its outputs (consumed). Call it for every op of the micro-
 * batch in reverse forward order (input ops included: they only drop
 * gradients). Backward of an op whose outputs' gradients were already
 * consumed, or that writes the gradient of an input already consumed, is
 * ROK_ERROR_INPUT (out of order). */
gboolean rok_exec_model_backward(RokExecModel *model, guint op, guint mb, RokClBuffer *const *tensors, GError **error);

/* Free whatever activation gradients of micro-batch `mb` are left (none
 * after a complete backward in order) and forget its bookkeeping, so the
 * same mb number can run again. Returns the bytes freed. */
guint64 rok_exec_model_end_micro_batch(RokExecModel *model, guint mb);

/* Bytes of activation gradients allocated now (all micro-batches). */
guint64 rok_exec_model_gradient_bytes(const RokExecModel *model);

/* The mean cross-entropy loss of micro-batch `mb` (summed over the trace's
 * cross_entropy ops), from its last forward; waits for the compute queue.
 * (Per-token losses stay on the device, 4 bytes a token per micro-batch
 * number used, until the model is freed.)
 * ROK_ERROR_INPUT when the trace has no cross_entropy op or it has not run
 * for mb. */
gboolean rok_exec_model_loss(RokExecModel *model, guint mb, double *loss, GError **error);

/* Zero every weight gradient (the start of a step: gradients accumulate over
 * micro-batches and over steps until zeroed). */
gboolean rok_exec_model_zero_gradients(RokExecModel *model, GError **error);

/* After the last micro-batch: the checksum of every weight gradient
 * (rok_cl_checksum_buffer of each, in parameter order, combined with
 * rok_cl_checksum_combine). Waits for the compute queue. */
gboolean rok_exec_model_gradient_checksum(RokExecModel *model, guint64 *checksum, GError **error);

/* NULL when op `op` runs its own kernels; otherwise why it does not and the
 * stand-in GEMM it runs instead ("op 'x' (kind other) has no kernel: ..."). */
const char *rok_exec_model_op_note(const RokExecModel *model, guint op);
/* How many ops run a stand-in. */
guint rok_exec_model_standin_count(const RokExecModel *model);

/* The parameters, in a fixed order (the checksum's). Values are in the
 * kernels' activation dtype, gradients fp32, both row-major [rows, cols];
 * the buffers belong to the model (write to them only between steps). */
typedef struct {
  const char *name; /* "layer0.attn.qkv.weight", "embed.lookup.table", ... */
  RokClBuffer *value;
  RokClBuffer *grad;
  guint64 rows, cols;
} RokExecParam;

guint rok_exec_model_param_count(const RokExecModel *model);
const RokExecParam *rok_exec_model_param(const RokExecModel *model, guint index);
/* Bytes of parameter values and gradients together. */
guint64 rok_exec_model_param_bytes(const RokExecModel *model);

G_END_DECLS

#endif /* ROK_WITH_OPENCL */
