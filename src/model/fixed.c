/* Fixed memory as frameworks spend it: weights, gradients, master weights
 * and optimizer states on one GPU, term by term, and what one optimizer
 * step reads and writes.
 *
 * Bytes per trained parameter under bf16/fp16 mixed precision with Adam
 * (N data-parallel ranks), the two accountings rok follows:
 *
 *   Megatron-LM (megatron/training/theoretical_memory_usage.py): 18 = 2
 *   (16-bit weights) + 4 (fp32 main gradients, accumulated in fp32 by
 *   default under bf16) + 12 (fp32 master weights, Adam m and v); with the
 *   distributed optimizer (zero_stage 1) 6 + 12/N.
 *
 *   DeepSpeed ZeRO (estimate_zero2_model_states_mem_needs in
 *   deepspeed/runtime/zero/stage_1_and_2.py, which serves stages 1 and 2,
 *   and estimate_zero3_model_states_mem_needs in stage3.py): stages 1-2:
 *   4 (16-bit weights and 16-bit gradients, counted in full) + 16/N (fp32
 *   master, m, v and the fp32 gradient partition the optimizer steps
 *   with); stage 3: 18/N (the 16-bit weight partition and those 16) + 4 per
 *   parameter of the largest layer (its gathered 16-bit weights and
 *   gradients). Stage 0 keeps all of it on every rank: 20.
 *
 * Other optimizers change the 12 (master 4 + states); frozen parameters
 * (LoRA's base, frozen layers) keep only their weights. DeepSpeed's
 * communication buffers, which its estimators leave out, are terms of
 * their own (deepspeed_buffers()). */
#include "config-private.h"

#include <math.h>

/* One kind of weight matrix on one GPU: rows × cols, `count` of them. */
typedef struct {
  guint64 rows, cols, count;
  gboolean low_rank;  /* an attention or MLP projection (APOLLO projects these) */
  guint lora;         /* the RokLoraTarget it belongs to; 0: not adaptable */
  gboolean embedding; /* an input embedding (frozen with frozen layers) */
} Matrix;

#define MAX_MATRICES 12

/* The layers of one pipeline stage (rok_model_stage_layers, the one rule
 * for the split) and, of them, those frozen_layers freezes. */
typedef struct {
  guint stage;
  guint64 first, count, frozen;
} Stage;

static Stage stage_of(const RokModel *m, guint stage) {
  Stage s = {.stage = stage};
  rok_model_stage_layers(m, stage, &s.first, &s.count);
  guint64 f = m->train.frozen_layers;
  s.frozen = f > s.first ? MIN(f - s.first, s.count) : 0;
  return s;
}

/* Every weight matrix on one GPU of stage `s`, attention and MLP
 * projections as Hugging Face modules hold them (q, k, v, o; gate and up
 * apart), with the embeddings on the first stage and an untied head (or
 * Megatron's copy of a tied one when pipelining) on the last. Returns how
 * many kinds. Vectors (norms, biases) and BERT's pooler and transform are
 * left out: the caller counts them as the rest. */
static guint matrices(const RokModel *m, const Stage *s, Matrix out[MAX_MATRICES]) {
  guint64 t = m->tensor_parallel, h = m->hidden, f = m->ffn_hidden / t;
  guint64 qw = m->heads * m->head_dim / t, kvw = MAX(m->kv_heads / t, 1) * m->head_dim;
  guint64 stage = s->count;
  guint64 attn = stage, dec = m->arch == ROK_ARCH_T5 ? MIN(m->decoder_layers, stage) : 0;
  guint64 vocab = (rok_model_padded_vocab(m) + t - 1) / t, n = 0;
  attn += dec; /* T5's decoder layers add cross-attention */
  out[n++] = (Matrix){h, qw, attn, TRUE, ROK_LORA_QKV};
  out[n++] = (Matrix){h, kvw, 2 * attn, TRUE, ROK_LORA_QKV};
  out[n++] = (Matrix){qw, h, attn, TRUE, ROK_LORA_PROJ};
  out[n++] = (Matrix){h, f, (m->arch == ROK_ARCH_LLAMA ? 2 : 1) * stage, TRUE, ROK_LORA_FC1};
  out[n++] = (Matrix){f, h, stage, TRUE, ROK_LORA_FC2};
  gboolean first = s->stage == 0, last = s->stage + 1 == m->pipeline_parallel;
  if (first)
    out[n++] = (Matrix){vocab, h, 1, FALSE, 0, TRUE};
  if (first && m->a.positions > 0) /* learned positions (gpt, bert) */
    out[n++] = (Matrix){m->a.positions, h, 1, FALSE, 0, TRUE};
  if (last && (!m->a.tied_embeddings || m->pipeline_parallel > 1))
    out[n++] = (Matrix){vocab, h, 1, FALSE, 0, FALSE};
  return n;
}

