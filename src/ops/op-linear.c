/* linear: y = x·W (+ bias). W is [in, out] with the outputs taking column
 * blocks of it (LLaMA's qkv writes [qk | v] into two tensors), or, for an
 * output head tied to the token embedding, the table [vocab, in] used
 * transposed. Backward: dW += xᵀ·dy (tied: dtable += dyᵀ·x), dbias +=
 * column sums of dy, dx = dy·Wᵀ. */
#ifdef ROK_WITH_OPENCL

#include <math.h>

#include "ops-private.h"
#include "rok/core.h"

RokClMatrix ops_at(RokClBuffer *buffer, guint64 offset, guint64 ld, gboolean trans) {
  RokClMatrix m = rok_cl_matrix(buffer, ld, trans);
  m.offset = offset;
  return m;
}

gboolean ops_gemm(RokClKernels *kernels, guint64 m, guint64 n, guint64 k, RokClMatrix a, RokClMatrix b, RokClMatrix c,
                  float beta, RokClBuffer *bias, GError **error) {
  RokClGemm g = {.batch = 1,
                 .inner = 1,
                 .m = m,
                 .n = n,
                 .k = k,
                 .a = a,
                 .b = b,
                 .c = c,
                 .alpha = 1.0f,
                 .beta = beta,
                 .bias = bias};
  return rok_cl_gemm(kernels, &g, error);
}

/* The block of W output j uses, as op(B) of y = x·W (transposed: of
 * dx = dy·Wᵀ). */
static RokClMatrix weight_operand(const LinearExec *l, guint j, gboolean transposed) {
  if (l->tied) /* the table's rows col..col+width are W's columns */
    return ops_at(l->weight->value, l->col[j] * l->in, l->in, !transposed);
  return ops_at(l->weight->value, l->col[j], l->out, transposed);
}

/* ---- Preparing ----------------------------------------------------------- */

static gboolean check_input(const RokExecModel *model, const RokOp *op, LinearExec *l, char **reason) {
  if (op->inputs->len != 1) {
    *reason = ops_reason("it reads %u tensors; a linear reads one", op->inputs->len);
    return FALSE;
  }
  guint x = g_array_index(op->inputs, guint, 0);
  const RokTensor *t = rok_trace_tensor(model->trace, x);
  guint64 n = model->numel[x];
  if (t->dtype != model->act || n % l->in != 0 || n == 0 || l->rows % (n / l->in) != 0) {
    *reason = ops_reason("its input '%s' (%" G_GUINT64_FORMAT " %s) is not rows of %" G_GUINT64_FORMAT
                         " activations dividing its %" G_GUINT64_FORMAT " rows",
                         t->name, n, rok_dtype_name(t->dtype), l->in, l->rows);
    return FALSE;
  }
  if (!ops_saved_for(model->trace, x, op->id)) {
    *reason = ops_reason("its input '%s' is not saved for its backward (the weight gradient needs it)", t->name);
    return FALSE;
  }
  l->x_rows = n / l->in;
  return TRUE;
}

/* One output takes every column; several split them by their last
 * dimension, in order. */
static gboolean split_outputs(const RokExecModel *model, const RokOp *op, LinearExec *l, char **reason) {
  guint n = op->outputs->len;
  if (n == 0 || n > OPS_MAX_SPLIT) {
    *reason = ops_reason("it writes %u outputs (a linear writes 1 to %d)", n, OPS_MAX_SPLIT);
    return FALSE;
  }
  guint64 col = 0;
  for (guint j = 0; j < n; j++) {
    guint y = g_array_index(op->outputs, guint, j);
    const RokTensor *t = rok_trace_tensor(model->trace, y);
    guint64 width = n == 1 ? l->out : t->rank > 0 ? t->shape[t->rank - 1] : 0;
    guint64 elements = model->numel[y];
    if (t->dtype != model->act || width == 0 || elements == 0 || elements % width != 0 ||
        l->rows % (elements / width) != 0) {
      *reason = ops_reason("its output '%s' (%" G_GUINT64_FORMAT " %s) is not rows of %" G_GUINT64_FORMAT
                           " activations dividing its %" G_GUINT64_FORMAT " rows",
                           t->name, elements, rok_dtype_name(t->dtype), width, l->rows);
      return FALSE;
    }
    l->col[j] = col;
    l->width[j] = width;
    l->y_rows[j] = elements / width;
    col += width;
  }
  if (col != l->out) {
    *reason = ops_reason("its outputs have %" G_GUINT64_FORMAT " columns, its dims %" G_GUINT64_FORMAT, col, l->out);
    return FALSE;
  }
  l->n_out = n;
  return TRUE;
}

