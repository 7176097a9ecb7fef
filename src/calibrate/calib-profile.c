/* From measurements to a hardware profile: the figures each field takes,
 * the GEMM-efficiency curve, and a "source" that says how they were got. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rok/calibrate.h"
#include "rok/core.h"

/* hw.c's floor for matmul_efficiency. */
#define MIN_EFFICIENCY 1e-3

typedef struct {
  double flops, rate;
  guint order;
} Knot;

static int compare_knots(const void *a, const void *b) {
  const Knot *x = a, *y = b;
  if (x->flops != y->flops)
    return x->flops < y->flops ? -1 : 1;
  return (x->order > y->order) - (x->order < y->order);
}

/* The knots of one op kind in one direction: every op measured, sorted by
 * work, ops of equal work (alike ops of a layer) merged at their mean rate. */
static RokHwRatePoint *rate_curve(const GArray *ops, RokOpKind kind, RokHwDirection direction, guint *n) {
  g_autofree Knot *k = g_new(Knot, MAX(ops->len, 1));
  guint m = 0;
  for (guint i = 0; i < ops->len; i++) {
    const RokCalibOp *op = &g_array_index(ops, RokCalibOp, i);
    if (op->kind == kind && op->direction == direction && op->rate.median > 0)
      k[m++] = (Knot){op->work, op->rate.median, i};
  }
  qsort(k, m, sizeof *k, compare_knots);
  RokHwRatePoint *curve = g_new(RokHwRatePoint, MAX(m, 1));
  guint out = 0;
  for (guint i = 0; i < m;) {
    guint j = i;
    double sum = 0;
    for (; j < m && k[j].flops == k[i].flops; j++)
      sum += k[j].rate;
    curve[out++] = (RokHwRatePoint){k[i].flops, sum / (j - i)};
    i = j;
  }
  *n = out;
  return curve;
}

/* A curve per op kind measured but those the GEMM model times, in the
 * order of the kinds. */
static void fill_op_rates(const RokCalibDevice *d, RokHw *hw) {
  hw->gpu.op_rates = g_new0(RokHwOpRates, ROK_OP_KIND_COUNT);
  for (guint kind = 0; kind < ROK_OP_KIND_COUNT; kind++) {
    if (rok_calib_kind_fitted(kind)) /* timed by the GEMM model, by shape */
      continue;
    RokHwOpRates r = {0};
    guint total = 0;
    for (guint dir = 0; dir < ROK_HW_DIRECTIONS; dir++) {
      r.curve[dir] = rate_curve(d->ops, kind, dir, &r.len[dir]);
      total += r.len[dir];
    }
    if (total == 0) {
      for (guint dir = 0; dir < ROK_HW_DIRECTIONS; dir++)
        g_free(r.curve[dir]);
      continue;
    }
    r.kind = g_strdup(rok_op_kind_name(kind));
    hw->gpu.op_rates[hw->gpu.op_rates_len++] = r;
  }
}

static gboolean positive(double value, const char *field, GError **error) {
  if (value > 0 && isfinite(value))
    return TRUE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "calibration measured no usable %s (%g)", field, value);
  return FALSE;
}

/* The GEMM model fitted to every GEMM timed; peak_flops the best rate a
 * GEMM reached (or the fit's full-wave rate when that is higher), so that
 * matmul_efficiency is the fit's rate over it. */
static gboolean fill_gemm_model(const RokCalibDevice *d, RokHw *hw, GError **error) {
  RokCalibGemmReport r;
  if (!rok_calib_gemm_report(d, &r)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "calibration timed no usable GEMM on the device");
    return FALSE;
  }
  double best = 0;
  for (guint i = 0; i < d->gemms->len; i++)
    best = MAX(best, g_array_index(d->gemms, RokCalibGemm, i).rate.median);
  hw->gpu.peak_flops = MAX(best, r.fit.rate);
  hw->gpu.matmul_efficiency = MAX(r.fit.rate / hw->gpu.peak_flops, MIN_EFFICIENCY);
  hw->gpu.sm_count = r.fit.sm_count;
  hw->gpu.gemm_tile[0] = r.fit.tile[0];
  hw->gpu.gemm_tile[1] = r.fit.tile[1];
  return TRUE;
}