/* What one GPU holds and trains. */
typedef struct {
  guint64 all;          /* parameters held in the model's dtype */
  guint64 trained;      /* parameters with gradients and optimizer states */
  guint64 quant_bytes;  /* LoRA's base matrices stored int8 or nf4 */
  guint64 expert;       /* trained routed-expert parameters (of `trained`) */
} Held;

/* LLM.int8: one byte and an fp32 scale per row; nf4 (QLoRA): 4 bits, an
 * 8-bit scale per 64 and an fp32 one per 256 of those (double quantised). */
static guint64 quantised_bytes(const RokModel *m, const Matrix *x) {
  guint64 n = x->rows * x->cols;
  guint64 one = m->train.lora_base == ROK_BASE_INT8 ? n + 4 * x->cols : (n + 1) / 2 + (n + 63) / 64 + 4 * ((n + 16383) / 16384);
  return one * x->count;
}

static Held held(const RokModel *m, const Stage *s) {
  Held p = {.all = rok_model_stage_params(m, s->stage)};
  Matrix x[MAX_MATRICES];
  guint n = matrices(m, s, x);
  if (m->train.lora_rank > 0) {
    guint64 r = m->train.lora_rank;
    for (guint i = 0; i < n; i++) {
      if (!(x[i].lora & m->train.lora_targets))
        continue;
      p.trained += r * (x[i].rows + x[i].cols) * x[i].count; /* A: r × in, B: out × r */
      if (m->train.lora_base != ROK_BASE_DTYPE) {
        p.all -= x[i].rows * x[i].cols * x[i].count;
        p.quant_bytes += quantised_bytes(m, &x[i]);
      }
    }
    p.all += p.trained;
    return p;
  }
  p.trained = p.all;
  if (s->frozen > 0)
    p.trained -= model_layer_params(m, m->tensor_parallel, s->first, s->frozen);
  if (m->train.frozen_layers > 0 && s->stage == 0)
    p.trained -= model_embedding_params(m, m->tensor_parallel);
  guint64 one_rank_experts = m->a.experts / m->a.expert_parallel * 3 * m->hidden *
                             (m->a.expert_ffn_hidden / m->tensor_parallel);
  for (guint64 i = s->first + s->frozen; i < s->first + s->count; i++)
    p.expert += rok_model_is_moe_layer(m, i) ? one_rank_experts : 0;
  return p;
}

/* Matrix-wise optimizers: Adafactor keeps a row and a column second
 * moment per matrix (Shazeer and Stern 2018, no first moment) and a full
 * one for vectors; APOLLO keeps m and v of the rank-r projection, r × the
 * larger side, of each attention and MLP projection, and AdamW's two full
 * states for the rest (embeddings, head, norms), as its release does. */
static void matrix_state_bytes(const RokModel *m, const Stage *st, const Held *p, guint64 s, guint64 *main,
                               guint64 *rest) {
  gboolean adafactor = m->optimizer == ROK_OPTIMIZER_ADAFACTOR;
  if (m->train.lora_rank > 0) { /* adapters: rank-r matrices already */
    *main = adafactor ? s * p->trained : 2 * s * p->trained;
    return;
  }
  Matrix x[MAX_MATRICES];
  guint n = matrices(m, st, x);
  guint64 r = m->train.optimizer_rank, covered = 0;
  double trained_share = st->count == 0 ? 1.0 : (double)(st->count - st->frozen) / (double)st->count;
  *main = *rest = 0;
  for (guint i = 0; i < n; i++) {
    if (m->train.frozen_layers > 0 && x[i].embedding)
      continue;
    guint64 count = x[i].low_rank ? (guint64)((double)x[i].count * trained_share + 0.5) : x[i].count;
    covered += x[i].rows * x[i].cols * count;
    if (adafactor)
      *main += s * (x[i].rows + x[i].cols) * count;
    else if (x[i].low_rank)
      *main += 2 * s * r * MAX(x[i].rows, x[i].cols) * count;
    else
      *rest += 2 * s * x[i].rows * x[i].cols * count;
  }
  guint64 vectors = p->trained > covered ? p->trained - covered : 0; /* norms, biases: full states */
  if (adafactor)
    *main += s * vectors;
  else
    *rest += 2 * s * vectors;
}

