/* rok_validate: the rows it plans, how a run becomes a row, the summary,
 * the document and the chart; and, where there is an OpenCL device, a
 * small validation run for real (its memory agrees with the prediction;
 * its timing is not judged here: tests/bench/validate.sh measures it). */
#include <cairo.h>
#include <dlfcn.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "exec/runner-private.h"
#include "validate/validate-private.h"
#include "rok/core.h"
#include "rok/model.h"
#include "rok/schedule.h"
#include "rok/sim.h"
#include "test-bundled.h"

/* PoCL keeps its LLVM compiler state until exit. Not our leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libpocl.so\nleak:libLLVM\n";
}

static RokTrace *tiny_trace(void) {
  static const char text[] =
      "{\"name\": \"tiny\", \"arch\": \"gpt\", \"layers\": 2, \"hidden\": 64, \"heads\": 1, \"ffn_hidden\": 256, "
      "\"vocab\": 256, \"seq_len\": 64, \"micro_batch\": 1, \"global_batch\": 2, \"data_parallel\": 1}";
  GError *error = NULL;
  g_autoptr(RokModel) model = rok_model_parse("tiny.json", text, strlen(text), NULL, &error);
  g_assert_no_error(error);
  RokTrace *trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  return trace;
}

/* Baselines first (all five where there are SSDs), then the planner at
 * rising budgets from the smallest feasible, all below keeping everything. */
static void test_plan_rows(void) {
  g_autoptr(RokTrace) trace = tiny_trace();
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  RokValidateOptions o;
  rok_validate_options_init(&o);
  o.budgets = 3;
  o.planner_threads = 1;
  o.offload_min_elements = 4096; /* the tiny model's attention tensors */
  g_autoptr(RokValidation) v = validate_new(trace, hw);
  GError *error = NULL;
  g_autoptr(GPtrArray) rows = validate_plan_rows(trace, hw, &o, v, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rows->len, ==, ROK_STRATEGY_BASELINE_COUNT + 3);
  g_assert_cmpuint(v->notes->len, ==, 0);
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    const RokValidatePlanned *p = g_ptr_array_index(rows, b);
    g_assert_cmpint(p->strategy, ==, b);
    g_assert_cmpuint(p->budget, ==, hw->gpu.memory);
  }
  /* The offload floor is the option's: offload moves something here. */
  const RokValidatePlanned *offload = g_ptr_array_index(rows, ROK_STRATEGY_OFFLOAD);
  guint offloaded = 0;
  for (guint t = 0; t < offload->plan->n_tensors; t++)
    offloaded += offload->plan->decisions[t] == ROK_DECISION_OFFLOAD_NVME;
  g_assert_cmpuint(offloaded, >, 0);
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, NULL, &error);
  g_assert_no_error(error);
  const char *how = NULL;
  guint64 least = rok_planner_min_budget(planner, &how), previous = 0;
  for (guint i = ROK_STRATEGY_BASELINE_COUNT; i < rows->len; i++) {
    const RokValidatePlanned *p = g_ptr_array_index(rows, i);
    g_assert_cmpint(p->strategy, ==, ROK_STRATEGY_ROK);
    g_assert_cmpuint(p->budget, >, previous);
    g_assert_cmpuint(p->plan->options.memory_budget, <=, p->budget);
    previous = p->budget;
  }
  g_assert_cmpuint(((const RokValidatePlanned *)g_ptr_array_index(rows, ROK_STRATEGY_BASELINE_COUNT))->budget, ==,
                   least);

  /* No SSDs: offload and tba are left out, and the notes say why. */
  g_autoptr(RokHw) bare = rok_hw_copy(hw);
  bare->nvme.devices = 0;
  g_autoptr(RokValidation) w = validate_new(trace, bare);
  o.budgets = 0;
  g_autoptr(GPtrArray) fewer = validate_plan_rows(trace, bare, &o, w, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(fewer->len, ==, 3);
  g_assert_cmpuint(w->notes->len, ==, 2);
  g_assert_nonnull(strstr(g_ptr_array_index(w->notes, 0), "offload left out"));
}

/* A report as the executor makes one, around a real schedule. */
static RokExecReport *made_up_report(double median, double lo, double hi) {
  RokExecReport *r = exec_report_new();
  r->device = g_strdup("Test Device");
  r->measured.step_time_s = median;
  r->step_time_min_s = lo;
  r->step_time_max_s = hi;
  return r;
}

/* The optimizer step's predicted time is left out of the prediction, the
 * errors are (measured - predicted) / predicted, the noise the spread. */
static void test_row_fill(void) {
  g_autoptr(RokTrace) trace = tiny_trace();
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  GError *error = NULL;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  g_autoptr(RokSchedule) schedule = rok_sim_schedule_new(trace, hw, plan, "keep", hw->gpu.memory, &error);
  g_assert_no_error(error);
  gint64 optimizer = 0, end = 0;
  for (guint i = 0; i < schedule->actions->len; i++) {
    const RokAction *a = rok_schedule_action(schedule, i);
    if (a->kind == ROK_ACTION_OPTIMIZER)
      optimizer = a->end_ns - a->start_ns;
    if (a->stream == ROK_STREAM_COMPUTE)
      end = MAX(end, a->end_ns);
  }
  g_assert_cmpint(optimizer, >, 0);
  double predicted = (double)(end - optimizer) / 1e9;
  RokValidateRow row = {.report = made_up_report(predicted * 1.1, predicted, predicted * 1.2)};
  row.report->predicted.step_time_s = (double)end / 1e9;
  row.report->predicted.peak_device_bytes = 1000;
  row.report->measured.peak_device_bytes = 990;
  row.report->predicted.d2h_bytes = row.report->measured.d2h_bytes = 300;
  row.report->predicted.nvme_read_bytes = row.report->measured.nvme_read_bytes = 200;
  validate_row_fill(&row, schedule);
  g_assert_cmpfloat_with_epsilon(row.predicted_optimizer_s, (double)optimizer / 1e9, 1e-12);
  g_assert_cmpfloat_with_epsilon(row.predicted_step_time_s, predicted, 1e-12);
  g_assert_cmpfloat_with_epsilon(row.step_time_error, 0.1, 1e-9);
  g_assert_cmpfloat_with_epsilon(row.noise, 0.2 / 1.1, 1e-9);
  g_assert_cmpfloat_with_epsilon(row.peak_error, -0.01, 1e-12);
  g_assert_cmpuint(row.predicted_moved_bytes, ==, 500);
  g_assert_cmpfloat(row.moved_error, ==, 0);
  /* Moved where nothing was planned: no finite error. */
  row.report->measured.h2d_bytes = 100;
  row.report->predicted.d2h_bytes = row.report->predicted.nvme_read_bytes = 0;
  row.report->measured.d2h_bytes = row.report->measured.nvme_read_bytes = 0;
  validate_row_fill(&row, schedule);
  g_assert_true(isinf(row.moved_error));
  rok_exec_report_free(row.report);
}

