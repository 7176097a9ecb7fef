/* Op rates: every op of small transformers (a GPT layer with standard
 * attention and dropout, a LLaMA layer with flash attention), forward and
 * backward, run by the executor's op interpreter (src/ops) as `rok
 * execute` runs a step: one op at a time, launched and waited for on the
 * same thread, as the executor's compute thread runs its next action
 * itself, on the same kernels. Each op's time gives a
 * knot of its kind's rate curve (the work the trace counts for it,
 * rok_op_work, per second). Passes are cheap next to the disks: at
 * least five are timed, whatever the trials, for steadier medians.
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

#include "calib-private.h"
#include "rok/calibrate.h"
#include "rok/core.h"

#ifdef ROK_WITH_OPENCL

#include "rok/ops.h"

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
  RokCalibProbe probe;
  gpointer probe_data;
  double *seconds; /* [trial][op][direction] */
  /* A CPU device's backward probes (probe_backward): the copy's buffers,
   * its time alone, each op's typical backward, and what each probe pass
   * found, [pass][op] (NaN: nothing). */
  CalibCopyPair copy;
  double copy_alone_s;
  double *backward_s;
  double *first_free;
} Pass;

static double now(void) {
  return (double)g_get_monotonic_time() / 1e6;
}

#define D ROK_HW_DIRECTIONS

static gboolean run_direction(Pass *p, guint op, guint direction, GError **error) {
  switch (direction) {
  case ROK_HW_FORWARD:
    return rok_exec_model_forward(p->model, op, 0, p->tensors, error);
  case ROK_HW_BACKWARD:
    return rok_exec_model_backward(p->model, op, 0, p->tensors, error);
  default:
    return rok_exec_model_rebuild_mask(p->model, op, 0, p->tensors, error);
  }
}

/* One op in one direction, timed as the executor's compute thread runs
 * an action: launched and waited for. (Through a thread hand-off there and
 * back, as a dispatcher once ran every action, each op took a wake-up
 * more than the executor now pays.) */
static gboolean run_op(Pass *p, guint op, guint direction, double *seconds, GError **error) {
  if (rok_calib_check_cancelled(p->cancel, error))
    return FALSE;
  double start = now();
  gboolean ok = run_direction(p, op, direction, error) && rok_cl_device_finish(p->cl, ROK_CL_QUEUE_COMPUTE, error);
  *seconds = now() - start;
  return ok;
}

/* Where a GEMM op's backward lets a copy through, on a CPU device (PoCL
 * gives a copy a processor only when one is done with the kernel in
 * progress): the backward runs two kernels of equal FLOPs (a linear's dW,
 * then its dX) that need not take equal time (validate-gpt's and the
 * LLaMA-shaped model's fc2 backward in `rok validate`, 2026-12-07: the
 * first h2d leg in it ended at 0.37-0.41 of it, where the model's halves
 * put it at 0.47). A 1 MiB copy out of the device, as a leg's, is handed
 * over FIRST_LEAD into the backward (past the launch, when a copy still
 * goes ahead of the kernels), and its wait's end (its time less its time
 * alone) taken over that backward's length (probe_backward), the median
 * where three or more waited. A copy that did not wait (it went ahead, or a processor
 * was idle: a first kernel of fewer work-groups than processors), or that
 * waited past FIRST_LATE of it (it came after the first kernel), says
 * nothing of the first kernel and is left out (on the development VM,
 * 2026-12-07, five probes of each op's backward: 0-3 went at once, the
 * rest within ±0.04 of their median in most ops, ±0.1 in some). */
#define FIRST_PASSES 7
#define FIRST_LEAD 0.15
#define FIRST_WAITED 0.05 /* a copy waited: more than its time alone, and than this share */
#define FIRST_LATE 0.9
#define FIRST_MIN_S 300e-6 /* shorter backwards are not probed */
/* The lead is slept through but for its last FIRST_SPIN_S: spun through,
 * it took one of the two processors from the kernel on the development
 * VM and put fc2's first kernel at 0.57-0.59 of its backward, where the
 * steps' first h2d legs in it ended at 0.45-0.46 (2026-12-07). */
