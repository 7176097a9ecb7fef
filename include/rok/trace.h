/* The trace: the ops of one micro-batch in forward order, and every tensor
 * they produce, with what backward needs of each.
 *
 * A tensor is one storage: a tensor that several backward ops need (the
 * softmax output without dropout is needed by the softmax backward and by
 * the attention-times-V backward) appears once, with several entries in
 * `needed_by`. A tensor with an empty `needed_by` is transient: it lives in
 * forward only until its last consumer has run. Tensors are saved for
 * backward exactly when `needed_by` is not empty.
 *
 * Layers: transformer layers are numbered from 0 in forward order (T5: the
 * encoder's, then the decoder's); ops and tensors outside them (input,
 * embedding, loss head) have layer -1. A tensor's layer is the layer whose
 * activation memory it counts towards (a layer's input belongs to that
 * layer, as in Korthikanti et al.).
 *
 * Op dims are [batch, m, n, k]: a batched GEMM C(m×n) = A(m×k)·B(k×n) for
 * linear, attn_scores, attn_context and flash_attention (n = keys, k = head
 * dim for the latter); [1, rows, cols, 0] for the others (embedding:
 * [1, tokens, hidden, vocab]; cross_entropy: [1, tokens, vocab, 0]).
 *
 * File format `rok-trace/1`: see rok_trace_to_json(). */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/core.h"
#include "rok/model.h"

G_BEGIN_DECLS

typedef enum {
  ROK_OP_INPUT,           /* token ids and labels enter: no work */
  ROK_OP_EMBEDDING,       /* token (+ position) embedding lookup */
  ROK_OP_LAYERNORM,
  ROK_OP_RMSNORM,
  ROK_OP_LINEAR,          /* x·W (+ bias) */
  ROK_OP_ROTARY,          /* rotary position embedding of q and k */
  ROK_OP_ATTN_SCORES,     /* Q·Kᵀ, scaled (+ mask, + position bias) */
  ROK_OP_SOFTMAX,
  ROK_OP_DROPOUT,         /* outputs: mask (any width), then result */
  ROK_OP_ATTN_CONTEXT,    /* P·V */
  ROK_OP_FLASH_ATTENTION, /* fused attention core; outputs: context, log-sum-exp */
  ROK_OP_ADD,             /* residual add */
  ROK_OP_GELU,
  ROK_OP_RELU,
  ROK_OP_SWIGLU,          /* silu(gate) · up, from one [gate|up] tensor */
  ROK_OP_CROSS_ENTROPY,   /* softmax + loss; output: the saved probabilities */
  ROK_OP_MOE_ROUTER,      /* softmax and top-k over router logits (+ load-balancing loss);
                             outputs: probabilities (fp32), top-k indices, top-k weights */
  ROK_OP_MOE_DISPATCH,    /* tokens permuted to their experts; outputs: routed rows, each row's token, weight */
  ROK_OP_MOE_COMBINE,     /* routed rows weighted and summed back per token */
  ROK_OP_OTHER,           /* imported op of no known kind */
  ROK_OP_KIND_COUNT
} RokOpKind;

typedef struct {
  guint id;
  char *name;   /* "layer3.attn.qkv" */
  gint layer;
  RokOpKind kind;
  guint64 dims[4];
  double dropout;                /* probability, dropout and flash_attention ops */
  guint64 fwd_flops, bwd_flops;  /* floating-point operations */
  guint64 fwd_bytes, bwd_bytes;  /* memory traffic (reads + writes) */
  double fwd_time_s, bwd_time_s; /* measured in a real run; < 0 when unknown */
  GArray *inputs;                /* guint tensor ids */
  GArray *outputs;               /* guint tensor ids */
} RokOp;

typedef struct {
  guint id;
  char *name;  /* "layer3.mlp.gelu_in" */
  gint layer;
  RokDtype dtype;
  guint rank;
  guint64 shape[4];
  guint64 bytes;          /* product of shape × dtype size */
  guint producer;         /* op id */
  GArray *needed_by;      /* guint op ids whose backward reads it */
  gboolean recomputable;  /* FALSE for data (token ids) */
  GArray *recompute_from; /* guint tensor ids its producer reads */
} RokTensor;

