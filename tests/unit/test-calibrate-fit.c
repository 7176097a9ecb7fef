/* The GEMM model fitted to timings (calib-fit.c): timings made by the model
 * itself, with noise, give its parameters back and predict shapes the fit
 * never saw; a profile made from such measurements carries the fit and the
 * shapes, and the simulator warns of GEMMs far outside them. */
#include <math.h>
#include <string.h>

#include "rok/calibrate.h"
#include "rok/core.h"
#include "rok/sim.h"

/* The GEMM model of SMS SMs, TM×TN tiles and RATE in full waves. */
static RokHw truth(guint64 sms, guint64 tm, guint64 tn, double rate, double hbm) {
  RokCalibGemmFit fit = {.sm_count = sms, .tile = {tm, tn}, .rate = rate};
  return rok_calib_gemm_fit_hw(&fit, hbm);
}

/* A random GEMM op (sizes spread in log from 16 to 4096, forward or
 * backward, batch 1 to 4), timed by HW's model times (1 + noise·u), u
 * uniform in [-1, 1]. */
static RokCalibGemmObs observe(GRand *rand, const RokHw *hw, double noise) {
  RokCalibGemmObs o = {.shape = ROK_HW_GEMM_PLAIN, .backward = g_rand_boolean(rand)};
  o.dims[0] = (guint64)g_rand_int_range(rand, 1, 5);
  for (guint d = 1; d < 4; d++)
    o.dims[d] = (guint64)llround(exp(g_rand_double_range(rand, log(16), log(4096))));
  double b = (double)o.dims[0], m = (double)o.dims[1], n = (double)o.dims[2], k = (double)o.dims[3];
  o.flops = 2 * b * m * n * k * (o.backward ? 2 : 1);
  o.bytes = 2 * b * (m * k + k * n + m * n) * (o.backward ? 2 : 1);
  o.seconds = rok_hw_gemm_op_seconds(hw, o.shape, o.dims, o.backward, o.flops, o.bytes) *
              (1 + noise * g_rand_double_range(rand, -1, 1));
  return o;
}

static void check_recovers(double noise, guint64 sms, guint64 tm, guint64 tn) {
  RokHw hw = truth(sms, tm, tn, 3e12, 1.5e12);
  g_autoptr(GRand) rand = g_rand_new_with_seed(17);
  RokCalibGemmObs obs[120], held_out[60];
  for (guint i = 0; i < G_N_ELEMENTS(obs); i++)
    obs[i] = observe(rand, &hw, noise);
  for (guint i = 0; i < G_N_ELEMENTS(held_out); i++)
    held_out[i] = observe(rand, &hw, 0);
  RokCalibGemmFit fit;
  g_assert_true(rok_calib_fit_gemm(obs, G_N_ELEMENTS(obs), hw.gpu.hbm_bandwidth, 32, &fit));
  g_test_message("noise %.0f%%: %" G_GUINT64_FORMAT " SMs, %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
                 " tiles, %.4g FLOP/s; errors median %.2f%%, worst %.2f%%",
                 100 * noise, fit.sm_count, fit.tile[0], fit.tile[1], fit.rate, 100 * fit.median_error,
                 100 * fit.worst_error);
  g_assert_cmpuint(fit.sm_count, ==, sms);
  g_assert_cmpuint(fit.tile[0], ==, tm);
  g_assert_cmpuint(fit.tile[1], ==, tn);
  g_assert_cmpfloat(fabs(fit.rate / 3e12 - 1), <=, noise / 2 + 1e-6);
  g_assert_cmpfloat(fit.worst_error, <=, 2 * noise + 1e-6);
  /* Shapes it never saw, against the noiseless model. */
  RokHw fitted = rok_calib_gemm_fit_hw(&fit, hw.gpu.hbm_bandwidth);
  double median = 0, worst = 0;
  rok_calib_gemm_errors(&fitted, held_out, G_N_ELEMENTS(held_out), &median, &worst);
  g_test_message("held out: median %.2f%%, worst %.2f%%", 100 * median, 100 * worst);
  g_assert_cmpfloat(worst, <=, noise / 2 + 1e-6);
}

static void test_exact(void) {
  check_recovers(0, 12, 128, 64);
  check_recovers(0, 3, 32, 256);
}

static void test_noisy(void) {
  check_recovers(0.03, 12, 128, 64);
  check_recovers(0.05, 7, 64, 64);
}

/* Small inner sizes: the bytes bound the time (the roofline), which the
 * fit must keep, not bend the rate to. */
