/* Mixture-of-experts kernels against CPU references at small odd shapes:
 * the router's softmax, top-k (ties to the lower expert) and its backward
 * (itself checked against finite differences of the loss it differentiates),
 * the dispatch grouped by expert (dropless and capacity-bounded, with
 * drops and padding), combine and their backward passes, and Qwen2-MoE's
 * sigmoid gate. Each is rerun and must give the same bits. */
#include <glib.h>

#ifndef ROK_WITH_OPENCL
int main(void) {
  return 77; /* built without OpenCL */
}
#else

#include "test-opencl-common.h"


static RokClBuffer *acts(Fixture *f, float *host, gsize n, const char *label) {
  round_to_act(f, host, n);
  return upload(f, f->act, host, n, label);
}

static gint64 *download_i64(RokClBuffer *buffer) { return (gint64 *)download_raw(buffer); }

/* ---- Router --------------------------------------------------------------- */

/* The top-k of one token's probabilities, as the kernel picks them. */
static void topk_reference(const float *p, guint e, guint k, gint64 *idx) {
  for (guint j = 0; j < k; j++) {
    gint best = -1;
    for (guint x = 0; x < e; x++) {
      gboolean taken = FALSE;
      for (guint q = 0; q < j; q++)
        taken = taken || idx[q] == x;
      if (!taken && (best < 0 || p[x] > p[best]))
        best = (gint)x;
    }
    idx[j] = best;
  }
}

/* The loss the router's backward differentiates, for one token's logits
 * with its picks fixed: Σ_j c_j·w_j + aux·Σ_e counts_e·p_e. */
static double router_loss(const double *l, guint e, guint k, const gint64 *idx, const double *c, double aux,
                          const gint64 *counts) {
  double top = -INFINITY, sum = 0, picked = 0, loss = 0;
  for (guint x = 0; x < e; x++)
    top = MAX(top, l[x]);
  for (guint x = 0; x < e; x++)
    sum += exp(l[x] - top);
  for (guint j = 0; j < k; j++)
    picked += exp(l[idx[j]] - top) / sum;
  for (guint j = 0; j < k; j++)
    loss += c[j] * exp(l[idx[j]] - top) / sum / picked;
  for (guint x = 0; x < e; x++)
    loss += aux * (double)counts[x] * exp(l[x] - top) / sum;
  return loss;
}

