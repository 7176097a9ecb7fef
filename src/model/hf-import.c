/* Hugging Face config.json -> rok model config.
 *
 * Each supported model_type maps the fields transformers builds the model
 * from (num_hidden_layers, hidden_size, ...) to rok's, so that the
 * parameters rok counts are those transformers instantiates. Fields that
 * change the model but rok cannot express are refused, naming them; those
 * that change only numerics (rope scaling, epsilons) are not read. What rok
 * approximates is said in the config's "source" and in the notes.
 *
 * The training side is not in a config.json: seq_len defaults to the
 * model's context length up to 4096, micro_batch to 1, flash attention,
 * bf16, no parallelism;
 * --set or an overlay file changes them. */
#include <string.h>

#include "config-arch.h"
#include "rok/core.h"

#define DEFAULT_SEQ_LEN 4096

typedef struct {
  const RokJsonObj *hf;
  json_object *out;
  GPtrArray *approx; /* what rok approximates, one phrase each */
} Import;

typedef gboolean (*MapFn)(Import *im, GError **error);

/* A member that may be absent or null (transformers' "None"). */
static gboolean is_null(const RokJsonObj *o, const char *key) {
  json_object *v = NULL;
  return !json_object_object_get_ex(o->obj, key, &v) || v == NULL;
}

/* hf_key as rok_key: a positive integer when required; otherwise absent,
 * null or a count that may be 0 ("none"), left out of the config then. */
static gboolean get_uint(Import *im, const char *hf_key, const char *rok_key, gboolean required, GError **error) {
  guint64 v = 0;
  if (!required && is_null(im->hf, hf_key))
    return TRUE;
  if (!rok_json_get_uint(im->hf, hf_key, TRUE, required ? 1 : 0, G_MAXUINT32, &v, error))
    return FALSE;
  if (v > 0)
    json_object_object_add(im->out, rok_key, json_object_new_uint64(v));
  return TRUE;
}

static gboolean get_bool(Import *im, const char *hf_key, gboolean fallback, gboolean *out, GError **error) {
  *out = fallback;
  return is_null(im->hf, hf_key) || rok_json_get_bool(im->hf, hf_key, TRUE, out, error);
}

/* A field whose only value rok models is `expected`. */
static gboolean require_bool(Import *im, const char *key, gboolean fallback, gboolean expected, const char *why,
                             GError **error) {
  gboolean v;
  if (!get_bool(im, key, fallback, &v, error))
    return FALSE;
  if (v != expected) {
    g_autofree char *path = g_strdup(key);
    rok_json_error(error, im->hf->doc, path, "%s is not modelled by rok (%s)", v ? "true" : "false", why);
    return FALSE;
  }
  return TRUE;
}

static gboolean require_string(Import *im, const char *key, const char *const *allowed, const char *why,
                               GError **error) {
  g_autofree char *v = NULL;
  if (is_null(im->hf, key))
    return TRUE;
  if (!rok_json_get_string(im->hf, key, TRUE, &v, error))
    return FALSE;
  if (!g_strv_contains(allowed, v)) {
    rok_json_error(error, im->hf->doc, key, "\"%s\" is not modelled by rok (%s)", v, why);
    return FALSE;
  }
  return TRUE;
}

static void set_bool(Import *im, const char *key, gboolean v) {
  json_object_object_add(im->out, key, json_object_new_boolean(v));
}

static void set_string(Import *im, const char *key, const char *v) {
  json_object_object_add(im->out, key, json_object_new_string(v));
}

static gboolean tied(Import *im, gboolean fallback, GError **error) {
  gboolean v;
  if (!get_bool(im, "tie_word_embeddings", fallback, &v, error))
    return FALSE;
  set_bool(im, "tied_embeddings", v);
  return TRUE;
}

/* The shape every decoder family shares under LLaMA's names. */
static gboolean decoder_shape(Import *im, GError **error) {
  set_string(im, "arch", "llama");
  return get_uint(im, "num_hidden_layers", "layers", TRUE, error) &&
         get_uint(im, "hidden_size", "hidden", TRUE, error) &&
         get_uint(im, "num_attention_heads", "heads", TRUE, error) &&
         get_uint(im, "num_key_value_heads", "kv_heads", FALSE, error) &&
         get_uint(im, "head_dim", "head_dim", FALSE, error) &&
         get_uint(im, "intermediate_size", "ffn_hidden", TRUE, error) &&
         get_uint(im, "vocab_size", "vocab", TRUE, error);
}

