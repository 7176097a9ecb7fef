/* Running the rows: each plan's schedule made and run for real, its report
 * turned into a row of measured beside predicted figures. */
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>

#include "validate-private.h"
#include "rok/calibrate.h"
#include "rok/core.h"
#include "rok/schedule.h"
#include "rok/sim.h"

double validate_relative(double measured, double predicted) {
  if (predicted == 0)
    return measured == 0 ? 0 : INFINITY;
  return (measured - predicted) / predicted;
}

/* The optimizer step's predicted length: the executor runs no kernel for
 * it, so it is in no measured step. */
static double optimizer_seconds(const RokSchedule *schedule) {
  gint64 ns = 0;
  for (guint id = 0; id < schedule->actions->len; id++) {
    const RokAction *a = rok_schedule_action(schedule, id);
    if (a->kind == ROK_ACTION_OPTIMIZER)
      ns += a->end_ns - a->start_ns;
  }
  return (double)ns / 1e9;
}

double validate_schedule_step_s(const RokSchedule *schedule) {
  gint64 end = 0;
  for (guint id = 0; id < schedule->actions->len; id++) {
    const RokAction *a = rok_schedule_action(schedule, id);
    if (rok_exec_action_ends_step(a))
      end = MAX(end, a->end_ns);
  }
  return MAX((double)end / 1e9 - optimizer_seconds(schedule), 0);
}

static guint64 moved(const RokExecFigures *f) {
  return f->d2h_bytes + f->h2d_bytes + f->nvme_write_bytes + f->nvme_read_bytes;
}

void validate_row_fill(RokValidateRow *row, const RokSchedule *schedule) {
  const RokExecReport *r = row->report;
  row->predicted_optimizer_s = optimizer_seconds(schedule);
  row->predicted_step_time_s = MAX(r->predicted.step_time_s - row->predicted_optimizer_s, 0);
  row->measured_step_time_s = r->measured.step_time_s;
  row->step_time_error = validate_relative(row->measured_step_time_s, row->predicted_step_time_s);
  row->measured_step_time_min_s = r->step_time_min_s;
  row->measured_step_time_max_s = r->step_time_max_s;
  row->noise = r->measured.step_time_s > 0 ? (r->step_time_max_s - r->step_time_min_s) / r->measured.step_time_s : 0;
  row->predicted_peak_bytes = r->predicted.peak_device_bytes;
  row->measured_peak_bytes = r->measured.peak_device_bytes;
  row->peak_error = validate_relative((double)row->measured_peak_bytes, (double)row->predicted_peak_bytes);
  row->predicted_activation_peak_bytes = r->predicted.activation_peak_bytes;
  row->measured_activation_peak_bytes = r->measured.activation_peak_bytes;
  row->predicted_moved_bytes = moved(&r->predicted);
  row->measured_moved_bytes = moved(&r->measured);
  row->moved_error = validate_relative((double)row->measured_moved_bytes, (double)row->predicted_moved_bytes);
}

typedef struct {
  const RokValidateOptions *o;
  guint round, rounds, row, rows;
  const char *strategy;
  guint64 budget;
} Progress;

static void on_step(const RokExecProgress *step, gpointer data) {
  const Progress *p = data;
  p->o->progress(p->round, p->rounds, p->row, p->rows, p->strategy, p->budget, step, p->o->progress_data);
}

/* A row being measured: its schedule, and the reports of its runs. */
typedef struct {
  const RokValidatePlanned *planned;
  RokSchedule *schedule;
  GPtrArray *reports; /* RokExecReport *, one per round */
  double load_min, load_max;
  GArray *kernel_passes; /* double[2] per measured round (RokValidateRow.kernel_speed_before) */
} Measuring;

static void measuring_clear(gpointer data) {
  Measuring *m = data;
  rok_schedule_free(m->schedule);
  if (m->reports != NULL)
    g_ptr_array_unref(m->reports);
  if (m->kernel_passes != NULL)
    g_array_unref(m->kernel_passes);
}

static double load_now(void) {
  double load[3];
  return getloadavg(load, 3) == 3 ? load[0] : -1;
}

