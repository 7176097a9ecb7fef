/* Row and element-wise kernels, forward and backward, against CPU
 * references at small odd shapes; each is rerun and must give the same
 * bits. Dropout masks are checked against the host Philox mirror. */
#include <glib.h>

#ifndef ROK_WITH_OPENCL
int main(void) {
  return 77; /* built without OpenCL */
}
#else

#include "test-opencl-common.h"

/* Random activations rounded to bf16, on the host and the device. */
typedef struct {
  float *host;
  RokClBuffer *device;
} Tensor;

static Tensor tensor_random(Fixture *f, guint32 seed, gsize n, double low, double high, const char *label) {
  Tensor t = {.host = random_floats(seed, n, low, high)};
  round_to_act(f, t.host, n);
  t.device = upload(f, f->act, t.host, n, label);
  return t;
}

static void tensor_free(Tensor *t) {
  g_free(t->host);
  rok_cl_buffer_free(t->device);
}


/* ---- Softmax ---------------------------------------------------------- */

static double *softmax_reference(const float *x, guint64 rows, guint64 cols, gboolean causal, guint64 queries,
                                 double scale) {
  double *y = g_new0(double, rows * cols);
  for (guint64 r = 0; r < rows; r++) {
    gint64 visible = causal ? (gint64)(r % queries) + (gint64)cols - (gint64)queries + 1 : (gint64)cols;
    visible = CLAMP(visible, 0, (gint64)cols);
    double top = -INFINITY, sum = 0.0;
    for (gint64 j = 0; j < visible; j++)
      top = MAX(top, scale * x[r * cols + j]);
    for (gint64 j = 0; j < visible; j++)
      sum += exp(scale * x[r * cols + j] - top);
    for (gint64 j = 0; j < visible; j++)
      y[r * cols + j] = exp(scale * x[r * cols + j] - top) / sum;
  }
  return y;
}

static void test_softmax(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 queries = 7, keys = 11, rows = 3 * queries, n = rows * keys;
  const double scale = 0.37;
  for (int causal = 0; causal < 2; causal++) {
    Tensor x = tensor_random(f, 10, n, -4, 4, "scores");
    Tensor dy = tensor_random(f, 11, n, -1, 1, "dy");
    g_autoptr(RokClBuffer) y = zeros(f, f->act, n, "probs");
    g_autoptr(RokClBuffer) dx = zeros(f, f->act, n, "dx");
    rok_cl_softmax_forward(f->kernels, x.device, y, rows, keys, causal, queries, (float)scale, &error);
    g_assert_no_error(error);
    g_autofree float *got = download(y);
    g_autofree double *want = softmax_reference(x.host, rows, keys, causal, queries, scale);
    assert_close(got, want, n, f->rtol, f->atol, causal ? "causal softmax" : "softmax");
    if (causal)
      g_assert_cmpfloat(got[0 * keys + keys - 1], ==, 0.0f); /* query 0 sees keys 0..4 */
    rok_cl_softmax_backward(f->kernels, y, dy.device, dx, rows, keys, (float)scale, &error);
    g_assert_no_error(error);
    g_autofree float *grad = download(dx);
    g_autofree double *want_grad = g_new0(double, n);
    for (guint64 r = 0; r < rows; r++) {
      double dot = 0.0;
      for (guint64 j = 0; j < keys; j++)
        dot += got[r * keys + j] * dy.host[r * keys + j];
      for (guint64 j = 0; j < keys; j++)
        want_grad[r * keys + j] = scale * got[r * keys + j] * (dy.host[r * keys + j] - dot);
    }
    assert_close(grad, want_grad, n, f->rtol, f->atol, "softmax backward");
    SNAPSHOT(y);
    SNAPSHOT(dx);
    rok_cl_softmax_forward(f->kernels, x.device, y, rows, keys, causal, queries, (float)scale, &error);
    rok_cl_softmax_backward(f->kernels, y, dy.device, dx, rows, keys, (float)scale, &error);
    g_assert_no_error(error);
    ASSERT_RERUN_SAME(y, "softmax");
    ASSERT_RERUN_SAME(dx, "softmax backward");
    tensor_free(&x);
    tensor_free(&dy);
  }
}

