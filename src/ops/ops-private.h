/* Shared by the files of src/ops: the model's layout, each op's
 * prepared meaning, the context of one forward or backward call, and the
 * helpers the op families use. Not part of the runner's contract. */
#pragma once

#ifdef ROK_WITH_OPENCL

#include "rok/ops.h"

/* Outputs a linear may split its columns into (LLaMA's qkv has two). */
#define OPS_MAX_SPLIT 4

/* Purposes of Philox streams: every random draw has its own stream. */
typedef enum { STREAM_PARAM = 1, STREAM_DATA, STREAM_DROPOUT, STREAM_BOUNDARY } OpsStream;
guint64 ops_stream(OpsStream purpose, guint64 a, guint64 b);

/* ---- Prepared ops --------------------------------------------------------- */

typedef struct {
  guint64 rows, in, out; /* rows = batch·m, in = k, out = n (all outputs) */
  guint64 x_rows;        /* rows of the input tensor: rows / x_rows = sequence-parallel ranks */
  guint n_out;
  guint64 col[OPS_MAX_SPLIT], width[OPS_MAX_SPLIT], y_rows[OPS_MAX_SPLIT];
  RokExecParam *weight; /* [in, out]; tied: the token table [vocab, in], used transposed */
  gboolean tied;
  RokExecParam *bias[OPS_MAX_SPLIT]; /* per output; NULL: none */
} LinearExec;

/* Where q, k or v lies: columns [offset, offset + heads·head_dim) of the
 * op's input `input`, whose rows are `width` elements long. */
typedef struct {
  guint input;
  guint64 offset, width;
} RoleView;

typedef struct {
  guint64 batch, heads, kv_heads, head_dim, seq_q, seq_k;
  gboolean causal;
  float scale;
  RoleView q, k, v; /* the roles the op reads */
  guint probs;      /* attn_context: the input holding the probabilities */
  double p;         /* flash attention's dropout */
} AttnExec;

typedef struct {
  guint64 rows, cols;
  float eps;
  RokExecParam *gamma, *beta; /* beta NULL for rmsnorm */
} NormExec;

typedef struct {
  guint64 rows, cols, n;      /* n = rows·cols elements */
  double p;                   /* dropout */
  gboolean causal;            /* softmax */
  guint64 queries;            /* softmax: rows per causal block */
  gboolean relu_reads_output; /* relu's backward reads its saved output, else its saved input */
  RokClRotary rotary;
} EltExec;

typedef struct {
  guint64 tokens, hidden, vocab, seq_len, y_rows;
  RokExecParam *table, *positions; /* positions NULL: none */
} EmbedExec;

typedef struct {
  guint64 tokens, vocab;
  guint logits, labels; /* input indices */
} LossExec;

typedef struct {
  gint in, out;                      /* input / output index run on; -1: a scratch buffer */
  guint64 in_elements, out_elements; /* activation elements of the buffers */
  RokClStandin fwd, bwd;
} StandinExec;

/* Mixture of experts (op-moe.c): the router, dispatch and combine of one
 * layer (and Qwen2-MoE's shared-expert gate: tokens and hidden). */
typedef struct {
  RokClMoe moe;         /* tokens, experts, top-k */
  guint64 rows, hidden; /* routed rows and their width */
  guint64 capacity;     /* rows per expert; 0: dropless */
  double aux_scale;     /* router: the load-balancing loss's coef · E / (T²·k); 0: none */
  guint dispatch;       /* the layer's dispatch op */
} MoeExec;

/* An expert linear: `experts` weights [in, out] stacked in one parameter,
 * each expert's group of the dispatch's rows through its own. */
typedef struct {
  guint64 rows, in, out, experts;
  guint dispatch;
  RokExecParam *weight; /* [experts·in, out] */
} ExpertsExec;

typedef struct _OpsCtx OpsCtx;
typedef struct _OpExec OpExec;

/* prepare: check the op against its kind and the model, create its
 * parameters. FALSE with `error` set is a hard failure; TRUE with *reason
 * set means the op cannot run as its kind (it gets the stand-in). */
typedef gboolean (*OpsPrepareFn)(RokExecModel *model, OpExec *exec, char **reason, GError **error);
typedef gboolean (*OpsRunFn)(OpsCtx *ctx, GError **error);

typedef struct {
  OpsPrepareFn prepare;
  OpsRunFn forward, backward;
} OpsKindImpl;

