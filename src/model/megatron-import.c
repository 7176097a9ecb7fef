/* Megatron-LM's command-line arguments -> rok model config.
 *
 * The arguments are those of megatron/training/arguments.py (Megatron-LM
 * core_r0.x): model shape, parallelism, mixture of experts, latent
 * attention, precision. "--name value" and "--name=value" both work.
 * Arguments that cannot change activation or parameter memory (learning
 * rate, data paths, logging, fusions, ...) are read past and listed in a
 * note; arguments rok cannot model (context parallelism, an expert tensor
 * parallelism other than tensor parallelism) are
 * refused, and any other argument is an error: a typo must not pass.
 *
 * Defaults are Megatron's: fp32 unless --bf16/--fp16, dropout 0.1, biases
 * on, learned absolute positions, LayerNorm, GeLU, tied embeddings,
 * vocabulary padded to a multiple of 128 × tensor parallelism; with
 * --swiglu the FFN defaults to (8/3)·hidden rounded down to 64. The
 * attention core is flash (Megatron-Core's default backend picks flash or
 * cuDNN's fused attention, neither keeps s² tensors) unless
 * --attention-backend unfused or local. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-arch.h"
#include "rok/core.h"

typedef enum { FLAG, UINT, NUMBER, TEXT } ArgKind;

typedef struct {
  const char *name; /* without the leading "--" */
  ArgKind kind;
  const char *key; /* rok config key set directly; NULL: handled in finish() */
} Arg;

static const Arg args[] = {
    {"num-layers", UINT, "layers"},
    {"hidden-size", UINT, "hidden"},
    {"ffn-hidden-size", UINT, "ffn_hidden"},
    {"num-attention-heads", UINT, "heads"},
    {"kv-channels", UINT, "head_dim"},
    {"group-query-attention", FLAG, NULL},
    {"num-query-groups", UINT, NULL},
    {"seq-length", UINT, "seq_len"},
    {"max-position-embeddings", UINT, NULL},
    {"micro-batch-size", UINT, "micro_batch"},
    {"global-batch-size", UINT, "global_batch"},
    {"tensor-model-parallel-size", UINT, "tensor_parallel"},
    {"pipeline-model-parallel-size", UINT, "pipeline_parallel"},
    {"sequence-parallel", FLAG, "sequence_parallel"},
    {"context-parallel-size", UINT, NULL},
    {"expert-model-parallel-size", UINT, "expert_parallel"},
    {"expert-tensor-parallel-size", UINT, NULL},
    {"num-layers-per-virtual-pipeline-stage", UINT, NULL},
    {"decoder-first-pipeline-num-layers", UINT, "first_stage_layers"},
    {"decoder-last-pipeline-num-layers", UINT, "last_stage_layers"},
    {"num-experts", UINT, "experts"},
    {"moe-router-topk", UINT, NULL},
    {"moe-ffn-hidden-size", UINT, "expert_ffn_hidden"},
    {"moe-shared-expert-intermediate-size", UINT, "shared_expert_ffn_hidden"},
    {"moe-shared-expert-gate", FLAG, "shared_expert_gate"},
    {"moe-layer-freq", TEXT, NULL},
    {"moe-expert-capacity-factor", NUMBER, "capacity_factor"},
    {"moe-aux-loss-coeff", NUMBER, NULL},
    {"moe-router-load-balancing-type", TEXT, NULL},
    {"moe-router-enable-expert-bias", FLAG, "router_bias"},
    {"swiglu", FLAG, NULL},
    {"normalization", TEXT, NULL},
    {"position-embedding-type", TEXT, NULL},
    {"use-rotary-position-embeddings", FLAG, NULL},
    {"disable-bias-linear", FLAG, NULL},
    {"add-qkv-bias", FLAG, NULL},
    {"untie-embeddings-and-output-weights", FLAG, NULL},
    {"make-vocab-size-divisible-by", UINT, "vocab_divisible_by"},
    {"vocab-size", UINT, "vocab"},
    {"use-flash-attn", FLAG, NULL},
    {"attention-backend", TEXT, NULL},
    {"bf16", FLAG, NULL},
    {"fp16", FLAG, NULL},
    {"hidden-dropout", NUMBER, "dropout"},
    {"attention-dropout", NUMBER, NULL},
    {"use-distributed-optimizer", FLAG, NULL},
    {"fp8-format", TEXT, "fp8"}, /* e4m3 or hybrid, the same names as rok's */
    {"multi-latent-attention", FLAG, NULL},
    {"q-lora-rank", UINT, "q_lora_rank"},
    {"kv-lora-rank", UINT, NULL},
    {"qk-head-dim", UINT, NULL},
    {"qk-pos-emb-head-dim", UINT, NULL},
    {"v-head-dim", UINT, NULL},
    {"window-size", TEXT, NULL},
    {"window-attn-skip-freq", UINT, "window_skip"},
};

