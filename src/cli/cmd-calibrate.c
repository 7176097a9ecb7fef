/* rok calibrate: measure this machine (disks, compute device, copies,
 * memcpy) into a hardware profile in the schema of configs/hw. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "rok/calibrate.h"
#include "rok/core.h"
#include "rok/device.h"

typedef struct {
  char **dirs, **blocks, **depths, **sets;
  char *output, *name, *file_size, *model;
  gint device, trials, attempts;
  double pass_time;
  gboolean quick, json, show_fit;
} Options;

static void options_clear(Options *o) {
  g_strfreev(o->dirs);
  g_strfreev(o->blocks);
  g_strfreev(o->depths);
  g_strfreev(o->sets);
  g_free(o->model);
  g_free(o->output);
  g_free(o->name);
  g_free(o->file_size);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

static gboolean parse_blocks(char **blocks, RokCalibOptions *c, GError **error) {
  for (guint i = 0; blocks != NULL && blocks[i] != NULL; i++) {
    if (c->n_blocks == ROK_CALIB_MAX_GRID) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--block: at most %d sizes", ROK_CALIB_MAX_GRID);
      return FALSE;
    }
    if (!rok_units_parse_size(blocks[i], &c->blocks[c->n_blocks++], error)) {
      g_prefix_error(error, "--block %s: ", blocks[i]);
      (*error)->code = ROK_ERROR_USAGE;
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean parse_depths(char **depths, RokCalibOptions *c, GError **error) {
  for (guint i = 0; depths != NULL && depths[i] != NULL; i++) {
    guint64 qd = 0;
    if (c->n_queue_depths == ROK_CALIB_MAX_GRID ||
        !g_ascii_string_to_unsigned(depths[i], 10, 1, 1024, &qd, NULL)) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--qd %s: must be a whole number from 1 to 1024 (at most %d)",
                  depths[i], ROK_CALIB_MAX_GRID);
      return FALSE;
    }
    c->queue_depths[c->n_queue_depths++] = (guint)qd;
  }
  return TRUE;
}

static gboolean to_calib_options(const Options *o, RokCalibOptions *c, GError **error) {
  rok_calib_options_init(c);
  c->dirs = (const char *const *)o->dirs;
  if (!cli_check_range("device", o->device, 0, G_MAXINT, error))
    return FALSE;
  c->device = o->device == CLI_UNSET ? -1 : o->device;
  c->quick = o->quick;
  if (o->trials < 0 || o->trials > 100) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--trials %d: must be from 1 to 100", o->trials);
    return FALSE;
  }
  c->trials = (guint)o->trials;
  if (!cli_check_range("attempts", o->attempts, 1, ROK_CALIB_MAX_ATTEMPTS, error))
    return FALSE;
  c->attempts = o->attempts == CLI_UNSET ? 1 : (guint)o->attempts;
  if (!(o->pass_time >= 0 && o->pass_time <= 3600)) { /* NaN too */
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--pass-time %g: must be from 0 (the default) to 3600 seconds",
                o->pass_time);
    return FALSE;
  }
  c->pass_seconds = o->pass_time;
  if (o->file_size != NULL && !rok_units_parse_size(o->file_size, &c->file_bytes, error)) {
    g_prefix_error(error, "--file-size %s: ", o->file_size);
    (*error)->code = ROK_ERROR_USAGE;
    return FALSE;
  }
  return parse_blocks(o->blocks, c, error) && parse_depths(o->depths, c, error) &&
         rok_calib_options_resolve(c, error);
}

/* The progress line: on a terminal only, rewritten in place on stderr. */
static void show_progress(const char *what, gpointer data) {
  (void)data;
  fprintf(stderr, "\r\033[Kcalibrating: %s", what);
  fflush(stderr);
}

/* NAME, else the output file's name without .json, else "calibrated". */
static char *profile_name(const Options *o) {
  if (o->name != NULL)
    return g_strdup(o->name);
  if (o->output == NULL)
    return g_strdup("calibrated");
  g_autofree char *base = g_path_get_basename(o->output);
  if (g_str_has_suffix(base, ".json") && strlen(base) > 5)
    base[strlen(base) - 5] = '\0';
  return g_steal_pointer(&base);
}

