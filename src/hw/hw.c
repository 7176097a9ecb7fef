/* Hardware profiles: reading, validation, writing. */
#include "rok/hw.h"
#include "hw-private.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_interp.h>

#include "rok/core.h"

static const char *const hw_keys[] = {"name", "source", "gpu", "pcie", "host", "nvme", "interconnect", "node",
                                      "calibrated_shapes", "calibrated_busy",
                                      "calibrated_copies_memory_speed", NULL};
static const char *const gpu_keys[] = {"memory", "peak_flops", "matmul_efficiency", "hbm_bandwidth",
                                       "launch_overhead", "gemm_efficiency", "op_rates", "shared_cpus",
                                       "copy_kernel_wait", "copy_kernel_free_at", "copy_launch_window", "copy_launch_ahead",
                                       "copy_queues_in_order", "copy_leg_cpu",
                                       "checksum_bandwidth", "checksum_overhead",
                                       "copy_wait" /* retired: hw-check.c warns */, "sm_count", "gemm_tile", NULL};
static const char *const direction_keys[] = {"forward", "backward", "rebuild", NULL};
static const char *const pcie_keys[] = {"h2d_bandwidth", "d2h_bandwidth", "latency", NULL};
static const char *const host_keys[] = {"memory",          "pinned_buffer", "memcpy_bandwidth",
                                        "checksum_bandwidth", "checksum_rates", "copy_overhead", NULL};
static const char *const nvme_keys[] = {"devices", "read_bandwidth", "write_bandwidth", "latency",
                                        "queue_depth", "capacity", "endurance_pbw", "gpudirect",
                                        "request_overhead", "request_overhead_per_mib", "leg_overhead",
                                        "write_latency", "write_leg_overhead",
                                        "wake_write", "wake_read", "wake_after", "deep_wake_write",
                                        "deep_wake_read", "deep_wake_after", "warm_write", "warm_read", "completes_together",
                                        "leg_cpu", "request_cpu", NULL};

static void op_rates_free(RokHwOpRates *rates, guint n) {
  for (guint i = 0; i < n; i++) {
    g_free(rates[i].kind);
    for (guint d = 0; d < ROK_HW_DIRECTIONS; d++)
      g_free(rates[i].curve[d]);
  }
  g_free(rates);
}

void rok_hw_free(RokHw *hw) {
  if (hw == NULL)
    return;
  g_free(hw->name);
  g_free(hw->source);
  g_free(hw->gpu.gemm_curve);
  g_free(hw->host.checksum_rates);
  op_rates_free(hw->gpu.op_rates, hw->gpu.op_rates_len);
  g_free(hw->calibrated.gemms);
  for (guint i = 0; i < hw->calibrated.gemm_ops_len; i++)
    g_free(hw->calibrated.gemm_ops[i].kind);
  g_free(hw->calibrated.gemm_ops);
  g_free(hw);
}

static RokHwOpRates *op_rates_copy(const RokHwOpRates *rates, guint n) {
  if (n == 0)
    return NULL;
  RokHwOpRates *copy = g_new0(RokHwOpRates, n);
  for (guint i = 0; i < n; i++) {
    copy[i] = rates[i];
    copy[i].kind = g_strdup(rates[i].kind);
    for (guint d = 0; d < ROK_HW_DIRECTIONS; d++)
      copy[i].curve[d] = rates[i].len[d] > 0 ? g_memdup2(rates[i].curve[d], rates[i].len[d] * sizeof(RokHwRatePoint))
                                             : NULL;
  }
  return copy;
}

RokHw *rok_hw_copy(const RokHw *hw) {
  RokHw *copy = g_memdup2(hw, sizeof *hw);
  copy->name = g_strdup(hw->name);
  copy->source = g_strdup(hw->source);
  copy->gpu.gemm_curve =
      hw->gpu.gemm_curve_len > 0 ? g_memdup2(hw->gpu.gemm_curve, hw->gpu.gemm_curve_len * sizeof(RokHwGemmPoint))
                                 : NULL;
  copy->gpu.op_rates = op_rates_copy(hw->gpu.op_rates, hw->gpu.op_rates_len);
  copy->host.checksum_rates =
      hw->host.checksum_rates_len > 0
          ? g_memdup2(hw->host.checksum_rates, hw->host.checksum_rates_len * sizeof(RokHwRatePoint))
          : NULL;
  copy->calibrated.gemms = hw->calibrated.gemms_len > 0
                               ? g_memdup2(hw->calibrated.gemms, hw->calibrated.gemms_len * sizeof(RokHwGemmDims))
                               : NULL;
  copy->calibrated.gemm_ops =
      hw->calibrated.gemm_ops_len > 0 ? g_memdup2(hw->calibrated.gemm_ops, hw->calibrated.gemm_ops_len * sizeof(RokHwGemmOp))
                                      : NULL;
  for (guint i = 0; i < hw->calibrated.gemm_ops_len; i++)
    copy->calibrated.gemm_ops[i].kind = g_strdup(hw->calibrated.gemm_ops[i].kind);
  return copy;
}

