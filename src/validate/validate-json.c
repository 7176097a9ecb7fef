/* The summary over the rows and the rok-validation/1 document. */
#include <math.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "validate-private.h"
#include "rok/core.h"

/* Median and largest of N values (reordered); 0 for none. */
static void median_max(double *values, guint n, double *median, double *max) {
  *median = *max = 0;
  if (n == 0)
    return;
  gsl_sort(values, 1, n);
  *median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  *max = values[n - 1];
}

/* median_max over ERRORS (double); NaN for both where there are none. */
static void median_max_or_nan(GArray *errors, double *median, double *max) {
  median_max((double *)(void *)errors->data, errors->len, median, max);
  if (errors->len == 0)
    *median = *max = NAN;
}

const RokValidateRow *rok_validation_keep_row(const RokValidation *v) {
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    if (g_str_equal(row->strategy, "keep"))
      return row;
  }
  return NULL;
}

/* Each round's median step of ROW into MEDIANS (v->rounds of them), where
 * its steps are v->rounds x v->repeat; FALSE otherwise. */
static gboolean round_medians(const RokValidation *v, const RokValidateRow *row, double *medians) {
  if (row->step_times_s == NULL || row->step_times_s->len != v->rounds * v->repeat)
    return FALSE;
  g_autofree double *steps = g_memdup2(row->step_times_s->data, sizeof(double) * row->step_times_s->len);
  for (guint r = 0; r < v->rounds; r++)
    medians[r] = gsl_stats_median(steps + r * v->repeat, 1, v->repeat);
  return TRUE;
}

/* ROW's measured step over keep's, round by round: each round's median
 * over the keep run's of the same round (KEEP_ROUNDS), the median of
 * those. The rows of a round run within seconds of each other, while the
 * machine's speed can move more than that between rounds (the
 * development VM, 2026-12-02: keep's rounds at 200, 256 and 189 ms in one
 * run), so pairing them takes that drift out where the medians over every
 * round would keep it (that run's median error against keep: 11.3% over
 * all rounds, 3.3% paired). Over all rounds with one round, or where the
 * steps are not rounds x repeat (KEEP_ROUNDS NULL). */
static double measured_over_keep(const RokValidation *v, const RokValidateRow *row, const RokValidateRow *keep,
                                 const double *keep_rounds) {
  g_autofree double *ratios = g_new(double, MAX(v->rounds, 1));
  if (keep_rounds == NULL || !round_medians(v, row, ratios))
    return row->measured_step_time_s / keep->measured_step_time_s;
  for (guint r = 0; r < v->rounds; r++)
    ratios[r] /= keep_rounds[r];
  return gsl_stats_median(ratios, 1, v->rounds);
}

/* Each row's error_against_keep, and their median and largest over the
 * rows but keep. */
static void against_keep(RokValidation *v) {
  const RokValidateRow *k = rok_validation_keep_row(v);
  gboolean keep = k != NULL && k->predicted_step_time_s > 0 && k->measured_step_time_s > 0;
  g_autofree double *keep_rounds = g_new(double, MAX(v->rounds, 1));
  gboolean paired = keep && v->rounds > 1 && round_medians(v, k, keep_rounds);
  for (guint r = 0; paired && r < v->rounds; r++)
    paired = keep_rounds[r] > 0;
  g_autofree double *errors = g_new(double, MAX(v->rows->len, 1));
  guint n = 0;
  for (guint i = 0; i < v->rows->len; i++) {
    RokValidateRow *row = g_ptr_array_index(v->rows, i);
    row->error_against_keep = NAN;
    if (keep && row != k && row->predicted_step_time_s > 0) {
      double predicted = row->predicted_step_time_s / k->predicted_step_time_s;
      row->error_against_keep = measured_over_keep(v, row, k, paired ? keep_rounds : NULL) / predicted - 1;
      errors[n++] = fabs(row->error_against_keep);
    }
  }
  median_max(errors, n, &v->median_error_against_keep, &v->max_error_against_keep);
  if (n == 0)
    v->median_error_against_keep = v->max_error_against_keep = NAN;
}

