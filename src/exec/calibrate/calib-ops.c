/* Op rates: every op of small transformers (a GPT layer with standard
 * attention and dropout, a LLaMA layer with flash attention), forward and
 * backward, run by the executor's op interpreter (src/exec/ops) as `rok
 * execute` runs a step: one op at a time, each waited for, on the same
 * kernels. Each op's time gives a knot of its kind's rate curve (the work
 * the trace counts for it, rok_sim_op_work, per second).
 *
 * Why not the GEMM curve and the element-wise add alone: on a device like
 * PoCL's CPU device the kernels of different kinds run at very different
 * fractions of the roofline (dropout draws random numbers, softmax and
 * normalisations reduce rows, attention GEMMs have a small inner size), so
 * one peak and one bandwidth cannot predict them; the kernels themselves
 * can. Sizes double (hidden = sequence = 128, 256, ...) until one pass of a
 * layer takes long, so a faster device measures larger shapes. */
#include <math.h>
#include <string.h>

#include "exec/calibrate/calibrate.h"
#include "rok/error.h"
#include "rok/sim.h"

#ifdef ROK_WITH_OPENCL

#include "exec/ops/ops.h"

/* One calibration model: a layer of ARCH at width HIDDEN. */
static RokTrace *layer_trace(const char *arch, guint64 hidden, GError **error) {
  gboolean llama = g_str_equal(arch, "llama");
  g_autofree char *text = g_strdup_printf(
      "{\"name\": \"calibrate-%s-%" G_GUINT64_FORMAT "\", \"arch\": \"%s\", \"layers\": 1, \"hidden\": %" G_GUINT64_FORMAT
      ", \"heads\": %" G_GUINT64_FORMAT ", \"seq_len\": %" G_GUINT64_FORMAT ", \"micro_batch\": 1, \"vocab\": %" G_GUINT64_FORMAT
      ", \"data_parallel\": 1, \"dtype\": \"bf16\", \"attention\": \"%s\"}",
      arch, hidden, arch, hidden, MAX(hidden / 64, 1), hidden, 8 * hidden, llama ? "flash" : "standard");
  g_autoptr(RokModel) model = rok_model_parse("calibration model", text, strlen(text), NULL, error);
  return model == NULL ? NULL : rok_trace_new_from_model(model, error);
}

typedef struct {
  RokClKernels *kernels;
  RokClDevice *cl;
  const RokTrace *trace;
  RokExecModel *model;
  RokClBuffer **tensors;
  RokCalibCancel *cancel;
  double *seconds; /* [trial][op][direction] */
} Pass;

static double now(void) {
  return (double)g_get_monotonic_time() / 1e6;
}

/* One op in one direction, waited for, as the executor's compute stream
 * runs an action. */
static gboolean run_op(Pass *p, guint op, gboolean backward, double *seconds, GError **error) {
  double start = now();
  gboolean ok = backward ? rok_exec_model_backward(p->model, op, 0, p->tensors, error)
                         : rok_exec_model_forward(p->model, op, 0, p->tensors, error);
  ok = ok && rok_cl_device_finish(p->cl, ROK_CL_QUEUE_COMPUTE, error);
  *seconds = now() - start;
  return ok;
}

/* Forward in order, backward in reverse: a micro-batch as a step runs it.
 * SECONDS (may be NULL: a warm-up) gets [op][direction]. */
static gboolean run_pass(Pass *p, double *seconds, GError **error) {
  guint n = p->trace->ops->len;
  double unused = 0;
  for (guint o = 0; o < n; o++)
    if (rok_calib_check_cancelled(p->cancel, error) || !run_op(p, o, FALSE, seconds ? &seconds[2 * o] : &unused, error))
      return FALSE;
  for (guint o = n; o-- > 0;)
    if (rok_calib_check_cancelled(p->cancel, error) ||
        !run_op(p, o, TRUE, seconds ? &seconds[2 * o + 1] : &unused, error))
      return FALSE;
  rok_exec_model_end_micro_batch(p->model, 0);
  return TRUE;
}

static void pass_clear(Pass *p) {
  for (guint t = 0; p->tensors != NULL && t < p->trace->tensors->len; t++)
    rok_cl_buffer_free(p->tensors[t]);
  g_free(p->tensors);
  rok_exec_model_free(p->model);
  g_free(p->seconds);
}