static void test_router(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  RokClMoe moe = {.tokens = 37, .experts = 5, .top_k = 2};
  guint64 te = moe.tokens * moe.experts, tk = moe.tokens * moe.top_k;
  g_autofree float *logits = random_floats(1, te, -2, 2);
  for (guint x = 0; x < moe.experts; x++)
    logits[3 * moe.experts + x] = 0.5f; /* a tie: experts 0 and 1 win */
  RokClBuffer *logits_buffer = acts(f, logits, te, "logits");
  RokClBuffer *probs = zeros(f, ROK_DTYPE_FP32, te, "probs"), *indices = zeros(f, ROK_DTYPE_I64, tk, "indices");
  RokClBuffer *weights = zeros(f, ROK_DTYPE_FP32, tk, "weights");
  g_assert_true(rok_cl_moe_route_forward(f->kernels, &moe, logits_buffer, probs, indices, weights, &error));
  g_assert_no_error(error);
  g_autofree float *p = download(probs), *w = download(weights);
  g_autofree gint64 *idx = download_i64(indices);
  g_autofree double *want_p = g_new(double, te), *want_w = g_new(double, tk);
  for (guint64 t = 0; t < moe.tokens; t++) {
    double top = -INFINITY, sum = 0;
    for (guint x = 0; x < moe.experts; x++)
      top = MAX(top, logits[t * moe.experts + x]);
    for (guint x = 0; x < moe.experts; x++)
      sum += exp(logits[t * moe.experts + x] - top);
    for (guint x = 0; x < moe.experts; x++)
      want_p[t * moe.experts + x] = exp(logits[t * moe.experts + x] - top) / sum;
    gint64 pick[2];
    /* From the device's probabilities: no near-tie flips. */
    topk_reference(p + t * moe.experts, moe.experts, moe.top_k, pick);
    double total = p[t * moe.experts + pick[0]] + p[t * moe.experts + pick[1]];
    for (guint j = 0; j < moe.top_k; j++) {
      g_assert_cmpint(idx[t * moe.top_k + j], ==, pick[j]);
      want_w[t * moe.top_k + j] = p[t * moe.experts + pick[j]] / total;
    }
  }
  g_assert_cmpint(idx[3 * moe.top_k], ==, 0);
  g_assert_cmpint(idx[3 * moe.top_k + 1], ==, 1);
  assert_close(p, want_p, te, 1e-5, 1e-6, "router probabilities");
  assert_close(w, want_w, tk, 1e-5, 1e-6, "router weights");

  /* Backward, with the load-balancing loss, against finite differences. */
  g_autofree float *dw = random_floats(2, tk, -1, 1);
  RokClBuffer *dweights = upload(f, ROK_DTYPE_FP32, dw, tk, "dweights");
  RokClBuffer *counts = zeros(f, ROK_DTYPE_I64, moe.experts, "counts");
  RokClBuffer *dlogits = zeros(f, f->act, te, "dlogits");
  float aux = 0.05f;
  g_assert_true(rok_cl_moe_count(f->kernels, &moe, indices, counts, &error) &&
                rok_cl_moe_route_backward(f->kernels, &moe, probs, indices, dweights, counts, aux, dlogits, &error));
  g_assert_no_error(error);
  g_autofree gint64 *n = download_i64(counts);
  gint64 want_n[5] = {0};
  for (guint64 i = 0; i < tk; i++)
    want_n[idx[i]]++;
  g_assert_cmpmem(n, sizeof want_n, want_n, sizeof want_n);
  g_autofree float *dl = download(dlogits);
  g_autofree double *want_dl = g_new(double, te);
  for (guint64 t = 0; t < moe.tokens; t++) {
    double l[5], c[2] = {dw[t * 2], dw[t * 2 + 1]};
    for (guint x = 0; x < moe.experts; x++)
      l[x] = logits[t * moe.experts + x];
    for (guint x = 0; x < moe.experts; x++) {
      double h = 1e-5, save = l[x];
      l[x] = save + h;
      double up = router_loss(l, moe.experts, moe.top_k, idx + t * 2, c, aux, n);
      l[x] = save - h;
      double down = router_loss(l, moe.experts, moe.top_k, idx + t * 2, c, aux, n);
      l[x] = save;
      want_dl[t * moe.experts + x] = (up - down) / (2 * h);
    }
  }
  assert_close(dl, want_dl, te, f->rtol + 1e-4, f->atol + 1e-4, "router logits' gradient");
  SNAPSHOT(dlogits);
  g_assert_true(rok_cl_moe_route_backward(f->kernels, &moe, probs, indices, dweights, counts, aux, dlogits, &error));
  ASSERT_RERUN_SAME(dlogits, "router backward");
  RokClBuffer *all[] = {logits_buffer, probs, indices, weights, dweights, counts, dlogits};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    rok_cl_buffer_free(all[i]);
}

/* ---- Dispatch and combine ------------------------------------------------- */

/* The kernel's layout: experts in order, each its choices in order, up to
 * the capacity (0: all), padding -1. Returns the rows. */
static guint64 place_reference(const gint64 *idx, guint64 choices, guint experts, guint64 capacity, gint64 *row_token) {
  guint64 r = 0;
  for (guint e = 0; e < experts; e++) {
    guint64 n = 0;
    for (guint64 i = 0; i < choices; i++)
      if (idx[i] == e && (capacity == 0 || n < capacity))
        row_token[r + n++] = (gint64)i;
    for (; capacity > 0 && n < capacity; n++)
      row_token[r + n] = -1;
    r += n;
  }
  return r;
}