/* ---- Norms ------------------------------------------------------------ */

typedef struct {
  double *y, *mean, *rstd, *dx, *dgamma, *dbeta;
} NormReference;

static void norm_reference_free(NormReference *r) {
  g_free(r->y), g_free(r->mean), g_free(r->rstd), g_free(r->dx), g_free(r->dgamma), g_free(r->dbeta);
}

/* LayerNorm (rms = FALSE) or RMSNorm forward and backward in double;
 * dgamma and dbeta start from the given values. */
static NormReference norm_reference(gboolean rms, const float *x, const float *gamma, const float *beta,
                                    const float *dy, const float *dgamma0, const float *dbeta0, guint64 rows,
                                    guint64 cols, double eps) {
  NormReference r = {g_new0(double, rows * cols), g_new0(double, rows), g_new0(double, rows),
                     g_new0(double, rows * cols), g_new0(double, cols), g_new0(double, cols)};
  for (guint64 c = 0; c < cols; c++)
    r.dgamma[c] = dgamma0[c], r.dbeta[c] = dbeta0[c];
  for (guint64 i = 0; i < rows; i++) {
    const float *xi = x + i * cols, *gi = dy + i * cols;
    double mean = 0.0, var = 0.0;
    if (!rms) {
      for (guint64 c = 0; c < cols; c++)
        mean += xi[c];
      mean /= cols;
    }
    for (guint64 c = 0; c < cols; c++)
      var += (xi[c] - mean) * (xi[c] - mean);
    double rstd = 1.0 / sqrt(var / cols + eps), mean_g = 0.0, mean_gx = 0.0;
    r.mean[i] = mean, r.rstd[i] = rstd;
    for (guint64 c = 0; c < cols; c++) {
      double xhat = (xi[c] - mean) * rstd, g = gi[c] * gamma[c];
      r.y[i * cols + c] = xhat * gamma[c] + (rms ? 0.0 : beta[c]);
      mean_g += g / cols;
      mean_gx += g * xhat / cols;
      r.dgamma[c] += gi[c] * xhat;
      r.dbeta[c] += gi[c];
    }
    for (guint64 c = 0; c < cols; c++) {
      double xhat = (xi[c] - mean) * rstd, g = gi[c] * gamma[c];
      r.dx[i * cols + c] = rstd * (g - (rms ? 0.0 : mean_g) - xhat * mean_gx);
    }
  }
  return r;
}

static void assert_close_f32(RokClBuffer *buffer, const double *want, gsize n, const char *what) {
  g_autofree float *got = download(buffer);
  assert_close(got, want, n, 1e-4, 1e-5, what);
}

