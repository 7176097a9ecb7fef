/* The trace generator against Korthikanti et al.'s closed forms, computed
 * here by hand, and the trace file's round trip. */
#include <stdlib.h>
#include <string.h>

#include "rok/core.h"
#include "rok/trace.h"

static RokTrace *trace_of(const char *json) {
  GError *error = NULL;
  g_autoptr(RokModel) model = rok_model_parse("test.json", json, strlen(json), NULL, &error);
  g_assert_no_error(error);
  RokTrace *trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  return trace;
}

/* A GPT layer of s=2048, b=4, h=2048, a=16 (h/a = 128), 16-bit. */
#define GPT_BASE "\"layers\": 2, \"hidden\": 2048, \"heads\": 16, \"seq_len\": 2048, \"micro_batch\": 4"
static const double s = 2048, b = 4, h = 2048, a = 16;

/* LayerNorm statistics (mean, rstd in fp32) of two norms over `rows`. */
static guint64 ln_stats(double rows) {
  return (guint64)(2 * 2 * 4 * rows);
}

static void assert_layer_bytes(const RokTrace *trace, guint64 expected) {
  for (guint layer = 0; layer < trace->layers; layer++) {
    guint64 got = rok_trace_saved_bytes(trace, layer);
    g_assert_cmpuint(got, ==, expected);
  }
}

static void test_gpt_dropout(void) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"gpt\", " GPT_BASE "}");
  guint64 formula = (guint64)(s * b * h * (34 + 5 * a * s / h));
  assert_layer_bytes(trace, formula + ln_stats(s * b));
  g_assert_cmpuint(rok_model_reference_layer_bytes(trace->model), ==, formula);
}

static void test_gpt_no_dropout(void) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"gpt\", \"dropout\": 0, " GPT_BASE "}");
  /* No masks, and the softmax output is saved once for two backward ops. */
  guint64 formula = (guint64)(32 * s * b * h + 2 * a * s * s * b);
  assert_layer_bytes(trace, formula + ln_stats(s * b));
  g_assert_cmpuint(rok_model_reference_layer_bytes(trace->model), ==, formula);
}

static void test_gpt_tensor_parallel(void) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"gpt\", \"tensor_parallel\": 4, " GPT_BASE "}");
  double t = 4;
  guint64 formula = (guint64)(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
  assert_layer_bytes(trace, formula + ln_stats(s * b));
}

static void test_gpt_sequence_parallel(void) {
  g_autoptr(RokTrace) trace =
      trace_of("{\"arch\": \"gpt\", \"tensor_parallel\": 4, \"sequence_parallel\": true, " GPT_BASE "}");
  double t = 4;
  guint64 formula = (guint64)(s * b * h * (34 + 5 * a * s / h) / t);
  assert_layer_bytes(trace, formula + ln_stats(s * b / t));
}

static void test_gpt_flash(void) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"gpt\", \"attention\": \"flash\", " GPT_BASE "}");
  /* No s² terms; flash attention keeps its fp32 log-sum-exp per head and row. */
  guint64 formula = (guint64)(34 * s * b * h);
  assert_layer_bytes(trace, formula + ln_stats(s * b) + (guint64)(4 * a * s * b));
}

static void test_bert_matches_gpt_bytes(void) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"bert\", " GPT_BASE "}");
  guint64 formula = (guint64)(s * b * h * (34 + 5 * a * s / h));
  assert_layer_bytes(trace, formula + ln_stats(s * b));
}

/* LLaMA-2 70B's layer shape with GQA (8 kv heads), TP 8 + SP, flash. */
static void test_llama_gqa(void) {
  g_autoptr(RokTrace) trace =
      trace_of("{\"arch\": \"llama\", \"layers\": 2, \"hidden\": 8192, \"heads\": 64, \"kv_heads\": 8, "
               "\"ffn_hidden\": 28672, \"seq_len\": 4096, \"micro_batch\": 1, \"attention\": \"flash\", "
               "\"tensor_parallel\": 8, \"sequence_parallel\": true}");
  double S = 4096, H = 8192, t = 8, d = 128, q = 64 / t * d, kv = 1 * d, f = 28672 / t, rows = S / t;
  double expected = 2 * rows * H * 2    /* input and residual: RMSNorm inputs */
                    + 2 * rows * H * 2  /* RMSNorm outputs: QKV and gate/up inputs */
                    + 2 * 4 * rows      /* rstd of both norms, fp32 */
                    + 2 * S * (q + kv)  /* rotated q and k */
                    + 2 * S * kv        /* v */
                    + 2 * S * q         /* attention output = projection input */
                    + 4 * (64 / t) * S  /* log-sum-exp */
                    + 2 * S * 2 * f     /* [gate|up] */
                    + 2 * S * f;        /* SwiGLU output = down-projection input */
  assert_layer_bytes(trace, (guint64)expected);
  g_assert_true(trace->model->dropout == 0.0);
}

static guint find_tensor(const RokTrace *trace, const char *name) {
  for (guint i = 0; i < trace->tensors->len; i++)
    if (g_str_equal(rok_trace_tensor(trace, i)->name, name))
      return i;
  g_assert_not_reached();
}