static void check_dispatch(Fixture *f, guint64 capacity) {
  g_autoptr(GError) error = NULL;
  RokClMoe moe = {.tokens = 23, .experts = 4, .top_k = 2};
  guint64 h = 7, tk = moe.tokens * moe.top_k, rows = capacity > 0 ? capacity * moe.experts : tk;
  g_autoptr(GRand) rand = g_rand_new_with_seed(3);
  g_autofree gint64 *idx = g_new(gint64, tk);
  for (guint64 t = 0; t < moe.tokens; t++) {
    /* Expert 0 is popular: it overflows a capacity of 9. */
    idx[2 * t] = g_rand_int_range(rand, 0, 3) == 0 ? g_rand_int_range(rand, 1, 4) : 0;
    idx[2 * t + 1] = (idx[2 * t] + g_rand_int_range(rand, 1, 4)) % 4;
  }
  g_autofree float *w = random_floats(4, tk, 0, 1), *x = random_floats(5, moe.tokens * h, -1, 1);
  g_autofree float *y = random_floats(6, rows * h, -1, 1), *dout = random_floats(7, moe.tokens * h, -1, 1);
  RokClBuffer *indices = upload_raw(f, ROK_DTYPE_I64, idx, tk, "indices");
  RokClBuffer *weights = upload(f, ROK_DTYPE_FP32, w, tk, "weights");
  RokClBuffer *xs = acts(f, x, moe.tokens * h, "tokens"), *ys = acts(f, y, rows * h, "expert rows");
  RokClBuffer *douts = acts(f, dout, moe.tokens * h, "dout");
  RokClBuffer *counts = zeros(f, ROK_DTYPE_I64, moe.experts, "counts");
  RokClBuffer *row_token = zeros(f, ROK_DTYPE_I64, rows, "row_token");
  RokClBuffer *row_weight = zeros(f, ROK_DTYPE_FP32, rows, "row_weight");
  RokClBuffer *routed = zeros(f, f->act, rows * h, "routed"), *inv = zeros(f, ROK_DTYPE_I64, tk, "inv");
  RokClBuffer *out = zeros(f, f->act, moe.tokens * h, "out"), *dy = zeros(f, f->act, rows * h, "dy");
  RokClBuffer *drow = zeros(f, ROK_DTYPE_FP32, rows, "drow"), *dchoice = zeros(f, ROK_DTYPE_FP32, tk, "dchoice");
  g_assert_true(rok_cl_moe_count(f->kernels, &moe, indices, counts, &error) &&
                rok_cl_moe_place(f->kernels, &moe, indices, weights, counts, capacity, row_token, row_weight, rows,
                                 &error) &&
                rok_cl_moe_gather(f->kernels, &moe, row_token, xs, NULL, routed, rows, h, &error) &&
                rok_cl_moe_invert(f->kernels, &moe, row_token, rows, inv, &error) &&
                rok_cl_moe_combine(f->kernels, &moe, inv, ys, row_weight, out, rows, h, &error) &&
                rok_cl_moe_gather(f->kernels, &moe, row_token, douts, row_weight, dy, rows, h, &error) &&
                rok_cl_moe_row_dot(f->kernels, &moe, row_token, douts, ys, drow, FALSE, rows, h, &error) &&
                rok_cl_moe_unpermute(f->kernels, &moe, inv, drow, rows, dchoice, FALSE, &error));
  g_assert_no_error(error);

  g_autofree gint64 *want_rt = g_new(gint64, rows), *got_rt = download_i64(row_token), *got_inv = download_i64(inv);
  g_assert_cmpuint(place_reference(idx, tk, moe.experts, capacity, want_rt), ==, rows);
  g_assert_cmpmem(got_rt, rows * 8, want_rt, rows * 8);
  g_autofree gint64 *want_inv = g_new(gint64, tk);
  for (guint64 i = 0; i < tk; i++)
    want_inv[i] = -1;
  guint64 dropped = tk, padding = 0;
  for (guint64 r = 0; r < rows; r++) {
    if (want_rt[r] >= 0)
      want_inv[want_rt[r]] = (gint64)r, dropped--;
    else
      padding++;
  }
  g_assert_cmpmem(got_inv, tk * 8, want_inv, tk * 8);
  if (capacity > 0) /* the case exercises both */
    g_assert_true(dropped > 0 && padding > 0);

  g_autofree double *want_routed = g_new0(double, rows * h), *want_dy = g_new0(double, rows * h);
  g_autofree double *want_rw = g_new0(double, rows), *want_drow = g_new0(double, rows);
  g_autofree double *want_out = g_new0(double, moe.tokens * h), *want_dchoice = g_new0(double, tk);
  for (guint64 r = 0; r < rows; r++) {
    gint64 i = want_rt[r];
    if (i < 0)
      continue;
    guint64 t = (guint64)i / moe.top_k;
    want_rw[r] = w[i];
    for (guint64 c = 0; c < h; c++) {
      want_routed[r * h + c] = x[t * h + c];
      want_out[t * h + c] += w[i] * y[r * h + c];
      want_dy[r * h + c] = w[i] * dout[t * h + c];
      want_drow[r] += dout[t * h + c] * y[r * h + c];
    }
    want_dchoice[i] = want_drow[r];
  }
  g_autofree float *got_routed = download(routed), *got_rw = download(row_weight), *got_out = download(out);
  g_autofree float *got_dy = download(dy), *got_drow = download(drow), *got_dchoice = download(dchoice);
  assert_close(got_routed, want_routed, rows * h, 0, 0, "dispatched rows");
  assert_close(got_rw, want_rw, rows, 0, 0, "row weights");
  assert_close(got_out, want_out, moe.tokens * h, f->rtol, f->atol, "combine");
  assert_close(got_dy, want_dy, rows * h, f->rtol, f->atol, "combine backward (rows)");
  assert_close(got_drow, want_drow, rows, 1e-5, 1e-6, "combine backward (weights)");
  assert_close(got_dchoice, want_dchoice, tk, 1e-5, 1e-6, "dispatch backward (weights)");
  SNAPSHOT(out);
  g_assert_true(rok_cl_moe_combine(f->kernels, &moe, inv, ys, row_weight, out, rows, h, &error));
  ASSERT_RERUN_SAME(out, "combine");
  RokClBuffer *all[] = {indices, weights, xs, ys, douts, counts, row_token, row_weight, routed, inv, out, dy, drow,
                        dchoice};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    rok_cl_buffer_free(all[i]);
}

