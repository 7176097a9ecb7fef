/* rok search: the best layouts × plans for N GPUs (see rok/search.h): the
 * best points with their plans, and in -o DIR search.csv and the charts.
 * Under mpirun the points are shared out among the ranks; rank 0 prints
 * and writes, the others stay quiet. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "rok/charts.h"
#include "rok/core.h"
#include "rok/search.h"

typedef struct {
  char *hw, *output, *offload;
  char *ranges[ROK_SEARCH_AXIS_COUNT];
  gint threads, top, gpus_per_node;
  double min_lifetime, timeout;
  gboolean no_prune;
} Options;

static void options_clear(Options *o) {
  g_free(o->hw);
  g_free(o->output);
  g_free(o->offload);
  for (guint a = 0; a < ROK_SEARCH_AXIS_COUNT; a++)
    g_free(o->ranges[a]);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

static const char *const axis_options[ROK_SEARCH_AXIS_COUNT] = {
    [ROK_SEARCH_GPUS] = "--gpus", [ROK_SEARCH_MICRO_BATCH] = "--micro-batch", [ROK_SEARCH_TENSOR] = "--tp",
    [ROK_SEARCH_PIPELINE] = "--pp", [ROK_SEARCH_VIRTUAL] = "--virtual-stages", [ROK_SEARCH_ZERO] = "--zero"};

static gboolean check_numbers(const Options *o, GError **error) {
  const char *bad = o->threads < -1 ? "--threads must be 0 (one per core) or more"
                    : o->top < 1   ? "--top must be 1 or more"
                    : o->gpus_per_node < 1 ? "--gpus-per-node must be 1 or more"
                    : !(o->min_lifetime >= 0 && isfinite(o->min_lifetime)) ? "--min-ssd-lifetime must be 0 or more years"
                    : !(o->timeout > 0 && isfinite(o->timeout)) ? "--mpi-timeout must be more than 0 seconds"
                                                               : NULL;
  if (bad != NULL)
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, bad);
  if (bad == NULL && o->ranges[ROK_SEARCH_GPUS] == NULL)
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "missing --gpus N (or a range, 64:1024:*2)");
  return bad == NULL && o->ranges[ROK_SEARCH_GPUS] != NULL;
}

static RokSearchSpec *make_spec(const Options *o, const char *model_arg, const RokCliCommon *common,
                                GError **error) {
  if (!cli_check_model_sets(common->sets, error))
    return NULL;
  char **sets = common->sets;
  g_autoptr(RokHw) hw = cli_load_hw(o->hw, common->hw_sets, error);
  g_autofree char *path = hw == NULL ? NULL : cli_resolve(model_arg, "models", error);
  g_autofree char *text = NULL;
  gsize length = 0;
  if (path == NULL || !rok_json_read_file(path, &text, &length, error))
    return NULL;
  g_autoptr(RokSearchSpec) spec = rok_search_spec_new(path, text, length, (const char *const *)sets, hw, error);
  if (spec == NULL)
    return NULL;
  for (guint a = 0; a < ROK_SEARCH_AXIS_COUNT; a++)
    if (o->ranges[a] != NULL && !rok_search_spec_set_range(spec, a, o->ranges[a], error)) {
      g_prefix_error(error, "%s: ", axis_options[a]);
      return NULL;
    }
  if (!rok_search_spec_set_gpus_per_node(spec, (guint64)o->gpus_per_node, error) ||
      (o->offload != NULL && !rok_search_spec_set_offload(spec, o->offload, error)))
    return NULL;
  rok_search_spec_set_min_ssd_lifetime(spec, o->min_lifetime);
  rok_search_spec_set_top(spec, (guint)o->top, !o->no_prune);
  return g_steal_pointer(&spec);
}

static void show_progress(const char *phase, guint done, guint total, gpointer user_data) {
  (void)user_data;
  fprintf(stderr, "\rrok search: %s %u of %u\033[K", phase, done, total);
  if (done == total)
    fprintf(stderr, "\r\033[K");
  fflush(stderr);
}

/* The CSV and the charts in the temporary folder `dir`. */
static gboolean write_folder(const RokSearch *search, const char *dir, GError **error) {
  g_autofree char *csv = g_build_filename(dir, "search.csv", NULL);
  g_autofree char *png = g_build_filename(dir, "search.png", NULL);
  g_autofree char *svg = g_build_filename(dir, "search.svg", NULL);
  g_autoptr(GArray) best = rok_search_best(search, 1);
  gboolean ok = rok_search_save_csv(search, csv, error) &&
                (best->len == 0 || (rok_search_save_chart(search, png, error) &&
                                    rok_search_save_chart(search, svg, error)));
  rok_charts_release();
  return ok;
}