static char *flops_text(double rate) {
  return rate >= 1e12 ? g_strdup_printf("%.3g TFLOP/s", rate / 1e12) : g_strdup_printf("%.3g GFLOP/s", rate / 1e9);
}

/* "9.87 GB/s [9.51 GB/s - 10.2 GB/s]": the median and the spread of the
 * trials, each in FORMAT's units. */
static char *stat_text(const RokCalibStat *s, char *(*format)(double)) {
  g_autofree char *m = format(s->median), *lo = format(s->min), *hi = format(s->max);
  return g_strdup_printf("%s [%s - %s]", m, lo, hi);
}

static char *rate_text(const RokCalibStat *s) {
  return stat_text(s, rok_units_format_rate);
}

/* Per op kind measured: its ops' rates, forward and backward, least to
 * most ("1.2 GB/s - 3.4 GB/s"), in FLOP/s for GEMM-like kinds. */
static char *op_range(const RokCalibDevice *d, RokOpKind kind, RokHwDirection direction, gboolean *any) {
  double lo = INFINITY, hi = 0;
  gboolean flops = kind == ROK_OP_LINEAR || kind == ROK_OP_ATTN_SCORES || kind == ROK_OP_ATTN_CONTEXT ||
                   kind == ROK_OP_FLASH_ATTENTION;
  for (guint i = 0; i < d->ops->len; i++) {
    const RokCalibOp *op = &g_array_index(d->ops, RokCalibOp, i);
    if (op->kind == kind && op->direction == direction) {
      lo = MIN(lo, op->rate.median);
      hi = MAX(hi, op->rate.median);
    }
  }
  if (hi == 0)
    return g_strdup("-");
  *any = TRUE;
  g_autofree char *a = flops ? flops_text(lo) : rok_units_format_rate(lo);
  g_autofree char *b = flops ? flops_text(hi) : rok_units_format_rate(hi);
  return g_strdup_printf("%s - %s", a, b);
}

static void print_ops(const RokCalibDevice *d) {
  if (d->ops->len == 0)
    return;
  printf("  %-20s %-34s %s\n", "ops (rates by size)", "forward", "backward");
  for (guint kind = 0; kind < ROK_OP_KIND_COUNT; kind++) {
    gboolean any = FALSE;
    g_autofree char *f = op_range(d, kind, ROK_HW_FORWARD, &any), *b = op_range(d, kind, ROK_HW_BACKWARD, &any);
    gboolean rebuilt = FALSE;
    g_autofree char *r = op_range(d, kind, ROK_HW_REBUILD, &rebuilt);
    if (any || rebuilt)
      printf("  %-20s %-34s %s%s%s\n", rok_op_kind_name(kind), f, b, rebuilt ? "; mask from the seed " : "",
             rebuilt ? r : "");
  }
}

/* --show-fit: every GEMM the model was fitted to, measured and modelled. */
static void print_fit_rows(const RokCalibDevice *d, const RokHw *hw) {
  guint n = 0, n_gemms = 0;
  g_autofree RokCalibGemmObs *obs = rok_calib_gemm_observations(d, &n, &n_gemms);
  printf("  %-8s %-26s %-9s %12s %12s %8s\n", "timed", "batch x m x n x k", "direction", "measured", "model",
         "error");
  for (guint i = 0; i < n; i++) {
    const RokCalibGemmObs *o = &obs[i];
    double model = rok_hw_gemm_op_seconds(hw, o->shape, o->dims, o->backward, o->flops, o->bytes);
    g_autofree char *shape = g_strdup_printf("%" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                                             " x %" G_GUINT64_FORMAT,
                                             o->dims[0], o->dims[1], o->dims[2], o->dims[3]);
    g_autofree char *measured = rok_units_format_time(o->seconds), *modelled = rok_units_format_time(model);
    printf("  %-8s %-26s %-9s %12s %12s %+7.1f%%\n", i < n_gemms ? "GEMM" : "op", shape,
           o->backward ? "backward" : "forward", measured, modelled, 100 * (model / o->seconds - 1));
  }
}

/* The GEMM model fitted, and how well the GEMMs timed alone predicted the
 * layers' GEMM ops, which that fit did not see. */