/* Latencies and overheads are microseconds to milliseconds; more than an
 * hour is a typo. The bound also keeps them exact through rok_hw_to_json's
 * seconds (exact for times below 2^51 ns, about 26 days). */
#define MAX_LATENCY_NS (G_GINT64_CONSTANT(3600) * 1000000000)

static gboolean read_latency(const RokJsonObj *o, const char *key, gint64 *ns, GError **error) {
  gint64 value = *ns;
  if (!rok_json_get_time(o, key, FALSE, &value, error))
    return FALSE;
  if (value > MAX_LATENCY_NS) {
    g_autofree char *path = g_strconcat(o->path, ".", key, NULL);
    rok_json_error(error, o->doc, path, "must be at most 1 h");
    return FALSE;
  }
  *ns = value;
  return TRUE;
}

gboolean hw_read_latency(const RokJsonObj *o, const char *key, gint64 *ns, GError **error) {
  return read_latency(o, key, ns, error);
}

/* A measured curve has a knot per size tried: a few dozen at most. */
#define CURVE_MAX 1024

/* What a curve's knots are: [x, y], x positive and above the previous
 * knot's, y positive (and at most y_max when that is not 0). */
typedef struct {
  const char *pair;  /* "[flops, efficiency]" */
  const char *x, *y; /* "flops", "efficiency" */
  double y_max;
} CurveKind;

static const CurveKind gemm_kind = {"[flops, efficiency]", "flops", "efficiency", 1.0};
static const CurveKind rate_kind = {"[work, rate]", "work", "rate", 0};
static const CurveKind check_kind = {"[bytes, rate]", "bytes", "rate", 0};

/* Knot I of the curve at PATH, X above PREV. */
static gboolean read_knot(const RokJsonObj *o, const char *path, const CurveKind *kind, json_object *pair, guint i,
                          double prev, double knot[2], GError **error) {
  g_autofree char *at = g_strdup_printf("%s[%u]", path, i);
  double v[2] = {0, 0};
  gboolean numbers = json_object_is_type(pair, json_type_array) && json_object_array_length(pair) == 2;
  for (guint k = 0; numbers && k < 2; k++) {
    json_object *e = json_object_array_get_idx(pair, k);
    numbers = json_object_is_type(e, json_type_double) || json_object_is_type(e, json_type_int);
    v[k] = numbers ? json_object_get_double(e) : 0;
    numbers = numbers && isfinite(v[k]);
  }
  gboolean y_ok = v[1] > 0 && (kind->y_max == 0 || v[1] <= kind->y_max);
  if (!numbers)
    rok_json_error(error, o->doc, at, "must be a pair %s of numbers", kind->pair);
  else if (!(v[0] > 0))
    rok_json_error(error, o->doc, at, "%s must be positive", kind->x);
  else if (!(v[0] > prev))
    rok_json_error(error, o->doc, at, "%s must be more than the previous point's (sorted by size)", kind->x);
  else if (!y_ok && kind->y_max > 0)
    rok_json_error(error, o->doc, at, "%s must be more than 0 and at most %g", kind->y, kind->y_max);
  else if (!y_ok)
    rok_json_error(error, o->doc, at, "%s must be positive", kind->y);
  else {
    knot[0] = v[0];
    knot[1] = v[1];
    return TRUE;
  }
  return FALSE;
}

/* The curve member KEY of O into *knots (pairs of doubles) and *n; absent:
 * *n = 0 when not required. */
static gboolean read_pairs(const RokJsonObj *o, const char *key, const CurveKind *kind, double **knots, guint *n,
                           GError **error) {
  json_object *array = NULL;
  *n = 0;
  if (!rok_json_get_array(o, key, FALSE, &array, error))
    return FALSE;
  if (array == NULL)
    return TRUE;
  g_autofree char *path = *o->path ? g_strdup_printf("%s.%s", o->path, key) : g_strdup(key);
  gsize len = json_object_array_length(array);
  if (len == 0 || len > CURVE_MAX) {
    rok_json_error(error, o->doc, path, "must hold 1 to %d %s pairs", CURVE_MAX, kind->pair);
    return FALSE;
  }
  g_autofree double *v = g_new(double, 2 * len);
  for (gsize i = 0; i < len; i++)
    if (!read_knot(o, path, kind, json_object_array_get_idx(array, i), (guint)i, i > 0 ? v[2 * i - 2] : 0,
                   &v[2 * i], error))
      return FALSE;
  *knots = g_steal_pointer(&v);
  *n = (guint)len;
  return TRUE;
}