/* Memory that does not depend on the plan, for one GPU. */
typedef struct {
  guint64 params_total;         /* the whole model */
  guint64 params_per_gpu;       /* after tensor and pipeline parallelism */
  guint64 weight_bytes;         /* after ZeRO-3 sharding */
  guint64 gradient_bytes;       /* after ZeRO-2 sharding */
  guint64 optimizer_bytes;      /* states + fp32 master copy, after ZeRO-1 */
  guint64 optimizer_step_bytes; /* memory traffic of one optimizer step */
  guint64 optimizer_step_flops; /* its GEMM work (APOLLO's projections); 0: element-wise */
} RokFixedMemory;

/* What every plan's peak holds: weights, gradients and optimizer states. */
static inline guint64 rok_fixed_memory_bytes(const RokFixedMemory *f) {
  return f->weight_bytes + f->gradient_bytes + f->optimizer_bytes;
}

typedef struct {
  char *model_name;
  RokModel *model;                /* the config it came from; NULL for imported traces */
  guint layers;                   /* transformer layers in the trace */
  guint64 tokens_per_micro_batch; /* tokens one micro-batch trains on (per GPU) */
  guint64 micro_batches_per_step; /* gradient accumulation steps */
  /* Pipeline parallelism: the stage this trace is of (of `stages`), and
   * its model chunks (virtual stages): chunk c holds the trace's layers
   * [c·layers/chunks, (c+1)·layers/chunks) and is the model's chunk
   * c·stages + stage; layer -1 ops belong to the chunk of the next layer
   * op (the last chunk when none follows). 1, 1 without pipelining. */
  guint stage, stages, chunks;
  RokFixedMemory fixed;
  GArray *ops;     /* RokOp, index == id, forward order */
  GArray *tensors; /* RokTensor, index == id, in order of production */
} RokTrace;

/* From a model config (src/trace/transformer.c): the first pipeline stage. */
RokTrace *rok_trace_new_from_model(const RokModel *model, GError **error);
/* Pipeline stage `stage` (< pipeline_parallel) of a model config, as
 * Megatron-LM splits it: the first stage holds the embedding, the last the
 * output head and loss; every model chunk that does not start the model
 * starts from a received activation (an input op "recvC.activation"), and
 * one that does not end it ends with the activation it sends on. */
RokTrace *rok_trace_new_for_stage(const RokModel *model, guint stage, GError **error);
/* Every pipeline stage's trace (one without pipelining): RokTrace *, the
 * array owning them. */
GPtrArray *rok_trace_new_stages(const RokModel *model, GError **error);
/* The model chunk (0 .. chunks-1) op `op` runs in (see `chunks`). */
guint rok_trace_op_chunk(const RokTrace *trace, guint op);

/* Building by hand (tests, importers). Ids are given in order. */
RokTrace *rok_trace_new(const char *model_name);
guint rok_trace_add_op(RokTrace *trace, const char *name, gint layer, RokOpKind kind, guint64 batch,
                       guint64 m, guint64 n, guint64 k);
/* A tensor produced by `producer` (appended to its outputs). */
guint rok_trace_add_tensor(RokTrace *trace, const char *name, gint layer, RokDtype dtype, guint rank,
                           const guint64 *shape, guint producer);
void rok_trace_add_input(RokTrace *trace, guint op, guint tensor);
/* The backward of `op` reads `tensor`: it is saved (added once). */
void rok_trace_need(RokTrace *trace, guint tensor, guint op);
/* Fill every tensor's recompute_from from its producer's inputs (a dropout
 * mask needs none: it is a function of the seed), mark data tensors (made by
 * an input op) not recomputable, then check the trace (ids in range,
 * producers before consumers, bytes = shape). */
gboolean rok_trace_finish(RokTrace *trace, GError **error);
/* The checks of rok_trace_finish alone (ROK_ERROR_INPUT naming the op or
 * tensor). */
gboolean rok_trace_check(const RokTrace *trace, GError **error);