static void print_fit(const RokCalibDevice *d, const RokHw *hw, gboolean rows) {
  if (rows)
    print_fit_rows(d, hw);
  RokCalibGemmReport r;
  if (!rok_calib_gemm_report(d, &r))
    return;
  g_autofree char *rate = flops_text(r.fit.rate);
  printf("  GEMM model           %" G_GUINT64_FORMAT " SMs, tiles %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
         ", %s in full waves (matmul_efficiency %.3f); fitted to %u GEMMs and %u GEMM ops: error median %.1f%%, "
         "worst %.1f%%\n",
         r.fit.sm_count, r.fit.tile[0], r.fit.tile[1], rate, hw->gpu.matmul_efficiency, r.n_gemms, r.n_ops,
         100 * r.fit.median_error, 100 * r.fit.worst_error);
  if (r.n_ops > 0 && r.n_gemms > 0)
    printf("  held out             fitted to the %u GEMMs alone (%" G_GUINT64_FORMAT " SMs, tiles %" G_GUINT64_FORMAT
           "x%" G_GUINT64_FORMAT "), it predicts the %u GEMM ops within median %.1f%%, worst %.1f%%\n",
           r.n_gemms, r.kernel_fit.sm_count, r.kernel_fit.tile[0], r.kernel_fit.tile[1], r.n_ops,
           100 * r.held_out_median, 100 * r.held_out_worst);
  if (hw->calibrated.gemm_ops_len > 0)
    printf("  GEMM ops by shape    %u timed (kind and shape): a model's op of one of them takes its measured time, "
           "the model times the rest\n",
           hw->calibrated.gemm_ops_len);
  guint split = 0;
  double lo = 1, hi = 0;
  for (guint i = 0; i < hw->calibrated.gemm_ops_len; i++) {
    double f = hw->calibrated.gemm_ops[i].backward_first;
    if (f > 0) {
      split++;
      lo = MIN(lo, f);
      hi = MAX(hi, f);
    }
  }
  if (split > 0)
    printf("  backward's first     %u of them: their first kernel takes %.2f-%.2f of the backward (where copies "
           "wait for it; the rest, half)\n",
           split, lo, hi);
}