/* Over the rows' transfer streams (the parts with an interval). */
static void streams(RokValidation *v) {
  g_autoptr(GArray) errors = g_array_new(FALSE, FALSE, sizeof(double));
  v->streams_within_noise = 0;
  for (guint i = 0; i < v->rows->len; i++) {
    const GArray *parts = ((const RokValidateRow *)g_ptr_array_index(v->rows, i))->parts;
    for (guint k = 0; parts != NULL && k < parts->len; k++) {
      const RokValidatePart *p = &g_array_index(parts, RokValidatePart, k);
      if (isnan(p->ci_low_s))
        continue;
      double e = fabs(rok_validate_part_error(p));
      g_array_append_val(errors, e);
      v->streams_within_noise += p->within_noise;
    }
  }
  v->streams = errors->len;
  median_max_or_nan(errors, &v->median_stream_error, &v->max_stream_error);
}

/* ROW's measured step over its prediction at the machine's speed, round
 * by round where each round has its own (rok/validate.h), as
 * measured_over_keep pairs them; over all rounds otherwise. */
static double error_at_speed(const RokValidation *v, const RokValidateRow *row) {
  const GArray *by_round = row->predicted_at_speed_by_round_s;
  g_autofree double *ratios = g_new(double, MAX(v->rounds, 1));
  if (by_round == NULL || by_round->len != v->rounds || !round_medians(v, row, ratios))
    return row->measured_step_time_s / row->predicted_at_speed_s - 1;
  for (guint r = 0; r < v->rounds; r++)
    ratios[r] /= g_array_index(by_round, double, r);
  return gsl_stats_median(ratios, 1, v->rounds) - 1;
}

/* Each row's error_at_speed, and their median and largest. */
static void errors_at_speed(RokValidation *v) {
  g_autoptr(GArray) errors = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < v->rows->len; i++) {
    RokValidateRow *row = g_ptr_array_index(v->rows, i);
    row->error_at_speed = NAN;
    if (row->predicted_at_speed_s > 0) {
      row->error_at_speed = error_at_speed(v, row);
      double e = fabs(row->error_at_speed);
      g_array_append_val(errors, e);
    }
  }
  median_max_or_nan(errors, &v->median_step_time_error_at_speed, &v->max_step_time_error_at_speed);
}

/* Each copy stream's error_against_keep and error_at_copy_speed
 * (rok/validate.h), and the medians and largest of each. */
static void copy_errors(RokValidation *v) {
  const RokValidateRow *k = rok_validation_keep_row(v);
  gboolean keep = v->copies_on_cpus && k != NULL && k->predicted_step_time_s > 0 && k->measured_step_time_s > 0;
  double speed = keep ? k->measured_step_time_s / k->predicted_step_time_s : NAN;
  g_autoptr(GArray) by_keep = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) at_speed = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    for (guint j = 0; row->parts != NULL && j < row->parts->len; j++) {
      RokValidatePart *p = &g_array_index(row->parts, RokValidatePart, j);
      p->error_against_keep = p->error_at_copy_speed = NAN;
      if (!validate_part_copy_measured(p))
        continue;
      if (keep && row != k && p->predicted_s > 0) {
        p->error_against_keep = p->median_s / p->predicted_s / speed - 1;
        double e = fabs(p->error_against_keep);
        g_array_append_val(by_keep, e);
      }
      if (p->predicted_at_copy_speed_s > 0) {
        p->error_at_copy_speed = p->median_s / p->predicted_at_copy_speed_s - 1;
        double e = fabs(p->error_at_copy_speed);
        g_array_append_val(at_speed, e);
      }
    }
  }
  median_max_or_nan(by_keep, &v->median_copy_error_against_keep, &v->max_copy_error_against_keep);
  median_max_or_nan(at_speed, &v->median_copy_error_at_copy_speed, &v->max_copy_error_at_copy_speed);
}

