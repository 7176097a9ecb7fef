/* The attention core: attn_scores (S = scale·Q·Kᵀ), attn_context (O = P·V)
 * and flash_attention, over one rank's heads with grouped key/value heads.
 *
 * Activations are [tokens, features] with tokens batch-major; a head's q,
 * k or v are head_dim columns of its tensor. Where they lie follows from
 * the widths of the op's inputs: one tensor [q|k|v], or [q|k] and [v]
 * (rotary rotates q and k only), or [q] and [k|v] (cross-attention reads
 * keys and values from the encoder). Scores and probabilities are
 * [batch, heads, seq_q, seq_k]. Gradients of k and v sum over the query
 * heads of a group: one GEMM per head of the group, accumulating. */
#ifdef ROK_WITH_OPENCL

#include <math.h>
#include <string.h>

#include "ops-private.h"
#include "rok/core.h"

/* ---- Where q, k and v lie ------------------------------------------------- */

static guint64 role_cols(char role, const AttnExec *a) { return (role == 'q' ? a->heads : a->kv_heads) * a->head_dim; }

static guint64 packing_cols(const char *packing, const AttnExec *a) {
  guint64 cols = 0;
  for (const char *r = packing; *r != '\0'; r++)
    cols += role_cols(*r, a);
  return cols;
}

static RoleView *role_view(AttnExec *a, char role) { return role == 'q' ? &a->q : role == 'k' ? &a->k : &a->v; }

/* The packing of `candidates` that tensor `id` holds: its elements are the
 * packing's columns times the rows of its roles. */
static const char *match_packing(const RokExecModel *model, guint id, const char *const *candidates,
                                 const AttnExec *a) {
  if (rok_trace_tensor(model->trace, id)->dtype != model->act)
    return NULL;
  for (guint c = 0; candidates[c] != NULL; c++) {
    const char *p = candidates[c];
    gboolean has_q = strchr(p, 'q') != NULL, has_kv = strchr(p, 'k') != NULL || strchr(p, 'v') != NULL;
    if (has_q && has_kv && a->seq_q != a->seq_k)
      continue;
    guint64 rows = a->batch * (has_q ? a->seq_q : a->seq_k);
    if (model->numel[id] == rows * packing_cols(p, a))
      return p;
  }
  return NULL;
}

/* Place q and k (scores), v (context: from whichever packing holds it,
 * after the probabilities) or all three (flash) on the op's inputs, in
 * order q, k, v; every input must hold some. */
static gboolean place_roles(const RokExecModel *model, const RokOp *op, AttnExec *a) {
  static const char *const from_q[] = {"qkv", "qk", "q", NULL}, *const from_k[] = {"kv", "k", NULL},
                           *const from_v[] = {"v", NULL}, *const with_v[] = {"qkv", "kv", "v", NULL};
  gboolean context = op->kind == ROK_OP_ATTN_CONTEXT;
  char last = op->kind == ROK_OP_ATTN_SCORES ? 'k' : 'v', next = 'q';
  guint i = context ? 1 : 0;
  for (; i < op->inputs->len && next != '\0'; i++) {
    const char *const *candidates = context ? with_v : next == 'q' ? from_q : next == 'k' ? from_k : from_v;
    const char *p = match_packing(model, g_array_index(op->inputs, guint, i), candidates, a);
    if (p == NULL)
      return FALSE;
    guint64 offset = 0, width = packing_cols(p, a);
    for (const char *r = p; *r != '\0'; r++) {
      *role_view(a, *r) = (RoleView){.input = i, .offset = offset, .width = width};
      offset += role_cols(*r, a);
    }
    char end = p[strlen(p) - 1];
    next = strchr(p, last) != NULL ? '\0' : end == 'q' ? 'k' : 'v';
  }
  return next == '\0' && i == op->inputs->len;
}

/* ---- Preparing ----------------------------------------------------------- */

static gboolean is_causal(const RokModel *m, const RokOp *op, const AttnExec *a) {
  if (a->q.input != a->k.input)
    return FALSE; /* cross-attention sees the whole encoder output */
  switch (m->arch) {
  case ROK_ARCH_GPT:
  case ROK_ARCH_LLAMA:
    return TRUE;
  case ROK_ARCH_T5: /* the decoder's layers follow the encoder's */
    return op->layer >= (gint)(m->layers / MAX(m->pipeline_parallel, 1));
  case ROK_ARCH_BERT:
    break;
  }
  return FALSE;
}

