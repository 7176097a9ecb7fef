/* What training choices do to the trace: LoRA and frozen layers, the loss
 * heads, and eager kernels leaving fused traces as they were. */
#include <string.h>

#include "rok/model.h"
#include "rok/trace.h"

static RokTrace *trace_of(const char *name, const char *const *sets) {
  g_autofree char *file = g_strconcat(name, ".json", NULL);
  g_autofree char *path = g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "models", file, NULL);
  GError *error = NULL;
  g_autoptr(RokModel) m = rok_model_load(path, sets, &error);
  g_assert_no_error(error);
  RokTrace *t = rok_trace_new_from_model(m, &error);
  g_assert_no_error(error);
  return t;
}

static const RokTensor *find(const RokTrace *t, const char *name) {
  for (guint i = 0; i < t->tensors->len; i++)
    if (g_str_equal(rok_trace_tensor(t, i)->name, name))
      return rok_trace_tensor(t, i);
  return NULL;
}

/* Only the chunked head holds no [tokens, vocab] tensor for backward; the
 * fused one keeps 16-bit logits instead of fp32 probabilities. */
static void test_loss_heads(void) {
  const char *plain[] = {"layers=2", NULL}, *fused[] = {"layers=2", "loss=\"fused\"", NULL};
  const char *chunked[] = {"layers=2", "loss=\"chunked\"", NULL};
  g_autoptr(RokTrace) p = trace_of("llama2-7b", plain), f = trace_of("llama2-7b", fused);
  g_autoptr(RokTrace) c = trace_of("llama2-7b", chunked);
  guint64 n = 4096, v = 32000;
  g_assert_cmpuint(find(p, "head.loss_probs")->bytes, ==, 4 * n * v);
  g_assert_cmpuint(rok_trace_saved_bytes(p, -1) - rok_trace_saved_bytes(f, -1), ==, 2 * n * v - 4 * n);
  g_assert_true(rok_tensor_is_saved(find(f, "head.logits_out")));
  g_assert_false(rok_tensor_is_saved(find(c, "head.chunk_logits")));
  g_assert_cmpuint(find(c, "head.grad_weight")->bytes, ==, 2 * v * 4096);
  g_assert_cmpuint(find(c, "head.chunk_logits")->shape[0], ==, 512); /* Liger: 2^ceil(log2(4096 / ceil(32000/4096))) */
}

/* LoRA: frozen linears without adapters keep no input; targeted ones keep
 * it and their rank-r activations; frozen layers save nothing at all. */
static void test_frozen(void) {
  const char *qkv_only[] = {"layers=2", "lora_rank=8", "lora_targets=[\"qkv\"]", NULL};
  g_autoptr(RokTrace) l = trace_of("llama2-7b", qkv_only);
  g_assert_true(rok_tensor_is_saved(find(l, "layer1.attn.norm_out")));
  g_assert_cmpuint(find(l, "layer1.attn.qkv.lora_out")->bytes, ==, 2 * 4096 * 3 * 8);
  g_assert_false(rok_tensor_is_saved(find(l, "layer1.mlp.swiglu_out")));
  g_assert_false(rok_tensor_is_saved(find(l, "head.norm_out")));
  const char *frozen[] = {"layers=4", "frozen_layers=2", NULL};
  g_autoptr(RokTrace) f = trace_of("llama2-7b", frozen);
  g_assert_cmpuint(rok_trace_saved_bytes(f, 0), ==, 0);
  g_assert_cmpuint(rok_trace_saved_bytes(f, 1), ==, 0);
  g_assert_cmpuint(rok_trace_saved_bytes(f, 2), >, 0);
  g_assert_cmpuint(rok_trace_saved_bytes(f, 2), ==, rok_trace_saved_bytes(f, 3));
}

/* Eager LLaMA saves the fp32 norm copies and softmax; the fused trace of
 * the same config is what it was (the keys at their defaults change
 * nothing). */