struct _OpExec {
  const RokOp *op;
  const OpsKindImpl *impl; /* the stand-in's when standin */
  gboolean standin;
  char *note; /* why and what stand-in; NULL for real ops */
  union {
    LinearExec linear;
    AttnExec attn;
    NormExec norm;
    EltExec elt;
    EmbedExec embed;
    LossExec loss;
    StandinExec standin;
    MoeExec moe;
    ExpertsExec experts;
  } u;
};

/* ---- The model ------------------------------------------------------------ */

struct _RokExecModel {
  RokClKernels *kernels;
  RokClDevice *device;
  const RokTrace *trace;
  const RokModel *config; /* trace->model; NULL for imported traces */
  RokDtype act;
  guint64 seed;
  guint n_ops, n_tensors;
  OpExec *ops;
  guint64 *numel;            /* elements of each tensor */
  gboolean *needs_grad;      /* activation tensors not produced by an input op */
  gboolean *boundary;        /* activations no op reads: a pipeline stage's output */
  guint64 *data_vocab;       /* token range of data (i64) tensors */
  GPtrArray *params;         /* RokExecParam *, in creation order */
  RokExecParam *token_table; /* shared by embeddings and the tied head (model traces) */
  GHashTable *grads;         /* micro-batch -> OpsMbGrads * */
  GHashTable *losses;        /* (mb << 32 | op) -> RokClBuffer * (fp32 per-token losses) */
  RokClBuffer *checksums;    /* i64, one slot per parameter */
  GHashTable *moe_groups;    /* (mb << 32 | dispatch op) -> guint64[experts + 1]: each expert's first row */
  guint64 grad_bytes;        /* activation gradients allocated now */
  guint standins;
};

/* The implementation of a kind; the stand-in's for ROK_OP_OTHER. */
const OpsKindImpl *ops_kind_impl(RokOpKind kind);
const OpsKindImpl *ops_standin_impl(void);

/* Parameters (params.c). A [rows, cols] parameter named "<op>.<what>",
 * uniform in [low, high) from the model's seed. */
RokExecParam *ops_param_new(RokExecModel *model, const RokOp *op, const char *what, guint64 rows, guint64 cols,
                            float low, float high, GError **error);
void ops_param_free(gpointer param);

/* Whether the trace saves `tensor` for the backward of `op`. */
gboolean ops_saved_for(const RokTrace *trace, guint tensor, guint op);
/* The first op (in forward order) of `kind` that reads `tensor`; G_MAXUINT if none. */
guint ops_consumer_of_kind(const RokTrace *trace, guint tensor, RokOpKind kind);
/* Activation heads, key/value heads and head size of one rank (model traces). */
void ops_model_heads(const RokModel *model, guint64 *heads, guint64 *kv_heads, guint64 *head_dim);
/* Tensor `id` holds `elements` of `dtype` (and is saved for op's backward
 * when `saved`); else *reason says why not. */
gboolean ops_check_tensor(const RokExecModel *model, const RokOp *op, guint id, RokDtype dtype, guint64 elements,
                          gboolean saved, char **reason);
/* The op reads and writes that many tensors; else *reason. */
gboolean ops_check_arity(const RokOp *op, guint inputs, guint outputs, char **reason);
static inline guint ops_op_in(const RokOp *op, guint i) { return g_array_index(op->inputs, guint, i); }
static inline guint ops_op_out(const RokOp *op, guint i) { return g_array_index(op->outputs, guint, i); }
/* A printf-style reason for the stand-in. */
char *ops_reason(const char *format, ...) G_GNUC_PRINTF(1, 2);

/* ---- One call -------------------------------------------------------------- */

typedef struct {
  RokClBuffer **grads; /* per tensor; NULL: none yet */
  guint8 *consumed;    /* per tensor: its producer's backward has run */
} OpsMbGrads;

struct _OpsCtx {
  RokExecModel *model;
  OpExec *exec;
  const RokOp *op;
  guint mb;
  RokClBuffer *const *tensors;
  gboolean backward;
  OpsMbGrads *grads;  /* backward only */
  GPtrArray *scratch; /* freed when the call ends */
};

static inline guint ops_in_id(const OpsCtx *ctx, guint i) { return g_array_index(ctx->op->inputs, guint, i); }
static inline guint ops_out_id(const OpsCtx *ctx, guint i) { return g_array_index(ctx->op->outputs, guint, i); }