static gboolean llama_shape(Import *im, GError **error) {
  static const char *const silu[] = {"silu", "swish", NULL};
  return decoder_shape(im, error) && require_string(im, "hidden_act", silu, "the MLP is SwiGLU", error);
}

static gboolean map_llama(Import *im, GError **error) {
  return llama_shape(im, error) &&
         require_bool(im, "attention_bias", FALSE, FALSE, "biases on q, k, v and the output projection", error) &&
         require_bool(im, "mlp_bias", FALSE, FALSE, "biases in the MLP", error) && tied(im, FALSE, error);
}

static gboolean map_mistral(Import *im, GError **error) {
  return llama_shape(im, error) && tied(im, FALSE, error) &&
         get_uint(im, "sliding_window", "sliding_window", FALSE, error);
}

static gboolean moe_common(Import *im, const char *experts, const char *coef, GError **error) {
  double aux = 0;
  if (!get_uint(im, experts, "experts", TRUE, error) ||
      !get_uint(im, "num_experts_per_tok", "top_k", TRUE, error) ||
      (!is_null(im->hf, coef) && !rok_json_get_double(im->hf, coef, TRUE, 0, 1e6, &aux, error)))
    return FALSE;
  json_object_object_add(im->out, "aux_loss", rok_json_new_double(aux));
  return TRUE;
}

static gboolean map_mixtral(Import *im, GError **error) {
  if (!map_mistral(im, error) || !moe_common(im, "num_local_experts", "router_aux_loss_coef", error))
    return FALSE;
  json_object_object_add(im->out, "expert_ffn_hidden",
                         json_object_get(json_object_object_get(im->out, "ffn_hidden")));
  return TRUE;
}

static gboolean qwen_window(Import *im, GError **error) {
  return require_bool(im, "use_sliding_window", FALSE, FALSE,
                      "which layers use Qwen2's window differs between transformers versions", error);
}

static gboolean map_qwen2(Import *im, GError **error) {
  set_bool(im, "qkv_bias", TRUE);
  return llama_shape(im, error) && tied(im, FALSE, error) && qwen_window(im, error);
}

static gboolean map_qwen2_moe(Import *im, GError **error) {
  guint64 step = 1;
  json_object *dense_only = NULL;
  if (!map_qwen2(im, error) || !moe_common(im, "num_experts", "router_aux_loss_coef", error) ||
      !get_uint(im, "moe_intermediate_size", "expert_ffn_hidden", TRUE, error) ||
      !get_uint(im, "shared_expert_intermediate_size", "shared_expert_ffn_hidden", FALSE, error) ||
      (!is_null(im->hf, "decoder_sparse_step") &&
       !rok_json_get_uint(im->hf, "decoder_sparse_step", TRUE, 1, 1, &step, error)) ||
      !rok_json_get_array(im->hf, "mlp_only_layers", FALSE, &dense_only, error))
    return FALSE;
  if (dense_only != NULL && json_object_array_length(dense_only) > 0) {
    rok_json_error(error, im->hf->doc, "mlp_only_layers", "dense layers among MoE ones are not modelled by rok");
    return FALSE;
  }
  /* transformers always builds the shared expert with its sigmoid gate. */
  set_bool(im, "shared_expert_gate", TRUE);
  return TRUE;
}

static gboolean map_gemma2(Import *im, GError **error) {
  static const char *const gelu[] = {"gelu_pytorch_tanh", "gelu", NULL};
  set_bool(im, "post_norms", TRUE);
  json_object_object_add(im->out, "window_skip", json_object_new_uint64(2));
  g_ptr_array_add(im->approx, g_strdup("GeGLU counted as SwiGLU (same shapes, the same saved [gate|up])"));
  g_ptr_array_add(im->approx, g_strdup("attention and final logit soft-capping and the embedding scale are "
                                       "element-wise work, not counted"));
  return decoder_shape(im, error) &&
         require_string(im, "hidden_activation", gelu, "the MLP is a gated GeLU", error) &&
         require_bool(im, "attention_bias", FALSE, FALSE, "biases on attention projections", error) &&
         tied(im, TRUE, error) && get_uint(im, "sliding_window", "sliding_window", TRUE, error);
}

