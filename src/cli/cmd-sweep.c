/* rok sweep: every strategy over a grid of micro-batch sizes, sequence
 * lengths, SSD counts and budgets: a table, --json, and in -o DIR the CSV
 * and the charts. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "rok/charts.h"
#include "cli.h"
#include "rok/core.h"
#include "rok/search.h"
#include "rok/sweep.h"

typedef struct {
  char *hw, *strategies, *output;
  char *ranges[ROK_SWEEP_AXIS_COUNT];
  gint threads;
} Options;

static void options_clear(Options *o) {
  g_free(o->hw);
  g_free(o->strategies);
  g_free(o->output);
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    g_free(o->ranges[a]);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

/* A model config's text; a rok-trace/1 file has no config to change. */
static char *read_config(const char *arg, char **path, gsize *length, GError **error) {
  *path = cli_resolve(arg, "models", error);
  char *text = NULL;
  if (*path == NULL || !rok_json_read_file(*path, &text, length, error))
    return NULL;
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse(*path, text, *length, NULL);
  json_object *root = doc == NULL ? NULL : rok_json_doc_root(doc);
  if (root != NULL && json_object_is_type(root, json_type_object) && json_object_object_get_ex(root, "format", NULL)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "%s is not a model config (a sweep rebuilds the trace at every point from the config)", *path);
    g_clear_pointer(&text, g_free);
  }
  return text;
}

static RokSweepSpec *make_spec(const Options *o, const char *model_arg, const RokCliCommon *common, GError **error) {
  static const char *const option_names[ROK_SWEEP_AXIS_COUNT] = {
      [ROK_SWEEP_BUDGET] = "--budget", [ROK_SWEEP_NVME_DEVICES] = "--nvme-devices",
      [ROK_SWEEP_SEQ_LEN] = "--seq-len", [ROK_SWEEP_MICRO_BATCH] = "--micro-batch"};
  if (!cli_check_model_sets(common->sets, error))
    return NULL;
  g_autoptr(RokHw) hw = cli_load_hw(o->hw, common->hw_sets, error);
  char **sets = common->sets;
  g_autofree char *path = NULL;
  gsize length = 0;
  g_autofree char *text = hw == NULL ? NULL : read_config(model_arg, &path, &length, error);
  if (text == NULL)
    return NULL;
  g_autoptr(RokSweepSpec) spec = rok_sweep_spec_new(path, text, length, (const char *const *)sets, hw, error);
  if (spec == NULL)
    return NULL;
  g_autoptr(RokModel) model = rok_model_parse(path, text, length, (const char *const *)sets, NULL);
  if (model != NULL) /* what every point leaves unmodelled */
    cli_print_model_notes(model);
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    if (o->ranges[a] != NULL && !rok_sweep_spec_set_axis(spec, a, o->ranges[a], error)) {
      g_prefix_error(error, "%s: ", option_names[a]);
      return NULL;
    }
  if (o->strategies != NULL && !rok_sweep_spec_set_strategies(spec, o->strategies, error)) {
    g_prefix_error(error, "--strategies: ");
    return NULL;
  }
  return g_steal_pointer(&spec);
}

static void show_progress(guint done, guint total, gpointer user_data) {
  (void)user_data;
  fprintf(stderr, "\rrok sweep: %u of %u points", done, total);
  if (done == total)
    fprintf(stderr, "\r\033[K");
  fflush(stderr);
}

/* The charts and the CSV, in the temporary folder `dir`. */
static gboolean write_charts(const RokSweep *sweep, const char *dir, GError **error) {
  g_autofree char *csv = g_build_filename(dir, "sweep.csv", NULL);
  if (!rok_sweep_save_csv(sweep, csv, error))
    return FALSE;
  static const struct {
    const char *file;
    RokSweepChartKind kind;
  } charts[] = {{"throughput.png", ROK_SWEEP_CHART_THROUGHPUT}, {"throughput.svg", ROK_SWEEP_CHART_THROUGHPUT},
                {"memory.png", ROK_SWEEP_CHART_MEMORY},         {"memory.svg", ROK_SWEEP_CHART_MEMORY}};
  for (guint i = 0; i < G_N_ELEMENTS(charts); i++) {
    g_autofree char *path = g_build_filename(dir, charts[i].file, NULL);
    if (!rok_sweep_save_chart(sweep, charts[i].kind, NULL, path, error))
      return FALSE;
  }
  return TRUE;
}

