/* Numbers, with fp32 activations (MoE models without the load-balancing
 * loss, which the reported loss leaves out: test-opencl-moe checks its
 * gradient): the loss of a one-layer GPT against a
 * plain C forward pass (which operand is transposed, where q, k and v lie,
 * the causal mask, positions, the tied head), every parameter's gradient
 * against finite differences of the loss along a random direction for every
 * architecture (so backward is the derivative of forward, GQA sums and the
 * sequence-parallel row stand-ins included), and one SGD step lowering the
 * loss. */
#include <glib.h>

#ifndef ROK_WITH_OPENCL
int main(void) { return 77; /* built without OpenCL */ }
#else

#include "test-exec-ops-common.h"

typedef struct {
  RokClDevice *device;
  RokClKernels *kernels; /* fp32 activations */
} Fixture;

typedef struct {
  Fixture *f;
  const char *name, *json;
} Case;

static const RokExecParam *param_named(RokExecModel *model, const char *name) {
  for (guint i = 0; i < rok_exec_model_param_count(model); i++)
    if (g_strcmp0(rok_exec_model_param(model, i)->name, name) == 0)
      return rok_exec_model_param(model, i);
  g_error("no parameter %s", name);
}

/* The loss of micro-batch 0 by a forward pass alone; `kinks` (may be NULL)
 * gets a fingerprint of which ReLU outputs are zero. */
static double forward_loss_kinks(Runner *r, guint64 *kinks) {
  g_autoptr(GError) error = NULL;
  double loss = 0.0;
  runner_forward(r, 0);
  rok_exec_model_loss(r->model, 0, &loss, &error);
  g_assert_no_error(error);
  RokClChecksum sum;
  rok_cl_checksum_init(&sum);
  for (guint t = 0; t < r->trace->tensors->len; t++) {
    RokOpKind kind = rok_trace_op(r->trace, rok_trace_tensor(r->trace, t)->producer)->kind;
    /* A change of routing is a kink too: fingerprint the top-k picks. */
    if (kinks != NULL && kind == ROK_OP_MOE_ROUTER && rok_trace_tensor(r->trace, t)->dtype == ROK_DTYPE_I64) {
      g_autofree guint8 *picks = download_bytes(r->tensors[t]);
      rok_cl_checksum_update(&sum, picks, r->tensors[t]->bytes);
    }
    if (kinks != NULL && kind == ROK_OP_RELU) {
      g_autofree float *y = download_floats(r->tensors[t]);
      for (guint64 e = 0; e < r->tensors[t]->elements; e++) {
        guint8 zero = y[e] == 0.0f;
        rok_cl_checksum_update(&sum, &zero, 1);
      }
    }
    g_clear_pointer(&r->tensors[t], rok_cl_buffer_free);
  }
  if (kinks != NULL)
    *kinks = rok_cl_checksum_finish(&sum);
  return loss;
}

static double forward_loss(Runner *r) { return forward_loss_kinks(r, NULL); }

/* ---- A plain C GPT layer ------------------------------------------------------ */

typedef struct {
  RokExecModel *model;
  guint64 h, heads, d, f, s, b, vocab;
} Ref;

static float *param(Ref *ref, const char *name) { return download_floats(param_named(ref->model, name)->value); }

static void layernorm(const double *x, double *y, guint64 rows, guint64 cols, const float *g, const float *b) {
  for (guint64 r = 0; r < rows; r++) {
    double mean = 0.0, var = 0.0;
    for (guint64 c = 0; c < cols; c++)
      mean += x[r * cols + c] / (double)cols;
    for (guint64 c = 0; c < cols; c++)
      var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean) / (double)cols;
    for (guint64 c = 0; c < cols; c++)
      y[r * cols + c] = (x[r * cols + c] - mean) / sqrt(var + 1e-5) * g[c] + b[c];
  }
}

/* y [rows, out] = x [rows, in]·W [in, out] + bias. */
static void linear(const double *x, double *y, guint64 rows, guint64 in, guint64 out, const float *w,
                   const float *bias) {
  for (guint64 r = 0; r < rows; r++)
    for (guint64 o = 0; o < out; o++) {
      double sum = bias ? bias[o] : 0.0;
      for (guint64 i = 0; i < in; i++)
        sum += x[r * in + i] * w[i * out + o];
      y[r * out + o] = sum;
    }
}