static void test_norms(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 rows = 9, cols = 203;
  const float eps = 1e-5f;
  for (int rms = 0; rms < 2; rms++) {
    Tensor x = tensor_random(f, 20, rows * cols, -3, 5, "x"), gamma = tensor_random(f, 21, cols, 0.5, 1.5, "gamma");
    Tensor beta = tensor_random(f, 22, cols, -1, 1, "beta"), dy = tensor_random(f, 23, rows * cols, -1, 1, "dy");
    g_autofree float *dgamma0 = random_floats(24, cols, -1, 1), *dbeta0 = random_floats(25, cols, -1, 1);
    g_autoptr(RokClBuffer) dgamma = upload(f, ROK_DTYPE_FP32, dgamma0, cols, "dgamma");
    g_autoptr(RokClBuffer) dbeta = upload(f, ROK_DTYPE_FP32, dbeta0, cols, "dbeta");
    g_autoptr(RokClBuffer) y = zeros(f, f->act, rows * cols, "y"), dx = zeros(f, f->act, rows * cols, "dx");
    g_autoptr(RokClBuffer) stats = zeros(f, ROK_DTYPE_FP32, 2 * rows, "stats"), rstd = zeros(f, ROK_DTYPE_FP32, rows, "rstd");
    if (rms) {
      rok_cl_rmsnorm_forward(f->kernels, x.device, gamma.device, y, rstd, rows, cols, eps, &error);
      rok_cl_rmsnorm_backward(f->kernels, x.device, gamma.device, rstd, dy.device, dx, dgamma, rows, cols, &error);
    } else {
      rok_cl_layernorm_forward(f->kernels, x.device, gamma.device, beta.device, y, stats, rows, cols, eps, &error);
      rok_cl_layernorm_backward(f->kernels, x.device, gamma.device, stats, dy.device, dx, dgamma, dbeta, rows, cols,
                                &error);
    }
    g_assert_no_error(error);
    NormReference want = norm_reference(rms, x.host, gamma.host, beta.host, dy.host, dgamma0, dbeta0, rows, cols, eps);
    g_autofree float *got_y = download(y), *got_dx = download(dx);
    assert_close(got_y, want.y, rows * cols, f->rtol, f->atol, rms ? "rmsnorm" : "layernorm");
    assert_close(got_dx, want.dx, rows * cols, f->rtol, f->atol, rms ? "rmsnorm dx" : "layernorm dx");
    assert_close_f32(dgamma, want.dgamma, cols, "dgamma");
    if (rms) {
      assert_close_f32(rstd, want.rstd, rows, "rstd");
    } else {
      g_autofree double *want_stats = g_new(double, 2 * rows);
      for (guint64 r = 0; r < rows; r++)
        want_stats[2 * r] = want.mean[r], want_stats[2 * r + 1] = want.rstd[r];
      assert_close_f32(stats, want_stats, 2 * rows, "mean and rstd");
      assert_close_f32(dbeta, want.dbeta, cols, "dbeta");
    }
    /* Reruns give the same bits. */
    SNAPSHOT(y);
    SNAPSHOT(dx);
    if (rms) {
      rok_cl_rmsnorm_forward(f->kernels, x.device, gamma.device, y, rstd, rows, cols, eps, &error);
      rok_cl_rmsnorm_backward(f->kernels, x.device, gamma.device, rstd, dy.device, dx, NULL, rows, cols, &error);
    } else {
      rok_cl_layernorm_forward(f->kernels, x.device, gamma.device, beta.device, y, stats, rows, cols, eps, &error);
      rok_cl_layernorm_backward(f->kernels, x.device, gamma.device, stats, dy.device, dx, NULL, NULL, rows, cols,
                                &error);
    }
    g_assert_no_error(error);
    ASSERT_RERUN_SAME(y, "norm forward");
    ASSERT_RERUN_SAME(dx, "norm backward");
    /* Backward reads the saved input: a corrupted copy changes dx. */
    g_autofree float *corrupt = g_memdup2(x.host, rows * cols * sizeof(float));
    corrupt[5 * cols + 17] += 1.0f;
    g_autoptr(RokClBuffer) bad_x = upload(f, f->act, corrupt, rows * cols, "corrupted x");
    if (rms)
      rok_cl_rmsnorm_backward(f->kernels, bad_x, gamma.device, rstd, dy.device, dx, NULL, rows, cols, &error);
    else
      rok_cl_layernorm_backward(f->kernels, bad_x, gamma.device, stats, dy.device, dx, NULL, NULL, rows, cols,
                                &error);
    g_assert_no_error(error);
    g_autofree guint8 *changed = download_raw(dx);
    g_assert_true(memcmp(changed, snapshot_dx, dx->bytes) != 0);
    norm_reference_free(&want);
    tensor_free(&x), tensor_free(&gamma), tensor_free(&beta), tensor_free(&dy);
  }
}

static void test_bias_backward(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 rows = 33, cols = 71;
  Tensor dy = tensor_random(f, 30, rows * cols, -1, 1, "dy");
  g_autoptr(RokClBuffer) dbias = zeros(f, ROK_DTYPE_FP32, cols, "dbias");
  rok_cl_bias_backward(f->kernels, dy.device, dbias, rows, cols, &error);
  rok_cl_bias_backward(f->kernels, dy.device, dbias, rows, cols, &error);
  g_assert_no_error(error);
  g_autofree double *want = g_new0(double, cols);
  for (guint64 r = 0; r < rows; r++)
    for (guint64 c = 0; c < cols; c++)
      want[c] += 2.0 * dy.host[r * cols + c];
  assert_close_f32(dbias, want, cols, "dbias");
  tensor_free(&dy);
}