/* All or nothing in DIR (rok_output_dir_begin). */
static gboolean write_files(const RokSweep *sweep, const char *dir, GError **error) {
  RokOutputDir *folder = rok_output_dir_begin(dir, error);
  if (folder == NULL)
    return FALSE;
  gboolean ok = write_charts(sweep, rok_output_dir_path(folder), error);
  rok_charts_release();
  if (!ok) {
    rok_output_dir_discard(folder);
    return FALSE;
  }
  return rok_output_dir_commit(folder, error);
}

static const char *const axis_labels[ROK_SWEEP_AXIS_COUNT] = {
    [ROK_SWEEP_BUDGET] = "budget", [ROK_SWEEP_NVME_DEVICES] = "SSDs",
    [ROK_SWEEP_SEQ_LEN] = "seq len", [ROK_SWEEP_MICRO_BATCH] = "micro-batch"};

static gboolean shown(const RokSweep *sweep, RokSweepAxis axis) {
  return axis == ROK_SWEEP_MICRO_BATCH || sweep->values[axis]->len > 1;
}

static char *axis_text(RokSweepAxis axis, guint64 value) {
  return axis == ROK_SWEEP_BUDGET ? rok_units_format_size(value) : g_strdup_printf("%" G_GUINT64_FORMAT, value);
}

static void print_header(const RokSweep *sweep) {
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    if (shown(sweep, a))
      printf("%11s  ", axis_labels[a]);
  printf("  %-10s %10s %10s %10s %12s %6s %11s %11s %11s  %s\n", "strategy", "step time", "tokens/s", "per GPU",
         "model FLOP/s", "MFU", "peak memory", "activations", "SSD write", "fits");
}

static void print_row(const RokSweep *sweep, const RokSweepRow *row, gboolean best) {
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    if (shown(sweep, a)) {
      g_autofree char *value = axis_text(a, rok_sweep_row_value(row, a));
      printf("%11s  ", value);
    }
  g_autofree char *step = rok_units_format_time(row->step_time_s), *rate = rok_units_format_count(row->tokens_per_s);
  g_autofree char *peak = rok_units_format_size(row->peak_bytes);
  g_autofree char *act = rok_units_format_size(row->activation_peak_bytes);
  g_autofree char *write = row->required_write_bandwidth > 0 ? rok_units_format_rate(row->required_write_bandwidth)
                                                            : g_strdup("-");
  g_autofree char *gpu_rate = rok_units_format_count(row->tokens_per_gpu_s);
  g_autofree char *flops = cli_flops_text(row->model_flops_per_gpu_s), *mfu = cli_percent_text(row->mfu);
  printf("%c %-10s %10s %10s %10s %12s %6s %11s %11s %11s  %s\n", best ? '*' : ' ', rok_strategy_name(row->strategy),
         step, rate, gpu_rate, flops, mfu, peak, act, write, row->fits ? "yes" : "NO");
}

/* Rows [first, end) are one point: the fastest that fits is marked. */
static void print_point(const RokSweep *sweep, guint first, guint end) {
  guint best = G_MAXUINT;
  for (guint i = first; i < end; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    if (row->fits && (best == G_MAXUINT || row->tokens_per_s > g_array_index(sweep->rows, RokSweepRow, best).tokens_per_s))
      best = i;
  }
  for (guint i = first; i < end; i++)
    print_row(sweep, &g_array_index(sweep->rows, RokSweepRow, i), i == best);
}

static gboolean same_point(const RokSweepRow *a, const RokSweepRow *b) {
  for (guint axis = 0; axis < ROK_SWEEP_AXIS_COUNT; axis++)
    if (rok_sweep_row_value(a, axis) != rok_sweep_row_value(b, axis))
      return FALSE;
  return TRUE;
}

