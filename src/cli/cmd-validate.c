/* rok validate: plan a model on a measured profile, run every plan for
 * real, and say how close the predictions came. */
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "rok/charts.h"
#include "cli.h"
#include "rok/storage.h"
#include "rok/core.h"
#include "rok/validate.h"

/* The bundled model sized for a small device (configs/models). */
#define DEFAULT_MODEL "validate-gpt"

typedef struct {
  char *hw, *output, *io;
  char **dirs;
  gint device, repeat, rounds, budgets;
  gint64 seed, offload_floor;
  gboolean no_baselines;
} Options;

static void options_clear(Options *o) {
  g_free(o->hw);
  g_free(o->output);
  g_free(o->io);
  g_strfreev(o->dirs);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

static gboolean fill_options(const Options *o, RokValidateOptions *vo, GError **error) {
  rok_validate_options_init(vo);
  const char *bad = o->repeat < 1          ? "--repeat must be at least 1"
                    : o->rounds < 1        ? "--rounds must be at least 1"
                    : o->rounds > 1000     ? "--rounds must be at most 1000"
                    : o->repeat > 1000     ? "--repeat must be at most 1000"
                    : o->budgets < 0       ? "--budgets must be 0 or more"
                    : o->budgets > 64      ? "--budgets must be at most 64"
                    : o->seed < 0          ? "--seed must be 0 or more"
                    : o->offload_floor < 1 ? "--offload-floor must be at least 1 element"
                    : o->no_baselines && o->budgets == 0 ? "--no-baselines with --budgets 0 leaves nothing to run"
                                                         : NULL;
  if (bad != NULL) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, bad);
    return FALSE;
  }
  if (!cli_check_range("repeat", o->repeat, 1, ROK_EXEC_MAX_REPEAT, error) ||
      !cli_check_range("device", o->device, 0, G_MAXINT, error))
    return FALSE;
  vo->budgets = (guint)o->budgets;
  vo->baselines = !o->no_baselines;
  vo->offload_min_elements = (guint64)o->offload_floor;
  vo->exec.dirs = (const char *const *)o->dirs;
  vo->exec.device = o->device == CLI_UNSET ? -1 : o->device;
  vo->exec.repeat = (guint)o->repeat;
  vo->rounds = (guint)o->rounds;
  vo->exec.seed = (guint64)o->seed;
  vo->exec.backend = o->io;
  return TRUE;
}

/* ---- progress and signals ---- */

static void progress(guint round, guint rounds, guint row, guint rows, const char *strategy, guint64 budget,
                     const RokExecProgress *step, gpointer data) {
  (void)data;
  g_autofree char *size = rok_units_format_size(budget);
  if (round == 0)
    printf("\r\033[Kwarm-up run, %s at %s: ", strategy, size);
  else
    printf("\r\033[Kround %u of %u, row %u of %u, %s at %s: ", round, rounds, row + 1, rows, strategy, size);
  if (step == NULL)
    printf("starting");
  else if (step->step == 0)
    printf("warm-up step, %u of %u actions", step->done, step->total);
  else
    printf("step %u of %u, %u of %u actions", step->step, step->steps - 1, step->done, step->total);
  fflush(stdout);
}

static void on_signal(int signo, gpointer user_data) {
  rok_exec_cancel_trigger(user_data, signo);
  cli_stop_within_a_second("validate", signo);
}

/* ---- the table ---- */

static char *percent(double fraction) {
  return isfinite(fraction) ? g_strdup_printf("%+.1f%%", 100 * fraction) : g_strdup("n/a");
}