static RokExecReport *run_once(const RokValidateOptions *o, Measuring *m, Progress *progress, GError **error) {
  RokExecOptions eo = o->exec;
  eo.progress = o->progress != NULL ? on_step : NULL;
  eo.progress_data = progress;
  if (o->progress != NULL)
    o->progress(progress->round, progress->rounds, progress->row, progress->rows, progress->strategy,
                progress->budget, NULL, o->progress_data);
  double load = load_now();
  if (load >= 0) {
    m->load_min = m->load_min < 0 ? load : MIN(m->load_min, load);
    m->load_max = MAX(m->load_max, load);
  }
  RokExecReport *report = rok_exec_run(m->schedule, &eo, error);
  if (report == NULL) {
    g_autofree char *size = rok_units_format_size(progress->budget);
    g_prefix_error(error, "%s at %s: ", progress->strategy, size);
  }
  return report;
}

static double median_of_sorted(const double *v, guint n) {
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void validate_median_interval(const double *sorted, guint n, double *low, double *high, double *coverage) {
  /* P(x(j) <= median <= x(n+1-j)) = 1 - 2 P(B <= j - 1), B ~ Bin(n, 1/2). */
  guint j = 1;
  *coverage = n > 0 ? 1 - 2 * gsl_cdf_binomial_P(0, 0.5, n) : 0;
  while (j + 1 <= (n + 1) / 2) {
    double next = 1 - 2 * gsl_cdf_binomial_P(j, 0.5, n);
    if (next < ROK_VALIDATE_CI_LEVEL)
      break;
    j++;
    *coverage = next;
  }
  *low = n > 0 ? sorted[j - 1] : 0;
  *high = n > 0 ? sorted[n - j] : 0;
}

/* How far below the prediction a step may lie, as a share of it, for a
 * profile measured while others used CALIBRATED_BUSY of the processors:
 * that share, short of all of it. */
static double busy_reach(double calibrated_busy) {
  return CLAMP(calibrated_busy, 0, 0.99);
}

void validate_taken(RokValidateRow *row, double *taken_s, guint n, double calibrated_busy) {
  gsl_sort(taken_s, 1, n);
  row->taken_s = n > 0 ? median_of_sorted(taken_s, n) : -1;
  /* No step is faster than 0 s: on a busy machine another's processor
   * time can exceed the interval's low end (two busy loops on 2
   * processors, 2026-12-06: 83% of them, the interval reached -104%). */
  double low = MAX(row->ci_low_s - MAX(row->taken_s, 0), 0);
  /* A profile measured while others used a share of the processors can
   * be that much slow, and the prediction as long as 1 / (1 - share) of
   * what the machine would take: the interval reaches up to there (two
   * busy loops, 2026-12-07: calibrated while they took 68%, run while
   * they took 49%, keep came out 16% faster than predicted, 14 points
   * past the top of its interval). */
  double fastest = row->predicted_step_time_s * (1 - busy_reach(calibrated_busy));
  row->error_ci_low = validate_relative(low, row->predicted_step_time_s);
  row->error_ci_high = validate_relative(row->ci_high_s, fastest);
  row->within_noise = low <= row->predicted_step_time_s && fastest <= row->ci_high_s;
}

/* The row of a measured plan: every step of every round, their median and
 * its interval; the figures of the run nearest the median. */
static RokValidateRow *measured_row(Measuring *m, RokValidation *v) {
  RokValidateRow *row = g_new0(RokValidateRow, 1);
  row->predicted_at_speed_s = row->error_at_speed = NAN;
  row->strategy = g_strdup(rok_strategy_name(m->planned->strategy));
  row->budget_bytes = m->planned->budget;
  row->step_times_s = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) taken = g_array_new(FALSE, FALSE, sizeof(double)); /* known ones, over the processors */
  for (guint r = 0; r < m->reports->len; r++) {
    const RokExecReport *report = g_ptr_array_index(m->reports, r);
    g_array_append_vals(row->step_times_s, report->step_times_s->data, report->step_times_s->len);
    for (guint s = 0; s < report->others_cpu_s->len; s++) {
      double t = g_array_index(report->others_cpu_s, double, s) / MAX(v->cpus, 1);
      if (t >= 0)
        g_array_append_val(taken, t);
    }
  }
  guint n = row->step_times_s->len;
  g_autofree double *sorted = g_memdup2(row->step_times_s->data, sizeof(double) * MAX(n, 1));
  gsl_sort(sorted, 1, n);
  double median = median_of_sorted(sorted, n);
  guint nearest = 0;
  for (guint r = 1; r < m->reports->len; r++) {
    const RokExecReport *a = g_ptr_array_index(m->reports, r), *b = g_ptr_array_index(m->reports, nearest);
    if (fabs(a->measured.step_time_s - median) < fabs(b->measured.step_time_s - median))
      nearest = r;
  }
  /* The parts of the median step, each stream's interval over every step. */
  row->parts = validate_parts_new();
  validate_parts_fill(row->parts, g_ptr_array_index(m->reports, nearest), m->schedule);
  validate_parts_spread(row->parts, m->reports);
  row->report = g_ptr_array_steal_index(m->reports, nearest);
  row->kernel_speed_before = g_steal_pointer(&m->kernel_passes);
  row->schedule = rok_schedule_to_string(m->schedule);
  validate_row_fill(row, m->schedule);
  /* Over every step of every round, not the one run's. */
  row->measured_step_time_s = median;
  row->measured_step_time_min_s = sorted[0];
  row->measured_step_time_max_s = sorted[n - 1];
  row->noise = median > 0 ? (sorted[n - 1] - sorted[0]) / median : 0;
  row->step_time_error = validate_relative(median, row->predicted_step_time_s);
  validate_median_interval(sorted, n, &row->ci_low_s, &row->ci_high_s, &row->ci_coverage);
  validate_taken(row, (double *)(void *)taken->data, taken->len, v->calibrated_busy);
  row->load_min = m->load_min;
  row->load_max = m->load_max;
  if (v->device == NULL)
    v->device = g_strdup(row->report->device);
  return row;
}

