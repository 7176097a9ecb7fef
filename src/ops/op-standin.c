/* The stand-in for an op that cannot run as itself (kind "other", or a
 * known kind whose shapes do not fit it): a GEMM of the op's FLOPs reading
 * a buffer of its input's size and writing one of its output's, forward
 * and backward (on the output's gradient, into the input's), so the step
 * still does the op's work and moves its bytes. Its outputs are zero but
 * for what the GEMM writes: deterministic, so recompute still matches. */
#ifdef ROK_WITH_OPENCL

#include "ops-private.h"
#include "rok/core.h"

/* The largest activation tensor of `ids` with at least `least` elements
 * (-1 if none), and the activation elements a buffer of all their bytes
 * holds. */
static gint largest(const RokExecModel *model, const GArray *ids, guint64 least, guint64 *elements) {
  gint best = -1;
  guint64 bytes = 0, best_n = 0;
  for (guint i = 0; i < ids->len; i++) {
    guint id = g_array_index(ids, guint, i);
    bytes += rok_trace_tensor(model->trace, id)->bytes;
    if (rok_trace_tensor(model->trace, id)->dtype == model->act && model->numel[id] >= least &&
        model->numel[id] > best_n)
      best = (gint)i, best_n = model->numel[id];
  }
  *elements = best >= 0 ? best_n : MAX(bytes / rok_dtype_bytes(model->act), least);
  return best;
}

gboolean ops_standin_prepare(RokExecModel *model, OpExec *exec, char *reason, GError **error) {
  const RokOp *op = exec->op;
  StandinExec *s = &exec->u.standin;
  s->in = largest(model, op->inputs, 2, &s->in_elements);
  s->out = largest(model, op->outputs, 2, &s->out_elements);
  /* Backward reads the output's gradient and writes the input's. */
  if (!rok_cl_standin_shape(op->fwd_flops, s->in_elements, s->out_elements, &s->fwd, error) ||
      !rok_cl_standin_shape(op->bwd_flops, s->out_elements, s->in_elements, &s->bwd, error)) {
    g_prefix_error(error, "op '%s': ", op->name);
    g_free(reason);
    return FALSE;
  }
  g_autofree char *fwd = rok_cl_standin_describe(op->name, rok_op_kind_name(op->kind), &s->fwd);
  double bwd_flops = 2.0 * (double)s->bwd.batch * (double)s->bwd.m * (double)s->bwd.n * (double)s->bwd.k;
  /* The describer's sentence starts with the op; a known kind says why first. */
  exec->note = op->kind == ROK_OP_OTHER ? g_strdup_printf("%s; backward: %.3g FLOPs", fwd, bwd_flops)
                                        : g_strdup_printf("%s; %s; backward: %.3g FLOPs", reason, fwd, bwd_flops);
  g_free(reason);
  model->standins++;
  return TRUE;
}

gboolean ops_standin_forward(OpsCtx *ctx, GError **error) {
  const StandinExec *s = &ctx->exec->u.standin;
  RokClBuffer *in = NULL, *out = NULL;
  for (guint i = 0; i < ctx->op->inputs->len; i++) {
    RokClBuffer *x = ops_input(ctx, i, error);
    if (x == NULL)
      return FALSE;
    in = (gint)i == s->in ? x : in;
  }
  for (guint i = 0; i < ctx->op->outputs->len; i++) {
    RokClBuffer *y = ops_output(ctx, i, error);
    if (y == NULL || !rok_cl_buffer_zero(y, error))
      return FALSE;
    out = (gint)i == s->out ? y : out;
  }
  if (in == NULL && (in = ops_scratch(ctx, ctx->model->act, s->in_elements, "stand-in input", TRUE, error)) == NULL)
    return FALSE;
  if (out == NULL &&
      (out = ops_scratch(ctx, ctx->model->act, s->out_elements, "stand-in output", FALSE, error)) == NULL)
    return FALSE;
  return rok_cl_standin_run(ctx->model->kernels, &s->fwd, in, out, error);
}

gboolean ops_standin_backward(OpsCtx *ctx, GError **error) {
  const StandinExec *s = &ctx->exec->u.standin;
  /* What the trace saves for it must be there, as for any backward. */
  const RokTrace *trace = ctx->model->trace;
  for (guint pass = 0; pass < 2; pass++) {
    const GArray *ids = pass == 0 ? ctx->op->inputs : ctx->op->outputs;
    for (guint i = 0; i < ids->len; i++) {
      if (!ops_saved_for(trace, g_array_index(ids, guint, i), ctx->op->id))
        continue;
      if ((pass == 0 ? ops_input(ctx, i, error) : ops_output(ctx, i, error)) == NULL)
        return FALSE;
    }
  }
  RokClBuffer *dy = s->out >= 0 ? ops_dout(ctx, (guint)s->out, error)
                                : ops_scratch(ctx, ctx->model->act, s->out_elements, "stand-in gradient", TRUE, error);
  OpsSink sink = {0};
  if (dy == NULL)
    return FALSE;
  if (s->in >= 0) {
    if (!ops_sink_overwrite(ctx, (guint)s->in, FALSE, TRUE, &sink, error))
      return FALSE;
  } else if ((sink.dst = ops_scratch(ctx, ctx->model->act, s->in_elements, "stand-in input gradient", FALSE, error)) ==
             NULL) {
    return FALSE;
  }
  return rok_cl_standin_run(ctx->model->kernels, &s->bwd, dy, sink.dst, error) && ops_sink_close(ctx, &sink, error);
}

#endif /* ROK_WITH_OPENCL */
