/* Model configs: the bundled ones, defaults, and bad ones. */
#include <math.h>
#include <string.h>

#include "rok/core.h"
#include "rok/trace.h"

static char *config_path(const char *kind, const char *name) {
  g_autofree char *file = g_strconcat(name, ".json", NULL);
  return g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", kind, file, NULL);
}

/* Published sizes (papers and model cards, see each config's "source"). */
static const struct {
  const char *name;
  double params;
} published[] = {
    {"gpt3-1.3b", 1.3e9},   {"gpt3-2.7b", 2.7e9},    {"gpt3-6.7b", 6.7e9},   {"gpt3-13b", 13.0e9},
    {"gpt3-175b", 175.0e9}, {"llama2-7b", 6.74e9},   {"llama2-13b", 13.0e9}, {"llama2-70b", 68.98e9},
    {"bert-large", 340e6},  {"t5-3b", 2.85e9},
    /* Model cards' safetensors counts; the papers' totals for the MoE ones. */
    {"llama3.1-8b", 8.030e9}, {"llama3.1-70b", 70.55e9}, {"llama3.1-405b", 405.85e9}, {"mistral-7b", 7.24e9},
    {"mixtral-8x7b", 46.7e9}, {"mixtral-8x22b", 141e9},    {"qwen2.5-7b", 7.62e9},     {"qwen2.5-72b", 72.7e9},
    {"gemma2-9b", 9.24e9},    {"gemma2-27b", 27.2e9},      {"deepseek-v3", 671e9},     {"gpt2-small", 124.4e6},
};

static void test_bundled_param_counts(void) {
  for (guint i = 0; i < G_N_ELEMENTS(published); i++) {
    g_autofree char *path = config_path("models", published[i].name);
    GError *error = NULL;
    g_autoptr(RokModel) model = rok_model_load(path, NULL, &error);
    g_assert_no_error(error);
    double count = (double)rok_model_param_count(model);
    g_test_message("%s: %.4g parameters, published %.4g", published[i].name, count, published[i].params);
    g_assert_cmpfloat(fabs(count / published[i].params - 1), <, 0.02);
  }
}

/* Every bundled config loads and traces, and its fixed memory is sane. */
static void test_bundled_trace(void) {
  g_autofree char *folder = g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "models", NULL);
  g_autoptr(GDir) dir = g_dir_open(folder, 0, NULL);
  g_assert_nonnull(dir);
  guint count = 0;
  for (const char *entry; (entry = g_dir_read_name(dir)) != NULL; count++) {
    g_autofree char *path = g_build_filename(folder, entry, NULL);
    GError *error = NULL;
    g_autoptr(RokModel) model = rok_model_load(path, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(model->source);
    g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(rok_trace_total_saved_bytes(trace), >, 0);
    g_assert_cmpuint(trace->fixed.params_per_gpu, <=, trace->fixed.params_total);
  }
  g_assert_cmpuint(count, >=, 11);
}