/* One tensor needed by several backward ops is one entry with all of them. */
static void test_deduplication(void) {
  g_autoptr(RokTrace) gpt = trace_of("{\"arch\": \"gpt\", \"dropout\": 0, " GPT_BASE "}");
  const RokTensor *probs = rok_trace_tensor(gpt, find_tensor(gpt, "layer0.attn.softmax_out"));
  g_assert_cmpuint(probs->needed_by->len, ==, 2);
  const RokTensor *qkv = rok_trace_tensor(gpt, find_tensor(gpt, "layer1.attn.qkv_out"));
  g_assert_cmpuint(qkv->needed_by->len, ==, 2); /* Q·Kᵀ and P·V */

  g_autoptr(RokTrace) t5 = trace_of("{\"arch\": \"t5\", \"layers\": 3, \"decoder_layers\": 4, \"hidden\": 512, "
                                    "\"heads\": 8, \"head_dim\": 64, \"ffn_hidden\": 2048, \"seq_len\": 128, "
                                    "\"decoder_seq_len\": 32, \"micro_batch\": 2}");
  const RokTensor *encoder = rok_trace_tensor(t5, find_tensor(t5, "encoder.dropout_out"));
  g_assert_cmpuint(encoder->needed_by->len, ==, 4); /* every decoder layer's cross K/V */
  g_assert_cmpuint(t5->layers, ==, 7);
  g_assert_cmpint(encoder->layer, ==, -1);
}

static void test_structure(void) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"gpt\", " GPT_BASE "}");
  const RokTensor *input = rok_trace_tensor(trace, find_tensor(trace, "layer1.input"));
  g_assert_cmpint(input->layer, ==, 1);
  g_assert_cmpint(rok_trace_op(trace, input->producer)->layer, ==, 0);
  const RokTensor *tokens = rok_trace_tensor(trace, find_tensor(trace, "input.tokens"));
  g_assert_false(tokens->recomputable);
  const RokTensor *mask = rok_trace_tensor(trace, find_tensor(trace, "layer0.attn.dropout_mask"));
  g_assert_cmpuint(mask->recompute_from->len, ==, 0); /* from the seed alone */
  const RokTensor *gelu_in = rok_trace_tensor(trace, find_tensor(trace, "layer0.mlp.fc1_out"));
  g_assert_cmpuint(gelu_in->recompute_from->len, ==, 1);
  for (guint i = 0; i < trace->ops->len; i++) {
    const RokOp *op = rok_trace_op(trace, i);
    if (op->kind == ROK_OP_LINEAR)
      g_assert_cmpuint(op->bwd_flops, ==, 2 * op->fwd_flops);
  }
  g_assert_cmpuint(trace->tokens_per_micro_batch, ==, 2048 * 4);
}

static void test_round_trip(void) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"t5\", \"layers\": 2, \"hidden\": 256, \"heads\": 4, "
                                       "\"seq_len\": 64, \"micro_batch\": 2}");
  rok_trace_op(trace, 3)->fwd_time_s = 0.125;
  json_object *first = rok_trace_to_json(trace);
  g_autofree char *text = rok_json_to_string(first);
  json_object_put(first);
  GError *error = NULL;
  g_autoptr(RokTrace) back = rok_trace_parse("round.json", text, strlen(text), &error);
  g_assert_no_error(error);
  json_object *second = rok_trace_to_json(back);
  g_autofree char *again = rok_json_to_string(second);
  json_object_put(second);
  g_assert_cmpstr(text, ==, again);
}

/* A trace whose tensor names an op that does not exist. */
static void test_bad_reference(void) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"gpt\", \"layers\": 1, \"hidden\": 64, \"heads\": 2, "
                                       "\"seq_len\": 8, \"micro_batch\": 1}");
  json_object *o = rok_trace_to_json(trace);
  json_object *tensors = json_object_object_get(o, "tensors");
  json_object *t = json_object_array_get_idx(tensors, 5);
  json_object_object_add(t, "producer", json_object_new_int(100000));
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  GError *error = NULL;
  g_autoptr(RokTrace) back = rok_trace_parse("bad.json", text, strlen(text), &error);
  g_assert_null(back);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "bad.json:"));
  g_assert_nonnull(strstr(error->message, "tensors[5].producer"));
  g_error_free(error);
}

/* A one-layer GPT trace as JSON, changed by `edit` ("ops[4].inputs=[8]"
 * through a document override), must be refused with `expected` in the
 * message: every reference is checked, and located in the file. */
static void edited_trace_fails(const char *edit, const char *expected) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"gpt\", \"layers\": 1, \"hidden\": 64, \"heads\": 2, "
                                       "\"seq_len\": 8, \"micro_batch\": 1}");
  json_object *o = rok_trace_to_json(trace);
  g_auto(GStrv) parts = g_strsplit(edit, "=", 2);
  g_auto(GStrv) path = g_strsplit_set(parts[0], "[].", -1); /* "ops", "4", "", "inputs" */
  json_object *target = json_object_array_get_idx(json_object_object_get(o, path[0]), atoi(path[1]));
  json_object_object_add(target, path[3], json_tokener_parse(parts[1]));
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  GError *error = NULL;
  g_autoptr(RokTrace) back = rok_trace_parse("bad.json", text, strlen(text), &error);
  g_assert_null(back);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  if (!g_regex_match_simple("^bad\\.json:[0-9]+:[0-9]+: ", error->message, 0, 0) ||
      strstr(error->message, expected) == NULL)
    g_error("%s: expected a located message with \"%s\", got: %s", edit, expected, error->message);
  g_error_free(error);
}