static void print_row(const RokValidateRow *row) {
  g_autofree char *budget = rok_units_format_size(row->budget_bytes);
  g_autofree char *pt = rok_units_format_time(row->predicted_step_time_s);
  g_autofree char *mt = rok_units_format_time(row->measured_step_time_s);
  g_autofree char *te = percent(row->step_time_error), *lo = percent(row->error_ci_low),
                  *hi = percent(row->error_ci_high);
  g_autofree char *interval = g_strdup_printf("%s..%s%s", lo, hi, row->within_noise ? " *" : "");
  g_autofree char *pp = rok_units_format_size(row->predicted_peak_bytes);
  g_autofree char *mp = rok_units_format_size(row->measured_peak_bytes), *pe = percent(row->peak_error);
  g_autofree char *moved = rok_units_format_size(row->measured_moved_bytes), *me = percent(row->moved_error);
  printf("  %-10s %10s  %10s %10s %7s %-19s  %10s %10s %7s  %10s %7s\n", row->strategy, budget, pt, mt, te, interval, pp,
         mp, pe, moved, row->predicted_moved_bytes + row->measured_moved_bytes > 0 ? me : "");
}

static void print_load(const RokValidation *v) {
  if (v->load_before[0] < 0)
    return;
  printf("Load average %.2f before, %.2f after, on %u processors.\n", v->load_before[0], v->load_after[0], v->cpus);
}

static double step_error(const RokValidateRow *row) {
  return row->step_time_error;
}
static double against_keep(const RokValidateRow *row) {
  return row->error_against_keep;
}
static double at_speed(const RokValidateRow *row) {
  return row->error_at_speed;
}

/* The row whose step-time error as ERROR gives it is furthest from 0;
 * NULL where none has one. */
static const RokValidateRow *worst_row(const RokValidation *v, double (*error)(const RokValidateRow *)) {
  const RokValidateRow *worst = NULL;
  double furthest = -1;
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    double e = fabs(error(row));
    if (!isnan(e) && e > furthest) {
      worst = row;
      furthest = e;
    }
  }
  return worst;
}

/* Where a row stands: "offload at 5.03 GiB" ("-" for none). */
static char *row_place(const RokValidateRow *row) {
  if (row == NULL)
    return g_strdup("-");
  g_autofree char *budget = rok_units_format_size(row->budget_bytes);
  return g_strdup_printf("%s at %s", row->strategy, budget);
}

static int by_gap(gconstpointer a, gconstpointer b) {
  const RokValidatePart *x = *(RokValidatePart *const *)a, *y = *(RokValidatePart *const *)b;
  double gx = fabs(x->measured_s - x->predicted_s), gy = fabs(y->measured_s - y->predicted_s);
  return gx < gy ? 1 : gx > gy ? -1 : 0;
}

/* The parts of the steps whose prediction is furthest off, over all rows. */
static void print_parts(const RokValidation *v) {
  g_autoptr(GPtrArray) order = g_ptr_array_new();
  for (guint i = 0; i < v->parts->len; i++)
    g_ptr_array_add(order, &g_array_index(v->parts, RokValidatePart, i));
  g_ptr_array_sort(order, by_gap);
  if (order->len == 0)
    return;
  printf("Furthest off, over the rows' median steps (predicted, measured, their difference):\n");
  for (guint i = 0; i < MIN(order->len, 6); i++) {
    const RokValidatePart *p = g_ptr_array_index(order, i);
    g_autofree char *pt = rok_units_format_time(p->predicted_s), *mt = rok_units_format_time(p->measured_s);
    g_autofree char *gap = rok_units_format_time(fabs(p->measured_s - p->predicted_s));
    printf("  %-24s %10s %10s  %s%s (%u actions)\n", p->part, pt, mt, p->measured_s >= p->predicted_s ? "+" : "-",
           gap, p->actions);
  }
}

/* "+3.0% (d2h, -1.0..+5.0%) and ..." of a speed against the profile timed
 * before each round (NULL: not timed). */
static char *speeds(const RokCalibStat speed[2], const char *const names[2]) {
  if (speed[0].n == 0)
    return NULL;
  return g_strdup_printf("%+.1f%% (%s, %+.1f..%+.1f%%) and %+.1f%% (%s, %+.1f..%+.1f%%)", 100 * (speed[0].median - 1),
                         names[0], 100 * (speed[0].min - 1), 100 * (speed[0].max - 1), 100 * (speed[1].median - 1),
                         names[1], 100 * (speed[1].min - 1), 100 * (speed[1].max - 1));
}

