/* Validation: how close the simulator's predictions come to what this
 * machine really does (`rok validate`).
 *
 * rok_validate() plans a model on a hardware profile (ideally one `rok
 * calibrate` measured here) with every baseline strategy and with the
 * planner at several budgets, makes each plan's schedule, runs it for real
 * and sets the measured step time, peak device memory and bytes moved
 * beside the prediction, row by row, with the relative error of each and
 * their median and worst over the rows.
 *
 * How it runs, so that a busy machine shows as noise and not as error:
 * first one run of the first row whose figures are thrown away (the first
 * run of a process builds the kernels and warms the allocator and the page
 * cache: it made the first row tens of percent slow); then `rounds`
 * rounds, each running every row in turn (rok_exec_run: a warm-up step of
 * its own, then `repeat` measured steps), each round from a row further
 * on, so that a slow spell of the machine lands on every row alike instead
 * of on one, and no row always runs first or after the same row. A row's measured
 * step time is the median of its rounds · repeat steps, with a
 * distribution-free confidence interval for that median (order
 * statistics: [x(j), x(n+1-j)] for the largest j whose binomial coverage
 * is at least 95%; with fewer than six steps the widest interval, whose
 * coverage is stated); the error's interval follows from it, and a row is
 * "within noise" when its prediction lies inside the interval. The load
 * average is sampled before every run.
 *
 * What is compared, and why so:
 *  - step time: the median of the measured steps against the schedule's
 *    predicted step, less the optimizer step's predicted time: the executor
 *    has no optimizer kernel (its report says so), so the optimizer is in
 *    neither figure. The rows keep it (predicted_optimizer_s).
 *  - peak memory: the device memory ledger's peak against the simulator's
 *    peak, fixed memory included on both sides (the executor reserves the
 *    optimizer states it does not use, so that both count the same bytes).
 *  - bytes moved: d2h + h2d + SSD writes + SSD reads, measured against
 *    planned (they differ only if the executor did not do what the schedule
 *    said).
 *  - noise: per row, the spread of the measured steps, (max - min) /
 *    median; the summary gives its median and largest over the rows, so a
 *    reader can tell an error from run-to-run variation. The load average
 *    of the machine before and after says whether other work competed.
 * Errors are fractions, (measured - predicted) / predicted, signed in the
 * rows; the summary takes their absolute values.
 *
 * The baselines run under the device's memory (as `rok plan --strategy S`
 * does); the planner at `budgets` budgets spread evenly from the smallest
 * that any plan fits up to (not including) the peak of keeping everything.
 * A baseline that cannot run here (offload and tba without SSDs in the
 * profile) is left out, and the notes say so. */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/calibrate.h"
#include "rok/exec.h"
#include "rok/hw.h"
#include "rok/plan.h"
#include "rok/trace.h"

G_BEGIN_DECLS

/* Offload and tba take tensors of at least this many elements for
 * validation: SSDTrain's floor (ROK_OFFLOAD_MIN_ELEMENTS, 8 Mi elements)
 * is for GPU-sized models; at the size of a model that runs on a small
 * device it would leave nothing to offload. */
#define ROK_VALIDATE_OFFLOAD_MIN_ELEMENTS ((guint64)64 << 10)
#define ROK_VALIDATE_DEFAULT_BUDGETS 3
#define ROK_VALIDATE_DEFAULT_ROUNDS 3
#define ROK_VALIDATE_DEFAULT_REPEAT 2
/* The coverage a row's confidence interval aims at. */
#define ROK_VALIDATE_CI_LEVEL 0.95

/* Where a validation is: round `round` of `rounds` (0 for the warm-up
 * run, which runs before round 1), row `row` of `rows` (running `strategy`
 * at `budget_bytes`), and the executor's progress in it (NULL while
 * planning). */
typedef void (*RokValidateProgressFunc)(guint round, guint rounds, guint row, guint rows, const char *strategy,
                                        guint64 budget_bytes, const RokExecProgress *step, gpointer user_data);

typedef struct {
  guint budgets;                 /* planner rows; 0: none (default ROK_VALIDATE_DEFAULT_BUDGETS) */
  gboolean baselines;            /* a row per baseline strategy (default TRUE) */
  guint64 offload_min_elements;  /* default ROK_VALIDATE_OFFLOAD_MIN_ELEMENTS */
  guint planner_threads;         /* 0: one per processor */
  guint rounds;                  /* each row runs once per round (default ROK_VALIDATE_DEFAULT_ROUNDS) */
  /* dirs, device, seed, ...; repeat is the measured steps of one run
   * (default ROK_VALIDATE_DEFAULT_REPEAT); its progress is not used */
  RokExecOptions exec;
  RokValidateProgressFunc progress;
  gpointer progress_data;
} RokValidateOptions;