static void test_roofline(void) {
  RokHw hw = truth(4, 64, 64, 2e12, 1e10);
  RokCalibGemmObs obs[40];
  g_autoptr(GRand) rand = g_rand_new_with_seed(3);
  guint bound = 0;
  for (guint i = 0; i < G_N_ELEMENTS(obs); i++) {
    obs[i] = observe(rand, &hw, 0);
    bound += obs[i].seconds == obs[i].bytes / hw.gpu.hbm_bandwidth;
  }
  g_assert_cmpuint(bound, >, 5);
  RokCalibGemmFit fit;
  g_assert_true(rok_calib_fit_gemm(obs, G_N_ELEMENTS(obs), hw.gpu.hbm_bandwidth, 8, &fit));
  g_assert_cmpfloat(fit.worst_error, <, 1e-6);
}

static void test_unusable(void) {
  RokCalibGemmFit fit;
  g_assert_false(rok_calib_fit_gemm(NULL, 0, 1e12, 8, &fit));
  RokCalibGemmObs bad = {.dims = {1, 64, 64, 64}, .flops = 2.0 * 64 * 64 * 64, .bytes = 1, .seconds = 0};
  g_assert_false(rok_calib_fit_gemm(&bad, 1, 1e12, 8, &fit));
}

/* Measurements made by a device of 6 SMs and 64×64 tiles: the profile
 * carries the fit, every shape once, and no measured rate for the kinds
 * the model times. */
static RokCalibration *made_by_model(const RokHw *hw) {
  RokCalibration *c = rok_calibration_new();
  c->trials = 3;
  c->host = (RokCalibHost){.memory = (guint64)16 << 30, .memcpy = {8e9, 8e9, 8e9, 3}};
  RokCalibDevice *d = &c->device;
  d->name = g_strdup("model device");
  d->type = g_strdup("gpu");
  d->compute_units = 6;
  d->memory = (guint64)16 << 30;
  d->elementwise = (RokCalibStat){hw->gpu.hbm_bandwidth, 0, 0, 3};
  d->h2d = d->d2h = (RokCalibStat){1e10, 1e10, 1e10, 3};
  for (guint64 m = 32; m <= 1024; m = m * 3 / 2)
    for (guint64 n = 64; n <= 512; n *= 2) {
      RokCalibGemm g = {.label = "probe", .batch = 1, .m = m, .n = n, .k = 256};
      g.flops = 2.0 * m * n * 256;
      double bytes = 2.0 * (m * 256 + 256 * n + m * n);
      guint64 dims[4] = {1, m, n, 256};
      double s = rok_hw_gemm_op_seconds(hw, ROK_HW_GEMM_PLAIN, dims, FALSE, g.flops, bytes);
      g.rate = (RokCalibStat){g.flops / s, 0, 0, 3};
      g_array_append_val(d->gemms, g);
    }
  /* A linear op forward (fitted: no rate kept) and an add (kept). */
  RokCalibOp linear = {.label = g_strdup("layer"), .kind = ROK_OP_LINEAR, .dims = {1, 512, 768, 256}};
  linear.work = 2.0 * 512 * 768 * 256;
  linear.bytes = 2.0 * (512 * 256 + 256 * 768 + 512 * 768);
  linear.rate.median =
      linear.work / rok_hw_gemm_op_seconds(hw, ROK_HW_GEMM_PLAIN, linear.dims, FALSE, linear.work, linear.bytes);
  g_array_append_val(d->ops, linear);
  RokCalibOp add = {.label = g_strdup("layer"), .kind = ROK_OP_ADD, .dims = {1, 512, 256, 0}, .work = 786432,
                    .bytes = 786432, .rate = {2e9, 2e9, 2e9, 3}};
  g_array_append_val(d->ops, add);
  return c;
}

/* The profile made from made_by_model's calibration (in *C) of 6 SMs,
 * 64x64 tiles. */
static RokHw *fitted_profile(RokCalibration **c) {
  RokHw hw = truth(6, 64, 64, 4e11, 2e11);
  *c = made_by_model(&hw);
  GError *error = NULL;
  RokHw *p = rok_calib_profile(*c, "fitted", &error);
  g_assert_no_error(error);
  return p;
}