static gboolean read_curve(const RokJsonObj *o, RokHw *hw, GError **error) {
  double *knots = NULL;
  guint n = 0;
  if (!read_pairs(o, "gemm_efficiency", &gemm_kind, &knots, &n, error))
    return FALSE;
  G_STATIC_ASSERT(sizeof(RokHwGemmPoint) == 2 * sizeof(double));
  hw->gpu.gemm_curve = (RokHwGemmPoint *)knots;
  hw->gpu.gemm_curve_len = n;
  return TRUE;
}

/* "op_rates": {kind: {"forward": [[work, rate], ...], "backward": ...,
 * "rebuild": ...}}. */
static gboolean read_op_kind(const RokJsonObj *rates, const char *kind, RokHwOpRates *out, GError **error) {
  g_auto(RokJsonObj) o = {0};
  if (!rok_json_child(rates, kind, TRUE, &o, error) || !rok_json_only_keys(&o, direction_keys, error))
    return FALSE;
  out->kind = g_strdup(kind);
  G_STATIC_ASSERT(sizeof(RokHwRatePoint) == 2 * sizeof(double));
  guint total = 0;
  for (guint d = 0; d < ROK_HW_DIRECTIONS; d++) {
    double *knots = NULL;
    if (!read_pairs(&o, direction_keys[d], &rate_kind, &knots, &out->len[d], error))
      return FALSE;
    out->curve[d] = (RokHwRatePoint *)knots;
    total += out->len[d];
  }
  if (total == 0) {
    rok_json_error(error, o.doc, o.path, "must have a \"forward\", \"backward\" or \"rebuild\" curve");
    return FALSE;
  }
  return TRUE;
}

static gboolean read_op_rates(const RokJsonObj *gpu, RokHw *hw, GError **error) {
  g_auto(RokJsonObj) o = {0};
  if (!rok_json_child(gpu, "op_rates", FALSE, &o, error))
    return FALSE;
  if (o.obj == NULL)
    return TRUE;
  guint n = (guint)json_object_object_length(o.obj), i = 0;
  RokHwOpRates *rates = g_new0(RokHwOpRates, MAX(n, 1));
  gboolean ok = TRUE;
  json_object_object_foreach(o.obj, key, value) {
    (void)value;
    if (ok)
      ok = read_op_kind(&o, key, &rates[i++], error);
  }
  if (!ok) {
    op_rates_free(rates, i);
    return FALSE;
  }
  hw->gpu.op_rates = rates;
  hw->gpu.op_rates_len = n;
  return TRUE;
}

static gboolean read_gpu(const RokJsonObj *root, RokHw *hw, GError **error) {
  g_auto(RokJsonObj) o = {0};
  return rok_json_child(root, "gpu", TRUE, &o, error) && rok_json_only_keys(&o, gpu_keys, error) &&
         rok_json_get_size(&o, "memory", TRUE, &hw->gpu.memory, error) &&
         rok_json_get_rate(&o, "peak_flops", TRUE, &hw->gpu.peak_flops, error) &&
         rok_json_get_double(&o, "matmul_efficiency", TRUE, 1e-3, 1.0, &hw->gpu.matmul_efficiency, error) &&
         rok_json_get_rate(&o, "hbm_bandwidth", TRUE, &hw->gpu.hbm_bandwidth, error) &&
         read_latency(&o, "launch_overhead", &hw->gpu.launch_overhead, error) && read_curve(&o, hw, error) &&
         read_op_rates(&o, hw, error) &&
         rok_json_get_uint(&o, "shared_cpus", FALSE, 0, 65536, &hw->gpu.shared_cpus, error) &&
         rok_json_get_double(&o, "copy_kernel_wait", FALSE, 0.0, 100.0, &hw->gpu.copy_kernel_wait, error) &&
         rok_json_get_double(&o, "copy_kernel_free_at", FALSE, 0.0, 1.0, &hw->gpu.copy_kernel_free_at, error) &&
         read_latency(&o, "copy_launch_window", &hw->gpu.copy_launch_window, error) &&
         rok_json_get_double(&o, "copy_launch_ahead", FALSE, 0.0, 1.0, &hw->gpu.copy_launch_ahead, error) &&
         rok_json_get_bool(&o, "copy_queues_in_order", FALSE, &hw->gpu.copy_queues_in_order, error) &&
         read_latency(&o, "copy_leg_cpu", &hw->gpu.copy_leg_cpu, error) &&
         rok_json_get_rate(&o, "checksum_bandwidth", FALSE, &hw->gpu.checksum_bandwidth, error) &&
         read_latency(&o, "checksum_overhead", &hw->gpu.checksum_overhead, error) &&
         hw_read_gemm_tiling(&o, hw, error);
}