static void test_bad_references(void) {
  /* Op 4 reads tensor 8, which op 5 makes: a forward reference. */
  edited_trace_fails("ops[4].inputs=[8]", "\"ops[4].inputs[0]\": tensor 8 is made by op 5, not by an op before");
  edited_trace_fails("ops[4].inputs=[4, 99]", "\"ops[4].inputs[1]\": must be an integer from 0 to");
  /* Backward cannot need a tensor from an op that ran before it was made. */
  edited_trace_fails("tensors[7].needed_by=[5, 2]",
                     "\"tensors[7].needed_by[1]\": must be an op at or after the tensor's producer, op 4");
  /* Recomputed from itself or a later tensor: a cycle. */
  edited_trace_fails("tensors[7].recompute_from=[7]",
                     "\"tensors[7].recompute_from[0]\": must be a tensor made before this tensor's producer");
  edited_trace_fails("tensors[7].recompute_from=[9]", "\"tensors[7].recompute_from[0]\"");
  edited_trace_fails("tensors[7].recompute_from=[4000000000]", "\"tensors[7].recompute_from[0]\"");
  /* Tensors are listed in the order they are made. */
  edited_trace_fails("tensors[5].producer=1",
                     "\"tensors[5].producer\": must be at least 2, the producer of tensor 4");
  /* Layers exist: an op or tensor of layer 1 in a one-layer trace. */
  edited_trace_fails("ops[3].layer=1", "\"ops[3].layer\": must be an integer from -1 to 0, not 1");
  edited_trace_fails("tensors[6].layer=7", "\"tensors[6].layer\": must be an integer from -1 to 0, not 7");
  edited_trace_fails("ops[3].dims=[1, 2, 3, 18446744073709551615]", "\"ops[3].dims[3]\"");
  edited_trace_fails("tensors[5].shape=[4294967296, 4294967296, 4294967296]",
                     "\"tensors[5].shape\": is too large: its bytes do not fit 64 bits");
}

/* The header's layer count is bounded like a config's. */
static void test_layer_limit(void) {
  g_autoptr(RokTrace) trace = trace_of("{\"arch\": \"gpt\", \"layers\": 1, \"hidden\": 64, \"heads\": 2, "
                                       "\"seq_len\": 8, \"micro_batch\": 1}");
  json_object *o = rok_trace_to_json(trace);
  json_object_object_add(o, "layers", json_object_new_int64(2000000000));
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  GError *error = NULL;
  g_autoptr(RokTrace) back = rok_trace_parse("bad.json", text, strlen(text), &error);
  g_assert_null(back);
  g_assert_nonnull(strstr(error->message, "\"layers\": must be an integer from 0 to 2048, not 2000000000"));
  g_error_free(error);
}

/* Op kinds by name: every kind's name gives it back; an unknown name and
 * NULL give ROK_OP_KIND_COUNT. */
static void test_op_kind_from_name(void) {
  for (guint k = 0; k < ROK_OP_KIND_COUNT; k++)
    g_assert_cmpint(rok_op_kind_from_name(rok_op_kind_name((RokOpKind)k)), ==, k);
  g_assert_cmpint(rok_op_kind_from_name("linear"), ==, ROK_OP_LINEAR);
  g_assert_cmpint(rok_op_kind_from_name("Linear"), ==, ROK_OP_KIND_COUNT);
  g_assert_cmpint(rok_op_kind_from_name(""), ==, ROK_OP_KIND_COUNT);
  g_assert_cmpint(rok_op_kind_from_name(NULL), ==, ROK_OP_KIND_COUNT);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/trace/gpt/dropout", test_gpt_dropout);
  g_test_add_func("/trace/gpt/no-dropout", test_gpt_no_dropout);
  g_test_add_func("/trace/gpt/tensor-parallel", test_gpt_tensor_parallel);
  g_test_add_func("/trace/gpt/sequence-parallel", test_gpt_sequence_parallel);
  g_test_add_func("/trace/gpt/flash", test_gpt_flash);
  g_test_add_func("/trace/bert", test_bert_matches_gpt_bytes);
  g_test_add_func("/trace/llama/gqa", test_llama_gqa);
  g_test_add_func("/trace/deduplication", test_deduplication);
  g_test_add_func("/trace/structure", test_structure);
  g_test_add_func("/trace/round-trip", test_round_trip);
  g_test_add_func("/trace/op-kind-from-name", test_op_kind_from_name);
  g_test_add_func("/trace/bad-reference", test_bad_reference);
  g_test_add_func("/trace/bad-references", test_bad_references);
  g_test_add_func("/trace/layer-limit", test_layer_limit);
  return g_test_run();
}
