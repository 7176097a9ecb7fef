/* Private to src/model: training choices in the trace (training-trace.c). */
#pragma once

#include "builder.h"

/* The linear op just built from `x`: a frozen weight has no weight
 * gradient, so the op keeps no input (PyTorch saves x for dW alone); a LoRA
 * target gains its adapters' work and their saved rank-r activations (and
 * x, which the adapters' A keeps). */
void trace_linear_training(RokBuilder *b, guint op, const char *name, guint x, guint64 rows, guint64 in,
                           guint64 out);
/* Before rok_trace_finish: the layers below the first trained one, and a
 * frozen embedding, run no backward and save nothing. */
void trace_apply_training(RokTrace *trace, const RokModel *m);
/* The trace's fixed memory: the terms of rok_model_fixed_terms summed by
 * kind, and the optimizer step's traffic. */
void trace_fill_fixed_memory(const RokModel *m, RokFixedMemory *fixed);

/* Eager kernels (builder-eager.c). */
gboolean trace_eager(const RokBuilder *b);
guint trace_eager_rms_norm(RokBuilder *b, const char *name, guint x, guint64 rows, guint64 cols);
guint trace_eager_gelu(RokBuilder *b, const char *name, guint x, guint64 rows, guint64 cols);
guint trace_eager_swiglu(RokBuilder *b, const char *name, guint gate_up, guint64 rows, guint64 cols);
/* The rotary cos and sin tables, outputs of the input op (eager LLaMA). */
void trace_eager_rotary_tables(RokBuilder *b, guint input_op, guint64 seq);
/* The rotary op reads the tables and saves them. */
void trace_eager_rotary(RokBuilder *b, guint rope_op);
/* K and V repeated for every query head (eager GQA): changes `a`. */
void trace_eager_repeat_kv(RokBuilder *b, RokAttentionShape *a, guint64 tokens);
/* LLaMA's fp32 softmax: `probs` becomes fp32; returns the 16-bit copy the
 * context reads (or `probs` itself when fused). */
guint trace_eager_softmax_copy(RokBuilder *b, const char *name, guint softmax_op, guint probs, guint64 n);

/* The loss head when it is not PyTorch's fp32 softmax (loss.c): the
 * output projection and the loss over `x` [n, h]; FALSE when the caller
 * builds the plain one. */
gboolean trace_build_loss(RokBuilder *b, guint x, guint labels, guint64 n, guint64 h, guint64 vocab);