/* Bytes of the optimizer's states for the trained parameters, `s` bytes
 * per full-precision state element: `*main` the optimizer's own, `*rest`
 * (APOLLO only) AdamW's two full states for the parameters it does not
 * project. */
static void state_bytes(const RokModel *m, const Stage *st, const Held *p, guint64 s, guint64 *main, guint64 *rest) {
  guint64 t = p->trained;
  *rest = 0;
  switch (m->optimizer) {
  case ROK_OPTIMIZER_ADAM:
  case ROK_OPTIMIZER_ADAMW:
    *main = 2 * s * t;
    return;
  case ROK_OPTIMIZER_SGD:
    *main = m->train.momentum ? s * t : 0;
    return;
  case ROK_OPTIMIZER_ADAM8BIT: /* two 8-bit states, an fp32 absmax per block of 2048 each (Dettmers et al. 2022) */
    *main = 2 * (t + 4 * ((t + 2047) / 2048));
    return;
  case ROK_OPTIMIZER_ADAFACTOR:
  case ROK_OPTIMIZER_APOLLO:
  case ROK_OPTIMIZER_APOLLO_MINI:
    break;
  }
  matrix_state_bytes(m, st, p, s, main, rest);
}

/* Parameters of the layers' attention and MLP matrices on this GPU. */
static guint64 layer_linear_params(const RokModel *m, const Stage *s) {
  Matrix x[MAX_MATRICES];
  guint n = matrices(m, s, x);
  guint64 sum = 0;
  for (guint i = 0; i < n; i++)
    if (x[i].low_rank)
      sum += x[i].rows * x[i].cols * x[i].count;
  return sum;
}

/* The largest module's parameters on this GPU, as DeepSpeed's
 * model_to_params() finds it: the token embedding or the widest MLP
 * matrix. */
static guint64 largest_layer(const RokModel *m) {
  guint64 t = m->tensor_parallel;
  return MAX((rok_model_padded_vocab(m) + t - 1) / t * m->hidden, m->hidden * (m->ffn_hidden / t));
}

/* `bytes` in proportion to the trained parameters, over the ranks that
 * shard them: dense parameters over the `dp` data-parallel ranks, routed
 * experts over their expert-data-parallel group, dp / expert_parallel
 * ranks (Megatron-Core's expert_data_parallel_size with the experts' tensor
 * parallelism equal to the model's; DeepSpeed-MoE's expert data parallel
 * group likewise). */
static guint64 shard(const RokModel *m, const Held *p, guint64 bytes, gboolean sharded, guint64 dp) {
  if (!sharded)
    return bytes;
  if (p->expert == 0 || p->trained == 0)
    return (bytes + dp - 1) / dp;
  double edp = (double)MAX(dp / m->a.expert_parallel, 1), dense = (double)(p->trained - p->expert);
  double share = (dense / (double)dp + (double)p->expert / edp) / (double)p->trained;
  return (guint64)ceil((double)bytes * share);
}

static const char *source_of(const RokModel *m, gboolean mixed) {
  if (!mixed)
    return "pure precision: weights, gradients and states in the model's dtype, no master copy";
  if (m->train.framework == ROK_FRAMEWORK_MEGATRON)
    return m->zero_stage == 1 ? "Megatron-LM theoretical memory, distributed optimizer: 6 + 12/DP B/param"
                              : "Megatron-LM theoretical memory: 18 B/param";
  return m->zero_stage == 3   ? "DeepSpeed ZeRO-3 estimator: 18/DP B/param + 4 B × largest layer"
         : m->zero_stage >= 1 ? "DeepSpeed ZeRO-1/2 estimator: 4 + 16/DP B/param"
                              : "DeepSpeed ZeRO-0: every state on every rank, 20 B/param";
}

