/* Batched GEMM against a CPU reference: odd shapes (not multiples of any
 * tile), every transpose combination, strided and grouped batches, fp32
 * accumulation, bias; reproducibility; the stand-in shape. */
#include <glib.h>

#ifndef ROK_WITH_OPENCL
int main(void) {
  return 77; /* built without OpenCL */
}
#else

#include "test-opencl-common.h"

/* Element (r, c) of a logical operand in a batch entry. */
static double at(const float *x, const RokClMatrix *m, guint64 z, guint64 inner, guint64 r, guint64 c) {
  guint64 group = MAX(m->group, 1);
  guint64 base = m->offset + (z / inner) * m->stride + ((z % inner) / group) * m->head_stride;
  return x[base + (m->trans ? c * m->ld + r : r * m->ld + c)];
}

/* C = alpha·op(A)·op(B) + beta·C0 + bias, in double. */
static double *reference(const RokClGemm *g, const float *a, const float *b, const float *c0, const float *bias) {
  guint64 inner = MAX(g->inner, 1);
  double *c = g_new0(double, g->c.buffer->elements);
  for (guint64 i = 0; i < g->c.buffer->elements; i++)
    c[i] = c0[i];
  for (guint64 z = 0; z < g->batch; z++)
    for (guint64 r = 0; r < g->m; r++)
      for (guint64 col = 0; col < g->n; col++) {
        double sum = 0.0;
        for (guint64 k = 0; k < g->k; k++)
          sum += at(a, &g->a, z, inner, r, k) * at(b, &g->b, z, inner, k, col);
        guint64 where = g->c.offset + (z / inner) * g->c.stride + (z % inner) * g->c.head_stride + r * g->c.ld + col;
        c[where] = g->alpha * sum + g->beta * c[where] + (bias != NULL ? bias[col] : 0.0);
      }
  return c;
}

/* Run g on random data, compare with the reference, rerun and compare bits. */
static void check_gemm(Fixture *f, RokClGemm *g, guint64 a_elements, guint64 b_elements, guint64 c_elements,
                       RokDtype c_dtype, gboolean with_bias, const char *what) {
  g_autoptr(GError) error = NULL;
  g_autofree float *a = random_floats(1, a_elements, -1, 1), *b = random_floats(2, b_elements, -1, 1);
  g_autofree float *c0 = random_floats(3, c_elements, -1, 1), *bias = random_floats(4, g->n, -1, 1);
  round_to_act(f, a, a_elements);
  round_to_act(f, b, b_elements);
  round_to_act(f, bias, g->n);
  if (c_dtype != ROK_DTYPE_FP32)
    round_to_act(f, c0, c_elements);
  g_autoptr(RokClBuffer) da = upload(f, f->act, a, a_elements, "A");
  g_autoptr(RokClBuffer) db = upload(f, f->act, b, b_elements, "B");
  g_autoptr(RokClBuffer) dc = upload(f, c_dtype, c0, c_elements, "C");
  g_autoptr(RokClBuffer) dbias = upload(f, f->act, bias, g->n, "bias");
  g->a.buffer = da, g->b.buffer = db, g->c.buffer = dc;
  g->bias = with_bias ? dbias : NULL;
  rok_cl_gemm(f->kernels, g, &error);
  g_assert_no_error(error);
  g_autofree float *got = download(dc);
  g_autofree double *want = reference(g, a, b, c0, with_bias ? bias : NULL);
  gboolean f32 = c_dtype == ROK_DTYPE_FP32;
  assert_close(got, want, c_elements, f32 ? 2e-5 : f->rtol, f32 ? 1e-5 : f->atol, what);
  /* Same inputs, same bits: again, and again in chunks (a launch per tile,
   * per few tiles, per few tile rows or batch entries). */
  g_autofree guint8 *first = download_raw(dc);
  g_autofree guint8 *c0_raw = g_malloc(dc->bytes + 8);
  g_assert_true(rok_cl_dtype_from_float(c_dtype, c0, c0_raw, c_elements));
  const guint64 k = MAX(g->k, 1);
  const guint64 bounds[] = {ROK_CL_CHUNK_FLOPS, 1, 3 * 2 * 64 * 64 * k, 2 * 128 * 128 * (g->m + g->n) * k};
  for (gsize i = 0; i < G_N_ELEMENTS(bounds); i++) {
    rok_cl_kernels_set_chunk_flops(f->kernels, bounds[i]);
    rok_cl_buffer_write(dc, ROK_CL_QUEUE_COMPUTE, 0, dc->bytes, c0_raw, TRUE, 0, NULL, NULL, &error);
    rok_cl_gemm(f->kernels, g, &error);
    g_assert_no_error(error);
    assert_same_bytes(dc, first, what);
  }
  rok_cl_kernels_set_chunk_flops(f->kernels, 0);
}