static gboolean check_output(const RokExecModel *model, const RokOp *op, guint i, RokDtype dtype, guint64 elements,
                             char **reason) {
  if (op->outputs->len <= i) {
    *reason = ops_reason("it has no output %u", i);
    return FALSE;
  }
  guint id = g_array_index(op->outputs, guint, i);
  const RokTensor *t = rok_trace_tensor(model->trace, id);
  if (t->dtype != dtype || model->numel[id] != elements) {
    *reason = ops_reason("its output '%s' holds %" G_GUINT64_FORMAT " %s, not %" G_GUINT64_FORMAT " %s", t->name,
                         model->numel[id], rok_dtype_name(t->dtype), elements, rok_dtype_name(dtype));
    return FALSE;
  }
  return TRUE;
}

/* Every tensor backward reads must be saved for it. */
static gboolean check_saved(const RokExecModel *model, const RokOp *op, char **reason) {
  gboolean flash = op->kind == ROK_OP_FLASH_ATTENTION;
  for (guint pass = 0; pass < (flash ? 2u : 1u); pass++) {
    const GArray *ids = pass == 0 ? op->inputs : op->outputs;
    for (guint i = 0; i < ids->len; i++) {
      guint id = g_array_index(ids, guint, i);
      if (!ops_saved_for(model->trace, id, op->id)) {
        *reason = ops_reason("'%s' is not saved for its backward", rok_trace_tensor(model->trace, id)->name);
        return FALSE;
      }
    }
  }
  return TRUE;
}

static gboolean check_shapes(const RokExecModel *model, const RokOp *op, AttnExec *a, char **reason) {
  guint64 bh = a->batch * a->heads, out = a->batch * a->seq_q * a->heads * a->head_dim;
  switch (op->kind) {
  case ROK_OP_ATTN_SCORES:
    return check_output(model, op, 0, model->act, bh * a->seq_q * a->seq_k, reason);
  case ROK_OP_ATTN_CONTEXT:
    return check_output(model, op, 0, model->act, out, reason);
  default:
    if (a->head_dim > ROK_CL_ATTENTION_MAX_HEAD_DIM || !(op->dropout >= 0.0 && op->dropout < 1.0)) {
      *reason =
          ops_reason("the fused kernel takes head_dim up to %d and dropout in [0, 1)", ROK_CL_ATTENTION_MAX_HEAD_DIM);
      return FALSE;
    }
    a->p = op->dropout;
    return check_output(model, op, 0, model->act, out, reason) &&
           check_output(model, op, 1, ROK_DTYPE_FP32, bh * a->seq_q, reason);
  }
}

/* The probabilities the context op reads first. */
static gboolean check_probs(const RokExecModel *model, const RokOp *op, const AttnExec *a, char **reason) {
  guint id = op->inputs->len > 0 ? g_array_index(op->inputs, guint, 0) : 0;
  if (op->inputs->len == 0 || rok_trace_tensor(model->trace, id)->dtype != model->act ||
      model->numel[id] != a->batch * a->heads * a->seq_q * a->seq_k) {
    *reason = ops_reason("its first input is not the [batch, heads, queries, keys] probabilities");
    return FALSE;
  }
  return TRUE;
}