static gboolean same_dims(const RokHwGemmDims *a, const guint64 dims[4]) {
  return memcmp(a->dims, dims, sizeof a->dims) == 0;
}

/* calibrated_shapes: every GEMM shape the model was fitted to (forward
 * dims, each once, in the order timed) and the element-wise ops' bytes. */
static void fill_shapes(const RokCalibDevice *d, RokHw *hw) {
  guint n = 0, n_gemms = 0;
  g_autofree RokCalibGemmObs *obs = rok_calib_gemm_observations(d, &n, &n_gemms);
  hw->calibrated.gemms = g_new0(RokHwGemmDims, MAX(n, 1));
  for (guint i = 0; i < n && hw->calibrated.gemms_len < ROK_HW_MAX_SHAPES; i++) {
    gboolean seen = FALSE;
    for (guint j = 0; j < hw->calibrated.gemms_len && !seen; j++)
      seen = same_dims(&hw->calibrated.gemms[j], obs[i].dims);
    if (!seen)
      memcpy(hw->calibrated.gemms[hw->calibrated.gemms_len++].dims, obs[i].dims, sizeof obs[i].dims);
  }
  for (guint i = 0; i < d->ops->len; i++) {
    const RokCalibOp *op = &g_array_index(d->ops, RokCalibOp, i);
    guint64 bytes = (guint64)op->bytes, *range = hw->calibrated.elementwise_bytes;
    if (rok_op_kind_is_gemm(op->kind) || op->direction == ROK_HW_REBUILD || bytes == 0)
      continue;
    range[0] = range[0] == 0 ? bytes : MIN(range[0], bytes);
    range[1] = MAX(range[1], bytes);
  }
}

/* calibrated_shapes.gemm_ops: every op of a kind the GEMM model times,
 * one per kind and shape (alike ops of a layer at their mean time), each
 * direction's time as its rate gives it (launch overhead out); where
 * probed, the backward's first kernel: where a copy found a processor
 * free, at gpu.copy_kernel_free_at of that kernel (alike ops' mean). */
static void fill_gemm_ops(const RokCalibDevice *d, RokHw *hw) {
  RokHwGemmOp *out = g_new0(RokHwGemmOp, MAX(d->ops->len, 1));
  g_autofree double *seconds = g_new0(double, 2 * MAX(d->ops->len, 1)); /* per op and direction */
  g_autofree guint *count = g_new0(guint, 2 * MAX(d->ops->len, 1));
  g_autofree double *first = g_new0(double, MAX(d->ops->len, 1));
  g_autofree guint *firsts = g_new0(guint, MAX(d->ops->len, 1));
  double free_at = hw->gpu.copy_kernel_free_at > 0 ? hw->gpu.copy_kernel_free_at : 1;
  guint n = 0;
  for (guint i = 0; i < d->ops->len; i++) {
    const RokCalibOp *op = &g_array_index(d->ops, RokCalibOp, i);
    const char *kind = rok_op_kind_name(op->kind);
    if (!rok_calib_op_fitted(op))
      continue;
    const RokHwGemmOp *seen = rok_hw_gemm_op_find(out, n, kind, op->dims);
    if (seen == NULL && n == ROK_HW_MAX_SHAPES)
      continue;
    gsize j = seen != NULL ? (gsize)(seen - out) : n++;
    if (seen == NULL) {
      out[j].kind = g_strdup(kind);
      memcpy(out[j].dims, op->dims, sizeof op->dims);
    }
    guint dir = op->direction == ROK_HW_BACKWARD ? 1 : 0;
    seconds[2 * j + dir] += op->work / op->rate.median;
    count[2 * j + dir]++;
    if (dir == 1 && op->first_free.n > 0) {
      first[j] += op->first_free.median / free_at;
      firsts[j]++;
    }
  }
  for (guint j = 0; j < 2 * n; j++)
    out[j / 2].ns[j % 2] = count[j] > 0 ? (gint64)llround(seconds[j] / count[j] * 1e9) : -1;
  for (guint j = 0; j < n; j++)
    if (firsts[j] > 0)
      out[j].backward_first = CLAMP(first[j] / firsts[j], ROK_HW_FIRST_KERNEL_MIN, 1 - ROK_HW_FIRST_KERNEL_MIN);
  hw->calibrated.gemm_ops = n > 0 ? out : (g_free(out), NULL);
  hw->calibrated.gemm_ops_len = n;
}