void rok_validation_summarize(RokValidation *v) {
  guint n = v->rows->len;
  g_autofree double *time = g_new(double, MAX(n, 1)), *peak = g_new(double, MAX(n, 1));
  g_autofree double *moved = g_new(double, MAX(n, 1)), *noise = g_new(double, MAX(n, 1));
  g_autofree double *taken = g_new(double, MAX(n, 1));
  guint known = 0;
  for (guint i = 0; i < n; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    time[i] = fabs(row->step_time_error);
    peak[i] = fabs(row->peak_error);
    moved[i] = fabs(row->moved_error);
    noise[i] = row->noise;
    if (row->taken_s >= 0 && row->measured_step_time_s > 0)
      taken[known++] = row->taken_s / row->measured_step_time_s;
  }
  double unused = 0;
  median_max(taken, known, &v->median_taken_share, &unused);
  if (known == 0)
    v->median_taken_share = -1;
  median_max(time, n, &v->median_step_time_error, &v->max_step_time_error);
  median_max(peak, n, &v->median_peak_error, &v->max_peak_error);
  median_max(moved, n, &unused, &v->max_moved_error);
  median_max(noise, n, &v->median_noise, &v->max_noise);
  against_keep(v);
  streams(v);
  copy_errors(v);
  errors_at_speed(v);
  v->rows_within_noise = 0;
  for (guint i = 0; i < n; i++)
    v->rows_within_noise += ((const RokValidateRow *)g_ptr_array_index(v->rows, i))->within_noise;
  g_array_set_size(v->parts, 0);
  for (guint i = 0; i < n; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    if (row->parts != NULL)
      validate_parts_add(v->parts, row->parts);
  }
}

char *rok_validation_speed_note(const RokValidation *v) {
  const RokValidateRow *keep = rok_validation_keep_row(v);
  if (keep == NULL || keep->within_noise || !(fabs(keep->step_time_error) > ROK_VALIDATE_SPEED_ERROR))
    return NULL;
  /* What the machine ran the kernels at, against the profile: keep's
   * measured step over its predicted one, the other way up. */
  double speed = keep->predicted_step_time_s / keep->measured_step_time_s - 1;
  return g_strdup_printf("keep, the kernels alone, took %.0f%% %s time than predicted, outside its interval (%+.1f%% "
                         "to %+.1f%%): the machine ran the kernels %.0f%% %s than the profile says, and every row's "
                         "error carries that (the errors against keep and at the machine's speed take it out). Either "
                         "its speed changed since it was calibrated (a virtual machine's host, a power or thermal "
                         "limit, a calibration taken under load), and calibrating again right before validating on a "
                         "machine that holds steady fixes it (rok calibrate --attempts N keeps the steadiest of N), or "
                         "the profile's rates miss this model's shapes (rok calibrate --model)",
                         100 * fabs(keep->step_time_error), keep->step_time_error < 0 ? "less" : "more",
                         100 * keep->error_ci_low, 100 * keep->error_ci_high, 100 * fabs(speed),
                         speed > 0 ? "faster" : "slower");
}

static json_object *parts_json(const GArray *parts) {
  json_object *a = json_object_new_array();
  for (guint i = 0; parts != NULL && i < parts->len; i++) {
    const RokValidatePart *p = &g_array_index(parts, RokValidatePart, i);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "part", json_object_new_string(p->part));
    json_object_object_add(o, "actions", json_object_new_uint64(p->actions));
    json_object_object_add(o, "predicted_s", rok_json_new_double(p->predicted_s));
    json_object_object_add(o, "measured_s", rok_json_new_double(p->measured_s));
    if (!isnan(p->ci_low_s)) { /* a row's transfer stream */
      json_object_object_add(o, "median_s", rok_json_new_double(p->median_s));
      json_object_object_add(o, "ci_low_s", rok_json_new_double(p->ci_low_s));
      json_object_object_add(o, "ci_high_s", rok_json_new_double(p->ci_high_s));
      json_object_object_add(o, "within_noise", json_object_new_boolean(p->within_noise));
      json_object_object_add(o, "error_against_keep", rok_json_new_double(p->error_against_keep)); /* NaN: null */
      json_object_object_add(o, "predicted_at_copy_speed_s", rok_json_new_double(p->predicted_at_copy_speed_s));
      json_object_object_add(o, "error_at_copy_speed", rok_json_new_double(p->error_at_copy_speed));
    }
    json_object_array_add(a, o);
  }
  return a;
}

static void add(json_object *o, const char *key, json_object *value) {
  json_object_object_add(o, key, value);
}

/* The disks' or the copies' speed against the profile, each direction's
 * median, least and largest over the rounds (null: not timed). */