static void test_dispatch_dropless(gconstpointer data) { check_dispatch((Fixture *)data, 0); }

static void test_dispatch_capacity(gconstpointer data) { check_dispatch((Fixture *)data, 9); }

/* ---- Qwen2-MoE's shared-expert gate ----------------------------------------- */

static void test_gate(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  guint64 t = 19, h = 9;
  g_autofree float *y = random_floats(8, t * h, -1, 1), *g = random_floats(9, t, -3, 3);
  g_autofree float *dout = random_floats(10, t * h, -1, 1);
  RokClBuffer *ys = acts(f, y, t * h, "y"), *gs = acts(f, g, t, "g"), *douts = acts(f, dout, t * h, "dout");
  RokClBuffer *out = zeros(f, f->act, t * h, "out"), *dy = zeros(f, f->act, t * h, "dy");
  RokClBuffer *dg = zeros(f, f->act, t, "dg");
  g_assert_true(rok_cl_moe_gate_forward(f->kernels, ys, gs, out, t, h, &error) &&
                rok_cl_moe_gate_backward(f->kernels, ys, gs, douts, dy, dg, t, h, &error));
  g_assert_no_error(error);
  g_autofree double *want_out = g_new(double, t * h), *want_dy = g_new(double, t * h), *want_dg = g_new0(double, t);
  for (guint64 i = 0; i < t; i++) {
    double s = 1 / (1 + exp(-g[i]));
    for (guint64 c = 0; c < h; c++) {
      want_out[i * h + c] = y[i * h + c] * s;
      want_dy[i * h + c] = dout[i * h + c] * s;
      want_dg[i] += dout[i * h + c] * y[i * h + c] * s * (1 - s);
    }
  }
  g_autofree float *got_out = download(out), *got_dy = download(dy), *got_dg = download(dg);
  assert_close(got_out, want_out, t * h, f->rtol, f->atol, "gate forward");
  assert_close(got_dy, want_dy, t * h, f->rtol, f->atol, "gate backward (y)");
  assert_close(got_dg, want_dg, t, f->rtol, f->atol, "gate backward (g)");
  RokClBuffer *all[] = {ys, gs, douts, out, dy, dg};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    rok_cl_buffer_free(all[i]);
}

/* Bad shapes are refused, naming the launcher. */
static void test_checks(gconstpointer data) {
  Fixture *f = (Fixture *)data;
  g_autoptr(GError) error = NULL;
  RokClMoe moe = {.tokens = 4, .experts = 2, .top_k = 3};
  RokClBuffer *b = zeros(f, ROK_DTYPE_I64, 12, "indices");
  g_assert_false(rok_cl_moe_count(f->kernels, &moe, b, b, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
  g_assert_nonnull(strstr(error->message, "moe_count"));
  g_clear_error(&error);
  moe.top_k = 2;
  g_assert_false(rok_cl_moe_place(f->kernels, &moe, b, b, b, 0, b, b, 7, &error));
  g_assert_nonnull(strstr(error->message, "7 rows for 8 choices"));
  rok_cl_buffer_free(b);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  Fixture *f = fixture_open(), *f32 = fixture_variant(f->device, ROK_DTYPE_FP32, FALSE);
  add_both(f, f32, "moe", "router", test_router);
  add_both(f, f32, "moe", "dispatch-dropless", test_dispatch_dropless);
  add_both(f, f32, "moe", "dispatch-capacity", test_dispatch_capacity);
  add_both(f, f32, "moe", "gate", test_gate);
  g_test_add_data_func("/opencl/moe/checks", f, test_checks);
  int status = g_test_run();
  fixture_close(f32);
  fixture_close(f);
  return status;
}

#endif /* ROK_WITH_OPENCL */
