/* rok export --to torch: the plan as a rok-torch-policy/1 document, every
 * decision under the Hugging Face module path that saves the tensor
 * (GPT-2: transformer.h.N.attn.c_attn; LLaMA family: model.layers.N.
 * self_attn.q_proj), as python/rok_torch/names.py names what PyTorch saves.
 * rok_torch.apply() reads it as it reads the plan; PyTorch can do all a
 * plan says, so the closest plan is the plan. */
#include <string.h>

#include "export.h"
#include "rok/core.h"

typedef struct {
  const char *local, *module; /* module path relative to the layer, or to the model outside the layers */
} Where;

typedef struct {
  const char *name, *layers;
  const Where *where;
} Profile;

static const Where gpt2_where[] = {
    {"input", "ln_1"}, {"attn.norm_stats", "ln_1"}, {"attn.norm_out", "attn.c_attn"}, {"attn.qkv_out", "attn"},
    {"attn.softmax_out", "attn"}, {"attn.dropout_mask", "attn.attn_dropout"}, {"attn.dropout_out", "attn"},
    {"attn.context_out", "attn.c_proj"}, {"attn.out_dropout_mask", "attn.resid_dropout"},
    {"attn.residual_out", "ln_2"}, {"mlp.norm_stats", "ln_2"}, {"mlp.norm_out", "mlp.c_fc"},
    {"mlp.fc1_out", "mlp.act"}, {"mlp.gelu_out", "mlp.c_proj"}, {"mlp.out_dropout_mask", "mlp.dropout"},
    {"input.tokens", "transformer.wte"}, {"embed.dropout_mask", "transformer.drop"},
    {"head.input", "transformer.ln_f"}, {"head.norm_stats", "transformer.ln_f"}, {"head.norm_out", "lm_head"},
    {NULL, NULL}};

static const Where llama_where[] = {
    {"input", "input_layernorm"}, {"attn.norm_stats", "input_layernorm"}, {"attn.norm_out", "self_attn.q_proj"},
    {"attn.rotary_out", "self_attn"}, {"attn.v_out", "self_attn"}, {"attn.softmax_out", "self_attn"},
    {"attn.context_out", "self_attn.o_proj"}, {"attn.residual_out", "post_attention_layernorm"},
    {"mlp.norm_stats", "post_attention_layernorm"}, {"mlp.norm_out", "mlp.gate_proj"},
    {"mlp.gate_up_out", "mlp.act_fn"}, {"mlp.swiglu_out", "mlp.down_proj"}, {"input.tokens", "model.embed_tokens"},
    {"head.input", "model.norm"}, {"head.norm_stats", "model.norm"}, {"head.norm_out", "lm_head"}, {NULL, NULL}};

static const Profile profiles[] = {{"gpt2", "transformer.h", gpt2_where}, {"llama", "model.layers", llama_where}};

/* GPT and LLaMA traces, made from a config or captured (whose tensors say
 * which: LLaMA's attention saves rotary_out). */
static const Profile *profile_for(const RokTrace *trace, GError **error) {
  if (trace->model != NULL && trace->model->arch == ROK_ARCH_LLAMA)
    return &profiles[1];
  if (trace->model != NULL && trace->model->arch == ROK_ARCH_GPT)
    return &profiles[0];
  if (trace->model == NULL)
    for (guint i = 0; i < trace->tensors->len; i++) {
      const char *name = rok_trace_tensor(trace, i)->name;
      if (strstr(name, ".attn.rotary_out") != NULL)
        return &profiles[1];
      if (strstr(name, ".attn.qkv_out") != NULL)
        return &profiles[0];
    }
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "--to torch: module paths are known for GPT-2 and LLaMA-family "
              "models; %s is neither", trace->model != NULL ? rok_arch_name(trace->model->arch) : "this trace");
  return NULL;
}

static gboolean outer_name(const char *local) {
  return g_str_has_prefix(local, "input.") || g_str_has_prefix(local, "head.") || g_str_has_prefix(local, "embed.");
}

/* The module path that saves tensor T ("layer3.attn.qkv_out#2" ->
 * "transformer.h.3.attn"), or "(outside the model)" (the loss). */
static char *module_path(const Profile *p, const RokTensor *t) {
  const char *local = t->layer >= 0 && strchr(t->name, '.') ? strchr(t->name, '.') + 1 : t->name;
  gsize n = strcspn(local, "#");
  for (guint i = 0; p->where[i].local != NULL; i++) {
    const Where *w = &p->where[i];
    if (strlen(w->local) != n || strncmp(w->local, local, n) != 0 || outer_name(w->local) != (t->layer < 0))
      continue;
    return t->layer >= 0 ? g_strdup_printf("%s.%d.%s", p->layers, t->layer, w->module) : g_strdup(w->module);
  }
  return g_strdup("(outside the model)");
}

gboolean cli_export_torch(Export *e, const RokTrace *trace, const RokStepPlan *plan, GError **error) {
  const Profile *p = profile_for(trace, error);
  if (p == NULL)
    return FALSE;
  json_object *root = json_object_new_object(), *modules = json_object_new_object();
  json_object *decisions = json_object_new_object();
  json_object_object_add(root, "format", json_object_new_string("rok-torch-policy/1"));
  json_object_object_add(root, "profile", json_object_new_string(p->name));
  json_object_object_add(root, "layers", json_object_new_string(p->layers));
  json_object_object_add(root, "prefetch_layers", json_object_new_int64(plan->options.prefetch_layers));
  for (guint i = 0; i < trace->tensors->len; i++) {
    const RokTensor *t = rok_trace_tensor(trace, i);
    if (!rok_tensor_is_saved(t))
      continue;
    g_autofree char *path = module_path(p, t);
    json_object *entry = NULL;
    if (!json_object_object_get_ex(modules, path, &entry)) {
      entry = json_object_new_object();
      json_object_object_add(modules, path, entry);
    }
    const char *d = rok_decision_name(plan->decisions[i]);
    json_object_object_add(entry, t->name, json_object_new_string(d));
    json_object_object_add(decisions, t->name, json_object_new_string(d));
  }
  json_object_object_add(root, "modules", modules);
  json_object_object_add(root, "decisions", decisions);
  e->config = root;
  e->closest = rok_step_plan_copy(plan);
  return TRUE;
}
