/* Private to src/model: the vocabulary transformer.c builds traces with.
 *
 * A RokBuilder knows the model's per-GPU shapes and the layer being built;
 * each function adds one op with its FLOPs and memory traffic, its output
 * tensors, and marks which inputs its backward reads. Shapes are per GPU:
 * `tokens` is every token of the micro-batch (inside tensor-parallel
 * regions), `seq_tokens` the tokens this rank holds in the residual stream
 * (tokens / tensor_parallel under sequence parallelism). */
#pragma once

#include "rok/trace.h"

typedef struct {
  RokTrace *trace;
  const RokModel *model;
  RokDtype dtype;      /* activations */
  RokDtype mask_dtype; /* dropout masks */
  guint64 tokens, seq_tokens;
  gboolean dropout;
  gint layer;      /* layer of the ops and tensors being added */
  char prefix[32]; /* "layer3", "enc1", "embed", "head" */
  guint rotary_cos, rotary_sin; /* eager LLaMA: the rotary tables (ROK_NO_TENSOR otherwise) */
} RokBuilder;

#define ROK_NO_TENSOR G_MAXUINT

void trace_builder_enter(RokBuilder *b, gint layer, const char *prefix);

/* y = x·W over `rows` rows, `in` -> `out` features; saves x. */
guint trace_build_linear(RokBuilder *b, const char *name, guint x, guint64 rows, guint64 in, guint64 out);
/* Normalisation over `cols` of `rows` rows, saving its input and its fp32
 * statistics (mean and rstd for LayerNorm, rstd for RMSNorm). */
guint trace_build_norm(RokBuilder *b, const char *name, RokOpKind kind, guint x, guint64 rows, guint64 cols);
/* Element-wise activation that saves its input (gelu) or result (relu). */
guint trace_build_activation(RokBuilder *b, const char *name, RokOpKind kind, guint x, guint64 rows,
                           guint64 cols);
/* silu(gate)·up from one [rows, 2·cols] tensor, which it saves. */
guint trace_build_swiglu(RokBuilder *b, const char *name, guint gate_up, guint64 rows, guint64 cols);
/* Dropout when the model has it (saves the mask); returns x unchanged otherwise. */
guint trace_build_dropout(RokBuilder *b, const char *name, guint x, guint rank, const guint64 *shape);
/* Rotary position embedding of [rows, cols] queries and keys into new
 * storage; its backward (a rotation back) saves nothing. */
guint trace_build_rotary(RokBuilder *b, const char *name, guint qk, guint64 rows, guint64 cols);
/* Residual add: saves nothing. */
guint trace_build_add(RokBuilder *b, const char *name, guint x, guint y, guint64 rows, guint64 cols);

/* Multi-head attention core over `heads` local query heads and `kv_heads`
 * local key/value heads of `head_dim`: standard (scores, softmax, dropout,
 * context) or flash. `q` and `k` hold the queries and keys, `v` the values
 * (one tensor may hold several of them). Returns the context [tokens_q,
 * heads·v_dim]. */
typedef struct {
  guint q, k, v;
  guint64 batch, seq_q, seq_k, heads, kv_heads, head_dim;
  guint64 v_dim;  /* values' (and the context's) head width; 0: head_dim (latent attention differs) */
  guint64 window; /* sliding window (causal self-attention): flash does only the work inside it, standard
                     attention masks the rest and keeps every score; 0: none */
} RokAttentionShape;
guint trace_build_attention(RokBuilder *b, const char *name, const RokAttentionShape *shape);

/* An op's FLOPs and memory traffic, forward and backward. */
void trace_build_cost(RokBuilder *b, guint op, guint64 fwd_flops, guint64 bwd_flops, guint64 fwd_bytes,
                      guint64 bwd_bytes);
/* `op` reads `tensor`; its backward too when `saved`. */
void trace_build_use(RokBuilder *b, guint op, guint tensor, gboolean saved);
/* Adds an op named prefix.name in the current layer. */
guint trace_build_op(RokBuilder *b, const char *name, RokOpKind kind, guint64 batch, guint64 m, guint64 n,
                   guint64 k);
/* Adds an output of `op` named prefix.name, of the current layer. */
guint trace_build_tensor(RokBuilder *b, const char *name, guint op, RokDtype dtype, guint rank,
                       const guint64 *shape);
/* trace_build_tensor with the shape written out: ROK_TENSOR(b, "x", op, dt, s, b, h). */
#define ROK_TENSOR(b, name, op, dtype, ...)                                                                  \
  trace_build_tensor((b), (name), (op), (dtype), G_N_ELEMENTS(((const guint64[]){__VA_ARGS__})),            \
                   (const guint64[]){__VA_ARGS__})