static void add_row(RokValidation *v, const char *strategy, guint64 budget, double predicted, double measured,
                    double noise, guint64 peak, double peak_error) {
  RokValidateRow *row = g_new0(RokValidateRow, 1);
  row->strategy = g_strdup(strategy);
  row->budget_bytes = budget;
  row->predicted_step_time_s = predicted;
  row->measured_step_time_s = measured;
  row->step_time_error = (measured - predicted) / predicted;
  row->noise = noise;
  row->predicted_peak_bytes = peak;
  row->measured_peak_bytes = (guint64)((double)peak * (1 + peak_error));
  row->peak_error = peak_error;
  row->schedule = g_strdup("{}");
  g_ptr_array_add(v->rows, row);
}

/* A part of ROW: a compute part (no interval) where median_s is NaN, a
 * transfer stream's otherwise. */
static void add_part(RokValidateRow *row, const char *name, double predicted, double measured, double median,
                     double low, double high) {
  if (row->parts == NULL)
    row->parts = validate_parts_new();
  gboolean stream = !isnan(median);
  RokValidatePart p = {.part = g_strdup(name), .actions = 1, .predicted_s = predicted, .measured_s = measured,
                       .median_s = median, .ci_low_s = stream ? low : NAN, .ci_high_s = stream ? high : NAN,
                       .within_noise = stream && low <= predicted && predicted <= high,
                       .error_against_keep = NAN, .predicted_at_copy_speed_s = NAN, .error_at_copy_speed = NAN};
  g_array_append_val(row->parts, p);
}

static RokValidation *made_up(void) {
  g_autoptr(RokTrace) trace = tiny_trace();
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  RokValidation *v = validate_new(trace, hw);
  v->device = g_strdup("Test Device");
  v->repeat = 3;
  add_row(v, "keep", 1 << 30, 1.0, 1.05, 0.02, 1000, 0.0);
  add_row(v, "recompute", 1 << 30, 1.3, 1.17, 0.04, 800, -0.01);
  add_row(v, "offload", 1 << 30, 1.0, 1.02, 0.01, 700, 0.0);
  add_row(v, "rok", 900, 1.1, 1.21, 0.03, 900, 0.005);
  RokValidateRow *offload = g_ptr_array_index(v->rows, 2);
  add_part(offload, "linear forward", 0.5, 0.6, NAN, 0, 0);
  add_part(offload, "d2h", 0.10, 0.125, 0.12, 0.11, 0.13);  /* +20%, the interval above the prediction */
  add_part(offload, "h2d", 0.20, 0.185, 0.19, 0.15, 0.25); /* -5%, inside */
  g_ptr_array_add(v->notes, g_strdup("a note"));
  rok_validation_summarize(v);
  return v;
}

static void set_steps(RokValidation *v, guint row, const double *steps, guint n) {
  RokValidateRow *r = g_ptr_array_index(v->rows, row);
  r->step_times_s = g_array_new(FALSE, FALSE, sizeof(double));
  g_array_append_vals(r->step_times_s, steps, n);
}

/* keep's error beyond 10% and outside its interval: a note that the
 * machine ran the kernels at another speed than the profile says (keep
 * measured 0.777 s of a predicted 1.0: 29% faster), and what to do; within
 * its interval, or within 10%, or without a keep row, none. */
static void test_speed_note(void) {
  g_autoptr(RokTrace) trace = tiny_trace();
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  g_autoptr(RokValidation) v = validate_new(trace, hw);
  g_assert_null(rok_validation_speed_note(v));
  add_row(v, "keep", 1 << 30, 1.0, 0.777, 0.1, 1000, 0.0);
  RokValidateRow *keep = g_ptr_array_index(v->rows, 0);
  keep->error_ci_low = -0.346;
  keep->error_ci_high = -0.113;
  g_autofree char *note = rok_validation_speed_note(v);
  g_assert_nonnull(note);
  g_test_message("%s", note);
  g_assert_nonnull(strstr(note, "keep, the kernels alone, took 22% less time than predicted, outside its interval "
                                "(-34.6% to -11.3%): the machine ran the kernels 29% faster than the profile says"));
  g_assert_nonnull(strstr(note, "calibrating again right before validating"));
  g_assert_nonnull(strstr(note, "rok calibrate --attempts N keeps the steadiest of N"));
  keep->within_noise = TRUE;
  g_assert_null(rok_validation_speed_note(v));
  keep->within_noise = FALSE;
  keep->measured_step_time_s = 1.08;
  keep->step_time_error = 0.08;
  g_assert_null(rok_validation_speed_note(v));
  keep->measured_step_time_s = 1.25;
  keep->step_time_error = 0.25;
  g_autofree char *slow = rok_validation_speed_note(v);
  g_assert_nonnull(strstr(slow, "took 25% more time than predicted"));
  g_assert_nonnull(strstr(slow, "ran the kernels 20% slower"));
}

/* Error against keep, paired by round: keep's second round ran 40% slow
 * and the rok row's third did; each round's row over that round's keep
 * gives 1.2, 1.2 and 1.68, whose median is the predicted 1.2 (error 0),
 * where the medians over every round (1.68 / 1.0) would give +40%. With
 * one round, or steps that are not rounds x repeat, the medians over
 * every step are used. */
static void test_against_keep_paired(void) {
  g_autoptr(RokTrace) trace = tiny_trace();
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  g_autoptr(RokValidation) v = validate_new(trace, hw);
  v->rounds = 3;
  v->repeat = 2;
  add_row(v, "keep", 1 << 30, 1.0, 1.0, 0.4, 1000, 0.0);
  add_row(v, "rok", 900, 1.2, 1.68, 0.4, 900, 0.0);
  set_steps(v, 0, (const double[]){1.0, 1.0, 1.4, 1.4, 1.0, 1.0}, 6);
  set_steps(v, 1, (const double[]){1.2, 1.2, 1.68, 1.68, 1.68, 1.68}, 6);
  rok_validation_summarize(v);
  const RokValidateRow *rok = g_ptr_array_index(v->rows, 1);
  g_assert_cmpfloat_with_epsilon(rok->error_against_keep, 0, 1e-12);
  g_assert_cmpfloat_with_epsilon(v->median_error_against_keep, 0, 1e-12);
  g_assert_cmpfloat_with_epsilon(rok->step_time_error, 0.4, 1e-12);
  v->rounds = 1;
  rok_validation_summarize(v);
  g_assert_cmpfloat_with_epsilon(rok->error_against_keep, 1.68 / 1.2 - 1, 1e-12);
}