#define FIRST_SPIN_S 200e-6
#define COPY_BYTES ((guint64)1 << 20)

static gboolean copy_out(Pass *p, double *seconds, GError **error) {
  return calib_copy_seconds(&p->copy, 0, COPY_BYTES, FALSE, seconds, error);
}

/* The share is of this very backward's length, less what the copy took
 * of it (its time alone on one of the device's processors), not of the
 * timed passes' typical one: the machine's speed moves between those
 * passes and these (the development VM, 2026-12-07: probed backwards up
 * to 25% shorter or longer than their timed median), and every op's share
 * moved with it; over their own lengths, six quick calibrations of the
 * LLaMA-shaped model gave each op's share within 0.061 (the mean over
 * its ops of the largest less the least) where the typical length gave
 * 0.116 from the same probes, four of validate-gpt 0.057 against 0.135.
 * (The simulator's offload and tba h2d streams move by about a quarter
 * for 0.1 of every op's share.) */
static gboolean probe_backward(Pass *p, guint op, double *first_free, GError **error) {
  double start = now(), copy = 0;
  if (!run_direction(p, op, ROK_HW_BACKWARD, error) || !rok_cl_device_flush(p->cl, ROK_CL_QUEUE_COMPUTE, error))
    return FALSE;
  double lead = start + FIRST_LEAD * p->backward_s[op];
  if (lead - now() > FIRST_SPIN_S) /* asleep, not on a processor the kernel wants */
    g_usleep((gulong)((lead - now() - FIRST_SPIN_S) * 1e6));
  while (now() < lead) /* a sleep's wake-up is late by tens of microseconds */
    ;
  double issued = now();
  if (!copy_out(p, &copy, error) || !rok_cl_device_finish(p->cl, ROK_CL_QUEUE_COMPUTE, error))
    return FALSE;
  guint units = MAX(rok_cl_device_info(p->cl)->compute_units, 1);
  double length = MAX(now() - start - p->copy_alone_s / units, 1e-9);
  double wait = copy - p->copy_alone_s, at = (issued - start + MAX(wait, 0)) / length;
  *first_free = wait > MAX(p->copy_alone_s, FIRST_WAITED * length) && at < FIRST_LATE ? at : NAN;
  return TRUE;
}

/* Whether op O's backward is probed: a GEMM op's, long enough. */
static gboolean probed(const Pass *p, guint o) {
  return p->first_free != NULL && rok_op_kind_is_gemm(rok_trace_op(p->trace, o)->kind) &&
         p->backward_s[o] >= FIRST_MIN_S;
}

/* Forward in order, every dropout's mask rebuilt from the seed (as a
 * recompute of the mask alone does), backward in reverse: a micro-batch as
 * a step runs it. SECONDS (may be NULL: a warm-up or a probe pass) gets
 * [op][direction]; FIRST_FREE (NULL but in a probe pass) each probed
 * op's backward's probe_backward. */
static gboolean run_pass(Pass *p, double *seconds, double *first_free, GError **error) {
  guint n = p->trace->ops->len;
  double unused = 0;
  for (guint o = 0; o < n; o++)
    if (!run_op(p, o, ROK_HW_FORWARD, seconds ? &seconds[D * o] : &unused, error))
      return FALSE;
  for (guint o = 0; o < n; o++)
    if (rok_trace_op(p->trace, o)->kind == ROK_OP_DROPOUT &&
        !run_op(p, o, ROK_HW_REBUILD, seconds ? &seconds[D * o + ROK_HW_REBUILD] : &unused, error))
      return FALSE;
  for (guint o = n; o-- > 0;) {
    gboolean ok = first_free != NULL && probed(p, o)
                      ? !rok_calib_check_cancelled(p->cancel, error) && probe_backward(p, o, &first_free[o], error)
                      : run_op(p, o, ROK_HW_BACKWARD, seconds ? &seconds[D * o + ROK_HW_BACKWARD] : &unused, error);
    if (!ok)
      return FALSE;
  }
  rok_exec_model_end_micro_batch(p->model, 0);
  return TRUE;
}

