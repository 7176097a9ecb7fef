/* Fixed memory against the public references it follows: Megatron-LM's
 * theoretical memory (megatron/training/theoretical_memory_usage.py,
 * compute_weight_and_optimizer_memory) and DeepSpeed's ZeRO estimators
 * (estimate_zero2_model_states_mem_needs in stage_1_and_2.py,
 * estimate_zero3_model_states_mem_needs in stage3.py), re-derived here from
 * their published formulas, for GPT-3 13B and 175B and LLaMA-2 7B and 70B.
 *
 * Differences, all inside 2%:
 * - Megatron-LM counts parameters by a formula that leaves out biases and
 *   GPT's learned position embeddings (rok counts both: +0.1% for GPT-3
 *   13B) and pads the vocabulary to a multiple of 128 × TP (50257 -> 50304
 *   or 50432: -0.02%); it divides norms by TP where rok replicates them.
 * - DeepSpeed's estimators take the model's parameter count, which rok
 *   computes as Hugging Face's modules hold it, and the largest module,
 *   which for these four is the token embedding in both.
 * - DeepSpeed's ZeRO-2 estimator counts the 16-bit gradients in full (4 +
 *   16/DP), as rok does; DeepSpeed's stage 2 keeps only the partition plus
 *   its reduce buckets persistently, so both are an upper bound there.
 * - DeepSpeed's estimators count no communication buffer; rok adds the
 *   reduce buckets and ZeRO-3's prefetch (checked apart, to the byte, from
 *   DeepSpeed's own rules), so they are taken out before the comparison. */
#include <math.h>
#include <string.h>

#include "rok/model.h"
#include "rok/trace.h"
#include "test-bundled.h"

typedef struct {
  const char *config;
  double padded_vocab_multiple; /* make-vocab-size-divisible-by (128) */
} Case;

static const Case cases[] = {{"gpt3-13b", 128}, {"gpt3-175b", 128}, {"llama2-7b", 128}, {"llama2-70b", 128}};