gboolean ops_attention_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error G_GNUC_UNUSED) {
  const RokOp *op = exec->op;
  const RokModel *m = model->config;
  AttnExec *a = &exec->u.attn;
  if (m == NULL) {
    *reason = ops_reason("the trace has no model config to say how its heads are laid out");
    return TRUE;
  }
  guint64 kv_heads = 0;
  ops_model_heads(m, &a->heads, &kv_heads, &a->head_dim);
  gboolean context = op->kind == ROK_OP_ATTN_CONTEXT;
  guint64 bh = op->dims[0], d = context ? op->dims[2] : op->dims[3];
  a->seq_q = op->dims[1];
  a->seq_k = context ? op->dims[3] : op->dims[2];
  if (a->heads == 0 || bh % a->heads != 0 || bh == 0 || d != a->head_dim || a->seq_q == 0 || a->seq_k == 0) {
    *reason =
        ops_reason("its dims [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                   "] are not batches of %" G_GUINT64_FORMAT " heads of %" G_GUINT64_FORMAT,
                   op->dims[0], op->dims[1], op->dims[2], op->dims[3], a->heads, a->head_dim);
    return TRUE;
  }
  a->batch = bh / a->heads;
  a->scale = (float)(1.0 / sqrt((double)a->head_dim));
  if (context && !check_probs(model, op, a, reason))
    return TRUE;
  /* Cross-attention has as many key/value heads as query heads. */
  gboolean placed = FALSE;
  guint64 tries[2] = {kv_heads, a->heads};
  for (guint t = 0; t < 2 && !placed; t++) {
    a->kv_heads = tries[t];
    placed = a->heads % a->kv_heads == 0 && place_roles(model, op, a);
  }
  if (!placed) {
    *reason = ops_reason("its inputs do not hold the %s of %" G_GUINT64_FORMAT " heads (%" G_GUINT64_FORMAT
                         " key/value heads) of %" G_GUINT64_FORMAT,
                         context ? "values" : "queries and keys", a->heads, kv_heads, a->head_dim);
    return TRUE;
  }
  if (!check_shapes(model, op, a, reason) || !check_saved(model, op, reason))
    return TRUE;
  a->causal = !context && is_causal(m, op, a);
  return TRUE;
}

/* ---- GEMM operands ------------------------------------------------------ */

/* A role's [seq, head_dim] block of batch entry (outer, head). */
static RokClMatrix role_operand(RokClBuffer *buffer, const RoleView *r, guint64 seq, const AttnExec *a, gboolean trans,
                                guint64 group) {
  RokClMatrix m = rok_cl_matrix(buffer, r->width, trans);
  m.offset = r->offset;
  m.stride = seq * r->width;
  m.head_stride = a->head_dim;
  m.group = group;
  return m;
}

/* Over the query heads kv·g + gi of key/value head kv (batch entries per
 * key/value head). */
static RokClMatrix role_group_operand(RokClBuffer *buffer, const RoleView *r, guint64 seq, const AttnExec *a,
                                      guint64 gi) {
  RokClMatrix m = role_operand(buffer, r, seq, a, FALSE, 1);
  m.offset += gi * a->head_dim;
  m.head_stride = (a->heads / a->kv_heads) * a->head_dim;
  return m;
}

/* [seq_q, seq_k] of a [batch, heads, seq_q, seq_k] tensor. */
static RokClMatrix probs_operand(RokClBuffer *buffer, const AttnExec *a, gboolean trans) {
  RokClMatrix m = rok_cl_matrix(buffer, a->seq_k, trans);
  m.stride = a->heads * a->seq_q * a->seq_k;
  m.head_stride = a->seq_q * a->seq_k;
  return m;
}

static RokClMatrix probs_group_operand(RokClBuffer *buffer, const AttnExec *a, guint64 gi, gboolean trans) {
  RokClMatrix m = probs_operand(buffer, a, trans);
  m.offset = gi * a->seq_q * a->seq_k;
  m.head_stride *= a->heads / a->kv_heads;
  return m;
}

/* The context [batch·seq_q, heads·head_dim]. */
static RoleView out_view(const AttnExec *a) {
  return (RoleView){.input = 0, .offset = 0, .width = a->heads * a->head_dim};
}

static gboolean batched(OpsCtx *ctx, gboolean per_kv_head, guint64 m, guint64 n, guint64 k, RokClMatrix A,
                        RokClMatrix B, RokClMatrix C, float alpha, float beta, GError **error) {
  const AttnExec *a = &ctx->exec->u.attn;
  guint64 inner = per_kv_head ? a->kv_heads : a->heads;
  RokClGemm g = {.batch = a->batch * inner,
                 .inner = inner,
                 .m = m,
                 .n = n,
                 .k = k,
                 .a = A,
                 .b = B,
                 .c = C,
                 .alpha = alpha,
                 .beta = beta};
  return rok_cl_gemm(ctx->model->kernels, &g, error);
}

/* ---- Scores ----------------------------------------------------------------- */