/* Copy streams against keep, on a device whose copies run on its kernels'
 * processors: offload's d2h (median 0.12 of 0.10 predicted) and h2d (0.19
 * of 0.20) over keep's 1.05 of 1.0; in the document, and null on a device
 * with copy engines (and for keep's own streams, and SSD streams). */
static void test_copies_against_keep(void) {
  g_autoptr(RokValidation) v = made_up();
  g_assert_false(v->copies_on_cpus); /* the bundled profile: no shared_cpus */
  g_assert_true(isnan(v->median_copy_error_against_keep));
  RokValidateRow *offload = g_ptr_array_index(v->rows, 2);
  add_part(offload, "nvme-write", 0.1, 0.2, 0.2, 0.15, 0.25);
  v->copies_on_cpus = TRUE;
  rok_validation_summarize(v);
  const RokValidatePart *d2h = &g_array_index(offload->parts, RokValidatePart, 1);
  const RokValidatePart *h2d = &g_array_index(offload->parts, RokValidatePart, 2);
  const RokValidatePart *ssd = &g_array_index(offload->parts, RokValidatePart, 3);
  g_assert_cmpfloat_with_epsilon(d2h->error_against_keep, 1.2 / 1.05 - 1, 1e-12);
  g_assert_cmpfloat_with_epsilon(h2d->error_against_keep, 0.95 / 1.05 - 1, 1e-12);
  g_assert_true(isnan(ssd->error_against_keep));
  g_assert_true(isnan(g_array_index(offload->parts, RokValidatePart, 0).error_against_keep)); /* compute */
  g_assert_cmpfloat_with_epsilon(v->median_copy_error_against_keep, (1.2 / 1.05 - 1 + 1 - 0.95 / 1.05) / 2, 1e-12);
  g_assert_cmpfloat_with_epsilon(v->max_copy_error_against_keep, 1.2 / 1.05 - 1, 1e-12);
  json_object *o = rok_validation_to_json(v);
  json_object *median = NULL;
  g_assert_true(json_object_object_get_ex(o, "median_copy_error_against_keep", &median));
  g_assert_cmpfloat_with_epsilon(json_object_get_double(median), v->median_copy_error_against_keep, 1e-12);
  json_object *rows = json_object_object_get(o, "rows");
  json_object *parts = json_object_object_get(json_object_array_get_idx(rows, 2), "parts");
  json_object *against = NULL;
  g_assert_true(json_object_object_get_ex(json_object_array_get_idx(parts, 1), "error_against_keep", &against));
  g_assert_cmpfloat_with_epsilon(json_object_get_double(against), d2h->error_against_keep, 1e-12);
  g_assert_true(json_object_object_get_ex(json_object_array_get_idx(parts, 3), "error_against_keep", &against));
  g_assert_null(against);
  json_object_put(o);
}

/* The copy streams predicted again at the copies' speed timed before the
 * rounds: the profile's pcie rates over each way's ratio, its latency and
 * the host's checks over their mean; at ratio 1 each copy stream's
 * prediction is the profile's (as its part counts it), slower copies give
 * longer streams, a row without copy streams gets none; the summary and
 * the document carry the errors against them. */
static void test_copies_at_speed(void) {
  g_autoptr(RokTrace) trace = tiny_trace();
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  hw->nvme.devices = 0; /* the planner offloads to host memory */
  hw->gpu.shared_cpus = 2;
  hw->host.checksum_bandwidth = 4e9;
  hw->host.checksum_rates = g_new(RokHwRatePoint, 2);
  hw->host.checksum_rates[0] = (RokHwRatePoint){.work = 65536, .rate = 6e9};
  hw->host.checksum_rates[1] = (RokHwRatePoint){.work = 16 << 20, .rate = 4e9};
  hw->host.checksum_rates_len = 2;
  g_autoptr(RokHw) at = validate_hw_at_copy_speed(hw, 1.2, 1.4);
  g_assert_cmpfloat_with_epsilon(at->pcie.d2h_bandwidth, hw->pcie.d2h_bandwidth / 1.2, 1e-3);
  g_assert_cmpfloat_with_epsilon(at->pcie.h2d_bandwidth, hw->pcie.h2d_bandwidth / 1.4, 1e-3);
  g_assert_cmpint(at->pcie.latency, ==, (gint64)llround((double)hw->pcie.latency * 1.3));
  g_assert_cmpfloat_with_epsilon(at->host.checksum_bandwidth, 4e9 / 1.3, 1e-3);
  g_assert_cmpfloat_with_epsilon(at->host.checksum_rates[1].rate, 4e9 / 1.3, 1e-3);
  g_assert_cmpfloat(hw->host.checksum_rates[1].rate, ==, 4e9); /* a copy: the profile as it was */

  RokValidateOptions o;
  rok_validate_options_init(&o);
  o.budgets = 2;
  o.planner_threads = 1;
  g_autoptr(RokValidation) v = validate_new(trace, hw);
  GError *error = NULL;
  g_autoptr(GPtrArray) planned = validate_plan_rows(trace, hw, &o, v, &error);
  g_assert_no_error(error);
  guint copying = 0;
  for (guint i = 0; i < planned->len; i++) {
    const RokValidatePlanned *p = g_ptr_array_index(planned, i);
    g_autoptr(RokSchedule) schedule =
        rok_sim_schedule_new(trace, hw, p->plan, rok_strategy_name(p->strategy), p->budget, &error);
    g_assert_no_error(error);
    add_row(v, rok_strategy_name(p->strategy), p->budget, 1.0, 1.0, 0, 1000, 0);
    RokValidateRow *row = g_ptr_array_index(v->rows, i);
    add_part(row, "linear forward", 0.5, 0.5, NAN, 0, 0);
    for (RokStream s = ROK_STREAM_D2H; s <= ROK_STREAM_H2D; s++) {
      double t = validate_schedule_copy_s(schedule, s);
      if (t > 0)
        add_part(row, rok_stream_name(s), t, 1.25 * t, 1.25 * t, t, 1.5 * t);
    }
    copying += row->parts->len > 1;
  }
  g_assert_cmpuint(copying, >, 0); /* the rok rows offload to host memory */
  v->copy_speed[0] = v->copy_speed[1] = (RokCalibStat){.median = 1, .min = 1, .max = 1, .n = 3};
  g_assert_true(validate_copies_at_speed(v, trace, hw, planned, &error));
  g_assert_no_error(error);
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    g_assert_true(isnan(g_array_index(row->parts, RokValidatePart, 0).predicted_at_copy_speed_s)); /* compute */
    for (guint k = 1; k < row->parts->len; k++) {
      const RokValidatePart *p = &g_array_index(row->parts, RokValidatePart, k);
      g_assert_cmpfloat_with_epsilon(p->predicted_at_copy_speed_s, p->predicted_s, 1e-12);
    }
  }
  v->copy_speed[0].median = 1.5;
  v->copy_speed[1].median = 2.0;
  g_assert_true(validate_copies_at_speed(v, trace, hw, planned, &error));
  g_assert_no_error(error);
  rok_validation_summarize(v);
  double largest = 0;
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    for (guint k = 1; k < row->parts->len; k++) {
      const RokValidatePart *p = &g_array_index(row->parts, RokValidatePart, k);
      g_assert_cmpfloat(p->predicted_at_copy_speed_s, >, p->predicted_s);
      g_assert_cmpfloat_with_epsilon(p->error_at_copy_speed, p->median_s / p->predicted_at_copy_speed_s - 1, 1e-12);
      largest = MAX(largest, fabs(p->error_at_copy_speed));
    }
  }
  g_assert_cmpfloat_with_epsilon(v->max_copy_error_at_copy_speed, largest, 1e-12);
  g_assert_cmpfloat(v->median_copy_error_at_copy_speed, <=, largest);
  json_object *doc = rok_validation_to_json(v);
  json_object *max = NULL;
  g_assert_true(json_object_object_get_ex(doc, "max_copy_error_at_copy_speed", &max));
  g_assert_cmpfloat_with_epsilon(json_object_get_double(max), largest, 1e-12);
  json_object_put(doc);

  /* The copies not timed (no CPU device, or no row copies): none. */
  g_autoptr(RokValidation) untimed = made_up();
  g_assert_true(isnan(untimed->median_copy_error_at_copy_speed));
}