static guint64 fixed_bytes(const RokModel *m) {
  RokFixedTerm terms[ROK_FIXED_MAX_TERMS];
  guint n = rok_model_fixed_terms(m, 0, terms);
  guint64 sum = 0;
  for (guint i = 0; i < n; i++)
    sum += terms[i].bytes;
  /* The trace's three sums add up to the same terms. */
  GError *error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(m, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(trace->fixed.weight_bytes + trace->fixed.gradient_bytes + trace->fixed.optimizer_bytes, ==, sum);
  return sum;
}

/* compute_weight_and_optimizer_memory, for the dense models here. */
static double megatron_reference(const RokModel *m, double vocab_multiple, gboolean distributed_optimizer) {
  double h = (double)m->hidden, heads = (double)m->heads, groups = (double)m->kv_heads;
  double t = (double)m->tensor_parallel, p = (double)m->pipeline_parallel, layers = (double)m->layers;
  gboolean llama = m->arch == ROK_ARCH_LLAMA;
  double norm = llama ? 1 : 2, gated = llama ? 1.5 : 1;
  double q_ratio = (double)(m->heads * m->head_dim) / h;
  double attn = 2 * h * h * ((1 + groups / heads) * q_ratio);
  double layer = 2 * h * ((double)m->ffn_hidden * gated + norm) + attn;
  double multiple = vocab_multiple * t;
  double vocab = ceil((double)m->vocab / multiple) * multiple;
  double embedding = h * vocab, block = layer * layers + norm * h;
  double shard = (block / p + embedding) / t;
  if (llama && p == 1) /* untied output head */
    shard += embedding / t;
  double per_param = distributed_optimizer ? 6 + 12 / (double)m->data_parallel : 18;
  return shard * per_param;
}

/* Hugging Face's largest module (model_to_params): the token embedding or
 * the MLP's widest matrix with its bias. */
static double largest_module(const RokModel *m) {
  double h = (double)m->hidden, f = (double)m->ffn_hidden;
  double mlp = m->arch == ROK_ARCH_LLAMA ? h * f : h * f + f;
  return MAX((double)m->vocab * h, mlp);
}

static double deepspeed_reference(const RokModel *m, guint zero) {
  double total = (double)rok_model_param_count(m), gpus = (double)m->data_parallel;
  if (zero == 3)
    return 4 * largest_module(m) + floor(18 * total / gpus);
  return 4 * total + floor(16 * total / gpus);
}

static guint64 term(const RokModel *m, const char *name);

/* DeepSpeed's buffers by its own rules (deepspeed/runtime/zero/config.py
 * defaults; stage_1_and_2.py setup_buckets; stage3.py and
 * partitioned_param_coordinator.py), from the config's settings, in its
 * 16-bit dtype (`bytes`). ZeRO-3: `largest` is the gathered module already
 * counted. ZeRO-2 keeps a partition of the gradients and the buckets,
 * counted where they need more than the estimator's full `grads` bytes. */
typedef struct {
  guint64 bucket;
  gboolean overlap;
  guint64 prefetch, live, largest, bytes, grads, dp;
} Ds;

static guint64 deepspeed_buffers(guint zero, Ds d) {
  guint64 buckets = (d.overlap ? 2 : 1) * d.bucket * d.bytes;
  if (zero == 3)
    return d.bucket * d.bytes + MIN(d.prefetch, d.live > d.largest ? d.live - d.largest : 0) * d.bytes;
  if (zero == 2) {
    guint64 held = (d.grads + d.dp - 1) / d.dp + buckets;
    return held > d.grads ? held - d.grads : 0;
  }
  return buckets;
}

static guint64 buffer_terms(const RokModel *m) {
  return term(m, "gradient reduce bucket") + term(m, "gradient reduce buckets (2, overlap_comm)") +
         term(m, "reduce bucket beyond the full gradients") + term(m, "reduce buckets beyond the full gradients") +
         term(m, "prefetched weights");
}

static void check(const char *what, double rok, double reference) {
  double diff = rok / reference - 1;
  g_test_message("%-40s rok %.4g GiB, reference %.4g GiB (%+.2f%%)", what, rok / 1073741824.0,
                 reference / 1073741824.0, 100 * diff);
  g_assert_cmpfloat(fabs(diff), <, 0.02);
}

static void test_megatron(void) {
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    for (guint zero = 0; zero <= 1; zero++) {
      g_autofree char *set = g_strdup_printf("zero_stage=%u", zero);
      const char *sets[] = {set, "framework=\"megatron\"", NULL};
      g_autoptr(RokModel) m = test_bundled_model(cases[i].config, sets);
      g_autofree char *what = g_strdup_printf("%s megatron%s", cases[i].config, zero ? " distributed optimizer" : "");
      check(what, (double)fixed_bytes(m), megatron_reference(m, cases[i].padded_vocab_multiple, zero == 1));
    }
}

/* The same with pipeline parallelism: the first stage's share. */
static void test_megatron_pipeline(void) {
  const char *sets[] = {"pipeline_parallel=4", "zero_stage=1", NULL};
  g_autoptr(RokModel) m = test_bundled_model("llama2-70b", sets);
  check("llama2-70b PP 4, distributed optimizer", (double)fixed_bytes(m), megatron_reference(m, 128, TRUE));
}

/* ZeRO without tensor or pipeline parallelism, as the estimators assume. */
static void test_deepspeed(void) {
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    for (guint zero = 1; zero <= 3; zero++) {
      g_autofree char *set = g_strdup_printf("zero_stage=%u", zero);
      const char *sets[] = {set, "framework=\"deepspeed\"", "tensor_parallel=1", "sequence_parallel=false",
                            "pipeline_parallel=1", NULL};
      g_autoptr(RokModel) m = test_bundled_model(cases[i].config, sets);
      g_autofree char *what = g_strdup_printf("%s deepspeed ZeRO-%u", cases[i].config, zero);
      guint64 buffers = buffer_terms(m);
      check(what, (double)(fixed_bytes(m) - buffers), deepspeed_reference(m, zero));
      /* Every largest module here is far under max_live - prefetch: 5e7 ahead. */
      g_assert_cmpfloat(largest_module(m), <, 1e9 - 5e7);
      Ds d = {500000000, FALSE, 50000000, 1000000000, 0, 2, 2 * rok_model_params_per_gpu(m), m->data_parallel};
      g_assert_cmpuint(buffers, ==, deepspeed_buffers(zero, d));
      if (zero == 2) /* all four are far larger than the buckets */
        g_assert_cmpuint(buffers, ==, 0);
    }
}

static guint64 fixed_with(const char *config, const char *const *sets) {
  g_autoptr(RokModel) m = test_bundled_model(config, sets);
  return fixed_bytes(m);
}

/* Each setting moves the fixed memory by exactly its buffer, and nothing
 * else: with the buffers off, ZeRO-1/2/3 are the estimators' terms alone. */
static void test_deepspeed_buffers(void) {
  guint64 mib = 1048576;
  for (guint zero = 1; zero <= 2; zero++) {
    g_autofree char *z = g_strdup_printf("zero_stage=%u", zero);
    const char *plain[] = {z, "framework=deepspeed", NULL};
    const char *off[] = {z, "framework=deepspeed", "contiguous_gradients=false", NULL};
    const char *overlap[] = {z, "framework=deepspeed", "overlap_comm=true", NULL};
    const char *small[] = {z, "framework=deepspeed", "overlap_comm=true", "reduce_bucket_size=100000000", NULL};
    /* LLaMA-2 7B, and its rank-16 LoRA (40.0 M trained parameters), DP 128. */
    for (guint lora = 0; lora <= 1; lora++) {
      const char *const extra[] = {lora ? "lora_rank=16" : NULL, NULL};
      g_autoptr(RokModel) m = test_bundled_model2("llama2-7b", off, extra);
      guint64 trained = lora ? G_GUINT64_CONSTANT(16) * 32 * (4 * (4096 + 4096) + 3 * (4096 + 11008))
                             : rok_model_params_per_gpu(m);
      g_assert_cmpuint(rok_model_trainable_params_per_gpu(m, 0), ==, trained);
      guint64 base = fixed_bytes(m);
      Ds d = {500000000, FALSE, 0, 0, 0, 2, 2 * trained, 128};
      const char *const *sets[] = {plain, overlap, small};
      const char *labels[] = {"defaults", "overlap_comm", "overlap_comm, reduce_bucket_size 1e8"};
      for (guint k = 0; k < 3; k++) {
        g_autoptr(RokModel) b = test_bundled_model2("llama2-7b", sets[k], extra);
        d.overlap = k > 0;
        d.bucket = k == 2 ? 100000000 : 500000000;
        g_assert_cmpuint(fixed_bytes(b) - base, ==, deepspeed_buffers(zero, d));
        g_assert_cmpuint(buffer_terms(b), ==, deepspeed_buffers(zero, d));
        g_test_message("llama2-7b%s ZeRO-%u, %s: %.1f MiB of reduce buckets counted", lora ? " LoRA" : "", zero,
                       labels[k], (double)deepspeed_buffers(zero, d) / (double)mib);
      }
    }
  }
  /* Without mixed precision the buckets are fp32. */
  const char *pure[] = {"zero_stage=1", "framework=deepspeed", "precision=pure", "dtype=fp32", NULL};
  g_autoptr(RokModel) p = test_bundled_model("llama2-7b", pure);
  g_assert_cmpuint(buffer_terms(p), ==, deepspeed_buffers(1, (Ds){.bucket = 500000000, .bytes = 4}));
  /* ZeRO-3: LLaMA-2 7B's largest module is its 32000 × 4096 embedding. */
  guint64 largest = 32000 * 4096;
  const char *z3[] = {"zero_stage=3", "framework=deepspeed", NULL};
  const char *z3_off[] = {"zero_stage=3", "framework=deepspeed", "contiguous_gradients=false",
                          "stage3_prefetch_bucket_size=0", NULL};
  const char *z3_cap[] = {"zero_stage=3", "framework=deepspeed", "stage3_max_live_parameters=132000000", NULL};
  const char *z3_under[] = {"zero_stage=3", "framework=deepspeed", "stage3_max_live_parameters=100000000", NULL};
  guint64 base3 = fixed_with("llama2-7b", z3_off);
  Ds d3 = {500000000, FALSE, 50000000, 1000000000, largest, 2, 0, 1};
  g_assert_cmpuint(fixed_with("llama2-7b", z3) - base3, ==, deepspeed_buffers(3, d3));
  /* max_live caps the prefetch beside the gathered embedding, counted once. */
  d3.live = 132000000;
  g_assert_cmpuint(fixed_with("llama2-7b", z3_cap) - base3, ==, deepspeed_buffers(3, d3));
  g_assert_cmpuint(deepspeed_buffers(3, d3), ==, 2 * (500000000 + 132000000 - largest));
  g_assert_cmpuint(fixed_with("llama2-7b", z3_under) - base3, ==, 2 * G_GUINT64_CONSTANT(500000000));
  /* With the buffers off, ZeRO-3 is the estimator's 18/DP + 4 × largest layer. */
  g_autoptr(RokModel) m = test_bundled_model("llama2-7b", z3_off);
  g_assert_cmpuint(buffer_terms(m), ==, 0);
  g_assert_cmpuint(term(m, "gathered weights of the largest layer"), ==, 2 * largest);
  g_assert_cmpuint(term(m, "gathered gradients of the largest layer"), ==, 2 * largest);
}

/* Megatron-LM allocates no bucket of its own (its buckets are views into
 * the gradient and parameter buffers): nothing is added, with or without
 * the distributed optimizer, and DeepSpeed ZeRO-0 has none either. */
static void test_megatron_no_buffers(void) {
  for (guint zero = 0; zero <= 1; zero++) {
    g_autofree char *z = g_strdup_printf("zero_stage=%u", zero);
    const char *sets[] = {z, NULL};
    g_autoptr(RokModel) m = test_bundled_model("gpt3-13b", sets);
    RokFixedTerm terms[ROK_FIXED_MAX_TERMS];
    guint n = rok_model_fixed_terms(m, 0, terms);
    for (guint i = 0; i < n; i++)
      g_assert_true(strstr(terms[i].name, "bucket") == NULL && strstr(terms[i].name, "prefetch") == NULL);
  }
  const char *ds0[] = {"zero_stage=0", "framework=deepspeed", NULL};
  g_autoptr(RokModel) d = test_bundled_model("llama2-7b", ds0);
  g_assert_cmpuint(buffer_terms(d), ==, 0);
}

/* The settings belong to DeepSpeed ZeRO and its stages; elsewhere they
 * are errors at the key, never ignored. */
static void test_buffer_errors(void) {
  const struct {
    const char *keys, *expect;
  } cases[] = {
      {"\"zero_stage\": 1,\n \"reduce_bucket_size\": 1000", "b.json:3:24: \"reduce_bucket_size\": is a DeepSpeed ZeRO"},
      {"\"framework\": \"deepspeed\",\n \"overlap_comm\": true", "b.json:3:18: \"overlap_comm\": is a DeepSpeed ZeRO"},
      {"\"framework\": \"deepspeed\", \"zero_stage\": 3,\n \"overlap_comm\": false",
       "b.json:3:18: \"overlap_comm\": false is not modelled under ZeRO-3"},
      {"\"framework\": \"deepspeed\", \"zero_stage\": 2,\n \"stage3_prefetch_bucket_size\": 5",
       "b.json:3:33: \"stage3_prefetch_bucket_size\": is DeepSpeed ZeRO-3's"},
      {"\"framework\": \"deepspeed\", \"zero_stage\": 3,\n \"stage3_max_live_parameters\": -1",
       "b.json:3:32: \"stage3_max_live_parameters\""},
      {"\"framework\": \"deepspeed\", \"zero_stage\": 2,\n \"reduce_bucket_size\": 1099511627777",
       "b.json:3:24: \"reduce_bucket_size\""},
      {"\"framework\": \"deepspeed\", \"zero_stage\": 2,\n \"contiguous_gradients\": 1",
       "b.json:3:26: \"contiguous_gradients\""},
      {"\"framework\": \"deepspeed\", \"zero_stage\": 2,\n \"allgather_bucket_size\": 1", "allgather_bucket_size"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *json = g_strdup_printf("{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 64, \"heads\": 2,\n"
                                            " \"seq_len\": 8, \"micro_batch\": 1, %s}", cases[i].keys);
    GError *error = NULL;
    g_autoptr(RokModel) m = rok_model_parse("b.json", json, strlen(json), NULL, &error);
    g_assert_null(m);
    g_assert_nonnull(error);
    g_test_message("%s", error->message);
    g_assert_cmpint(rok_error_exit_code(error), ==, ROK_EXIT_INVALID);
    if (strstr(error->message, cases[i].expect) == NULL)
      g_error("expected \"%s\" in: %s", cases[i].expect, error->message);
    g_error_free(error);
  }
  /* overlap_comm: true is ZeRO-3's default there, and changes nothing. */
  const char *z3_overlap[] = {"zero_stage=3", "framework=deepspeed", "overlap_comm=true", NULL};
  const char *z3_plain[] = {"zero_stage=3", "framework=deepspeed", NULL};
  g_assert_cmpuint(fixed_with("llama2-7b", z3_overlap), ==, fixed_with("llama2-7b", z3_plain));
  /* Read back from the config rok writes: only what differs from DeepSpeed's defaults. */
  const char *sets[] = {"zero_stage=3", "framework=deepspeed", "stage3_prefetch_bucket_size=7", NULL};
  g_autoptr(RokModel) m = test_bundled_model("llama2-7b", sets);
  json_object *o = rok_model_to_json(m);
  g_assert_cmpuint(json_object_get_uint64(json_object_object_get(o, "stage3_prefetch_bucket_size")), ==, 7);
  g_assert_null(json_object_object_get(o, "reduce_bucket_size"));
  json_object_put(o);
}

/* ZeRO-0 has no estimator: every state on every rank, 2 + 2 (16-bit
 * weights and gradients) + 4 (fp32 gradients) + 4 + 8 (master, m, v). */
static void test_deepspeed_zero0(void) {
  const char *sets[] = {"zero_stage=0", "framework=\"deepspeed\"", "tensor_parallel=1", "sequence_parallel=false",
                        NULL};
  g_autoptr(RokModel) m = test_bundled_model("llama2-7b", sets);
  g_assert_cmpuint(fixed_bytes(m), ==, 20 * rok_model_params_per_gpu(m));
}

/* Gradient dtype: Megatron-LM's 16-bit gradient buffers (--grad-reduce-in-bf16
 * style) make the optimizer keep fp32 copies of its shard. */
static void test_grad_dtype(void) {
  const char *sets[] = {"zero_stage=1", "grad_dtype=\"bf16\"", NULL};
  g_autoptr(RokModel) m = test_bundled_model("llama2-7b", sets);
  guint64 p = rok_model_params_per_gpu(m), dp = m->data_parallel;
  g_assert_cmpuint(fixed_bytes(m), ==, 2 * p + 2 * p + (4 * p + dp - 1) / dp + (4 * p + dp - 1) / dp + (8 * p + dp - 1) / dp);
}

static guint64 term(const RokModel *m, const char *name) {
  RokFixedTerm terms[ROK_FIXED_MAX_TERMS];
  guint n = rok_model_fixed_terms(m, 0, terms);
  for (guint i = 0; i < n; i++)
    if (g_str_equal(terms[i].name, name))
      return terms[i].bytes;
  return 0;
}

/* Optimizer memory of LLaMA-7B pre-training as APOLLO's project page and
 * paper (Zhu et al., arXiv 2412.05270) list it, in GB, pure bf16: 8-bit
 * Adam 13G, APOLLO (rank 256) 1.6G, APOLLO-Mini 0.0G. Their figures count
 * the states of the attention and MLP projections only (8-bit Adam over
 * all 6.74 B parameters would be 13.5 GB; over the 6.48 B of the
 * projections it is 12.96 GB): rok lists AdamW's states of the embeddings,
 * head and norms, which APOLLO's release keeps in a plain AdamW group, as
 * a term apart, and the 8-bit Adam figure is compared on the projections'
 * share of the parameters. */
static void test_optimizer_states(void) {
  const struct {
    const char *optimizer, *rank;
    double gb, tolerance;
  } cases[] = {{"\"adam8bit\"", NULL, 13, 0.5}, {"\"apollo\"", "optimizer_rank=256", 1.6, 0.05},
               {"\"apollo_mini\"", NULL, 0.0, 0.05}};
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *opt = g_strconcat("optimizer=", cases[i].optimizer, NULL);
    const char *sets[] = {opt, "precision=\"pure\"", "zero_stage=0", "data_parallel=1", "global_batch=1",
                          "seq_len=256", cases[i].rank, NULL};
    g_autoptr(RokModel) m = test_bundled_model("llama2-7b", sets);
    double gb = (double)term(m, "optimizer states") / 1e9;
    if (i == 0) /* states in proportion to parameters: the projections' share */
      gb *= (double)(G_GUINT64_CONSTANT(32) * (4 * 4096 * 4096 + 3 * 4096 * 11008)) / (double)rok_model_param_count(m);
    g_test_message("%s: %.3f GB of states, the paper %.1f GB", cases[i].optimizer, gb, cases[i].gb);
    g_assert_cmpfloat(fabs(gb - cases[i].gb), <, cases[i].tolerance);
  }
}

/* APOLLO's step projects every attention and MLP gradient: 2·r·rows·cols
 * FLOPs per matrix, shared over the ZeRO-1 shards; Adam's step has none. */
static void test_optimizer_step_flops(void) {
  guint64 linear = G_GUINT64_CONSTANT(32) * (4 * 4096 * 4096 + 3 * 4096 * 11008);
  const char *apollo[] = {"optimizer=\"apollo\"", "optimizer_rank=256", "zero_stage=0", NULL};
  g_autoptr(RokModel) a = test_bundled_model("llama2-7b", apollo);
  g_assert_cmpuint(rok_model_optimizer_step_flops(a, 0), ==, 2 * 256 * linear);
  const char *mini[] = {"optimizer=\"apollo_mini\"", "zero_stage=1", NULL};
  g_autoptr(RokModel) b = test_bundled_model("llama2-7b", mini);
  g_assert_cmpuint(rok_model_optimizer_step_flops(b, 0), ==, (2 * linear + 127) / 128);
  g_autoptr(RokModel) c = test_bundled_model("llama2-7b", NULL);
  g_assert_cmpuint(rok_model_optimizer_step_flops(c, 0), ==, 0);
}

/* LoRA: rank-16 adapters on every linear layer of LLaMA-2 7B train 40.0 M
 * parameters (r · (in + out) per matrix); the base keeps only its weights,
 * and nf4 stores it in 4.127 bits per parameter (QLoRA). */
static void test_lora(void) {
  const char *sets[] = {"lora_rank=16", "zero_stage=0", "data_parallel=1", "global_batch=1", NULL};
  g_autoptr(RokModel) m = test_bundled_model("llama2-7b", sets);
  g_assert_cmpuint(rok_model_trainable_params_per_gpu(m, 0), ==, 16 * 32 * (4 * (4096 + 4096) + 3 * (4096 + 11008)));
  g_assert_cmpuint(term(m, "fp32 master weights"), ==, 4 * rok_model_trainable_params_per_gpu(m, 0));
  const char *nf4[] = {"lora_rank=16", "lora_base=\"nf4\"", "zero_stage=0", "data_parallel=1", "global_batch=1",
                       NULL};
  g_autoptr(RokModel) q = test_bundled_model("llama2-7b", nf4);
  guint64 linear = G_GUINT64_CONSTANT(32) * (4 * 4096 * 4096 + 3 * 4096 * 11008);
  double bits = 8.0 * (double)term(q, "frozen base weights (nf4)") / (double)linear;
  g_assert_cmpfloat(fabs(bits - (4 + 8.0 / 64 + 32.0 / (64 * 256))), <, 1e-3);
}

/* Frozen layers: their parameters and the embedding's keep weights only. */
static void test_frozen_layers(void) {
  const char *sets[] = {"frozen_layers=16", "zero_stage=0", "data_parallel=1", "global_batch=1", NULL};
  g_autoptr(RokModel) m = test_bundled_model("llama2-7b", sets);
  guint64 layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096;
  g_assert_cmpuint(rok_model_trainable_params_per_gpu(m, 0), ==, rok_model_params_per_gpu(m) - 16 * layer - 32000 * 4096);
}

/* Mixtral 8x7B at PP 4, EP 8, DP 64 under the distributed optimizer: the
 * first stage holds its 8 layers with one expert each and the input
 * embedding (Megatron-LM's most loaded shard); the routed experts' master
 * weights and Adam states are sharded over their expert-data-parallel
 * group (64 / 8 = 8 ranks), the rest over all 64. */
static void test_moe(void) {
  g_autoptr(RokModel) m = test_bundled_model("mixtral-8x7b", NULL);
  guint64 h = 4096, attention = h * 4096 + 2 * h * 1024 + 4096 * h, router = 8 * h;
  guint64 expert = 3 * h * 14336, dense = 8 * (attention + router + 2 * h) + 32000 * h;
  g_assert_cmpuint(rok_model_param_count(m), ==, G_GUINT64_CONSTANT(46702792704));
  g_assert_cmpuint(rok_model_params_per_gpu(m), ==, dense + 8 * expert);
  double master = 4.0 * ((double)dense / 64 + 8.0 * (double)expert / 8);
  g_assert_cmpuint(term(m, "fp32 master weights"), ==, (guint64)ceil(master));
  g_assert_cmpuint(term(m, "optimizer states"), ==, (guint64)ceil(2 * master));
  g_assert_cmpuint(term(m, "gradients (fp32 main grads)"), ==, 4 * (dense + 8 * expert));
  /* Frozen layers take their experts with them. */
  const char *frozen[] = {"frozen_layers=4", NULL};
  g_autoptr(RokModel) f = test_bundled_model("mixtral-8x7b", frozen);
  g_assert_cmpuint(rok_model_trainable_params_per_gpu(f, 0), ==, 4 * (attention + router + 2 * h + expert));
  /* What fixed memory models for dense layers only is refused, not guessed. */
  const char *refused[] = {"lora_rank=16", "optimizer=\"apollo_mini\"", "optimizer=\"adafactor\"",
                           "fp8=\"e4m3\"", "kernels=\"eager\""};
  for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
    g_autofree char *path = g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "models", "mixtral-8x7b.json", NULL);
    const char *sets[] = {refused[i], NULL};
    GError *error = NULL;
    g_autoptr(RokModel) r = rok_model_load(path, sets, &error);
    g_assert_null(r);
    g_assert_nonnull(error);
    g_test_message("%s: %s", refused[i], error->message);
    g_assert_true(strstr(error->message, "not modelled") != NULL);
    g_clear_error(&error);
  }
}

