/* The tensors one forward or backward call touches: the runner's buffers,
 * checked for residency, dtype and size (and, in backward, that the trace
 * saves them for this op), scratch buffers, and output gradients. */
#ifdef ROK_WITH_OPENCL

#include "ops-private.h"
#include "rok/core.h"

static gboolean check_buffer(const OpsCtx *ctx, guint id, const RokClBuffer *buffer, GError **error) {
  const RokTensor *t = rok_trace_tensor(ctx->model->trace, id);
  guint64 elements = ctx->model->numel[id];
  if (buffer->dtype != t->dtype || buffer->elements != elements) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "the buffer given for tensor '%s' holds %" G_GUINT64_FORMAT
                " %s elements; the trace says %" G_GUINT64_FORMAT " %s",
                t->name, buffer->elements, rok_dtype_name(buffer->dtype), elements, rok_dtype_name(t->dtype));
    return FALSE;
  }
  return TRUE;
}

/* A tensor the call reads: it must be there. */
static RokClBuffer *resident(OpsCtx *ctx, guint id, GError **error) {
  const RokTensor *t = rok_trace_tensor(ctx->model->trace, id);
  if (ctx->backward && !ops_saved_for(ctx->model->trace, id, ctx->op->id)) {
    /* prepare() only lets an op run as itself when its backward needs
     * nothing more than the trace saves: reaching here is a bug. */
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "reads tensor '%s', which the trace does not save for it", t->name);
    return NULL;
  }
  RokClBuffer *buffer = ctx->tensors[id];
  if (buffer == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INTEGRITY, "tensor '%s' (%u) is not resident", t->name, id);
    return NULL;
  }
  return check_buffer(ctx, id, buffer, error) ? buffer : NULL;
}

RokClBuffer *ops_input(OpsCtx *ctx, guint i, GError **error) { return resident(ctx, ops_in_id(ctx, i), error); }

RokClBuffer *ops_output(OpsCtx *ctx, guint i, GError **error) {
  guint id = ops_out_id(ctx, i);
  if (ctx->backward)
    return resident(ctx, id, error);
  RokClBuffer *buffer = ctx->tensors[id];
  if (buffer == NULL) {
    const RokTensor *t = rok_trace_tensor(ctx->model->trace, id);
    return ops_scratch(ctx, t->dtype, ctx->model->numel[id], t->name, FALSE, error);
  }
  return check_buffer(ctx, id, buffer, error) ? buffer : NULL;
}

RokClBuffer *ops_scratch(OpsCtx *ctx, RokDtype dtype, guint64 elements, const char *what, gboolean zero,
                         GError **error) {
  g_autofree char *label = g_strdup_printf("%s: %s (scratch)", ctx->op->name, what);
  RokClBuffer *buffer = rok_cl_buffer_new(ctx->model->device, dtype, elements, label, FALSE, error);
  if (buffer == NULL)
    return NULL;
  g_ptr_array_add(ctx->scratch, buffer);
  if (zero && !rok_cl_buffer_zero(buffer, error))
    return NULL;
  return buffer;
}

RokClBuffer *ops_dout(OpsCtx *ctx, guint i, GError **error) {
  RokExecModel *model = ctx->model;
  guint id = ops_out_id(ctx, i);
  RokClBuffer *grad = ctx->grads->grads[id];
  if (grad != NULL)
    return grad;
  const RokTensor *t = rok_trace_tensor(model->trace, id);
  gboolean boundary = model->boundary[id];
  g_autofree char *what = g_strdup_printf("%s gradient of %s", boundary ? "stage-boundary" : "zero", t->name);
  grad = ops_scratch(ctx, model->act, model->numel[id], what, !boundary, error);
  if (grad == NULL || !boundary)
    return grad;
  /* Of the size a mean loss over the tensor's rows gives. */
  float scale = (float)(1.0 / (double)MAX(t->rank > 1 ? model->numel[id] / t->shape[t->rank - 1] : 1, 1));
  guint64 stream = ops_stream(STREAM_BOUNDARY, ctx->mb, id);
  return rok_cl_fill_uniform(model->kernels, grad, model->seed, stream, -scale, scale, error) ? grad : NULL;
}

RokClDropout ops_dropout(const OpsCtx *ctx, double p) {
  return (RokClDropout){.seed = ctx->model->seed, .stream = ops_stream(STREAM_DROPOUT, ctx->mb, ctx->op->id), .p = p};
}

#endif /* ROK_WITH_OPENCL */