static gboolean read_pcie(const RokJsonObj *root, RokHw *hw, GError **error) {
  g_auto(RokJsonObj) o = {0};
  return rok_json_child(root, "pcie", TRUE, &o, error) && rok_json_only_keys(&o, pcie_keys, error) &&
         rok_json_get_rate(&o, "h2d_bandwidth", TRUE, &hw->pcie.h2d_bandwidth, error) &&
         rok_json_get_rate(&o, "d2h_bandwidth", TRUE, &hw->pcie.d2h_bandwidth, error) &&
         read_latency(&o, "latency", &hw->pcie.latency, error);
}

static gboolean read_check_rates(const RokJsonObj *o, RokHw *hw, GError **error) {
  double *knots = NULL;
  if (!read_pairs(o, "checksum_rates", &check_kind, &knots, &hw->host.checksum_rates_len, error))
    return FALSE;
  hw->host.checksum_rates = (RokHwRatePoint *)knots;
  return TRUE;
}

static gboolean read_host(const RokJsonObj *root, RokHw *hw, GError **error) {
  g_auto(RokJsonObj) o = {0};
  return rok_json_child(root, "host", TRUE, &o, error) && rok_json_only_keys(&o, host_keys, error) &&
         rok_json_get_size(&o, "memory", TRUE, &hw->host.memory, error) &&
         rok_json_get_size(&o, "pinned_buffer", TRUE, &hw->host.pinned_buffer, error) &&
         rok_json_get_rate(&o, "memcpy_bandwidth", TRUE, &hw->host.memcpy_bandwidth, error) &&
         rok_json_get_rate(&o, "checksum_bandwidth", FALSE, &hw->host.checksum_bandwidth, error) &&
         read_check_rates(&o, hw, error) && read_latency(&o, "copy_overhead", &hw->host.copy_overhead, error);
}

/* nvme.write_latency and write_leg_overhead: either given makes both the
 * writes' own, the other as the reads' (after latency and leg_overhead). */
static gboolean read_write_fixed(const RokJsonObj *o, RokHw *hw, GError **error) {
  hw->nvme.write_fixed = o->obj != NULL && (json_object_object_get_ex(o->obj, "write_latency", NULL) ||
                                            json_object_object_get_ex(o->obj, "write_leg_overhead", NULL));
  hw->nvme.write_latency = hw->nvme.latency;
  hw->nvme.write_leg_overhead = hw->nvme.leg_overhead;
  return read_latency(o, "write_latency", &hw->nvme.write_latency, error) &&
         read_latency(o, "write_leg_overhead", &hw->nvme.write_leg_overhead, error);
}

/* A deep wake is a deeper sleep's: it comes after a longer idle than the
 * wake (any idle where the profile has no wake). */
static gboolean deep_wake_deeper(const RokJsonObj *o, const RokHw *hw, GError **error) {
  if ((hw->nvme.deep_wake_write > 0 || hw->nvme.deep_wake_read > 0) &&
      (hw->nvme.wake_write > 0 || hw->nvme.wake_read > 0) && hw->nvme.deep_wake_after <= hw->nvme.wake_after) {
    g_autofree char *path = g_strconcat(o->path, ".deep_wake_after", NULL);
    rok_json_error(error, o->doc, path, "must be more than wake_after");
    return FALSE;
  }
  return TRUE;
}

/* A warm leg's saving comes out of its latency, so it is no more than it. */
static gboolean warm_within_latency(const RokJsonObj *o, const RokHw *hw, GError **error) {
  gboolean read = hw->nvme.warm_read > hw->nvme.latency;
  if (!read && hw->nvme.warm_write <= rok_hw_nvme_latency(hw, TRUE))
    return TRUE;
  g_autofree char *path = g_strconcat(o->path, read ? ".warm_read" : ".warm_write", NULL);
  rok_json_error(error, o->doc, path, "must be at most %s", read ? "latency" : "a write's latency");
  return FALSE;
}