/* Per strategy, over the charts' view: how far along x it fits, and its
 * best throughput where it fits. */
static void print_strategy_summary(const RokSweep *sweep, const RokSweepView *view, RokStrategy strategy) {
  const RokSweepRow *best = NULL;
  gboolean any = FALSE;
  guint64 largest = 0;
  for (guint i = 0; i < sweep->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    gboolean in_view = row->strategy == strategy;
    for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT && in_view; a++)
      in_view = a == view->x || rok_sweep_row_value(row, a) == view->at[a];
    if (!in_view || !row->fits)
      continue;
    largest = any ? MAX(largest, rok_sweep_row_value(row, view->x)) : rok_sweep_row_value(row, view->x);
    any = TRUE;
    if (best == NULL || row->tokens_per_s > best->tokens_per_s)
      best = row;
  }
  if (!any) {
    printf("  %-10s %22s  %s\n", rok_strategy_name(strategy), "-", "does not fit anywhere");
    return;
  }
  g_autofree char *up_to = axis_text(view->x, largest), *at = axis_text(view->x, rok_sweep_row_value(best, view->x));
  g_autofree char *rate = rok_units_format_count(best->tokens_per_s);
  printf("  %-10s %22s  %s tokens/s at %s %s\n", rok_strategy_name(strategy), up_to, rate, axis_labels[view->x], at);
}

static void print_summary(const RokSweep *sweep) {
  RokSweepView view;
  rok_sweep_view_init(sweep, &view);
  g_autofree char *heading = g_strdup_printf("fits up to %s", axis_labels[view.x]);
  GString *where = g_string_new(NULL);
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    if (a != view.x && sweep->values[a]->len > 1) {
      g_autofree char *value = axis_text(a, view.at[a]);
      g_string_append_printf(where, "%s%s %s", where->len ? ", " : " at ", axis_labels[a], value);
    }
  printf("\nAlong %s%s:\n  %-10s %22s  %s\n", axis_labels[view.x], where->str, "strategy", heading,
         "best throughput where it fits");
  g_string_free(where, TRUE);
  for (guint i = 0; i < sweep->strategies->len; i++)
    print_strategy_summary(sweep, &view, g_array_index(sweep->strategies, RokStrategy, i));
}

static void print_table(const RokSweep *sweep, guint points) {
  const RokSweepRow *first = &g_array_index(sweep->rows, RokSweepRow, 0);
  g_autofree char *gpu = rok_units_format_size(first->gpu_memory_bytes);
  printf("%s on %s (GPU memory %s): %u point%s, %u strateg%s\n", sweep->model_name, sweep->hw_name, gpu, points,
         points == 1 ? "" : "s", sweep->strategies->len, sweep->strategies->len == 1 ? "y" : "ies");
  printf("Each point keeps the config's micro-batches per step (gradient accumulation), so the global batch grows "
         "with the micro-batch\n(rok plan --set micro_batch=N keeps the global batch instead). tokens/s: per copy of "
         "the model; per GPU: over its GPUs.\n\n");
  print_header(sweep);
  guint start = 0;
  for (guint i = 1; i <= sweep->rows->len; i++)
    if (i == sweep->rows->len || !same_point(&g_array_index(sweep->rows, RokSweepRow, start),
                                             &g_array_index(sweep->rows, RokSweepRow, i))) {
      print_point(sweep, start, i);
      start = i;
    }
  printf("\n* the fastest strategy that fits at its point; fits: peak memory within the budget\n%s.\n",
         CLI_MFU_BASIS);
  print_summary(sweep);
}

static gboolean parse_threads(gint threads, guint *out, GError **error) {
  if (threads < 0) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "--threads must be 0 (one per core) or more");
    return FALSE;
  }
  *out = (guint)threads;
  return TRUE;
}