/* Every op's knot: its work in the direction and its rate over the trials,
 * the launch overhead taken out as for the GEMMs (never below a tenth). */
static void add_knots(const Pass *p, guint trials, const char *label, RokCalibDevice *d) {
  guint n = p->trace->ops->len;
  g_autofree double *rates = g_new(double, trials);
  for (guint o = 0; o < n; o++) {
    const RokOp *op = rok_trace_op(p->trace, o);
    for (guint dir = 0; dir < 2 && op->kind != ROK_OP_INPUT; dir++) {
      double work = rok_sim_op_work(op, dir == 1);
      if (!(work > 0))
        continue;
      for (guint t = 0; t < trials; t++) {
        double s = p->seconds[(t * n + o) * 2 + dir];
        rates[t] = work / MAX(s - d->launch.median, s / 10);
      }
      RokCalibOp knot = {.label = g_strdup(label), .kind = op->kind, .backward = dir == 1, .work = work};
      knot.rate = rok_calib_stat(rates, trials);
      g_array_append_val(d->ops, knot);
    }
  }
}

/* Device memory a calibration model needs, roughly: every tensor at once,
 * parameters with fp32 gradients, activation gradients as large again. */
static guint64 model_bytes(const RokTrace *trace) {
  guint64 bytes = 3 * trace->fixed.params_per_gpu * 2 + trace->fixed.params_per_gpu * 4;
  for (guint t = 0; t < trace->tensors->len; t++)
    bytes += 2 * rok_trace_tensor(trace, t)->bytes;
  return bytes;
}

/* One model: warm-up pass, then the timed ones. *PASS_S gets the median
 * pass's time. */
static gboolean measure_model(RokClKernels *kernels, const RokTrace *trace, const RokCalibOptions *o,
                              RokCalibCancel *cancel, const char *label, RokCalibDevice *d, double *pass_s,
                              GError **error) {
  Pass p = {.kernels = kernels, .cl = rok_cl_kernels_device(kernels), .trace = trace, .cancel = cancel};
  guint n = trace->ops->len;
  p.model = rok_exec_model_new(kernels, trace, 1234, error);
  gboolean ok = p.model != NULL;
  p.tensors = g_new0(RokClBuffer *, MAX(trace->tensors->len, 1));
  for (guint t = 0; ok && t < trace->tensors->len; t++)
    ok = (p.tensors[t] = rok_exec_model_alloc_tensor(p.model, t, error)) != NULL;
  p.seconds = g_new0(double, (gsize)o->trials * n * 2);
  ok = ok && run_pass(&p, NULL, error);
  g_autofree double *totals = g_new0(double, o->trials);
  for (guint t = 0; ok && t < o->trials; t++) {
    ok = run_pass(&p, &p.seconds[(gsize)t * n * 2], error);
    for (guint i = 0; ok && i < 2 * n; i++)
      totals[t] += p.seconds[(gsize)t * n * 2 + i];
  }
  if (ok) {
    add_knots(&p, o->trials, label, d);
    *pass_s = rok_calib_stat(totals, o->trials).median;
  }
  pass_clear(&p);
  return ok;
}

gboolean rok_calib_measure_ops(RokClKernels *kernels, const RokCalibOptions *o, RokCalibCancel *cancel,
                               RokCalibDevice *d, GError **error) {
  static const char *const archs[] = {"gpt", "llama"};
  guint64 largest = o->quick ? 256 : 4096;
  double long_run = o->quick ? 0.3 : 2.0;
  for (guint a = 0; a < G_N_ELEMENTS(archs); a++) {
    for (guint64 hidden = 128; hidden <= largest; hidden *= 2) {
      g_autoptr(RokTrace) trace = layer_trace(archs[a], hidden, error);
      if (trace == NULL)
        return FALSE;
      if (model_bytes(trace) > d->memory / 4)
        break;
      rok_calib_progress(o, "device ops: %s layer, hidden %" G_GUINT64_FORMAT, archs[a], hidden);
      double pass_s = 0;
      if (!measure_model(kernels, trace, o, cancel, trace->model_name, d, &pass_s, error))
        return FALSE;
      if (pass_s >= long_run)
        break;
    }
  }
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