/* Input i: resident, of the trace's dtype and size; in backward also saved
 * for this op. */
RokClBuffer *ops_input(OpsCtx *ctx, guint i, GError **error);
/* Output i: in forward the runner's buffer or a scratch one; in backward a
 * saved output (as ops_input). */
RokClBuffer *ops_output(OpsCtx *ctx, guint i, GError **error);
/* A buffer freed when the call ends; zeroed on request. */
RokClBuffer *ops_scratch(OpsCtx *ctx, RokDtype dtype, guint64 elements, const char *what, gboolean zero,
                         GError **error);
/* The gradient of output i: zeros when its consumers produced none; for a
 * tensor no op reads (a pipeline stage's output, whose gradient would come
 * from the next stage) small random values from (seed, mb, tensor). */
RokClBuffer *ops_dout(OpsCtx *ctx, guint i, GError **error);
/* The dropout parameters of this op in this micro-batch. */
RokClDropout ops_dropout(const OpsCtx *ctx, double p);

/* ---- Activation gradients (grads.c) --------------------------------------- */

/* Where a backward writes the gradient of input i. `dst` is NULL when the
 * input needs none (skip the work) unless `always` asked for a scratch. */
typedef struct {
  guint tensor;
  RokClBuffer *grad, *dst;
  gboolean fresh; /* the gradient buffer was created by this sink */
  gboolean temp;  /* dst is a scratch buffer added into grad on close */
  gboolean covers;
} OpsSink;

/* For kernels that overwrite: dst is the fresh gradient buffer itself, or a
 * scratch one added in on close. Unless `covers` (the op writes every
 * element), dst starts zeroed. */
gboolean ops_sink_overwrite(OpsCtx *ctx, guint input, gboolean covers, gboolean always, OpsSink *sink, GError **error);
/* For GEMMs: dst is the gradient buffer; the first GEMM uses
 * ops_sink_beta() (0 over a fresh buffer it covers), later ones beta 1. */
gboolean ops_sink_accumulate(OpsCtx *ctx, guint input, gboolean covers, OpsSink *sink, GError **error);
float ops_sink_beta(const OpsSink *sink);
gboolean ops_sink_close(OpsCtx *ctx, OpsSink *sink, GError **error);
/* Add `src` (activations, the input's size) into the gradient of input i. */
gboolean ops_grad_add(OpsCtx *ctx, guint input, RokClBuffer *src, GError **error);
/* Hand the gradient of output `out` over as the gradient of input `in` when
 * the input has none yet (a residual add's identity); FALSE if it could not. */
gboolean ops_grad_move(OpsCtx *ctx, guint out, guint in);
/* The micro-batch's gradients (created on first use). */
OpsMbGrads *ops_grads_for(RokExecModel *model, guint mb);
void ops_grads_free(RokExecModel *model, OpsMbGrads *grads);
/* Before a backward: its outputs' gradients must not be consumed yet.
 * After: free them and mark them consumed. */
gboolean ops_grads_check(OpsCtx *ctx, GError **error);
void ops_grads_consume(OpsCtx *ctx);

/* ---- One GEMM (op-linear.c) ---------------------------------------------- */

/* A dense operand starting at element `offset`. */
RokClMatrix ops_at(RokClBuffer *buffer, guint64 offset, guint64 ld, gboolean trans);
/* C = op(A)·op(B) + beta·C (+ bias), one m×n×k GEMM. */
gboolean ops_gemm(RokClKernels *kernels, guint64 m, guint64 n, guint64 k, RokClMatrix a, RokClMatrix b, RokClMatrix c,
                  float beta, RokClBuffer *bias, GError **error);

/* ---- Sequence-parallel rows (rows.c) --------------------------------------- */

/* dst [dst_rows, cols] = src [src_rows, cols] repeated (dst_rows a multiple). */
gboolean ops_rows_tile(RokClBuffer *src, guint64 src_rows, RokClBuffer *dst, guint64 dst_rows, guint64 cols,
                       GError **error);
/* dst [dst_rows, cols] = the sum of src's row blocks of dst_rows rows. */
gboolean ops_rows_sum(OpsCtx *ctx, RokClBuffer *src, guint64 src_rows, RokClBuffer *dst, guint64 dst_rows, guint64 cols,
                      GError **error);

/* ---- The op families ------------------------------------------------------- */