/* Each row's transfer streams (the parts with an interval), the worst
 * first named in the summary line. */
static void print_streams(const RokValidation *v) {
  if (v->streams == 0)
    return;
  const RokValidateRow *worst_row = NULL;
  const RokValidatePart *worst = NULL;
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    for (guint k = 0; k < row->parts->len; k++) {
      const RokValidatePart *p = &g_array_index(row->parts, RokValidatePart, k);
      if (isnan(p->ci_low_s))
        continue;
      if (worst == NULL || fabs(rok_validate_part_error(p)) > fabs(rok_validate_part_error(worst))) {
        worst = p;
        worst_row = row;
      }
    }
  }
  g_autofree char *where = row_place(worst_row);
  gboolean by_keep = !isnan(v->median_copy_error_against_keep), at_speed = !isnan(v->median_copy_error_at_copy_speed);
  printf("Transfer streams, the time each had a leg running (predicted, the median over the row's steps, error, "
         "the median's interval%s%s%s%s): error median %.1f%%, worst %.1f%% (%s, %s); * marks %u of %u predictions "
         "inside their interval.\n",
         by_keep || at_speed ? "; a copy stream's error" : "", by_keep ? " against keep" : "",
         by_keep && at_speed ? " and" : "", at_speed ? " against its prediction at the copies' speed, below" : "",
         100 * v->median_stream_error, 100 * v->max_stream_error, worst->part, where, v->streams_within_noise,
         v->streams);
  for (guint i = 0; i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    g_autofree char *budget = rok_units_format_size(row->budget_bytes);
    gboolean first = TRUE;
    for (guint k = 0; k < row->parts->len; k++) {
      const RokValidatePart *p = &g_array_index(row->parts, RokValidatePart, k);
      if (isnan(p->ci_low_s))
        continue;
      g_autofree char *pt = rok_units_format_time(p->predicted_s), *mt = rok_units_format_time(p->median_s);
      g_autofree char *lo = rok_units_format_time(p->ci_low_s), *hi = rok_units_format_time(p->ci_high_s);
      g_autofree char *e = percent(rok_validate_part_error(p));
      g_autofree char *k = isnan(p->error_against_keep) ? g_strdup("") : percent(p->error_against_keep);
      g_autofree char *c = isnan(p->error_at_copy_speed) ? g_strdup("") : percent(p->error_at_copy_speed);
      printf("  %-10s %10s  %-10s %10s %10s %7s  %s..%s%s%s%s%s%s\n", first ? row->strategy : "",
             first ? budget : "", p->part, pt, mt, e, lo, hi, p->within_noise ? " *" : "", *k ? "  keep " : "", k,
             *c ? "  copies " : "", c);
      first = FALSE;
    }
  }
  const RokValidateRow *keep = rok_validation_keep_row(v);
  if (keep != NULL && !isnan(v->median_copy_error_against_keep))
    printf("Copy streams against keep (on this device their copies, hand-offs and checks run on the processors that "
           "run the kernels, at the speed keep measured: each one's error with keep's, %+.1f%%, taken out): median "
           "%.1f%%, worst %.1f%%.\n",
           100 * keep->step_time_error, 100 * v->median_copy_error_against_keep,
           100 * v->max_copy_error_against_keep);
  if (!isnan(v->median_copy_error_at_copy_speed))
    printf("Copy streams at the copies' speed (each predicted again with the profile's copy figures as fast as the "
           "copies went in the rounds, below: its pcie rates and latency and the host's checks of the legs, which "
           "go through the same memory): median %.1f%%, worst %.1f%%.\n",
           100 * v->median_copy_error_at_copy_speed, 100 * v->max_copy_error_at_copy_speed);
  static const char *const ways[2] = {"d2h", "h2d"}, *disks[2] = {"writes", "reads"};
  g_autofree char *copied = speeds(v->copy_speed, ways), *disked = speeds(v->disk_speed, disks);
  if (copied != NULL && v->copies_memory_speed > 0)
    printf("The copies, carried over from the kernels (each round's other ops' figure times how fast the memory "
           "went while the calibration timed its copies against its ops, %.3f: a copy is a memcpy and a check "
           "through the memory those ops stream through), took %s against what the profile's pcie.latency and "
           "rates give them, which the copy streams' errors at the copies' speed take out.\n",
           v->copies_memory_speed, copied);
  else if (copied != NULL)
    printf("The copies, timed before each round as rok calibrate times their rates (256 KiB to 1 MiB, 1 ms apart, "
           "nothing else running), took %s against what the profile's pcie.latency and rates give them: how far "
           "the host's copies run now from what the simulator charges a copy (the machine's drift since the "
           "calibration, or that model's own miss), which the copy streams' errors hold and their errors at the "
           "copies' speed take out.\n",
           copied);
  if (disked != NULL)
    printf("The disks, timed before each round in bursts like the SSD legs after 1 ms idle, took %s against the "
           "profile's leg model: how far they have moved since their calibration (a virtual disk's host drifts; the "
           "SSD streams' errors hold that too).\n",
           disked);
}

