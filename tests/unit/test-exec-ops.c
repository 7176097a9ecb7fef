/* The op interpreter on whole training steps of tiny models of every
 * architecture the generator makes: gradients finite and non-zero, the
 * same bits on every run, whether saved tensors are kept, recomputed or
 * offloaded; a corrupted saved tensor changes them, a missing one is a
 * clean error; imported ops without a kernel run a stand-in. */
#include <glib.h>

#ifndef ROK_WITH_OPENCL
int main(void) { return 77; /* built without OpenCL */ }
#else

#include "test-exec-ops-common.h"

typedef struct {
  RokClDevice *device;
  RokClKernels *kernels; /* bf16 activations */
} Fixture;

typedef struct {
  Fixture *f;
  const char *name, *json;
} Case;

static RokExecModel *new_model(Fixture *f, const RokTrace *trace, guint64 seed) {
  g_autoptr(GError) error = NULL;
  RokExecModel *model = rok_exec_model_new(f->kernels, trace, seed, &error);
  g_assert_no_error(error);
  return model;
}

/* MASKS: only dropout masks are recomputed (from the seed alone). */
#define MASKS ((Policy)(OFFLOAD + 1))

static guint64 step_checksum(Fixture *f, const RokTrace *trace, guint64 seed, Policy policy, guint *recomputed,
                             guint *seed_only) {
  g_autoptr(RokExecModel) model = new_model(f, trace, seed);
  Runner *r = runner_new(model);
  runner_set_all(r, policy == MASKS ? KEEP : policy);
  for (guint t = 0; policy == MASKS && t < trace->tensors->len; t++) {
    const RokOp *producer = rok_trace_op(trace, rok_trace_tensor(trace, t)->producer);
    if (producer->kind == ROK_OP_DROPOUT && g_array_index(producer->outputs, guint, 0) == t)
      r->policy[t] = RECOMPUTE;
  }
  guint64 checksum = runner_step(r, 2);
  g_assert_cmpuint(r->mismatched, ==, 0);
  if (recomputed != NULL)
    *recomputed = r->recomputed;
  if (seed_only != NULL)
    *seed_only = r->seed_only;
  runner_free(r);
  return checksum;
}

/* Every parameter's gradient is finite and not all zero. */
static void assert_gradients_sane(RokExecModel *model) {
  for (guint i = 0; i < rok_exec_model_param_count(model); i++) {
    const RokExecParam *param = rok_exec_model_param(model, i);
    g_autofree float *grad = download_floats(param->grad);
    gboolean nonzero = FALSE;
    for (guint64 e = 0; e < param->grad->elements; e++) {
      if (!isfinite(grad[e]))
        g_error("%s: gradient element %" G_GUINT64_FORMAT " is %g", param->name, e, grad[e]);
      nonzero |= grad[e] != 0.0f;
    }
    if (!nonzero)
      g_error("%s: gradient is all zero", param->name);
  }
}

/* ---- Whole steps ------------------------------------------------------------ */

static void test_step(gconstpointer data) {
  const Case *c = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = tiny_trace(c->json, "bf16");
  guint buffers = rok_cl_device_buffer_count(c->f->device);
  {
    g_autoptr(RokExecModel) model = new_model(c->f, trace, 42);
    for (guint o = 0; o < trace->ops->len; o++)
      if (rok_exec_model_op_note(model, o) != NULL)
        g_error("op %s: %s", rok_trace_op(trace, o)->name, rok_exec_model_op_note(model, o));
    g_assert_cmpuint(rok_exec_model_standin_count(model), ==, 0);
    g_assert_cmpuint(rok_exec_model_param_count(model), >, 0);
    Runner *r = runner_new(model);
    guint64 first = runner_step(r, 2);
    assert_gradients_sane(model);
    /* The mean loss of random labels over 100 classes is near ln 100. A
     * pipeline stage without the head has none. */
    double loss = 0.0;
    if (trace->model->pipeline_parallel > 1) {
      g_assert_false(rok_exec_model_loss(model, 1, &loss, &error));
      g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
      g_clear_error(&error);
    } else {
      rok_exec_model_loss(model, 1, &loss, &error);
      g_assert_no_error(error);
      g_assert_cmpfloat(loss, >, 0.5 * log(100.0));
      g_assert_cmpfloat(loss, <, 2.0 * log(100.0));
    }
    /* A second step from zeroed gradients gives the same bits. */
    g_assert_cmpuint(runner_step(r, 2), ==, first);
    runner_free(r);
    /* So does a fresh model of the same seed; another seed does not. */
    g_assert_cmpuint(step_checksum(c->f, trace, 42, KEEP, NULL, NULL), ==, first);
    g_assert_cmpuint(step_checksum(c->f, trace, 43, KEEP, NULL, NULL), !=, first);
  }
  g_assert_cmpuint(rok_cl_device_buffer_count(c->f->device), ==, buffers);
}

