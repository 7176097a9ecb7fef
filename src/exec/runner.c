/* rok_exec_run: a schedule compiled, the machine set up, one warm-up step
 * and the measured steps played, everything taken apart, the report made. */
#include <math.h>
#include <string.h>

#include "runner-private.h"
#include "rok/core.h"

void rok_exec_options_init(RokExecOptions *options) {
  *options = (RokExecOptions){.device = -1, .repeat = ROK_EXEC_DEFAULT_REPEAT, .seed = ROK_EXEC_DEFAULT_SEED};
}

#ifndef ROK_WITH_OPENCL

RokExecReport *rok_exec_run(const RokSchedule *schedule, const RokExecOptions *options, GError **error) {
  (void)schedule;
  (void)options;
  g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
              "this rok was built without OpenCL (ROK_WITH_OPENCL=OFF): it cannot execute schedules");
  return NULL;
}

#else

static gboolean check_options(RokExecOptions *o, GError **error) {
  if (o->repeat == 0 || o->repeat > ROK_EXEC_MAX_REPEAT) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--repeat must be from 1 to %d", ROK_EXEC_MAX_REPEAT);
    return FALSE;
  }
  if (o->slot_bytes == 0)
    o->slot_bytes = ROK_EXEC_DEFAULT_SLOT_BYTES;
  if (o->slot_bytes % 4096 != 0 || o->slot_bytes > ((guint64)1 << 30)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "the staging slot size must be a multiple of 4 KiB up to 1 GiB, not %" G_GUINT64_FORMAT " bytes",
                o->slot_bytes);
    return FALSE;
  }
  return TRUE;
}

static void on_cancel(int signo, gpointer data) {
  Runner *r = data;
  g_atomic_int_set(&r->cancelled, 1);
  GError *error = signo > 0 ? g_error_new(ROK_ERROR, ROK_ERROR_CANCELLED, "interrupted by signal %d (%s)", signo,
                                          g_strsignal(signo))
                            : g_error_new_literal(ROK_ERROR, ROK_ERROR_CANCELLED, "cancelled");
  runner_fail(r, error);
  g_async_queue_push(r->completions, runner_msg(RUN_MSG_CANCEL));
}

static void static_notes(Runner *r) {
  const RunnerProgram *p = &r->prog;
  if (p->gpudirect_legs > 0)
    g_ptr_array_add(r->notes, g_strdup_printf("%u gpudirect legs ran as a copy through a staging slot plus the SSD "
                                              "leg, chunk by chunk: GPUDirect Storage is not available here",
                                              p->gpudirect_legs));
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    if (a->kind == ROK_ACTION_OPTIMIZER && a->end_ns > a->start_ns) {
      g_autofree char *t = rok_units_format_time((double)(a->end_ns - a->start_ns) / 1e9);
      g_ptr_array_add(r->notes, g_strdup_printf("the optimizer step (predicted %s) has no kernel in the executor: "
                                                "it takes no time here",
                                                t));
    }
  }
}

/* Communication one device cannot perform: said, with what it was. */
static void comm_notes(Runner *r) {
  const RunnerProgram *p = &r->prog;
  RokExecReport *rep = r->report;
  rep->comm_actions = p->comm_actions;
  if (p->comm_actions == 0)
    return;
  for (guint id = 0; id < p->n_actions; id++) {
    const RokAction *a = runner_action(p, id);
    if (runner_is_comm(a))
      rep->comm_by_group[a->group]++;
  }
  g_autoptr(GString) groups = g_string_new(NULL);
  for (guint g = 0; g < ROK_COMM_GROUP_COUNT; g++)
    if (rep->comm_by_group[g] > 0)
      g_string_append_printf(groups, "%s%u %s", groups->len ? ", " : "", rep->comm_by_group[g], rok_comm_group_name(g));
  g_ptr_array_add(r->notes, g_strdup_printf("%u communication actions (%s) are timed placeholders: one device cannot "
                                            "perform them, so each waited its modelled duration on the comm or p2p "
                                            "stream once its dependencies were done, moving nothing",
                                            p->comm_actions, groups->str));
}