/* Rates for every kind of TRACE's ops but the inputs, one knot each way
 * (and a dropout's rebuild): 2 GFLOP/s or GB/s of work. */
static void give_op_rates(RokHw *hw, const RokTrace *trace) {
  gboolean seen[ROK_OP_KIND_COUNT] = {FALSE};
  guint n = 0;
  for (guint o = 0; o < trace->ops->len; o++) {
    RokOpKind k = rok_trace_op(trace, o)->kind;
    n += !seen[k] && k != ROK_OP_INPUT;
    seen[k] = TRUE;
  }
  hw->gpu.op_rates = g_new0(RokHwOpRates, n);
  for (guint k = 0; k < ROK_OP_KIND_COUNT; k++) {
    if (!seen[k] || k == ROK_OP_INPUT)
      continue;
    RokHwOpRates *r = &hw->gpu.op_rates[hw->gpu.op_rates_len++];
    r->kind = g_strdup(rok_op_kind_name(k));
    for (guint d = 0; d < ROK_HW_DIRECTIONS; d++) {
      r->curve[d] = g_new(RokHwRatePoint, 1);
      r->curve[d][0] = (RokHwRatePoint){.work = 1e6, .rate = 2e9};
      r->len[d] = 1;
    }
  }
}

/* Each op's time, launch aside, at the profile's (RATIO 1) or times
 * RATIO_GEMM for the GEMM ops and RATIO_REST for the others, plus the
 * launch, as rok_calib_op_timer_pass gives them. */
static double *op_seconds_at(const RokTrace *trace, const RokHw *hw, double ratio_gemm, double ratio_rest) {
  GError *error = NULL;
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, &error);
  g_assert_no_error(error);
  double launch = (double)hw->gpu.launch_overhead / 1e9;
  double *seconds = g_new0(double, ROK_HW_DIRECTIONS * trace->ops->len);
  for (guint o = 0; o < trace->ops->len; o++) {
    double ratio = rok_op_kind_is_gemm(rok_trace_op(trace, o)->kind) ? ratio_gemm : ratio_rest;
    for (guint b = 0; b < 2; b++)
      seconds[ROK_HW_DIRECTIONS * o + (b ? ROK_HW_BACKWARD : ROK_HW_FORWARD)] =
          launch + ratio * ((double)rok_sim_op_ns(sim, o, b) / 1e9 - launch);
  }
  return seconds;
}

/* The kernels timed before each row's run: a round whose passes' GEMM
 * ops took 1.5 times the profile's and the rest 0.8 (the median of three
 * passes, one at 0.5) gives a profile on which every op
 * is predicted that much longer or shorter, launch aside, whether its
 * kind has measured rates or the GEMM peak and the memory's bandwidth
 * give its time; the round's own ratios for that round, their median
 * otherwise; the profile itself left alone. Each row's step at that speed
 * is its schedule's, and a row's error at speed is paired by round. */