static gboolean dropout(Import *im, const char *key, double fallback, GError **error) {
  double p = fallback;
  if (!is_null(im->hf, key) && !rok_json_get_double(im->hf, key, TRUE, 0, 0.99, &p, error))
    return FALSE;
  json_object_object_add(im->out, "dropout", rok_json_new_double(p));
  return TRUE;
}

static gboolean map_gpt2(Import *im, GError **error) {
  set_string(im, "arch", "gpt");
  if (!get_uint(im, "n_layer", "layers", TRUE, error) || !get_uint(im, "n_embd", "hidden", TRUE, error) ||
      !get_uint(im, "n_head", "heads", TRUE, error) || !get_uint(im, "vocab_size", "vocab", TRUE, error) ||
      !get_uint(im, "n_positions", "positions", TRUE, error) || !get_uint(im, "n_inner", "ffn_hidden", FALSE, error) ||
      !dropout(im, "resid_pdrop", 0.1, error) || !tied(im, TRUE, error))
    return FALSE;
  return TRUE; /* n_inner null: 4 × hidden, rok's default too */
}

static gboolean map_gpt_neox(Import *im, GError **error) {
  gboolean parallel;
  set_string(im, "arch", "gpt");
  json_object_object_add(im->out, "positions", json_object_new_uint64(0));
  g_ptr_array_add(im->approx, g_strdup("partial rotary (rotary_pct) costed as rotary over the whole head"));
  if (!get_uint(im, "num_hidden_layers", "layers", TRUE, error) ||
      !get_uint(im, "hidden_size", "hidden", TRUE, error) ||
      !get_uint(im, "num_attention_heads", "heads", TRUE, error) ||
      !get_uint(im, "intermediate_size", "ffn_hidden", TRUE, error) ||
      !get_uint(im, "vocab_size", "vocab", TRUE, error) || !dropout(im, "hidden_dropout", 0, error) ||
      !require_bool(im, "attention_bias", TRUE, TRUE, "GPT-style layers have every bias", error) ||
      !get_bool(im, "use_parallel_residual", TRUE, &parallel, error) || !tied(im, FALSE, error))
    return FALSE;
  set_bool(im, "parallel_residual", parallel);
  return TRUE;
}

static gboolean map_deepseek(Import *im, GError **error) {
  guint64 nope = 0, rope = 0, shared = 0, expert = 0;
  g_autofree char *method = NULL;
  if (!llama_shape(im, error) || !tied(im, FALSE, error) ||
      !rok_json_get_uint(im->hf, "qk_nope_head_dim", TRUE, 1, G_MAXUINT32, &nope, error) ||
      !rok_json_get_uint(im->hf, "qk_rope_head_dim", TRUE, 1, G_MAXUINT32, &rope, error) ||
      !get_uint(im, "kv_lora_rank", "kv_lora_rank", TRUE, error) ||
      !get_uint(im, "q_lora_rank", "q_lora_rank", FALSE, error) ||
      !get_uint(im, "v_head_dim", "v_head_dim", TRUE, error) ||
      !moe_common(im, "n_routed_experts", "aux_loss_alpha", error) ||
      !rok_json_get_uint(im->hf, "moe_intermediate_size", TRUE, 1, G_MAXUINT32, &expert, error) ||
      (!is_null(im->hf, "n_shared_experts") &&
       !rok_json_get_uint(im->hf, "n_shared_experts", TRUE, 0, 1024, &shared, error)) ||
      !get_uint(im, "first_k_dense_replace", "moe_first_dense", FALSE, error) ||
      !get_uint(im, "moe_layer_freq", "moe_layer_freq", FALSE, error) ||
      (!is_null(im->hf, "topk_method") && !rok_json_get_string(im->hf, "topk_method", TRUE, &method, error)))
    return FALSE;
  json_object_object_del(im->out, "kv_heads"); /* every head has its own keys */
  json_object_object_add(im->out, "head_dim", json_object_new_uint64(nope + rope));
  json_object_object_add(im->out, "rope_head_dim", json_object_new_uint64(rope));
  json_object_object_add(im->out, "expert_ffn_hidden", json_object_new_uint64(expert));
  json_object_object_add(im->out, "shared_expert_ffn_hidden", json_object_new_uint64(shared * expert));
  set_bool(im, "router_bias", method != NULL && g_str_equal(method, "noaux_tc"));
  g_ptr_array_add(im->approx, g_strdup("latent attention's core is standard or flash attention over the "
                                       "up-projected keys and values (no absorbed-weight kernel)"));
  g_ptr_array_add(im->approx, g_strdup("group-limited routing costed as plain top-k"));
  if (!is_null(im->hf, "num_nextn_predict_layers"))
    g_ptr_array_add(im->approx, g_strdup("the multi-token-prediction layers (num_nextn_predict_layers) are left "
                                         "out, as transformers leaves them out"));
  return TRUE;
}