/* All or nothing in DIR (rok_output_dir_begin). */
static gboolean write_files(const RokSearch *search, const char *dir, GError **error) {
  RokOutputDir *folder = rok_output_dir_begin(dir, error);
  if (folder == NULL)
    return FALSE;
  if (!write_folder(search, rok_output_dir_path(folder), error)) {
    rok_output_dir_discard(folder);
    return FALSE;
  }
  return rok_output_dir_commit(folder, error);
}

static void print_counts(const RokSearch *search, guint modes) {
  guint n[ROK_SEARCH_STATUS_COUNT] = {0}, fit = 0;
  for (guint i = 0; i < search->rows->len; i++) {
    const RokSearchRow *r = &g_array_index(search->rows, RokSearchRow, i);
    n[r->status]++;
    fit += r->status == ROK_SEARCH_PLANNED && r->fits;
  }
  g_autofree char *mem = rok_units_format_size(search->gpu_memory_bytes);
  printf("%s on %s (%s per GPU): %u layouts × %u offload mode%s = %u points: %u planned (%u fit), %u pruned by "
         "the compute-only bound, %u by fixed memory\n",
         search->model_name, search->hw_name, mem, search->rows->len / modes, modes, modes == 1 ? "" : "s",
         search->rows->len, n[ROK_SEARCH_PLANNED], fit, n[ROK_SEARCH_PRUNED_BOUND], n[ROK_SEARCH_PRUNED_MEMORY]);
  printf("Every pipeline stage planned on its GPU, the pipeline composed (the step is the slowest stage's, with the\n"
         "bubble). Communication is in the step time where the profile has an interconnect section.\n");
}

static void print_best(const RokSearch *search, gboolean offload, guint top) {
  g_autoptr(GArray) all = rok_search_best(search, G_MAXUINT);
  printf("\nBest %s:\n  %5s %3s %3s %2s %5s %4s %4s %10s %13s %11s\n",
         offload ? "with offload allowed" : "with keep and recompute only", "GPUs", "TP", "PP", "v", "DP", "mb",
         "ZeRO", "step time", "tokens/s", "peak memory");
  guint shown = 0;
  for (guint i = 0; i < all->len && shown < top; i++) {
    guint at = g_array_index(all, guint, i);
    const RokSearchRow *r = &g_array_index(search->rows, RokSearchRow, at);
    if (r->offload != offload)
      continue;
    const RokLayout *l = &r->layout;
    g_autofree char *step = rok_units_format_time(r->step_time_s), *rate = rok_units_format_count(r->tokens_per_s);
    g_autofree char *peak = rok_units_format_size(r->peak_bytes);
    printf("  %5" G_GUINT64_FORMAT " %3" G_GUINT64_FORMAT " %3" G_GUINT64_FORMAT " %2" G_GUINT64_FORMAT
           " %5" G_GUINT64_FORMAT " %4" G_GUINT64_FORMAT " %4" G_GUINT64_FORMAT " %10s %13s %11s%s\n",
           l->gpus, l->tensor, l->pipeline, l->virtual_stages, l->data, l->micro_batch, l->zero_stage, step, rate, peak,
           r->ssd_limited ? "  (SSDs refused: lifetime)" : "");
    printf("        %s\n", (const char *)search->summaries->pdata[at]);
    shown++;
  }
  if (shown == 0)
    printf("  none fits\n");
}

/* "TP 8 PP 16 v 1 mb 1 ZeRO 1" */
static char *layout_name(const RokLayout *l) {
  return g_strdup_printf("TP %" G_GUINT64_FORMAT " PP %" G_GUINT64_FORMAT " v %" G_GUINT64_FORMAT " mb %" G_GUINT64_FORMAT
                         " ZeRO %" G_GUINT64_FORMAT,
                         l->tensor, l->pipeline, l->virtual_stages, l->micro_batch, l->zero_stage);
}

/* Per GPU count: the best point of each mode, and whether offloading
 * changes which layout wins. */
