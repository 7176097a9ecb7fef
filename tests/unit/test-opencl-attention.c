/* Fused attention, forward and backward, against a CPU reference that
 * materialises the probabilities: causal and not, grouped-query heads,
 * dropout, more queries than keys (fully masked rows), several key and
 * query tiles; reruns give the same bits. */
#include <glib.h>

#ifndef ROK_WITH_OPENCL
int main(void) {
  return 77; /* built without OpenCL */
}
#else

#include "test-opencl-common.h"

typedef struct {
  guint64 batch, heads, kv_heads, sq, sk, d;
  gboolean causal;
  double dropout;
} Shape;

/* Host copies of the device tensors, and element addressing through the
 * same views the kernels get. */
typedef struct {
  Shape s;
  RokClAttention a;
  float *q, *k, *v, *dout;
  RokClHeads dout_view;
} Problem;

static guint64 view_index(const RokClHeads *view, guint64 b, guint64 h, guint64 row, guint64 c) {
  return view->offset + b * view->batch_stride + h * view->head_stride + row * view->row_stride + c;
}

/* Token-major Q/K/V/dO ([batch, rows, heads, d] with padded rows), O in a
 * head-major [batch, heads, rows, d] layout: the views must handle both. */
static RokClHeads token_major(guint64 rows, guint64 heads, guint64 d, guint64 offset) {
  guint64 row = heads * d + 3;
  return (RokClHeads){.offset = offset, .row_stride = row, .batch_stride = rows * row, .head_stride = d};
}

static guint64 view_elements(const RokClHeads *view, guint64 batch, guint64 heads, guint64 rows, guint64 d) {
  return view_index(view, batch - 1, heads - 1, rows - 1, d - 1) + 1;
}

static gboolean visible(const Shape *s, guint64 i, guint64 j) {
  return !s->causal || (gint64)j <= (gint64)i + (gint64)s->sk - (gint64)s->sq;
}

static double keep_factor(const RokClAttention *a, guint64 bh, guint64 i, guint64 j) {
  if (a->dropout.p <= 0.0)
    return 1.0;
  guint64 element = (bh * a->queries + i) * a->keys + j;
  return rok_cl_random_word(a->dropout.seed, a->dropout.stream, element) >= rok_cl_dropout_threshold(a->dropout.p)
             ? 1.0 / (1.0 - a->dropout.p)
             : 0.0;
}

/* Probabilities P[i][j] of (b, h) and their log-sum-exp per row. */
static double *probabilities(const Problem *p, guint64 b, guint64 h, double *lse) {
  const Shape *s = &p->s;
  guint64 kvh = h / (s->heads / s->kv_heads);
  double *prob = g_new0(double, s->sq * s->sk);
  for (guint64 i = 0; i < s->sq; i++) {
    double top = -INFINITY, sum = 0.0;
    double *row = prob + i * s->sk;
    for (guint64 j = 0; j < s->sk; j++) {
      row[j] = -INFINITY;
      if (!visible(s, i, j))
        continue;
      double dot = 0.0;
      for (guint64 c = 0; c < s->d; c++)
        dot += (double)p->q[view_index(&p->a.q, b, h, i, c)] * p->k[view_index(&p->a.k, b, kvh, j, c)];
      row[j] = p->a.scale * dot;
      top = MAX(top, row[j]);
    }
    for (guint64 j = 0; j < s->sk; j++)
      sum += visible(s, i, j) ? exp(row[j] - top) : 0.0;
    for (guint64 j = 0; j < s->sk; j++)
      row[j] = visible(s, i, j) ? exp(row[j] - top) / sum : 0.0;
    lse[i] = sum > 0.0 ? top + log(sum) : -INFINITY;
  }
  return prob;
}

/* O (in o's layout) and lse. */
static void reference_forward(const Problem *p, double *o, double *lse) {
  const Shape *s = &p->s;
  for (guint64 b = 0; b < s->batch; b++)
    for (guint64 h = 0; h < s->heads; h++) {
      guint64 bh = b * s->heads + h, kvh = h / (s->heads / s->kv_heads);
      g_autofree double *prob = probabilities(p, b, h, lse + bh * s->sq);
      for (guint64 i = 0; i < s->sq; i++)
        for (guint64 c = 0; c < s->d; c++) {
          double sum = 0.0;
          for (guint64 j = 0; j < s->sk; j++)
            sum += prob[i * s->sk + j] * keep_factor(&p->a, bh, i, j) * p->v[view_index(&p->a.v, b, kvh, j, c)];
          o[view_index(&p->a.o, b, h, i, c)] = sum;
        }
    }
}

/* dQ, dK, dV from the definitions; delta from the device's O (what the
 * kernels read back), so both sides start from the same saved tensor. */