/* Arguments that change neither activations nor parameters (prefixes end
 * in '-'), and those that are about recomputation, which rok decides. */
static const char *const memory_free[] = {
    "lr",           "lr-",          "min-lr",        "weight-decay",     "clip-grad",        "adam-",
    "sgd-",         "train-",       "eval-",         "log-",             "save",             "save-",
    "load",         "data-",        "split",         "tokenizer-",       "vocab-file",       "merge-file",
    "seed",         "init-method-", "distributed-",  "num-workers",      "tensorboard-",     "wandb-",
    "exit-",        "use-mcore-models", "transformer-impl", "no-",       "bias-",            "masked-softmax-fusion",
    "attention-softmax-in-fp32", "rotary-", "norm-epsilon", "layernorm-epsilon", "overlap-", "ckpt-",
    "use-checkpoint-args", "dataloader-type", "mock-data", "timing-log-", "profile", "manual-gc",
    "moe-token-dispatcher-type", "moe-grouped-gemm", "moe-router-pre-softmax", "moe-router-score-function",
    "moe-router-num-groups", "moe-router-group-topk", "moe-router-topk-scaling-factor", "moe-router-dtype",
    "moe-permute-fusion", "moe-z-loss-coeff", "accumulate-allreduce-grads-in-fp32", "cross-entropy-loss-fusion",
    "recompute-",   "apply-layernorm-1p", "qk-layernorm", "use-torch-fsdp2",
    /* views into the gradient and parameter buffers (docs/training.md, "Framework buffers") */
    "ddp-bucket-size", "ddp-num-buckets", "ddp-pad-buckets-for-high-nccl-busbw", "ddp-average-in-collective", NULL};

typedef struct {
  json_object *out;
  GHashTable *given; /* name -> value ("" for flags) */
  GPtrArray *notes;
  GPtrArray *skipped;
} Megatron;

static void value_free(gpointer v) {
  json_object_put(v);
}

static const Arg *find_arg(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(args); i++)
    if (g_str_equal(args[i].name, name))
      return &args[i];
  return NULL;
}

static gboolean is_memory_free(const char *name) {
  for (const char *const *p = memory_free; *p != NULL; p++)
    if (g_str_has_suffix(*p, "-") ? g_str_has_prefix(name, *p) : g_str_equal(name, *p))
      return TRUE;
  return FALSE;
}

static gboolean usage(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);
static gboolean usage(GError **error, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  g_autofree char *message = g_strdup_vprintf(format, ap);
  va_end(ap);
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "%s", message);
  return FALSE;
}

static gboolean parse_value(const Arg *arg, const char *value, json_object **out, GError **error) {
  char *end = NULL;
  if (arg->kind == UINT) {
    guint64 v = g_ascii_strtoull(value, &end, 10);
    if (*value == '\0' || *end != '\0' || *value == '-' || v > G_MAXUINT32)
      return usage(error, "--%s %s: must be a non-negative integer", arg->name, value);
    *out = json_object_new_uint64(v);
  } else if (arg->kind == NUMBER) {
    double v = g_ascii_strtod(value, &end);
    if (*value == '\0' || *end != '\0' || !(v >= 0 && v < 1e9))
      return usage(error, "--%s %s: must be a non-negative number", arg->name, value);
    *out = rok_json_new_double(v);
  } else {
    *out = json_object_new_string(value);
  }
  return TRUE;
}