gboolean ops_scores_forward(OpsCtx *ctx, GError **error) {
  const AttnExec *a = &ctx->exec->u.attn;
  guint64 group = a->heads / a->kv_heads;
  RokClBuffer *q = ops_input(ctx, a->q.input, error);
  RokClBuffer *k = q ? ops_input(ctx, a->k.input, error) : NULL;
  RokClBuffer *s = k ? ops_output(ctx, 0, error) : NULL;
  return s != NULL &&
         batched(ctx, FALSE, a->seq_q, a->seq_k, a->head_dim, role_operand(q, &a->q, a->seq_q, a, FALSE, 1),
                 role_operand(k, &a->k, a->seq_k, a, TRUE, group), probs_operand(s, a, FALSE), a->scale, 0.0f, error);
}

gboolean ops_scores_backward(OpsCtx *ctx, GError **error) {
  const AttnExec *a = &ctx->exec->u.attn;
  guint64 group = a->heads / a->kv_heads;
  RokClBuffer *ds = ops_dout(ctx, 0, error);
  RokClBuffer *q = ds ? ops_input(ctx, a->q.input, error) : NULL;
  RokClBuffer *k = q ? ops_input(ctx, a->k.input, error) : NULL;
  OpsSink qs = {0}, ks = {0};
  if (k == NULL || !ops_sink_accumulate(ctx, a->q.input, FALSE, &qs, error))
    return FALSE;
  if (a->k.input != a->q.input && !ops_sink_accumulate(ctx, a->k.input, FALSE, &ks, error))
    return FALSE;
  RokClBuffer *dq = qs.dst, *dk = a->k.input == a->q.input ? qs.dst : ks.dst;
  /* dQ = scale·dS·K; dK = scale·dSᵀ·Q summed over the group. */
  if (dq != NULL && !batched(ctx, FALSE, a->seq_q, a->head_dim, a->seq_k, probs_operand(ds, a, FALSE),
                             role_operand(k, &a->k, a->seq_k, a, FALSE, group),
                             role_operand(dq, &a->q, a->seq_q, a, FALSE, 1), a->scale, 1.0f, error))
    return FALSE;
  for (guint64 gi = 0; dk != NULL && gi < group; gi++)
    if (!batched(ctx, TRUE, a->seq_k, a->head_dim, a->seq_q, probs_group_operand(ds, a, gi, TRUE),
                 role_group_operand(q, &a->q, a->seq_q, a, gi), role_operand(dk, &a->k, a->seq_k, a, FALSE, 1),
                 a->scale, 1.0f, error))
      return FALSE;
  return ops_sink_close(ctx, &qs, error) && ops_sink_close(ctx, &ks, error);
}

/* ---- Context ---------------------------------------------------------------- */

gboolean ops_context_forward(OpsCtx *ctx, GError **error) {
  const AttnExec *a = &ctx->exec->u.attn;
  RoleView ov = out_view(a);
  RokClBuffer *p = ops_input(ctx, a->probs, error);
  RokClBuffer *v = p ? ops_input(ctx, a->v.input, error) : NULL;
  RokClBuffer *o = v ? ops_output(ctx, 0, error) : NULL;
  return o != NULL && batched(ctx, FALSE, a->seq_q, a->head_dim, a->seq_k, probs_operand(p, a, FALSE),
                              role_operand(v, &a->v, a->seq_k, a, FALSE, a->heads / a->kv_heads),
                              role_operand(o, &ov, a->seq_q, a, FALSE, 1), 1.0f, 0.0f, error);
}

gboolean ops_context_backward(OpsCtx *ctx, GError **error) {
  const AttnExec *a = &ctx->exec->u.attn;
  guint64 group = a->heads / a->kv_heads;
  RoleView ov = out_view(a);
  RokClBuffer *dout = ops_dout(ctx, 0, error);
  RokClBuffer *p = dout ? ops_input(ctx, a->probs, error) : NULL;
  RokClBuffer *v = p ? ops_input(ctx, a->v.input, error) : NULL;
  OpsSink ps = {0}, vs = {0};
  if (v == NULL || !ops_sink_accumulate(ctx, a->probs, TRUE, &ps, error) ||
      !ops_sink_accumulate(ctx, a->v.input, FALSE, &vs, error))
    return FALSE;
  /* dP = dO·Vᵀ; dV = Pᵀ·dO summed over the group. */
  if (ps.dst != NULL &&
      !batched(ctx, FALSE, a->seq_q, a->seq_k, a->head_dim, role_operand(dout, &ov, a->seq_q, a, FALSE, 1),
               role_operand(v, &a->v, a->seq_k, a, TRUE, group), probs_operand(ps.dst, a, FALSE), 1.0f,
               ops_sink_beta(&ps), error))
    return FALSE;
  for (guint64 gi = 0; vs.dst != NULL && gi < group; gi++)
    if (!batched(ctx, TRUE, a->seq_k, a->head_dim, a->seq_q, probs_group_operand(p, a, gi, TRUE),
                 role_group_operand(dout, &ov, a->seq_q, a, gi), role_operand(vs.dst, &a->v, a->seq_k, a, FALSE, 1),
                 1.0f, 1.0f, error))
      return FALSE;
  return ops_sink_close(ctx, &ps, error) && ops_sink_close(ctx, &vs, error);
}