static const char *optimizer_source(const RokModel *m) {
  switch (m->optimizer) {
  case ROK_OPTIMIZER_ADAM:
  case ROK_OPTIMIZER_ADAMW:
    return "Adam m and v (Kingma and Ba 2015; AdamW: Loshchilov and Hutter 2019)";
  case ROK_OPTIMIZER_SGD:
    return "SGD momentum buffer (torch.optim.SGD)";
  case ROK_OPTIMIZER_ADAM8BIT:
    return "8-bit block-wise Adam, blocks of 2048 (Dettmers et al., arXiv 2110.02861)";
  case ROK_OPTIMIZER_ADAFACTOR:
    return "Adafactor, factored second moment (Shazeer and Stern, arXiv 1804.04235)";
  case ROK_OPTIMIZER_APOLLO:
  case ROK_OPTIMIZER_APOLLO_MINI:
    break;
  }
  return "APOLLO rank-r projected m and v, AdamW elsewhere (Zhu et al., arXiv 2412.05270)";
}

static guint add(RokFixedTerm *terms, guint n, const char *name, RokFixedKind kind, guint64 bytes,
                 const char *source) {
  if (bytes > 0)
    terms[n++] = (RokFixedTerm){name, kind, bytes, source};
  return n;
}

/* The framework's temporaries that live through backward, DeepSpeed
 * ZeRO's (deepspeed/runtime/zero/config.py for the defaults), each in the
 * 16-bit dtype (the model's without mixed precision):
 *
 *   ZeRO-1/2: with contiguous_gradients, setup_buckets() in
 *   stage_1_and_2.py allocates a reduce bucket of reduce_bucket_size
 *   elements at the first gradient of each backward, and a second one with
 *   overlap_comm (a double buffer, so that one bucket fills while the
 *   other is reduced); they are freed after the reduction, so they stand
 *   beside the activations at the start of backward.
 *   ZeRO-3: stage3.py allocates one reduce bucket at initialisation and
 *   keeps it; its partitioned_param_coordinator.py gathers the parameters
 *   of the module about to run (the largest layer, counted above) and
 *   prefetches the next ones, up to stage3_prefetch_bucket_size elements
 *   and no more than stage3_max_live_parameters live in all (nor more
 *   than the `held` parameters this GPU gathers: a small model's queue
 *   runs out first).
 *
 * Not buffers: allgather_bucket_size (ZeRO-1/2 gather in place into the
 * flat 16-bit weights, all_gather_dp_groups in runtime/utils.py) and
 * Megatron-LM's DDP buckets (views into its one gradient buffer, the fp32
 * main gradients, and with the distributed optimizer its one parameter
 * buffer, the 16-bit weights: param_and_grad_buffer.py). */
static guint deepspeed_buffers(const RokModel *m, const Held *p, RokFixedTerm *terms, guint n) {
  guint64 w = rok_dtype_bytes(m->dtype), size = m->train.ds.reduce_bucket_size, held = p->all;
  if (m->zero_stage == 0)
    return n;
  if (m->zero_stage == 3) {
    if (m->train.ds.contiguous_gradients)
      n = add(terms, n, "gradient reduce bucket", ROK_FIXED_GRADIENTS, size * w,
              "DeepSpeed stage3.py: reduce_bucket_size (5e8) elements, allocated at init");
    guint64 largest = MIN(largest_layer(m), held), live = m->train.ds.max_live_parameters;
    guint64 ahead = MIN(MIN(m->train.ds.prefetch_bucket_size, held - largest), live > largest ? live - largest : 0);
    return add(terms, n, "prefetched weights", ROK_FIXED_WEIGHTS, ahead * w,
               "DeepSpeed partitioned_param_coordinator.py: stage3_prefetch_bucket_size (5e7) gathered ahead, "
               "within stage3_max_live_parameters (1e9)");
  }
  if (!m->train.ds.contiguous_gradients)
    return n;
  gboolean two = m->train.ds.overlap_comm;
  guint64 buckets = (two ? 2 : 1) * size * w;
  if (m->zero_stage == 2) { /* see zero2_gradients() */
    guint64 full = p->trained * rok_dtype_bytes(m->train.grad_dtype);
    guint64 held_grads = shard(m, p, full, TRUE, m->data_parallel) + buckets;
    return add(terms, n, two ? "reduce buckets beyond the full gradients" : "reduce bucket beyond the full gradients",
               ROK_FIXED_GRADIENTS, held_grads > full ? held_grads - full : 0,
               "DeepSpeed stage_1_and_2.py: ZeRO-2's gradient partition and reduce_bucket_size (5e8) bucket(s, "
               "2 with overlap_comm) need more than the full gradients counted above");
  }
  return add(terms, n, two ? "gradient reduce buckets (2, overlap_comm)" : "gradient reduce bucket",
             ROK_FIXED_GRADIENTS, buckets,
             two ? "DeepSpeed stage_1_and_2.py setup_buckets: 2 × reduce_bucket_size (5e8), double-buffered"
                 : "DeepSpeed stage_1_and_2.py setup_buckets: reduce_bucket_size (5e8) elements");
}