static void test_kernels_at_speed(void) {
  g_autoptr(RokTrace) trace = tiny_trace();
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  hw->nvme.devices = 0;
  GError *error = NULL;
  for (guint rated = 0; rated < 2; rated++) {
    if (rated)
      give_op_rates(hw, trace);
    g_autoptr(ValidateKernelSpeed) speed = validate_kernel_speed_new(trace, hw, &error);
    g_assert_no_error(error);
    g_autofree double *same = op_seconds_at(trace, hw, 1, 1), *moved = op_seconds_at(trace, hw, 1.5, 0.8);
    g_autofree double *faster = op_seconds_at(trace, hw, 0.9, 0.9);
    g_autofree double *fast = op_seconds_at(trace, hw, 0.5, 0.5);
    validate_kernel_speed_end_round(speed); /* nothing timed: no round */
    validate_kernel_speed_add(speed, same);
    validate_kernel_speed_end_round(speed);
    validate_kernel_speed_add(speed, moved); /* a round's median over its passes */
    validate_kernel_speed_add(speed, moved);
    validate_kernel_speed_add(speed, fast);
    validate_kernel_speed_end_round(speed);
    validate_kernel_speed_add(speed, faster);
    validate_kernel_speed_end_round(speed);
    RokCalibStat stat[2];
    validate_kernel_speed_stat(speed, stat);
    g_assert_cmpuint(stat[0].n, ==, 3);
    g_assert_cmpfloat_with_epsilon(stat[0].median, 1, 1e-6);
    g_assert_cmpfloat_with_epsilon(stat[0].max, 1.5, 1e-6);
    g_assert_cmpfloat_with_epsilon(stat[1].min, 0.8, 1e-6);
    /* The copies carried over: each round's other ops' figure times the
     * memory's speed at the calibration's copies, both ways. */
    g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) in = g_array_new(FALSE, FALSE, sizeof(double));
    validate_kernel_speed_copies(speed, 1.25, (GArray *[2]){out, in});
    g_assert_cmpuint(out->len, ==, 3);
    g_assert_cmpuint(in->len, ==, 3);
    const double other[3] = {1, 0.8, 0.9};
    for (guint r = 0; r < 3; r++) {
      g_assert_cmpfloat_with_epsilon(g_array_index(out, double, r), 1.25 * other[r], 1e-6);
      g_assert_cmpfloat_with_epsilon(g_array_index(in, double, r), 1.25 * other[r], 1e-6);
    }
    g_autoptr(RokSim) sim = rok_sim_new(trace, hw, &error);
    g_assert_no_error(error);
    const double ratios[4][2] = {{1, 1}, {1.5, 0.8}, {0.9, 0.9}, {1, 0.9}}; /* the last: the medians */
    for (guint round = 0; round < 4; round++) {
      g_autoptr(RokHw) at = validate_hw_at_kernel_speed(hw, speed, round);
      g_autoptr(RokSim) at_sim = rok_sim_new(trace, at, &error);
      g_assert_no_error(error);
      for (guint o = 0; o < trace->ops->len; o++) {
        const RokOp *op = rok_trace_op(trace, o);
        double ratio = ratios[round][rok_op_kind_is_gemm(op->kind) ? 0 : 1];
        for (guint b = 0; b < 2; b++) {
          double was = (double)(rok_sim_op_ns(sim, o, b) - hw->gpu.launch_overhead);
          double now = (double)(rok_sim_op_ns(at_sim, o, b) - hw->gpu.launch_overhead);
          if (op->kind == ROK_OP_INPUT)
            g_assert_cmpfloat(now, ==, was);
          else
            g_assert_cmpfloat(fabs(now - ratio * was), <=, 2 + 1e-9 * was);
        }
      }
    }
    g_autoptr(RokHw) profile = test_bundled_hw("cpu-2core-virtio");
    g_assert_cmpfloat(hw->gpu.peak_flops, ==, profile->gpu.peak_flops); /* left alone */
  }

  /* The rows at that speed: at the profile's own speed each row's step is
   * its prediction; each round's prediction its own. */
  RokValidateOptions o;
  rok_validate_options_init(&o);
  o.budgets = 1;
  o.planner_threads = 1;
  g_autoptr(RokValidation) v = validate_new(trace, hw);
  v->rounds = 2;
  v->repeat = 2;
  g_autoptr(GPtrArray) planned = validate_plan_rows(trace, hw, &o, v, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < planned->len; i++) {
    const RokValidatePlanned *p = g_ptr_array_index(planned, i);
    g_autoptr(RokSchedule) schedule =
        rok_sim_schedule_new(trace, hw, p->plan, rok_strategy_name(p->strategy), p->budget, &error);
    g_assert_no_error(error);
    double s = validate_schedule_step_s(schedule);
    add_row(v, rok_strategy_name(p->strategy), p->budget, s, s, 0, 1000, 0);
    set_steps(v, i, (const double[]){s, s, 1.2 * s, 1.2 * s}, 4);
  }
  g_autoptr(ValidateKernelSpeed) speed = validate_kernel_speed_new(trace, hw, &error);
  g_assert_no_error(error);
  g_autofree double *same = op_seconds_at(trace, hw, 1, 1), *slow = op_seconds_at(trace, hw, 1.2, 1.2);
  validate_kernel_speed_add(speed, same);
  validate_kernel_speed_end_round(speed);
  validate_kernel_speed_add(speed, slow);
  validate_kernel_speed_end_round(speed);
  g_autoptr(GArray) d2h = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) h2d = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *copies[2] = {d2h, h2d};
  g_assert_true(validate_steps_at_speed(v, trace, hw, planned, speed, copies, &error));
  g_assert_no_error(error);
  rok_validation_summarize(v);
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    const GArray *by_round = row->predicted_at_speed_by_round_s;
    g_assert_cmpuint(by_round->len, ==, 2);
    g_assert_cmpfloat_with_epsilon(g_array_index(by_round, double, 0) / row->predicted_step_time_s, 1, 1e-6);
    /* 20% slower kernels: the step longer, by less than 20% (launches,
     * copies and waits are in it), keep's, all kernels and launches, by
     * nearly as much. */
    double slower = g_array_index(by_round, double, 1) / row->predicted_step_time_s;
    g_assert_cmpfloat(slower, >, 1.0);
    g_assert_cmpfloat(slower, <=, 1.2 + 1e-6);
    if (g_str_equal(row->strategy, "keep"))
      g_assert_cmpfloat(slower, >, 1.18);
    /* Each round over its own prediction: 1 and 1.2 / slower. */
    g_assert_cmpfloat_with_epsilon(row->error_at_speed, (1 + 1.2 / slower) / 2 - 1, 1e-6);
  }
  g_assert_false(isnan(v->median_step_time_error_at_speed));
  json_object *doc = rok_validation_to_json(v);
  json_object *rows = json_object_object_get(doc, "rows"), *by_round = NULL;
  g_assert_true(json_object_object_get_ex(json_object_array_get_idx(rows, 0), "predicted_at_speed_by_round_s",
                                          &by_round));
  g_assert_cmpuint(json_object_array_length(by_round), ==, 2);
  json_object_put(doc);

  /* Not timed: none. */
  g_autoptr(RokValidation) untimed = made_up();
  g_assert_true(isnan(untimed->median_step_time_error_at_speed));
  g_assert_true(isnan(((const RokValidateRow *)g_ptr_array_index(untimed->rows, 0))->error_at_speed));
}

/* Medians and maxima of the absolute errors; the document holds every
 * field, consistent with the rows. */
