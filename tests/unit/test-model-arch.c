/* The architecture keys of model configs: mixture of experts, latent
 * attention, sliding windows, padding, per-GPU parameters, round trips and
 * the rules between keys. */
#include <math.h>
#include <string.h>

#include "rok/core.h"
#include "rok/trace.h"

/* A small Mixtral-like model; `extra` (members of an object, after a comma)
 * adds keys or replaces the base's. */
static RokModel *moe_model(const char *extra, GError **error) {
  json_object *base = json_tokener_parse(
      "{\"arch\": \"llama\", \"layers\": 4, \"hidden\": 256, \"heads\": 8, \"kv_heads\": 2, \"ffn_hidden\": 512, "
      "\"vocab\": 1000, \"seq_len\": 128, \"micro_batch\": 2, \"attention\": \"flash\", \"experts\": 8, "
      "\"top_k\": 2}");
  g_autofree char *more_text = g_strdup_printf("{%s}", *extra == ',' ? extra + 1 : extra);
  json_object *more = json_tokener_parse(more_text);
  g_assert_nonnull(more);
  json_object_object_foreach(more, key, value) json_object_object_add(base, key, json_object_get(value));
  json_object_put(more);
  g_autofree char *json = rok_json_to_string(base);
  json_object_put(base);
  return rok_model_parse("moe.json", json, strlen(json), NULL, error);
}

static const RokTensor *find_tensor(const RokTrace *trace, const char *name) {
  for (guint i = 0; i < trace->tensors->len; i++)
    if (g_str_equal(rok_trace_tensor(trace, i)->name, name))
      return rok_trace_tensor(trace, i);
  return NULL;
}

/* Per GPU: the experts of one expert-parallel rank, each split over tensor
 * ranks; the router and norms whole. Counted here from the shapes. */
static void test_moe_params_per_gpu(void) {
  GError *error = NULL;
  g_autoptr(RokModel) m = moe_model(", \"tensor_parallel\": 2, \"expert_parallel\": 4", &error);
  g_assert_no_error(error);
  guint64 h = 256, d = 32, attention = h * 4 * d + 2 * h * 1 * d + 4 * d * h; /* 4 q heads, 1 kv head per rank */
  guint64 moe = 8 * h + 2 * 3 * h * 256;                                       /* router, 2 experts of 512/2 */
  guint64 outer = 2 * 500 * h + h;
  g_assert_cmpuint(rok_model_params_per_gpu(m), ==, 4 * (attention + moe + 2 * h) + outer);
  guint64 whole = 4 * (h * 8 * d + 2 * h * 2 * d + 8 * d * h + 8 * h + 8 * 3 * h * 512 + 2 * h) + 2 * 1000 * h + h;
  g_assert_cmpuint(rok_model_param_count(m), ==, whole);
}