static void test_profile(void) {
  g_autoptr(RokCalibration) c = NULL;
  g_autoptr(RokHw) p = fitted_profile(&c);
  GError *error = NULL;
  g_assert_cmpuint(p->gpu.sm_count, ==, 6);
  g_assert_cmpuint(p->gpu.gemm_tile[0], ==, 64);
  g_assert_cmpuint(p->gpu.gemm_tile[1], ==, 64);
  g_assert_cmpfloat(fabs(p->gpu.peak_flops * p->gpu.matmul_efficiency / 4e11 - 1), <, 1e-6);
  g_assert_cmpuint(p->gpu.gemm_curve_len, ==, 0);
  g_assert_null(rok_hw_op_rates(p, "linear"));
  g_assert_nonnull(rok_hw_op_rates(p, "add"));
  /* The observations: the GEMMs alone, then the linear op; each group
   * weighs half. */
  guint n = 0, n_gemms = 0;
  g_autofree RokCalibGemmObs *obs = rok_calib_gemm_observations(&c->device, &n, &n_gemms);
  g_assert_cmpuint(n_gemms, ==, c->device.gemms->len);
  g_assert_cmpuint(n, ==, n_gemms + 1);
  double gemms = 0;
  for (guint i = 0; i < n_gemms; i++)
    gemms += obs[i].weight;
  g_assert_cmpfloat(fabs(gemms - 0.5), <, 1e-12);
  g_assert_cmpfloat(obs[n_gemms].weight, ==, 0.5);
  /* Every GEMM shape once: the probes, and the linear's. */
  g_assert_cmpuint(p->calibrated.gemms_len, ==, c->device.gemms->len + 1);
  g_assert_cmpuint(p->calibrated.elementwise_bytes[0], ==, 786432);
  g_assert_cmpuint(p->calibrated.elementwise_bytes[1], ==, 786432);
  /* Written and read back: the same profile. */
  json_object *o = rok_hw_to_json(p);
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  g_autoptr(RokHw) back = rok_hw_parse("fitted.json", text, strlen(text), &error);
  g_assert_no_error(error);
  json_object *o2 = rok_hw_to_json(back);
  g_autofree char *text2 = rok_json_to_string(o2);
  json_object_put(o2);
  g_assert_cmpstr(text, ==, text2);
  g_autofree char *range = rok_hw_gemm_range_text(back);
  g_assert_cmpstr(range, ==, "m 32-819, n 64-768, k 256-256");
  /* The linear op's own time, forward only (its backward was not timed). */
  g_assert_cmpuint(back->calibrated.gemm_ops_len, ==, 1);
  const RokCalibOp *linear = &g_array_index(c->device.ops, RokCalibOp, 0);
  g_assert_cmpint(rok_hw_gemm_op_measured(back, "linear", linear->dims, FALSE), ==,
                  (gint64)llround(linear->work / linear->rate.median * 1e9));
  g_assert_cmpint(rok_hw_gemm_op_measured(back, "linear", linear->dims, TRUE), ==, -1);
  g_assert_cmpint(rok_hw_gemm_op_measured(back, "attn_scores", linear->dims, FALSE), ==, -1);
  g_autoptr(RokHw) copy = rok_hw_copy(back);
  g_assert_cmpstr(copy->calibrated.gemm_ops[0].kind, ==, "linear");
  g_assert_true(copy->calibrated.gemm_ops != back->calibrated.gemm_ops);
}

/* A GEMM op's backward probed on a CPU device: the profile carries its
 * first kernel's share (where the copy found a processor, over
 * copy_kernel_free_at: 1 where that was not measured), read back the
 * same; a share out of [0.02, 0.98] is refused, naming it. */
static void test_backward_first(void) {
  RokHw hw = truth(6, 64, 64, 4e11, 2e11);
  g_autoptr(RokCalibration) c = made_by_model(&hw);
  RokCalibOp back = g_array_index(c->device.ops, RokCalibOp, 0);
  back.label = g_strdup("layer");
  back.direction = ROK_HW_BACKWARD;
  back.work *= 2;
  back.first_free = (RokCalibStat){0.36, 0.33, 0.4, 5};
  g_array_append_val(c->device.ops, back);
  GError *error = NULL;
  g_autoptr(RokHw) p = rok_calib_profile(c, "fitted", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(p->calibrated.gemm_ops_len, ==, 1);
  g_assert_cmpfloat(p->calibrated.gemm_ops[0].backward_first, ==, 0.36);
  g_assert_cmpint(p->calibrated.gemm_ops[0].ns[1], >, 0);
  json_object *o = rok_hw_to_json(p);
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  g_assert_nonnull(strstr(text, "\"backward_first\""));
  g_autoptr(RokHw) read = rok_hw_parse("fitted.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(read->calibrated.gemm_ops[0].backward_first, ==, 0.36);
  read->calibrated.gemm_ops[0].backward_first = 1.5;
  json_object *bad = rok_hw_to_json(read);
  g_autofree char *bad_text = rok_json_to_string(bad);
  json_object_put(bad);
  g_autoptr(RokHw) refused = rok_hw_parse("bad.json", bad_text, strlen(bad_text), &error);
  g_assert_null(refused);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "calibrated_shapes.gemm_ops[0].backward_first"));
  g_clear_error(&error);
}

