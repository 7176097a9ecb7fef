/* Hardware profiles: the bundled ones, round trip, bad ones. */
#include <string.h>

#include "rok/core.h"
#include "rok/hw.h"
#include "test-bundled.h"

static void test_bundled(void) {
  g_autoptr(RokHw) a100 = test_bundled_hw("a100-40g-pcie4-4xp5800x");
  g_assert_cmpuint(a100->gpu.memory, ==, G_GUINT64_CONSTANT(40) << 30);
  g_assert_cmpfloat(a100->gpu.peak_flops, ==, 312e12);
  g_assert_cmpint(a100->gpu.launch_overhead, ==, 4000);
  g_assert_cmpuint(a100->nvme.devices, ==, 4);
  g_assert_cmpfloat(rok_hw_nvme_write_bandwidth(a100), ==, 4 * 6.2e9);
  g_assert_cmpuint(a100->nvme.capacity, ==, G_GUINT64_CONSTANT(1600000000000));
  g_assert_true(a100->nvme.gpudirect);
  const char *others[] = {"a100-80g-sxm-4x980pro", "h100-80g-sxm-4xgen5", "cpu-2core-virtio"};
  for (guint i = 0; i < G_N_ELEMENTS(others); i++) {
    g_autoptr(RokHw) hw = test_bundled_hw(others[i]);
    g_assert_nonnull(hw->source);
    g_assert_cmpstr(hw->name, ==, others[i]);
  }
}

static void test_round_trip(void) {
  g_autoptr(RokHw) hw = test_bundled_hw("h100-80g-sxm-4xgen5");
  hw->calibrated_busy = 0.25; /* as a calibration beside other work writes it */
  json_object *o = rok_hw_to_json(hw);
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  GError *error = NULL;
  g_autoptr(RokHw) back = rok_hw_parse("back.json", text, strlen(text), &error);
  g_assert_no_error(error);
  json_object *p = rok_hw_to_json(back);
  g_autofree char *again = rok_json_to_string(p);
  json_object_put(p);
  g_assert_cmpstr(text, ==, again);
  g_assert_cmpint(back->pcie.latency, ==, hw->pcie.latency);
  g_assert_cmpfloat(back->calibrated_busy, ==, 0.25);
}

static void test_bad(void) {
  static const struct {
    const char *json, *expect;
  } cases[] = {
      {"{\"gpu\": {\"memory\": \"40 gigs\", \"peak_flops\": 1e12, \"matmul_efficiency\": 0.5, "
       "\"hbm_bandwidth\": 1e12}, \"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9}, "
       "\"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", \"memcpy_bandwidth\": 1e9}}",
       "\"gpu.memory\""},
      {"{\"gpu\": {\"memory\": \"40GiB\", \"peak_flops\": 1e12, \"matmul_efficiency\": 1.5, "
       "\"hbm_bandwidth\": 1e12}, \"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9}, "
       "\"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", \"memcpy_bandwidth\": 1e9}}",
       "\"gpu.matmul_efficiency\""},
      {"{\"gpu\": {\"memory\": \"40GiB\", \"peak_flops\": 1e12, \"matmul_efficiency\": 0.5, "
       "\"hbm_bandwidth\": 1e12}, \"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9}, "
       "\"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"2GiB\", \"memcpy_bandwidth\": 1e9}}",
       "\"host.pinned_buffer\""},
      {"{\"gpu\": {\"memory\": \"40GiB\", \"peak_flops\": 1e12, \"matmul_efficiency\": 0.5, "
       "\"hbm_bandwidth\": 1e12, \"tdp\": 400}, \"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9}, "
       "\"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", \"memcpy_bandwidth\": 1e9}}",
       "\"gpu.tdp\""},
      {"{\"gpu\": {}}", "\"memory\" is missing"},
      {"{\"calibrated_busy\": 1.5, \"gpu\": {\"memory\": \"40GiB\", \"peak_flops\": 1e12, \"matmul_efficiency\": 0.5, "
       "\"hbm_bandwidth\": 1e12}, \"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9}, "
       "\"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", \"memcpy_bandwidth\": 1e9}}",
       "\"calibrated_busy\""},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = NULL;
    g_autoptr(RokHw) hw = rok_hw_parse("hw.json", cases[i].json, strlen(cases[i].json), &error);
    g_assert_null(hw);
    g_test_message("%s", error->message);
    g_assert_cmpint(rok_error_exit_code(error), ==, ROK_EXIT_INVALID);
    g_assert_nonnull(strstr(error->message, cases[i].expect));
    g_assert_nonnull(strstr(error->message, "hw.json"));
    g_error_free(error);
  }
}

