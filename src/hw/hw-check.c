/* Plausibility of a profile's numbers: values that parse but that nobody
 * means. A plain number is bytes, bytes/s or seconds, so "memory": 80 is 80
 * bytes and "latency": 70 is 70 s (which starves nothing and so makes
 * offloading look free); and GPU and host memory are sold in binary sizes
 * under decimal names ("80 GB" parts have 80 GiB), so "80GB" is likely 5.9
 * GiB short of what was meant. These are warnings, not errors: a tiny test
 * machine is legitimate. */
#include <string.h>

#include "hw-private.h"
#include "rok/core.h"

typedef enum { SIZE, RATE, TIME } Kind;

typedef struct {
  const char *section, *key;
  Kind kind;
  double low, high; /* plausible range in base units (0: no bound) */
  const char *example;
} Check;

static const Check checks[] = {
    {"gpu", "memory", SIZE, 256.0 * (1 << 20), 0, "80GiB"},
    {"gpu", "peak_flops", RATE, 1e9, 0, "312TFLOP/s"},
    {"gpu", "hbm_bandwidth", RATE, 1e8, 0, "2TB/s"},
    {"gpu", "launch_overhead", TIME, 0, 10e-3, "4us"},
    {"gpu", "copy_leg_cpu", TIME, 0, 10e-3, "30us"},
    {"gpu", "checksum_bandwidth", RATE, 1e7, 0, "1TB/s"},
    {"gpu", "checksum_overhead", TIME, 0, 10e-3, "20us"},
    {"pcie", "h2d_bandwidth", RATE, 1e7, 0, "24GB/s"},
    {"pcie", "d2h_bandwidth", RATE, 1e7, 0, "24GB/s"},
    {"pcie", "latency", TIME, 0, 10e-3, "2us"},
    {"host", "memory", SIZE, 256.0 * (1 << 20), 0, "512GiB"},
    {"host", "pinned_buffer", SIZE, 1 << 20, 0, "16GiB"},
    {"host", "memcpy_bandwidth", RATE, 1e8, 0, "20GB/s"},
    {"host", "checksum_bandwidth", RATE, 1e7, 0, "8GB/s"},
    {"nvme", "read_bandwidth", RATE, 1e6, 0, "7GB/s"},
    {"nvme", "write_bandwidth", RATE, 1e6, 0, "5GB/s"},
    {"nvme", "latency", TIME, 0, 0.1, "10us"},
    {"nvme", "capacity", SIZE, 1 << 30, 0, "1.6TB"},
    {"host", "copy_overhead", TIME, 0, 0.1, "50us"},
    {"nvme", "request_overhead", TIME, 0, 0.1, "20us"},
    {"nvme", "request_overhead_per_mib", TIME, 0, 0.1, "200us"},
    {"nvme", "leg_overhead", TIME, 0, 0.1, "100us"},
    {"nvme", "write_latency", TIME, 0, 0.1, "10us"},
    {"nvme", "write_leg_overhead", TIME, 0, 0.1, "100us"},
    {"nvme", "wake_write", TIME, 0, 0.1, "100us"},
    {"nvme", "wake_read", TIME, 0, 0.1, "100us"},
    {"nvme", "wake_after", TIME, 0, 10, "5ms"},
    {"nvme", "deep_wake_write", TIME, 0, 0.1, "250us"},
    {"nvme", "deep_wake_read", TIME, 0, 0.1, "250us"},
    {"nvme", "deep_wake_after", TIME, 0, 100, "50ms"},
    {"nvme", "warm_write", TIME, 0, 0.1, "50us"},
    {"nvme", "warm_read", TIME, 0, 0.1, "50us"},
    {"nvme", "leg_cpu", TIME, 0, 10e-3, "50us"},
    {"nvme", "request_cpu", TIME, 0, 10e-3, "10us"},
};

