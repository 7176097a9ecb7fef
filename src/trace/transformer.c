/* Model config -> trace: the ops of one micro-batch and the tensors saved
 * for backward, per Korthikanti et al. (2022), on one GPU.
 *
 * GPT (pre-LayerNorm), BERT (post-LayerNorm), LLaMA (pre-RMSNorm, rotary,
 * SwiGLU, grouped-query attention, no dropout) and T5 (pre-norm RMS-style,
 * encoder and decoder stacks with cross-attention). With dropout, a GPT layer
 * saves s·b·h·(34 + 5·a·s/h) bytes in 16-bit (plus LayerNorm statistics).
 *
 * Tensor parallelism splits heads and FFN columns over `t` ranks; sequence
 * parallelism also splits the residual stream (norms, dropout, residual) by
 * sequence. The communication these imply is not part of the trace (the
 * simulator's communication stream adds it). Pipeline parallelism: one
 * trace per stage (rok_trace_new_for_stage). */
#include "builder.h"
#include "training-trace.h"
#include "transformer-parts.h"
#include "rok/core.h"

typedef struct {
  RokBuilder *b;
  guint64 seq, heads, kv_heads, head_dim, ffn; /* local to one rank */
  gint64 model_offset; /* a layer's index in the model less its index in this trace */
} Stack;

static guint64 local_kv_heads(const RokModel *m) {
  return MAX(m->kv_heads / m->tensor_parallel, 1);
}

/* A layer's residual input, from the previous layer or the embedding: it is
 * counted in the layer that reads it. */
static guint reassign_to_layer(RokBuilder *b, guint tensor, gint layer, const char *name) {
  RokTensor *t = rok_trace_tensor(b->trace, tensor);
  t->layer = layer;
  g_free(t->name);
  t->name = g_strdup(name);
  return tensor;
}

/* Self-attention over `x` (already normalised for pre-norm models): QKV
 * projection, attention core, output projection. Returns the projection's
 * output [seq_tokens, h]. */
static guint self_attention(Stack *st, guint x) {
  RokBuilder *b = st->b;
  const RokModel *m = b->model;
  guint64 h = m->hidden, tokens = st->seq * m->micro_batch, window = rok_model_layer_window(m, (guint64)b->model_layer);
  if (m->a.kv_lora_rank > 0)
    return trace_mla_attention(b, x, tokens, st->heads, window);
  guint64 q_width = st->heads * st->head_dim, kv_width = st->kv_heads * st->head_dim;
  RokAttentionShape a = {.batch = m->micro_batch, .seq_q = st->seq, .seq_k = st->seq, .heads = st->heads,
                         .kv_heads = st->kv_heads, .head_dim = st->head_dim, .window = window};
  guint qkv_op = trace_build_linear(b, "attn.qkv", x, tokens, h, q_width + 2 * kv_width);
  if (m->arch == ROK_ARCH_LLAMA || (m->arch == ROK_ARCH_GPT && m->a.positions == 0)) {
    /* Rotary rotates q and k into new storage; v is its own projection. */
    guint qk = ROK_TENSOR(b, "attn.qk_out", qkv_op, b->dtype, tokens, q_width + kv_width);
    a.v = ROK_TENSOR(b, "attn.v_out", qkv_op, b->dtype, tokens, kv_width);
    if (trace_eager(b)) { /* q and k rotated into storages of their own */
      guint rope = trace_build_op(b, "attn.rotary", ROK_OP_ROTARY, 1, tokens, q_width + kv_width, 0);
      guint64 n = tokens * (q_width + kv_width);
      trace_build_cost(b, rope, 3 * n, 3 * n, 2 * rok_dtype_bytes(b->dtype) * n, 2 * rok_dtype_bytes(b->dtype) * n);
      trace_build_use(b, rope, qk, FALSE);
      trace_eager_rotary(b, rope);
      a.q = ROK_TENSOR(b, "attn.q_rotary", rope, b->dtype, tokens, q_width);
      a.k = ROK_TENSOR(b, "attn.k_rotary", rope, b->dtype, tokens, kv_width);
    } else {
      a.q = a.k = trace_build_rotary(b, "attn.rotary", qk, tokens, q_width + kv_width);
    }
  } else {
    a.q = a.k = a.v = ROK_TENSOR(b, "attn.qkv_out", qkv_op, b->dtype, tokens, q_width + 2 * kv_width);
  }
  trace_eager_repeat_kv(b, &a, tokens);
  guint ctx = trace_build_attention(b, "attn", &a);
  guint proj = trace_build_linear(b, "attn.proj", ctx, tokens, q_width, h);
  return ROK_TENSOR(b, "attn.proj_out", proj, b->dtype, b->seq_tokens, h);
}