/* How the stream threads were scheduled (their threads have ended), and
 * on a CPU device what it costs where they could not be real-time. */
static void wake_note(Runner *r) {
  RokHostWake wake = (RokHostWake)g_atomic_int_get(&r->stream_wake);
  r->report->stream_wake = wake;
  char *note = g_strcmp0(r->report->device_type, "cpu") == 0 ? rok_host_wake_note(wake) : NULL;
  if (note != NULL)
    g_ptr_array_add(r->notes, note);
}

static void model_notes(Runner *r) {
  guint standins = rok_exec_model_standin_count(r->model);
  for (guint o = 0, shown = 0; o < r->trace->ops->len && shown < 3; o++) {
    const char *n = rok_exec_model_op_note(r->model, o);
    if (n != NULL && ++shown)
      g_ptr_array_add(r->notes, g_strdup(n));
  }
  if (standins > 3)
    g_ptr_array_add(r->notes, g_strdup_printf("%u ops in all run a stand-in GEMM", standins));
}

static int compare_double(gconstpointer a, gconstpointer b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  RunnerStepFigures *steps; /* per measured step */
  guint64 *peaks, *fixed;
  RunnerRecord **recs; /* each step's action times */
  gint64 *origins;  /* each step's start */
  double *others;   /* processor seconds other processes used in each; negative: unknown */
  guint n;
} Measured;

/* Between steps: what the schedule left in device memory or on the way,
 * and the gradients, which must be the same every step. */
static gboolean after_step(Runner *r, guint step, guint64 *checksum, GError **error) {
  if (r->store != NULL)
    rok_store_drain(r->store);
  guint left = runner_buffers_clear(r);
  runner_copies_clear(r);
  if (step == 0 && left > 0)
    g_ptr_array_add(r->notes, g_strdup_printf("%u tensors were still in device memory at the end of a step (the "
                                              "schedule does not free them): freed then",
                                              left));
  if (step == 0) {
    *checksum = r->gradient_checksum;
    return TRUE;
  }
  if (r->gradient_checksum == *checksum)
    return TRUE;
  g_atomic_int_inc(&r->integrity_failures);
  g_set_error(
      error, ROK_ERROR, ROK_ERROR_INTEGRITY,
      "integrity: the gradients of step %u differ from those of the warm-up step (checksum %016" G_GINT64_MODIFIER
      "x, then %016" G_GINT64_MODIFIER "x): the device does not compute deterministically",
      step, r->gradient_checksum, *checksum);
  return FALSE;
}

/* The measured step whose time is the median (the lower one of an even
 * count); the step time reported is the true median. */
static guint median_step(const Measured *m, double *median) {
  g_autofree double *times = g_new(double, m->n);
  for (guint i = 0; i < m->n; i++)
    times[i] = m->steps[i].figures.step_time_s;
  qsort(times, m->n, sizeof *times, (int (*)(const void *, const void *))compare_double);
  *median = m->n % 2 ? times[m->n / 2] : (times[m->n / 2 - 1] + times[m->n / 2]) / 2;
  double pick = times[(m->n - 1) / 2];
  for (guint i = 0; i < m->n; i++)
    if (m->steps[i].figures.step_time_s == pick)
      return i;
  return 0;
}

static const char *action_name(const Runner *r, const RokAction *a) {
  if (a->kind == ROK_ACTION_COMM) /* "tensor-parallel all-gather" */
    return NULL;
  if (a->stream == ROK_STREAM_COMPUTE && a->kind != ROK_ACTION_FREE)
    return a->op < r->trace->ops->len ? rok_trace_op(r->trace, a->op)->name : rok_action_kind_name(a->kind);
  return rok_trace_tensor(r->trace, a->tensor)->name;
}