/* ---- Flash attention --------------------------------------------------------- */

static RokClHeads heads_view(RokClBuffer *buffer, const RoleView *r, guint64 seq, guint64 head_dim) {
  return (RokClHeads){.buffer = buffer,
                      .offset = r->offset,
                      .row_stride = r->width,
                      .batch_stride = seq * r->width,
                      .head_stride = head_dim};
}

/* The fused op's description with q, k and v from the inputs. */
static gboolean flash_setup(OpsCtx *ctx, RokClAttention *at, GError **error) {
  const AttnExec *a = &ctx->exec->u.attn;
  RokClBuffer *q = ops_input(ctx, a->q.input, error);
  RokClBuffer *k = q ? ops_input(ctx, a->k.input, error) : NULL;
  RokClBuffer *v = k ? ops_input(ctx, a->v.input, error) : NULL;
  RokClBuffer *o = v ? ops_output(ctx, 0, error) : NULL;
  if (o == NULL)
    return FALSE;
  RoleView ov = out_view(a);
  *at = (RokClAttention){
      .batch = a->batch,
      .heads = a->heads,
      .kv_heads = a->kv_heads,
      .queries = a->seq_q,
      .keys = a->seq_k,
      .head_dim = a->head_dim,
      .causal = a->causal,
      .scale = a->scale,
      .dropout = ops_dropout(ctx, a->p),
      .q = heads_view(q, &a->q, a->seq_q, a->head_dim),
      .k = heads_view(k, &a->k, a->seq_k, a->head_dim),
      .v = heads_view(v, &a->v, a->seq_k, a->head_dim),
      .o = heads_view(o, &ov, a->seq_q, a->head_dim),
  };
  return TRUE;
}

gboolean ops_flash_forward(OpsCtx *ctx, GError **error) {
  RokClAttention at;
  RokClBuffer *lse = NULL;
  return flash_setup(ctx, &at, error) && (lse = ops_output(ctx, 1, error)) != NULL &&
         rok_cl_attention_forward(ctx->model->kernels, &at, lse, error);
}

gboolean ops_flash_backward(OpsCtx *ctx, GError **error) {
  const AttnExec *a = &ctx->exec->u.attn;
  RokClAttention at;
  RokClBuffer *lse = NULL, *dout = NULL;
  if (!flash_setup(ctx, &at, error) || (lse = ops_output(ctx, 1, error)) == NULL ||
      (dout = ops_dout(ctx, 0, error)) == NULL)
    return FALSE;
  /* The kernels overwrite dq, dk and dv: one sink per input tensor. */
  const RoleView *roles[3] = {&a->q, &a->k, &a->v};
  OpsSink sinks[3] = {{0}};
  RokClHeads grads[3];
  for (guint r = 0; r < 3; r++) {
    guint in = roles[r]->input;
    if (sinks[in].dst == NULL) {
      guint64 cols = 0;
      for (guint s = 0; s < 3; s++)
        cols += roles[s]->input == in ? role_cols("qkv"[s], a) : 0;
      if (!ops_sink_overwrite(ctx, in, cols == roles[r]->width, TRUE, &sinks[in], error))
        return FALSE;
    }
    grads[r] = heads_view(sinks[in].dst, roles[r], r == 0 ? a->seq_q : a->seq_k, a->head_dim);
  }
  RoleView ov = out_view(a);
  RokClHeads dout_view = heads_view(dout, &ov, a->seq_q, a->head_dim);
  if (!rok_cl_attention_backward(ctx->model->kernels, &at, lse, &dout_view, &grads[0], &grads[1], &grads[2], error))
    return FALSE;
  for (guint in = 0; in < 3; in++)
    if (!ops_sink_close(ctx, &sinks[in], error))
      return FALSE;
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