/* The SSD section may be left out (a machine without SSDs: devices 0). */
static gboolean read_nvme(const RokJsonObj *root, RokHw *hw, GError **error) {
  g_auto(RokJsonObj) o = {0};
  if (!rok_json_child(root, "nvme", FALSE, &o, error))
    return FALSE;
  if (o.obj == NULL)
    return TRUE;
  hw->nvme.devices = 1;
  hw->nvme.queue_depth = 32;
  return rok_json_only_keys(&o, nvme_keys, error) &&
         rok_json_get_uint(&o, "devices", FALSE, 0, 1024, &hw->nvme.devices, error) &&
         rok_json_get_rate(&o, "read_bandwidth", TRUE, &hw->nvme.read_bandwidth, error) &&
         rok_json_get_rate(&o, "write_bandwidth", TRUE, &hw->nvme.write_bandwidth, error) &&
         read_latency(&o, "latency", &hw->nvme.latency, error) &&
         rok_json_get_uint(&o, "queue_depth", FALSE, 1, ROK_HW_MAX_QUEUE_DEPTH, &hw->nvme.queue_depth, error) &&
         rok_json_get_size(&o, "capacity", TRUE, &hw->nvme.capacity, error) &&
         rok_json_get_double(&o, "endurance_pbw", FALSE, 0.0, 1e9, &hw->nvme.endurance_pbw, error) &&
         rok_json_get_bool(&o, "gpudirect", FALSE, &hw->nvme.gpudirect, error) &&
         read_latency(&o, "request_overhead", &hw->nvme.request_overhead, error) &&
         read_latency(&o, "request_overhead_per_mib", &hw->nvme.request_overhead_per_mib, error) &&
         read_latency(&o, "leg_overhead", &hw->nvme.leg_overhead, error) && read_write_fixed(&o, hw, error) &&
         read_latency(&o, "wake_write", &hw->nvme.wake_write, error) &&
         read_latency(&o, "wake_read", &hw->nvme.wake_read, error) &&
         read_latency(&o, "wake_after", &hw->nvme.wake_after, error) &&
         read_latency(&o, "deep_wake_write", &hw->nvme.deep_wake_write, error) &&
         read_latency(&o, "deep_wake_read", &hw->nvme.deep_wake_read, error) &&
         read_latency(&o, "deep_wake_after", &hw->nvme.deep_wake_after, error) && deep_wake_deeper(&o, hw, error) &&
         read_latency(&o, "warm_write", &hw->nvme.warm_write, error) &&
         read_latency(&o, "warm_read", &hw->nvme.warm_read, error) && warm_within_latency(&o, hw, error) &&
         rok_json_get_bool(&o, "completes_together", FALSE, &hw->nvme.completes_together, error) &&
         read_latency(&o, "leg_cpu", &hw->nvme.leg_cpu, error) &&
         read_latency(&o, "request_cpu", &hw->nvme.request_cpu, error);
}

static RokHw *hw_from_doc(const RokJsonDoc *doc, GError **error) {
  g_auto(RokJsonObj) root = {0};
  g_autoptr(RokHw) hw = g_new0(RokHw, 1);
  if (!rok_json_root(doc, &root, error) || !rok_json_only_keys(&root, hw_keys, error) ||
      !rok_json_get_string(&root, "name", FALSE, &hw->name, error) ||
      !rok_json_get_string(&root, "source", FALSE, &hw->source, error) ||
      !rok_json_get_double(&root, "calibrated_busy", FALSE, 0.0, 1.0, &hw->calibrated_busy, error) ||
      !rok_json_get_double(&root, "calibrated_copies_memory_speed", FALSE, 0.0, 100.0,
                           &hw->calibrated_copies_memory_speed, error) ||
      !read_gpu(&root, hw, error) ||
      !read_pcie(&root, hw, error) || !read_host(&root, hw, error) || !read_nvme(&root, hw, error) ||
      !hw_interconnect_read(&root, hw, error) || !hw_node_read(&root, hw, error) ||
      !hw_shapes_read(&root, hw, error))
    return NULL;
  if (hw->host.pinned_buffer > hw->host.memory) {
    rok_json_error(error, doc, "host.pinned_buffer", "must not exceed \"host.memory\"");
    return NULL;
  }
  if (hw->name == NULL) {
    g_autofree char *base = g_path_get_basename(rok_json_doc_name(doc));
    char *dot = g_strrstr(base, ".json");
    if (dot != NULL && dot != base)
      *dot = '\0';
    hw->name = g_strdup(base);
  }
  return g_steal_pointer(&hw);
}

RokHw *rok_hw_parse(const char *name, const char *text, gsize length, GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse(name, text, length, error);
  return doc == NULL ? NULL : hw_from_doc(doc, error);
}