typedef struct {
  const char *type;
  const char *family;
  MapFn map;
} Family;

static const Family families[] = {
    {"llama", "LLaMA 2/3/3.1/3.2", map_llama},
    {"mistral", "Mistral", map_mistral},
    {"mixtral", "Mixtral", map_mixtral},
    {"qwen2", "Qwen2/2.5", map_qwen2},
    {"qwen2_moe", "Qwen1.5/2 MoE", map_qwen2_moe},
    {"gpt2", "GPT-2", map_gpt2},
    {"gpt_neox", "GPT-NeoX/Pythia", map_gpt_neox},
    {"gemma2", "Gemma 2", map_gemma2},
    {"deepseek_v2", "DeepSeek-V2", map_deepseek},
    {"deepseek_v3", "DeepSeek-V3", map_deepseek},
};

const char *const *rok_model_hf_types(void) {
  static const char *types[G_N_ELEMENTS(families) + 1];
  for (guint i = 0; i < G_N_ELEMENTS(families); i++)
    types[i] = families[i].type;
  return types;
}

gboolean rok_model_doc_is_hf(const RokJsonDoc *doc) {
  json_object *root = rok_json_doc_root(doc);
  return json_object_is_type(root, json_type_object) &&
         (json_object_object_get_ex(root, "model_type", NULL) || json_object_object_get_ex(root, "architectures", NULL));
}

static const Family *find_family(const RokJsonObj *root, GError **error) {
  g_autofree char *type = NULL;
  if (!rok_json_get_string(root, "model_type", TRUE, &type, error))
    return NULL;
  for (guint i = 0; i < G_N_ELEMENTS(families); i++)
    if (g_str_equal(families[i].type, type))
      return &families[i];
  g_autofree char *known = g_strjoinv(", ", (char **)rok_model_hf_types());
  rok_json_error(error, root->doc, "model_type", "\"%s\" is not a model type rok imports (supported: %s)", type,
                 known);
  return NULL;
}

/* "meta-llama/Llama-3.1-8B" -> "Llama-3.1-8B"; else the file's name. */
static char *model_name(const RokJsonObj *root) {
  g_autofree char *path = NULL;
  if (!is_null(root, "_name_or_path") && rok_json_get_string(root, "_name_or_path", TRUE, &path, NULL) &&
      *path != '\0') {
    g_strstrip(path);
    char *slash = strrchr(path, '/');
    if (slash == NULL || slash[1] != '\0')
      return g_strdup(slash == NULL ? path : slash + 1);
  }
  g_autofree char *base = g_path_get_basename(rok_json_doc_name(root->doc));
  if (g_str_has_suffix(base, ".json"))
    base[strlen(base) - 5] = '\0';
  return g_strdup(base);
}

/* What every family's config may carry that rok does not read (the
 * checkpoint's dtype, numerics) still has to be what transformers would
 * take: a typo there is a broken config, not one to import silently. */