/* A flag set: a GEMM in chunks stops between them, cancelled. */
static void test_cancel(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokClBuffer) x = zeros(f, f->act, 64 * 64, "x");
  g_autoptr(RokClBuffer) y = zeros(f, f->act, 64 * 64, "y");
  RokClGemm g = {.batch = 8, .m = 64, .n = 64, .k = 64, .a = rok_cl_matrix(x, 64, FALSE),
                 .b = rok_cl_matrix(x, 64, FALSE), .c = rok_cl_matrix(y, 64, FALSE), .alpha = 1, .beta = 0};
  gint flag = 1;
  rok_cl_kernels_set_cancel(f->kernels, &flag);
  rok_cl_kernels_set_chunk_flops(f->kernels, G_GUINT64_CONSTANT(1) << 40);
  g_assert_true(rok_cl_gemm(f->kernels, &g, &error)); /* one launch: nothing between to stop at */
  rok_cl_kernels_set_chunk_flops(f->kernels, 1);
  g_assert_false(rok_cl_gemm(f->kernels, &g, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_CANCELLED);
  rok_cl_kernels_set_cancel(f->kernels, NULL);
  rok_cl_kernels_set_chunk_flops(f->kernels, 0);
  g_assert_true(rok_cl_device_finish(f->device, ROK_CL_QUEUE_COMPUTE, NULL));
}

static void test_transposes(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  const guint64 shapes[][3] = {{1, 1, 1}, {37, 29, 53}, {70, 65, 33}, {5, 131, 2}, {300, 70, 37}};
  for (gsize s = 0; s < G_N_ELEMENTS(shapes); s++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        guint64 m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        RokClGemm g = {.batch = 1, .m = m, .n = n, .k = k, .alpha = 1.0f, .beta = 0.0f};
        g.a = (RokClMatrix){.ld = ta ? m : k, .trans = ta};
        g.b = (RokClMatrix){.ld = tb ? k : n, .trans = tb};
        g.c = (RokClMatrix){.ld = n};
        g_autofree char *what = g_strdup_printf("gemm %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
                                                " ta=%d tb=%d", m, n, k, ta, tb);
        check_gemm(f, &g, m * k, k * n, m * n, f->act, FALSE, what);
      }
}

/* Three batch entries with offsets, padded rows, alpha, beta and a bias. */
static void test_strided_batch(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  const guint64 m = 19, n = 23, k = 41, batch = 3;
  RokClGemm g = {.batch = batch, .m = m, .n = n, .k = k, .alpha = 0.5f, .beta = -1.25f};
  g.a = (RokClMatrix){.offset = 7, .ld = k + 3, .stride = m * (k + 3) + 5};
  g.b = (RokClMatrix){.offset = 2, .ld = k + 1, .stride = n * (k + 1), .trans = TRUE};
  g.c = (RokClMatrix){.offset = 1, .ld = n + 2, .stride = m * (n + 2) + 3};
  check_gemm(f, &g, 7 + batch * (m * (k + 3) + 5), 2 + batch * n * (k + 1), 1 + batch * (m * (n + 2) + 3), f->act,
             TRUE, "strided batch with bias");
}

/* Attention-style: batch 2 × 4 heads in a token-major [tokens, heads·d]
 * tensor, K shared by pairs of heads (grouped-query), scores = Q·Kᵀ. */
static void test_heads_and_groups(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  const guint64 outer = 2, heads = 4, kv_heads = 2, s = 13, d = 9;
  RokClGemm g = {.batch = outer * heads, .inner = heads, .m = s, .n = s, .k = d, .alpha = 0.3f};
  g.a = (RokClMatrix){.ld = heads * d, .stride = s * heads * d, .head_stride = d};
  g.b = (RokClMatrix){.ld = kv_heads * d, .stride = s * kv_heads * d, .head_stride = d, .group = 2, .trans = TRUE};
  g.c = (RokClMatrix){.ld = s, .stride = heads * s * s, .head_stride = s * s};
  check_gemm(f, &g, outer * s * heads * d, outer * s * kv_heads * d, outer * heads * s * s, f->act, FALSE,
             "heads and groups");
}