/* T5's decoder cross-attention: queries from the decoder, keys and values
 * from the encoder's output (one tensor every decoder layer saves). */
static guint cross_attention(Stack *st, guint x, guint encoder_out, guint64 encoder_seq) {
  RokBuilder *b = st->b;
  guint64 h = b->model->hidden, mb = b->model->micro_batch, width = st->heads * st->head_dim;
  guint q_op = trace_build_linear(b, "cross.q", x, st->seq * mb, h, width);
  guint kv_op = trace_build_linear(b, "cross.kv", encoder_out, encoder_seq * mb, h, 2 * width);
  RokAttentionShape a = {.batch = mb, .seq_q = st->seq, .seq_k = encoder_seq, .heads = st->heads,
                         .kv_heads = st->heads, .head_dim = st->head_dim};
  a.q = ROK_TENSOR(b, "cross.q_out", q_op, b->dtype, st->seq * mb, width);
  a.k = a.v = ROK_TENSOR(b, "cross.kv_out", kv_op, b->dtype, encoder_seq * mb, 2 * width);
  guint ctx = trace_build_attention(b, "cross", &a);
  guint proj = trace_build_linear(b, "cross.proj", ctx, st->seq * mb, width, h);
  return ROK_TENSOR(b, "cross.proj_out", proj, b->dtype, b->seq_tokens, h);
}

/* The feed-forward block on normalised input `x`; returns its output
 * [seq_tokens, h]. */
static guint mlp(Stack *st, guint x) {
  RokBuilder *b = st->b;
  guint64 h = b->model->hidden, tokens = st->seq * b->model->micro_batch, f = st->ffn;
  guint hidden;
  if (rok_model_is_moe_layer(b->model, (guint64)b->model_layer))
    return trace_moe_block(b, x, tokens);
  switch (b->model->arch) {
  case ROK_ARCH_LLAMA: {
    guint gate_up = trace_build_linear(b, "mlp.gate_up", x, tokens, h, 2 * f);
    guint gu = ROK_TENSOR(b, "mlp.gate_up_out", gate_up, b->dtype, tokens, 2 * f);
    hidden = trace_build_swiglu(b, "mlp.swiglu", gu, tokens, f);
    break;
  }
  case ROK_ARCH_T5: {
    guint wi = trace_build_linear(b, "mlp.fc1", x, tokens, h, f);
    guint pre = ROK_TENSOR(b, "mlp.fc1_out", wi, b->dtype, tokens, f);
    guint relu = trace_build_activation(b, "mlp.relu", ROK_OP_RELU, pre, tokens, f);
    hidden = trace_build_dropout(b, "mlp.inner_dropout", relu, 2, (const guint64[]){tokens, f});
    break;
  }
  case ROK_ARCH_GPT:
  case ROK_ARCH_BERT:
  default: {
    guint fc1 = trace_build_linear(b, "mlp.fc1", x, tokens, h, f);
    guint pre = ROK_TENSOR(b, "mlp.fc1_out", fc1, b->dtype, tokens, f);
    hidden = trace_build_activation(b, "mlp.gelu", ROK_OP_GELU, pre, tokens, f);
    break;
  }
  }
  guint fc2 = trace_build_linear(b, "mlp.fc2", hidden, tokens, f, h);
  return ROK_TENSOR(b, "mlp.fc2_out", fc2, b->dtype, b->seq_tokens, h);
}

static RokOpKind norm_kind(const RokModel *m) {
  return m->arch == ROK_ARCH_GPT || m->arch == ROK_ARCH_BERT ? ROK_OP_LAYERNORM : ROK_OP_RMSNORM;
}

/* residual + dropout(branch), Megatron's fused bias-dropout-add. */
static guint dropout_add(RokBuilder *b, const char *name, guint branch, guint residual) {
  guint64 rows = b->seq_tokens, h = b->model->hidden;
  char dropout[48], add[48];
  g_snprintf(dropout, sizeof dropout, "%s.out_dropout", name);
  g_snprintf(add, sizeof add, "%s.residual", name);
  guint dropped = trace_build_dropout(b, dropout, branch, 2, (const guint64[]){rows, h});
  return trace_build_add(b, add, dropped, residual, rows, h);
}

/* Gemma 2 normalises each branch's output before the residual add. */
static guint branch_norm(RokBuilder *b, const char *name, guint branch) {
  if (!b->model->a.post_norms)
    return branch;
  return trace_build_norm(b, name, norm_kind(b->model), branch, b->seq_tokens, b->model->hidden);
}