static gboolean common_fields(Import *im, GError **error) {
  static const char *const dtypes[] = {"float32", "float16", "bfloat16", "float64", "float8_e4m3fn", "float8_e5m2",
                                       "int8", "uint8", "auto", NULL};
  static const char *const numbers[] = {"rope_theta", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon",
                                        "initializer_range", NULL};
  static const char *const objects[] = {"rope_scaling", NULL};
  if (!require_string(im, "torch_dtype", dtypes, "not a torch dtype", error))
    return FALSE;
  for (guint i = 0; numbers[i] != NULL; i++) {
    double v;
    if (!is_null(im->hf, numbers[i]) && !rok_json_get_double(im->hf, numbers[i], TRUE, 0, 1e300, &v, error))
      return FALSE;
  }
  for (guint i = 0; objects[i] != NULL; i++) {
    json_object *v = NULL;
    if (!is_null(im->hf, objects[i]) && json_object_object_get_ex(im->hf->obj, objects[i], &v) &&
        !json_object_is_type(v, json_type_object)) {
      rok_json_error(error, im->hf->doc, objects[i], "expected an object or null");
      return FALSE;
    }
  }
  /* 0 heads for keys and values, or of width 0, would divide by zero in
   * transformers; absent or null means as many as the query heads. */
  guint64 n;
  const char *const positive[] = {"num_key_value_heads", "head_dim", NULL};
  for (guint i = 0; positive[i] != NULL; i++)
    if (!is_null(im->hf, positive[i]) && !rok_json_get_uint(im->hf, positive[i], TRUE, 1, G_MAXUINT32, &n, error))
      return FALSE;
  return TRUE;
}

/* The training side a config.json does not hold. */
static gboolean training_defaults(Import *im, GError **error) {
  guint64 context = DEFAULT_SEQ_LEN;
  const char *key = !is_null(im->hf, "n_positions") ? "n_positions" : "max_position_embeddings";
  if (!is_null(im->hf, key) && !rok_json_get_uint(im->hf, key, TRUE, 1, G_MAXUINT32, &context, error))
    return FALSE;
  json_object_object_add(im->out, "seq_len", json_object_new_uint64(MIN(context, DEFAULT_SEQ_LEN)));
  json_object_object_add(im->out, "micro_batch", json_object_new_uint64(1));
  /* FlashAttention (or cuDNN's fused attention) is how these are trained. */
  json_object_object_add(im->out, "attention", json_object_new_string("flash"));
  if (!json_object_object_get_ex(im->out, "dropout", NULL))
    json_object_object_add(im->out, "dropout", rok_json_new_double(0));
  return TRUE;
}

json_object *rok_model_hf_to_config(const RokJsonDoc *doc, char ***notes, GError **error) {
  g_auto(RokJsonObj) root = {0};
  if (!rok_json_root(doc, &root, error))
    return NULL;
  const Family *family = find_family(&root, error);
  if (family == NULL)
    return NULL;
  g_autoptr(GPtrArray) approx = g_ptr_array_new_with_free_func(g_free);
  json_object *out = json_object_new_object();
  Import im = {.hf = &root, .out = out, .approx = approx};
  g_autofree char *name = model_name(&root);
  json_object_object_add(out, "name", json_object_new_string(name));
  if (!common_fields(&im, error) || !family->map(&im, error) || !training_defaults(&im, error)) {
    json_object_put(out);
    return NULL;
  }
  g_ptr_array_add(approx, NULL);
  g_autofree char *approximated = g_strjoinv("; ", (char **)approx->pdata);
  g_autofree char *source = g_strdup_printf(
      "Hugging Face config.json %s (model_type \"%s\", %s), imported by rok; training side (seq_len, micro_batch, "
      "parallelism) defaulted%s%s",
      rok_json_doc_name(doc), family->type, family->family, approx->len > 1 ? "; approximated: " : "",
      approximated);
  json_object_object_add(out, "source", json_object_new_string(source));
  if (notes != NULL)
    *notes = (char **)g_ptr_array_steal(approx, NULL);
  return out;
}

RokModel *model_from_hf_doc(RokJsonDoc *doc, const char *const *overrides, GError **error) {
  json_object *config = rok_model_hf_to_config(doc, NULL, error);
  if (config == NULL)
    return NULL;
  g_autofree char *text = rok_json_to_string(config);
  json_object_put(config);
  /* Errors in the imported config point into what `rok import hf` prints. */
  g_autofree char *name = g_strdup_printf("%s (as `rok import hf` prints it)", rok_json_doc_name(doc));
  g_autoptr(RokJsonDoc) converted = rok_json_doc_parse(name, text, strlen(text), error);
  return converted == NULL ? NULL : rok_model_from_doc(converted, overrides, error);
}