static void print_offload_effect(const RokSearch *search) {
  g_autoptr(GArray) all = rok_search_best(search, G_MAXUINT);
  g_autoptr(GArray) counts = g_array_new(FALSE, FALSE, sizeof(guint64));
  for (guint i = 0; i < search->rows->len; i++) {
    guint64 g = g_array_index(search->rows, RokSearchRow, i).layout.gpus;
    if (counts->len == 0 || g_array_index(counts, guint64, counts->len - 1) != g)
      g_array_append_val(counts, g);
  }
  printf("\nWhere offloading changes the answer:\n");
  for (guint c = 0; c < counts->len; c++) {
    const RokSearchRow *best[2] = {NULL, NULL};
    for (guint i = 0; i < all->len; i++) {
      const RokSearchRow *r = &g_array_index(search->rows, RokSearchRow, g_array_index(all, guint, i));
      if (r->layout.gpus == g_array_index(counts, guint64, c) && best[r->offload] == NULL)
        best[r->offload] = r;
    }
    printf("  %5" G_GUINT64_FORMAT " GPUs: ", g_array_index(counts, guint64, c));
    if (best[0] == NULL || best[1] == NULL) {
      printf("%s\n", best[1] != NULL ? "only offloading fits" : best[0] != NULL ? "offloading was not searched or fits nowhere" : "nothing fits");
      continue;
    }
    const RokLayout *a = &best[0]->layout, *b = &best[1]->layout;
    gboolean same = a->tensor == b->tensor && a->pipeline == b->pipeline && a->virtual_stages == b->virtual_stages &&
                    a->micro_batch == b->micro_batch && a->zero_stage == b->zero_stage;
    g_autofree char *with = layout_name(b), *without = layout_name(a);
    printf("%s; best with offload %s, %+.1f%% tokens/s against %s without\n", same ? "same layout" : "another layout",
           with, 100.0 * (best[1]->tokens_per_s / best[0]->tokens_per_s - 1.0), without);
  }
}

static json_object *best_json(const RokSearch *search, guint top) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "model", json_object_new_string(search->model_name));
  json_object_object_add(o, "hw", json_object_new_string(search->hw_name));
  json_object *best = json_object_new_array();
  g_autoptr(GArray) rows = rok_search_best(search, top);
  for (guint i = 0; i < rows->len; i++) {
    guint at = g_array_index(rows, guint, i);
    const RokSearchRow *r = &g_array_index(search->rows, RokSearchRow, at);
    json_object *p = json_object_new_object();
    json_object_object_add(p, "gpus", json_object_new_uint64(r->layout.gpus));
    json_object_object_add(p, "tensor_parallel", json_object_new_uint64(r->layout.tensor));
    json_object_object_add(p, "pipeline_parallel", json_object_new_uint64(r->layout.pipeline));
    json_object_object_add(p, "virtual_stages", json_object_new_uint64(r->layout.virtual_stages));
    json_object_object_add(p, "data_parallel", json_object_new_uint64(r->layout.data));
    json_object_object_add(p, "micro_batch", json_object_new_uint64(r->layout.micro_batch));
    json_object_object_add(p, "zero_stage", json_object_new_uint64(r->layout.zero_stage));
    json_object_object_add(p, "offload", json_object_new_boolean(r->offload));
    json_object_object_add(p, "step_time_s", json_object_new_double(r->step_time_s));
    json_object_object_add(p, "tokens_per_s", json_object_new_double(r->tokens_per_s));
    json_object_object_add(p, "peak_bytes", json_object_new_uint64(r->peak_bytes));
    json_object_object_add(p, "plan", json_object_new_string(search->summaries->pdata[at]));
    json_object_array_add(best, p);
  }
  json_object_object_add(o, "best", best);
  return o;
}

/* Rank 0 speaks for the job; the others exit with the same code, quietly. */
static int finish(const char *name, GError *error, gboolean root) {
  int code = ROK_EXIT_OK;
  if (error != NULL && root) {
    code = cli_fail(name, error);
  } else if (error != NULL) {
    code = rok_error_exit_code(error);
    g_error_free(error);
  }
  return rok_search_mpi_finish(code);
}