/* Defaults as above, with rok_exec_options_init()'s. */
void rok_validate_options_init(RokValidateOptions *options);

/* Where the time of a step goes, predicted and measured, in the median
 * measured step: compute by op kind and action ("linear backward",
 * "dropout recompute"), transfer legs by stream ("d2h", "nvme-write");
 * seconds summed over the actions (an SSD stream's: the time it had a leg
 * moving bytes, each moment once). It tells which part of the model of
 * the machine is off when a step time is. A transfer stream's time moves
 * from step to step more than the step does (its legs wait for kernels
 * whose timing is a race on a CPU device), so a row's stream parts carry
 * the stream's median time over the row's measured steps, as the step
 * time is taken, the confidence interval of that median and whether the
 * prediction lies inside it; NaN and FALSE for compute parts and the sums
 * over the rows. */
typedef struct {
  char *part;
  guint actions;
  double predicted_s, measured_s;
  double median_s, ci_low_s, ci_high_s;
  gboolean within_noise;
  /* A copy stream (d2h, h2d) of a row but keep on a device whose copies
   * run on its kernels' processors (gpu.shared_cpus): its error with
   * keep's taken out, (median / predicted) / (keep's measured step /
   * predicted) - 1. Every part of such a stream is work on those
   * processors (hand-offs, copies, checks, the waits for a kernel's free
   * point), so it runs at the speed keep measured the kernels at (on the
   * development VM, 2026-12-07: keep +26%, the rok rows' h2d streams
   * +24..+43%). NaN otherwise (SSD streams: the disk's speed is not the
   * processors'). */
  double error_against_keep;
  /* A copy stream of a row where validate timed the copies before each
   * round (RokValidation.copy_speed): predicted again on the profile with
   * its copy figures at the speed the copies ran at then (its pcie rates
   * over each way's median ratio, its pcie.latency and host checksum
   * rates, the host's checks of the legs, which go through the same
   * memory, over their mean), and the stream's error against that,
   * median_s / it - 1. The host's copies drift with its memory, which a
   * virtual machine's host moves within minutes (the development VM,
   * 2026-12-07: the copies timed 0-45% slower than a calibration minutes
   * old, the copy streams with them); this is the prediction the profile
   * would give, calibrated as the copies ran. NaN otherwise. */
  double predicted_at_copy_speed_s, error_at_copy_speed;
} RokValidatePart;

/* (measured - predicted) / predicted of a part, measured as its median
 * over the steps where it has one, as a row's step-time error is taken. */
double rok_validate_part_error(const RokValidatePart *part);

typedef struct {
  char *strategy;        /* "keep", ..., or "rok" */
  guint64 budget_bytes;  /* the budget it was planned for */
  /* Step time (seconds): predicted without the optimizer step; measured:
   * the median of the measured steps, their least and largest. */
  double predicted_step_time_s, measured_step_time_s, step_time_error;
  double measured_step_time_min_s, measured_step_time_max_s;
  double noise;                    /* (max - min) / median of the measured steps */
  GArray *step_times_s;            /* double: every measured step, round by round */
  /* The median's confidence interval, its coverage (ROK_VALIDATE_CI_LEVEL
   * or more, less with fewer than six steps), and the step-time error's
   * interval; within_noise: the prediction lies inside the interval. */
  double ci_low_s, ci_high_s, ci_coverage;
  /* Processor time other processes used while a measured step ran, over
   * the processors (the median over the steps; negative: unknown): how much
   * longer another's work can have made the step. The error's interval
   * reaches that much below ci_low_s (to a step of 0 s at most), so that
   * a busy machine's slowdown counts as noise rather than as error; on an
   * idle machine it is ~0. */
  double taken_s;
  double error_ci_low, error_ci_high;
  gboolean within_noise;
  /* The step-time error with the keep row's taken out: (measured /
   * predicted) / (keep's measured / predicted) - 1, the measured ratio
   * paired by round (each round's median step over keep's in the same
   * round, the median of those), so drift between rounds cancels. The
   * keep row runs the kernels alone, so its error is the machine's speed
   * now against its calibration (and the compute model every row shares);
   * what is left is the error in what the row adds: recomputation,
   * copies, their waits.
   * NaN for the keep row itself and where there is none. */
  double error_against_keep;
  /* The step predicted again at the speed the machine ran at in each
   * round (validate-speed.c): the profile's kernels as fast as every op of
   * the model ran when timed alone before each row's run in the round (the
   * median over the round; RokValidation.kernel_speed, each op kind by its
   * own ratio) and, where they were timed, its copies as fast as the
   * copies ran before the round (copy_speed): one prediction per round
   * (predicted_at_speed_by_round_s, NULL where the kernels were not timed),
   * predicted_at_speed_s their median. error_at_speed: each round's median
   * step over that round's prediction, the median over the rounds (over
   * all steps against predicted_at_speed_s where a round was not timed).
   * The profile's prediction stays the one judged: this one says what is
   * left once the machine's drift since its calibration is taken out by a
   * measurement that is not the rows', where keep's error takes it out
   * with keep's own noise. NaN where the kernels were not timed. */
  GArray *predicted_at_speed_by_round_s;
  double predicted_at_speed_s, error_at_speed;
  /* The kernels' pass timed right before the row's run in each measured
   * round: the GEMM ops' [0] and the other ops' [1] time over the
   * profile's, as kernel_speed has a round's median (double[2] per round;
   * NaN: no such op; NULL where the kernels were not timed). What the
   * machine's speed did within a round, row by row. */
  GArray *kernel_speed_before;
  double load_min, load_max; /* 1-minute load average before its runs; negative: unknown */
  double predicted_optimizer_s;    /* left out of the prediction (no kernel here) */
  guint64 predicted_peak_bytes, measured_peak_bytes;
  double peak_error;
  guint64 predicted_activation_peak_bytes, measured_activation_peak_bytes;
  guint64 predicted_moved_bytes, measured_moved_bytes;
  double moved_error;              /* 0 when both are 0 */
  GArray *parts;                   /* RokValidatePart, compute kinds in op-kind order, then streams */
  RokExecReport *report;           /* the report of its run whose median step is nearest the row's */
  char *schedule;                  /* its rok-schedule/2 text */
} RokValidateRow;