static void print_device(const RokCalibDevice *d, const RokHw *hw, gboolean fit_rows) {
  g_autofree char *memory = rok_units_format_size(d->memory);
  printf("Device %u   %s (%s, %u compute units), %s\n", d->index, d->name, d->type, d->compute_units, memory);
  printf("  %-28s %14s %14s  %s\n", "GEMM (bf16)", "GFLOPs", "rate", "efficiency");
  for (guint i = 0; i < d->gemms->len; i++) {
    const RokCalibGemm *g = &g_array_index(d->gemms, RokCalibGemm, i);
    g_autofree char *shape = g_strdup_printf("%s %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT,
                                             g->label, g->m, g->n, g->k);
    if (g->batch > 1) {
      char *batched = g_strdup_printf("%s x%" G_GUINT64_FORMAT, shape, g->batch);
      g_free(shape);
      shape = batched;
    }
    g_autofree char *rate = flops_text(g->rate.median);
    printf("  %-28s %14.3f %14s  %.3f\n", shape, g->flops / 1e9, rate, g->rate.median / hw->gpu.peak_flops);
  }
  g_autofree char *ew = rate_text(&d->elementwise), *launch = rok_units_format_time(d->launch.median);
  g_autofree char *h2d = rate_text(&d->h2d), *d2h = rate_text(&d->d2h);
  g_autofree char *latency = rok_units_format_time(d->copy_latency.median);
  print_fit(d, hw, fit_rows);
  double change = rok_calib_speed_change(d);
  if (!isnan(change)) {
    const RokCalibGemm *g = &g_array_index(d->gemms, RokCalibGemm, d->speed_gemm);
    g_autofree char *again = stat_text(&d->speed_again, flops_text), *first = stat_text(&g->rate, flops_text);
    printf("  speed at the end     %s %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
           " timed again after the other GEMMs and the ops: %s against %s at first (%+.1f%%)\n",
           g->label, g->m, g->n, g->k, again, first, 100 * change);
  }
  printf("  element-wise add     %s", ew);
  double ew_change = rok_calib_elementwise_change(d);
  if (!isnan(ew_change)) {
    g_autofree char *between = rate_text(&d->elementwise_ops), *around = rate_text(&d->elementwise_around);
    printf("; between the passes of the ops %s against %s right before and after them (%+.1f%%)", between, around,
           100 * ew_change);
  }
  double copies = rok_calib_copies_memory_speed(d);
  if (copies > 0) {
    g_autofree char *at = rate_text(&d->elementwise_copies);
    double across = rok_calib_copies_memory_change(d);
    printf("; around the copies %s (%+.1f%% against the ops'; %+.1f%% after them against before)", at,
           100 * (copies - 1), 100 * across);
  }
  printf("\n  launch overhead      %s\n", launch);
  if (d->checksum_bandwidth > 0) {
    g_autofree char *rate = rok_units_format_rate(d->checksum_bandwidth);
    g_autofree char *per = rok_units_format_time(d->checksum_overhead);
    printf("  device checksum      %s and %s per tensor (of a tensor bound for host memory or the SSDs, in its "
           "producer's forward)\n",
           rate, per);
  }
  if (d->action_overhead > 0) {
    g_autofree char *action = rok_units_format_time(d->action_overhead);
    g_autofree char *leg = rok_units_format_time(d->leg_action_overhead);
    printf("  per action           %s (launched and waited for, as the executor runs each action; %s per copy "
           "leg, handed to its thread and back)\n",
           action, leg);
  }
  print_ops(d);
  g_autofree char *copy_cpu = rok_units_format_time(d->copy_cpu);
  printf("  host -> device       %s (%s host buffer)\n  device -> host       %s\n  copy latency         %s (%s of "
         "processor time)\n",
         h2d, d->pinned ? "pinned" : "page-aligned", d2h, latency, copy_cpu);
  if (d->h2d_legs > 0 && d->d2h_legs > 0) {
    g_autofree char *in = rok_units_format_rate(d->h2d_legs), *out = rok_units_format_rate(d->d2h_legs);
    printf("  as legs copy         host -> device %s, device -> host %s (slot-sized copies at successive places; "
           "the profile's rates)\n",
           in, out);
  }
  if (d->copied_check[0].n > 0) {
    printf("  checked as copied   ");
    for (guint i = 0; i < ROK_CALIB_CHECK_SIZES && d->copied_check[i].n > 0; i++) {
      g_autofree char *size = rok_units_format_size(d->copied_check_bytes[i]);
      g_autofree char *rate = rok_units_format_rate(d->copied_check_rate[i]);
      g_autofree char *low = rok_units_format_rate(d->copied_check[i].min);
      g_autofree char *high = rok_units_format_rate(d->copied_check[i].max);
      printf("%s %s [%s - %s] at %s", i > 0 ? "," : "", rate, low, high, size);
    }
    printf(" (the host's check of a leg just copied out)\n");
  }
  if (d->contention) {
    g_autofree char *handoff = rok_units_format_time(d->handoff.median);
    printf("  beside kernels       a copy waits until %.2f of the kernel in progress is done; a thread hand-off "
           "%s (to a %s thread)\n",
           d->copy_kernel_free_at.median, handoff, rok_host_wake_name(d->handoff_wake));
    g_autofree char *window = rok_units_format_time(d->copy_launch_window);
    if (d->copy_launch_window > 0)
      printf("  after a launch       a copy issued within %s of a kernel's launch went ahead of it in %.0f%% of "
             "the cases\n",
             window, 100 * d->copy_launch_ahead);
    else
      printf("  after a launch       no copy issued after a kernel's launch went ahead of it\n");
  }
}