static void read_load(double load[3]) {
  if (getloadavg(load, 3) != 3)
    load[0] = load[1] = load[2] = -1;
}

static void standing_notes(const RokValidateOptions *o, RokValidation *v) {
  g_ptr_array_add(v->notes, g_strdup("the executor runs no optimizer kernel: the optimizer step's predicted time "
                                     "is left out of the predicted step time (predicted_optimizer_s)"));
  g_ptr_array_add(v->notes, g_strdup_printf("rows run in %u interleaved rounds after one discarded run of the first "
                                            "row (which builds the kernels); each run is a warm-up step and %u "
                                            "measured ones",
                                            v->rounds, v->repeat));
  g_ptr_array_add(v->notes, g_strdup_printf("offload and tba offload tensors of at least %" G_GUINT64_FORMAT
                                            " elements (SSDTrain's floor of 8 Mi is for GPU-sized models)",
                                            o->offload_min_elements));
  /* The executor's own note, once for the validation. */
  for (guint i = 0; i < v->rows->len; i++) {
    const RokExecReport *r = ((const RokValidateRow *)g_ptr_array_index(v->rows, i))->report;
    char *note = r != NULL && g_strcmp0(r->device_type, "cpu") == 0 ? rok_host_wake_note(r->stream_wake) : NULL;
    if (note != NULL) {
      g_ptr_array_add(v->notes, note);
      break;
    }
  }
  char *speed = rok_validation_speed_note(v);
  if (speed != NULL)
    g_ptr_array_add(v->notes, speed);
  if (v->calibrated_busy > ROK_HOST_BUSY_SHARE)
    g_ptr_array_add(v->notes, g_strdup_printf("the profile was measured while other processes used %.0f%% of the "
                                              "processors (its calibrated_busy): its figures may be that much slow, "
                                              "so each interval reaches up to a step %.0f%% shorter than predicted; "
                                              "calibrate on an idle machine for intervals that say more",
                                              100 * v->calibrated_busy, 100 * busy_reach(v->calibrated_busy)));
  double busiest = MAX(v->load_before[0], v->load_after[0]);
  /* What others took of the processors says it directly; the load average
   * also counts tasks waiting on a disk (a virtual one's host threads). */
  if (v->median_taken_share >= 0) {
    if (v->median_taken_share > ROK_HOST_BUSY_SHARE)
      g_ptr_array_add(v->notes, g_strdup_printf("the machine was busy: other processes used %.0f%% of the "
                                                "processors' time while the steps ran (median over the rows), so "
                                                "measurements are slower and noisier than on an idle machine",
                                                100 * v->median_taken_share));
  } else if (busiest > 0.5 * v->cpus)
    g_ptr_array_add(v->notes, g_strdup_printf("the machine was busy (load average %.2f on %u processors): other "
                                              "work competed with the runs, so measurements are slower and noisier "
                                              "than on an idle machine",
                                              busiest, v->cpus));
}