/* Weight gradient: dW (fp32) += Xᵀ·dY, accumulated over two calls. */
static void test_fp32_accumulate(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  const guint64 tokens = 45, in = 27, out = 31;
  RokClGemm g = {.batch = 1, .m = in, .n = out, .k = tokens, .alpha = 1.0f, .beta = 1.0f};
  g.a = (RokClMatrix){.ld = in, .trans = TRUE};
  g.b = (RokClMatrix){.ld = out};
  g.c = (RokClMatrix){.ld = out};
  check_gemm(f, &g, tokens * in, tokens * out, in * out, ROK_DTYPE_FP32, TRUE, "fp32 weight gradient");
}

static void test_errors(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokClBuffer) a = zeros(f, f->act, 100, "small A");
  g_autoptr(RokClBuffer) c32 = zeros(f, ROK_DTYPE_FP32, 100, "C");
  g_autoptr(RokClBuffer) u8 = zeros(f, ROK_DTYPE_U8, 100, "mask");
  RokClGemm g = {.batch = 1, .m = 10, .n = 10, .k = 11, .alpha = 1.0f};
  g.a = rok_cl_matrix(a, 11, FALSE);
  g.b = rok_cl_matrix(a, 10, FALSE);
  g.c = rok_cl_matrix(c32, 10, FALSE);
  g_assert_false(rok_cl_gemm(f->kernels, &g, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
  g_assert_nonnull(strstr(error->message, "small A"));
  g_clear_error(&error);
  g.k = 10;
  g.a = rok_cl_matrix(a, 10, FALSE);
  g.c = rok_cl_matrix(u8, 10, FALSE);
  g_assert_false(rok_cl_gemm(f->kernels, &g, &error));
  g_assert_nonnull(strstr(error->message, "mask"));
  g_clear_error(&error);
  g.c = rok_cl_matrix(c32, 5, FALSE); /* rows would overlap */
  g_assert_false(rok_cl_gemm(f->kernels, &g, &error));
  g_assert_nonnull(strstr(error->message, "ld"));
}

static void test_standin(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  const guint64 cases[][3] = {
      {G_GUINT64_CONSTANT(2) * 4096 * 4096 * 4096, 4096 * 4096, 4096 * 4096}, /* a square GEMM's worth */
      {G_GUINT64_CONSTANT(1) << 34, 1000, 1000},                            /* many FLOPs, small buffers */
      {100, 1 << 20, 1 << 20},                                               /* few FLOPs, big buffers */
      {1000000, 12345, 678},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    RokClStandin s = {0};
    g_assert_true(rok_cl_standin_shape(cases[i][0], cases[i][1], cases[i][2], &s, &error));
    g_assert_no_error(error);
    double flops = 2.0 * s.batch * s.m * s.n * s.k;
    g_assert_cmpfloat(fabs(flops - cases[i][0]) / cases[i][0], <, 0.05);
    g_assert_cmpuint(s.m + s.k, <=, cases[i][1]);
    g_assert_cmpuint(s.k + s.n, <=, cases[i][1]);
    g_assert_cmpuint(s.m * s.n, <=, cases[i][2]);
  }
  g_assert_false(rok_cl_standin_shape(100, 1, 10, &(RokClStandin){0}, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_clear_error(&error);
  /* It runs over buffers of the given sizes, and says what it does. */
  RokClStandin s;
  g_assert_true(rok_cl_standin_shape(3000000, 5000, 3000, &s, &error));
  g_autoptr(RokClBuffer) in = zeros(f, f->act, 5000, "in");
  g_autoptr(RokClBuffer) out = zeros(f, f->act, 3000, "out");
  rok_cl_fill_uniform(f->kernels, in, 1, 2, -1, 1, &error);
  rok_cl_standin_run(f->kernels, &s, in, out, &error);
  g_assert_no_error(error);
  g_autofree char *text = rok_cl_standin_describe("layer0.custom", "other", &s);
  g_assert_nonnull(strstr(text, "stand-in GEMM"));
  g_assert_nonnull(strstr(text, "layer0.custom"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  Fixture *f = fixture_open(), *f32 = fixture_variant(f->device, ROK_DTYPE_FP32, FALSE);
  add_both(f, f32, "gemm", "transposes", test_transposes);
  add_both(f, f32, "gemm", "strided-batch", test_strided_batch);
  add_both(f, f32, "gemm", "heads-and-groups", test_heads_and_groups);
  add_both(f, f32, "gemm", "fp32-accumulate", test_fp32_accumulate);
  g_test_add_data_func("/opencl/gemm/errors", f, test_errors);
  g_test_add_data_func("/opencl/gemm/standin", f, test_standin);
  g_test_add_data_func("/opencl/gemm/cancel", f, test_cancel);
  int status = g_test_run();
  fixture_close(f32);
  fixture_close(f);
  return status;
}

#endif /* ROK_WITH_OPENCL */
