/* Running the rows: each plan's schedule made and run for real, its report
 * turned into a row of measured beside predicted figures. */
#include <math.h>
#include <stdlib.h>

#include "validate-private.h"
#include "rok/core.h"
#include "rok/schedule.h"
#include "rok/sim.h"

static double relative(double measured, double predicted) {
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

static guint64 moved(const RokExecFigures *f) {
  return f->d2h_bytes + f->h2d_bytes + f->nvme_write_bytes + f->nvme_read_bytes;
}

void validate_row_fill(RokValidateRow *row, const RokSchedule *schedule) {
  const RokExecReport *r = row->report;
  row->predicted_optimizer_s = optimizer_seconds(schedule);
  row->predicted_step_time_s = MAX(r->predicted.step_time_s - row->predicted_optimizer_s, 0);
  row->measured_step_time_s = r->measured.step_time_s;
  row->step_time_error = relative(row->measured_step_time_s, row->predicted_step_time_s);
  row->measured_step_time_min_s = r->step_time_min_s;
  row->measured_step_time_max_s = r->step_time_max_s;
  row->noise = r->measured.step_time_s > 0 ? (r->step_time_max_s - r->step_time_min_s) / r->measured.step_time_s : 0;
  row->predicted_peak_bytes = r->predicted.peak_device_bytes;
  row->measured_peak_bytes = r->measured.peak_device_bytes;
  row->peak_error = relative((double)row->measured_peak_bytes, (double)row->predicted_peak_bytes);
  row->predicted_activation_peak_bytes = r->predicted.activation_peak_bytes;
  row->measured_activation_peak_bytes = r->measured.activation_peak_bytes;
  row->predicted_moved_bytes = moved(&r->predicted);
  row->measured_moved_bytes = moved(&r->measured);
  row->moved_error = relative((double)row->measured_moved_bytes, (double)row->predicted_moved_bytes);
}

typedef struct {
  const RokValidateOptions *o;
  guint row, rows;
  const char *strategy;
  guint64 budget;
} Progress;

static void on_step(const RokExecProgress *step, gpointer data) {
  const Progress *p = data;
  p->o->progress(p->row, p->rows, p->strategy, p->budget, step, p->o->progress_data);
}

static gboolean run_row(const RokTrace *trace, const RokHw *hw, const RokValidateOptions *o,
                        const RokValidatePlanned *planned, Progress *progress, RokValidation *v, GError **error) {
  const char *name = rok_strategy_name(planned->strategy);
  g_autoptr(RokSchedule) schedule = rok_sim_schedule_new(trace, hw, planned->plan, name, planned->budget, error);
  if (schedule == NULL)
    return FALSE;
  RokExecOptions eo = o->exec;
  eo.progress = o->progress != NULL ? on_step : NULL;
  eo.progress_data = progress;
  if (o->progress != NULL)
    o->progress(progress->row, progress->rows, name, planned->budget, NULL, o->progress_data);
  RokExecReport *report = rok_exec_run(schedule, &eo, error);
  if (report == NULL)
    return FALSE;
  RokValidateRow *row = g_new0(RokValidateRow, 1);
  row->strategy = g_strdup(name);
  row->budget_bytes = planned->budget;
  row->report = report;
  row->schedule = rok_schedule_to_string(schedule);
  validate_row_fill(row, schedule);
  row->parts = validate_parts_new();
  validate_parts_fill(row->parts, report, schedule);
  if (v->device == NULL)
    v->device = g_strdup(report->device);
  g_ptr_array_add(v->rows, row);
  return TRUE;
}

static void read_load(double load[3]) {
  if (getloadavg(load, 3) != 3)
    load[0] = load[1] = load[2] = -1;
}

static void standing_notes(const RokValidateOptions *o, RokValidation *v) {
  g_ptr_array_add(v->notes, g_strdup("the executor runs no optimizer kernel: the optimizer step's predicted time "
                                     "is left out of the predicted step time (predicted_optimizer_s)"));
  g_ptr_array_add(v->notes, g_strdup_printf("offload and tba offload tensors of at least %" G_GUINT64_FORMAT
                                            " elements (SSDTrain's floor of 8 Mi is for GPU-sized models)",
                                            o->offload_min_elements));
  double busiest = MAX(v->load_before[0], v->load_after[0]);
  if (busiest > 0.5 * v->cpus)
    g_ptr_array_add(v->notes, g_strdup_printf("the machine was busy (load average %.2f on %u processors): other "
                                              "work competed with the runs, so measurements are slower and noisier "
                                              "than on an idle machine",
                                              busiest, v->cpus));
}

RokValidation *rok_validate(const RokTrace *trace, const RokHw *hw, const RokValidateOptions *options,
                            GError **error) {
  g_return_val_if_fail(trace != NULL && hw != NULL && options != NULL, NULL);
  if (options->exec.repeat == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "the number of measured steps must be at least 1");
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
  g_autoptr(GPtrArray) planned = validate_plan_rows(trace, hw, options, v, error);
  if (planned == NULL)
    return NULL;
  if (planned->len == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "nothing to validate: no baseline and no budget asked for");
    return NULL;
  }
  read_load(v->load_before);
  for (guint i = 0; i < planned->len; i++) {
    const RokValidatePlanned *p = g_ptr_array_index(planned, i);
    Progress progress = {.o = options, .row = i, .rows = planned->len,
                         .strategy = rok_strategy_name(p->strategy), .budget = p->budget};
    if (!run_row(trace, hw, options, p, &progress, v, error)) {
      g_autofree char *size = rok_units_format_size(p->budget);
      g_prefix_error(error, "%s at %s: ", progress.strategy, size);
      return NULL;
    }
  }
  read_load(v->load_after);
  standing_notes(options, v);
  rok_validation_summarize(v);
  return g_steal_pointer(&v);
}