/* GPT, BERT and T5 tie the head to the token embedding; GPT and BERT
 * linears have biases (BERT's head a vocabulary bias, GPT's tied head none). */
static gboolean create_params(RokExecModel *model, OpExec *exec, GError **error) {
  const RokModel *m = model->config;
  LinearExec *l = &exec->u.linear;
  const RokExecParam *table = model->token_table;
  guint y = g_array_index(exec->op->outputs, guint, 0);
  gboolean head = l->n_out == 1 && ops_consumer_of_kind(model->trace, y, ROK_OP_CROSS_ENTROPY) != G_MAXUINT;
  l->tied =
      m != NULL && m->arch != ROK_ARCH_LLAMA && head && table != NULL && table->cols == l->in && table->rows >= l->out;
  if (l->tied) {
    l->weight = model->token_table;
  } else {
    float a = (float)(1.0 / sqrt((double)l->in));
    l->weight = ops_param_new(model, exec->op, "weight", l->in, l->out, -a, a, error);
    if (l->weight == NULL)
      return FALSE;
  }
  gboolean bias = m != NULL && ((m->arch == ROK_ARCH_GPT && !l->tied) || m->arch == ROK_ARCH_BERT);
  for (guint j = 0; bias && j < l->n_out; j++) {
    g_autofree char *name = l->n_out == 1 ? g_strdup("bias") : g_strdup_printf("bias%u", j);
    l->bias[j] = ops_param_new(model, exec->op, name, 1, l->width[j], -0.02f, 0.02f, error);
    if (l->bias[j] == NULL)
      return FALSE;
  }
  return TRUE;
}

gboolean ops_linear_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error) {
  const RokOp *op = exec->op;
  LinearExec *l = &exec->u.linear;
  l->rows = op->dims[0] * op->dims[1];
  l->out = op->dims[2];
  l->in = op->dims[3];
  if (l->rows == 0 || l->in == 0 || l->out == 0 || l->rows > G_MAXUINT32) {
    *reason = ops_reason("its GEMM (%" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                         ") is empty or too large",
                         l->rows, l->out, l->in);
    return TRUE;
  }
  if (!check_input(model, op, l, reason) || !split_outputs(model, op, l, reason))
    return TRUE;
  return create_params(model, exec, error);
}

/* ---- Running --------------------------------------------------------------- */

/* The input over all the op's rows: gathered when the tensor holds a
 * sequence-parallel share. */
static RokClBuffer *full_input(OpsCtx *ctx, const LinearExec *l, GError **error) {
  RokClBuffer *x = ops_input(ctx, 0, error);
  if (x == NULL || l->x_rows == l->rows)
    return x;
  RokClBuffer *full = ops_scratch(ctx, ctx->model->act, l->rows * l->in, "gathered input", FALSE, error);
  if (full == NULL || !ops_rows_tile(x, l->x_rows, full, l->rows, l->in, error))
    return NULL;
  return full;
}

gboolean ops_linear_forward(OpsCtx *ctx, GError **error) {
  const LinearExec *l = &ctx->exec->u.linear;
  RokClBuffer *x = full_input(ctx, l, error);
  if (x == NULL)
    return FALSE;
  for (guint j = 0; j < l->n_out; j++) {
    RokClBuffer *y = ops_output(ctx, j, error), *full = y;
    gboolean scattered = l->y_rows[j] != l->rows;
    if (y != NULL && scattered)
      full = ops_scratch(ctx, ctx->model->act, l->rows * l->width[j], "output over all rows", FALSE, error);
    if (full == NULL ||
        !ops_gemm(ctx->model->kernels, l->rows, l->width[j], l->in, ops_at(x, 0, l->in, FALSE),
                  weight_operand(l, j, FALSE), ops_at(full, 0, l->width[j], FALSE), 0.0f,
                  l->bias[j] ? l->bias[j]->value : NULL, error))
      return FALSE;
    if (scattered && !ops_rows_sum(ctx, full, l->rows, y, l->y_rows[j], l->width[j], error))
      return FALSE;
  }
  return TRUE;
}