static void fill_timeline(Runner *r, const RunnerRecord *rec, gint64 origin) {
  for (guint id = 0; id < r->prog.n_actions; id++) {
    const RokAction *a = runner_action(&r->prog, id);
    RokExecSpan span = {.action = id,
                        .kind = a->kind,
                        .stream = a->stream,
                        .micro_batch = a->micro_batch,
                        .name = a->kind == ROK_ACTION_COMM
                                    ? g_strdup_printf("%s %s", rok_comm_group_name(a->group),
                                                      rok_collective_name(a->collective))
                                    : g_strdup(action_name(r, a)),
                        .bytes = a->bytes,
                        .start_s = (double)(rec[id].start_ns - origin) / 1e9,
                        .end_s = (double)(rec[id].end_ns - origin) / 1e9,
                        .wait_s = (double)rec[id].wait_ns / 1e9,
                        .predicted_start_s = (double)a->start_ns / 1e9,
                        .predicted_end_s = (double)a->end_ns / 1e9};
    g_array_append_val(r->report->timeline, span);
  }
}

static void fill_report(Runner *r, const Measured *m, double warmup) {
  RokExecReport *rep = r->report;
  double median = 0;
  guint k = median_step(m, &median);
  rep->step_time_min_s = rep->step_time_max_s = m->steps[0].figures.step_time_s;
  for (guint i = 0; i < m->n; i++) {
    double t = m->steps[i].figures.step_time_s;
    g_array_append_val(rep->step_times_s, t);
    g_array_append_val(rep->others_cpu_s, m->others[i]);
    g_array_append_val(rep->step_figures, m->steps[i].figures);
    rep->step_time_min_s = MIN(rep->step_time_min_s, t);
    rep->step_time_max_s = MAX(rep->step_time_max_s, t);
  }
  rep->measured = m->steps[k].figures;
  rep->measured.step_time_s = median;
  rep->measured.peak_device_bytes = m->peaks[k];
  rep->measured.activation_peak_bytes = m->peaks[k] - MIN(m->fixed[k], m->peaks[k]);
  rep->fixed_device_bytes = m->fixed[k];
  rep->dispatch_s = m->steps[k].dispatch_s;
  rep->staging_waits = m->steps[k].staging_waits;
  rep->staging_wait_s = m->steps[k].staging_wait_s;
  rep->warmup_time_s = warmup;
  fill_timeline(r, m->recs[k], m->origins[k]);
  runner_measure_predicted(&r->prog, &rep->predicted);
  const RokFixedMemory *fixed = &r->trace->fixed;
  rep->predicted_fixed_bytes = rok_fixed_memory_bytes(fixed);
  rep->gradient_checksum = r->gradient_checksum;
  rep->loss = r->loss_count > 0 ? r->loss_sum / r->loss_count : NAN;
  rep->tensors_verified = (guint64)g_atomic_int_get(&r->verified);
  rep->integrity_failures = (guint64)g_atomic_int_get(&r->integrity_failures);
}