static void pass_clear(Pass *p) {
  for (guint t = 0; p->tensors != NULL && t < p->trace->tensors->len; t++)
    rok_cl_buffer_free(p->tensors[t]);
  g_free(p->tensors);
  rok_exec_model_free(p->model);
  g_free(p->seconds);
  g_free(p->backward_s);
  g_free(p->first_free);
  calib_copy_pair_clear(&p->copy);
}

/* The work of an op in a direction: what the trace counts for it; for a
 * rebuild, the bytes of the mask it writes (a dropout's first output). */
static double work_of(const RokTrace *trace, const RokOp *op, guint direction) {
  if (direction != ROK_HW_REBUILD)
    return rok_op_work(op, direction == ROK_HW_BACKWARD);
  if (op->kind != ROK_OP_DROPOUT || op->outputs->len == 0)
    return 0;
  return (double)rok_trace_tensor(trace, g_array_index(op->outputs, guint, 0))->bytes;
}

/* Every op's knot: its work in the direction and its rate over the trials,
 * the per-action cost taken out (never below a tenth): the simulator
 * charges it apart, as gpu.launch_overhead. */
static void add_knots(const Pass *p, guint trials, const char *label, RokCalibDevice *d) {
  guint n = p->trace->ops->len;
  g_autofree double *rates = g_new(double, trials), *shares = g_new(double, FIRST_PASSES);
  for (guint o = 0; o < n; o++) {
    const RokOp *op = rok_trace_op(p->trace, o);
    for (guint dir = 0; dir < D && op->kind != ROK_OP_INPUT; dir++) {
      double work = work_of(p->trace, op, dir);
      if (!(work > 0))
        continue;
      for (guint t = 0; t < trials; t++) {
        double s = p->seconds[((gsize)t * n + o) * D + dir];
        rates[t] = work / MAX(s - rok_calib_action_seconds(d), s / 10);
      }
      RokCalibOp knot = {.label = g_strdup(label), .kind = op->kind, .direction = dir, .work = work,
                         .bytes = (double)(dir == ROK_HW_BACKWARD ? op->bwd_bytes : op->fwd_bytes),
                         .dims = {op->dims[0], op->dims[1], op->dims[2], op->dims[3]}};
      knot.rate = rok_calib_stat(rates, trials);
      if (dir == ROK_HW_BACKWARD && p->first_free != NULL) {
        guint k = 0;
        for (guint t = 0; t < FIRST_PASSES; t++)
          if (!isnan(p->first_free[(gsize)t * n + o]))
            shares[k++] = p->first_free[(gsize)t * n + o];
        if (k >= 3)
          knot.first_free = rok_calib_stat(shares, k);
      }
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

/* After the timed passes, FIRST_PASSES that probe the GEMM ops'
 * backwards (probe_backward), each op's typical backward the median of
 * the timed passes', the copy alone the least of five. */
static gboolean probe_passes(Pass *p, guint trials, GError **error) {
  guint n = p->trace->ops->len;
  if (!calib_copy_pair_init(&p->copy, p->cl, COPY_BYTES, "calibrate.copy", error))
    return FALSE;
  p->copy_alone_s = G_MAXDOUBLE;
  for (guint i = 0; i < 5; i++) {
    double s = 0;
    if (!copy_out(p, &s, error))
      return FALSE;
    p->copy_alone_s = MIN(p->copy_alone_s, s);
  }
  p->backward_s = g_new0(double, MAX(n, 1));
  g_autofree double *times = g_new(double, trials);
  for (guint o = 0; o < n; o++) {
    for (guint t = 0; t < trials; t++)
      times[t] = p->seconds[((gsize)t * n + o) * D + ROK_HW_BACKWARD];
    p->backward_s[o] = rok_calib_stat(times, trials).median;
  }
  p->first_free = g_new(double, (gsize)FIRST_PASSES * MAX(n, 1));
  for (gsize i = 0; i < (gsize)FIRST_PASSES * n; i++)
    p->first_free[i] = NAN;
  for (guint t = 0; t < FIRST_PASSES; t++)
    if (!run_pass(p, NULL, &p->first_free[(gsize)t * n], error))
      return FALSE;
  return TRUE;
}

/* TRACE's ops on P's kernels: its model made, its tensors allocated and a
 * warm-up pass run. The caller clears P. */
static gboolean prepare_model(Pass *p, const RokTrace *trace, GError **error) {
  p->trace = trace;
  p->model = rok_exec_model_new(p->kernels, trace, 1234, error);
  gboolean ok = p->model != NULL;
  p->tensors = g_new0(RokClBuffer *, MAX(trace->tensors->len, 1));
  for (guint t = 0; ok && t < trace->tensors->len; t++)
    ok = (p->tensors[t] = rok_exec_model_alloc_tensor(p->model, t, error)) != NULL;
  return ok && run_pass(p, NULL, NULL, error);
}

/* TRACE's ops prepared (prepare_model), then TRIALS timed passes into
 * p->seconds ([trial][op][direction]); *PASS_S gets the median pass's
 * time. The caller clears P. */
static gboolean time_passes(Pass *p, const RokTrace *trace, guint trials, double *pass_s, GError **error) {
  guint n = trace->ops->len;
  p->seconds = g_new0(double, (gsize)trials * n * D);
  gboolean ok = prepare_model(p, trace, error);
  g_autofree double *totals = g_new0(double, trials);
  for (guint t = 0; ok && t < trials; t++) {
    ok = (p->probe == NULL || p->probe(p->probe_data, error)) &&
         run_pass(p, &p->seconds[(gsize)t * n * D], NULL, error);
    for (guint i = 0; ok && i < D * n; i++)
      totals[t] += p->seconds[(gsize)t * n * D + i];
  }
  if (ok)
    *pass_s = rok_calib_stat(totals, trials).median;
  return ok;
}

/* One model: warm-up pass, then the timed ones, then where PROBE on a
 * CPU device the probe passes: for the user's model (--model) alone, as
 * the simulator takes backward_first only for an op of the kind and shape
 * probed, which a model rarely shares with the calibration layers (and
 * they took ~1.5 s of a 10 s quick calibration). *PASS_S gets the median
 * pass's time. */
static gboolean measure_model(const Pass *how, const RokTrace *trace, guint trials, gboolean probe, const char *label,
                              RokCalibDevice *d, double *pass_s, GError **error) {
  Pass p = *how;
  gboolean ok = time_passes(&p, trace, trials, pass_s, error);
  if (ok && probe && g_strcmp0(d->type, "cpu") == 0)
    ok = probe_passes(&p, trials, error);
  if (ok)
    add_knots(&p, trials, label, d);
  pass_clear(&p);
  return ok;
}

/* --model: the ops of the user's model, as its trace has them. */
static gboolean measure_user_model(const Pass *how, const RokCalibOptions *o, RokCalibDevice *d, GError **error) {
  const RokTrace *trace = o->model;
  guint64 bytes = model_bytes(trace);
  if (bytes > d->memory / 4) {
    g_autofree char *need = rok_units_format_size(bytes), *have = rok_units_format_size(d->memory);
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "--model %s: one layer needs about %s on the device, more than a quarter of its %s (set a "
                "smaller micro_batch or seq_len with --set)",
                trace->model_name, need, have);
    return FALSE;
  }
  rok_calib_progress(o, "device ops: %s, one layer", trace->model_name);
  double pass_s = 0;
  return measure_model(how, trace, MAX(o->trials, 5), TRUE, trace->model_name, d, &pass_s, error);
}

gboolean rok_calib_measure_ops(RokClKernels *kernels, const RokCalibOptions *o, RokCalibCancel *cancel,
                               RokCalibDevice *d, RokCalibProbe probe, gpointer probe_data, GError **error) {
  static const char *const archs[] = {"gpt", "llama"};
  Pass how = {.kernels = kernels, .cl = rok_cl_kernels_device(kernels), .cancel = cancel, .probe = probe,
              .probe_data = probe_data};
  if (o->model != NULL)
    return measure_user_model(&how, o, d, error);
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
      if (!measure_model(&how, trace, MAX(o->trials, 5), FALSE, trace->model_name, d, &pass_s, error))
        return FALSE;
      if (pass_s >= long_run)
        break;
    }
  }
  return TRUE;
}