static gboolean fill_gpu(const RokCalibration *c, RokHw *hw, GError **error) {
  const RokCalibDevice *d = &c->device;
  hw->gpu.memory = d->memory;
  hw->gpu.hbm_bandwidth = d->elementwise.median;
  hw->gpu.launch_overhead = (gint64)llround(rok_calib_action_seconds(d) * 1e9);
  if (!positive(hw->gpu.hbm_bandwidth, "gpu.hbm_bandwidth", error) || !fill_gemm_model(d, hw, error))
    return FALSE;
  /* A CPU device computes on the host's processors, and copies run there. */
  hw->gpu.shared_cpus = g_strcmp0(d->type, "cpu") == 0 ? d->compute_units : 0;
  if (d->contention) { /* copies issued at spread points of a kernel: when they typically went */
    hw->gpu.copy_kernel_free_at = d->copy_kernel_free_at.median;
    hw->gpu.copy_launch_window = (gint64)llround(d->copy_launch_window * 1e9);
    hw->gpu.copy_launch_ahead = d->copy_launch_ahead;
  }
  hw->gpu.copy_queues_in_order = hw->gpu.shared_cpus > 0 && !d->out_of_order;
  if (hw->gpu.shared_cpus > 0) /* a copy's own processor time is the kernels' loss */
    hw->gpu.copy_leg_cpu = (gint64)llround(d->copy_cpu * 1e9);
  hw->gpu.checksum_bandwidth = d->checksum_bandwidth; /* 0 when not measured: not modelled */
  hw->gpu.checksum_overhead = (gint64)llround(d->checksum_overhead * 1e9);
  fill_op_rates(d, hw);
  fill_shapes(d, hw);
  fill_gemm_ops(d, hw);
  return positive(hw->gpu.peak_flops, "gpu.peak_flops", error) &&
         positive((double)hw->gpu.memory, "gpu.memory", error);
}

/* host.checksum_rates: each leg size's check after its copy; and
 * checksum_bandwidth the largest one's, what a tensor far past the caches
 * sees (the host's own pass over a buffer, which the copies did not just
 * write, where they were not timed). */
static void fill_check_rates(const RokCalibration *c, RokHw *hw) {
  const RokCalibDevice *d = &c->device;
  guint n = 0;
  while (n < ROK_CALIB_CHECK_SIZES && d->copied_check[n].n > 0)
    n++;
  if (n == 0)
    return;
  hw->host.checksum_rates = g_new(RokHwRatePoint, n);
  for (guint i = 0; i < n; i++)
    hw->host.checksum_rates[i] = (RokHwRatePoint){(double)d->copied_check_bytes[i], d->copied_check_rate[i]};
  hw->host.checksum_rates_len = n;
  hw->host.checksum_bandwidth = d->copied_check_rate[n - 1];
}