/* One pre-norm layer (GPT, LLaMA, T5): x + attn(norm(x)), then + mlp(norm());
 * with a parallel residual (GPT-NeoX) both branches read x. */
static guint pre_norm_layer(Stack *st, guint x, guint encoder_out, guint64 encoder_seq) {
  RokBuilder *b = st->b;
  guint64 rows = b->seq_tokens, h = b->model->hidden;
  RokOpKind norm = norm_kind(b->model);
  guint n1 = trace_build_norm(b, "attn.norm", norm, x, rows, h);
  guint attn = branch_norm(b, "attn.post_norm", self_attention(st, n1));
  if (b->model->a.parallel_residual) {
    guint n2 = trace_build_norm(b, "mlp.norm", norm, x, rows, h);
    guint mlp_out = mlp(st, n2);
    return dropout_add(b, "mlp", mlp_out, dropout_add(b, "attn", attn, x));
  }
  guint res = dropout_add(b, "attn", attn, x);
  if (encoder_out != ROK_NO_TENSOR) {
    guint n2 = trace_build_norm(b, "cross.norm", norm, res, rows, h);
    res = dropout_add(b, "cross", cross_attention(st, n2, encoder_out, encoder_seq), res);
  }
  guint n3 = trace_build_norm(b, "mlp.norm", norm, res, rows, h);
  return dropout_add(b, "mlp", branch_norm(b, "mlp.post_norm", mlp(st, n3)), res);
}

/* One post-norm layer (BERT): norm(x + attn(x)), then norm(. + mlp(.)). */
static guint post_norm_layer(Stack *st, guint x) {
  RokBuilder *b = st->b;
  guint64 rows = b->seq_tokens, h = b->model->hidden;
  guint res1 = dropout_add(b, "attn", self_attention(st, x), x);
  guint n1 = trace_build_norm(b, "attn.norm", ROK_OP_LAYERNORM, res1, rows, h);
  guint res2 = dropout_add(b, "mlp", mlp(st, n1), n1);
  return trace_build_norm(b, "mlp.norm", ROK_OP_LAYERNORM, res2, rows, h);
}

/* Token ids in, embedding (+ positions) out, with dropout; BERT adds a
 * LayerNorm. Returns the first layer's input. */
static guint embed(RokBuilder *b, guint tokens, guint64 seq, const char *prefix) {
  const RokModel *m = b->model;
  guint64 n = seq * m->micro_batch, rows = b->seq_tokens, h = m->hidden;
  trace_builder_enter(b, -1, prefix);
  guint op = trace_build_op(b, "lookup", ROK_OP_EMBEDDING, 1, n, h, m->vocab);
  RokOp *o = rok_trace_op(b->trace, op);
  o->fwd_flops = n * h;
  o->bwd_flops = n * h;
  o->fwd_bytes = 2 * rok_dtype_bytes(b->dtype) * n * h + 8 * n;
  o->bwd_bytes = 4 * rok_dtype_bytes(b->dtype) * n * h + 8 * n;
  rok_trace_add_input(b->trace, op, tokens);
  rok_trace_need(b->trace, tokens, op); /* the weight gradient scatters by token */
  guint x = ROK_TENSOR(b, "lookup_out", op, b->dtype, rows, h);
  if (m->arch == ROK_ARCH_BERT)
    x = trace_build_norm(b, "norm", ROK_OP_LAYERNORM, x, rows, h);
  return trace_build_dropout(b, "dropout", x, 2, (const guint64[]){rows, h});
}

/* Final norm, output projection over the vocabulary, cross-entropy (which
 * saves its fp32 probabilities). BERT's MLM head adds dense+GeLU+LayerNorm. */
