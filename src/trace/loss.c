/* The loss heads other than PyTorch's cross-entropy on fp32 probabilities
 * ("loss" in the model config):
 *
 * - fused: a fused cross-entropy kernel (Megatron-LM's, Apex's xentropy,
 *   flash-attn's) keeps the 16-bit logits and one fp32 log-sum-exp per
 *   token, and writes the gradient over the logits in backward.
 * - chunked: Liger Kernel's fused linear cross-entropy (Hsu et al., arXiv
 *   2410.10989) runs the output projection, the loss and both gradients
 *   chunk by chunk in forward: no [tokens, vocab] tensor lives beyond one
 *   chunk's logits; backward only scales the gradient of the input and of
 *   the weight that forward kept. */
#include "training-trace.h"

#include "rok/core.h"

static void fused(RokBuilder *b, guint x, guint labels, guint64 n, guint64 h, guint64 vocab) {
  guint64 e = rok_dtype_bytes(b->dtype);
  guint proj = trace_build_linear(b, "logits", x, n, h, vocab);
  guint logits = ROK_TENSOR(b, "logits_out", proj, b->dtype, n, vocab);
  guint loss = trace_build_op(b, "loss", ROK_OP_CROSS_ENTROPY, 1, n, vocab, 0);
  RokOp *o = rok_trace_op(b->trace, loss);
  o->fwd_flops = 5 * n * vocab;
  o->bwd_flops = 3 * n * vocab;
  o->fwd_bytes = e * n * vocab + 4 * n;
  o->bwd_bytes = 2 * e * n * vocab + 4 * n;
  rok_trace_add_input(b->trace, loss, logits);
  rok_trace_add_input(b->trace, loss, labels);
  rok_trace_need(b->trace, labels, loss);
  rok_trace_need(b->trace, logits, loss);
  guint lse = ROK_TENSOR(b, "loss_lse", loss, ROK_DTYPE_FP32, n);
  rok_trace_need(b->trace, lse, loss);
}

static void chunked(RokBuilder *b, guint x, guint labels, guint64 n, guint64 h, guint64 vocab) {
  const RokModel *m = b->model;
  guint64 e = rok_dtype_bytes(b->dtype), chunk = MIN(m->train.loss_chunk, n);
  gboolean weight_grad = m->train.lora_rank == 0; /* LoRA freezes the head */
  guint op = trace_build_op(b, "linear_cross_entropy", ROK_OP_LINEAR, 1, n, vocab, h);
  RokOp *o = rok_trace_op(b->trace, op);
  /* Forward: per chunk the logits, the loss and its gradient, then dX (and
   * dW) from it; backward scales what forward kept by the loss's gradient. */
  o->fwd_flops = (weight_grad ? 6 : 4) * n * h * vocab + 10 * n * vocab;
  o->bwd_flops = n * h + (weight_grad ? vocab * h : 0);
  o->fwd_bytes = e * (2 * n * h + vocab * h) + (2 * e + 8) * n * vocab + (weight_grad ? 2 * e * vocab * h : 0);
  o->bwd_bytes = 2 * e * (n * h + (weight_grad ? vocab * h : 0));
  rok_trace_add_input(b->trace, op, x);
  rok_trace_add_input(b->trace, op, labels);
  ROK_TENSOR(b, "chunk_logits", op, ROK_DTYPE_FP32, chunk, vocab); /* freed within forward */
  guint dx = ROK_TENSOR(b, "grad_input", op, b->dtype, n, h);
  rok_trace_need(b->trace, dx, op);
  if (weight_grad) {
    guint dw = ROK_TENSOR(b, "grad_weight", op, b->dtype, vocab, h);
    rok_trace_need(b->trace, dw, op);
  }
}

gboolean trace_build_loss(RokBuilder *b, guint x, guint labels, guint64 n, guint64 h, guint64 vocab) {
  switch (b->model->train.loss) {
  case ROK_LOSS_FP32_SOFTMAX:
    return FALSE;
  case ROK_LOSS_FUSED:
    fused(b, x, labels, n, h, vocab);
    return TRUE;
  case ROK_LOSS_CHUNKED:
    chunked(b, x, labels, n, h, vocab);
    return TRUE;
  }
  g_return_val_if_reached(FALSE);
}