static double gelu(double v) { return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

/* Causal multi-head attention over qkv [tokens, 3h] into ctx [tokens, h]. */
static void attention(Ref *ref, const double *qkv, double *ctx) {
  guint64 h = ref->h, d = ref->d, s = ref->s;
  g_autofree double *p = g_new(double, s);
  for (guint64 b = 0; b < ref->b; b++)
    for (guint64 hd = 0; hd < ref->heads; hd++)
      for (guint64 i = 0; i < s; i++) {
        const double *q = qkv + (b * s + i) * 3 * h + hd * d;
        double top = -INFINITY, sum = 0.0;
        for (guint64 j = 0; j <= i; j++) {
          const double *k = qkv + (b * s + j) * 3 * h + h + hd * d;
          double dot = 0.0;
          for (guint64 c = 0; c < d; c++)
            dot += q[c] * k[c];
          p[j] = dot / sqrt((double)d);
          top = MAX(top, p[j]);
        }
        for (guint64 j = 0; j <= i; j++)
          sum += p[j] = exp(p[j] - top);
        for (guint64 c = 0; c < d; c++) {
          double acc = 0.0;
          for (guint64 j = 0; j <= i; j++)
            acc += p[j] / sum * qkv[(b * s + j) * 3 * h + 2 * h + hd * d + c];
          ctx[(b * s + i) * h + hd * d + c] = acc;
        }
      }
}

static double reference_loss(Ref *ref, const gint64 *tokens, const gint64 *labels) {
  guint64 n = ref->b * ref->s, h = ref->h, f = ref->f, v = ref->vocab;
  g_autofree float *table = param(ref, "embed.lookup.table"), *pos = param(ref, "embed.lookup.positions");
  g_autofree double *x = g_new(double, n *h), *y = g_new(double, n *h), *qkv = g_new(double, n * 3 * h);
  g_autofree double *ctx = g_new(double, n *h), *hid = g_new(double, n *f), *logits = g_new(double, n *v);
  for (guint64 t = 0; t < n; t++)
    for (guint64 c = 0; c < h; c++)
      x[t * h + c] = table[tokens[t] * h + c] + pos[(t % ref->s) * h + c];
  struct {
    const char *name;
    float *data;
  } w[12] = {{"layer0.attn.norm.gamma"}, {"layer0.attn.norm.beta"},   {"layer0.attn.qkv.weight"},
             {"layer0.attn.qkv.bias"},   {"layer0.attn.proj.weight"}, {"layer0.attn.proj.bias"},
             {"layer0.mlp.norm.gamma"},  {"layer0.mlp.norm.beta"},    {"layer0.mlp.fc1.weight"},
             {"layer0.mlp.fc1.bias"},    {"layer0.mlp.fc2.weight"},   {"layer0.mlp.fc2.bias"}};
  for (guint i = 0; i < 12; i++)
    w[i].data = param(ref, w[i].name);
  layernorm(x, y, n, h, w[0].data, w[1].data);
  linear(y, qkv, n, h, 3 * h, w[2].data, w[3].data);
  attention(ref, qkv, ctx);
  linear(ctx, y, n, h, h, w[4].data, w[5].data);
  for (guint64 e = 0; e < n * h; e++)
    x[e] += y[e];
  layernorm(x, y, n, h, w[6].data, w[7].data);
  linear(y, hid, n, h, f, w[8].data, w[9].data);
  for (guint64 e = 0; e < n * f; e++)
    hid[e] = gelu(hid[e]);
  linear(hid, y, n, f, h, w[10].data, w[11].data);
  for (guint64 e = 0; e < n * h; e++)
    x[e] += y[e];
  g_autofree float *g = param(ref, "head.norm.gamma"), *beta = param(ref, "head.norm.beta");
  layernorm(x, y, n, h, g, beta);
  double loss = 0.0;
  for (guint64 t = 0; t < n; t++) {
    double top = -INFINITY, sum = 0.0;
    for (guint64 c = 0; c < v; c++) {
      double dot = 0.0;
      for (guint64 i = 0; i < h; i++)
        dot += y[t * h + i] * table[c * h + i]; /* the head is the table, transposed */
      logits[t * v + c] = dot;
      top = MAX(top, dot);
    }
    for (guint64 c = 0; c < v; c++)
      sum += exp(logits[t * v + c] - top);
    loss += (log(sum) + top - logits[t * v + labels[t]]) / (double)n;
  }
  for (guint i = 0; i < 12; i++)
    g_free(w[i].data);
  return loss;
}

static gint64 *download_ids(RokClBuffer *buffer) {
  g_autoptr(GError) error = NULL;
  gint64 *ids = g_new(gint64, buffer->elements);
  rok_cl_buffer_read(buffer, ROK_CL_QUEUE_COMPUTE, 0, buffer->bytes, ids, TRUE, 0, NULL, NULL, &error);
  g_assert_no_error(error);
  return ids;
}

static void test_reference(gconstpointer data) {
  const Case *c = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = tiny_trace("{\"arch\": \"gpt\", \"layers\": 1, \"hidden\": 32, \"heads\": 4, "
                                         "\"seq_len\": 8, \"micro_batch\": 2, \"vocab\": 40, \"ffn_hidden\": 48, "
                                         "\"dropout\": 0}",
                                         "fp32");
  g_autoptr(RokExecModel) model = rok_exec_model_new(c->f->kernels, trace, 11, &error);
  g_assert_no_error(error);
  Runner *r = runner_new(model);
  runner_forward(r, 0);
  double loss = 0.0;
  rok_exec_model_loss(model, 0, &loss, &error);
  g_assert_no_error(error);
  const RokOp *input = rok_trace_op(trace, 0);
  g_autofree gint64 *tokens = download_ids(r->tensors[g_array_index(input->outputs, guint, 0)]);
  g_autofree gint64 *labels = download_ids(r->tensors[g_array_index(input->outputs, guint, 1)]);
  Ref ref = {.model = model, .h = 32, .heads = 4, .d = 8, .f = 48, .s = 8, .b = 2, .vocab = 40};
  double want = reference_loss(&ref, tokens, labels);
  g_test_message("loss %.9g, reference %.9g", loss, want);
  g_assert_cmpfloat(fabs(loss - want), <=, 1e-5 * fabs(want));
  /* Again with every GEMM and attention pass launched in the smallest
   * chunks (a tile row, a batch entry, a head each): the same bits. */
  rok_cl_kernels_set_chunk_flops(c->f->kernels, 1);
  runner_forward(r, 0);
  double chunked = 0.0;
  rok_exec_model_loss(model, 0, &chunked, &error);
  rok_cl_kernels_set_chunk_flops(c->f->kernels, 0);
  g_assert_no_error(error);
  g_assert_cmpmem(&chunked, sizeof chunked, &loss, sizeof loss);
  runner_free(r);
}

/* ---- Gradients against central differences -------------------------------------- */

/* The loss (and ReLU zero pattern) with the parameter moved by eps·u. */
static double moved_loss(Runner *r, const RokExecParam *p, const float *w, const double *u, double eps,
                         guint64 *kinks) {
  g_autofree float *moved = g_new(float, p->value->elements);
  for (guint64 e = 0; e < p->value->elements; e++)
    moved[e] = (float)(w[e] + eps * u[e]);
  upload_floats(p->value, moved);
  double loss = forward_loss_kinks(r, kinks);
  upload_floats(p->value, w);
  return loss;
}

/* The derivative along u of the loss, by differences over the largest step
 * of 1e-2 ... 1e-4 (times the parameter's largest value) that crosses no
 * ReLU kink: central where neither side does, one-sided otherwise (the
 * analytic gradient takes the side the unmoved parameters sit on). FALSE
 * when every step crosses one. */
static gboolean directional(Runner *r, const RokExecParam *p, const double *u, double *eps, double *num) {
  g_autofree float *w = download_floats(p->value);
  static const double steps[] = {1e-2, 3e-3, 1e-3, 3e-4, 1e-4};
  double top = 0.0;
  for (guint64 e = 0; e < p->value->elements; e++)
    top = MAX(top, fabs(w[e]));
  guint64 k0 = 0, kp = 0, km = 0;
  double l0 = moved_loss(r, p, w, u, 0.0, &k0);
  for (guint s = 0; s < G_N_ELEMENTS(steps); s++) {
    *eps = steps[s] * MAX(top, 0.05);
    double lp = moved_loss(r, p, w, u, *eps, &kp), lm = moved_loss(r, p, w, u, -*eps, &km);
    *num = kp == k0 && km == k0 ? (lp - lm) / 2.0 : kp == k0 ? lp - l0 : km == k0 ? l0 - lm : NAN;
    if (!isnan(*num))
      return TRUE;
  }
  return FALSE;
}

/* ε·Σ grad·u within 3% (plus the fp32 loss's noise) of the difference,
 * along a random direction (another one when kinks are everywhere along
 * it). */
static void check_param(Runner *r, const RokExecParam *p, const float *grad, GRand *rand, guint *failures) {
  g_autofree double *u = g_new(double, p->value->elements);
  double eps = 0.0, num = 0.0, ana = 0.0;
  gboolean smooth = FALSE;
  for (guint tries = 0; tries < 3 && !smooth; tries++) {
    for (guint64 e = 0; e < p->value->elements; e++)
      u[e] = g_rand_double_range(rand, -1.0, 1.0);
    smooth = directional(r, p, u, &eps, &num);
  }
  for (guint64 e = 0; e < p->value->elements; e++)
    ana += eps * u[e] * grad[e];
  gboolean ok = smooth && fabs(num - ana) <= 0.03 * fabs(ana) + 2e-6 * eps / 1e-2;
  g_test_message("%-32s step %.1e analytic %+.6e numeric %+.6e %s", p->name, eps, ana, num,
                 ok       ? ""
                 : smooth ? "MISMATCH"
                          : "KINKED");
  *failures += !ok;
}

static void test_gradients(gconstpointer data) {
  const Case *c = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = tiny_trace(c->json, "fp32");
  g_autoptr(RokExecModel) model = rok_exec_model_new(c->f->kernels, trace, 21, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rok_exec_model_standin_count(model), ==, 0);
  Runner *r = runner_new(model);
  runner_step(r, 1);
  g_autoptr(GRand) rand = g_rand_new_with_seed(99);
  guint failures = 0;
  for (guint i = 0; i < rok_exec_model_param_count(model); i++) {
    const RokExecParam *p = rok_exec_model_param(model, i);
    g_autofree float *grad = download_floats(p->grad);
    check_param(r, p, grad, rand, &failures);
  }
  runner_free(r);
  if (failures > 0)
    g_error("%s: %u parameters' gradients disagree with central differences (run with --verbose)", c->name, failures);
}

/* ---- SGD -------------------------------------------------------------------------------- */

static void test_sgd(gconstpointer data) {
  const Case *c = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = tiny_trace(GPT_JSON, "fp32");
  g_autoptr(RokExecModel) model = rok_exec_model_new(c->f->kernels, trace, 4, &error);
  g_assert_no_error(error);
  Runner *r = runner_new(model);
  double before = forward_loss(r);
  runner_step(r, 1);
  for (guint i = 0; i < rok_exec_model_param_count(model); i++) {
    const RokExecParam *p = rok_exec_model_param(model, i);
    g_autofree float *w = download_floats(p->value), *g = download_floats(p->grad);
    for (guint64 e = 0; e < p->value->elements; e++)
      w[e] -= 0.5f * g[e];
    upload_floats(p->value, w);
  }
  double after = forward_loss(r);
  g_test_message("loss %.6f -> %.6f", before, after);
  g_assert_cmpfloat(after, <, before - 0.05);
  runner_free(r);
}

static const struct {
  const char *name, *json;
} archs[] = {
    {"gpt", GPT_JSON},
    {"gpt-flash", GPT_FLASH_JSON},
    {"gpt-tp2-sp", GPT_SP_JSON},
    {"llama-flash-gqa", LLAMA_JSON},
    {"llama-tp2", LLAMA_TP_JSON},
    {"llama-standard-gqa", LLAMA_STANDARD_JSON},
    {"bert", BERT_JSON},
    {"t5", T5_JSON},
    {"t5-tp2-sp", T5_SP_JSON},
    {"t5-flash", T5_FLASH_JSON},
    {"mixtral-moe", MIXTRAL_MOE_JSON},
    {"qwen-moe-capacity", QWEN_MOE_JSON},
};

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_autoptr(GError) error = NULL;
  Fixture f = {.device = open_device_or_skip()};
  f.kernels = rok_cl_kernels_new(f.device, ROK_DTYPE_FP32, &error);
  g_assert_no_error(error);
  Case base = {.f = &f}, cases[G_N_ELEMENTS(archs)];
  g_test_add_data_func("/exec-ops/numeric/reference-loss", &base, test_reference);
  g_test_add_data_func("/exec-ops/numeric/sgd", &base, test_sgd);
  for (guint i = 0; i < G_N_ELEMENTS(archs); i++) {
    cases[i] = (Case){.f = &f, .name = archs[i].name, .json = archs[i].json};
    g_autofree char *path = g_strdup_printf("/exec-ops/numeric/gradients/%s", archs[i].name);
    g_test_add_data_func(path, &cases[i], test_gradients);
  }
  int status = g_test_run();
  rok_cl_kernels_free(f.kernels);
  g_assert_cmpuint(rok_cl_device_buffer_count(f.device), ==, 0);
  rok_cl_device_free(f.device);
  return status;
}

#endif /* ROK_WITH_OPENCL */
