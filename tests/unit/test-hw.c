/* Hardware profiles: the bundled ones, round trip, bad ones. */
#include <string.h>

#include "rok/error.h"
#include "rok/hw.h"
#include "rok/json.h"

static RokHw *load_bundled(const char *name) {
  g_autofree char *file = g_strconcat(name, ".json", NULL);
  g_autofree char *path = g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "hw", file, NULL);
  GError *error = NULL;
  RokHw *hw = rok_hw_load(path, &error);
  g_assert_no_error(error);
  return hw;
}

static void test_bundled(void) {
  g_autoptr(RokHw) a100 = load_bundled("a100-40g-pcie4-4xp5800x");
  g_assert_cmpuint(a100->gpu.memory, ==, G_GUINT64_CONSTANT(40) << 30);
  g_assert_cmpfloat(a100->gpu.peak_flops, ==, 312e12);
  g_assert_cmpint(a100->gpu.launch_overhead, ==, 4000);
  g_assert_cmpuint(a100->nvme.devices, ==, 4);
  g_assert_cmpfloat(rok_hw_nvme_write_bandwidth(a100), ==, 4 * 6.2e9);
  g_assert_cmpuint(a100->nvme.capacity, ==, G_GUINT64_CONSTANT(1600000000000));
  g_assert_true(a100->nvme.gpudirect);
  const char *others[] = {"a100-80g-sxm-4x980pro", "h100-80g-sxm-4xgen5", "cpu-2core-virtio"};
  for (guint i = 0; i < G_N_ELEMENTS(others); i++) {
    g_autoptr(RokHw) hw = load_bundled(others[i]);
    g_assert_nonnull(hw->source);
    g_assert_cmpstr(hw->name, ==, others[i]);
  }
}

static void test_round_trip(void) {
  g_autoptr(RokHw) hw = load_bundled("h100-80g-sxm-4xgen5");
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

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/hw/bundled", test_bundled);
  g_test_add_func("/hw/round-trip", test_round_trip);
  g_test_add_func("/hw/bad", test_bad);
  g_test_add_func("/hw/latencies", test_latencies);
  return g_test_run();
}