static void print_disk(const RokCalibDisk *d) {
  g_autofree char *file = rok_units_format_size(d->file_bytes), *cap = rok_units_format_size(d->capacity);
  printf("Disk       %s: %s%s%s, %s %s, %s file, %s file system\n", d->dir, d->disk ? d->disk : "no block device",
         d->virtual_reason ? ", " : "", d->virtual_reason ? d->virtual_reason : "", d->direct ? "O_DIRECT" : "buffered",
         d->backend, file, cap);
  if (d->busy_processors > 0)
    printf("  timed beside %u processes streaming through memory %d nice levels below rok, as the device's "
           "workers: its kernels keep the processors busy and the caches full while a step's SSD legs run\n",
           d->busy_processors, ROK_CL_CPU_WORKER_NICE);
  printf("  %8s %4s  %-32s %-32s\n", "block", "QD", "write", "read");
  for (guint i = 0; i < d->points->len; i++) {
    const RokCalibDiskPoint *p = &g_array_index(d->points, RokCalibDiskPoint, i);
    g_autofree char *b = rok_units_format_size(p->block), *w = rate_text(&p->write), *r = rate_text(&p->read);
    printf("  %8s %4u  %-32s %-32s\n", b, p->queue_depth, w, r);
  }
  const RokCalibDiskPoint *rw = rok_calib_disk_rate_point(d, TRUE), *rr = rok_calib_disk_rate_point(d, FALSE);
  if (rw != NULL && rr != NULL) {
    g_autofree char *w = rok_units_format_rate(rw->write.median), *r = rok_units_format_rate(rr->read.median);
    g_autofree char *wb = rok_units_format_size(rw->block), *rb = rok_units_format_size(rr->block);
    printf("  the grid's rates at the executor's requests: write %s (%s, QD %u), read %s (%s, QD %u)%s\n", w, wb,
           rw->queue_depth, r, rb, rr->queue_depth,
           rw->block == ROK_HW_NVME_REQUEST_BYTES && rr->block == ROK_HW_NVME_REQUEST_BYTES
               ? ""
               : " (the best of the grid, which has no block of the executor's 1 MiB requests)");
  }
  g_autofree char *latency = rok_units_format_time(d->latency.median);
  g_autofree char *write_latency = rok_units_format_time(d->write_latency.median);
  printf("  latency (QD1 4 KiB random requests): read %s, write %s\n", latency, write_latency);
  for (guint i = 0; i < d->n_bursts; i++) {
    const RokCalibBurst *b = &d->bursts[i];
    g_autofree char *size = rok_units_format_size(b->request_bytes), *gap = rok_units_format_time(b->gap_s);
    g_autofree char *w = rok_units_format_time(b->write.median), *r = rok_units_format_time(b->read.median);
    g_autofree char *when = b->gap_s > 0 ? g_strdup_printf("after %5s idle:", gap) : g_strdup("right after one:");
    printf("  bursts of %2u x %-8s %-19s write %-10s read %s\n", b->requests, size, when, w, r);
  }
  if (d->n_bursts > 0) {
    const RokCalibLegFit *f = &d->legs;
    g_autofree char *fw = rok_units_format_time(f->fixed[0]), *fr = rok_units_format_time(f->fixed[1]);
    g_autofree char *q = rok_units_format_time(f->request);
    g_autofree char *rw = rok_units_format_rate(f->rate[0]), *rr = rok_units_format_rate(f->rate[1]);
    if (f->fitted)
      printf("  fitted to the bursts: a leg takes %s (write), %s (read), each request %s more, its bytes at %s "
             "(write), %s (read) (the profile's nvme.write_latency, latency, request_overhead, write_bandwidth, "
             "read_bandwidth)\n", fw, fr, q, rw, rr);
    for (guint k = 0; k < d->n_wakes; k++) {
      const RokCalibWake *w = &d->wakes[k];
      g_autofree char *ww = rok_units_format_time(w->write), *wr = rok_units_format_time(w->read);
      g_autofree char *wa = rok_units_format_time(w->after);
      const char *key = k == 0 ? "" : "deep_";
      printf("  a leg after %s idle or more: write %s, read %s more (nvme.%swake_after, %swake_write, %swake_read)\n",
             wa, ww, wr, key, key, key);
    }
    if (d->warm_fitted) {
      g_autofree char *ww = rok_units_format_time(d->warm[0]), *wr = rok_units_format_time(d->warm[1]);
      printf("  a leg begun from the completion of one before it: write %s, read %s less (nvme.warm_write, "
             "warm_read)\n", ww, wr);
    }
    if (d->join_ratio[0].n > 0)
      printf("  a 64 KiB request a quarter of the way through 4 x 1 MiB took %.2f (write) and %.2f (read) of what "
             "was left of them: %s (nvme.completes_together)\n", d->join_ratio[0].median, d->join_ratio[1].median,
             d->completes_together ? "the disk completes what was queued together at one moment"
                                   : "each request completes on its own");
    double again_w = rok_calib_disk_change(d, TRUE), again_r = rok_calib_disk_change(d, FALSE);
    /* A direction whose bursts were not timed again has no change. */
    g_autofree char *aw = isnan(again_w) ? g_strdup("not timed") : g_strdup_printf("%+.1f%%", 100 * again_w);
    g_autofree char *ar = isnan(again_r) ? g_strdup("not timed") : g_strdup_printf("%+.1f%%", 100 * again_r);
    if (!isnan(again_w) || !isnan(again_r))
      printf("  timed again at the end, the bursts after 1 ms idle: write %s, read %s against their first "
             "times (%s)\n", aw, ar,
             fabs(again_w) > ROK_CALIB_SPEED_CHANGE || fabs(again_r) > ROK_CALIB_SPEED_CHANGE
                 ? "the disk's speed changed while it was measured"
                 : "the disk held its speed");
    g_autofree char *qc = rok_units_format_time(d->request_cpu), *lc = rok_units_format_time(d->leg_cpu);
    printf("  processor time on the bursts: %s per request, %s per leg (nvme.request_cpu, leg_cpu: with a CPU "
           "device)\n", qc, lc);
  }
}

