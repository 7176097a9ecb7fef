/* Forward and backward of one op: the kind table, the checks every call
 * makes, and the context the op families run in. */
#ifdef ROK_WITH_OPENCL

#include "ops-private.h"
#include "rok/core.h"

static const OpsKindImpl kinds[ROK_OP_KIND_COUNT] = {
    [ROK_OP_INPUT] = {ops_input_prepare, ops_input_forward, ops_input_backward},
    [ROK_OP_EMBEDDING] = {ops_embedding_prepare, ops_embedding_forward, ops_embedding_backward},
    [ROK_OP_LAYERNORM] = {ops_norm_prepare, ops_norm_forward, ops_norm_backward},
    [ROK_OP_RMSNORM] = {ops_norm_prepare, ops_norm_forward, ops_norm_backward},
    [ROK_OP_LINEAR] = {ops_linear_prepare, ops_linear_forward, ops_linear_backward},
    [ROK_OP_ROTARY] = {ops_rotary_prepare, ops_rotary_forward, ops_rotary_backward},
    [ROK_OP_ATTN_SCORES] = {ops_attention_prepare, ops_scores_forward, ops_scores_backward},
    [ROK_OP_SOFTMAX] = {ops_softmax_prepare, ops_softmax_forward, ops_softmax_backward},
    [ROK_OP_DROPOUT] = {ops_dropout_prepare, ops_dropout_forward, ops_dropout_backward},
    [ROK_OP_ATTN_CONTEXT] = {ops_attention_prepare, ops_context_forward, ops_context_backward},
    [ROK_OP_FLASH_ATTENTION] = {ops_attention_prepare, ops_flash_forward, ops_flash_backward},
    [ROK_OP_ADD] = {ops_add_prepare, ops_add_forward, ops_add_backward},
    [ROK_OP_GELU] = {ops_unary_prepare, ops_gelu_forward, ops_gelu_backward},
    [ROK_OP_RELU] = {ops_unary_prepare, ops_relu_forward, ops_relu_backward},
    [ROK_OP_SWIGLU] = {ops_swiglu_prepare, ops_swiglu_forward, ops_swiglu_backward},
    [ROK_OP_CROSS_ENTROPY] = {ops_loss_prepare, ops_loss_forward, ops_loss_backward},
    [ROK_OP_MOE_ROUTER] = {ops_moe_router_prepare, ops_moe_router_forward, ops_moe_router_backward},
    [ROK_OP_MOE_DISPATCH] = {ops_moe_dispatch_prepare, ops_moe_dispatch_forward, ops_moe_dispatch_backward},
    [ROK_OP_MOE_COMBINE] = {ops_moe_combine_prepare, ops_moe_combine_forward, ops_moe_combine_backward},
    [ROK_OP_OTHER] = {NULL, NULL, NULL},
};

static const OpsKindImpl standin = {NULL, ops_standin_forward, ops_standin_backward};
static const OpsKindImpl moe_experts = {ops_moe_experts_prepare, ops_moe_experts_forward, ops_moe_experts_backward};
static const OpsKindImpl moe_gate = {ops_moe_gate_prepare, ops_moe_gate_forward, ops_moe_gate_backward};

const OpsKindImpl *ops_moe_experts_impl(void) { return &moe_experts; }

const OpsKindImpl *ops_moe_gate_impl(void) { return &moe_gate; }

const OpsKindImpl *ops_kind_impl(RokOpKind kind) {
  return (guint)kind < ROK_OP_KIND_COUNT && kinds[kind].prepare != NULL ? &kinds[kind] : NULL;
}

const OpsKindImpl *ops_standin_impl(void) { return &standin; }

static gboolean check_call(const RokExecModel *model, guint op, RokClBuffer *const *tensors, const char *what,
                           GError **error) {
  if (op >= model->n_ops) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: op %u is out of range (the trace has %u ops)", what, op,
                model->n_ops);
    return FALSE;
  }
  if (tensors == NULL && model->n_tensors > 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s of op '%s': no tensor array given", what,
                rok_trace_op(model->trace, op)->name);
    return FALSE;
  }
  return TRUE;
}

/* Scratch buffers may still be in use by queued kernels: their memory is
 * reused once those finish (a step makes the same ones again). */
static void scratch_free(gpointer buffer) {
  rok_cl_buffer_recycle(buffer, TRUE);
}

static OpsCtx ctx_begin(RokExecModel *model, guint op, guint mb, RokClBuffer *const *tensors, gboolean backward) {
  return (OpsCtx){
      .model = model,
      .exec = &model->ops[op],
      .op = model->ops[op].op,
      .mb = mb,
      .tensors = tensors,
      .backward = backward,
      .scratch = g_ptr_array_new_with_free_func(scratch_free),
  };
}

static gboolean ctx_end(OpsCtx *ctx, gboolean ok, GError **error) {
  g_ptr_array_unref(ctx->scratch);
  if (!ok)
    g_prefix_error(error, "op '%s' (%s) %s, micro-batch %u: ", ctx->op->name, rok_op_kind_name(ctx->op->kind),
                   ctx->backward ? "backward" : "forward", ctx->mb);
  return ok;
}

gboolean rok_exec_model_forward(RokExecModel *model, guint op, guint mb, RokClBuffer *const *tensors, GError **error) {
  if (!check_call(model, op, tensors, "forward", error))
    return FALSE;
  OpsCtx ctx = ctx_begin(model, op, mb, tensors, FALSE);
  gboolean ok = ctx.exec->impl->forward(&ctx, error);
  return ctx_end(&ctx, ok, error);
}

gboolean rok_exec_model_rebuild_mask(RokExecModel *model, guint op, guint mb, RokClBuffer *const *tensors,
                                     GError **error) {
  if (!check_call(model, op, tensors, "rebuilding a mask", error))
    return FALSE;
  const OpExec *exec = &model->ops[op];
  if (exec->op->kind != ROK_OP_DROPOUT || exec->standin) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "op '%s' (%s) has no mask to rebuild from the seed", exec->op->name,
                rok_op_kind_name(exec->op->kind));
    return FALSE;
  }
  OpsCtx ctx = ctx_begin(model, op, mb, tensors, FALSE);
  return ctx_end(&ctx, ops_dropout_mask(&ctx, error), error);
}

gboolean rok_exec_model_backward(RokExecModel *model, guint op, guint mb, RokClBuffer *const *tensors, GError **error) {
  if (!check_call(model, op, tensors, "backward", error))
    return FALSE;
  OpsCtx ctx = ctx_begin(model, op, mb, tensors, TRUE);
  ctx.grads = ops_grads_for(model, mb);
  gboolean ok = ops_grads_check(&ctx, error) && ctx.exec->impl->backward(&ctx, error);
  if (ok)
    ops_grads_consume(&ctx);
  return ctx_end(&ctx, ok, error);
}

#endif /* ROK_WITH_OPENCL */