static gboolean run_steps(Runner *r, GError **error) {
  guint n = r->options.repeat;
  Measured m = {.steps = g_new0(RunnerStepFigures, n),
                .peaks = g_new0(guint64, n),
                .fixed = g_new0(guint64, n),
                .recs = g_new0(RunnerRecord *, n),
                .origins = g_new0(gint64, n),
                .others = g_new0(double, n),
                .n = n};
  guint64 checksum = 0;
  double warmup = 0;
  gboolean ok = TRUE;
  for (guint step = 0; ok && step <= n; step++) {
    g_atomic_int_set(&r->verified, 0);
    ok = runner_step(r, step, error);
    if (ok && step > 0) {
      double others = rok_host_others_cpu_seconds();
      m.others[step - 1] = others >= 0 && r->step_others_cpu_s >= 0 ? MAX(others - r->step_others_cpu_s, 0) : -1;
      runner_measure_step(r, &m.steps[step - 1]);
      m.peaks[step - 1] = rok_cl_device_peak(r->device);
      m.fixed[step - 1] = r->step_fixed;
      m.recs[step - 1] = g_memdup2(r->rec, sizeof(RunnerRecord) * r->prog.n_actions);
      m.origins[step - 1] = r->step_start_ns;
    } else if (ok) {
      RunnerStepFigures w;
      runner_measure_step(r, &w);
      warmup = w.figures.step_time_s;
    }
    ok = ok && after_step(r, step, &checksum, error);
  }
  if (ok)
    fill_report(r, &m, warmup);
  for (guint i = 0; i < n; i++)
    g_free(m.recs[i]);
  g_free(m.recs);
  g_free(m.origins);
  g_free(m.others);
  g_free(m.steps);
  g_free(m.peaks);
  g_free(m.fixed);
  return ok;
}

static Runner *runner_new(const RokSchedule *schedule, const RokExecOptions *options) {
  Runner *r = g_new0(Runner, 1);
  r->schedule = schedule;
  r->trace = schedule->trace;
  r->options = *options;
  g_mutex_init(&r->lock);
  g_mutex_init(&r->track_lock);
  r->to_store = g_array_new(FALSE, FALSE, sizeof(guint));
  g_mutex_init(&r->error_lock);
  g_mutex_init(&r->gate_lock);
  g_cond_init(&r->gate_cond);
  r->stream_wake = ROK_HOST_WAKE_REALTIME; /* lowered by each stream's thread as it starts */
  r->completions = g_async_queue_new();
  r->notes = g_ptr_array_new_with_free_func(g_free);
  r->report = exec_report_new();
  RokExecReport *rep = r->report;
  rep->strategy = g_strdup(schedule->strategy);
  rep->model = g_strdup(schedule->trace->model_name);
  rep->repeat = options->repeat;
  rep->actions = schedule->actions->len;
  return r;
}

static void runner_free(Runner *r) {
  runner_program_clear(&r->prog);
  g_async_queue_unref(r->completions);
  g_ptr_array_unref(r->notes);
  rok_exec_report_free(r->report);
  if (r->error != NULL)
    g_error_free(r->error);
  g_mutex_clear(&r->lock);
  g_mutex_clear(&r->track_lock);
  g_array_unref(r->to_store);
  g_mutex_clear(&r->error_lock);
  g_mutex_clear(&r->gate_lock);
  g_cond_clear(&r->gate_cond);
  g_free(r);
}

RokExecReport *rok_exec_run(const RokSchedule *schedule, const RokExecOptions *options, GError **error) {
  Runner *r = runner_new(schedule, options);
  gboolean ok =
      check_options(&r->options, error) && runner_program_build(&r->prog, schedule, r->options.slot_bytes, error);
  if (ok && r->options.cancel != NULL)
    exec_cancel_attach(r->options.cancel, on_cancel, r);
  if (ok) {
    r->report->micro_batches = r->prog.n_mb;
    static_notes(r);
    comm_notes(r);
    ok = runner_setup(r, error);
  }
  if (ok) {
    model_notes(r);
    ok = run_steps(r, error);
  }
  if (r->options.cancel != NULL)
    exec_cancel_detach(r->options.cancel);
  runner_teardown(r);
  if (r->removal_error != NULL && ok) {
    g_propagate_error(error, g_steal_pointer(&r->removal_error));
    ok = FALSE;
  }
  g_clear_error(&r->removal_error);
  RokExecReport *report = NULL;
  if (ok) {
    wake_note(r);
    report = g_steal_pointer(&r->report);
    for (guint i = 0; i < r->notes->len; i++)
      g_ptr_array_add(report->notes, g_strdup(g_ptr_array_index(r->notes, i)));
  }
  runner_free(r);
  return report;
}

#endif /* ROK_WITH_OPENCL */