RokHw *rok_hw_load(const char *path, GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_load(path, error);
  return doc == NULL ? NULL : hw_from_doc(doc, error);
}

RokHw *rok_hw_from_doc(RokJsonDoc *doc, const char *const *overrides, GPtrArray *warnings, GError **error) {
  for (const char *const *set = overrides; set != NULL && *set != NULL; set++) {
    g_autofree char *origin = g_strdup_printf("--hw-set %s", *set);
    if (!rok_json_doc_set(doc, *set, origin, error))
      return NULL;
  }
  RokHw *hw = hw_from_doc(doc, error);
  if (hw != NULL && warnings != NULL)
    hw_check_plausible(hw, doc, warnings);
  return hw;
}

gboolean rok_hw_is_key(const char *key) {
  g_autofree char *head = g_strndup(key, strcspn(key, ".["));
  return g_strv_contains(hw_keys, head) && !g_str_equal(head, "name") && !g_str_equal(head, "source");
}

/* Divided, not multiplied by 1e-9: the quotient is rounded once, so that
 * reading it back (seconds × 1e9, rounded) gives the same nanoseconds. */
static json_object *seconds(gint64 ns) {
  return rok_json_new_double((double)ns / 1e9);
}

static json_object *pairs_json(const double *knots, guint n) {
  json_object *curve = json_object_new_array();
  for (guint i = 0; i < n; i++) {
    json_object *pair = json_object_new_array();
    json_object_array_add(pair, rok_json_new_double(knots[2 * i]));
    json_object_array_add(pair, rok_json_new_double(knots[2 * i + 1]));
    json_object_array_add(curve, pair);
  }
  return curve;
}

static json_object *op_rates_json(const RokHw *hw) {
  json_object *o = json_object_new_object();
  for (guint i = 0; i < hw->gpu.op_rates_len; i++) {
    const RokHwOpRates *r = &hw->gpu.op_rates[i];
    json_object *kind = json_object_new_object();
    for (guint d = 0; d < ROK_HW_DIRECTIONS; d++)
      if (r->len[d] > 0)
        json_object_object_add(kind, direction_keys[d], pairs_json((const double *)r->curve[d], r->len[d]));
    json_object_object_add(o, r->kind, kind);
  }
  return o;
}