static void print_table(const RokValidation *v, const char *dir) {
  printf("%s on %s (%s): %u rows in %u interleaved rounds, each run a warm-up step and %u measured ones.\n",
         v->model, v->hw, v->device ? v->device : "?", v->rows->len, v->rounds, v->repeat);
  print_load(v);
  printf("\n  %-10s %10s  %10s %10s %7s %-19s  %10s %10s %7s  %10s %7s\n", "strategy", "budget", "predicted",
         "measured", "error", "interval", "peak pred.", "measured", "error", "moved", "error");
  for (guint i = 0; i < v->rows->len; i++)
    print_row(g_ptr_array_index(v->rows, i));
  g_autofree char *where = row_place(worst_row(v, step_error));
  printf("\nStep time error: median %.1f%%, worst %.1f%% (%s). Peak memory error: median %.2f%%, worst "
         "%.2f%%.\n",
         100 * v->median_step_time_error, 100 * v->max_step_time_error, where, 100 * v->median_peak_error,
         100 * v->max_peak_error);
  const RokValidateRow *keep = rok_validation_keep_row(v);
  if (keep != NULL && !isnan(v->median_error_against_keep)) {
    g_autofree char *against = row_place(worst_row(v, against_keep));
    printf("Against keep (keep's error, %+.1f%%, taken out of each row round by round: how fast the machine runs "
           "its kernels now against its calibration, with keep's own noise): median %.1f%%, worst %.1f%% (%s), the "
           "error in what the rows add to keep.\n",
           100 * keep->step_time_error, 100 * v->median_error_against_keep, 100 * v->max_error_against_keep,
           against);
  }
  if (!isnan(v->median_step_time_error_at_speed)) {
    g_autofree char *worst = row_place(worst_row(v, at_speed));
    static const char *const kinds[2] = {"GEMM ops", "the rest"};
    g_autofree char *kernels = speeds(v->kernel_speed, kinds);
    g_autofree char *keep_at = keep != NULL && !isnan(keep->error_at_speed) ? percent(keep->error_at_speed) : NULL;
    const char *copies = v->copy_speed[0].n > 0 ? "at theirs, below" : "as the profile has them";
    printf("At the machine's speed (each row predicted again with the profile's kernels as fast as the model's ops "
           "ran alone before each row's run, %s against it, each op kind by its own, and the copies %s): median "
           "%.1f%%, worst %.1f%% (%s)%s%s: the error left once a measurement apart from the rows takes out the "
           "machine's drift since the calibration.\n",
           kernels ? kernels : "(no GEMM timed)", copies, 100 * v->median_step_time_error_at_speed,
           100 * v->max_step_time_error_at_speed, worst, keep_at ? "; keep " : "", keep_at ? keep_at : "");
  }
  printf("Bytes moved: %s. Noise (spread of a row's measured steps, (max - min) / median): median %.1f%%, largest "
         "%.1f%%.\n",
         v->max_moved_error == 0 ? "as planned in every row" : "NOT as planned", 100 * v->median_noise,
         100 * v->max_noise);
  double coverage = v->rows->len ? ((const RokValidateRow *)g_ptr_array_index(v->rows, 0))->ci_coverage : 0;
  printf("Interval: where the error would lie with the measured median's %.0f%% confidence interval (order "
         "statistics over the row's %u steps); * marks %u of %u rows whose prediction lies inside it, within the "
         "noise of this machine.\n",
         100 * coverage, v->rounds * v->repeat, v->rows_within_noise, v->rows->len);
  if (v->median_taken_share >= 0)
    printf("Other processes used %.1f%% of the processors' time while a step ran (median over the rows); each "
           "interval reaches that much further down (to a step of 0 s at most), the most their work can have slowed "
           "the step.\n",
           100 * v->median_taken_share);
  print_streams(v);
  print_parts(v);
  for (guint i = 0; i < v->notes->len; i++)
    printf("%s%s\n", i == 0 ? "Notes:\n  - " : "  - ", (const char *)g_ptr_array_index(v->notes, i));
  if (dir != NULL)
    printf("Wrote validation.json, validation.png, validation.svg and each row's schedule, report and timeline "
           "(measured beside predicted, for Perfetto) in %s\n",
           dir);
}