static void test_eager(void) {
  const char *fused[] = {"layers=2", "attention=\"standard\"", NULL};
  const char *defaults[] = {"layers=2", "attention=\"standard\"", "kernels=\"fused\"", "loss=\"fp32_softmax\"",
                            "framework=\"megatron\"", NULL};
  const char *eager[] = {"layers=2", "attention=\"standard\"", "kernels=\"eager\"", NULL};
  g_autoptr(RokTrace) a = trace_of("llama2-7b", fused), b = trace_of("llama2-7b", defaults);
  g_autoptr(RokTrace) e = trace_of("llama2-7b", eager);
  g_assert_cmpuint(rok_trace_total_saved_bytes(a), ==, rok_trace_total_saved_bytes(b));
  g_assert_cmpuint(a->tensors->len, ==, b->tensors->len);
  g_assert_cmpuint(find(e, "layer1.attn.softmax_out")->dtype, ==, ROK_DTYPE_FP32);
  g_assert_cmpuint(find(e, "layer1.attn.norm_fp32")->bytes, ==, 4 * 4096 * 4096);
  g_assert_cmpfloat((double)rok_trace_saved_bytes(e, 1) / (double)rok_trace_saved_bytes(a, 1), >, 1.5);
}

/* FP8 (Transformer Engine): a layer linear saves an e4m3 copy of its input
 * and a 4-byte scale instead of the 16-bit input; the head does not; the
 * trace reads back the same. */
static void test_fp8(void) {
  const char *sets[] = {"layers=2", "fp8=\"hybrid\"", NULL};
  g_autoptr(RokTrace) t = trace_of("llama2-7b", sets);
  const RokTensor *cast = find(t, "layer1.mlp.fc2.fp8_in");
  g_assert_cmpuint(cast->dtype, ==, ROK_DTYPE_E4M3);
  g_assert_cmpuint(cast->bytes, ==, G_GUINT64_CONSTANT(4096) * 11008);
  g_assert_cmpuint(find(t, "layer1.mlp.fc2.fp8_scale")->bytes, ==, 4);
  g_assert_false(rok_tensor_is_saved(find(t, "layer1.mlp.swiglu_out")));
  g_assert_true(rok_tensor_is_saved(find(t, "head.norm_out")));
  json_object *json = rok_trace_to_json(t);
  const char *text = json_object_to_json_string(json);
  GError *error = NULL;
  g_autoptr(RokTrace) back = rok_trace_parse("fp8.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rok_trace_total_saved_bytes(back), ==, rok_trace_total_saved_bytes(t));
  json_object_put(json);
}

/* Eager kernels on the families of the model configs: LLaMA-like layers
 * with QKV biases (Qwen2) or a sliding window (Mistral) are LLaMA's eager
 * layer; experts, latent attention, post-norms and rotary or
 * parallel-residual GPT are refused at "kernels", not guessed. */
static void test_eager_architectures(void) {
  const char *eager[] = {"layers=2", "kernels=\"eager\"", NULL};
  g_autoptr(RokTrace) q = trace_of("qwen2.5-7b", eager);
  g_autoptr(RokTrace) w = trace_of("mistral-7b", eager);
  g_assert_nonnull(find(q, "layer0.attn.q_rotary"));
  g_assert_nonnull(find(w, "layer0.attn.k_rotary"));
  const struct {
    const char *config, *set;
  } refused[] = {{"mixtral-8x7b", NULL}, {"deepseek-v3", NULL}, {"gemma2-9b", NULL},
                 {"gpt2-small", "positions=0"}, {"gpt2-small", "parallel_residual=true"}};
  for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
    g_autofree char *file = g_strconcat(refused[i].config, ".json", NULL);
    g_autofree char *path = g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "models", file, NULL);
    const char *sets[] = {"kernels=\"eager\"", refused[i].set, NULL};
    GError *error = NULL;
    g_autoptr(RokModel) m = rok_model_load(path, sets, &error);
    g_assert_null(m);
    g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
    g_assert_nonnull(strstr(error->message, "\"kernels\""));
    g_clear_error(&error);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/training-trace/loss-heads", test_loss_heads);
  g_test_add_func("/training-trace/frozen", test_frozen);
  g_test_add_func("/training-trace/eager", test_eager);
  g_test_add_func("/training-trace/fp8", test_fp8);
  g_test_add_func("/training-trace/eager-architectures", test_eager_architectures);
  return g_test_run();
}