/* ZeRO-2 never holds the full gradients its estimator counts: each one is
 * copied into a reduce bucket as backward makes it, reduced, and only this
 * rank's partition kept. rok keeps the estimator's figure, which holds the
 * partition and the buckets for any model larger than them; a model with
 * fewer trained parameters (LoRA) gets what they need beyond it as a term
 * of its own. */
static const char *zero2_gradients(const RokModel *m, const char *src) {
  if (m->train.framework != ROK_FRAMEWORK_DEEPSPEED || m->zero_stage != 2 || !m->train.ds.contiguous_gradients)
    return src;
  return "DeepSpeed ZeRO-1/2 estimator: 4 + 16/DP B/param; ZeRO-2 holds its gradient partition and reduce "
         "buckets in this (what exceeds it: below)";
}

guint rok_model_fixed_terms(const RokModel *m, guint stage, RokFixedTerm terms[ROK_FIXED_MAX_TERMS]) {
  Stage st = stage_of(m, stage);
  Held p = held(m, &st);
  guint64 w = rok_dtype_bytes(m->dtype), g = rok_dtype_bytes(m->train.grad_dtype), dp = m->data_parallel;
  guint64 z = m->zero_stage;
  gboolean mixed = m->precision == ROK_PRECISION_MIXED && m->dtype != ROK_DTYPE_FP32;
  gboolean zero3 = z == 3, ds = m->train.framework == ROK_FRAMEWORK_DEEPSPEED;
  guint64 s = mixed ? 4 : w;
  const char *src = source_of(m, mixed);
  guint n = 0;
  n = add(terms, n, mixed ? "weights (16-bit)" : "weights", ROK_FIXED_WEIGHTS, shard(m, &p, p.all * w, zero3, dp), src);
  n = add(terms, n, m->train.lora_base == ROK_BASE_INT8 ? "frozen base weights (int8)" : "frozen base weights (nf4)",
          ROK_FIXED_WEIGHTS, shard(m, &p, p.quant_bytes, zero3, dp),
          "LLM.int8 (Dettmers et al. 2022) / QLoRA nf4 with double quantisation (Dettmers et al. 2023)");
  if (zero3) { /* the estimator's 18/DP: the gradients live as one fp32 partition */
    n = add(terms, n, mixed ? "gradient partition (fp32)" : "gradient partition", ROK_FIXED_GRADIENTS, shard(m, &p, p.trained * MAX(g, s), TRUE, dp), src);
  } else {
    n = add(terms, n, g == 4 ? "gradients (fp32 main grads)" : "gradients (16-bit)", ROK_FIXED_GRADIENTS,
            p.trained * g, zero2_gradients(m, src));
    if (mixed && g < 4) /* the optimizer steps with fp32 gradients */
      n = add(terms, n, "fp32 gradient partition", ROK_FIXED_OPTIMIZER, shard(m, &p, p.trained * 4, z >= 1, dp), src);
  }
  if (mixed)
    n = add(terms, n, "fp32 master weights", ROK_FIXED_OPTIMIZER, shard(m, &p, p.trained * 4, z >= 1, dp), src);
  guint64 main, rest;
  state_bytes(m, &st, &p, s, &main, &rest);
  n = add(terms, n, "optimizer states", ROK_FIXED_OPTIMIZER, shard(m, &p, main, z >= 1, dp), optimizer_source(m));
  n = add(terms, n, "AdamW states of the unprojected parameters", ROK_FIXED_OPTIMIZER, shard(m, &p, rest, z >= 1, dp),
          "APOLLO's release: embeddings, head and norms in AdamW's group");
  if (m->train.fp8 != ROK_FP8_NONE)
    n = add(terms, n, "fp8 weight copies and transposes", ROK_FIXED_WEIGHTS, 2 * layer_linear_params(m, &st),
            "Transformer Engine: each linear's weight cast to fp8 and transposed, kept across micro-batches");
  if (zero3 && ds) {
    guint64 largest = largest_layer(m);
    n = add(terms, n, "gathered weights of the largest layer", ROK_FIXED_WEIGHTS, largest * w, src);
    n = add(terms, n, "gathered gradients of the largest layer", ROK_FIXED_GRADIENTS, largest * w, src);
  }
  return ds ? deepspeed_buffers(m, &p, terms, n) : n;
}