typedef struct {
  char *model, *hw, *device;
  guint rounds, repeat;
  GPtrArray *rows; /* RokValidateRow *, baselines first, then the planner by budget */
  /* Over the rows, absolute values of the errors. */
  double median_step_time_error, max_step_time_error;
  double median_peak_error, max_peak_error;
  double max_moved_error;
  double median_noise, max_noise;
  /* Over the rows but keep, absolute values of error_against_keep (NaN:
   * no keep row). */
  double median_error_against_keep, max_error_against_keep;
  guint rows_within_noise; /* rows whose prediction lies inside their measured interval */
  double median_taken_share; /* of the rows' taken_s over their measured step; negative: unknown */
  double calibrated_busy;    /* the profile's: what others used while it was measured (0: none known) */
  GArray *parts; /* RokValidatePart summed over the rows, in the rows' order */
  /* The rows' transfer streams: how many, how many whose prediction lies
   * inside their interval, and their errors' median and largest
   * (absolute; NaN without any). */
  guint streams, streams_within_noise;
  double median_stream_error, max_stream_error;
  /* Over the copy streams that have an error_against_keep, its absolute
   * value's median and largest (NaN without any). */
  double median_copy_error_against_keep, max_copy_error_against_keep;
  /* Over the copy streams that have an error_at_copy_speed, its absolute
   * value's median and largest (NaN without any). */
  double median_copy_error_at_copy_speed, max_copy_error_at_copy_speed;
  /* Over the rows with an error_at_speed, its absolute value's median and
   * largest (NaN without any). */
  double median_step_time_error_at_speed, max_step_time_error_at_speed;
  gboolean copies_on_cpus; /* the profile's gpu.shared_cpus > 0 */
  /* Where the profile has SSDs, each directory's disk timed before every
   * measured round in bursts like the SSD legs (rok_calib_disk_speed):
   * their bursts' time over the profile's leg model, writes
   * [0] and reads [1], the slowest directory's each time, over the rounds
   * (n 0: not timed).
   * How far the disk has moved since its calibration, beside the SSD
   * streams' errors; not taken out of them, as keep's error is of the
   * copies': on the development VM, 2026-12-07, it took the SSD streams'
   * median error from 6.9% and 4.3% to 4.3% and 2.6% in two runs of
   * validate-gpt and from 8.5% to 14.2% in one of the LLaMA-shaped model,
   * whose writes follow 5-40 ms idle (the wake), where these bursts follow
   * 1 ms; and a run whose SSD streams came out 18-39% long had the
   * disk's medians within 9% of its calibration: the processors, not the
   * disk, slow. */
  RokCalibStat disk_speed[2];
  /* On a CPU device (gpu.shared_cpus), where a row copies, its copies
   * timed before every measured round as rok calibrate times their leg
   * rates (rok_calib_copy_speed): their time over what the profile's pcie
   * figures give, d2h [0] and h2d [1], over the rounds (n 0: not timed).
   * How far the copies run from what the simulator charges one (the
   * host's drift since the calibration, or that model's own miss), beside
   * the copy streams' errors; not taken out of them, but predicted with
   * (RokValidatePart.predicted_at_copy_speed_s). Where the profile knows
   * how fast the memory went while its copies were timed against its ops
   * (calibrated_copies_memory_speed) and the kernels were timed
   * (kernel_speed), carried over from them instead, no copy timed:
   * each round's other ops' figure times that, both ways, and
   * copies_memory_speed that figure of the profile's (0: the copies
   * timed). */
  RokCalibStat copy_speed[2];
  double copies_memory_speed;
  /* Every op of the model timed alone before each row's run in the
   * measured rounds as rok calibrate times the op rates
   * (rok_calib_op_timer_pass, one pass), launch aside: the GEMM ops' [0]
   * and the other ops' [1] time over what the profile gives them, each
   * round's median over its passes, over the rounds (n 0: not timed). How
   * far the kernels run from the profile now (the drift keep's error
   * holds, measured apart from the rows), predicted with
   * (RokValidateRow.predicted_at_speed_s). */
  RokCalibStat kernel_speed[2];
  double load_before[3], load_after[3]; /* the load average (1, 5, 15 minutes); negative: unknown */
  guint cpus;                           /* processors online */
  GPtrArray *notes;                     /* char *: rows left out and why, what was compared how */
} RokValidation;