static void test_summary_json(void) {
  g_autoptr(RokValidation) v = made_up();
  /* |errors|: 0.05, 0.1, 0.02, 0.1. */
  g_assert_cmpfloat_with_epsilon(v->median_step_time_error, 0.075, 1e-9);
  g_assert_cmpfloat_with_epsilon(v->max_step_time_error, 0.1, 1e-9);
  g_assert_cmpfloat_with_epsilon(v->max_peak_error, 0.01, 1e-12);
  g_assert_cmpfloat_with_epsilon(v->median_peak_error, 0.0025, 1e-12);
  g_assert_cmpfloat_with_epsilon(v->median_noise, 0.025, 1e-12);
  g_assert_cmpfloat_with_epsilon(v->max_noise, 0.04, 1e-12);
  /* Against keep (measured 1.05 of predicted): recompute 0.9 / 1.05 - 1,
   * offload 1.02 / 1.05 - 1, rok 1.1 / 1.05 - 1; keep itself has none. */
  const RokValidateRow *keep = g_ptr_array_index(v->rows, 0), *recompute = g_ptr_array_index(v->rows, 1);
  g_assert_true(isnan(keep->error_against_keep));
  g_assert_cmpfloat_with_epsilon(recompute->error_against_keep, 0.9 / 1.05 - 1, 1e-12);
  g_assert_cmpfloat_with_epsilon(v->median_error_against_keep, 1.1 / 1.05 - 1, 1e-12);
  g_assert_cmpfloat_with_epsilon(v->max_error_against_keep, 1 - 0.9 / 1.05, 1e-12);
  /* The streams: errors from their medians over the steps, not the median
   * step's; the compute part is not one of them. */
  g_assert_cmpuint(v->streams, ==, 2);
  g_assert_cmpuint(v->streams_within_noise, ==, 1);
  g_assert_cmpfloat_with_epsilon(v->median_stream_error, (0.2 + 0.05) / 2, 1e-12);
  g_assert_cmpfloat_with_epsilon(v->max_stream_error, 0.2, 1e-12);
  const GArray *parts = ((const RokValidateRow *)g_ptr_array_index(v->rows, 2))->parts;
  g_assert_cmpfloat_with_epsilon(rok_validate_part_error(&g_array_index(parts, RokValidatePart, 0)), 0.2, 1e-12);

  json_object *o = rok_validation_to_json(v);
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  json_object *doc = json_tokener_parse(text);
  g_assert_nonnull(doc);
  g_assert_cmpstr(json_object_get_string(json_object_object_get(doc, "format")), ==, "rok-validation/1");
  json_object *rows = json_object_object_get(doc, "rows");
  g_assert_cmpuint(json_object_array_length(rows), ==, 4);
  static const char *const fields[] = {"strategy", "budget_bytes", "predicted_step_time_s", "measured_step_time_s",
                                       "step_time_error", "predicted_peak_bytes", "measured_peak_bytes",
                                       "peak_error", "noise", "predicted_moved_bytes", "measured_moved_bytes"};
  for (gsize i = 0; i < json_object_array_length(rows); i++) {
    json_object *row = json_object_array_get_idx(rows, i);
    for (guint f = 0; f < G_N_ELEMENTS(fields); f++)
      g_assert_true(json_object_object_get_ex(row, fields[f], NULL));
    double p = json_object_get_double(json_object_object_get(row, "predicted_step_time_s"));
    double m = json_object_get_double(json_object_object_get(row, "measured_step_time_s"));
    g_assert_cmpfloat_with_epsilon(json_object_get_double(json_object_object_get(row, "step_time_error")),
                                   (m - p) / p, 1e-12);
  }
  g_assert_cmpfloat(json_object_get_double(json_object_object_get(doc, "max_step_time_error")), ==,
                    v->max_step_time_error);
  json_object *keep_error = NULL;
  g_assert_true(json_object_object_get_ex(json_object_array_get_idx(rows, 0), "error_against_keep", &keep_error));
  g_assert_null(keep_error); /* keep itself: null */
  g_assert_cmpfloat(json_object_get_double(json_object_object_get(doc, "max_error_against_keep")), ==,
                    v->max_error_against_keep);
  g_assert_true(json_object_object_get_ex(doc, "median_step_time_error", NULL));
  g_assert_true(json_object_object_get_ex(doc, "max_peak_error", NULL));
  g_assert_cmpuint(json_object_array_length(json_object_object_get(doc, "notes")), ==, 1);
  g_assert_true(json_object_is_type(json_object_object_get(doc, "parts"), json_type_array));
  g_assert_cmpuint(json_object_get_uint64(json_object_object_get(doc, "streams")), ==, 2);
  g_assert_cmpuint(json_object_get_uint64(json_object_object_get(doc, "streams_within_noise")), ==, 1);
  g_assert_cmpfloat(json_object_get_double(json_object_object_get(doc, "max_stream_error")), ==, v->max_stream_error);
  /* A stream part has its median and interval, a compute part none; the
   * sums over the rows none either. */
  json_object *row_parts = json_object_object_get(json_object_array_get_idx(rows, 2), "parts");
  g_assert_false(json_object_object_get_ex(json_object_array_get_idx(row_parts, 0), "median_s", NULL));
  json_object *d2h = json_object_array_get_idx(row_parts, 1);
  g_assert_cmpfloat(json_object_get_double(json_object_object_get(d2h, "median_s")), ==, 0.12);
  g_assert_cmpfloat(json_object_get_double(json_object_object_get(d2h, "ci_low_s")), ==, 0.11);
  g_assert_cmpfloat(json_object_get_double(json_object_object_get(d2h, "ci_high_s")), ==, 0.13);
  g_assert_false(json_object_get_boolean(json_object_object_get(d2h, "within_noise")));
  json_object *sums = json_object_object_get(doc, "parts");
  for (gsize i = 0; i < json_object_array_length(sums); i++)
    g_assert_false(json_object_object_get_ex(json_object_array_get_idx(sums, i), "ci_low_s", NULL));
  json_object_put(doc);
}

/* Without a keep row there is nothing to take out: NaN, null in the
 * document. */
static void test_no_keep(void) {
  g_autoptr(RokTrace) trace = tiny_trace();
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  g_autoptr(RokValidation) v = validate_new(trace, hw);
  add_row(v, "offload", 1 << 30, 1.0, 1.02, 0.01, 700, 0.0);
  rok_validation_summarize(v);
  g_assert_true(isnan(v->median_error_against_keep) && isnan(v->max_error_against_keep));
  g_assert_true(isnan(((const RokValidateRow *)g_ptr_array_index(v->rows, 0))->error_against_keep));
  json_object *o = rok_validation_to_json(v);
  json_object *max = NULL;
  g_assert_true(json_object_object_get_ex(o, "max_error_against_keep", &max));
  g_assert_null(max);
  g_assert_cmpuint(v->streams, ==, 0); /* no transfer stream either: NaN, null */
  g_assert_true(isnan(v->median_stream_error));
  g_assert_true(json_object_object_get_ex(o, "median_stream_error", &max));
  g_assert_null(max);
  json_object_put(o);
}

/* The chart in PNG and SVG, refused in another format; where a row was
 * predicted at the machine's speed, its hollow point and the axis naming
 * them. */