/* Rounds of bursts per direction each time the disks are timed: 0.13-0.17
 * s in all, the file laid out and the spinners too, on the development VM
 * (2026-12-07), so that a signal meanwhile is answered within the second
 * rok allows (cli_stop_within_a_second). */
#define DISK_SPEED_ROUNDS 5

/* FALSE, with a note that WHAT ("the disks") were not timed against the
 * profile and why (ERROR, freed). */
static gboolean not_timed(RokValidation *v, const char *what, GError *error) {
  g_ptr_array_add(v->notes, g_strdup_printf("%s were not timed against the profile: %s", what, error->message));
  g_error_free(error);
  return FALSE;
}

/* The disks timed before a measured round (RokValidation.disk_speed):
 * each direction's slowest directory (the array moves at its slowest
 * member's pace) appended to SPEEDS[0] (writes) and SPEEDS[1] (reads);
 * FALSE, with a note and nothing appended, where a disk could not be
 * timed. */
static gboolean time_disks(const RokValidateOptions *o, const RokHw *hw, GArray *speeds[2], RokValidation *v) {
  double slowest[2] = {0, 0};
  for (guint i = 0; o->exec.dirs[i] != NULL; i++) {
    double ratio[2];
    GError *error = NULL;
    if (!rok_calib_disk_speed(o->exec.dirs[i], hw, DISK_SPEED_ROUNDS, NULL, ratio, &error))
      return not_timed(v, "the disks", error);
    for (guint d = 0; d < 2; d++)
      slowest[d] = MAX(slowest[d], ratio[d]);
  }
  for (guint d = 0; d < 2; d++)
    g_array_append_val(speeds[d], slowest[d]);
  return TRUE;
}

/* The device's copies timed before a measured round
 * (RokValidation.copy_speed), appended to SPEEDS[0] (d2h) and [1] (h2d);
 * FALSE, with a note and nothing appended, where they could not be. */
static gboolean time_copies(const RokValidateOptions *o, const RokHw *hw, GArray *speeds[2], RokValidation *v) {
  double ratio[2];
  GError *error = NULL;
  if (!rok_calib_copy_speed(o->exec.device, hw, NULL, ratio, &error))
    return not_timed(v, "the copies", error);
  for (guint d = 0; d < 2; d++)
    g_array_append_val(speeds[d], ratio[d]);
  return TRUE;
}

/* The device memory the rows' runs need: the largest predicted peak
 * (measured within 1.2% of it), a tenth more for the executor's own
 * buffers. */
static guint64 rows_memory(GArray *rows) {
  guint64 peak = 0;
  for (guint i = 0; i < rows->len; i++) {
    json_object *bytes = NULL;
    if (json_object_object_get_ex(g_array_index(rows, Measuring, i).schedule->predicted, "peak_bytes", &bytes))
      peak = MAX(peak, (guint64)json_object_get_uint64(bytes));
  }
  return peak + peak / 10;
}

/* The model's ops made ready for timing the kernels beside the rows' runs
 * (RokValidation.kernel_speed); FALSE, with a note, where they cannot be. */