static void reference_backward(const Problem *p, const float *o, double *dq, double *dk, double *dv) {
  const Shape *s = &p->s;
  g_autofree double *lse = g_new(double, s->sq);
  for (guint64 b = 0; b < s->batch; b++)
    for (guint64 h = 0; h < s->heads; h++) {
      guint64 bh = b * s->heads + h, kvh = h / (s->heads / s->kv_heads);
      g_autofree double *prob = probabilities(p, b, h, lse);
      for (guint64 i = 0; i < s->sq; i++) {
        double delta = 0.0;
        for (guint64 c = 0; c < s->d; c++)
          delta += (double)p->dout[view_index(&p->dout_view, b, h, i, c)] * o[view_index(&p->a.o, b, h, i, c)];
        for (guint64 j = 0; j < s->sk; j++) {
          double pij = prob[i * s->sk + j], keep = keep_factor(&p->a, bh, i, j), dp = 0.0;
          for (guint64 c = 0; c < s->d; c++)
            dp += (double)p->dout[view_index(&p->dout_view, b, h, i, c)] * p->v[view_index(&p->a.v, b, kvh, j, c)];
          double ds = pij * (keep * dp - delta);
          for (guint64 c = 0; c < s->d; c++) {
            dq[view_index(&p->a.q, b, h, i, c)] += p->a.scale * ds * p->k[view_index(&p->a.k, b, kvh, j, c)];
            dk[view_index(&p->a.k, b, kvh, j, c)] += p->a.scale * ds * p->q[view_index(&p->a.q, b, h, i, c)];
            dv[view_index(&p->a.v, b, kvh, j, c)] +=
                pij * keep * p->dout[view_index(&p->dout_view, b, h, i, c)];
          }
        }
      }
    }
}

/* Device buffers of a problem. */
typedef struct {
  RokClBuffer *q, *k, *v, *o, *lse, *dout, *dq, *dk, *dv;
} Buffers;

static void buffers_free(Buffers *b) {
  RokClBuffer **all[] = {&b->q, &b->k, &b->v, &b->o, &b->lse, &b->dout, &b->dq, &b->dk, &b->dv};
  for (gsize i = 0; i < G_N_ELEMENTS(all); i++)
    g_clear_pointer(all[i], rok_cl_buffer_free);
}

static float *random_act(Fixture *f, guint32 seed, guint64 n) {
  float *x = random_floats(seed, n, -1.5, 1.5);
  round_to_act(f, x, n);
  return x;
}

static void run_case(Fixture *f, const Shape *s) {
  g_autoptr(GError) error = NULL;
  Problem p = {.s = *s};
  RokClAttention *a = &p.a;
  *a = (RokClAttention){.batch = s->batch, .heads = s->heads, .kv_heads = s->kv_heads, .queries = s->sq,
                        .keys = s->sk, .head_dim = s->d, .causal = s->causal, .scale = (float)(1.0 / sqrt(s->d)),
                        .dropout = {.seed = 99, .stream = 7, .p = s->dropout}};
  a->q = token_major(s->sq, s->heads, s->d, 2);
  a->k = token_major(s->sk, s->kv_heads, s->d, 0);
  a->v = token_major(s->sk, s->kv_heads, s->d, 1);
  a->o = (RokClHeads){.offset = 0, .row_stride = s->d, .head_stride = s->sq * s->d,
                      .batch_stride = s->heads * s->sq * s->d};
  p.dout_view = token_major(s->sq, s->heads, s->d, 0);
  guint64 nq = view_elements(&a->q, s->batch, s->heads, s->sq, s->d);
  guint64 nk = view_elements(&a->k, s->batch, s->kv_heads, s->sk, s->d);
  guint64 nv = view_elements(&a->v, s->batch, s->kv_heads, s->sk, s->d);
  guint64 no = view_elements(&a->o, s->batch, s->heads, s->sq, s->d), nlse = s->batch * s->heads * s->sq;
  p.q = random_act(f, 1, nq), p.k = random_act(f, 2, nk), p.v = random_act(f, 3, nv), p.dout = random_act(f, 4, nq);
  Buffers d = {upload(f, f->act, p.q, nq, "q"), upload(f, f->act, p.k, nk, "k"), upload(f, f->act, p.v, nv, "v"),
               zeros(f, f->act, no, "o"), zeros(f, ROK_DTYPE_FP32, nlse, "lse"), upload(f, f->act, p.dout, nq, "dout"),
               zeros(f, f->act, nq, "dq"), zeros(f, f->act, nk, "dk"), zeros(f, f->act, nv, "dv")};
  a->q.buffer = d.q, a->k.buffer = d.k, a->v.buffer = d.v, a->o.buffer = d.o;
  p.dout_view.buffer = d.dout;
  RokClHeads dq = a->q, dk = a->k, dv = a->v;
  dq.buffer = d.dq, dk.buffer = d.dk, dv.buffer = d.dv;
  rok_cl_attention_forward(f->kernels, a, d.lse, &error);
  g_assert_no_error(error);
  rok_cl_attention_backward(f->kernels, a, d.lse, &p.dout_view, &dq, &dk, &dv, &error);
  g_assert_no_error(error);

  g_autofree double *want_o = g_new0(double, no), *want_lse = g_new0(double, nlse);
  reference_forward(&p, want_o, want_lse);
  g_autofree float *got_o = download(d.o), *got_lse = download(d.lse);
  assert_close(got_o, want_o, no, f->rtol, f->atol, "attention output");
  for (guint64 i = 0; i < nlse; i++) {
    if (isinf(want_lse[i])) {
      g_assert_true(isinf(got_lse[i]) && got_lse[i] < 0);
      want_lse[i] = got_lse[i] = 0.0f; /* compared, now out of the way */
    }
  }
  assert_close(got_lse, want_lse, nlse, 1e-5, 1e-5, "attention log-sum-exp");
  g_autofree double *want_dq = g_new0(double, nq), *want_dk = g_new0(double, nk), *want_dv = g_new0(double, nv);
  reference_backward(&p, got_o, want_dq, want_dk, want_dv);
  g_autofree float *got_dq = download(d.dq), *got_dk = download(d.dk), *got_dv = download(d.dv);
  /* Gradients pass through more roundings (O, P·dP − delta) than O does. */
  assert_close(got_dq, want_dq, nq, 2 * f->rtol, 2 * f->atol, "attention dq");
  assert_close(got_dk, want_dk, nk, 2 * f->rtol, 2 * f->atol, "attention dk");
  assert_close(got_dv, want_dv, nv, 2 * f->rtol, 2 * f->atol, "attention dv");

  /* A recompute gives the same bits, forward and backward; so does one in
   * chunks (a launch per head). */
  g_autofree guint8 *o1 = download_raw(d.o), *lse1 = download_raw(d.lse), *dq1 = download_raw(d.dq);
  g_autofree guint8 *dk1 = download_raw(d.dk), *dv1 = download_raw(d.dv);
  for (guint64 bound = ROK_CL_CHUNK_FLOPS; bound > 0; bound = bound == 1 ? 0 : 1) {
    rok_cl_kernels_set_chunk_flops(f->kernels, bound);
    rok_cl_attention_forward(f->kernels, a, d.lse, &error);
    rok_cl_attention_backward(f->kernels, a, d.lse, &p.dout_view, &dq, &dk, &dv, &error);
    g_assert_no_error(error);
    assert_same_bytes(d.o, o1, "attention output");
    assert_same_bytes(d.lse, lse1, "attention lse");
    assert_same_bytes(d.dq, dq1, "attention dq");
    assert_same_bytes(d.dk, dk1, "attention dk");
    assert_same_bytes(d.dv, dv1, "attention dv");
  }
  rok_cl_kernels_set_chunk_flops(f->kernels, 0);
  buffers_free(&d);
  g_free(p.q), g_free(p.k), g_free(p.v), g_free(p.dout);
}