/* Dropping every saved tensor that can be recomputed and rebuilding it
 * when backward needs it gives bitwise the tensors and gradients of
 * keeping everything; so does a round trip through host memory. */
static void test_plans(gconstpointer data) {
  const Case *c = data;
  g_autoptr(RokTrace) trace = tiny_trace(c->json, "bf16");
  guint recomputed = 0, seed_only = 0;
  guint64 keep = step_checksum(c->f, trace, 7, KEEP, NULL, NULL);
  g_assert_cmpuint(step_checksum(c->f, trace, 7, RECOMPUTE, &recomputed, &seed_only), ==, keep);
  g_assert_cmpuint(recomputed, >, 10);
  if (trace->model->dropout > 0) {
    g_assert_cmpuint(step_checksum(c->f, trace, 7, MASKS, &recomputed, &seed_only), ==, keep);
    g_assert_cmpuint(seed_only, >, 0);
    g_assert_cmpuint(recomputed, ==, seed_only);
  }
  g_assert_cmpuint(step_checksum(c->f, trace, 7, OFFLOAD, NULL, NULL), ==, keep);
}

/* ---- Corruption and missing tensors ------------------------------------------ */

typedef struct {
  guint victim;
  gboolean done;
} Corruption;

/* Before the first backward that reads the victim: change one byte. A
 * dropout mask keeps an element for any non-zero byte, so flip a zero. */
static void corrupt(gpointer data, RokExecModel *model, guint op, RokClBuffer **tensors) {
  Corruption *c = data;
  g_autoptr(GError) error = NULL;
  const RokTensor *t = rok_trace_tensor(rok_exec_model_trace(model), c->victim);
  gboolean reads = FALSE;
  for (guint i = 0; i < t->needed_by->len; i++)
    reads |= g_array_index(t->needed_by, guint, i) == op;
  if (c->done || !reads)
    return;
  RokClBuffer *buffer = tensors[c->victim];
  g_autofree guint8 *bytes = g_malloc(buffer->bytes);
  rok_cl_buffer_read(buffer, ROK_CL_QUEUE_COMPUTE, 0, buffer->bytes, bytes, TRUE, 0, NULL, NULL, &error);
  g_assert_no_error(error);
  guint64 at = (buffer->bytes * 5 / 8) | 1; /* the high byte of a 16-bit value */
  while (t->dtype == ROK_DTYPE_U8 && bytes[at] != 0)
    at = (at + 1) % buffer->bytes;
  bytes[at] ^= 0xC0;
  rok_cl_buffer_write(buffer, ROK_CL_QUEUE_COMPUTE, 0, buffer->bytes, bytes, TRUE, 0, NULL, NULL, &error);
  g_assert_no_error(error);
  c->done = TRUE;
}

static guint tensor_named(const RokTrace *trace, const char *name) {
  for (guint t = 0; t < trace->tensors->len; t++)
    if (g_strcmp0(rok_trace_tensor(trace, t)->name, name) == 0)
      return t;
  g_error("no tensor %s", name);
}

static void test_corruption(gconstpointer data) {
  const Case *c = data;
  g_autoptr(RokTrace) trace = tiny_trace(GPT_JSON, "bf16");
  guint64 keep = step_checksum(c->f, trace, 5, KEEP, NULL, NULL);
  const char *victims[] = {"layer0.attn.qkv_out",         "layer0.attn.norm_stats", "layer1.attn.softmax_out",
                           "layer1.attn.dropout_out",     "layer0.mlp.fc1_out",     "layer0.attn.out_dropout_mask",
                           "layer1.mlp.out_dropout_mask", "head.loss_probs",        "input.tokens"};
  for (guint v = 0; v < G_N_ELEMENTS(victims); v++) {
    g_autoptr(RokExecModel) model = new_model(c->f, trace, 5);
    Runner *r = runner_new(model);
    Corruption corruption = {.victim = tensor_named(trace, victims[v])};
    r->before_backward = corrupt;
    r->before_data = &corruption;
    guint64 checksum = runner_step(r, 2);
    g_assert_true(corruption.done);
    if (checksum == keep)
      g_error("corrupting %s did not change the gradients", victims[v]);
    runner_free(r);
  }
}