/* One argument at argv[*i]; a value that is the next word advances *i. */
static gboolean read_arg(Megatron *mg, int argc, const char *const *argv, int *i, GError **error) {
  const char *word = argv[*i];
  if (!g_str_has_prefix(word, "--") || word[2] == '\0')
    return usage(error, "%s: not a Megatron-LM argument (they start with --)", word);
  g_autofree char *name = g_strdup(word + 2);
  char *eq = strchr(name, '=');
  const char *value = NULL;
  if (eq != NULL) {
    *eq = '\0';
    value = eq + 1;
  }
  const Arg *arg = find_arg(name);
  if (arg == NULL) {
    if (!is_memory_free(name))
      return usage(error, "--%s: a Megatron-LM argument rok does not know (it reads the model, parallelism, "
                          "MoE and precision arguments; see `rok import --help`)", name);
    g_ptr_array_add(mg->skipped, g_strconcat("--", name, NULL));
    if (value == NULL && *i + 1 < argc && !g_str_has_prefix(argv[*i + 1], "--"))
      (*i)++;
    return TRUE;
  }
  if (arg->kind == FLAG && value != NULL)
    return usage(error, "--%s takes no value", name);
  if (arg->kind != FLAG && value == NULL) {
    if (*i + 1 >= argc)
      return usage(error, "--%s needs a value", name);
    value = argv[++(*i)];
  }
  json_object *v = arg->kind == FLAG ? json_object_new_boolean(TRUE) : NULL;
  if (v == NULL && !parse_value(arg, value, &v, error))
    return FALSE;
  if (arg->key != NULL)
    json_object_object_add(mg->out, arg->key, json_object_get(v));
  g_hash_table_insert(mg->given, g_strdup(name), v);
  return TRUE;
}

static json_object *given(const Megatron *mg, const char *name) {
  return g_hash_table_lookup(mg->given, name);
}

static guint64 given_uint(const Megatron *mg, const char *name, guint64 fallback) {
  json_object *v = given(mg, name);
  return v == NULL ? fallback : json_object_get_uint64(v);
}

static const char *given_text(const Megatron *mg, const char *name, const char *fallback) {
  json_object *v = given(mg, name);
  return v == NULL ? fallback : json_object_get_string(v);
}

static void set(Megatron *mg, const char *key, json_object *v) {
  json_object_object_add(mg->out, key, v);
}

/* --normalization, --swiglu, positions and biases pick rok's arch. */
static gboolean finish_arch(Megatron *mg, GError **error) {
  const char *norm = given_text(mg, "normalization", "LayerNorm");
  const char *pos = given_text(mg, "position-embedding-type", given(mg, "use-rotary-position-embeddings") ? "rope"
                                                                                                         : "learned_absolute");
  gboolean swiglu = given(mg, "swiglu") != NULL, bias = given(mg, "disable-bias-linear") == NULL;
  gboolean rms = g_str_equal(norm, "RMSNorm"), rope = g_str_equal(pos, "rope");
  if (!rms && !g_str_equal(norm, "LayerNorm"))
    return usage(error, "--normalization %s: rok models LayerNorm and RMSNorm", norm);
  if (!rope && !g_str_equal(pos, "learned_absolute"))
    return usage(error, "--position-embedding-type %s: rok models learned_absolute and rope", pos);
  if (rms && swiglu && rope && !bias) { /* LLaMA's layer */
    set(mg, "arch", json_object_new_string("llama"));
    set(mg, "qkv_bias", json_object_new_boolean(given(mg, "add-qkv-bias") != NULL));
  } else if (!rms && !swiglu && bias) { /* GPT's layer, learned or rotary positions */
    set(mg, "arch", json_object_new_string("gpt"));
    set(mg, "positions", json_object_new_uint64(rope ? 0
                                                     : given_uint(mg, "max-position-embeddings",
                                                                  given_uint(mg, "seq-length", 0))));
  } else {
    return usage(error, "--normalization %s%s --position-embedding-type %s%s: rok models LLaMA's layer (RMSNorm, "
                        "--swiglu, rope, --disable-bias-linear) and GPT's (LayerNorm, GeLU, biases)",
                 norm, swiglu ? " --swiglu" : "", pos, bias ? "" : " --disable-bias-linear");
  }
  guint64 h = given_uint(mg, "hidden-size", 0);
  if (swiglu && given(mg, "ffn-hidden-size") == NULL && h > 0)
    set(mg, "ffn_hidden", json_object_new_uint64(h * 8 / 3 / 64 * 64));
  set(mg, "tied_embeddings", json_object_new_boolean(given(mg, "untie-embeddings-and-output-weights") == NULL));
  return TRUE;
}