/* A trace of one linear op of the given shape. */
static RokTrace *one_linear(guint64 m, guint64 n, guint64 k) {
  RokTrace *trace = rok_trace_new("one-linear");
  rok_trace_add_op(trace, "layer0.fc", 0, ROK_OP_LINEAR, 1, m, n, k);
  return trace;
}

/* A GEMM op of a kind and shape the profile timed takes that time (plus
 * the launch), in the direction timed; another shape or direction, the
 * GEMM model; a timed shape is never warned of as far. */
static void test_gemm_ops(void) {
  g_autoptr(RokCalibration) c = NULL;
  g_autoptr(RokHw) p = fitted_profile(&c);
  GError *error = NULL;
  p->calibrated.gemm_ops[0].ns[0] = 7000000; /* far from what the model gives */
  p->calibrated.gemm_ops[0].dims[3] = 4096; /* 512x768x4096: outside the shapes' k */
  g_autoptr(RokTrace) timed = one_linear(512, 768, 4096), other = one_linear(512, 768, 2048);
  RokTrace *both[2] = {timed, other};
  for (guint i = 0; i < 2; i++) { /* the FLOPs the GEMM model needs */
    RokOp *op = rok_trace_op(both[i], 0);
    op->fwd_flops = 2 * op->dims[1] * op->dims[2] * op->dims[3];
    op->bwd_flops = 2 * op->fwd_flops;
  }
  rok_trace_finish(timed, &error);
  g_assert_no_error(error);
  rok_trace_finish(other, &error);
  g_assert_no_error(error);
  g_autoptr(RokSim) sim = rok_sim_new(timed, p, &error);
  g_assert_no_error(error);
  g_assert_cmpint(rok_sim_op_ns(sim, 0, FALSE), ==, 7000000 + p->gpu.launch_overhead);
  /* The same profile without the op's time: what the GEMM model gives. */
  g_autoptr(RokHw) untimed = rok_hw_copy(p);
  untimed->calibrated.gemm_ops[0].ns[0] = untimed->calibrated.gemm_ops[0].ns[1] = -1;
  g_autoptr(RokSim) model = rok_sim_new(timed, untimed, &error);
  g_assert_no_error(error);
  g_assert_cmpint(rok_sim_op_ns(model, 0, FALSE), >, 0);
  g_assert_cmpint(rok_sim_op_ns(model, 0, FALSE), !=, 7000000 + p->gpu.launch_overhead);
  g_assert_cmpint(rok_sim_op_ns(sim, 0, TRUE), ==, rok_sim_op_ns(model, 0, TRUE)); /* backward not timed */
  g_autoptr(RokSim) other_timed = rok_sim_new(other, p, &error), other_model = rok_sim_new(other, untimed, &error);
  g_assert_no_error(error);
  g_assert_cmpint(rok_sim_op_ns(other_timed, 0, FALSE), ==, rok_sim_op_ns(other_model, 0, FALSE));
  g_assert_null(rok_sim_far_shapes(timed, p));
  g_autofree char *warning = rok_sim_far_shapes(timed, untimed); /* untimed: extrapolated, and said so */
  g_assert_nonnull(warning);
  /* A kind the trace does not know, or one that is not a GEMM's: refused,
   * not silently left to the model. */
  static const char *const bad[][2] = {{"lineer", "\"lineer\" is not a GEMM op kind"},
                                       {"softmax", "\"softmax\" is not a GEMM op kind (known: linear, "}};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(RokHw) misnamed = rok_hw_copy(p);
    g_free(misnamed->calibrated.gemm_ops[0].kind);
    misnamed->calibrated.gemm_ops[0].kind = g_strdup(bad[i][0]);
    g_autoptr(RokSim) refused = rok_sim_new(timed, misnamed, &error);
    g_assert_null(refused);
    g_assert_nonnull(error);
    g_test_message("%s", error->message);
    g_assert_nonnull(strstr(error->message, bad[i][1]));
    g_assert_nonnull(strstr(error->message, "calibrated_shapes.gemm_ops"));
    g_clear_error(&error);
  }
}