/* ---- Element-wise ----------------------------------------------------- */

static double gelu(double x) {
  return 0.5 * x * (1.0 + tanh(sqrt(2.0 / G_PI) * (x + 0.044715 * x * x * x)));
}

static double gelu_grad(double x) {
  double c = sqrt(2.0 / G_PI), t = tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

static double sigmoid(double x) {
  return 1.0 / (1.0 + exp(-x));
}

static void test_activations(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 n = 1013;
  Tensor x = tensor_random(f, 40, n, -4, 4, "x"), dy = tensor_random(f, 41, n, -1, 1, "dy");
  g_autoptr(RokClBuffer) y = zeros(f, f->act, n, "y"), dx = zeros(f, f->act, n, "dx");
  g_autofree double *want_y = g_new(double, n), *want_dx = g_new(double, n);
  for (int kind = 0; kind < 2; kind++) {
    if (kind == 0) {
      rok_cl_gelu_forward(f->kernels, x.device, y, n, &error);
      rok_cl_gelu_backward(f->kernels, x.device, dy.device, dx, n, &error);
    } else {
      rok_cl_relu_forward(f->kernels, x.device, y, n, &error);
      rok_cl_relu_backward(f->kernels, x.device, dy.device, dx, n, &error);
    }
    g_assert_no_error(error);
    for (guint64 i = 0; i < n; i++) {
      want_y[i] = kind == 0 ? gelu(x.host[i]) : MAX(x.host[i], 0.0);
      want_dx[i] = dy.host[i] * (kind == 0 ? gelu_grad(x.host[i]) : (x.host[i] > 0 ? 1.0 : 0.0));
    }
    g_autofree float *got_y = download(y), *got_dx = download(dx);
    assert_close(got_y, want_y, n, f->rtol, f->atol, kind == 0 ? "gelu" : "relu");
    assert_close(got_dx, want_dx, n, f->rtol, f->atol, kind == 0 ? "gelu backward" : "relu backward");
    if (kind == 0) {
      SNAPSHOT(y);
      SNAPSHOT(dx);
      rok_cl_gelu_forward(f->kernels, x.device, y, n, &error);
      rok_cl_gelu_backward(f->kernels, x.device, dy.device, dx, n, &error);
      g_assert_no_error(error);
      ASSERT_RERUN_SAME(y, "gelu");
      ASSERT_RERUN_SAME(dx, "gelu backward");
    } else {
      /* The trace saves ReLU's output: backward from it gives the same. */
      SNAPSHOT(dx);
      rok_cl_relu_backward(f->kernels, y, dy.device, dx, n, &error);
      g_assert_no_error(error);
      ASSERT_RERUN_SAME(dx, "relu backward from its output");
    }
  }
  /* Residual add, in place. */
  Tensor b = tensor_random(f, 42, n, -1, 1, "b");
  rok_cl_add(f->kernels, x.device, b.device, b.device, n, &error);
  g_assert_no_error(error);
  g_autofree float *sum = download(b.device);
  for (guint64 i = 0; i < n; i++)
    want_y[i] = (double)x.host[i] + b.host[i];
  assert_close(sum, want_y, n, f->rtol, 0.0, "add");
  tensor_free(&x), tensor_free(&dy), tensor_free(&b);
}

static void test_swiglu(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 rows = 7, cols = 45, n = rows * cols;
  Tensor x = tensor_random(f, 50, 2 * n, -3, 3, "gate|up"), dy = tensor_random(f, 51, n, -1, 1, "dy");
  g_autoptr(RokClBuffer) y = zeros(f, f->act, n, "y"), dx = zeros(f, f->act, 2 * n, "dx");
  rok_cl_swiglu_forward(f->kernels, x.device, y, rows, cols, &error);
  rok_cl_swiglu_backward(f->kernels, x.device, dy.device, dx, rows, cols, &error);
  g_assert_no_error(error);
  g_autofree double *want_y = g_new(double, n), *want_dx = g_new(double, 2 * n);
  for (guint64 r = 0; r < rows; r++)
    for (guint64 c = 0; c < cols; c++) {
      double gate = x.host[r * 2 * cols + c], up = x.host[r * 2 * cols + cols + c], g = dy.host[r * cols + c];
      double s = sigmoid(gate);
      want_y[r * cols + c] = gate * s * up;
      want_dx[r * 2 * cols + c] = g * up * s * (1.0 + gate * (1.0 - s));
      want_dx[r * 2 * cols + cols + c] = g * gate * s;
    }
  g_autofree float *got_y = download(y), *got_dx = download(dx);
  assert_close(got_y, want_y, n, f->rtol, f->atol, "swiglu");
  assert_close(got_dx, want_dx, 2 * n, f->rtol, f->atol, "swiglu backward");
  tensor_free(&x), tensor_free(&dy);
}

/* ---- Dropout ------------------------------------------------------------ */

static void test_dropout(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 n = 10007;
  RokClDropout d = {.seed = 0xfeedbeefcafe1234ull, .stream = 42, .p = 0.1};
  Tensor x = tensor_random(f, 60, n, -2, 2, "x"), dy = tensor_random(f, 61, n, -1, 1, "dy");
  g_autoptr(RokClBuffer) mask = zeros(f, ROK_DTYPE_U8, n, "mask"), again = zeros(f, ROK_DTYPE_U8, n, "regenerated");
  g_autoptr(RokClBuffer) y = zeros(f, f->act, n, "y"), dx = zeros(f, f->act, n, "dx");
  rok_cl_dropout_forward(f->kernels, &d, x.device, mask, y, n, &error);
  rok_cl_dropout_backward(f->kernels, &d, mask, dy.device, dx, n, &error);
  g_assert_no_error(error);
  g_autofree guint8 *m = download_raw(mask);
  g_autofree float *got_y = download(y), *got_dx = download(dx);
  guint32 threshold = rok_cl_dropout_threshold(d.p);
  guint kept = 0;
  g_autofree double *want_y = g_new(double, n), *want_dx = g_new(double, n);
  for (guint64 i = 0; i < n; i++) {
    g_assert_cmpuint(m[i], ==, rok_cl_random_word(d.seed, d.stream, i) >= threshold);
    kept += m[i];
    want_y[i] = m[i] ? x.host[i] / 0.9 : 0.0;
    want_dx[i] = m[i] ? dy.host[i] / 0.9 : 0.0;
  }
  g_assert_cmpfloat(fabs(kept / (double)n - 0.9), <, 0.02);
  assert_close(got_y, want_y, n, f->rtol, 0.0, "dropout");
  assert_close(got_dx, want_dx, n, f->rtol, 0.0, "dropout backward");
  /* Recompute: the mask regenerated alone, or by running forward again, is
   * the same bytes; another stream gives another mask. */
  rok_cl_dropout_mask(f->kernels, &d, again, n, &error);
  g_assert_no_error(error);
  assert_same_bytes(again, m, "regenerated mask");
  SNAPSHOT(y);
  rok_cl_dropout_forward(f->kernels, &d, x.device, again, y, n, &error);
  ASSERT_RERUN_SAME(y, "dropout recomputed");
  d.stream = 43;
  rok_cl_dropout_mask(f->kernels, &d, again, n, &error);
  g_autofree guint8 *other = download_raw(again);
  g_assert_true(memcmp(other, m, n) != 0);
  d.p = 1.0;
  g_assert_false(rok_cl_dropout_mask(f->kernels, &d, again, n, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  tensor_free(&x), tensor_free(&dy);
}

/* Wider masks (mask_bytes 2 or 4) hold the u8 mask's bits as integers and
 * give the same results. */
static void test_dropout_wide_masks(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 n = 1001;
  RokClDropout d = {.seed = 5, .stream = 6, .p = 0.3};
  Tensor x = tensor_random(f, 62, n, -2, 2, "x"), dy = tensor_random(f, 63, n, -1, 1, "dy");
  g_autoptr(RokClBuffer) mask = zeros(f, ROK_DTYPE_U8, n, "mask");
  g_autoptr(RokClBuffer) y = zeros(f, f->act, n, "y"), dx = zeros(f, f->act, n, "dx");
  rok_cl_dropout_forward(f->kernels, &d, x.device, mask, y, n, &error);
  rok_cl_dropout_backward(f->kernels, &d, mask, dy.device, dx, n, &error);
  g_assert_no_error(error);
  g_autofree guint8 *m = download_raw(mask), *y_u8 = download_raw(y), *dx_u8 = download_raw(dx);
  RokDtype wide[] = {ROK_DTYPE_U16, ROK_DTYPE_U32};
  for (gsize w = 0; w < G_N_ELEMENTS(wide); w++) {
    g_autoptr(RokClBuffer) mask_w = zeros(f, wide[w], n, "wide mask");
    /* Poison the mask so stale high bytes would show. */
    cl_uchar poison = 0xab;
    clEnqueueFillBuffer(rok_cl_device_queue(f->device, ROK_CL_QUEUE_COMPUTE), mask_w->mem, &poison, 1, 0,
                        mask_w->bytes, 0, NULL, NULL);
    rok_cl_dropout_forward(f->kernels, &d, x.device, mask_w, y, n, &error);
    rok_cl_dropout_backward(f->kernels, &d, mask_w, dy.device, dx, n, &error);
    g_assert_no_error(error);
    g_autofree guint8 *raw = download_raw(mask_w);
    for (guint64 i = 0; i < n; i++)
      g_assert_cmpuint(wide[w] == ROK_DTYPE_U16 ? ((guint16 *)raw)[i] : ((guint32 *)raw)[i], ==, m[i]);
    assert_same_bytes(y, y_u8, "dropout with a wide mask");
    assert_same_bytes(dx, dx_u8, "dropout backward with a wide mask");
  }
  g_autoptr(RokClBuffer) floats = zeros(f, ROK_DTYPE_FP32, n, "not a mask");
  g_assert_false(rok_cl_dropout_mask(f->kernels, &d, floats, n, &error));
  g_assert_nonnull(strstr(error->message, "u8, u16 or u32"));
  tensor_free(&x), tensor_free(&dy);
}

/* ---- Embedding ---------------------------------------------------------- */

static void test_embedding(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 vocab = 37, hidden = 19, seq = 10, tokens = 53;
  gint64 ids[53];
  g_autoptr(GRand) rand = g_rand_new_with_seed(70);
  for (guint64 t = 0; t < tokens; t++)
    ids[t] = g_rand_int_range(rand, 0, 12); /* many repeats */
  ids[3] = -1, ids[40] = (gint64)vocab;    /* invalid ids: zero rows, no gradient */
  g_autoptr(RokClBuffer) dids = upload_raw(f, ROK_DTYPE_I64, ids, tokens, "ids");
  Tensor table = tensor_random(f, 71, vocab * hidden, -1, 1, "table"), pos = tensor_random(f, 72, seq * hidden, -1, 1, "pos");
  Tensor dy = tensor_random(f, 73, tokens * hidden, -1, 1, "dy");
  g_autofree float *dtable0 = random_floats(74, vocab * hidden, -1, 1), *dpos0 = random_floats(75, seq * hidden, -1, 1);
  g_autoptr(RokClBuffer) dtable = upload(f, ROK_DTYPE_FP32, dtable0, vocab * hidden, "dtable");
  g_autoptr(RokClBuffer) dpos = upload(f, ROK_DTYPE_FP32, dpos0, seq * hidden, "dpos");
  g_autoptr(RokClBuffer) y = zeros(f, f->act, tokens * hidden, "y");
  rok_cl_embedding_forward(f->kernels, dids, table.device, pos.device, y, tokens, hidden, vocab, seq, &error);
  rok_cl_embedding_backward(f->kernels, dids, dy.device, dtable, dpos, tokens, hidden, vocab, seq, &error);
  g_assert_no_error(error);
  g_autofree double *want_y = g_new0(double, tokens * hidden), *want_dt = g_new(double, vocab * hidden);
  g_autofree double *want_dp = g_new(double, seq * hidden);
  for (guint64 i = 0; i < vocab * hidden; i++)
    want_dt[i] = dtable0[i];
  for (guint64 i = 0; i < seq * hidden; i++)
    want_dp[i] = dpos0[i];
  for (guint64 t = 0; t < tokens; t++)
    for (guint64 c = 0; c < hidden; c++) {
      if (ids[t] < 0 || ids[t] >= (gint64)vocab)
        continue;
      want_y[t * hidden + c] = (double)table.host[ids[t] * hidden + c] + pos.host[(t % seq) * hidden + c];
      want_dt[ids[t] * hidden + c] += dy.host[t * hidden + c];
    }
  for (guint64 t = 0; t < tokens; t++)
    for (guint64 c = 0; c < hidden; c++)
      want_dp[(t % seq) * hidden + c] += dy.host[t * hidden + c];
  g_autofree float *got_y = download(y);
  assert_close(got_y, want_y, tokens * hidden, f->rtol, f->atol, "embedding");
  assert_close_f32(dtable, want_dt, vocab * hidden, "embedding dtable");
  assert_close_f32(dpos, want_dp, seq * hidden, "embedding dpositions");
  /* The scatter is reproducible: rerun from the same start, same bits. */
  SNAPSHOT(dtable);
  g_autofree guint8 *start = g_malloc(dtable->bytes);
  memcpy(start, dtable0, dtable->bytes);
  rok_cl_buffer_write(dtable, ROK_CL_QUEUE_COMPUTE, 0, dtable->bytes, start, TRUE, 0, NULL, NULL, &error);
  rok_cl_embedding_backward(f->kernels, dids, dy.device, dtable, NULL, tokens, hidden, vocab, seq, &error);
  g_assert_no_error(error);
  ASSERT_RERUN_SAME(dtable, "embedding backward");
  tensor_free(&table), tensor_free(&pos), tensor_free(&dy);
}

/* ---- Cross-entropy ---------------------------------------------------- */

static void test_cross_entropy(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 tokens = 13, vocab = 301;
  gint64 labels[13];
  for (guint64 t = 0; t < tokens; t++)
    labels[t] = (gint64)((t * 97 + 5) % vocab);
  labels[6] = -100;
  g_autoptr(RokClBuffer) dlabels = upload_raw(f, ROK_DTYPE_I64, labels, tokens, "labels");
  Tensor logits = tensor_random(f, 80, tokens * vocab, -6, 6, "logits");
  g_autoptr(RokClBuffer) probs = zeros(f, ROK_DTYPE_FP32, tokens * vocab, "probs");
  g_autoptr(RokClBuffer) loss = zeros(f, ROK_DTYPE_FP32, tokens, "loss");
  g_autoptr(RokClBuffer) dlogits = zeros(f, f->act, tokens * vocab, "dlogits");
  const float scale = 1.0f / 12;
  rok_cl_cross_entropy_forward(f->kernels, logits.device, dlabels, probs, loss, tokens, vocab, &error);
  rok_cl_cross_entropy_backward(f->kernels, probs, dlabels, dlogits, tokens, vocab, scale, &error);
  g_assert_no_error(error);
  g_autofree double *want_p = softmax_reference(logits.host, tokens, vocab, FALSE, 1, 1.0);
  g_autofree double *want_loss = g_new0(double, tokens), *want_d = g_new0(double, tokens * vocab);
  for (guint64 t = 0; t < tokens; t++) {
    if (labels[t] < 0)
      continue;
    want_loss[t] = -log(want_p[t * vocab + labels[t]]);
    for (guint64 j = 0; j < vocab; j++)
      want_d[t * vocab + j] = scale * (want_p[t * vocab + j] - (j == (guint64)labels[t] ? 1.0 : 0.0));
  }
  assert_close_f32(probs, want_p, tokens * vocab, "cross-entropy probabilities");
  assert_close_f32(loss, want_loss, tokens, "cross-entropy loss");
  g_autofree float *got_d = download(dlogits);
  assert_close(got_d, want_d, tokens * vocab, f->rtol, f->atol, "cross-entropy backward");
  SNAPSHOT(probs);
  rok_cl_cross_entropy_forward(f->kernels, logits.device, dlabels, probs, loss, tokens, vocab, &error);
  ASSERT_RERUN_SAME(probs, "cross-entropy");
  tensor_free(&logits);
}

/* ---- Rotary ------------------------------------------------------------- */

static void test_rotary(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  RokClRotary r = {.tokens = 11, .heads = 3, .head_dim = 10, .rot_dim = 8, .seq_len = 7, .base = 10000.0,
                   .x_offset = 5, .x_ld = 34, .y_offset = 0, .y_ld = 30};
  const guint64 nx = 5 + 11 * 34, ny = 11 * 30;
  Tensor x = tensor_random(f, 90, nx, -1, 1, "qk");
  g_autoptr(RokClBuffer) y = zeros(f, f->act, ny, "rotated");
  rok_cl_rotary(f->kernels, &r, x.device, y, FALSE, &error);
  g_assert_no_error(error);
  g_autofree double *want = g_new0(double, ny);
  for (guint64 t = 0; t < r.tokens; t++)
    for (guint64 h = 0; h < r.heads; h++) {
      const float *in = x.host + r.x_offset + t * r.x_ld + h * r.head_dim;
      double *out = want + t * r.y_ld + h * r.head_dim;
      for (guint64 i = 0; i < r.rot_dim / 2; i++) {
        double angle = (double)(t % r.seq_len) * pow(r.base, -2.0 * i / r.rot_dim);
        double a = in[i], b = in[i + r.rot_dim / 2];
        out[i] = a * cos(angle) - b * sin(angle);
        out[i + r.rot_dim / 2] = b * cos(angle) + a * sin(angle);
      }
      for (guint64 i = r.rot_dim; i < r.head_dim; i++)
        out[i] = in[i];
    }
  g_autofree float *got = download(y);
  assert_close(got, want, ny, f->rtol, f->atol, "rotary");
  /* Backward (in place) turns the rotation back. */
  RokClRotary back = r;
  back.x_offset = back.y_offset = 0;
  back.x_ld = back.y_ld = 30;
  rok_cl_rotary(f->kernels, &back, y, y, TRUE, &error);
  g_assert_no_error(error);
  g_autofree float *restored = download(y);
  g_autofree double *original = g_new(double, ny);
  for (guint64 t = 0; t < r.tokens; t++)
    for (guint64 i = 0; i < 30; i++)
      original[t * 30 + i] = x.host[r.x_offset + t * r.x_ld + i];
  assert_close(restored, original, ny, 2 * f->rtol, 2 * f->atol, "rotary backward");
  r.rot_dim = 7;
  g_assert_false(rok_cl_rotary(f->kernels, &r, x.device, y, FALSE, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
  tensor_free(&x);
}

/* Launchers refuse buffers of the wrong dtype or size, naming them. */
static void test_checks(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokClBuffer) small = zeros(f, f->act, 10, "layer1.small");
  g_autoptr(RokClBuffer) f32 = zeros(f, ROK_DTYPE_FP32, 100, "layer1.f32");
  g_assert_false(rok_cl_gelu_forward(f->kernels, small, small, 11, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
  g_assert_nonnull(strstr(error->message, "layer1.small"));
  g_clear_error(&error);
  g_assert_false(rok_cl_softmax_forward(f->kernels, f32, f32, 10, 10, FALSE, 0, 1.0f, &error));
  g_assert_nonnull(strstr(error->message, "layer1.f32"));
  g_assert_nonnull(strstr(error->message, "bf16"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  Fixture *f = fixture_open(), *f32 = fixture_variant(f->device, ROK_DTYPE_FP32, FALSE);
  add_both(f, f32, "ops", "softmax", test_softmax);
  add_both(f, f32, "ops", "norms", test_norms);
  add_both(f, f32, "ops", "bias-backward", test_bias_backward);
  add_both(f, f32, "ops", "activations", test_activations);
  add_both(f, f32, "ops", "swiglu", test_swiglu);
  add_both(f, f32, "ops", "dropout", test_dropout);
  add_both(f, f32, "ops", "dropout-wide-masks", test_dropout_wide_masks);
  add_both(f, f32, "ops", "embedding", test_embedding);
  add_both(f, f32, "ops", "cross-entropy", test_cross_entropy);
  add_both(f, f32, "ops", "rotary", test_rotary);
  g_test_add_data_func("/opencl/ops/checks", f, test_checks);
  int status = g_test_run();
  fixture_close(f32);
  fixture_close(f);
  return status;
}

#endif /* ROK_WITH_OPENCL */