static void test_fixed_memory(void) {
  const char *json = "{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 256, \"heads\": 4, \"seq_len\": 64, "
                     "\"micro_batch\": 1}";
  GError *error = NULL;
  g_autoptr(RokModel) model = rok_model_parse("m.json", json, strlen(json), NULL, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  guint64 p = trace->fixed.params_per_gpu;
  /* Mixed precision with Adam as Megatron-LM keeps it: 18 bytes per
   * parameter (fp32 main gradients; docs/training.md, test-fixed-memory). */
  g_assert_cmpuint(trace->fixed.weight_bytes + trace->fixed.gradient_bytes + trace->fixed.optimizer_bytes, ==,
                   18 * p);
  const char *sets[] = {"data_parallel=4", "global_batch=8", "zero_stage=3", "framework=\"deepspeed\"", NULL};
  g_autoptr(RokModel) sharded = rok_model_parse("m.json", json, strlen(json), sets, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) zero3 = rok_trace_new_from_model(sharded, &error);
  g_assert_no_error(error);
  /* The 16-bit weight partition, the largest layer (the embedding)
   * gathered, and the rest prefetched (DeepSpeed's 5e7 prefetch bucket
   * holds all of this small model). */
  g_assert_cmpuint(zero3->fixed.weight_bytes, ==, (2 * p + 3) / 4 + 2 * 50257 * 256 + 2 * (p - 50257 * 256));
  g_assert_cmpuint(zero3->micro_batches_per_step, ==, 2);
}

static void test_defaults(void) {
  const char *json = "{\"arch\": \"llama\", \"layers\": 2, \"hidden\": 256, \"heads\": 4, \"seq_len\": 64, "
                     "\"micro_batch\": 2}";
  GError *error = NULL;
  g_autoptr(RokModel) m = rok_model_parse("configs/tiny.json", json, strlen(json), NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(m->name, ==, "tiny");
  g_assert_cmpuint(m->kv_heads, ==, 4);
  g_assert_cmpuint(m->head_dim, ==, 64);
  g_assert_cmpuint(m->ffn_hidden, ==, 1024);
  g_assert_cmpuint(m->global_batch, ==, 2);
  g_assert_true(m->dropout == 0.0);
  g_assert_cmpuint(m->mask_bytes, ==, 1);
}

/* Each bad config fails with ROK_ERROR_INPUT and a message naming the place. */
static void test_bad_configs(void) {
  static const struct {
    const char *json, *expect;
  } cases[] = {
      {"{\"arch\": \"gpt\",\n \"layers\": 2,,}", "bad.json:2:"},
      {"{\"arch\": \"gpt\", \"layers\": \"two\", \"hidden\": 8, \"heads\": 2, \"seq_len\": 8, \"micro_batch\": 1}",
       "\"layers\""},
      {"{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": -8, \"heads\": 2, \"seq_len\": 8, \"micro_batch\": 1}",
       "\"hidden\""},
      {"{\"arch\": \"gpt\", \"layers\": 2, \"hiden\": 8, \"heads\": 2, \"seq_len\": 8, \"micro_batch\": 1}",
       "\"hiden\""},
      {"{\"arch\": \"gpx\", \"layers\": 2, \"hidden\": 8, \"heads\": 2, \"seq_len\": 8, \"micro_batch\": 1}",
       "\"arch\""},
      {"{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 8, \"heads\": 3, \"seq_len\": 8, \"micro_batch\": 1}",
       "\"heads\""},
      {"{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 8, \"heads\": 2, \"seq_len\": 8, \"micro_batch\": 1, "
       "\"tensor_parallel\": 4}",
       "\"tensor_parallel\""},
      {"{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 8, \"heads\": 2, \"seq_len\": 8, \"micro_batch\": 1, "
       "\"decoder_layers\": 4}",
       "\"decoder_layers\""},
      {"{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 8, \"heads\": 2, \"seq_len\": 8, \"micro_batch\": 1, "
       "\"mask_bytes\": 3}",
       "\"mask_bytes\""},
      {"{\"arch\": \"gpt\", \"layers\": 99999999999999999999999, \"hidden\": 8, \"heads\": 2, \"seq_len\": 8, "
       "\"micro_batch\": 1}",
       "bad.json:1:27: integer 99999999999999999999999 does not fit in 64 bits"},
      {"{\"arch\": \"gpt\", \"layers\": 1000, \"hidden\": 16000000, \"heads\": 1000, \"seq_len\": 16000000, "
       "\"micro_batch\": 1000000}",
       "2^62"},
      {"{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 8, \"heads\": 2, \"seq_len\": 8}", "\"micro_batch\""},
      {"[1, 2]", "bad.json"},
      {"", "bad.json"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = NULL;
    g_autoptr(RokModel) m = rok_model_parse("bad.json", cases[i].json, strlen(cases[i].json), NULL, &error);
    g_assert_null(m);
    g_assert_nonnull(error);
    g_test_message("%s", error->message);
    g_assert_cmpint(rok_error_exit_code(error), ==, ROK_EXIT_INVALID);
    g_assert_nonnull(strstr(error->message, cases[i].expect));
    g_error_free(error);
  }
}

static void test_overrides(void) {
  const char *json = "{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 64, \"heads\": 2, \"seq_len\": 8, "
                     "\"micro_batch\": 1}";
  const char *good[] = {"micro_batch=8", "attention=flash", "sequence_parallel=true", NULL};
  GError *error = NULL;
  g_autoptr(RokModel) m = rok_model_parse("m.json", json, strlen(json), good, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(m->micro_batch, ==, 8);
  g_assert_cmpint(m->attention, ==, ROK_ATTENTION_FLASH);
  const char *bad[] = {"micro_batch=lots", NULL};
  g_autoptr(RokModel) n = rok_model_parse("m.json", json, strlen(json), bad, &error);
  g_assert_null(n);
  g_assert_nonnull(strstr(error->message, "--set micro_batch=lots"));
  g_clear_error(&error);
  const char *unknown[] = {"micro_bach=2", NULL};
  g_autoptr(RokModel) u = rok_model_parse("m.json", json, strlen(json), unknown, &error);
  g_assert_null(u);
  g_assert_nonnull(strstr(error->message, "micro_bach"));
  g_clear_error(&error);
}

static void parse_fails(const char *json, const char *const *sets, const char *expected) {
  GError *error = NULL;
  g_autoptr(RokModel) m = rok_model_parse("big.json", json, strlen(json), sets, &error);
  g_assert_null(m);
  g_assert_nonnull(error);
  g_assert_cmpint(rok_error_exit_code(error), ==, ROK_EXIT_INVALID);
  if (strstr(error->message, expected) == NULL)
    g_error("expected \"%s\" in: %s", expected, error->message);
  g_error_free(error);
}

/* What keeps a config from asking for absurd memory or wrapping counts
 * around: at most 2048 layers in all, and every byte, parameter and FLOP
 * count below 2^62. */
static void test_limits(void) {
  const char *gpt = "{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 64, \"heads\": 2, \"seq_len\": 8, "
                    "\"micro_batch\": 1}";
  const char *t5 = "{\"arch\": \"t5\", \"layers\": 2, \"hidden\": 64, \"heads\": 2, \"seq_len\": 8, "
                   "\"micro_batch\": 1}";
  parse_fails(gpt, (const char *[]){"layers=2049", NULL},
              "--set layers=2049: \"layers\": must be an integer from 1 to 2048, not 2049");
  parse_fails(gpt, (const char *[]){"layers=16777216", NULL}, "from 1 to 2048");
  /* T5's decoder has as many layers as the encoder unless told otherwise. */
  parse_fails(t5, (const char *[]){"layers=1025", NULL},
              "\"layers\": and \"decoder_layers\" (as many as \"layers\" unless given) must add up to at most 2048");
  parse_fails(t5, (const char *[]){"layers=2000", "decoder_layers=49", NULL}, "must add up to at most 2048");
  /* hidden × heads × head_dim: 2^72 parameters. */
  parse_fails(gpt, (const char *[]){"hidden=16777216", "heads=16777216", "head_dim=16777216", "ffn_hidden=16777216",
                                    NULL},
              "the parameter bytes (hidden × ffn_hidden × layers × ...) of this model would exceed 2^62");
  /* Small activations, sane parameters, but 2^63 FLOPs per micro-batch. */
  parse_fails(gpt, (const char *[]){"layers=1", "hidden=1048576", "heads=16", "seq_len=65536", NULL},
              "big.json: the FLOPs of one micro-batch");
  parse_fails(gpt, (const char *[]){"seq_len=16777216", "micro_batch=16777216", NULL}, "activation bytes");
  /* ffn_hidden defaults to 4 × hidden, and is at most 2^24 like every width (the fuzzer's find: a config that
   * did not read back once written out). */
  parse_fails(gpt, (const char *[]){"hidden=9048576", "heads=1", "seq_len=1", NULL},
              "--set hidden=9048576: \"hidden\": is over 4194304, so \"ffn_hidden\" (4 × hidden unless given)");
  /* global_batch defaults to micro_batch × data_parallel, and is at most 2^32-1. */
  parse_fails(gpt, (const char *[]){"micro_batch=16777216", "data_parallel=1024", NULL},
              "--set data_parallel=1024: \"data_parallel\": times micro_batch must be at most 4294967295");

  /* The largest configs accepted still make a trace, of bounded size. */
  GError *error = NULL;
  g_autoptr(RokModel) deep = rok_model_parse("deep.json", t5, strlen(t5), (const char *[]){"layers=1024", NULL},
                                             &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(deep, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(trace->layers, ==, 2048);
  g_assert_cmpuint(trace->ops->len + trace->tensors->len, <, 2048 * 50);
  /* 2^33 tokens in a micro-batch (op dims past 32 bits) read back. */
  g_autoptr(RokModel) wide = rok_model_parse(
      "wide.json", gpt, strlen(gpt),
      (const char *[]){"layers=1", "seq_len=1048576", "micro_batch=8192", "hidden=1", "heads=1", "vocab=2", NULL},
      &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) wide_trace = rok_trace_new_from_model(wide, &error);
  g_assert_no_error(error);
  json_object *json = rok_trace_to_json(wide_trace);
  g_autofree char *text = rok_json_to_string(json);
  json_object_put(json);
  g_autoptr(RokTrace) back = rok_trace_parse("wide.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->tokens_per_micro_batch, ==, G_GUINT64_CONSTANT(1) << 33);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/model/bundled/param-counts", test_bundled_param_counts);
  g_test_add_func("/model/bundled/trace", test_bundled_trace);
  g_test_add_func("/model/fixed-memory", test_fixed_memory);
  g_test_add_func("/model/defaults", test_defaults);
  g_test_add_func("/model/bad-configs", test_bad_configs);
  g_test_add_func("/model/overrides", test_overrides);
  g_test_add_func("/model/limits", test_limits);
  return g_test_run();
}