static gboolean fill_host(const RokCalibration *c, RokHw *hw, GError **error) {
  const RokCalibDevice *d = &c->device;
  /* A CPU device's at the rate its legs copy (calib-copy.c, leg_rate). */
  hw->pcie.h2d_bandwidth = d->h2d_legs > 0 ? d->h2d_legs : d->h2d.median;
  hw->pcie.d2h_bandwidth = d->d2h_legs > 0 ? d->d2h_legs : d->d2h.median;
  hw->pcie.latency = (gint64)llround(d->copy_latency.median * 1e9);
  hw->host.memory = c->host.memory;
  /* A choice, not a measurement (the source says so): pinning much more
   * than an eighth of memory starves everything else on the host. */
  hw->host.pinned_buffer = MAX(c->host.memory / 8 / ((guint64)1 << 20), 1) << 20;
  hw->host.memcpy_bandwidth = c->host.memcpy.median;
  hw->host.checksum_bandwidth = c->host.checksum.median; /* 0 when not measured: not modelled */
  fill_check_rates(c, hw);
  if (c->device.contention)
    hw->host.copy_overhead = (gint64)llround(c->device.handoff.median * 1e9);
  else if (c->device.leg_action_overhead > 0) /* a leg, too, is handed over, enqueued and waited for */
    hw->host.copy_overhead = (gint64)llround(c->device.leg_action_overhead * 1e9);
  return positive(hw->pcie.h2d_bandwidth, "pcie.h2d_bandwidth", error) &&
         positive(hw->pcie.d2h_bandwidth, "pcie.d2h_bandwidth", error) &&
         positive((double)hw->host.memory, "host.memory", error) &&
         positive(hw->host.memcpy_bandwidth, "host.memcpy_bandwidth", error);
}

/* The array: one device per directory, each as fast as the slowest (a
 * stripe moves at its slowest member's pace), as slow to answer as the
 * slowest, as large as the smallest. */