static gboolean finish_attention(Megatron *mg, GError **error) {
  if (given(mg, "group-query-attention") != NULL && given(mg, "num-query-groups") != NULL)
    set(mg, "kv_heads", json_object_new_uint64(given_uint(mg, "num-query-groups", 1)));
  else if (given(mg, "num-query-groups") != NULL)
    g_ptr_array_add(mg->notes, g_strdup("--num-query-groups without --group-query-attention: Megatron-LM ignores "
                                        "it, and so does rok"));
  const char *backend = given_text(mg, "attention-backend", "auto");
  gboolean standard = g_str_equal(backend, "unfused") || g_str_equal(backend, "local");
  if (!standard && !g_str_equal(backend, "auto") && !g_str_equal(backend, "flash") && !g_str_equal(backend, "fused"))
    return usage(error, "--attention-backend %s: rok knows flash, fused, unfused, local and auto", backend);
  set(mg, "attention", json_object_new_string(standard && given(mg, "use-flash-attn") == NULL ? "standard" : "flash"));
  const char *window = given_text(mg, "window-size", NULL);
  if (window != NULL) {
    g_auto(GStrv) parts = g_strsplit_set(window, "(), ", -1);
    guint64 left = 0;
    for (char **p = parts; *p != NULL; p++)
      if (**p != '\0') {
        left = g_ascii_strtoull(*p, NULL, 10);
        break;
      }
    if (left == 0)
      return usage(error, "--window-size %s: give the window as (LEFT,RIGHT), LEFT > 0", window);
    set(mg, "sliding_window", json_object_new_uint64(left));
  }
  if (given(mg, "multi-latent-attention") != NULL) { /* Megatron's MLA defaults */
    guint64 nope = given_uint(mg, "qk-head-dim", 128), rope = given_uint(mg, "qk-pos-emb-head-dim", 64);
    set(mg, "head_dim", json_object_new_uint64(nope + rope));
    set(mg, "rope_head_dim", json_object_new_uint64(rope));
    set(mg, "kv_lora_rank", json_object_new_uint64(given_uint(mg, "kv-lora-rank", 32)));
    set(mg, "v_head_dim", json_object_new_uint64(given_uint(mg, "v-head-dim", 128)));
    json_object_object_del(mg->out, "kv_heads");
  }
  return TRUE;
}

/* "--moe-layer-freq N" or "([0]*K+[1]*M)": K leading dense layers. */
static gboolean finish_moe_freq(Megatron *mg, const char *freq, GError **error) {
  guint64 dense = 0, moe = 0;
  char tail = 0;
  if (sscanf(freq, "([0]*%" G_GUINT64_FORMAT "+[1]*%" G_GUINT64_FORMAT ")%c", &dense, &moe, &tail) == 2 && moe > 0) {
    set(mg, "moe_first_dense", json_object_new_uint64(dense));
    return TRUE;
  }
  char *end = NULL;
  guint64 n = g_ascii_strtoull(freq, &end, 10);
  if (*freq == '\0' || *end != '\0' || n == 0)
    return usage(error, "--moe-layer-freq %s: rok models an integer N or \"([0]*K+[1]*M)\"", freq);
  set(mg, "moe_layer_freq", json_object_new_uint64(n));
  return TRUE;
}

static gboolean finish_moe(Megatron *mg, GError **error) {
  if (given_uint(mg, "num-experts", 0) == 0)
    return TRUE;
  set(mg, "top_k", json_object_new_uint64(given_uint(mg, "moe-router-topk", 2)));
  const char *balance = given_text(mg, "moe-router-load-balancing-type", "aux_loss");
  json_object *coeff = given(mg, "moe-aux-loss-coeff");
  gboolean none = g_str_equal(balance, "none");
  if (!none && !g_str_equal(balance, "aux_loss") && !g_str_equal(balance, "seq_aux_loss"))
    return usage(error, "--moe-router-load-balancing-type %s: rok models aux_loss, seq_aux_loss and none", balance);
  set(mg, "aux_loss", rok_json_new_double(none || coeff == NULL ? 0.0 : json_object_get_double(coeff)));
  const char *freq = given_text(mg, "moe-layer-freq", NULL);
  return freq == NULL || finish_moe_freq(mg, freq, error);
}

