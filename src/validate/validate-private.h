/* Private to src/validate: the parts of rok_validate().
 *
 *   validate.c        options, the result's life, planning the rows
 *   validate-run.c    each row's schedule run and compared; rok_validate
 *   validate-parts.c  where the time of a step goes, by op kind and stream
 *   validate-copies.c the copy streams predicted at the copies' speed then
 *   validate-json.c   the summary over the rows, rok-validation/1
 *   validate-chart.c  measured against predicted step time */
#pragma once

#include "rok/validate.h"

/* A row to run: a strategy's plan for a budget. */
typedef struct {
  RokStrategy strategy; /* a baseline or ROK_STRATEGY_ROK */
  guint64 budget;
  RokStepPlan *plan;
} RokValidatePlanned;

RokValidation *validate_new(const RokTrace *trace, const RokHw *hw);
/* The rows in order (RokValidatePlanned *), notes for those left out. */
GPtrArray *validate_plan_rows(const RokTrace *trace, const RokHw *hw, const RokValidateOptions *options,
                                  RokValidation *validation, GError **error);
/* A row's figures from its run's report and schedule. */
void validate_row_fill(RokValidateRow *row, const RokSchedule *schedule);
/* (measured - predicted) / predicted; 0 when both are 0, +inf when only
 * the prediction is. */
double validate_relative(double measured, double predicted);
/* The distribution-free confidence interval of the median of `n` sorted
 * values (rok/validate.h) and its coverage. */
void validate_median_interval(const double *sorted, guint n, double *low, double *high, double *coverage);
/* A row's taken_s (the median of `n` per-step figures, sorted in place)
 * and, from it, ci_low_s/ci_high_s and the profile's calibrated_busy, its
 * error's interval and within_noise. */
void validate_taken(RokValidateRow *row, double *taken_s, guint n, double calibrated_busy);

/* validate-parts.c: a GArray of RokValidatePart (freeing its names). */
GArray *validate_parts_new(void);
/* The parts of a row's median step, from its report's timeline. */
void validate_parts_fill(GArray *parts, const RokExecReport *report, const RokSchedule *schedule);
/* The transfer stream a part is ("d2h", ...); ROK_STREAM_COUNT for a
 * compute part. */
RokStream validate_part_stream(const RokValidatePart *part);
/* Whether a part is a copy stream (d2h, h2d) of a row, measured over its
 * steps (median_s). */
gboolean validate_part_copy_measured(const RokValidatePart *part);
/* Each transfer stream part's interval over every measured step of REPORTS
 * (RokExecReport *, the row's runs) and its within_noise. */
void validate_parts_spread(GArray *parts, const GPtrArray *reports);
/* Add `from` into `into`, part by part (new parts at the end). */
void validate_parts_add(GArray *into, const GArray *from);
/* A copy stream's (d2h, h2d) predicted time in SCHEDULE, each moment
 * once, as its part counts it from the spans of a run of that schedule
 * (their predicted times are its actions'). */
double validate_schedule_copy_s(const RokSchedule *schedule, RokStream stream);

/* validate-copies.c: a copy of HW with its copies D2H and H2D times as
 * slow as it says (the ratios rok_calib_copy_speed gives): pcie rates
 * over them, its latency and the host's checks over their mean. */
RokHw *validate_hw_at_copy_speed(const RokHw *hw, double d2h, double h2d);
/* Where the copies were timed (v->copy_speed), each row's copy streams
 * predicted again at their median speed (RokValidatePart.
 * predicted_at_copy_speed_s): PLANNED are the rows' plans, in v->rows'
 * order. Errors: the simulator's. */
gboolean validate_copies_at_speed(RokValidation *v, const RokTrace *trace, const RokHw *hw, const GPtrArray *planned,
                                  GError **error);