json_object *rok_hw_to_json(const RokHw *hw) {
  json_object *o = json_object_new_object(), *gpu = json_object_new_object();
  json_object *pcie = json_object_new_object(), *host = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(hw->name));
  if (hw->source != NULL)
    json_object_object_add(o, "source", json_object_new_string(hw->source));
  if (hw->calibrated_busy > 0)
    json_object_object_add(o, "calibrated_busy", rok_json_new_double(hw->calibrated_busy));
  if (hw->calibrated_copies_memory_speed > 0)
    json_object_object_add(o, "calibrated_copies_memory_speed",
                           rok_json_new_double(hw->calibrated_copies_memory_speed));
  json_object_object_add(gpu, "memory", json_object_new_uint64(hw->gpu.memory));
  json_object_object_add(gpu, "peak_flops", rok_json_new_double(hw->gpu.peak_flops));
  json_object_object_add(gpu, "matmul_efficiency", rok_json_new_double(hw->gpu.matmul_efficiency));
  json_object_object_add(gpu, "hbm_bandwidth", rok_json_new_double(hw->gpu.hbm_bandwidth));
  json_object_object_add(gpu, "launch_overhead", seconds(hw->gpu.launch_overhead));
  if (hw->gpu.gemm_curve_len > 0)
    json_object_object_add(gpu, "gemm_efficiency",
                           pairs_json((const double *)hw->gpu.gemm_curve, hw->gpu.gemm_curve_len));
  if (hw->gpu.op_rates_len > 0)
    json_object_object_add(gpu, "op_rates", op_rates_json(hw));
  if (hw->gpu.shared_cpus > 0)
    json_object_object_add(gpu, "shared_cpus", json_object_new_uint64(hw->gpu.shared_cpus));
  if (hw->gpu.copy_kernel_wait > 0)
    json_object_object_add(gpu, "copy_kernel_wait", rok_json_new_double(hw->gpu.copy_kernel_wait));
  if (hw->gpu.copy_kernel_free_at > 0)
    json_object_object_add(gpu, "copy_kernel_free_at", rok_json_new_double(hw->gpu.copy_kernel_free_at));
  if (hw->gpu.copy_launch_window > 0)
    json_object_object_add(gpu, "copy_launch_window", seconds(hw->gpu.copy_launch_window));
  if (hw->gpu.copy_launch_ahead > 0)
    json_object_object_add(gpu, "copy_launch_ahead", rok_json_new_double(hw->gpu.copy_launch_ahead));
  if (hw->gpu.copy_queues_in_order)
    json_object_object_add(gpu, "copy_queues_in_order", json_object_new_boolean(TRUE));
  if (hw->gpu.copy_leg_cpu > 0)
    json_object_object_add(gpu, "copy_leg_cpu", seconds(hw->gpu.copy_leg_cpu));
  if (hw->gpu.checksum_bandwidth > 0)
    json_object_object_add(gpu, "checksum_bandwidth", rok_json_new_double(hw->gpu.checksum_bandwidth));
  if (hw->gpu.checksum_overhead > 0)
    json_object_object_add(gpu, "checksum_overhead", seconds(hw->gpu.checksum_overhead));
  hw_gemm_tiling_to_json(hw, gpu);
  json_object_object_add(o, "gpu", gpu);
  json_object_object_add(pcie, "h2d_bandwidth", rok_json_new_double(hw->pcie.h2d_bandwidth));
  json_object_object_add(pcie, "d2h_bandwidth", rok_json_new_double(hw->pcie.d2h_bandwidth));
  json_object_object_add(pcie, "latency", seconds(hw->pcie.latency));
  json_object_object_add(o, "pcie", pcie);
  json_object_object_add(host, "memory", json_object_new_uint64(hw->host.memory));
  json_object_object_add(host, "pinned_buffer", json_object_new_uint64(hw->host.pinned_buffer));
  json_object_object_add(host, "memcpy_bandwidth", rok_json_new_double(hw->host.memcpy_bandwidth));
  if (hw->host.checksum_bandwidth > 0)
    json_object_object_add(host, "checksum_bandwidth", rok_json_new_double(hw->host.checksum_bandwidth));
  if (hw->host.checksum_rates_len > 0)
    json_object_object_add(host, "checksum_rates",
                           pairs_json((const double *)hw->host.checksum_rates, hw->host.checksum_rates_len));
  if (hw->host.copy_overhead > 0)
    json_object_object_add(host, "copy_overhead", seconds(hw->host.copy_overhead));
  json_object_object_add(o, "host", host);
  if (hw->nvme.devices > 0) {
    json_object *nvme = json_object_new_object();
    json_object_object_add(nvme, "devices", json_object_new_uint64(hw->nvme.devices));
    json_object_object_add(nvme, "read_bandwidth", rok_json_new_double(hw->nvme.read_bandwidth));
    json_object_object_add(nvme, "write_bandwidth", rok_json_new_double(hw->nvme.write_bandwidth));
    json_object_object_add(nvme, "latency", seconds(hw->nvme.latency));
    json_object_object_add(nvme, "queue_depth", json_object_new_uint64(hw->nvme.queue_depth));
    json_object_object_add(nvme, "capacity", json_object_new_uint64(hw->nvme.capacity));
    if (hw->nvme.endurance_pbw > 0) /* absent: unknown (a calibrated disk) */
      json_object_object_add(nvme, "endurance_pbw", rok_json_new_double(hw->nvme.endurance_pbw));
    json_object_object_add(nvme, "gpudirect", json_object_new_boolean(hw->nvme.gpudirect));
    if (hw->nvme.request_overhead > 0)
      json_object_object_add(nvme, "request_overhead", seconds(hw->nvme.request_overhead));
    if (hw->nvme.request_overhead_per_mib > 0)
      json_object_object_add(nvme, "request_overhead_per_mib", seconds(hw->nvme.request_overhead_per_mib));
    if (hw->nvme.leg_overhead > 0)
      json_object_object_add(nvme, "leg_overhead", seconds(hw->nvme.leg_overhead));
    if (hw->nvme.write_fixed) {
      json_object_object_add(nvme, "write_latency", seconds(hw->nvme.write_latency));
      json_object_object_add(nvme, "write_leg_overhead", seconds(hw->nvme.write_leg_overhead));
    }
    if (hw->nvme.wake_write > 0 || hw->nvme.wake_read > 0) {
      json_object_object_add(nvme, "wake_write", seconds(hw->nvme.wake_write));
      json_object_object_add(nvme, "wake_read", seconds(hw->nvme.wake_read));
      json_object_object_add(nvme, "wake_after", seconds(hw->nvme.wake_after));
    }
    if (hw->nvme.deep_wake_write > 0 || hw->nvme.deep_wake_read > 0) {
      json_object_object_add(nvme, "deep_wake_write", seconds(hw->nvme.deep_wake_write));
      json_object_object_add(nvme, "deep_wake_read", seconds(hw->nvme.deep_wake_read));
      json_object_object_add(nvme, "deep_wake_after", seconds(hw->nvme.deep_wake_after));
    }
    if (hw->nvme.warm_write > 0 || hw->nvme.warm_read > 0) {
      json_object_object_add(nvme, "warm_write", seconds(hw->nvme.warm_write));
      json_object_object_add(nvme, "warm_read", seconds(hw->nvme.warm_read));
    }
    if (hw->nvme.completes_together)
      json_object_object_add(nvme, "completes_together", json_object_new_boolean(TRUE));
    if (hw->nvme.leg_cpu > 0)
      json_object_object_add(nvme, "leg_cpu", seconds(hw->nvme.leg_cpu));
    if (hw->nvme.request_cpu > 0)
      json_object_object_add(nvme, "request_cpu", seconds(hw->nvme.request_cpu));
    json_object_object_add(o, "nvme", nvme);
  }
  hw_interconnect_to_json(hw, o);
  hw_node_to_json(hw, o);
  hw_shapes_to_json(hw, o);
  return o;
}