static json_object *speed_json(const RokCalibStat speed[2], const char *const names[2]) {
  if (speed[0].n == 0)
    return NULL;
  json_object *o = json_object_new_object();
  add(o, "rounds", json_object_new_uint64(speed[0].n));
  for (guint d = 0; d < 2; d++) {
    g_autofree char *low = g_strconcat(names[d], "_min", NULL), *high = g_strconcat(names[d], "_max", NULL);
    add(o, names[d], rok_json_new_double(speed[d].median));
    add(o, low, rok_json_new_double(speed[d].min));
    add(o, high, rok_json_new_double(speed[d].max));
  }
  return o;
}

static json_object *load_json(const double load[3]) {
  if (load[0] < 0)
    return NULL;
  json_object *a = json_object_new_array();
  for (guint i = 0; i < 3; i++)
    json_object_array_add(a, rok_json_new_double(load[i]));
  return a;
}

static json_object *row_json(const RokValidateRow *row) {
  json_object *o = json_object_new_object();
  add(o, "strategy", json_object_new_string(row->strategy));
  add(o, "budget_bytes", json_object_new_uint64(row->budget_bytes));
  add(o, "predicted_step_time_s", rok_json_new_double(row->predicted_step_time_s));
  add(o, "measured_step_time_s", rok_json_new_double(row->measured_step_time_s));
  add(o, "step_time_error", rok_json_new_double(row->step_time_error));
  add(o, "measured_step_time_min_s", rok_json_new_double(row->measured_step_time_min_s));
  add(o, "measured_step_time_max_s", rok_json_new_double(row->measured_step_time_max_s));
  add(o, "noise", rok_json_new_double(row->noise));
  json_object *steps = json_object_new_array();
  for (guint i = 0; row->step_times_s != NULL && i < row->step_times_s->len; i++)
    json_object_array_add(steps, rok_json_new_double(g_array_index(row->step_times_s, double, i)));
  add(o, "step_times_s", steps);
  add(o, "ci_low_s", rok_json_new_double(row->ci_low_s));
  add(o, "ci_high_s", rok_json_new_double(row->ci_high_s));
  add(o, "ci_coverage", rok_json_new_double(row->ci_coverage));
  add(o, "taken_s", rok_json_new_double(row->taken_s));
  add(o, "error_ci_low", rok_json_new_double(row->error_ci_low));
  add(o, "error_ci_high", rok_json_new_double(row->error_ci_high));
  add(o, "within_noise", json_object_new_boolean(row->within_noise));
  add(o, "error_against_keep", rok_json_new_double(row->error_against_keep)); /* NaN: null */
  add(o, "predicted_at_speed_s", rok_json_new_double(row->predicted_at_speed_s > 0 ? row->predicted_at_speed_s : NAN));
  json_object *by_round = NULL;
  for (guint i = 0; row->predicted_at_speed_by_round_s != NULL && i < row->predicted_at_speed_by_round_s->len; i++) {
    by_round = by_round != NULL ? by_round : json_object_new_array();
    json_object_array_add(by_round, rok_json_new_double(g_array_index(row->predicted_at_speed_by_round_s, double, i)));
  }
  add(o, "predicted_at_speed_by_round_s", by_round);
  json_object *before = NULL;
  for (guint i = 0; row->kernel_speed_before != NULL && i < row->kernel_speed_before->len; i++) {
    const double *pass = &g_array_index(row->kernel_speed_before, double, 2 * i);
    json_object *pair = json_object_new_array();
    json_object_array_add(pair, rok_json_new_double(pass[0]));
    json_object_array_add(pair, rok_json_new_double(pass[1]));
    before = before != NULL ? before : json_object_new_array();
    json_object_array_add(before, pair);
  }
  add(o, "kernel_speed_before", before);
  add(o, "error_at_speed", rok_json_new_double(row->error_at_speed));
  add(o, "load_min", rok_json_new_double(row->load_min));
  add(o, "load_max", rok_json_new_double(row->load_max));
  add(o, "predicted_optimizer_s", rok_json_new_double(row->predicted_optimizer_s));
  add(o, "predicted_peak_bytes", json_object_new_uint64(row->predicted_peak_bytes));
  add(o, "measured_peak_bytes", json_object_new_uint64(row->measured_peak_bytes));
  add(o, "peak_error", rok_json_new_double(row->peak_error));
  add(o, "predicted_activation_peak_bytes", json_object_new_uint64(row->predicted_activation_peak_bytes));
  add(o, "measured_activation_peak_bytes", json_object_new_uint64(row->measured_activation_peak_bytes));
  add(o, "predicted_moved_bytes", json_object_new_uint64(row->predicted_moved_bytes));
  add(o, "measured_moved_bytes", json_object_new_uint64(row->measured_moved_bytes));
  add(o, "moved_error", rok_json_new_double(row->moved_error));
  add(o, "integrity_failures", json_object_new_uint64(row->report != NULL ? row->report->integrity_failures : 0));
  add(o, "parts", parts_json(row->parts));
  return o;
}