static void print_table(const RokCalibration *c, const RokHw *hw, const char *output, gboolean fit_rows) {
  g_autofree char *memory = rok_units_format_size(c->host.memory), *memcpy_bw = rate_text(&c->host.memcpy);
  printf("Calibration%s%s%s: medians of %u trials [min - max]\n\n", c->quick ? " (--quick)" : "",
         c->model_name ? ", one layer of " : "", c->model_name ? c->model_name : "", c->trials);
  g_autofree char *checksum = rate_text(&c->host.checksum);
  printf("Host       %s of memory; memcpy %s; checksum %s\n", memory, memcpy_bw, checksum);
  print_device(&c->device, hw, fit_rows);
  for (guint i = 0; i < c->disks->len; i++)
    print_disk(&g_array_index(c->disks, RokCalibDisk, i));
  g_autofree char *peak = flops_text(hw->gpu.peak_flops);
  printf("\nProfile \"%s\" written to %s: peak_flops %s, matmul_efficiency %.3f, GEMM model of %" G_GUINT64_FORMAT
         " SMs and %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT " tiles, rates of %u op kinds",
         hw->name, output, peak, hw->gpu.matmul_efficiency, hw->gpu.sm_count, hw->gpu.gemm_tile[0],
         hw->gpu.gemm_tile[1], hw->gpu.op_rates_len);
  if (hw->gpu.shared_cpus > 0)
    printf(", copies on the device's %" G_GUINT64_FORMAT " processors (no copy engine)", hw->gpu.shared_cpus);
  printf("\n");
}

static void print_warnings(const RokCalibration *c) {
  for (guint i = 0; i < c->warnings->len; i++)
    fprintf(stderr, "rok calibrate: warning: %s\n", (const char *)c->warnings->pdata[i]);
}

/* Which of --attempts was kept, and why, where there was more than one. */
static void print_attempts(const RokCalibration *c) {
  if (c->attempts < 2)
    return;
  g_autoptr(GString) changes = g_string_new(NULL);
  for (gsize i = 0; i < c->attempts; i++) {
    const RokCalibAttempt *a = &c->seen[i];
    g_string_append_printf(changes, "%s%zu: ", i > 0 ? "; " : "", i + 1);
    if (a->what != NULL)
      g_string_append_printf(changes, "%s, %.0f%%", a->what, 100 * a->unsteadiness);
    else
      g_string_append(changes, "steady");
  }
  fprintf(stderr, "rok calibrate: measured %zu times (%s): attempt %u kept, the steadiest%s\n", c->attempts,
          changes->str, c->attempt, c->seen[c->attempt - 1].what != NULL ? ", its warnings below" : "");
}

/* --model: one layer of the model (its embedding and head too), the
 * user's --set applied after layers=1 so that they may say otherwise.
 * *trace stays NULL without --model. */
static gboolean load_model(const Options *o, RokTrace **trace, GError **error) {
  *trace = NULL;
  if (o->model == NULL && o->sets != NULL && o->sets[0] != NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--set %s: --set changes the config of --model, which is not given",
                o->sets[0]);
    return FALSE;
  }
  if (o->model == NULL)
    return TRUE;
  g_autoptr(GPtrArray) sets = g_ptr_array_new();
  g_ptr_array_add(sets, "layers=1");
  for (guint i = 0; o->sets != NULL && o->sets[i] != NULL; i++)
    g_ptr_array_add(sets, o->sets[i]);
  g_ptr_array_add(sets, NULL);
  *trace = cli_load_trace(o->model, (char **)sets->pdata, error);
  if (*trace == NULL)
    g_prefix_error(error, "--model %s: ", o->model);
  return *trace != NULL;
}

