/* The GEMM model fitted to what the device measured: the SMs, the tile and
 * the rate of full waves of rok_hw_gemm_op_seconds (tile and wave
 * quantisation, with the element-wise bandwidth as the roofline of small
 * shapes) that make its times closest to the measured ones.
 *
 * For each SM count and tile (a grid: every count up to max_sms, tiles of
 * 8 to 256 rows and columns in powers of two) the rate is the one
 * minimising the squared log error, found by a scan and a golden-section
 * refinement; the best grid point wins, the smaller machine and tile on a
 * tie. Log errors weigh a 10 µs GEMM as much as a 10 s one: the model must
 * hold at every size. */
#include <math.h>
#include <stdlib.h>

#include "rok/calibrate.h"
#include "rok/core.h"

static const guint64 tiles[] = {8, 16, 32, 64, 128, 256};

#define SCAN 64
#define GOLDEN 48

typedef struct {
  guint n;
  double *math; /* log(seconds at a rate of 1 FLOP/s): flops / utilisation */
  double *roof; /* log(bytes / hbm_bandwidth) */
  double *measured; /* log(seconds) */
  double *weight;
} Problem;

static double objective(const Problem *p, double log_rate) {
  double sum = 0;
  for (guint i = 0; i < p->n; i++) {
    double e = MAX(p->math[i] - log_rate, p->roof[i]) - p->measured[i];
    sum += p->weight[i] * e * e;
  }
  return sum;
}

/* The log rate minimising the objective: a scan over the range the
 * observations allow, then golden sections around the best point. */
static double best_log_rate(const Problem *p, double *value) {
  double lo = INFINITY, hi = -INFINITY;
  for (guint i = 0; i < p->n; i++) {
    lo = MIN(lo, p->math[i] - p->measured[i]);
    hi = MAX(hi, p->math[i] - p->measured[i]);
  }
  lo -= 0.1, hi += 0.1;
  double step = (hi - lo) / (SCAN - 1), best = lo, best_value = INFINITY;
  for (guint s = 0; s < SCAN; s++) {
    double x = lo + step * s, v = objective(p, x);
    if (v < best_value)
      best = x, best_value = v;
  }
  double a = best - step, b = best + step, r = (sqrt(5.0) - 1) / 2;
  double c = b - r * (b - a), d = a + r * (b - a), fc = objective(p, c), fd = objective(p, d);
  for (guint g = 0; g < GOLDEN; g++) {
    if (fc < fd)
      b = d, d = c, fd = fc, c = b - r * (b - a), fc = objective(p, c);
    else
      a = c, c = d, fc = fd, d = a + r * (b - a), fd = objective(p, d);
  }
  double x = (a + b) / 2, v = objective(p, x);
  if (v > best_value)
    x = best, v = best_value;
  *value = v;
  return x;
}

RokHw rok_calib_gemm_fit_hw(const RokCalibGemmFit *fit, double hbm_bandwidth) {
  RokHw hw = {0};
  hw.gpu.sm_count = fit->sm_count;
  hw.gpu.gemm_tile[0] = fit->tile[0];
  hw.gpu.gemm_tile[1] = fit->tile[1];
  hw.gpu.peak_flops = fit->rate;
  hw.gpu.matmul_efficiency = 1.0;
  hw.gpu.hbm_bandwidth = hbm_bandwidth;
  return hw;
}

static void fill_math(Problem *p, const RokCalibGemmObs *obs, const RokHw *hw) {
  for (guint i = 0; i < p->n; i++)
    p->math[i] =
        log(obs[i].flops / rok_hw_gemm_op_utilisation(hw, obs[i].shape, obs[i].dims, obs[i].backward));
}

void rok_calib_gemm_errors(const RokHw *hw, const RokCalibGemmObs *obs, guint n, double *median, double *worst) {
  g_autofree double *e = g_new(double, MAX(n, 1));
  for (guint i = 0; i < n; i++) {
    double s = rok_hw_gemm_op_seconds(hw, obs[i].shape, obs[i].dims, obs[i].backward, obs[i].flops, obs[i].bytes);
    e[i] = fabs(s / obs[i].seconds - 1);
  }
  RokCalibStat stat = rok_calib_stat(e, n);
  *median = stat.median;
  *worst = stat.max;
}