/* Times up to the one-hour bound write and read back to the same
 * nanoseconds (1e9 s used to come back as 1000000000.0000001 s). */
static void test_latencies(void) {
  static const char *const good[] = {"\"1h\"", "3600", "\"59.999999999min\"", "0.000000001", "\"4us\"",
                                     "\"1.000000003s\"", "0"};
  static const char *const bad[] = {"1e9", "\"2h\"", "3600.000000001"};
  for (guint i = 0; i < G_N_ELEMENTS(good) + G_N_ELEMENTS(bad); i++) {
    gboolean ok = i < G_N_ELEMENTS(good);
    const char *value = ok ? good[i] : bad[i - G_N_ELEMENTS(good)];
    g_autofree char *json = g_strdup_printf(
        "{\"gpu\": {\"memory\": \"40GiB\", \"peak_flops\": 1e12, \"matmul_efficiency\": 0.5, "
        "\"hbm_bandwidth\": 1e12}, \"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9, "
        "\"latency\": %s}, \"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", "
        "\"memcpy_bandwidth\": 1e9}}",
        value);
    GError *error = NULL;
    g_autoptr(RokHw) hw = rok_hw_parse("hw.json", json, strlen(json), &error);
    if (!ok) {
      g_assert_null(hw);
      g_assert_nonnull(strstr(error->message, "\"pcie.latency\""));
      g_error_free(error);
      continue;
    }
    g_assert_no_error(error);
    json_object *o = rok_hw_to_json(hw);
    g_autofree char *text = rok_json_to_string(o);
    json_object_put(o);
    g_autoptr(RokHw) back = rok_hw_parse("back.json", text, strlen(text), &error);
    g_assert_no_error(error);
    g_assert_cmpint(back->pcie.latency, ==, hw->pcie.latency);
  }
}

/* The SSDs' per-request and per-leg costs, and their processor time (with
 * gpu.shared_cpus): read, written back only when set, at most an hour;
 * a processor time above 10 ms is warned about (a plain number is
 * seconds). */