static void head(RokBuilder *b, guint x, guint labels, guint64 seq) {
  const RokModel *m = b->model;
  guint64 h = m->hidden, n = seq * m->micro_batch, rows = b->seq_tokens;
  guint64 vocab = (rok_model_padded_vocab(m) + m->tensor_parallel - 1) / m->tensor_parallel;
  trace_builder_enter(b, -1, "head");
  if (m->arch == ROK_ARCH_BERT) {
    guint dense = trace_build_linear(b, "transform", x, rows, h, h);
    guint t = ROK_TENSOR(b, "transform_out", dense, b->dtype, rows, h);
    guint g = trace_build_activation(b, "gelu", ROK_OP_GELU, t, rows, h);
    x = trace_build_norm(b, "norm", ROK_OP_LAYERNORM, g, rows, h);
  } else {
    x = trace_build_norm(b, "norm", norm_kind(m), x, rows, h);
    if (m->arch == ROK_ARCH_T5)
      x = trace_build_dropout(b, "dropout", x, 2, (const guint64[]){rows, h});
  }
  if (trace_build_loss(b, x, labels, n, h, vocab))
    return;
  guint proj = trace_build_linear(b, "logits", x, n, h, vocab);
  guint logits = ROK_TENSOR(b, "logits_out", proj, b->dtype, n, vocab);
  guint loss = trace_build_op(b, "loss", ROK_OP_CROSS_ENTROPY, 1, n, vocab, 0);
  RokOp *o = rok_trace_op(b->trace, loss);
  o->fwd_flops = 5 * n * vocab;
  o->bwd_flops = 2 * n * vocab;
  o->fwd_bytes = (rok_dtype_bytes(b->dtype) + 4) * n * vocab;
  o->bwd_bytes = (rok_dtype_bytes(b->dtype) + 4) * n * vocab;
  rok_trace_add_input(b->trace, loss, logits);
  rok_trace_add_input(b->trace, loss, labels);
  rok_trace_need(b->trace, labels, loss);
  guint probs = ROK_TENSOR(b, "loss_probs", loss, ROK_DTYPE_FP32, n, vocab);
  rok_trace_need(b->trace, probs, loss);
}

/* Enter a stack whose sequence is `seq` long: sets the residual stream's rows. */
static void enter_stack(Stack *st, guint64 seq) {
  const RokModel *m = st->b->model;
  st->seq = seq;
  st->b->tokens = seq * m->micro_batch;
  st->b->seq_tokens = m->sequence_parallel ? st->b->tokens / m->tensor_parallel : st->b->tokens;
}

/* `count` layers from `first`, named prefix<named>, prefix<named + 1>, ...;
 * returns the last layer's output. */
static guint layer_stack(Stack *st, guint x, guint first, guint64 count, const char *prefix, guint64 named,
                         guint encoder_out, guint64 encoder_seq) {
  for (guint i = 0; i < count; i++) {
    char name[32], input[48];
    g_snprintf(name, sizeof name, "%s%" G_GUINT64_FORMAT, prefix, named + i);
    g_snprintf(input, sizeof input, "%s.input", name);
    trace_builder_enter(st->b, first + i, name);
    st->b->model_layer = (gint64)(first + i) + st->model_offset;
    reassign_to_layer(st->b, x, first + i, input);
    x = st->b->model->arch == ROK_ARCH_BERT ? post_norm_layer(st, x)
                                            : pre_norm_layer(st, x, encoder_out, encoder_seq);
  }
  return x;
}

/* The T5 encoder's output: final norm and dropout; every decoder layer
 * saves it for its cross-attention. */
static guint encoder_output(RokBuilder *b, guint x) {
  trace_builder_enter(b, -1, "encoder");
  reassign_to_layer(b, x, -1, "encoder.input");
  guint64 rows = b->seq_tokens, h = b->model->hidden;
  guint n = trace_build_norm(b, "norm", ROK_OP_RMSNORM, x, rows, h);
  return trace_build_dropout(b, "dropout", n, 2, (const guint64[]){rows, h});
}

/* A model chunk that does not start the model starts from the activation
 * the previous stage sends: data to this stage, with no gradient of its
 * own here (the one backward computes is sent back). */
static guint receive(RokBuilder *b, guint chunk) {
  char prefix[32];
  g_snprintf(prefix, sizeof prefix, "recv%u", chunk);
  trace_builder_enter(b, -1, prefix);
  guint op = trace_build_op(b, "activation", ROK_OP_INPUT, 1, b->seq_tokens, b->model->hidden, 0);
  return ROK_TENSOR(b, "activation", op, b->dtype, b->seq_tokens, b->model->hidden);
}

/* The chunks of a pipeline stage (one without interleaving), each from
 * the embedding or a received activation, the model's last one into the
 * head. */
static void stage_chunks(Stack *st, guint stage, guint tokens, guint labels) {
  RokBuilder *b = st->b;
  const RokModel *m = b->model;
  guint64 first, count, p = m->pipeline_parallel, v = m->virtual_stages;
  rok_model_stage_layers(m, stage, &first, &count);
  guint64 per_chunk = count / v;
  for (guint c = 0; c < v; c++) {
    guint64 global_chunk = c * p + stage, named = v > 1 ? global_chunk * per_chunk : first;
    guint x = global_chunk == 0 ? embed(b, tokens, m->seq_len, "embed") : receive(b, c);
    st->model_offset = (gint64)named - (gint64)(c * per_chunk);
    x = layer_stack(st, x, c * per_chunk, per_chunk, "layer", named, ROK_NO_TENSOR, 0);
    if (global_chunk + 1 == p * v) {
      reassign_to_layer(b, x, -1, "head.input");
      head(b, x, labels, m->seq_len);
    }
  }
  b->trace->layers = (guint)count;
}