gboolean rok_hw_save(const RokHw *hw, const char *path, GError **error) {
  json_object *o = rok_hw_to_json(hw);
  gboolean ok = rok_json_write_file(o, path, error);
  json_object_put(o);
  return ok;
}

double rok_hw_nvme_read_bandwidth(const RokHw *hw) {
  return (double)hw->nvme.devices * hw->nvme.read_bandwidth;
}

double rok_hw_nvme_write_bandwidth(const RokHw *hw) {
  return (double)hw->nvme.devices * hw->nvme.write_bandwidth;
}

gint64 rok_hw_nvme_latency(const RokHw *hw, gboolean write) {
  return write && hw->nvme.write_fixed ? hw->nvme.write_latency : hw->nvme.latency;
}

gint64 rok_hw_nvme_leg_overhead(const RokHw *hw, gboolean write) {
  return write && hw->nvme.write_fixed ? hw->nvme.write_leg_overhead : hw->nvme.leg_overhead;
}

/* Y at X on knots (x, y) pairs sorted by x, interpolated in log(x) and
 * clamped to the end knots. Throughput grows with size roughly
 * logarithmically until the device saturates, so knots spaced by factors of
 * the size are evenly spaced here. Steffen's method keeps the curve
 * monotone between knots, so it never invents a figure the measurements did
 * not show. */
static double interpolate(const double *knots, guint n, double at) {
  if (!(at > knots[0]))
    return knots[1];
  if (at >= knots[2 * n - 2])
    return knots[2 * n - 1];
  g_autofree double *x = g_new(double, n), *y = g_new(double, n);
  for (guint i = 0; i < n; i++) {
    x[i] = log(knots[2 * i]);
    y[i] = knots[2 * i + 1];
  }
  gsl_interp *interp = gsl_interp_alloc(n >= 3 ? gsl_interp_steffen : gsl_interp_linear, n);
  double v = y[n - 1];
  if (interp != NULL && gsl_interp_init(interp, x, y, n) == GSL_SUCCESS)
    v = gsl_interp_eval(interp, x, y, log(at), NULL);
  gsl_interp_free(interp);
  return v;
}

double rok_hw_host_check_seconds(const RokHw *hw, guint64 bytes) {
  double rate = hw->host.checksum_rates_len > 0
                    ? interpolate((const double *)hw->host.checksum_rates, hw->host.checksum_rates_len, (double)bytes)
                    : hw->host.checksum_bandwidth;
  return rate > 0 ? (double)bytes / rate : 0;
}

double rok_hw_gemm_efficiency(const RokHw *hw, double flops) {
  if (hw->gpu.gemm_curve_len == 0)
    return hw->gpu.matmul_efficiency;
  return interpolate((const double *)hw->gpu.gemm_curve, hw->gpu.gemm_curve_len, flops);
}

const RokHwOpRates *rok_hw_op_rates(const RokHw *hw, const char *kind) {
  for (guint i = 0; i < hw->gpu.op_rates_len; i++)
    if (g_str_equal(hw->gpu.op_rates[i].kind, kind))
      return &hw->gpu.op_rates[i];
  return NULL;
}

double rok_hw_op_rate(const RokHwOpRates *rates, RokHwDirection direction, double work) {
  guint d = (guint)direction;
  if (rates == NULL || d >= ROK_HW_DIRECTIONS || rates->len[d] == 0)
    return 0;
  return interpolate((const double *)rates->curve[d], rates->len[d], work);
}