static void test_nvme_overheads(void) {
  static const char *const base =
      "{\"gpu\": {\"memory\": \"40GiB\", \"peak_flops\": 1e12, \"matmul_efficiency\": 0.5, "
      "\"hbm_bandwidth\": 1e12, \"shared_cpus\": 2, \"copy_leg_cpu\": \"25us\"}, \"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9}, "
      "\"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", \"memcpy_bandwidth\": 1e9}, "
      "\"nvme\": {\"read_bandwidth\": 1e9, \"write_bandwidth\": 1e9, \"capacity\": \"1TB\"%s}}";
  static const char *const keys[] = {"\"request_overhead", "\"leg_overhead\"", "\"leg_cpu\"", "\"request_cpu\"",
                                     "\"wake", "\"deep_wake", "\"warm", "\"completes_together"};
  GError *error = NULL;
  g_autofree char *json = g_strdup_printf(base, ", \"request_overhead\": \"250us\", \"leg_overhead\": \"120us\", "
                                                "\"leg_cpu\": \"60us\", \"request_cpu\": 2e-6, "
                                                "\"request_overhead_per_mib\": \"35us\", \"wake_write\": \"90us\", "
                                                "\"wake_read\": \"30us\", \"wake_after\": \"4.5ms\", "
                                                "\"deep_wake_write\": \"250us\", \"deep_wake_read\": \"300us\", "
                                                "\"deep_wake_after\": \"45ms\", \"completes_together\": true, "
                                                "\"latency\": \"100us\", \"warm_write\": \"20us\", "
                                                "\"warm_read\": \"35us\"");
  g_autoptr(RokHw) hw = rok_hw_parse("hw.json", json, strlen(json), &error);
  g_assert_no_error(error);
  json_object *o = rok_hw_to_json(hw);
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  g_autoptr(RokHw) back = rok_hw_parse("back.json", text, strlen(text), &error);
  g_assert_no_error(error);
  for (const RokHw *h = hw; h != NULL; h = h == hw ? back : NULL) {
    g_assert_cmpint(h->nvme.request_overhead, ==, 250000);
    g_assert_cmpint(h->nvme.leg_overhead, ==, 120000);
    g_assert_cmpint(h->nvme.leg_cpu, ==, 60000);
    g_assert_cmpint(h->nvme.request_cpu, ==, 2000);
    g_assert_cmpint(h->nvme.request_overhead_per_mib, ==, 35000);
    g_assert_cmpint(h->nvme.wake_write, ==, 90000);
    g_assert_cmpint(h->nvme.wake_read, ==, 30000);
    g_assert_cmpint(h->nvme.wake_after, ==, 4500000);
    g_assert_cmpint(h->nvme.deep_wake_write, ==, 250000);
    g_assert_cmpint(h->nvme.deep_wake_read, ==, 300000);
    g_assert_cmpint(h->nvme.deep_wake_after, ==, 45000000);
    g_assert_true(h->nvme.completes_together);
    g_assert_cmpint(h->nvme.warm_write, ==, 20000);
    g_assert_cmpint(h->nvme.warm_read, ==, 35000);
    g_assert_cmpint(h->gpu.copy_leg_cpu, ==, 25000);
  }
  g_autofree char *none = g_strdup_printf(base, "");
  g_autoptr(RokHw) plain = rok_hw_parse("plain.json", none, strlen(none), &error);
  g_assert_no_error(error);
  g_assert_cmpint(plain->nvme.leg_overhead + plain->nvme.leg_cpu + plain->nvme.request_cpu, ==, 0);
  g_assert_false(plain->nvme.completes_together);
  json_object *p = rok_hw_to_json(plain);
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
    g_assert_null(strstr(json_object_to_json_string(p), keys[i]));
  json_object_put(p);
  static const char *const bad[] = {"\"leg_overhead\": \"2h\"", "\"leg_cpu\": \"2h\"", "\"request_cpu\": -1e-6",
                                    "\"request_cpu\": \"5 GB\"", "\"completes_together\": \"yes\"",
                                    "\"deep_wake_read\": -1e-6",
                                    /* a saving out of the latency, more than it */
                                    "\"warm_read\": \"50us\", \"latency\": \"40us\"",
                                    "\"warm_write\": \"50us\", \"latency\": \"60us\", \"write_latency\": \"40us\"",
                                    /* a deeper sleep than the wake's, after a longer idle */
                                    "\"deep_wake_after\": \"5ms\", \"wake_write\": \"90us\", \"wake_after\": \"5ms\", "
                                    "\"deep_wake_write\": \"200us\""};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *member = g_strconcat(", ", bad[i], NULL), *b = g_strdup_printf(base, member);
    g_assert_null(rok_hw_parse("bad.json", b, strlen(b), &error));
    g_autofree char *key = g_strndup(bad[i] + 1, strchr(bad[i] + 1, '"') - bad[i] - 1);
    g_assert_nonnull(strstr(error->message, key));
    g_clear_error(&error);
  }
  g_autofree char *slow = g_strdup_printf(base, ", \"leg_cpu\": 0.05");
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse("slow.json", slow, strlen(slow), &error);
  g_assert_no_error(error);
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(RokHw) warned = rok_hw_from_doc(doc, NULL, warnings, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(warnings->len, ==, 1);
  g_assert_nonnull(strstr(warnings->pdata[0], "\"nvme.leg_cpu\": 0.05 is 50.0 ms: a plain number is seconds"));
  /* A CPU device's copy figures without shared_cpus are ignored, and said to be. */
  g_autofree char *gpu = g_strdup(none);
  char *at = strstr(gpu, "\"shared_cpus\": 2, ");
  g_assert_nonnull(at);
  memmove(at, at + strlen("\"shared_cpus\": 2, "), strlen(at + strlen("\"shared_cpus\": 2, ")) + 1);
  g_autoptr(RokJsonDoc) gdoc = rok_json_doc_parse("gpu.json", gpu, strlen(gpu), &error);
  g_assert_no_error(error);
  g_autoptr(GPtrArray) ignored = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(RokHw) g = rok_hw_from_doc(gdoc, NULL, ignored, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(g->gpu.shared_cpus, ==, 0);
  g_assert_cmpuint(ignored->len, ==, 1);
  g_assert_nonnull(strstr(ignored->pdata[0], "gpu.copy_leg_cpu"));
  g_assert_nonnull(strstr(ignored->pdata[0], "ignored without gpu.shared_cpus"));
}

/* nvme.write_latency and write_leg_overhead: either one makes both a
 * write's own, the other taken from the read's figure; read back as
 * written; absent, a write pays the read's and neither is written. */
static void test_nvme_write_fixed(void) {
  static const char *const base =
      "{\"gpu\": {\"memory\": \"40GiB\", \"peak_flops\": 1e12, \"matmul_efficiency\": 0.5, \"hbm_bandwidth\": 1e12}, "
      "\"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9}, "
      "\"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", \"memcpy_bandwidth\": 1e9}, "
      "\"nvme\": {\"read_bandwidth\": 1e9, \"write_bandwidth\": 1e9, \"capacity\": \"1TB\", \"latency\": \"90us\", "
      "\"leg_overhead\": \"70us\"%s}}";
  static const struct {
    const char *members;
    gboolean own;
    gint64 latency, leg;
  } cases[] = {{"", FALSE, 90000, 70000},
               {", \"write_latency\": \"40us\"", TRUE, 40000, 70000},
               {", \"write_leg_overhead\": 0", TRUE, 90000, 0},
               {", \"write_latency\": \"40us\", \"write_leg_overhead\": \"5us\"", TRUE, 40000, 5000}};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    GError *error = NULL;
    g_autofree char *json = g_strdup_printf(base, cases[c].members);
    g_autoptr(RokHw) hw = rok_hw_parse("hw.json", json, strlen(json), &error);
    g_assert_no_error(error);
    json_object *o = rok_hw_to_json(hw);
    g_autofree char *text = rok_json_to_string(o);
    json_object_put(o);
    g_assert_true((strstr(text, "write_latency") != NULL) == cases[c].own);
    g_autoptr(RokHw) back = rok_hw_parse("back.json", text, strlen(text), &error);
    g_assert_no_error(error);
    for (const RokHw *h = hw; h != NULL; h = h == hw ? back : NULL) {
      g_assert_cmpint(h->nvme.write_fixed, ==, cases[c].own);
      if (h->nvme.write_fixed) {
        g_assert_cmpint(h->nvme.write_latency, ==, cases[c].latency);
        g_assert_cmpint(h->nvme.write_leg_overhead, ==, cases[c].leg);
      }
      g_assert_cmpint(h->nvme.latency, ==, 90000);
      g_assert_cmpint(h->nvme.leg_overhead, ==, 70000);
      /* what each direction pays */
      g_assert_cmpint(rok_hw_nvme_latency(h, TRUE), ==, cases[c].latency);
      g_assert_cmpint(rok_hw_nvme_leg_overhead(h, TRUE), ==, cases[c].leg);
      g_assert_cmpint(rok_hw_nvme_latency(h, FALSE), ==, 90000);
      g_assert_cmpint(rok_hw_nvme_leg_overhead(h, FALSE), ==, 70000);
    }
  }
}