RokTrace *rok_trace_new_from_model(const RokModel *m, GError **error) {
  return rok_trace_new_for_stage(m, 0, error);
}

GPtrArray *rok_trace_new_stages(const RokModel *model, GError **error) {
  g_autoptr(GPtrArray) traces = g_ptr_array_new_with_free_func((GDestroyNotify)rok_trace_free);
  for (guint s = 0; s < model->pipeline_parallel; s++) {
    RokTrace *trace = rok_trace_new_for_stage(model, s, error);
    if (trace == NULL)
      return NULL;
    g_ptr_array_add(traces, trace);
  }
  return g_steal_pointer(&traces);
}

RokTrace *rok_trace_new_for_stage(const RokModel *m, guint stage, GError **error) {
  if (stage >= m->pipeline_parallel) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "stage %u: %s has %" G_GUINT64_FORMAT " pipeline stages (0 to %"
                G_GUINT64_FORMAT ")", stage, m->name, m->pipeline_parallel, m->pipeline_parallel - 1);
    return NULL;
  }
  g_autoptr(RokTrace) trace = rok_trace_new(m->name);
  guint64 t = m->tensor_parallel;
  RokBuilder b = {.trace = trace, .model = m, .dtype = m->dtype, .dropout = m->dropout > 0};
  b.mask_dtype = m->mask_bytes == 1 ? ROK_DTYPE_U8 : m->mask_bytes == 2 ? ROK_DTYPE_U16 : ROK_DTYPE_U32;
  Stack st = {.b = &b, .heads = m->heads / t, .kv_heads = local_kv_heads(m), .head_dim = m->head_dim,
              .ffn = m->ffn_hidden / t};
  gboolean t5 = m->arch == ROK_ARCH_T5, first = stage == 0, last = stage + 1 == m->pipeline_parallel;
  guint64 seq = m->seq_len, out_seq = t5 ? m->decoder_seq_len : seq;

  /* Token ids where the embedding is, labels where the loss is. */
  trace_builder_enter(&b, -1, "input");
  guint in = trace_build_op(&b, "batch", ROK_OP_INPUT, 1, seq * m->micro_batch, 1, 0);
  guint tokens = first ? ROK_TENSOR(&b, "tokens", in, ROK_DTYPE_I64, seq * m->micro_batch) : ROK_NO_TENSOR;
  guint dec_tokens = t5 ? ROK_TENSOR(&b, "decoder_tokens", in, ROK_DTYPE_I64, out_seq * m->micro_batch) : 0;
  guint labels = last ? ROK_TENSOR(&b, "labels", in, ROK_DTYPE_I64, out_seq * m->micro_batch) : ROK_NO_TENSOR;
  trace_eager_rotary_tables(&b, in, seq);

  enter_stack(&st, seq);
  if (t5) { /* one stage (config.c) */
    guint x = layer_stack(&st, embed(&b, tokens, seq, "embed"), 0, m->layers, "enc", 0, ROK_NO_TENSOR, 0);
    guint encoder_out = encoder_output(&b, x);
    enter_stack(&st, out_seq);
    x = embed(&b, dec_tokens, out_seq, "decoder_embed");
    x = layer_stack(&st, x, m->layers, m->decoder_layers, "dec", 0, encoder_out, seq);
    trace->layers = m->layers + m->decoder_layers;
    reassign_to_layer(&b, x, -1, "head.input");
    head(&b, x, labels, out_seq);
  } else {
    stage_chunks(&st, stage, tokens, labels);
  }
  trace->model = rok_model_copy(m);
  trace->stage = stage;
  trace->stages = (guint)m->pipeline_parallel;
  trace->chunks = (guint)m->virtual_stages;
  trace->tokens_per_micro_batch = seq * m->micro_batch;
  trace->micro_batches_per_step = rok_model_micro_batches_per_step(m);
  trace_fill_fixed_memory(m, stage, &trace->fixed);
  trace_apply_training(trace, m);
  if (!rok_trace_finish(trace, error))
    return NULL;
  return g_steal_pointer(&trace);
}