/* ---- files ---- */

static gboolean write_text(const char *dir, const char *name, const char *text, GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  return rok_file_write(path, text, strlen(text), error);
}

static gboolean write_folder(const RokValidation *v, const char *dir, GError **error) {
  json_object *doc = rok_validation_to_json(v);
  g_autofree char *path = g_build_filename(dir, "validation.json", NULL);
  gboolean ok = rok_json_write_file(doc, path, error);
  json_object_put(doc);
  for (guint i = 0; ok && i < v->rows->len; i++) {
    const RokValidateRow *row = g_ptr_array_index(v->rows, i);
    g_autofree char *schedule = g_strdup_printf("schedule-%02u-%s.json", i + 1, row->strategy);
    g_autofree char *report = g_strdup_printf("report-%02u-%s.json", i + 1, row->strategy);
    g_autofree char *report_path = g_build_filename(dir, report, NULL);
    g_autofree char *timeline = g_strdup_printf("timeline-%02u-%s.json", i + 1, row->strategy);
    g_autofree char *timeline_path = g_build_filename(dir, timeline, NULL);
    ok = write_text(dir, schedule, row->schedule, error) && rok_exec_report_save(row->report, report_path, error) &&
         rok_exec_report_timeline_save(row->report, timeline_path, error);
  }
  const char *charts[] = {"validation.png", "validation.svg"};
  for (guint i = 0; ok && i < G_N_ELEMENTS(charts); i++) {
    g_autofree char *chart = g_build_filename(dir, charts[i], NULL);
    ok = rok_validation_save_chart(v, chart, error);
  }
  rok_charts_release(); /* the charts are drawn; nothing else draws */
  return ok;
}

/* All or nothing in DIR (rok_output_dir_begin). */
static gboolean write_files(const RokValidation *v, const char *dir, GError **error) {
  RokOutputDir *folder = rok_output_dir_begin(dir, error);
  if (folder == NULL)
    return FALSE;
  if (!write_folder(v, rok_output_dir_path(folder), error)) {
    rok_output_dir_discard(folder);
    return FALSE;
  }
  return rok_output_dir_commit(folder, error);
}

/* ---- running ---- */

