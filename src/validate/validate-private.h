/* Private to src/validate: the parts of rok_validate().
 *
 *   validate.c        options, the result's life, planning the rows
 *   validate-run.c    each row's schedule run and compared; rok_validate
 *   validate-parts.c  where the time of a step goes, by op kind and stream
 *   validate-speed.c  the kernels timed before each row's run; the steps and the
 *                     copy streams predicted again at the speed the machine ran at
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
/* A schedule's predicted step without its optimizer step, to the end of
 * the last action that ends a step (rok_exec_action_ends_step), as the
 * executor's report counts it. */
double validate_schedule_step_s(const RokSchedule *schedule);
/* Each transfer stream part's interval over every measured step of REPORTS
 * (RokExecReport *, the row's runs) and its within_noise. */
void validate_parts_spread(GArray *parts, const GPtrArray *reports);
/* Add `from` into `into`, part by part (new parts at the end). */
void validate_parts_add(GArray *into, const GArray *from);
/* A copy stream's (d2h, h2d) predicted time in SCHEDULE, each moment
 * once, as its part counts it from the spans of a run of that schedule
 * (their predicted times are its actions'). */
double validate_schedule_copy_s(const RokSchedule *schedule, RokStream stream);

/* validate-speed.c: a copy of HW with its copies D2H and H2D times as
 * slow as it says (the ratios rok_calib_copy_speed gives): pcie rates
 * over them, its latency and the host's checks over their mean. */
RokHw *validate_hw_at_copy_speed(const RokHw *hw, double d2h, double h2d);
/* Where the copies were timed (v->copy_speed), each row's copy streams
 * predicted again at their median speed (RokValidatePart.
 * predicted_at_copy_speed_s): PLANNED are the rows' plans, in v->rows'
 * order. Errors: the simulator's. */
gboolean validate_copies_at_speed(RokValidation *v, const RokTrace *trace, const RokHw *hw, const GPtrArray *planned,
                                  GError **error);

/* The kernels timed before each row's run: every op of the trace run
 * alone (rok_calib_op_timer_pass), each op kind's time in each direction
 * over what the profile predicts for it, the median over a round's
 * passes. */
typedef struct _ValidateKernelSpeed ValidateKernelSpeed;
/* NULL (ROK_ERROR_*) where the simulator refuses TRACE on HW. */
ValidateKernelSpeed *validate_kernel_speed_new(const RokTrace *trace, const RokHw *hw, GError **error);
void validate_kernel_speed_free(ValidateKernelSpeed *speed);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ValidateKernelSpeed, validate_kernel_speed_free)
/* The trace's ops made ready on DEVICE with BESIDE bytes left for the
 * rows' runs (rok_calib_op_timer_new, whose errors these are), and let
 * go. */
gboolean validate_kernel_speed_open(ValidateKernelSpeed *speed, gint device, guint64 beside, GError **error);
void validate_kernel_speed_close(ValidateKernelSpeed *speed);
/* One pass timed (validate_kernel_speed_add), its GEMM ops' and other
 * ops' ratio in PASS (NaN: none such); errors: rok_calib_op_timer_pass's. */
gboolean validate_kernel_speed_time(ValidateKernelSpeed *speed, double pass[2], GError **error);
/* One pass's times, SECONDS as rok_calib_op_timer_pass gives them: each
 * op kind's (and the GEMM ops' and the others') time, launch aside, over
 * the profile's, into the round under way. */
void validate_kernel_speed_add(ValidateKernelSpeed *speed, const double *seconds);
/* The round under way ended: each ratio's median over its passes (none:
 * nothing). */
void validate_kernel_speed_end_round(ValidateKernelSpeed *speed);
/* The GEMM ops' and the other ops' times over their prediction, over the
 * rounds timed ([0], [1]; n 0: none). */
void validate_kernel_speed_stat(const ValidateKernelSpeed *speed, RokCalibStat stat[2]);
/* The copies' speed each round timed, carried over from the kernels':
 * the other ops' figure times MEMORY_SPEED (the profile's
 * calibrated_copies_memory_speed: a copy leg is a memcpy and a check
 * through the memory those ops stream through), appended to COPIES[0]
 * (d2h) and [1] (h2d) as time_copies would append the copy probe's. */
void validate_kernel_speed_copies(const ValidateKernelSpeed *speed, double memory_speed, GArray *copies[2]);
/* A copy of HW with its kernels as fast as SPEED timed them in its
 * ROUND-th timing (another ROUND: the median over them): each op kind's
 * rates, and its timed GEMM ops, over that kind's ratio in each direction
 * (a dropout's rebuild its forward's; a kind not timed, its class's); the
 * GEMM peak and the memory's bandwidth, which give the time of a kind
 * with neither, and the device's checksums over the GEMM ops' or the
 * other ops' ratio. */
RokHw *validate_hw_at_kernel_speed(const RokHw *hw, const ValidateKernelSpeed *speed, guint round);
/* Where the kernels were timed (SPEED not NULL, timed at least once), each
 * row's step predicted again at the speed the machine ran at before each
 * round (RokValidateRow.predicted_at_speed_by_round_s and its median): the
 * kernels at theirs, the copies at COPIES' (the copies' d2h and h2d times
 * over the profile's each round, as v->copy_speed has their median; empty:
 * not timed). PLANNED as validate_copies_at_speed's. */
gboolean validate_steps_at_speed(RokValidation *v, const RokTrace *trace, const RokHw *hw, const GPtrArray *planned,
                                 const ValidateKernelSpeed *speed, GArray *const copies[2], GError **error);