static gboolean run(const Options *o, GError **error) {
  RokCalibOptions co;
  if (!to_calib_options(o, &co, error))
    return FALSE;
  if (o->show_fit && (o->json || o->output == NULL)) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE,
                        "--show-fit lists the fit in the table that -o FILE prints (not with --json or without -o)");
    return FALSE;
  }
  g_autoptr(RokTrace) model = NULL;
  if (!load_model(o, &model, error))
    return FALSE;
  co.model = model;
  co.signals = cli_signal_watch();
  gboolean progress = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
  if (progress)
    co.progress = show_progress;
  g_autoptr(RokCalibration) c = rok_calibrate(&co, error);
  if (progress) {
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
  }
  if (c == NULL)
    return FALSE;
  g_autofree char *name = profile_name(o);
  g_autoptr(RokHw) hw = rok_calib_profile(c, name, error);
  if (hw == NULL || (o->output != NULL && !rok_hw_save(hw, o->output, error)))
    return FALSE;
  gboolean ok = TRUE;
  if (o->json || o->output == NULL)
    ok = cli_print_json(rok_hw_to_json(hw), error);
  else
    print_table(c, hw, o->output, o->show_fit);
  /* Last, so that they are not lost above the table. */
  fflush(stdout);
  print_attempts(c);
  print_warnings(c);
  return ok;
}

int cli_cmd_calibrate(int argc, char **argv) {
  const RokCommand *self = cli_find("calibrate");
  g_auto(Options) o = {.device = CLI_UNSET, .attempts = CLI_UNSET};
  const GOptionEntry entries[] = {
      {"dir", 'd', 0, G_OPTION_ARG_FILENAME_ARRAY, &o.dirs,
       "A directory on a disk to measure (repeatable: one per disk); none: no SSD section", "DIR"},
      {"device", 0, 0, G_OPTION_ARG_INT, &o.device, "OpenCL device index (default: first GPU, else CPU)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output, "Write the profile to FILE (atomically)", "FILE"},
      {"json", 0, 0, G_OPTION_ARG_NONE, &o.json, "Print the profile JSON on stdout (the default without -o)", NULL},
      {"name", 0, 0, G_OPTION_ARG_STRING, &o.name, "The profile's name (default: FILE without .json)", "NAME"},
      {"quick", 'q', 0, G_OPTION_ARG_NONE, &o.quick, "Small sizes and short passes: seconds, for tests", NULL},
      {"trials", 0, 0, G_OPTION_ARG_INT, &o.trials, "Timed trials per figure, medians taken (default 3)", "N"},
      {"attempts", 0, 0, G_OPTION_ARG_INT, &o.attempts,
       "Measure again while the machine's or a disk's speed changed as it measured, or others used the processors, "
       "up to N times in all; keep the steadiest (default 1)",
       "N"},
      {"file-size", 0, 0, G_OPTION_ARG_STRING, &o.file_size,
       "Data file per directory (default 1GiB; --quick 128MiB)", "SIZE"},
      {"block", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.blocks,
       "Disk block size to try (repeatable; default 128KiB 1MiB 4MiB)", "SIZE"},
      {"qd", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.depths, "Disk queue depth to try (repeatable; default 1 8 32)",
       "N"},
      {"show-fit", 0, 0, G_OPTION_ARG_NONE, &o.show_fit,
       "List every GEMM the model was fitted to, its measured and modelled time", NULL},
      {"model", 'm', 0, G_OPTION_ARG_FILENAME, &o.model,
       "Time one layer of this model (a config file or bundled name) instead of the calibration layers", "MODEL"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.sets, "Override a field of --model's config (repeatable)",
       "KEY=VALUE"},
      {"pass-time", 0, 0, G_OPTION_ARG_DOUBLE, &o.pass_time,
       "A timed disk pass stops issuing after this many seconds (default 2; --quick 0.2)", "SECONDS"},
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, NULL);
  GError *error = NULL;
  if (!cli_parse(context, &argc, &argv, &error) || !cli_positionals(argc, argv, 0, "", &error) ||
      !run(&o, &error))
    return cli_fail(self->name, error);
  return ROK_EXIT_OK;
}