static void test_chart(void) {
  g_autoptr(RokValidation) v = made_up();
  g_autofree char *dir = g_dir_make_tmp("rok-validate-XXXXXX", NULL);
  g_autofree char *png = g_build_filename(dir, "v.png", NULL), *svg = g_build_filename(dir, "v.svg", NULL);
  g_autofree char *bad = g_build_filename(dir, "v.gif", NULL);
  GError *error = NULL;
  g_assert_true(rok_validation_save_chart(v, png, &error));
  g_assert_no_error(error);
  g_assert_true(rok_validation_save_chart(v, svg, &error));
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(svg, &text, NULL, NULL));
  g_assert_nonnull(strstr(text, "<svg"));
  g_assert_null(strstr(text, "hollow"));
  /* With predictions at the machine's speed: hollow points, the axis says
   * so. */
  RokValidateRow *rok = g_ptr_array_index(v->rows, 3);
  rok->predicted_at_speed_s = 1.15;
  rok_validation_summarize(v);
  g_assert_true(isfinite(rok->error_at_speed));
  g_assert_true(rok_validation_save_chart(v, svg, &error));
  g_assert_no_error(error);
  g_autofree char *hollow = NULL;
  g_assert_true(g_file_get_contents(svg, &hollow, NULL, NULL));
  g_assert_nonnull(strstr(hollow, "(hollow: at the machine"));
  g_assert_cmpuint(strlen(hollow), >, strlen(text));
  g_assert_false(rok_validation_save_chart(v, bad, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_clear_error(&error);
  g_unlink(png);
  g_unlink(svg);
  g_rmdir(dir);
}

/* The median's interval from order statistics, against the textbook
 * values: n = 10 gives [x(2), x(9)] at 97.85%; n = 6, [x(1), x(6)] at
 * 96.9%; n = 5 cannot reach 95%: the widest, at 93.75%. */
static void test_median_interval(void) {
  const double v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  double low = 0, high = 0, coverage = 0;
  validate_median_interval(v, 10, &low, &high, &coverage);
  g_assert_cmpfloat(low, ==, 2);
  g_assert_cmpfloat(high, ==, 9);
  g_assert_cmpfloat_with_epsilon(coverage, 1 - 2 * 11.0 / 1024, 1e-12);
  validate_median_interval(v, 6, &low, &high, &coverage);
  g_assert_cmpfloat(low, ==, 1);
  g_assert_cmpfloat(high, ==, 6);
  g_assert_cmpfloat_with_epsilon(coverage, 1 - 2.0 / 64, 1e-12);
  validate_median_interval(v, 5, &low, &high, &coverage);
  g_assert_cmpfloat(low, ==, 1);
  g_assert_cmpfloat(high, ==, 5);
  g_assert_cmpfloat_with_epsilon(coverage, 1 - 2.0 / 32, 1e-12);
}

/* What other processes took of the steps widens the interval downwards
 * (a busy machine can make a step slower, never faster); what they took
 * while the profile was measured, upwards. */
static void test_taken(void) {
  RokValidateRow row = {.predicted_step_time_s = 1.0, .ci_low_s = 1.2, .ci_high_s = 1.5};
  double none[1] = {0};
  validate_taken(&row, none, 0, 0); /* unknown: the plain interval */
  g_assert_cmpfloat(row.taken_s, <, 0);
  g_assert_false(row.within_noise);
  g_assert_cmpfloat_with_epsilon(row.error_ci_low, 0.2, 1e-12);
  double taken[] = {0.3, 0.1, 0.25}; /* median 0.25: the interval reaches 0.95 */
  validate_taken(&row, taken, 3, 0);
  g_assert_cmpfloat(row.taken_s, ==, 0.25);
  g_assert_true(row.within_noise);
  g_assert_cmpfloat_with_epsilon(row.error_ci_low, -0.05, 1e-12);
  g_assert_cmpfloat_with_epsilon(row.error_ci_high, 0.5, 1e-12);
  row.predicted_step_time_s = 1.6; /* above the interval: still outside */
  validate_taken(&row, taken, 3, 0);
  g_assert_false(row.within_noise);
  row.predicted_step_time_s = 1.0;
  double most[] = {1.7, 1.8, 1.9}; /* more than the interval's low end: it stops at a step of 0 s */
  validate_taken(&row, most, 3, 0);
  g_assert_true(row.within_noise);
  g_assert_cmpfloat(row.error_ci_low, ==, -1);
  /* Measured while others used half the processors, the profile may make
   * the prediction twice what the machine takes: the interval reaches up
   * to there, and a prediction above the measured steps' interval lies
   * inside it. */
  row.predicted_step_time_s = 2.0;
  validate_taken(&row, taken, 3, 0);
  g_assert_false(row.within_noise);
  validate_taken(&row, taken, 3, 0.5);
  g_assert_true(row.within_noise);
  g_assert_cmpfloat_with_epsilon(row.error_ci_high, 0.5, 1e-12); /* 1.5 over the 1.0 it may be */
  g_assert_cmpfloat_with_epsilon(row.error_ci_low, -0.525, 1e-12); /* below: as before */
  validate_taken(&row, taken, 3, 0.2);
  g_assert_false(row.within_noise); /* 1.6 > 1.5 */
}

/* For real: the baselines that need no disk and the planner at two
 * budgets, one measured step each. Where nothing is copied the peak does
 * not depend on timing, and the ledger's is the simulator's (the same
 * bytes, counted the same way); bytes moved are the schedule's; the times
 * are only checked to exist. */
/* The order the runs came in: (round, row) pairs. */
static void record_order(guint round, guint rounds, guint row, guint rows, const char *strategy, guint64 budget,
                         const RokExecProgress *step, gpointer data) {
  (void)rounds, (void)rows, (void)strategy, (void)budget;
  if (step == NULL) {
    guint pair[2] = {round, row};
    g_array_append_vals(data, pair, 2);
  }
}

static void test_run(void) {
  g_autoptr(RokTrace) trace = tiny_trace();
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  hw->nvme.devices = 0; /* the planner offloads to host memory: no disk needed */
  RokValidateOptions o;
  rok_validate_options_init(&o);
  o.budgets = 2;
  o.planner_threads = 1;
  o.exec.repeat = 1;
  o.rounds = 2;
  g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
  o.progress = record_order;
  o.progress_data = order;
  GError *error = NULL;
  g_autoptr(RokValidation) v = rok_validate(trace, hw, &o, &error);
  if (v == NULL && error->code == ROK_ERROR_DEVICE) {
    g_test_skip(error->message);
    g_error_free(error);
    return;
  }
  g_assert_no_error(error);
  static const char *const strategies[] = {"keep", "recompute", "selective", "rok", "rok"};
  g_assert_cmpuint(v->rows->len, ==, G_N_ELEMENTS(strategies));
  g_assert_nonnull(v->device);
  /* One discarded run of the first row, then the rounds, each row in
   * turn, the second round from the third of five rows (5 / 2 on). */
  guint n = v->rows->len;
  g_assert_cmpuint(order->len, ==, 2 * (1 + 2 * n));
  g_assert_cmpuint(g_array_index(order, guint, 0), ==, 0);
  g_assert_cmpuint(g_array_index(order, guint, 1), ==, 0);
  for (guint k = 0; k < 2 * n; k++) {
    g_assert_cmpuint(g_array_index(order, guint, 2 + 2 * k), ==, 1 + k / n);
    g_assert_cmpuint(g_array_index(order, guint, 3 + 2 * k), ==, (k / n * 2 + k % n) % n);
  }
  guint copied = 0, copy_streams = 0;
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    g_assert_cmpstr(row->strategy, ==, strategies[i]);
    g_assert_cmpfloat(row->measured_step_time_s, >, 0);
    g_assert_cmpfloat(row->predicted_step_time_s, >, 0);
    /* Two steps, one per round: their median, its interval between them. */
    g_assert_cmpuint(row->step_times_s->len, ==, 2);
    double a = g_array_index(row->step_times_s, double, 0), b = g_array_index(row->step_times_s, double, 1);
    g_assert_cmpfloat(row->measured_step_time_s, ==, (a + b) / 2);
    g_assert_cmpfloat(row->ci_low_s, ==, MIN(a, b));
    g_assert_cmpfloat(row->ci_high_s, ==, MAX(a, b));
    g_assert_cmpfloat_with_epsilon(row->ci_coverage, 0.5, 1e-12);
    /* Linux's /proc/stat gives what other work took of each step. */
    g_assert_cmpfloat(row->taken_s, >=, 0);
    g_assert_true(row->within_noise == (row->ci_low_s - row->taken_s <= row->predicted_step_time_s &&
                                        row->predicted_step_time_s <= row->ci_high_s));
    g_assert_cmpfloat(row->error_ci_low, <=, row->error_ci_high);
    if (row->predicted_moved_bytes == 0)
      g_assert_cmpfloat(fabs(row->peak_error), <=, 0.005);
    copied += row->predicted_moved_bytes > 0;
    g_assert_cmpfloat(row->moved_error, ==, 0);
    g_assert_cmpuint(row->report->integrity_failures, ==, 0);
    g_assert_nonnull(strstr(row->schedule, "rok-schedule/2"));
    /* The step as validate_schedule_step_s counts a schedule's (what the
     * machine's speed is predicted again with) is the report's; the
     * kernels were timed before both rounds, a prediction for each. */
    g_autoptr(RokSchedule) own = rok_schedule_parse("row", row->schedule, strlen(row->schedule), &error);
    g_assert_no_error(error);
    g_assert_cmpfloat_with_epsilon(validate_schedule_step_s(own) / row->predicted_step_time_s, 1, 1e-6);
    g_assert_cmpuint(row->predicted_at_speed_by_round_s->len, ==, 2);
    g_assert_cmpfloat(row->predicted_at_speed_s, >, 0);
    g_assert_true(isfinite(row->error_at_speed));
    /* The parts of the compute stream add up to its busy time. */
    double predicted = 0, measured = 0;
    for (guint k = 0; k < row->parts->len; k++) {
      const RokValidatePart *part = &g_array_index(row->parts, RokValidatePart, k);
      g_assert_cmpuint(part->actions, >, 0);
      /* A transfer stream: its median over the two steps, between them,
       * the median step's time one of them. */
      gboolean stream = g_str_equal(part->part, "d2h") || g_str_equal(part->part, "h2d") ||
                        g_str_has_prefix(part->part, "nvme-");
      g_assert_true(stream == !isnan(part->median_s));
      if (stream) {
        g_assert_cmpfloat(part->ci_low_s, <=, part->median_s);
        g_assert_cmpfloat(part->median_s, <=, part->ci_high_s);
        g_assert_cmpfloat(part->ci_low_s, <=, part->measured_s + 1e-6);
        g_assert_cmpfloat(part->measured_s, <=, part->ci_high_s + 1e-6);
        g_assert_true(part->within_noise ==
                      (part->ci_low_s <= part->predicted_s && part->predicted_s <= part->ci_high_s));
      }
      /* A copy stream's prediction, from the run's spans, is its
       * schedule's legs as validate_schedule_copy_s counts them (what the
       * copies' speed is predicted again with). */
      if (validate_part_copy_measured(part)) {
        g_autoptr(RokSchedule) schedule = rok_schedule_parse("row", row->schedule, strlen(row->schedule), &error);
        g_assert_no_error(error);
        g_assert_cmpfloat(part->predicted_s, >, 0);
        double legs = validate_schedule_copy_s(schedule, validate_part_stream(part));
        g_assert_cmpfloat_with_epsilon(legs / part->predicted_s, 1, 1e-6);
        copy_streams++;
      }
      if (strchr(part->part, ' ') != NULL || g_str_equal(part->part, "optimizer")) {
        predicted += part->predicted_s;
        measured += part->measured_s;
      }
    }
    g_assert_cmpfloat_with_epsilon(predicted, row->report->predicted.compute_s, 1e-6);
    g_assert_cmpfloat_with_epsilon(measured, row->report->measured.compute_s, 1e-6);
  }
  g_assert_cmpuint(copied, >, 0); /* the smallest budget offloads */
  g_assert_cmpuint(copy_streams, >, 0);
  for (guint c = 0; c < 2; c++) {
    g_assert_cmpuint(v->kernel_speed[c].n, ==, 2);
    g_assert_cmpfloat(v->kernel_speed[c].min, >, 0);
  }
  g_assert_true(isfinite(v->median_step_time_error_at_speed));
  /* Over the rows: every part, summed. */
  double total = 0, rows_total = 0;
  for (guint k = 0; k < v->parts->len; k++)
    total += g_array_index(v->parts, RokValidatePart, k).measured_s;
  for (guint i = 0; i < v->rows->len; i++) {
    const GArray *parts = ((const RokValidateRow *)g_ptr_array_index(v->rows, i))->parts;
    for (guint k = 0; k < parts->len; k++)
      rows_total += g_array_index(parts, RokValidatePart, k).measured_s;
  }
  g_assert_cmpfloat_with_epsilon(total, rows_total, 1e-9);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/speed-note", test_speed_note);
  g_test_add_func("/validate/plan-rows", test_plan_rows);
  g_test_add_func("/validate/row-fill", test_row_fill);
  g_test_add_func("/validate/summary-json", test_summary_json);
  g_test_add_func("/validate/copies-against-keep", test_copies_against_keep);
  g_test_add_func("/validate/copies-at-speed", test_copies_at_speed);
  g_test_add_func("/validate/kernels-at-speed", test_kernels_at_speed);
  g_test_add_func("/validate/no-keep", test_no_keep);
  g_test_add_func("/validate/against-keep-paired", test_against_keep_paired);
  g_test_add_func("/validate/chart", test_chart);
  g_test_add_func("/validate/median-interval", test_median_interval);
  g_test_add_func("/validate/taken", test_taken);
  g_test_add_func("/validate/run", test_run);
  int status = g_test_run();
  /* Leave no caches for the leak checker of sanitizer builds (as
   * test-plot does): cairo's, and fontconfig's, called by name. */
  cairo_debug_reset_static_data();
  void (*fc_fini)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "FcFini");
  if (fc_fini != NULL)
    fc_fini();
  return status;
}