static double value_of(const RokHw *hw, const Check *c) {
  const struct {
    const char *section, *key;
    double value;
  } values[] = {
      {"gpu", "memory", (double)hw->gpu.memory},
      {"gpu", "peak_flops", hw->gpu.peak_flops},
      {"gpu", "hbm_bandwidth", hw->gpu.hbm_bandwidth},
      {"gpu", "launch_overhead", (double)hw->gpu.launch_overhead / 1e9},
      {"gpu", "copy_leg_cpu", (double)hw->gpu.copy_leg_cpu / 1e9},
      {"gpu", "checksum_bandwidth", hw->gpu.checksum_bandwidth},
      {"gpu", "checksum_overhead", (double)hw->gpu.checksum_overhead / 1e9},
      {"pcie", "h2d_bandwidth", hw->pcie.h2d_bandwidth},
      {"pcie", "d2h_bandwidth", hw->pcie.d2h_bandwidth},
      {"pcie", "latency", (double)hw->pcie.latency / 1e9},
      {"host", "memory", (double)hw->host.memory},
      {"host", "pinned_buffer", (double)hw->host.pinned_buffer},
      {"host", "memcpy_bandwidth", hw->host.memcpy_bandwidth},
      {"host", "checksum_bandwidth", hw->host.checksum_bandwidth},
      {"nvme", "read_bandwidth", hw->nvme.read_bandwidth},
      {"nvme", "write_bandwidth", hw->nvme.write_bandwidth},
      {"nvme", "latency", (double)hw->nvme.latency / 1e9},
      {"nvme", "capacity", (double)hw->nvme.capacity},
      {"host", "copy_overhead", (double)hw->host.copy_overhead / 1e9},
      {"nvme", "request_overhead", (double)hw->nvme.request_overhead / 1e9},
      {"nvme", "request_overhead_per_mib", (double)hw->nvme.request_overhead_per_mib / 1e9},
      {"nvme", "leg_overhead", (double)hw->nvme.leg_overhead / 1e9},
      {"nvme", "write_latency", (double)hw->nvme.write_latency / 1e9},
      {"nvme", "write_leg_overhead", (double)hw->nvme.write_leg_overhead / 1e9},
      {"nvme", "wake_write", (double)hw->nvme.wake_write / 1e9},
      {"nvme", "wake_read", (double)hw->nvme.wake_read / 1e9},
      {"nvme", "wake_after", (double)hw->nvme.wake_after / 1e9},
      {"nvme", "deep_wake_write", (double)hw->nvme.deep_wake_write / 1e9},
      {"nvme", "deep_wake_read", (double)hw->nvme.deep_wake_read / 1e9},
      {"nvme", "deep_wake_after", (double)hw->nvme.deep_wake_after / 1e9},
      {"nvme", "warm_write", (double)hw->nvme.warm_write / 1e9},
      {"nvme", "warm_read", (double)hw->nvme.warm_read / 1e9},
      {"nvme", "leg_cpu", (double)hw->nvme.leg_cpu / 1e9},
      {"nvme", "request_cpu", (double)hw->nvme.request_cpu / 1e9},
  };
  for (guint i = 0; i < G_N_ELEMENTS(values); i++)
    if (g_str_equal(values[i].section, c->section) && g_str_equal(values[i].key, c->key))
      return values[i].value;
  g_return_val_if_reached(0);
}

static char *shown(const Check *c, double value) {
  g_autofree char *count = NULL;
  switch (c->kind) {
  case SIZE:
    return rok_units_format_size((guint64)value);
  case RATE:
    if (!g_str_equal(c->key, "peak_flops"))
      return rok_units_format_rate(value);
    count = rok_units_format_count(value);
    return g_strdup_printf("%s FLOP/s", count);
  case TIME:
    return rok_units_format_time(value);
  }
  g_return_val_if_reached(NULL);
}

/* The member as written in the document (NULL when absent). */
static json_object *member(const RokJsonDoc *doc, const char *section, const char *key) {
  json_object *object = NULL, *value = NULL;
  json_object *root = rok_json_doc_root(doc);
  if (json_object_object_get_ex(root, section, &object) && json_object_is_type(object, json_type_object) &&
      json_object_object_get_ex(object, key, &value))
    return value;
  return NULL;
}

/* The sentence as rok_json_error words it: where the value was written
 * (file:line:col, or the --hw-set that set it) and its path. */
static void warn(GPtrArray *warnings, const RokJsonDoc *doc, const char *section, const char *key, const char *text) {
  g_autofree char *path = g_strconcat(section, ".", key, NULL);
  GError *error = NULL;
  rok_json_error(&error, doc, path, "%s", text);
  g_ptr_array_add(warnings, g_strdup(error->message));
  g_error_free(error);
}

static void check_range(const RokHw *hw, const RokJsonDoc *doc, const Check *c, GPtrArray *warnings) {
  json_object *written = member(doc, c->section, c->key);
  double v = value_of(hw, c);
  if (written == NULL || v == 0 || ((c->low == 0 || v >= c->low) && (c->high == 0 || v <= c->high)))
    return;
  static const char *const base[] = {[SIZE] = "bytes", [RATE] = "per second", [TIME] = "seconds"};
  gboolean plain = !json_object_is_type(written, json_type_string);
  g_autofree char *value = shown(c, v);
  g_autofree char *text =
      g_strdup_printf("%s is %s%s%s; write the unit, e.g. \"%s\", if that is not meant",
                      json_object_to_json_string(written), value, plain ? ": a plain number is " : "",
                      plain ? base[c->kind] : "", c->example);
  warn(warnings, doc, c->section, c->key, text);
}