/* Runs forward of micro-batch 0 and backward down to (not including) op
 * `stop`. */
static Runner *run_until(RokExecModel *model, guint stop) {
  g_autoptr(GError) error = NULL;
  Runner *r = runner_new(model);
  runner_forward(r, 0);
  for (guint o = r->trace->ops->len; o-- > stop + 1;) {
    rok_exec_model_backward(model, o, 0, r->tensors, &error);
    g_assert_no_error(error);
  }
  return r;
}

static guint op_named(const RokTrace *trace, const char *name) {
  for (guint o = 0; o < trace->ops->len; o++)
    if (g_strcmp0(rok_trace_op(trace, o)->name, name) == 0)
      return o;
  g_error("no op %s", name);
}

static void test_missing(gconstpointer data) {
  const Case *c = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = tiny_trace(GPT_JSON, "bf16");
  g_autoptr(RokExecModel) model = new_model(c->f, trace, 1);
  guint fc1 = op_named(trace, "layer0.mlp.fc1"), saved = tensor_named(trace, "layer0.mlp.norm_out");
  Runner *r = run_until(model, fc1);
  g_clear_pointer(&r->tensors[saved], rok_cl_buffer_free);
  g_assert_false(rok_exec_model_backward(model, fc1, 0, r->tensors, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INTEGRITY);
  g_assert_nonnull(strstr(error->message, "layer0.mlp.fc1"));
  g_assert_nonnull(strstr(error->message, "layer0.mlp.norm_out"));
  g_clear_error(&error);
  /* Forward reads its inputs alike. */
  g_assert_false(rok_exec_model_forward(model, fc1, 0, r->tensors, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INTEGRITY);
  g_clear_error(&error);
  /* A buffer of the wrong size. */
  r->tensors[saved] = rok_cl_buffer_new(c->f->device, ROK_DTYPE_BF16, 10, "short", FALSE, &error);
  g_assert_no_error(error);
  g_assert_false(rok_exec_model_backward(model, fc1, 0, r->tensors, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "layer0.mlp.norm_out"));
  g_clear_error(&error);
  /* Backward of an op already run, and of a consumer after its producer. */
  g_clear_pointer(&r->tensors[saved], rok_cl_buffer_free);
  r->tensors[saved] = rok_exec_model_alloc_tensor(model, saved, &error);
  g_assert_no_error(error);
  g_assert_false(rok_exec_model_backward(model, op_named(trace, "layer0.mlp.gelu"), 0, r->tensors, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "already ran"));
  g_clear_error(&error);
  rok_exec_model_backward(model, op_named(trace, "layer0.mlp.norm"), 0, r->tensors, &error);
  g_assert_no_error(error);
  g_assert_false(rok_exec_model_backward(model, fc1, 0, r->tensors, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "out of order"));
  g_clear_error(&error);
  /* Only a dropout has a mask to rebuild. */
  g_assert_false(rok_exec_model_rebuild_mask(model, fc1, 0, r->tensors, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_clear_error(&error);
  /* Ids out of range. */
  g_assert_false(rok_exec_model_forward(model, trace->ops->len, 0, r->tensors, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_clear_error(&error);
  g_assert_null(rok_exec_model_alloc_tensor(model, trace->tensors->len, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_clear_error(&error);
  g_assert_cmpuint(rok_exec_model_end_micro_batch(model, 0), >, 0);
  g_assert_cmpuint(rok_exec_model_gradient_bytes(model), ==, 0);
  runner_free(r);
}

static void test_dtype_mismatch(gconstpointer data) {
  const Case *c = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = tiny_trace(GPT_JSON, "fp32");
  g_assert_null(rok_exec_model_new(c->f->kernels, trace, 1, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
}

/* ---- Causal masks ------------------------------------------------------------------ */

/* Whether any probability above the diagonal (key j > query i, aligned to
 * the end as the kernels do) is non-zero. */
static gboolean sees_future(RokClBuffer *probs, const RokTensor *t) {
  g_autofree float *p = download_floats(probs);
  guint64 sq = t->shape[2], sk = t->shape[3], blocks = t->shape[0] * t->shape[1];
  for (guint64 b = 0; b < blocks; b++)
    for (guint64 i = 0; i < sq; i++)
      for (guint64 j = i + sk - sq + 1; j < sk; j++)
        if (p[(b * sq + i) * sk + j] != 0.0f)
          return TRUE;
  return FALSE;
}

/* GPT and LLaMA attend causally; BERT does not; T5's decoder does in its
 * self-attention only. */
static void test_causal(gconstpointer data) {
  const Case *c = data;
  const struct {
    const char *json, *causal[3];
  } models[] = {{GPT_JSON, {"layer0.attn", "layer1.attn"}},
                {LLAMA_STANDARD_JSON, {"layer0.attn"}},
                {BERT_JSON, {NULL}},
                {T5_JSON, {"dec0.attn"}}};
  for (guint m = 0; m < G_N_ELEMENTS(models); m++) {
    g_autoptr(RokTrace) trace = tiny_trace(models[m].json, "bf16");
    g_autoptr(RokExecModel) model = new_model(c->f, trace, 9);
    Runner *r = runner_new(model);
    runner_forward(r, 0);
    guint softmaxes = 0;
    for (guint o = 0; o < trace->ops->len; o++) {
      const RokOp *op = rok_trace_op(trace, o);
      if (op->kind != ROK_OP_SOFTMAX)
        continue;
      gboolean causal = FALSE;
      for (guint k = 0; k < 3 && models[m].causal[k] != NULL; k++)
        causal |= g_str_has_prefix(op->name, models[m].causal[k]);
      guint out = g_array_index(op->outputs, guint, 0);
      if (sees_future(r->tensors[out], rok_trace_tensor(trace, out)) == causal)
        g_error("%s: expected %s attention", op->name, causal ? "causal" : "full");
      softmaxes++;
    }
    g_assert_cmpuint(softmaxes, >, 0);
    rok_exec_model_end_micro_batch(model, 0);
    runner_free(r);
  }
}

/* ---- Imported traces ------------------------------------------------------------ */

static guint add_tensor(RokTrace *trace, const char *name, RokDtype dtype, guint64 rows, guint64 cols, guint op) {
  guint64 shape[2] = {rows, cols};
  return rok_trace_add_tensor(trace, name, -1, dtype, cols == 0 ? 1 : 2, shape, op);
}

/* tokens -> embedding -> "other" -> linear (its input of the wrong width:
 * a stand-in too) -> linear -> cross-entropy, without a model config. */
static RokTrace *imported_trace(void) {
  g_autoptr(GError) error = NULL;
  RokTrace *trace = rok_trace_new("imported");
  guint in = rok_trace_add_op(trace, "batch", -1, ROK_OP_INPUT, 1, 32, 1, 0);
  guint tokens = add_tensor(trace, "tokens", ROK_DTYPE_I64, 32, 0, in);
  guint labels = add_tensor(trace, "labels", ROK_DTYPE_I64, 32, 0, in);
  guint emb = rok_trace_add_op(trace, "embed", -1, ROK_OP_EMBEDDING, 1, 32, 16, 50);
  rok_trace_add_input(trace, emb, tokens);
  rok_trace_need(trace, tokens, emb);
  guint x = add_tensor(trace, "embed_out", ROK_DTYPE_BF16, 32, 16, emb);
  guint other = rok_trace_add_op(trace, "custom", 0, ROK_OP_OTHER, 1, 32, 24, 16);
  rok_trace_op(trace, other)->fwd_flops = 2 * 32 * 24 * 16;
  rok_trace_op(trace, other)->bwd_flops = 4 * 32 * 24 * 16;
  rok_trace_add_input(trace, other, x);
  rok_trace_need(trace, x, other);
  guint y = add_tensor(trace, "custom_out", ROK_DTYPE_BF16, 32, 24, other);
  guint odd = rok_trace_add_op(trace, "odd", 0, ROK_OP_LINEAR, 1, 32, 24, 20); /* reads 24 columns, says 20 */
  rok_trace_add_input(trace, odd, y);
  rok_trace_need(trace, y, odd);
  guint z = add_tensor(trace, "odd_out", ROK_DTYPE_BF16, 32, 24, odd);
  guint head = rok_trace_add_op(trace, "head", -1, ROK_OP_LINEAR, 1, 32, 50, 24);
  rok_trace_add_input(trace, head, z);
  rok_trace_need(trace, z, head);
  guint logits = add_tensor(trace, "logits", ROK_DTYPE_BF16, 32, 50, head);
  guint loss = rok_trace_add_op(trace, "loss", -1, ROK_OP_CROSS_ENTROPY, 1, 32, 50, 0);
  rok_trace_add_input(trace, loss, logits);
  rok_trace_add_input(trace, loss, labels);
  rok_trace_need(trace, labels, loss);
  guint probs = add_tensor(trace, "probs", ROK_DTYPE_FP32, 32, 50, loss);
  rok_trace_need(trace, probs, loss);
  rok_trace_finish(trace, &error);
  g_assert_no_error(error);
  return trace;
}

static void test_imported(gconstpointer data) {
  const Case *c = data;
  g_autoptr(RokTrace) trace = imported_trace();
  g_autoptr(RokExecModel) model = new_model(c->f, trace, 3);
  g_assert_cmpuint(rok_exec_model_standin_count(model), ==, 2);
  const char *custom = rok_exec_model_op_note(model, op_named(trace, "custom"));
  const char *odd = rok_exec_model_op_note(model, op_named(trace, "odd"));
  g_assert_nonnull(custom);
  g_assert_nonnull(strstr(custom, "has no kernel"));
  g_assert_nonnull(strstr(custom, "stand-in GEMM"));
  g_assert_nonnull(odd);
  g_assert_nonnull(strstr(odd, "cannot run as its kind"));
  g_assert_null(rok_exec_model_op_note(model, op_named(trace, "head")));
  g_assert_null(rok_exec_model_op_note(model, op_named(trace, "embed")));
  /* Embedding table, head weight. */
  g_assert_cmpuint(rok_exec_model_param_count(model), ==, 2);
  Runner *r = runner_new(model);
  guint64 first = runner_step(r, 2);
  g_assert_cmpuint(runner_step(r, 2), ==, first);
  runner_set_all(r, RECOMPUTE);
  g_assert_cmpuint(runner_step(r, 2), ==, first);
  g_assert_cmpuint(r->mismatched, ==, 0);
  runner_free(r);
  assert_gradients_sane(model);
}

/* ---- Registration ---------------------------------------------------------------- */

static const struct {
  const char *name, *json;
} archs[] = {
    {"gpt", GPT_JSON},
    {"gpt-flash", GPT_FLASH_JSON},
    {"gpt-tp2-sp", GPT_SP_JSON},
    {"gpt-pp2", GPT_PP_JSON},
    {"llama-flash-gqa", LLAMA_JSON},
    {"llama-tp2", LLAMA_TP_JSON},
    {"llama-standard-gqa", LLAMA_STANDARD_JSON},
    {"bert", BERT_JSON},
    {"t5", T5_JSON},
    {"t5-tp2-sp", T5_SP_JSON},
    {"t5-flash", T5_FLASH_JSON},
};

static const char *const plan_archs[] = {"gpt", "llama-standard-gqa", "t5", "gpt-tp2-sp"};

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_autoptr(GError) error = NULL;
  Fixture f = {.device = open_device_or_skip()};
  f.kernels = rok_cl_kernels_new(f.device, ROK_DTYPE_BF16, &error);
  g_assert_no_error(error);
  Case cases[G_N_ELEMENTS(archs)], base = {.f = &f};
  for (guint i = 0; i < G_N_ELEMENTS(archs); i++) {
    cases[i] = (Case){.f = &f, .name = archs[i].name, .json = archs[i].json};
    g_autofree char *path = g_strdup_printf("/exec-ops/step/%s", archs[i].name);
    g_test_add_data_func(path, &cases[i], test_step);
    for (guint p = 0; p < G_N_ELEMENTS(plan_archs); p++) {
      if (g_strcmp0(plan_archs[p], archs[i].name) != 0)
        continue;
      g_autofree char *plans = g_strdup_printf("/exec-ops/plans/%s", archs[i].name);
      g_test_add_data_func(plans, &cases[i], test_plans);
    }
  }
  g_test_add_data_func("/exec-ops/corruption", &base, test_corruption);
  g_test_add_data_func("/exec-ops/missing", &base, test_missing);
  g_test_add_data_func("/exec-ops/causal", &base, test_causal);
  g_test_add_data_func("/exec-ops/dtype-mismatch", &base, test_dtype_mismatch);
  g_test_add_data_func("/exec-ops/imported", &base, test_imported);
  int status = g_test_run();
  rok_cl_kernels_free(f.kernels);
  g_assert_cmpuint(rok_cl_device_buffer_count(f.device), ==, 0);
  rok_cl_device_free(f.device);
  return status;
}

#endif /* ROK_WITH_OPENCL */