guint64 rok_model_trainable_params_per_gpu(const RokModel *m, guint stage) {
  Stage st = stage_of(m, stage);
  return held(m, &st).trained;
}

/* Bytes one step moves per trained parameter besides its states: the
 * gradient read by the norm for clipping and by the optimizer (twice by
 * the matrix-wise ones: Adafactor's row and column means, APOLLO's
 * projection and then its scaled update); 16-bit gradients converted into
 * the fp32 partition (read 2, write 4); fp16's dynamic loss scale
 * unscaling them and checking for inf/nan (read and write); the master
 * weights read, written and copied into the 16-bit weights (or the
 * weights read and written without mixed precision). */
static guint64 step_bytes_per_param(const RokModel *m, guint64 s, guint64 w, gboolean mixed) {
  guint64 g = rok_dtype_bytes(m->train.grad_dtype);
  gboolean matrix_wise = m->optimizer == ROK_OPTIMIZER_ADAFACTOR || m->optimizer == ROK_OPTIMIZER_APOLLO ||
                         m->optimizer == ROK_OPTIMIZER_APOLLO_MINI;
  guint64 bytes = g + (matrix_wise ? 2 : 1) * MAX(g, s);
  if (mixed && g < 4)
    bytes += g + 4;
  if (m->dtype == ROK_DTYPE_FP16 && m->precision == ROK_PRECISION_MIXED)
    bytes += 2 * g;
  return bytes + (mixed ? 4 + 4 + 4 + w : 2 * w);
}

/* Plus every state byte of this rank's shard read and written once, as
 * fused multi-tensor kernels do (Apex/Transformer Engine FusedAdam). */
guint64 rok_model_optimizer_step_bytes(const RokModel *m, guint stage) {
  Stage st = stage_of(m, stage);
  Held p = held(m, &st);
  gboolean mixed = m->precision == ROK_PRECISION_MIXED && m->dtype != ROK_DTYPE_FP32;
  guint64 w = rok_dtype_bytes(m->dtype), s = mixed ? 4 : w;
  gboolean sharded = m->zero_stage >= 1;
  guint64 trained = shard(m, &p, p.trained, sharded, m->data_parallel);
  guint64 main, rest;
  state_bytes(m, &st, &p, s, &main, &rest);
  return trained * step_bytes_per_param(m, s, w, mixed) + 2 * shard(m, &p, main + rest, sharded, m->data_parallel);
}

guint64 rok_model_optimizer_step_flops(const RokModel *m, guint stage) {
  if ((m->optimizer != ROK_OPTIMIZER_APOLLO && m->optimizer != ROK_OPTIMIZER_APOLLO_MINI) || m->train.lora_rank > 0)
    return 0;
  Stage st = stage_of(m, stage);
  Matrix x[MAX_MATRICES];
  guint n = matrices(m, &st, x);
  double share = st.count == 0 ? 1.0 : (double)(st.count - st.frozen) / (double)st.count;
  double flops = 0;
  for (guint i = 0; i < n; i++)
    if (x[i].low_rank)
      flops += 2.0 * (double)m->train.optimizer_rank * (double)x[i].rows * (double)x[i].cols * (double)x[i].count;
  double dp = m->zero_stage >= 1 ? (double)m->data_parallel : 1.0;
  return (guint64)ceil(flops * share / dp);
}
