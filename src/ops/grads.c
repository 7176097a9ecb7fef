/* Activation gradients of the micro-batches in backward: one buffer per
 * tensor, created by the first backward that contributes to it, added into
 * by later ones (a tensor several ops read), and freed when its producer's
 * backward has consumed it. All in the activation dtype, all counted in the
 * device's ledger. The order of contributions is the backward order, fixed
 * by the trace, so the sums are bitwise the same whatever the plan. */
#ifdef ROK_WITH_OPENCL

#include "ops-private.h"
#include "rok/core.h"

OpsMbGrads *ops_grads_for(RokExecModel *model, guint mb) {
  OpsMbGrads *grads = g_hash_table_lookup(model->grads, GUINT_TO_POINTER(mb));
  if (grads == NULL) {
    grads = g_new0(OpsMbGrads, 1);
    grads->grads = g_new0(RokClBuffer *, MAX(model->n_tensors, 1));
    grads->consumed = g_new0(guint8, MAX(model->n_tensors, 1));
    g_hash_table_insert(model->grads, GUINT_TO_POINTER(mb), grads);
  }
  return grads;
}

static void grad_drop(RokExecModel *model, RokClBuffer **slot) {
  if (*slot == NULL)
    return;
  model->grad_bytes -= MIN((*slot)->bytes, model->grad_bytes);
  rok_cl_buffer_recycle(*slot, TRUE); /* queued kernels may still read it */
  *slot = NULL;
}

void ops_grads_free(RokExecModel *model, OpsMbGrads *grads) {
  for (guint t = 0; t < model->n_tensors; t++)
    grad_drop(model, &grads->grads[t]);
  g_free(grads->grads);
  g_free(grads->consumed);
  g_free(grads);
}

guint64 rok_exec_model_end_micro_batch(RokExecModel *model, guint mb) {
  OpsMbGrads *grads = g_hash_table_lookup(model->grads, GUINT_TO_POINTER(mb));
  if (grads == NULL)
    return 0;
  guint64 before = model->grad_bytes;
  g_hash_table_steal(model->grads, GUINT_TO_POINTER(mb));
  ops_grads_free(model, grads);
  return before - model->grad_bytes;
}

guint64 rok_exec_model_gradient_bytes(const RokExecModel *model) { return model->grad_bytes; }

gboolean ops_grads_check(OpsCtx *ctx, GError **error) {
  for (guint i = 0; i < ctx->op->outputs->len; i++) {
    guint id = ops_out_id(ctx, i);
    if (ctx->grads->consumed[id]) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                  "already ran for this micro-batch (call rok_exec_model_end_micro_batch() before running it again)");
      return FALSE;
    }
  }
  return TRUE;
}

void ops_grads_consume(OpsCtx *ctx) {
  for (guint i = 0; i < ctx->op->outputs->len; i++) {
    guint id = ops_out_id(ctx, i);
    grad_drop(ctx->model, &ctx->grads->grads[id]);
    ctx->grads->consumed[id] = 1;
  }
}

/* The gradient buffer of input i, created when missing; NULL (and TRUE)
 * when the input needs none. */
static gboolean target(OpsCtx *ctx, guint input, OpsSink *sink, GError **error) {
  RokExecModel *model = ctx->model;
  guint id = ops_in_id(ctx, input);
  sink->tensor = id;
  if (!model->needs_grad[id])
    return TRUE;
  const RokTensor *t = rok_trace_tensor(model->trace, id);
  if (ctx->grads->consumed[id]) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "out of order: the gradient of '%s' was already consumed by the backward of its producer '%s'", t->name,
                rok_trace_op(model->trace, t->producer)->name);
    return FALSE;
  }
  sink->grad = ctx->grads->grads[id];
  if (sink->grad != NULL)
    return TRUE;
  g_autofree char *label = g_strdup_printf("gradient of %s (micro-batch %u)", t->name, ctx->mb);
  sink->grad = rok_cl_buffer_new(model->device, model->act, model->numel[id], label, FALSE, error);
  if (sink->grad == NULL)
    return FALSE;
  ctx->grads->grads[id] = sink->grad;
  model->grad_bytes += sink->grad->bytes;
  sink->fresh = TRUE;
  return TRUE;
}

gboolean ops_sink_overwrite(OpsCtx *ctx, guint input, gboolean covers, gboolean always, OpsSink *sink, GError **error) {
  *sink = (OpsSink){.covers = covers};
  if (!target(ctx, input, sink, error))
    return FALSE;
  guint64 elements = ctx->model->numel[sink->tensor];
  if (sink->grad == NULL) {
    if (always)
      sink->dst = ops_scratch(ctx, ctx->model->act, elements, "unused gradient", !covers, error);
    return !always || sink->dst != NULL;
  }
  if (sink->fresh) {
    sink->dst = sink->grad;
    return covers || rok_cl_buffer_zero(sink->dst, error);
  }
  sink->temp = TRUE;
  sink->dst = ops_scratch(ctx, ctx->model->act, elements, "gradient contribution", !covers, error);
  return sink->dst != NULL;
}

gboolean ops_sink_accumulate(OpsCtx *ctx, guint input, gboolean covers, OpsSink *sink, GError **error) {
  *sink = (OpsSink){.covers = covers};
  if (!target(ctx, input, sink, error))
    return FALSE;
  sink->dst = sink->grad;
  if (sink->fresh && !covers)
    return rok_cl_buffer_zero(sink->dst, error);
  return TRUE;
}

float ops_sink_beta(const OpsSink *sink) { return sink->fresh && sink->covers ? 0.0f : 1.0f; }

gboolean ops_sink_close(OpsCtx *ctx, OpsSink *sink, GError **error) {
  if (!sink->temp)
    return TRUE;
  sink->temp = FALSE;
  return rok_cl_add(ctx->model->kernels, sink->grad, sink->dst, sink->grad, ctx->model->numel[sink->tensor], error);
}

gboolean ops_grad_add(OpsCtx *ctx, guint input, RokClBuffer *src, GError **error) {
  OpsSink sink = {0};
  if (!target(ctx, input, &sink, error))
    return FALSE;
  if (sink.grad == NULL)
    return TRUE;
  if (sink.fresh)
    return rok_cl_buffer_copy(src, 0, sink.grad, 0, sink.grad->bytes, error);
  return rok_cl_add(ctx->model->kernels, sink.grad, src, sink.grad, ctx->model->numel[sink.tensor], error);
}

gboolean ops_grad_move(OpsCtx *ctx, guint out, guint in) {
  RokExecModel *model = ctx->model;
  guint from = ops_out_id(ctx, out), to = ops_in_id(ctx, in);
  OpsMbGrads *g = ctx->grads;
  if (from == to || g->grads[from] == NULL || g->grads[to] != NULL || g->consumed[to] || !model->needs_grad[to] ||
      model->numel[from] != model->numel[to])
    return FALSE;
  g->grads[to] = g->grads[from];
  g->grads[from] = NULL;
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