/* dy of output j over all the op's rows (repeated when the output is a
 * sequence-parallel share: the adjoint of the row sum). */
static RokClBuffer *full_dout(OpsCtx *ctx, const LinearExec *l, guint j, GError **error) {
  RokClBuffer *dy = ops_dout(ctx, j, error);
  if (dy == NULL || l->y_rows[j] == l->rows)
    return dy;
  RokClBuffer *full =
      ops_scratch(ctx, ctx->model->act, l->rows * l->width[j], "output gradient over all rows", FALSE, error);
  if (full == NULL || !ops_rows_tile(dy, l->y_rows[j], full, l->rows, l->width[j], error))
    return NULL;
  return full;
}

static gboolean weight_grads(OpsCtx *ctx, const LinearExec *l, guint j, RokClBuffer *x, RokClBuffer *dy,
                             GError **error) {
  RokClKernels *kernels = ctx->model->kernels;
  RokClBuffer *dw = l->weight->grad;
  guint64 w = l->width[j];
  gboolean ok = l->tied ? ops_gemm(kernels, w, l->in, l->rows, ops_at(dy, 0, w, TRUE), ops_at(x, 0, l->in, FALSE),
                               ops_at(dw, l->col[j] * l->in, l->in, FALSE), 1.0f, NULL, error)
                        : ops_gemm(kernels, l->in, w, l->rows, ops_at(x, 0, l->in, TRUE), ops_at(dy, 0, w, FALSE),
                               ops_at(dw, l->col[j], l->out, FALSE), 1.0f, NULL, error);
  return ok && (l->bias[j] == NULL || rok_cl_bias_backward(kernels, dy, l->bias[j]->grad, l->rows, w, error));
}

gboolean ops_linear_backward(OpsCtx *ctx, GError **error) {
  const LinearExec *l = &ctx->exec->u.linear;
  RokClBuffer *x = full_input(ctx, l, error);
  if (x == NULL)
    return FALSE;
  /* dx over all rows goes straight into the gradient, or, for a gathered
   * input, into a scratch buffer summed back to the rank's rows. */
  gboolean gathered = l->x_rows != l->rows;
  OpsSink sink = {0};
  RokClBuffer *dx = NULL;
  float beta = 0.0f;
  if (gathered && ctx->model->needs_grad[ops_in_id(ctx, 0)]) {
    dx = ops_scratch(ctx, ctx->model->act, l->rows * l->in, "gradient of the gathered input", FALSE, error);
    if (dx == NULL)
      return FALSE;
  } else if (!gathered) {
    if (!ops_sink_accumulate(ctx, 0, TRUE, &sink, error))
      return FALSE;
    dx = sink.dst;
    beta = ops_sink_beta(&sink);
  }
  for (guint j = 0; j < l->n_out; j++) {
    RokClBuffer *dy = full_dout(ctx, l, j, error);
    if (dy == NULL || !weight_grads(ctx, l, j, x, dy, error))
      return FALSE;
    if (dx != NULL && !ops_gemm(ctx->model->kernels, l->rows, l->in, l->width[j], ops_at(dy, 0, l->width[j], FALSE),
                            weight_operand(l, j, TRUE), ops_at(dx, 0, l->in, FALSE), j == 0 ? beta : 1.0f, NULL, error))
      return FALSE;
  }
  if (!gathered || dx == NULL)
    return ops_sink_close(ctx, &sink, error);
  RokClBuffer *local = ops_scratch(ctx, ctx->model->act, l->x_rows * l->in, "input gradient", FALSE, error);
  return local != NULL && ops_rows_sum(ctx, dx, l->rows, local, l->x_rows, l->in, error) &&
         ops_grad_add(ctx, 0, local, error);
}

#endif /* ROK_WITH_OPENCL */