static void test_causal_gqa(gconstpointer data) {
  run_case((Fixture *)data, &(Shape){.batch = 2, .heads = 4, .kv_heads = 2, .sq = 19, .sk = 19, .d = 24,
                                     .causal = TRUE});
}

static void test_dropout_cross(gconstpointer data) {
  run_case((Fixture *)data, &(Shape){.batch = 1, .heads = 3, .kv_heads = 3, .sq = 37, .sk = 45, .d = 16,
                                     .dropout = 0.2});
}

/* More queries than keys under a causal mask: the first rows see nothing. */
static void test_masked_rows(gconstpointer data) {
  run_case((Fixture *)data, &(Shape){.batch = 1, .heads = 2, .kv_heads = 1, .sq = 12, .sk = 5, .d = 8,
                                     .causal = TRUE, .dropout = 0.1});
}

static void test_errors(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokClBuffer) x = zeros(f, f->act, 64, "x");
  g_autoptr(RokClBuffer) lse = zeros(f, ROK_DTYPE_FP32, 256, "lse");
  RokClHeads view = {.buffer = x, .row_stride = 4};
  RokClAttention a = {.batch = 1, .heads = 3, .kv_heads = 2, .queries = 4, .keys = 4, .head_dim = 4,
                      .q = view, .k = view, .v = view, .o = view};
  g_assert_false(rok_cl_attention_forward(f->kernels, &a, lse, &error));
  g_assert_nonnull(strstr(error->message, "kv_heads"));
  g_clear_error(&error);
  a.heads = 2, a.head_dim = 300;
  g_assert_false(rok_cl_attention_forward(f->kernels, &a, lse, &error));
  g_assert_nonnull(strstr(error->message, "head_dim"));
  g_clear_error(&error);
  a.head_dim = 4, a.queries = 40; /* rows past the end of x */
  g_assert_false(rok_cl_attention_forward(f->kernels, &a, lse, &error));
  g_assert_nonnull(strstr(error->message, "'x'"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  Fixture *f = fixture_open(), *f32 = fixture_variant(f->device, ROK_DTYPE_FP32, FALSE);
  add_both(f, f32, "attention", "causal-gqa", test_causal_gqa);
  add_both(f, f32, "attention", "dropout-cross", test_dropout_cross);
  add_both(f, f32, "attention", "masked-rows", test_masked_rows);
  g_test_add_data_func("/opencl/attention/errors", f, test_errors);
  int status = g_test_run();
  fixture_close(f32);
  fixture_close(f);
  return status;
}

#endif /* ROK_WITH_OPENCL */