void rok_validation_free(RokValidation *validation);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokValidation, rok_validation_free)

/* Plan, run and compare, as described above. A profile with SSDs needs
 * options->exec.dirs (ROK_ERROR_USAGE otherwise). Errors: those of the planner
 * (ROK_ERROR_NO_FIT when not even the smallest plan fits the device), of
 * the schedules and of the executor (ROK_ERROR_DEVICE, ROK_ERROR_IO,
 * ROK_ERROR_INTEGRITY, ROK_ERROR_CANCELLED), prefixed with the row. */
RokValidation *rok_validate(const RokTrace *trace, const RokHw *hw, const RokValidateOptions *options,
                            GError **error);

/* The first keep row (the kernels alone, the rows' reference for
 * error_against_keep); NULL where there is none. */
const RokValidateRow *rok_validation_keep_row(const RokValidation *validation);

/* Beyond this either way, and outside its interval, keep's error says
 * the machine runs its kernels at another speed than when it was
 * calibrated (rok_validation_speed_note). */
#define ROK_VALIDATE_SPEED_ERROR 0.10

/* A note where the keep row (the kernels alone) missed its prediction by
 * more than ROK_VALIDATE_SPEED_ERROR and outside its interval: the
 * machine's speed now against its calibration, which every row's error
 * carries and error_against_keep takes out; what to do about it. NULL
 * otherwise (no keep row, or keep within either). */
char *rok_validation_speed_note(const RokValidation *validation);

/* The summary of `rows` (fills the medians and maxima and the parts summed
 * over the rows): for callers that build rows themselves, e.g. tests. */
void rok_validation_summarize(RokValidation *validation);

/* {format: "rok-validation/1", model, hw, device, rounds, repeat, cpus,
 * load_average {before, after}, rows [{strategy, budget_bytes,
 * predicted_step_time_s, measured_step_time_s, step_time_error,
 * measured_step_time_min_s, measured_step_time_max_s, noise,
 * step_times_s, ci_low_s, ci_high_s, ci_coverage, taken_s, error_ci_low,
 * error_ci_high, within_noise, error_against_keep (null for keep, or
 * without a keep row), load_min, load_max,
 * predicted_optimizer_s, predicted_peak_bytes, measured_peak_bytes,
 * peak_error, predicted_activation_peak_bytes,
 * measured_activation_peak_bytes, predicted_moved_bytes,
 * measured_moved_bytes, moved_error, integrity_failures, parts [{part,
 * actions, predicted_s, measured_s, and for a transfer stream median_s,
 * ci_low_s, ci_high_s, within_noise, error_against_keep,
 * predicted_at_copy_speed_s, error_at_copy_speed}]}], parts (over all
 * rows),
 * median_step_time_error, max_step_time_error, median_peak_error,
 * max_peak_error, max_moved_error, median_noise, max_noise,
 * median_error_against_keep, max_error_against_keep (null without a keep
 * row), rows_within_noise, streams, streams_within_noise,
 * median_stream_error, max_stream_error (null without streams),
 * median_copy_error_against_keep, max_copy_error_against_keep,
 * median_copy_error_at_copy_speed, max_copy_error_at_copy_speed (null
 * without such streams), disk_speed, copy_speed (null: not timed),
 * median_taken_share, calibrated_busy, notes}. */
json_object *rok_validation_to_json(const RokValidation *validation);

/* The chart: measured against predicted step time, one labelled point per
 * row, the line where they are equal and a ±10% band. PNG, SVG or PDF by
 * the file's extension (rok/plot.h). */
gboolean rok_validation_save_chart(const RokValidation *validation, const char *path, GError **error);

G_END_DECLS