gboolean rok_calib_fit_gemm(const RokCalibGemmObs *obs, guint n, double hbm_bandwidth, guint max_sms,
                            RokCalibGemmFit *fit) {
  *fit = (RokCalibGemmFit){0};
  for (guint i = 0; i < n; i++)
    if (!(obs[i].flops > 0 && obs[i].bytes >= 0 && obs[i].seconds > 0))
      return FALSE;
  if (n == 0 || !(hbm_bandwidth > 0) || max_sms == 0)
    return FALSE;
  g_autofree double *buffer = g_new(double, 4 * n);
  Problem p = {n, buffer, buffer + n, buffer + 2 * n, buffer + 3 * n};
  double total = 0;
  for (guint i = 0; i < n; i++) {
    p.roof[i] = obs[i].bytes > 0 ? log(obs[i].bytes / hbm_bandwidth) : -INFINITY;
    p.measured[i] = log(obs[i].seconds);
    p.weight[i] = obs[i].weight > 0 ? obs[i].weight : 1.0;
    total += p.weight[i];
  }
  double best = INFINITY;
  for (guint64 sms = 1; sms <= max_sms; sms++)
    for (guint a = 0; a < G_N_ELEMENTS(tiles); a++)
      for (guint b = 0; b < G_N_ELEMENTS(tiles); b++) {
        RokCalibGemmFit candidate = {.sm_count = sms, .tile = {tiles[a], tiles[b]}, .rate = 1.0};
        RokHw hw = rok_calib_gemm_fit_hw(&candidate, hbm_bandwidth);
        fill_math(&p, obs, &hw);
        double value = 0, x = best_log_rate(&p, &value);
        if (value < best * (1 - 1e-9)) { /* a tie keeps the smaller machine and tile */
          best = value;
          *fit = (RokCalibGemmFit){.sm_count = sms, .tile = {tiles[a], tiles[b]}, .rate = exp(x)};
        }
      }
  RokHw hw = rok_calib_gemm_fit_hw(fit, hbm_bandwidth);
  fit->rms_log_error = sqrt(best / total);
  rok_calib_gemm_errors(&hw, obs, n, &fit->median_error, &fit->worst_error);
  return TRUE;
}

gboolean rok_calib_kind_fitted(RokOpKind kind) {
  return kind == ROK_OP_LINEAR || kind == ROK_OP_ATTN_SCORES || kind == ROK_OP_ATTN_CONTEXT;
}

gboolean rok_calib_op_fitted(const RokCalibOp *op) {
  gboolean shaped = op->dims[0] > 0 && op->dims[1] > 0 && op->dims[2] > 0 && op->dims[3] > 0;
  return rok_calib_kind_fitted(op->kind) && op->direction != ROK_HW_REBUILD && op->rate.median > 0 && shaped;
}

RokCalibGemmObs *rok_calib_gemm_observations(const RokCalibDevice *d, guint *n, guint *n_gemms) {
  RokCalibGemmObs *obs = g_new0(RokCalibGemmObs, d->gemms->len + d->ops->len + 1);
  guint k = 0;
  for (guint i = 0; i < d->gemms->len; i++) {
    const RokCalibGemm *g = &g_array_index(d->gemms, RokCalibGemm, i);
    if (!(g->rate.median > 0))
      continue;
    double b = (double)g->batch; /* bf16 operands: A, B read, C written */
    obs[k++] = (RokCalibGemmObs){.shape = ROK_HW_GEMM_PLAIN,
                                 .dims = {g->batch, g->m, g->n, g->k},
                                 .flops = g->flops,
                                 .bytes = 2 * b * ((double)g->m * g->k + (double)g->k * g->n + (double)g->m * g->n),
                                 .seconds = g->flops / g->rate.median};
  }
  *n_gemms = k;
  for (guint i = 0; i < d->ops->len; i++) {
    const RokCalibOp *op = &g_array_index(d->ops, RokCalibOp, i);
    if (!rok_calib_op_fitted(op))
      continue;
    obs[k++] = (RokCalibGemmObs){.shape = ROK_HW_GEMM_PLAIN,
                                 .dims = {op->dims[0], op->dims[1], op->dims[2], op->dims[3]},
                                 .backward = op->direction == ROK_HW_BACKWARD,
                                 .flops = op->work,
                                 .bytes = op->bytes,
                                 .seconds = op->work / op->rate.median};
  }
  *n = k;
  for (guint i = 0; i < k && *n_gemms > 0 && k > *n_gemms; i++) /* each group half */
    obs[i].weight = 0.5 / (i < *n_gemms ? *n_gemms : k - *n_gemms);
  return obs;
}

/* GPUs report their SMs as compute units, a CPU device its threads; the
 * fit looks for up to four times as many (at least 8). */
static guint max_sms(const RokCalibDevice *d) {
  return CLAMP(4 * d->compute_units, 8, 1024);
}

gboolean rok_calib_gemm_report(const RokCalibDevice *d, RokCalibGemmReport *r) {
  *r = (RokCalibGemmReport){0};
  guint n = 0;
  g_autofree RokCalibGemmObs *obs = rok_calib_gemm_observations(d, &n, &r->n_gemms);
  r->n_ops = n - r->n_gemms;
  double hbm = d->elementwise.median;
  if (!rok_calib_fit_gemm(obs, n, hbm, max_sms(d), &r->fit))
    return FALSE;
  if (r->n_ops > 0 && r->n_gemms > 0 && rok_calib_fit_gemm(obs, r->n_gemms, hbm, max_sms(d), &r->kernel_fit)) {
    RokHw hw = rok_calib_gemm_fit_hw(&r->kernel_fit, hbm);
    rok_calib_gemm_errors(&hw, obs + r->n_gemms, r->n_ops, &r->held_out_median, &r->held_out_worst);
  }
  return TRUE;
}