static void test_far(void) {
  g_autoptr(RokCalibration) c = NULL;
  g_autoptr(RokHw) p = fitted_profile(&c);
  guint64 near[4] = {1, 1024, 1024, 256}, far_k[4] = {1, 512, 512, 4096}, far_m[4] = {1, 4, 512, 256};
  g_assert_false(rok_hw_gemm_far(p, near));
  g_assert_true(rok_hw_gemm_far(p, far_k));
  g_assert_true(rok_hw_gemm_far(p, far_m));
  g_autoptr(RokTrace) ok = one_linear(1024, 1024, 256), far = one_linear(512, 512, 4096);
  g_assert_null(rok_sim_far_shapes(ok, p));
  g_autofree char *warning = rok_sim_far_shapes(far, p);
  g_test_message("%s", warning);
  g_assert_nonnull(warning);
  g_assert_nonnull(strstr(warning, "1 GEMM op of one-linear (first layer0.fc: batch 1, 512x512x4096)"));
  g_assert_nonnull(strstr(warning, "(m 32-819, n 64-768, k 256-256)"));
  /* A datasheet profile records no shapes: no warning. */
  p->calibrated.gemms_len = 0;
  g_assert_null(rok_sim_far_shapes(far, p));
}

static void test_bad_section(void) {
  static const char *const cases[][2] = {
      {"{\"gemm\": [[1, 64, 64]]}", "calibrated_shapes.gemm[0]"},
      {"{\"gemm\": [[1, 0, 64, 64]]}", "four whole numbers"},
      {"{\"gemm\": []}", "1 to 4096 shapes"},
      {"{\"elementwise_bytes\": [9, 3]}", "smallest <= largest"},
      {"{\"gemms\": []}", "gemms"},
      {"{\"gemm_ops\": [{\"kind\": \"linear\", \"forward\": 1e-3}]}", "must have a \"shape\""},
      {"{\"gemm_ops\": [{\"kind\": \"linear\", \"shape\": [1, 2, 3, 4]}]}", "\"forward\" or \"backward\""},
      {"{\"gemm_ops\": [{\"shape\": [1, 2, 3, 4], \"forward\": 1}]}", "member \"kind\" is missing"},
      {"{\"gemm_ops\": [{\"kind\": \"linear\", \"shape\": [1, 2, 3], \"forward\": 1}]}", "gemm_ops[0].shape"},
      {"{\"gemm_ops\": [{\"kind\": \"linear\", \"shape\": [1, 2, 3, 4], \"backward\": -1}]}", "backward"},
      {"{\"gemm_ops\": [{\"kind\": \"linear\", \"shape\": [1, 2, 3, 4], \"forward\": 1, \"sideways\": 1}]}",
       "unknown key"},
      {"{\"gemm_ops\": [{\"kind\": \"linear\", \"shape\": [1, 2, 3, 4], \"forward\": 1}, "
       "{\"kind\": \"linear\", \"shape\": [1, 2, 3, 4], \"backward\": 1}]}",
       "the same kind and shape as gemm_ops[0]"},
      {"{\"gemm_ops\": []}", "1 to 4096 ops"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = g_strdup_printf(
        "{\"gpu\": {\"memory\": \"1GiB\", \"peak_flops\": 1e12, \"matmul_efficiency\": 0.5, \"hbm_bandwidth\": 1e11},"
        " \"pcie\": {\"h2d_bandwidth\": 1e10, \"d2h_bandwidth\": 1e10},"
        " \"host\": {\"memory\": \"4GiB\", \"pinned_buffer\": \"1GiB\", \"memcpy_bandwidth\": 1e10},"
        " \"calibrated_shapes\": %s}",
        cases[i][0]);
    GError *error = NULL;
    g_autoptr(RokHw) hw = rok_hw_parse("bad.json", text, strlen(text), &error);
    g_assert_null(hw);
    g_assert_nonnull(error);
    g_test_message("%s", error->message);
    g_assert_nonnull(strstr(error->message, cases[i][1]));
    g_clear_error(&error);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/calibrate-fit/exact", test_exact);
  g_test_add_func("/calibrate-fit/noisy", test_noisy);
  g_test_add_func("/calibrate-fit/roofline", test_roofline);
  g_test_add_func("/calibrate-fit/unusable", test_unusable);
  g_test_add_func("/calibrate-fit/profile", test_profile);
  g_test_add_func("/calibrate-fit/far", test_far);
  g_test_add_func("/calibrate-fit/gemm-ops", test_gemm_ops);
  g_test_add_func("/calibrate-fit/backward-first", test_backward_first);
  g_test_add_func("/calibrate-fit/bad-section", test_bad_section);
  return g_test_run();
}