/* "80GB" of GPU or host memory: a whole number of decimal gigabytes, where
 * the parts sold under that name have as many gibibytes. */
static void check_decimal(const RokJsonDoc *doc, const char *section, guint64 bytes, GPtrArray *warnings) {
  json_object *written = member(doc, section, "memory");
  if (written == NULL || !json_object_is_type(written, json_type_string))
    return;
  const char *text = json_object_get_string(written);
  char *end = NULL;
  guint64 number = g_ascii_strtoull(text, &end, 10);
  while (end != NULL && *end == ' ')
    end++;
  static const char *const decimal[] = {"kB", "KB", "MB", "GB", "TB", "PB", NULL};
  if (number == 0 || end == NULL || !g_strv_contains(decimal, end))
    return;
  g_autofree char *as_binary = rok_units_format_size(bytes);
  g_autofree char *sentence = g_strdup_printf(
      "\"%s\" is %s (decimal units); %s memory sold as \"%" G_GUINT64_FORMAT " %s\" holds %" G_GUINT64_FORMAT
      " %ciB: write \"%" G_GUINT64_FORMAT "%ciB\" if that is meant",
      text, as_binary, g_str_equal(section, "gpu") ? "GPU" : "host", number, end, number, g_ascii_toupper(end[0]),
      number, g_ascii_toupper(end[0]));
  warn(warnings, doc, section, "memory", sentence);
}

/* gpu.copy_wait: a wait per 1 MiB copy command that rok calibrated until
 * the simulator took a copy's wait for the kernel in progress instead
 * (gpu.copy_kernel_wait, now gpu.copy_kernel_free_at); read, so that
 * older calibrations still load. copy_kernel_wait is still used, but not
 * beside copy_kernel_free_at. */
static void check_retired(const RokHw *hw, const RokJsonDoc *doc, GPtrArray *warnings) {
  if (member(doc, "gpu", "copy_wait") != NULL)
    warn(warnings, doc, "gpu", "copy_wait",
         "is a wait per copy command measured by an older rok and is ignored: the simulator now takes "
         "gpu.copy_kernel_free_at, the share of a kernel after which a copy passes; run `rok calibrate` again");
  if (hw->gpu.copy_kernel_free_at > 0 && member(doc, "gpu", "copy_kernel_wait") != NULL)
    warn(warnings, doc, "gpu", "copy_kernel_wait",
         "is ignored: gpu.copy_kernel_free_at, given too, says when a copy handed over during a kernel goes");
}

/* gpu.copy_launch_window and copy_launch_ahead say together how often a
 * copy goes ahead of a kernel just launched; one without the other says
 * nothing, and the simulator leaves it. */
static void check_launch_pair(const RokHw *hw, const RokJsonDoc *doc, GPtrArray *warnings) {
  if (member(doc, "gpu", "copy_launch_window") != NULL && hw->gpu.copy_launch_ahead <= 0)
    warn(warnings, doc, "gpu", "copy_launch_window",
         "is ignored without gpu.copy_launch_ahead above 0: how often a copy within it goes ahead of the kernel");
  if (member(doc, "gpu", "copy_launch_ahead") != NULL && hw->gpu.copy_launch_window <= 0)
    warn(warnings, doc, "gpu", "copy_launch_ahead",
         "is ignored without gpu.copy_launch_window above 0: how long after a launch a copy may go ahead");
}

/* The figures of a device whose copies run on its kernels' processors mean
 * nothing without gpu.shared_cpus: the simulator ignores them. */
static void check_cpu_device(const RokHw *hw, const RokJsonDoc *doc, GPtrArray *warnings) {
  static const char *const keys[] = {"copy_kernel_wait",  "copy_kernel_free_at", "copy_launch_window",
                                     "copy_launch_ahead", "copy_queues_in_order", "copy_leg_cpu"};
  if (hw->gpu.shared_cpus > 0) {
    check_launch_pair(hw, doc, warnings);
    return;
  }
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
    if (member(doc, "gpu", keys[i]) != NULL)
      warn(warnings, doc, "gpu", keys[i],
           "is ignored without gpu.shared_cpus: it describes a device whose copies run on the processors of "
           "its kernels (a CPU device)");
}

void hw_check_plausible(const RokHw *hw, const RokJsonDoc *doc, GPtrArray *warnings) {
  check_retired(hw, doc, warnings);
  check_cpu_device(hw, doc, warnings);
  for (guint i = 0; i < G_N_ELEMENTS(checks); i++)
    check_range(hw, doc, &checks[i], warnings);
  check_decimal(doc, "gpu", hw->gpu.memory, warnings);
  check_decimal(doc, "host", hw->host.memory, warnings);
}