static gboolean open_kernels(const RokValidateOptions *o, ValidateKernelSpeed *speed, GArray *rows, RokValidation *v) {
  GError *error = NULL;
  return validate_kernel_speed_open(speed, o->exec.device, rows_memory(rows), &error) ||
         not_timed(v, "the kernels", error);
}

/* The kernels timed before M's run in a measured round, the pass's
 * figures appended to its kernel_passes; FALSE, with a note, where they
 * could not be. */
static gboolean time_kernels(ValidateKernelSpeed *speed, Measuring *m, RokValidation *v) {
  GError *error = NULL;
  double pass[2];
  if (!validate_kernel_speed_time(speed, pass, &error))
    return not_timed(v, "the kernels", error);
  if (m->kernel_passes == NULL)
    m->kernel_passes = g_array_new(FALSE, FALSE, sizeof(double[2]));
  g_array_append_val(m->kernel_passes, pass);
  return TRUE;
}

/* Whether a row's schedule copies over the link (a d2h or h2d leg): the
 * copies are timed only for such rows' streams. */
static gboolean rows_copy(GArray *rows) {
  for (guint i = 0; i < rows->len; i++) {
    const RokSchedule *s = g_array_index(rows, Measuring, i).schedule;
    for (guint a = 0; a < s->actions->len; a++) {
      RokStream stream = g_array_index(s->actions, RokAction, a).stream;
      if (stream == ROK_STREAM_D2H || stream == ROK_STREAM_H2D)
        return TRUE;
    }
  }
  return FALSE;
}

/* The row run K-th in ROUND (0: the warm-up run, of the first row alone):
 * each round begins further on, by ROWS / ROUNDS rows, so that no row
 * always runs first, right after the disks are timed and after the same
 * row, nor always last (the development VM, 2026-12-07: in twelve kept
 * runs with keep always first, keep's kernels took 1.2% and 2.5% longer
 * against their prediction than the rows' median, by model). */
static guint round_row(guint round, guint rounds, guint rows, guint k) {
  guint first = round == 0 ? 0 : (guint)((guint64)(round - 1) * rows / rounds % rows);
  return (first + k) % rows;
}