static RokValidation *run(const Options *o, const char *model, const RokCliCommon *common, RokExecCancel *cancel,
                          GError **error) {
  RokValidateOptions vo;
  if (!fill_options(o, &vo, error))
    return NULL;
  if (o->hw == NULL) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE,
                        "missing --hw HW: a profile of this machine, as `rok calibrate --dir DIR -o hw.json` makes");
    return NULL;
  }
  g_autoptr(RokHw) hw = cli_load_hw(o->hw, common->hw_sets, error);
  g_autoptr(RokTrace) trace = hw ? cli_load_trace(model, common->sets, error) : NULL;
  if (trace == NULL)
    return NULL;
  cli_warn_far_shapes(trace, hw);
  vo.exec.cancel = cancel;
  if (isatty(STDOUT_FILENO))
    vo.progress = progress;
  cli_signals_to(on_signal, cancel);
  RokValidation *v = rok_validate(trace, hw, &vo, error);
  cli_signals_to(NULL, NULL); /* from here a signal discards the outputs */
  if (isatty(STDOUT_FILENO)) /* the progress line goes */
    printf("\r\033[K");
  if (v != NULL && o->output != NULL && !write_files(v, o->output, error))
    g_clear_pointer(&v, rok_validation_free);
  return v;
}

int cli_cmd_validate(int argc, char **argv) {
  const RokCommand *self = cli_find("validate");
  RokCliCommon common = {0};
  RokChartStyle style = {0};
  g_auto(Options) o = {.device = CLI_UNSET,
                       .repeat = ROK_VALIDATE_DEFAULT_REPEAT,
                       .rounds = ROK_VALIDATE_DEFAULT_ROUNDS,
                       .budgets = ROK_VALIDATE_DEFAULT_BUDGETS,
                       .seed = ROK_EXEC_DEFAULT_SEED,
                       .offload_floor = (gint64)ROK_VALIDATE_OFFLOAD_MIN_ELEMENTS};
  const GOptionEntry entries[] = {
      {"hw", 0, 0, G_OPTION_ARG_STRING, &o.hw, "Hardware profile of this machine (required; see rok calibrate)",
       "HW"},
      {"dir", 'd', 0, G_OPTION_ARG_FILENAME_ARRAY, &o.dirs,
       "Directory to offload tensors into, one per disk (repeatable; needed when the profile has SSDs)", "DIR"},
      {"budgets", 'n', 0, G_OPTION_ARG_INT, &o.budgets, "Budgets the planner is run at (default 3)", "N"},
      {"no-baselines", 0, 0, G_OPTION_ARG_NONE, &o.no_baselines, "Leave the baseline strategies out", NULL},
      {"rounds", 0, 0, G_OPTION_ARG_INT, &o.rounds, "Rounds, each running every row in turn (default 3)", "N"},
      {"repeat", 'r', 0, G_OPTION_ARG_INT, &o.repeat, "Measured steps of a row's run, after its warm-up step (default 2)",
       "N"},
      {"device", 0, 0, G_OPTION_ARG_INT, &o.device, "OpenCL device (see rok execute --list-devices)", "N"},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &o.seed, "Seed of parameters, data and dropout (default 1234)", "N"},
      {"offload-floor", 0, 0, G_OPTION_ARG_INT64, &o.offload_floor,
       "Smallest tensor offload and tba move, in elements (default 65536)", "N"},
      {"io", 0, 0, G_OPTION_ARG_STRING, &o.io, "I/O backend: auto (default), io_uring or psync", "NAME"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output,
       "Write validation.json, the chart (PNG, SVG) and each row's schedule, report and timeline in DIR", "DIR"},
      CLI_CHART_ENTRIES(&style),
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, &common);
  GError *error = NULL;
  if (!cli_parse(context, &argc, &argv, &error) || !rok_charts_set_style(&style, &error) ||
      (argc > 2 && !cli_positionals(argc, argv, 1, "MODEL", &error))) {
    cli_common_clear(&common);
    return cli_fail(self->name, error);
  }
  g_autoptr(RokExecCancel) cancel = rok_exec_cancel_new();
  g_autoptr(RokValidation) v = run(&o, argc > 1 ? argv[1] : DEFAULT_MODEL, &common, cancel, &error);
  cli_common_clear(&common);
  if (v == NULL)
    return cli_fail(self->name, error);
  if (common.json)
    return cli_print_json(rok_validation_to_json(v), &error) ? ROK_EXIT_OK : cli_fail(self->name, error);
  print_table(v, o.output);
  return ROK_EXIT_OK;
}