#define CURVE_HW(curve, nvme)                                                                                \
  "{\"gpu\": {\"memory\": \"8GiB\", \"peak_flops\": 1e11, \"matmul_efficiency\": 0.8, "                   \
  "\"hbm_bandwidth\": 2e10" curve "}, \"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9}, "            \
  "\"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", \"memcpy_bandwidth\": 1e9}" nvme "}"

/* A calibrated profile: a GEMM-efficiency curve, a disk of unknown
 * endurance. Both survive a round trip; the copy owns its curve. */
static void test_curve(void) {
  const char *text = CURVE_HW(", \"gemm_efficiency\": [[4e6, 0.25], [3.3e7, 0.6], [2.7e8, 1]]",
                              ", \"nvme\": {\"read_bandwidth\": 1e9, \"write_bandwidth\": 1e9, "
                              "\"capacity\": \"64GB\"}");
  GError *error = NULL;
  g_autoptr(RokHw) hw = rok_hw_parse("cal.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(hw->gpu.gemm_curve_len, ==, 3);
  g_assert_cmpfloat(hw->gpu.gemm_curve[1].flops, ==, 3.3e7);
  g_assert_cmpfloat(hw->gpu.gemm_curve[2].efficiency, ==, 1.0);
  g_assert_cmpfloat(hw->nvme.endurance_pbw, ==, 0.0);
  g_assert_cmpfloat(rok_hw_gemm_efficiency(hw, 3.3e7), ==, 0.6);

  json_object *o = rok_hw_to_json(hw);
  g_autofree char *out = rok_json_to_string(o);
  json_object_put(o);
  g_assert_nonnull(strstr(out, "\"gemm_efficiency\": ["));
  g_assert_null(strstr(out, "endurance_pbw")); /* unknown: left out, not written as 0 */
  g_autoptr(RokHw) back = rok_hw_parse("back.json", out, strlen(out), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->gpu.gemm_curve_len, ==, 3);
  for (guint i = 0; i < 3; i++) {
    g_assert_cmpfloat(back->gpu.gemm_curve[i].flops, ==, hw->gpu.gemm_curve[i].flops);
    g_assert_cmpfloat(back->gpu.gemm_curve[i].efficiency, ==, hw->gpu.gemm_curve[i].efficiency);
  }

  g_autoptr(RokHw) copy = rok_hw_copy(hw);
  g_assert_true(copy->gpu.gemm_curve != hw->gpu.gemm_curve);
  copy->gpu.gemm_curve[0].efficiency = 0.5;
  g_assert_cmpfloat(hw->gpu.gemm_curve[0].efficiency, ==, 0.25);

  /* A bundled profile has no curve and writes none. */
  g_autoptr(RokHw) a100 = test_bundled_hw("a100-40g-pcie4-4xp5800x");
  g_assert_cmpuint(a100->gpu.gemm_curve_len, ==, 0);
  g_assert_null(a100->gpu.gemm_curve);
  g_assert_cmpfloat(rok_hw_gemm_efficiency(a100, 1e12), ==, a100->gpu.matmul_efficiency);
  json_object *p = rok_hw_to_json(a100);
  g_autofree char *plain = rok_json_to_string(p);
  json_object_put(p);
  g_assert_null(strstr(plain, "gemm_efficiency"));
  g_assert_nonnull(strstr(plain, "endurance_pbw"));
}

static void test_bad_curve(void) {
  static const struct {
    const char *curve, *expect;
  } cases[] = {
      {", \"gemm_efficiency\": []", "\"gpu.gemm_efficiency\": must hold 1 to"},
      {", \"gemm_efficiency\": 3", "\"gpu.gemm_efficiency\""},
      {", \"gemm_efficiency\": [[1e6, 0.5], [2e6]]", "\"gpu.gemm_efficiency[1]\": must be a pair"},
      {", \"gemm_efficiency\": [[1e6, \"0.5\"]]", "\"gpu.gemm_efficiency[0]\": must be a pair"},
      {", \"gemm_efficiency\": [[0, 0.5]]", "\"gpu.gemm_efficiency[0]\": flops must be positive"},
      {", \"gemm_efficiency\": [[2e6, 0.5], [1e6, 0.6]]", "\"gpu.gemm_efficiency[1]\": flops must be more"},
      {", \"gemm_efficiency\": [[1e6, 0.5], [1e6, 0.6]]", "\"gpu.gemm_efficiency[1]\": flops must be more"},
      {", \"gemm_efficiency\": [[1e6, 1.5]]", "\"gpu.gemm_efficiency[0]\": efficiency must be"},
      {", \"gemm_efficiency\": [[1e6, 0]]", "\"gpu.gemm_efficiency[0]\": efficiency must be"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = g_strdup_printf(CURVE_HW("%s", ""), cases[i].curve);
    GError *error = NULL;
    g_autoptr(RokHw) hw = rok_hw_parse("hw.json", text, strlen(text), &error);
    g_assert_null(hw);
    g_test_message("%s", error->message);
    g_assert_cmpint(rok_error_exit_code(error), ==, ROK_EXIT_INVALID);
    g_assert_nonnull(strstr(error->message, cases[i].expect));
    g_assert_nonnull(strstr(error->message, "hw.json:1:"));
    g_error_free(error);
  }
}

#define CHECK_HW(rates)                                                                                      \
  "{\"gpu\": {\"memory\": \"8GiB\", \"peak_flops\": 1e11, \"matmul_efficiency\": 0.8, "                   \
  "\"hbm_bandwidth\": 2e10}, \"pcie\": {\"h2d_bandwidth\": 1e9, \"d2h_bandwidth\": 1e9}, "                \
  "\"host\": {\"memory\": \"1GiB\", \"pinned_buffer\": \"1GiB\", \"memcpy_bandwidth\": 1e9, "          \
  "\"checksum_bandwidth\": 2e9" rates "}}"

/* host.checksum_rates: a leg's check by its bytes, in place of
 * checksum_bandwidth; clamped to the end knots, monotone between them
 * (Steffen), kept by a round trip and a copy. */
static void test_check_rates(void) {
  const char *text = CHECK_HW(", \"checksum_rates\": [[65536, 8e9], [1048576, 4e9], [16777216, 2e9]]");
  GError *error = NULL;
  g_autoptr(RokHw) hw = rok_hw_parse("cal.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(hw->host.checksum_rates_len, ==, 3);
  g_assert_cmpfloat_with_epsilon(rok_hw_host_check_seconds(hw, 1024), 1024 / 8e9, 1e-15);
  g_assert_cmpfloat_with_epsilon(rok_hw_host_check_seconds(hw, 1 << 20), (1 << 20) / 4e9, 1e-12);
  g_assert_cmpfloat_with_epsilon(rok_hw_host_check_seconds(hw, 1 << 30), (1 << 30) / 2e9, 1e-9);
  double mid = (double)(256 << 10) / rok_hw_host_check_seconds(hw, 256 << 10);
  g_assert_cmpfloat(mid, <, 8e9);
  g_assert_cmpfloat(mid, >, 4e9);
  g_assert_cmpfloat(rok_hw_host_check_seconds(hw, 0), ==, 0);

  json_object *o = rok_hw_to_json(hw);
  g_autofree char *out = rok_json_to_string(o);
  json_object_put(o);
  g_autoptr(RokHw) back = rok_hw_parse("back.json", out, strlen(out), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->host.checksum_rates_len, ==, 3);
  g_assert_cmpfloat(back->host.checksum_rates[1].rate, ==, 4e9);
  g_autoptr(RokHw) copy = rok_hw_copy(hw);
  g_assert_true(copy->host.checksum_rates != hw->host.checksum_rates);
  g_assert_cmpfloat(copy->host.checksum_rates[2].work, ==, 16777216);

  /* Without the curve, checksum_bandwidth at every size; without either, no check. */
  const char *flat = CHECK_HW("");
  g_autoptr(RokHw) plain = rok_hw_parse("flat.json", flat, strlen(flat), &error);
  g_assert_no_error(error);
  g_assert_cmpfloat_with_epsilon(rok_hw_host_check_seconds(plain, 1 << 20), (1 << 20) / 2e9, 1e-12);
  g_autoptr(RokHw) a100 = test_bundled_hw("a100-40g-pcie4-4xp5800x");
  g_assert_cmpfloat(rok_hw_host_check_seconds(a100, 1 << 20), ==, 0);

  static const struct {
    const char *rates, *expect;
  } bad[] = {
      {", \"checksum_rates\": []", "\"host.checksum_rates\": must hold 1 to"},
      {", \"checksum_rates\": [[0, 1e9]]", "\"host.checksum_rates[0]\": bytes must be positive"},
      {", \"checksum_rates\": [[2e6, 1e9], [1e6, 1e9]]", "\"host.checksum_rates[1]\": bytes must be more"},
      {", \"checksum_rates\": [[1e6, -1]]", "\"host.checksum_rates[0]\": rate must be positive"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *t = g_strdup_printf(CHECK_HW("%s"), bad[i].rates);
    g_autoptr(RokHw) none = rok_hw_parse("hw.json", t, strlen(t), &error);
    g_assert_null(none);
    g_assert_cmpint(rok_error_exit_code(error), ==, ROK_EXIT_INVALID);
    g_assert_nonnull(strstr(error->message, bad[i].expect));
    g_assert_nonnull(strstr(error->message, "hw.json:1:"));
    g_clear_error(&error);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/hw/bundled", test_bundled);
  g_test_add_func("/hw/round-trip", test_round_trip);
  g_test_add_func("/hw/bad", test_bad);
  g_test_add_func("/hw/latencies", test_latencies);
  g_test_add_func("/hw/nvme-overheads", test_nvme_overheads);
  g_test_add_func("/hw/nvme-write-fixed", test_nvme_write_fixed);
  g_test_add_func("/hw/curve", test_curve);
  g_test_add_func("/hw/bad-curve", test_bad_curve);
  g_test_add_func("/hw/check-rates", test_check_rates);
  return g_test_run();
}