int cli_cmd_search(int argc, char **argv) {
  const RokCommand *self = cli_find("search");
  RokCliCommon common = {0};
  g_auto(Options) o = {.top = 5, .gpus_per_node = 8, .timeout = 60, .threads = -1};
  const GOptionEntry entries[] = {
      {"hw", 0, 0, G_OPTION_ARG_STRING, &o.hw, "Hardware profile of one GPU (required)", "HW"},
      {"gpus", 'n', 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SEARCH_GPUS], "GPU counts: 1024, 64:1024:*2 (required)", "RANGE"},
      {"gpus-per-node", 0, 0, G_OPTION_ARG_INT, &o.gpus_per_node, "GPUs per node: tensor parallelism stays within one (8)", "N"},
      {"tp", 0, 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SEARCH_TENSOR], "Tensor-parallel degrees (default: 1 to a node's GPUs)", "RANGE"},
      {"pp", 0, 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SEARCH_PIPELINE], "Pipeline degrees (default: every one dividing the layers)", "RANGE"},
      {"virtual-stages", 0, 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SEARCH_VIRTUAL], "Virtual stages per pipeline stage (default: every one dividing a stage's layers)", "RANGE"},
      {"micro-batch", 'b', 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SEARCH_MICRO_BATCH], "Micro-batch sizes (default 1:64:*2)", "RANGE"},
      {"zero", 0, 0, G_OPTION_ARG_STRING, &o.ranges[ROK_SEARCH_ZERO], "ZeRO stages (default 0:3)", "RANGE"},
      {"offload", 0, 0, G_OPTION_ARG_STRING, &o.offload, "Plans with offloads: no, yes or both (default)", "MODE"},
      {"min-ssd-lifetime", 0, 0, G_OPTION_ARG_DOUBLE, &o.min_lifetime, "Refuse SSD offloads that wear the SSDs out sooner (years; 0: no floor)", "YEARS"},
      {"top", 0, 0, G_OPTION_ARG_INT, &o.top, "Best points to print, and kept exact by pruning (5)", "N"},
      {"no-prune", 0, 0, G_OPTION_ARG_NONE, &o.no_prune, "Plan every point that fits in memory", NULL},
      {"threads", 'j', 0, G_OPTION_ARG_INT, &o.threads, "Worker threads per process (default: one per core; 1 under mpirun)", "N"},
      {"mpi-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &o.timeout, "Give up an MPI rank silent this long (seconds, 60)", "S"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output, "Write search.csv and the chart (search.png, search.svg) to DIR", "DIR"},
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, &common);
  GError *error = NULL;
  gboolean mpi = rok_search_mpi_init(&argc, &argv, &error);
  if (error != NULL)
    return cli_fail(self->name, error);
  guint rank = 0, size = 1;
  rok_search_mpi_rank(&rank, &size);
  g_autoptr(RokSearchSpec) spec = NULL;
  g_autoptr(RokSearch) search = NULL;
  gboolean root = rank == 0;
  if (!cli_parse(context, &argc, &argv, &error) || !cli_positionals(argc, argv, 1, "MODEL", &error) ||
      (o.hw == NULL && (error = g_error_new_literal(ROK_ERROR, ROK_ERROR_USAGE, "missing --hw HW (see --help)"))) ||
      !check_numbers(&o, &error)) {
    cli_common_clear(&common);
    return finish(self->name, error, root);
  }
  RokSearchRunner runner;
  rok_search_runner_init(&runner);
  runner.threads = o.threads >= 0 ? (guint)o.threads : mpi ? 1 : 0;
  runner.mpi = mpi;
  runner.timeout_s = o.timeout;
  if (root && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO))
    runner.progress = show_progress;
  if ((spec = make_spec(&o, argv[1], &common, &error)) == NULL ||
      ((search = rok_search_run(spec, &runner, &root, &error)) == NULL && error != NULL) ||
      (root && o.output != NULL && !write_files(search, o.output, &error))) {
    cli_common_clear(&common);
    return finish(self->name, error, root);
  }
  cli_common_clear(&common);
  if (!root)
    return finish(self->name, NULL, root);
  if (common.json) {
    if (!cli_print_json(best_json(search, (guint)o.top), &error))
      return finish(self->name, error, root);
    return finish(self->name, NULL, root);
  }
  guint modes = (o.offload == NULL || g_str_equal(o.offload, "both")) ? 2 : 1;
  print_counts(search, modes);
  if (modes == 2 || g_str_equal(o.offload, "no"))
    print_best(search, FALSE, (guint)o.top);
  if (modes == 2 || g_str_equal(o.offload, "yes"))
    print_best(search, TRUE, (guint)o.top);
  if (modes == 2)
    print_offload_effect(search);
  if (size > 1)
    printf("\n%u MPI ranks shared the points.\n", size);
  fflush(stdout);
  return finish(self->name, NULL, root);
}