/* Qwen2.5-7B's LoRA (r 16, every linear) trains 40,370,176 parameters as
 * PEFT counts them; a tied head (Gemma 2) is one matrix, counted once. */
static void test_lora_architectures(void) {
  const char *sets[] = {"lora_rank=16", "zero_stage=0", "data_parallel=1", "global_batch=1", NULL};
  g_autoptr(RokModel) q = test_bundled_model("qwen2.5-7b", sets);
  g_assert_cmpuint(rok_model_trainable_params_per_gpu(q, 0), ==, 40370176);
  const char *frozen[] = {"frozen_layers=42", "zero_stage=0", "data_parallel=1", "global_batch=1", NULL};
  g_autoptr(RokModel) g = test_bundled_model("gemma2-9b", frozen);
  g_assert_cmpuint(rok_model_trainable_params_per_gpu(g, 0), ==, 3584); /* the final norm alone */
}

/* One rule for every stage: each stage's 16-bit weights are its
 * rok_model_stage_params (the head on the last stage, uneven stages
 * included), each stage's trace carries its own fixed memory, and frozen
 * layers leave untrained exactly the layers of theirs a stage holds. */
static void test_stages(void) {
  const char *const sets[] = {"pipeline_parallel=4", "first_stage_layers=5", "frozen_layers=9", NULL};
  g_autoptr(RokModel) m = test_bundled_model("llama2-7b", sets);
  guint64 held = 0, trained = 0;
  for (guint s = 0; s < 4; s++) {
    RokFixedTerm terms[ROK_FIXED_MAX_TERMS];
    guint n = rok_model_fixed_terms(m, s, terms);
    g_assert_cmpstr(terms[0].name, ==, "weights (16-bit)");
    g_assert_cmpuint(terms[0].bytes, ==, 2 * rok_model_stage_params(m, s));
    guint64 sum = 0;
    for (guint i = 0; i < n; i++)
      sum += terms[i].bytes;
    GError *error = NULL;
    g_autoptr(RokTrace) trace = rok_trace_new_for_stage(m, s, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(trace->fixed.weight_bytes + trace->fixed.gradient_bytes + trace->fixed.optimizer_bytes, ==, sum);
    g_assert_cmpuint(trace->fixed.params_per_gpu, ==, rok_model_stage_params(m, s));
    held += rok_model_stage_params(m, s);
    trained += rok_model_trainable_params_per_gpu(m, s);
  }
  /* Stage 0 holds 5 layers, the others 9 each: the 9 frozen layers
   * span stages 0 and 1; their parameters and the embedding are all that is
   * untrained (LLaMA's layers are alike). */
  guint64 h = 4096, layer = 4 * h * h + 3 * h * 11008 + 2 * h;
  g_assert_cmpuint(held - trained, ==, 9 * layer + 32000 * h);
  g_assert_cmpuint(held, ==, rok_model_param_count(m));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/fixed-memory/megatron", test_megatron);
  g_test_add_func("/fixed-memory/megatron-pipeline", test_megatron_pipeline);
  g_test_add_func("/fixed-memory/deepspeed", test_deepspeed);
  g_test_add_func("/fixed-memory/deepspeed-zero0", test_deepspeed_zero0);
  g_test_add_func("/fixed-memory/deepspeed-buffers", test_deepspeed_buffers);
  g_test_add_func("/fixed-memory/megatron-no-buffers", test_megatron_no_buffers);
  g_test_add_func("/fixed-memory/buffer-errors", test_buffer_errors);
  g_test_add_func("/fixed-memory/grad-dtype", test_grad_dtype);
  g_test_add_func("/fixed-memory/optimizer-states", test_optimizer_states);
  g_test_add_func("/fixed-memory/lora", test_lora);
  g_test_add_func("/fixed-memory/optimizer-step-flops", test_optimizer_step_flops);
  g_test_add_func("/fixed-memory/frozen-layers", test_frozen_layers);
  g_test_add_func("/fixed-memory/stages", test_stages);
  g_test_add_func("/fixed-memory/moe", test_moe);
  g_test_add_func("/fixed-memory/lora-architectures", test_lora_architectures);
  return g_test_run();
}