gboolean ops_linear_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_linear_forward(OpsCtx *ctx, GError **error);
gboolean ops_linear_backward(OpsCtx *ctx, GError **error);

gboolean ops_attention_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_scores_forward(OpsCtx *ctx, GError **error);
gboolean ops_scores_backward(OpsCtx *ctx, GError **error);
gboolean ops_context_forward(OpsCtx *ctx, GError **error);
gboolean ops_context_backward(OpsCtx *ctx, GError **error);
gboolean ops_flash_forward(OpsCtx *ctx, GError **error);
gboolean ops_flash_backward(OpsCtx *ctx, GError **error);

gboolean ops_norm_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_norm_forward(OpsCtx *ctx, GError **error);
gboolean ops_norm_backward(OpsCtx *ctx, GError **error);

gboolean ops_unary_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_gelu_forward(OpsCtx *ctx, GError **error);
gboolean ops_gelu_backward(OpsCtx *ctx, GError **error);
gboolean ops_relu_forward(OpsCtx *ctx, GError **error);
gboolean ops_relu_backward(OpsCtx *ctx, GError **error);
gboolean ops_swiglu_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_swiglu_forward(OpsCtx *ctx, GError **error);
gboolean ops_swiglu_backward(OpsCtx *ctx, GError **error);
gboolean ops_add_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_add_forward(OpsCtx *ctx, GError **error);
gboolean ops_add_backward(OpsCtx *ctx, GError **error);

gboolean ops_dropout_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_dropout_forward(OpsCtx *ctx, GError **error);
gboolean ops_dropout_backward(OpsCtx *ctx, GError **error);
gboolean ops_dropout_mask(OpsCtx *ctx, GError **error);
gboolean ops_softmax_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_softmax_forward(OpsCtx *ctx, GError **error);
gboolean ops_softmax_backward(OpsCtx *ctx, GError **error);
gboolean ops_rotary_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_rotary_forward(OpsCtx *ctx, GError **error);
gboolean ops_rotary_backward(OpsCtx *ctx, GError **error);

gboolean ops_input_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_input_forward(OpsCtx *ctx, GError **error);
gboolean ops_input_backward(OpsCtx *ctx, GError **error);
gboolean ops_embedding_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_embedding_forward(OpsCtx *ctx, GError **error);
gboolean ops_embedding_backward(OpsCtx *ctx, GError **error);
gboolean ops_loss_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_loss_forward(OpsCtx *ctx, GError **error);
gboolean ops_loss_backward(OpsCtx *ctx, GError **error);

gboolean ops_moe_router_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_moe_router_forward(OpsCtx *ctx, GError **error);
gboolean ops_moe_router_backward(OpsCtx *ctx, GError **error);
gboolean ops_moe_dispatch_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_moe_dispatch_forward(OpsCtx *ctx, GError **error);
gboolean ops_moe_dispatch_backward(OpsCtx *ctx, GError **error);
gboolean ops_moe_combine_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_moe_combine_forward(OpsCtx *ctx, GError **error);
gboolean ops_moe_combine_backward(OpsCtx *ctx, GError **error);
gboolean ops_moe_experts_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_moe_experts_forward(OpsCtx *ctx, GError **error);
gboolean ops_moe_experts_backward(OpsCtx *ctx, GError **error);
gboolean ops_moe_gate_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error);
gboolean ops_moe_gate_forward(OpsCtx *ctx, GError **error);
gboolean ops_moe_gate_backward(OpsCtx *ctx, GError **error);
/* The dispatch an expert linear runs on; G_MAXUINT for other ops. */
guint ops_moe_expert_dispatch(const RokExecModel *model, const RokOp *op);
/* Whether `op` is Qwen2-MoE's shared-expert gate (an `other` op). */
gboolean ops_moe_is_gate(const RokExecModel *model, const RokOp *op);
/* The routing weights carry gradients (fp32), the probabilities none. */
void ops_moe_tensor_facts(RokExecModel *model);
const OpsKindImpl *ops_moe_experts_impl(void);
const OpsKindImpl *ops_moe_gate_impl(void);

/* The stand-in for `exec` (its note says `reason`, which it takes). */
gboolean ops_standin_prepare(RokExecModel *model, OpExec *exec, char *reason, GError **error);
gboolean ops_standin_forward(OpsCtx *ctx, GError **error);
gboolean ops_standin_backward(OpsCtx *ctx, GError **error);

#endif /* ROK_WITH_OPENCL */