static gboolean fill_nvme(const RokCalibration *c, RokHw *hw, GError **error) {
  hw->nvme.devices = c->disks->len;
  if (c->disks->len == 0)
    return TRUE;
  hw->nvme.read_bandwidth = hw->nvme.write_bandwidth = INFINITY;
  hw->nvme.capacity = G_MAXUINT64;
  for (guint i = 0; i < c->disks->len; i++) {
    const RokCalibDisk *d = &g_array_index(c->disks, RokCalibDisk, i);
    if (d->points->len == 0) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "calibration measured nothing in %s", d->dir);
      return FALSE;
    }
    /* The rates and fixed parts the executor's legs see: those fitted
     * to the bursts shaped like them where they were timed, else the
     * grid's at the executor's requests and the random 4 KiB latencies;
     * the queue depth where the disk did best, the most the legs may keep
     * in flight. */
    const RokCalibDiskPoint *r = &g_array_index(d->points, RokCalibDiskPoint, d->best_read);
    const RokCalibDiskPoint *w = &g_array_index(d->points, RokCalibDiskPoint, d->best_write);
    const RokCalibLegFit *legs = &d->legs;
    double read_rate = legs->fitted ? legs->rate[1] : rok_calib_disk_rate_point(d, FALSE)->read.median;
    double write_rate = legs->fitted ? legs->rate[0] : rok_calib_disk_rate_point(d, TRUE)->write.median;
    double latency = legs->fitted ? legs->fixed[1] : d->latency.median;
    hw->nvme.read_bandwidth = MIN(hw->nvme.read_bandwidth, read_rate);
    hw->nvme.write_bandwidth = MIN(hw->nvme.write_bandwidth, write_rate);
    hw->nvme.latency = MAX(hw->nvme.latency, (gint64)llround(latency * 1e9));
    hw->nvme.request_overhead = MAX(hw->nvme.request_overhead, (gint64)llround(legs->request * 1e9));
    if (legs->fitted || d->write_latency.n > 0) {
      double write_latency = legs->fitted ? legs->fixed[0] : d->write_latency.median;
      hw->nvme.write_fixed = TRUE;
      hw->nvme.write_latency = MAX(hw->nvme.write_latency, (gint64)llround(write_latency * 1e9));
    }
    /* The wakes, shallowest first: nvme.wake_*, then deep_wake_*. */
    gint64 *write[] = {&hw->nvme.wake_write, &hw->nvme.deep_wake_write};
    gint64 *read[] = {&hw->nvme.wake_read, &hw->nvme.deep_wake_read};
    gint64 *after[] = {&hw->nvme.wake_after, &hw->nvme.deep_wake_after};
    G_STATIC_ASSERT(G_N_ELEMENTS(write) == ROK_CALIB_WAKES);
    for (guint k = 0; k < d->n_wakes; k++) {
      *write[k] = MAX(*write[k], (gint64)llround(d->wakes[k].write * 1e9));
      *read[k] = MAX(*read[k], (gint64)llround(d->wakes[k].read * 1e9));
      *after[k] = MAX(*after[k], (gint64)llround(d->wakes[k].after * 1e9));
    }
    /* A saving the array has only where every member has it: the least. */
    gint64 warm_write = d->warm_fitted ? (gint64)llround(d->warm[0] * 1e9) : 0;
    gint64 warm_read = d->warm_fitted ? (gint64)llround(d->warm[1] * 1e9) : 0;
    hw->nvme.warm_write = i == 0 ? warm_write : MIN(hw->nvme.warm_write, warm_write);
    hw->nvme.warm_read = i == 0 ? warm_read : MIN(hw->nvme.warm_read, warm_read);
    hw->nvme.completes_together |= d->completes_together; /* the array's legs end as its slowest member's */
    if (hw->gpu.shared_cpus > 0) { /* the SSD legs' processor time is the kernels' loss */
      hw->nvme.leg_cpu = MAX(hw->nvme.leg_cpu, (gint64)llround(d->leg_cpu * 1e9));
      hw->nvme.request_cpu = MAX(hw->nvme.request_cpu, (gint64)llround(d->request_cpu * 1e9));
    }
    hw->nvme.queue_depth = MAX(hw->nvme.queue_depth, MAX(r->queue_depth, w->queue_depth));
    hw->nvme.capacity = MIN(hw->nvme.capacity, d->capacity);
  }
  /* Out of a leg's latency: no more than it (the fit may leave that 0). */
  hw->nvme.warm_read = MIN(hw->nvme.warm_read, hw->nvme.latency);
  hw->nvme.warm_write = MIN(hw->nvme.warm_write, rok_hw_nvme_latency(hw, TRUE));
  hw->nvme.endurance_pbw = 0; /* unknown: no interface tells it */
  hw->nvme.gpudirect = FALSE;
  return positive(hw->nvme.read_bandwidth, "nvme.read_bandwidth", error) &&
         positive(hw->nvme.write_bandwidth, "nvme.write_bandwidth", error) &&
         positive((double)hw->nvme.capacity, "nvme.capacity", error);
}

/* Through the profile reader, so that what is written is what `rok plan`
 * and `rok simulate` accept. */
static RokHw *checked(const RokHw *hw, GError **error) {
  json_object *o = rok_hw_to_json(hw);
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  RokHw *back = rok_hw_parse("the measured profile", text, strlen(text), error);
  if (back == NULL)
    g_prefix_error(error, "calibration made an invalid profile: ");
  return back;
}

RokHw *rok_calib_profile(const RokCalibration *c, const char *name, GError **error) {
  g_autoptr(RokHw) hw = g_new0(RokHw, 1);
  hw->name = g_strdup(name);
  hw->source = rok_calib_source(c);
  hw->calibrated_busy = MAX(c->others_share, 0); /* unknown (no /proc/stat): none recorded */
  if (!fill_gpu(c, hw, error) || !fill_host(c, hw, error) || !fill_nvme(c, hw, error))
    return NULL;
  /* Only where the copies run on the kernels' processors, through the
   * memory they stream through (a GPU's go by DMA over the link). */
  if (hw->gpu.shared_cpus > 0)
    hw->calibrated_copies_memory_speed = rok_calib_copies_memory_speed(&c->device);
  return checked(hw, error);
}