void rok_trace_free(RokTrace *trace);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokTrace, rok_trace_free)

static inline RokOp *rok_trace_op(const RokTrace *trace, guint id) {
  return &g_array_index(trace->ops, RokOp, id);
}
static inline RokTensor *rok_trace_tensor(const RokTrace *trace, guint id) {
  return &g_array_index(trace->tensors, RokTensor, id);
}
static inline gboolean rok_tensor_is_saved(const RokTensor *tensor) {
  return tensor->needed_by->len > 0;
}

/* Bytes of tensors saved for backward in `layer` (-1: outside the layers). */
guint64 rok_trace_saved_bytes(const RokTrace *trace, gint layer);
/* Bytes of all tensors saved for backward. */
guint64 rok_trace_total_saved_bytes(const RokTrace *trace);
/* How the trace stores activations: its model's dtype, else its first
 * bf16, fp16 or fp32 tensor's, else fp32 (the kernels that run it are
 * built for it). */
RokDtype rok_trace_activation_dtype(const RokTrace *trace);

const char *rok_op_kind_name(RokOpKind kind);
/* All kind names, indexed by RokOpKind, NULL-terminated. */
const char *const *rok_op_kind_names(void);
/* The op kind NAME names ("linear"); ROK_OP_KIND_COUNT for none (NULL
 * too). */
RokOpKind rok_op_kind_from_name(const char *name);

/* rok-trace/1 files. Reading checks every reference; a trace written and
 * read back writes identical bytes. A `model` object in the file is read
 * back as the config it came from.
 *
 * Counts a file may give, as a model config limits them (its magnitude
 * limit, src/model/config.c): an op's FLOPs and bytes (each of fwd_ and
 * bwd_), every member of `fixed`, weight + gradient + optimizer bytes
 * together and the bytes of all tensors together at most
 * ROK_MAX_TRACE_COUNT, so that fixed memory plus every activation, summed
 * in 64 bits by the simulator and the planner, never wraps; tokens per
 * micro-batch at most seq_len × micro_batch's limits (2^24 each). */
#define ROK_MAX_TRACE_COUNT (G_GUINT64_CONSTANT(1) << 62)
#define ROK_MAX_TRACE_TOKENS (G_GUINT64_CONSTANT(1) << 48)
json_object *rok_trace_to_json(const RokTrace *trace);
RokTrace *rok_trace_load(const char *path, GError **error);
RokTrace *rok_trace_from_doc(const RokJsonDoc *doc, GError **error);
RokTrace *rok_trace_parse(const char *name, const char *text, gsize length, GError **error);
gboolean rok_trace_save(const RokTrace *trace, const char *path, GError **error);

/* Matrix multiplications: linear, attn_scores, attn_context, flash_attention. */
gboolean rok_op_kind_is_gemm(RokOpKind kind);

/* Model FLOPs of one micro-batch on one GPU, as Megatron-LM (Narayanan et
 * al. 2021) and PaLM (Chowdhery et al. 2022, appendix B) count them for
 * model FLOPs utilisation: three times the forward FLOPs of the matrix
 * multiplies (linear layers, attention scores and context, the logits),
 * a backward pass costing twice its forward. Recompute and element-wise
 * work are left out, whatever the plan does. */
double rok_trace_model_flops(const RokTrace *trace);
/* GPUs one copy of the model spans (tensor × pipeline parallel; 1 for a
 * trace without its model config): a step's tokens go through all of them. */
guint64 rok_trace_replica_gpus(const RokTrace *trace);
/* The size of an op's work in one direction, as measured op rates count
 * it: its FLOPs for GEMM-like kinds (linear, attn_scores, attn_context,
 * flash_attention), its bytes moved for the others. */
double rok_op_work(const RokOp *op, gboolean backward);

/* The SHA-256 of the trace's canonical rok-trace/1 text (64 hex digits),
 * which plan and schedule files carry to name the trace they were made of;
 * the text itself in `text` unless NULL. */
char *rok_trace_sha256(const RokTrace *trace, char **text);

G_END_DECLS