static void test_moe_layers_and_rows(void) {
  GError *error = NULL;
  g_autoptr(RokModel) m = moe_model(", \"layers\": 8, \"moe_first_dense\": 3, \"moe_layer_freq\": 2", &error);
  g_assert_no_error(error);
  const gboolean expected[] = {FALSE, FALSE, FALSE, TRUE, FALSE, TRUE, FALSE, TRUE};
  for (guint i = 0; i < G_N_ELEMENTS(expected); i++)
    g_assert_cmpint(rok_model_is_moe_layer(m, i), ==, expected[i]);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(m, &error);
  g_assert_no_error(error);
  g_assert_null(find_tensor(trace, "layer2.moe.dispatched"));
  /* Dropless: top_k × tokens rows. */
  const RokTensor *rows = find_tensor(trace, "layer3.moe.dispatched");
  g_assert_nonnull(rows);
  g_assert_cmpuint(rows->shape[0], ==, 2 * 128 * 2);
  g_assert_nonnull(find_tensor(trace, "layer3.moe.router_probs"));
  g_assert_cmpint(find_tensor(trace, "layer3.moe.router_probs")->dtype, ==, ROK_DTYPE_FP32);

  /* A capacity factor pads every expert to ceil(c·k·T/E) rows. */
  g_autoptr(RokModel) capped = moe_model(", \"capacity_factor\": 1.3", &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) t2 = rok_trace_new_from_model(capped, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(find_tensor(t2, "layer0.moe.dispatched")->shape[0], ==, (guint64)ceil(1.3 * 2 * 256 / 8) * 8);
}

static void test_window_and_padding(void) {
  const char *json = "{\"arch\": \"llama\", \"layers\": 4, \"hidden\": 256, \"heads\": 4, \"seq_len\": 64, "
                     "\"micro_batch\": 1, \"vocab\": 50257, \"vocab_divisible_by\": 128, \"tensor_parallel\": 2, "
                     "\"sliding_window\": 16, \"window_skip\": 2}";
  GError *error = NULL;
  g_autoptr(RokModel) m = rok_model_parse("w.json", json, strlen(json), NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rok_model_padded_vocab(m), ==, 50432); /* a multiple of 128 × 2 */
  g_assert_cmpuint(rok_model_layer_window(m, 0), ==, 16);
  g_assert_cmpuint(rok_model_layer_window(m, 1), ==, 0);
  g_assert_cmpuint(rok_model_layer_window(m, 2), ==, 16);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(m, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(find_tensor(trace, "head.logits_out")->shape[1], ==, 50432 / 2);
}

/* Configs with every kind of key write back to themselves. */
static void test_round_trip(void) {
  const char *extras[] = {
      ", \"shared_expert_ffn_hidden\": 512, \"shared_expert_gate\": true, \"router_bias\": true, "
      "\"capacity_factor\": 1.25, \"aux_loss\": 0.01",
      ", \"kv_heads\": 8, \"head_dim\": 48, \"q_lora_rank\": 64, \"kv_lora_rank\": 32, \"rope_head_dim\": 16, "
      "\"v_head_dim\": 32, \"moe_first_dense\": 1",
      ", \"post_norms\": true, \"tied_embeddings\": true, \"sliding_window\": 32, \"qkv_bias\": true",
  };
  for (guint i = 0; i < G_N_ELEMENTS(extras); i++) {
    GError *error = NULL;
    g_autoptr(RokModel) m = moe_model(extras[i], &error);
    g_assert_no_error(error);
    json_object *json = rok_model_to_json(m);
    g_autofree char *text = rok_json_to_string(json);
    json_object_put(json);
    g_autoptr(RokModel) again = rok_model_parse("again.json", text, strlen(text), NULL, &error);
    g_assert_no_error(error);
    json = rok_model_to_json(again);
    g_autofree char *text2 = rok_json_to_string(json);
    json_object_put(json);
    g_assert_cmpstr(text, ==, text2);
    g_autoptr(RokTrace) trace = rok_trace_new_from_model(again, &error);
    g_assert_no_error(error);
  }
}

static void test_rules(void) {
  static const struct {
    const char *extra, *message;
  } bad[] = {
      {", \"top_k\": 9", "\"top_k\": must be at most \"experts\""},
      {", \"expert_parallel\": 3", "\"expert_parallel\": must divide \"experts\""},
      {", \"kv_lora_rank\": 32", "\"kv_heads\": must equal \"heads\" with latent attention"},
      {", \"parallel_residual\": true, \"post_norms\": true", "\"post_norms\": is only for arch \"llama\" without"},
      {", \"context_parallel\": 2", "\"context_parallel\": must be an integer from 1 to 1"},
      {", \"experts\": 0", "\"top_k\": is only for a mixture of experts"},
      {", \"positions\": 64", "\"positions\": is a learned position table"},
      {", \"layers\": 2048, \"experts\": 65536, \"expert_ffn_hidden\": 16777216", "\"experts\": the parameter bytes"},
      {", \"kv_heads\": 65536, \"heads\": 65536, \"hidden\": 65536, \"kv_lora_rank\": 16777216, \"layers\": 2048",
       "the sizes are absurd"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    GError *error = NULL;
    g_autoptr(RokModel) m = moe_model(bad[i].extra, &error);
    g_assert_null(m);
    g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
    if (strstr(error->message, bad[i].message) == NULL)
      g_error("%s: expected \"%s\" in \"%s\"", bad[i].extra, bad[i].message, error->message);
    g_assert_nonnull(strstr(error->message, "moe.json:"));
    g_error_free(error);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/model-arch/moe-params-per-gpu", test_moe_params_per_gpu);
  g_test_add_func("/model-arch/moe-layers-and-rows", test_moe_layers_and_rows);
  g_test_add_func("/model-arch/window-and-padding", test_window_and_padding);
  g_test_add_func("/model-arch/round-trip", test_round_trip);
  g_test_add_func("/model-arch/rules", test_rules);
  return g_test_run();
}