struct _RokCalibOpTimer {
  RokClDevice *cl;
  RokClKernels *kernels;
  Pass pass;
};

void rok_calib_op_timer_free(RokCalibOpTimer *timer) {
  if (timer == NULL)
    return;
  pass_clear(&timer->pass);
  rok_cl_kernels_free(timer->kernels);
  rok_cl_device_free(timer->cl);
  g_free(timer);
}

RokCalibOpTimer *rok_calib_op_timer_new(gint device, const RokTrace *trace, guint64 beside, GError **error) {
  g_return_val_if_fail(trace != NULL, NULL);
  g_autoptr(RokCalibOpTimer) timer = g_new0(RokCalibOpTimer, 1);
  timer->cl = rok_cl_device_open(device, error);
  if (timer->cl == NULL)
    return NULL;
  guint64 bytes = model_bytes(trace), memory = rok_cl_device_info(timer->cl)->global_memory;
  if (bytes > memory || beside > memory - bytes) {
    g_autofree char *need = rok_units_format_size(bytes), *other = rok_units_format_size(beside);
    g_autofree char *have = rok_units_format_size(memory);
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "%s needs about %s on the device to run every op at once, which with the %s kept for other work "
                "is more than its %s",
                trace->model_name, need, other, have);
    return NULL;
  }
  timer->kernels = rok_cl_kernels_new(timer->cl, rok_trace_activation_dtype(trace), error);
  if (timer->kernels == NULL)
    return NULL;
  timer->pass = (Pass){.kernels = timer->kernels, .cl = timer->cl};
  return prepare_model(&timer->pass, trace, error) ? g_steal_pointer(&timer) : NULL;
}

gboolean rok_calib_op_timer_pass(RokCalibOpTimer *timer, RokCalibCancel *cancel, double *seconds, GError **error) {
  g_return_val_if_fail(timer != NULL && seconds != NULL, FALSE);
  memset(seconds, 0, sizeof(double) * D * timer->pass.trace->ops->len);
  timer->pass.cancel = cancel;
  return run_pass(&timer->pass, seconds, NULL, error);
}

#else /* ROK_WITH_OPENCL */

struct _RokCalibOpTimer {
  int unused;
};

RokCalibOpTimer *rok_calib_op_timer_new(gint device, const RokTrace *trace, guint64 beside, GError **error) {
  (void)device, (void)trace, (void)beside;
  g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "this rok was built without OpenCL (ROK_WITH_OPENCL=OFF)");
  return NULL;
}

gboolean rok_calib_op_timer_pass(RokCalibOpTimer *timer, RokCalibCancel *cancel, double *seconds, GError **error) {
  (void)timer, (void)cancel, (void)seconds, (void)error;
  g_return_val_if_reached(FALSE);
}

void rok_calib_op_timer_free(RokCalibOpTimer *timer) {
  g_free(timer);
}

#endif /* ROK_WITH_OPENCL */