RokValidation *rok_validate(const RokTrace *trace, const RokHw *hw, const RokValidateOptions *options,
                            GError **error) {
  g_return_val_if_fail(trace != NULL && hw != NULL && options != NULL, NULL);
  if (options->exec.repeat == 0 || options->rounds == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "the numbers of rounds and of measured steps must be at least 1");
    return NULL;
  }
  if (hw->nvme.devices > 0 && (options->exec.dirs == NULL || options->exec.dirs[0] == NULL)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "profile %s has SSDs, which offload and tba write to: give a directory on each disk (--dir DIR)",
                hw->name ? hw->name : "(unnamed)");
    return NULL;
  }
  g_autoptr(RokValidation) v = validate_new(trace, hw);
  v->repeat = options->exec.repeat;
  v->rounds = options->rounds;
  g_autoptr(GPtrArray) planned = validate_plan_rows(trace, hw, options, v, error);
  if (planned == NULL)
    return NULL;
  if (planned->len == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "nothing to validate: no baseline and no budget asked for");
    return NULL;
  }
  g_autoptr(GArray) rows = g_array_sized_new(FALSE, TRUE, sizeof(Measuring), planned->len);
  g_array_set_clear_func(rows, measuring_clear);
  for (guint i = 0; i < planned->len; i++) {
    const RokValidatePlanned *p = g_ptr_array_index(planned, i);
    Measuring m = {.planned = p, .reports = g_ptr_array_new_with_free_func((GDestroyNotify)rok_exec_report_free),
                   .load_min = -1, .load_max = -1};
    g_array_append_val(rows, m);
    Measuring *added = &g_array_index(rows, Measuring, i);
    added->schedule = rok_sim_schedule_new(trace, hw, p->plan, rok_strategy_name(p->strategy), p->budget, error);
    if (added->schedule == NULL)
      return NULL;
  }
  read_load(v->load_before);
  g_autoptr(GArray) disk_writes = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) disk_reads = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *disk_speeds[2] = {disk_writes, disk_reads};
  g_autoptr(GArray) copies_out = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) copies_in = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *copy_speeds[2] = {copies_out, copies_in};
  gboolean time_the_disks = hw->nvme.devices > 0, time_the_copies = hw->gpu.shared_cpus > 0 && rows_copy(rows);
  g_autoptr(ValidateKernelSpeed) kernel_speed = validate_kernel_speed_new(trace, hw, error);
  if (kernel_speed == NULL)
    return NULL;
  gboolean time_the_kernels = open_kernels(options, kernel_speed, rows, v);
  /* The copies' speed from the kernels' where the profile says how fast
   * the memory went at its copies: the copy probe's 27 small copies a
   * round tracked the copy streams less well than the op passes (see
   * validate-speed.c). */
  gboolean copies_from_kernels = time_the_copies && time_the_kernels && hw->calibrated_copies_memory_speed > 0;
  time_the_copies = time_the_copies && !copies_from_kernels;
  for (guint round = 0; round <= options->rounds; round++)
    for (guint k = 0; k < rows->len && (round > 0 || k == 0); k++) {
      guint i = round_row(round, options->rounds, rows->len, k);
      gboolean measured = round > 0 && !(options->exec.cancel != NULL && rok_exec_cancel_is_set(options->exec.cancel));
      gboolean timing = measured && k == 0;
      if (timing && time_the_disks)
        time_the_disks = time_disks(options, hw, disk_speeds, v);
      if (timing && time_the_copies)
        time_the_copies = time_copies(options, hw, copy_speeds, v);
      /* A pass before every row's run, so that a round's figure is the
       * median over its length (a pass before the round alone caught the
       * development VM's transient spells: 2026-12-07, the third of three
       * rounds' pass 17-45% off the speed its rows then ran at in three
       * runs of four). */
      Measuring *m = &g_array_index(rows, Measuring, i);
      if (measured && time_the_kernels)
        time_the_kernels = time_kernels(kernel_speed, m, v);
      Progress progress = {.o = options, .round = round, .rounds = options->rounds, .row = i, .rows = rows->len,
                           .strategy = rok_strategy_name(m->planned->strategy), .budget = m->planned->budget};
      RokExecReport *report = run_once(options, m, &progress, error);
      if (report == NULL)
        return NULL;
      if (round == 0) /* the warm-up run: thrown away */
        rok_exec_report_free(report);
      else
        g_ptr_array_add(m->reports, report);
      if (round > 0 && k + 1 == rows->len && time_the_kernels)
        validate_kernel_speed_end_round(kernel_speed);
    }
  validate_kernel_speed_close(kernel_speed);
  if (copies_from_kernels && time_the_kernels) {
    validate_kernel_speed_copies(kernel_speed, hw->calibrated_copies_memory_speed, copy_speeds);
    v->copies_memory_speed = copies_out->len > 0 ? hw->calibrated_copies_memory_speed : 0;
  }
  for (guint i = 0; i < rows->len; i++)
    g_ptr_array_add(v->rows, measured_row(&g_array_index(rows, Measuring, i), v));
  for (guint d = 0; d < 2; d++)
    v->disk_speed[d] = rok_calib_stat((double *)(void *)disk_speeds[d]->data, disk_speeds[d]->len);
  for (guint d = 0; d < 2; d++)
    v->copy_speed[d] = rok_calib_stat((double *)(void *)copy_speeds[d]->data, copy_speeds[d]->len);
  if (time_the_kernels)
    validate_kernel_speed_stat(kernel_speed, v->kernel_speed);
  if (!validate_copies_at_speed(v, trace, hw, planned, error) ||
      !validate_steps_at_speed(v, trace, hw, planned, time_the_kernels ? kernel_speed : NULL, copy_speeds, error))
    return NULL;
  read_load(v->load_after);
  rok_validation_summarize(v);
  standing_notes(options, v);
  return g_steal_pointer(&v);
}