static RokSweep *run_sweep(const RokSweepSpec *spec, gboolean mpi, guint threads, gboolean progress, gboolean *root,
                           GError **error) {
  if (!mpi)
    return rok_sweep_run(spec, threads, progress ? show_progress : NULL, NULL, error);
  RokSearchRunner runner;
  rok_search_runner_init(&runner);
  runner.mpi = TRUE;
  runner.threads = threads == 0 ? 1 : threads;
  return rok_search_sweep_run(spec, &runner, root, error);
}

int cli_cmd_sweep(int argc, char **argv) {
  const RokCommand *self = cli_find("sweep");
  RokCliCommon common = {0};
  RokChartStyle style = {0};
  g_auto(Options) o = {0};
  const GOptionEntry entries[] = {
      {"hw", 0, 0, G_OPTION_ARG_STRING, &o.hw, "Hardware profile (required)", "HW"},
      {"micro-batch", 0, 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SWEEP_MICRO_BATCH],
       "Micro-batch sizes: 8, 1,2,4,8, 1:64 (every one), 8:64:8, 1:64:*2", "RANGE"},
      {"seq-len", 0, 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SWEEP_SEQ_LEN], "Sequence lengths (a range)", "RANGE"},
      {"nvme-devices", 0, 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SWEEP_NVME_DEVICES], "SSD counts (a range)",
       "RANGE"},
      {"budget", 'b', 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SWEEP_BUDGET],
       "GPU memory budgets: 30GiB, 24GiB:40GiB:4GiB (default: the GPU's memory)", "RANGE"},
      {"strategies", 's', 0, G_OPTION_ARG_STRING, &o.strategies,
       "Comma-separated strategies (default: all)", "LIST"},
      {"threads", 'j', 0, G_OPTION_ARG_INT, &o.threads, "Worker threads (default 0: one per core)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output,
       "Write sweep.csv and the charts (throughput, memory; PNG and SVG) to DIR", "DIR"},
      CLI_CHART_ENTRIES(&style),
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, &common);
  GError *error = NULL;
  /* Under mpirun the points are shared out among the ranks (rok/search.h);
   * rank 0 prints and writes, the others stay quiet. */
  gboolean mpi = rok_search_mpi_init(&argc, &argv, &error), root = TRUE;
  if (error != NULL)
    return cli_fail(self->name, error);
  g_autoptr(RokSweepSpec) spec = NULL;
  g_autoptr(RokSweep) sweep = NULL;
  guint threads = 0;
  gboolean progress = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
  if (!cli_parse(context, &argc, &argv, &error) || !rok_charts_set_style(&style, &error) ||
      !cli_positionals(argc, argv, 1, "MODEL", &error) ||
      (o.hw == NULL && (error = g_error_new_literal(ROK_ERROR, ROK_ERROR_USAGE, "missing --hw HW (see --help)"))) ||
      !parse_threads(o.threads, &threads, &error) || (spec = make_spec(&o, argv[1], &common, &error)) == NULL ||
      (sweep = run_sweep(spec, mpi, threads, progress, &root, &error)) == NULL ||
      (o.output != NULL && !write_files(sweep, o.output, &error))) {
    cli_common_clear(&common);
    if (!root && error != NULL) {
      int code = rok_error_exit_code(error);
      g_error_free(error);
      return rok_search_mpi_finish(code);
    }
    return rok_search_mpi_finish(error == NULL ? ROK_EXIT_OK : cli_fail(self->name, error));
  }
  cli_common_clear(&common);
  if (mpi) {
    int code = common.json ? (cli_print_json(rok_sweep_to_json(sweep), &error) ? ROK_EXIT_OK
                                                                               : cli_fail(self->name, error))
                           : (print_table(sweep, rok_sweep_spec_points(spec)), ROK_EXIT_OK);
    fflush(stdout);
    return rok_search_mpi_finish(code);
  }
  if (common.json)
    return cli_print_json(rok_sweep_to_json(sweep), &error) ? ROK_EXIT_OK : cli_fail(self->name, error);
  print_table(sweep, rok_sweep_spec_points(spec));
  return ROK_EXIT_OK;
}