static gboolean refuse_unmodelled(const Megatron *mg, GError **error) {
  guint64 t = given_uint(mg, "tensor-model-parallel-size", 1);
  if (given_uint(mg, "context-parallel-size", 1) > 1)
    return usage(error, "--context-parallel-size %" G_GUINT64_FORMAT ": context parallelism (ring attention's "
                        "saved tensors and exchange) is not modelled by rok",
                 given_uint(mg, "context-parallel-size", 1));
  if (given(mg, "expert-tensor-parallel-size") != NULL && given_uint(mg, "expert-tensor-parallel-size", t) != t)
    return usage(error, "--expert-tensor-parallel-size: rok models experts split like the dense layers "
                        "(--tensor-model-parallel-size)");
  if (given(mg, "num-layers-per-virtual-pipeline-stage") != NULL) {
    /* rok counts model chunks per stage: layers / (stages · layers per chunk). */
    guint64 per_chunk = given_uint(mg, "num-layers-per-virtual-pipeline-stage", 1);
    guint64 chunk_layers = per_chunk * given_uint(mg, "pipeline-model-parallel-size", 1);
    guint64 layers = given_uint(mg, "num-layers", 0);
    if (per_chunk == 0 || layers % chunk_layers != 0)
      return usage(error, "--num-layers-per-virtual-pipeline-stage %" G_GUINT64_FORMAT ": --num-layers is not a "
                          "multiple of it times --pipeline-model-parallel-size",
                   per_chunk);
    set((Megatron *)mg, "virtual_stages", json_object_new_uint64(layers / chunk_layers));
  }
  if (given(mg, "vocab-size") == NULL)
    return usage(error, "--vocab-size: needed (Megatron-LM takes it from the tokenizer, which rok does not read)");
  return TRUE;
}

static void finish_training(Megatron *mg) {
  set(mg, "dtype", json_object_new_string(given(mg, "bf16") ? "bf16" : given(mg, "fp16") ? "fp16" : "fp32"));
  if (given(mg, "hidden-dropout") == NULL)
    set(mg, "dropout", rok_json_new_double(0.1));
  json_object *attention = given(mg, "attention-dropout");
  double hidden = json_object_get_double(json_object_object_get(mg->out, "dropout"));
  if (json_object_get_double(attention) != hidden && attention != NULL)
    g_ptr_array_add(mg->notes, g_strdup_printf("--attention-dropout differs from --hidden-dropout: rok uses one "
                                               "probability, %g, for both", hidden));
  if (given(mg, "make-vocab-size-divisible-by") == NULL)
    set(mg, "vocab_divisible_by", json_object_new_uint64(128));
  if (given(mg, "use-distributed-optimizer") != NULL)
    set(mg, "zero_stage", json_object_new_uint64(1));
}

json_object *rok_model_megatron_to_config(int argc, const char *const *argv, char ***notes, GError **error) {
  g_autoptr(GHashTable) table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, value_free);
  g_autoptr(GPtrArray) note_list = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) skipped = g_ptr_array_new_with_free_func(g_free);
  Megatron mg = {.out = json_object_new_object(), .given = table, .notes = note_list, .skipped = skipped};
  set(&mg, "name", json_object_new_string("megatron"));
  set(&mg, "source", json_object_new_string("Megatron-LM arguments, imported by rok"));
  gboolean ok = TRUE;
  for (int i = 0; ok && i < argc; i++)
    ok = read_arg(&mg, argc, argv, &i, error);
  ok = ok && refuse_unmodelled(&mg, error) && finish_arch(&mg, error) && finish_attention(&mg, error) &&
       finish_moe(&mg, error);
  if (!ok) {
    json_object_put(mg.out);
    return NULL;
  }
  finish_training(&mg);
  if (skipped->len > 0) {
    g_ptr_array_add(skipped, NULL);
    g_autofree char *list = g_strjoinv(" ", (char **)skipped->pdata);
    g_ptr_array_add(note_list, g_strdup_printf("read past (no effect on memory, or rok decides it): %s", list));
  }
  if (notes != NULL) {
    g_ptr_array_add(note_list, NULL);
    *notes = (char **)g_ptr_array_steal(note_list, NULL);
  }
  return mg.out;
}