json_object *rok_validation_to_json(const RokValidation *v) {
  json_object *o = json_object_new_object(), *rows = json_object_new_array();
  add(o, "format", json_object_new_string("rok-validation/1"));
  add(o, "model", json_object_new_string(v->model));
  add(o, "hw", json_object_new_string(v->hw));
  add(o, "device", v->device != NULL ? json_object_new_string(v->device) : NULL);
  add(o, "rounds", json_object_new_uint64(v->rounds));
  add(o, "repeat", json_object_new_uint64(v->repeat));
  add(o, "cpus", json_object_new_uint64(v->cpus));
  json_object *load = json_object_new_object();
  add(load, "before", load_json(v->load_before));
  add(load, "after", load_json(v->load_after));
  add(o, "load_average", load);
  for (guint i = 0; i < v->rows->len; i++)
    json_object_array_add(rows, row_json(g_ptr_array_index(v->rows, i)));
  add(o, "rows", rows);
  add(o, "median_step_time_error", rok_json_new_double(v->median_step_time_error));
  add(o, "max_step_time_error", rok_json_new_double(v->max_step_time_error));
  add(o, "median_peak_error", rok_json_new_double(v->median_peak_error));
  add(o, "max_peak_error", rok_json_new_double(v->max_peak_error));
  add(o, "max_moved_error", rok_json_new_double(v->max_moved_error));
  add(o, "median_noise", rok_json_new_double(v->median_noise));
  add(o, "max_noise", rok_json_new_double(v->max_noise));
  add(o, "median_error_against_keep", rok_json_new_double(v->median_error_against_keep));
  add(o, "max_error_against_keep", rok_json_new_double(v->max_error_against_keep));
  add(o, "rows_within_noise", json_object_new_uint64(v->rows_within_noise));
  add(o, "streams", json_object_new_uint64(v->streams));
  add(o, "streams_within_noise", json_object_new_uint64(v->streams_within_noise));
  add(o, "median_stream_error", rok_json_new_double(v->median_stream_error));
  add(o, "max_stream_error", rok_json_new_double(v->max_stream_error));
  add(o, "median_copy_error_against_keep", rok_json_new_double(v->median_copy_error_against_keep));
  add(o, "max_copy_error_against_keep", rok_json_new_double(v->max_copy_error_against_keep));
  add(o, "median_copy_error_at_copy_speed", rok_json_new_double(v->median_copy_error_at_copy_speed));
  add(o, "max_copy_error_at_copy_speed", rok_json_new_double(v->max_copy_error_at_copy_speed));
  add(o, "median_step_time_error_at_speed", rok_json_new_double(v->median_step_time_error_at_speed));
  add(o, "max_step_time_error_at_speed", rok_json_new_double(v->max_step_time_error_at_speed));
  static const char *const disk[2] = {"write", "read"}, *copy[2] = {"d2h", "h2d"}, *kernel[2] = {"gemm", "other"};
  add(o, "disk_speed", speed_json(v->disk_speed, disk));
  add(o, "copy_speed", speed_json(v->copy_speed, copy));
  add(o, "copies_memory_speed", v->copies_memory_speed > 0 ? rok_json_new_double(v->copies_memory_speed) : NULL);
  add(o, "kernel_speed", speed_json(v->kernel_speed, kernel));
  add(o, "median_taken_share", rok_json_new_double(v->median_taken_share));
  add(o, "calibrated_busy", rok_json_new_double(v->calibrated_busy));
  add(o, "parts", parts_json(v->parts));
  json_object *notes = json_object_new_array();
  for (guint i = 0; i < v->notes->len; i++)
    json_object_array_add(notes, json_object_new_string(g_ptr_array_index(v->notes, i)));
  add(o, "notes", notes);
  return o;
}
