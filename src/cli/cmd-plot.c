/* rok plot: re-draw a chart from saved data: a sweep's CSV, a plan file's
 * ROK curve, a timeline (rok simulate --timeline); the chart comes out the
 * same as the one the command that saved the data drew. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rok/charts.h"
#include "cli.h"
#include "rok/core.h"
#include "rok/sweep.h"

typedef struct {
  char *output, *chart, *x, *hw, *budget;
  char **at;
} Options;

static void options_clear(Options *o) {
  g_free(o->output);
  g_free(o->chart);
  g_free(o->x);
  g_free(o->hw);
  g_free(o->budget);
  g_strfreev(o->at);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

typedef enum { INPUT_SWEEP, INPUT_PLAN, INPUT_TIMELINE } InputKind;

static gboolean refuse(const char *option, const char *kind, GError **error) {
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "%s applies to %s only", option, kind);
  return FALSE;
}

/* Options that belong to another kind of input are mistakes. */
static gboolean check_options(const Options *o, InputKind kind, GError **error) {
  if (kind != INPUT_TIMELINE && (o->hw != NULL || o->budget != NULL))
    return refuse(o->hw != NULL ? "--hw" : "--budget", "timelines", error);
  if (kind != INPUT_SWEEP && (o->chart != NULL || o->x != NULL || o->at != NULL))
    return refuse(o->chart != NULL ? "--chart" : o->x != NULL ? "--x" : "--at", "sweep CSV files", error);
  return TRUE;
}

static gboolean parse_at(const RokSweep *sweep, RokSweepView *view, const char *assignment, GError **error) {
  const char *eq = strchr(assignment, '=');
  RokSweepAxis axis;
  guint64 value = 0;
  g_autofree char *name = eq == NULL ? NULL : g_strndup(assignment, (gsize)(eq - assignment));
  if (name == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--at %s: expected AXIS=VALUE (micro_batch=8)", assignment);
    return FALSE;
  }
  gboolean ok = rok_sweep_axis_from_name(name, &axis, error) &&
                (axis == ROK_SWEEP_BUDGET ? rok_units_parse_size(eq + 1, &value, error)
                                          : g_ascii_string_to_unsigned(eq + 1, 10, 0, G_MAXUINT64, &value, error)) &&
                rok_sweep_view_set(sweep, view, axis, value, error);
  if (!ok)
    g_prefix_error(error, "--at %s: ", assignment);
  return ok;
}

static gboolean plot_sweep(const Options *o, const char *path, GError **error) {
  g_autoptr(RokSweep) sweep = rok_sweep_load_csv(path, error);
  if (sweep == NULL)
    return FALSE;
  RokSweepChartKind kind = ROK_SWEEP_CHART_THROUGHPUT;
  if (o->chart != NULL && !g_str_equal(o->chart, "throughput")) {
    if (!g_str_equal(o->chart, "memory")) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--chart %s: expected throughput or memory", o->chart);
      return FALSE;
    }
    kind = ROK_SWEEP_CHART_MEMORY;
  }
  RokSweepView view;
  rok_sweep_view_init(sweep, &view);
  if (o->x != NULL && !rok_sweep_axis_from_name(o->x, &view.x, error)) {
    g_prefix_error(error, "--x: ");
    return FALSE;
  }
  for (char **at = o->at; at != NULL && *at != NULL; at++)
    if (!parse_at(sweep, &view, *at, error))
      return FALSE;
  return rok_sweep_save_chart(sweep, kind, &view, o->output, error);
}

static gboolean plot_timeline(const Options *o, const RokJsonDoc *doc, GError **error) {
  guint64 gpu_memory = 0, budget = 0;
  if (o->hw != NULL) {
    g_autoptr(RokHw) hw = cli_load_hw(o->hw, NULL, error);
    if (hw == NULL)
      return FALSE;
    gpu_memory = hw->gpu.memory;
  }
  if (o->budget != NULL && !cli_parse_size("budget", o->budget, TRUE, &budget, error))
    return FALSE;
  return rok_charts_timeline_save(doc, gpu_memory, budget, o->output, error);
}

/* A JSON document is a plan file when it says so in "format", a timeline
 * when it has trace events. */
static gboolean plot_json(const Options *o, const char *path, GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_load(path, error);
  if (doc == NULL)
    return FALSE;
  json_object *root = rok_json_doc_root(doc);
  gboolean object = json_object_is_type(root, json_type_object);
  if (object && json_object_object_get_ex(root, "traceEvents", NULL))
    return check_options(o, INPUT_TIMELINE, error) && plot_timeline(o, doc, error);
  if (object && json_object_object_get_ex(root, "format", NULL))
    return check_options(o, INPUT_PLAN, error) && rok_charts_plan_curve_save(doc, o->output, error);
  g_set_error(error, ROK_ERROR, ROK_ERROR_FORMAT,
              "%s: neither a plan (rok-plan/1) nor a timeline (rok simulate --timeline: an object with "
              "\"traceEvents\")", path);
  return FALSE;
}

/* JSON files start with "{"; anything else is read as a sweep's CSV. */
static gboolean is_json(const char *path, GError **error) {
  FILE *in = fopen(path, "rb");
  if (in == NULL) {
    g_set_error(error, ROK_ERROR, errno == ENOENT ? ROK_ERROR_INPUT : ROK_ERROR_IO, "%s: %s", path,
                g_strerror(errno));
    return FALSE;
  }
  int c;
  while ((c = fgetc(in)) != EOF && g_ascii_isspace(c))
    ;
  fclose(in);
  return c == '{';
}

static gboolean plot(const Options *o, const char *path, GError **error) {
  if (o->output == NULL) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "missing -o CHART (.png, .svg or .pdf; see --help)");
    return FALSE;
  }
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: no such file", path);
    return FALSE;
  }
  GError *local = NULL;
  if (is_json(path, &local))
    return plot_json(o, path, error);
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  return check_options(o, INPUT_SWEEP, error) && plot_sweep(o, path, error);
}

int cli_cmd_plot(int argc, char **argv) {
  const RokCommand *self = cli_find("plot");
  g_auto(Options) o = {0};
  RokChartStyle style = {0};
  const GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output, "The chart to write: .png, .svg or .pdf (required)",
       "CHART"},
      {"chart", 'c', 0, G_OPTION_ARG_STRING, &o.chart, "Sweeps: throughput (default) or memory", "KIND"},
      {"x", 'x', 0, G_OPTION_ARG_STRING, &o.x,
       "Sweeps: the axis across (micro_batch, seq_len, nvme_devices, budget_bytes; default: the first swept)",
       "AXIS"},
      {"at", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.at,
       "Sweeps: the value of another swept axis (repeatable; default: its smallest)", "AXIS=VALUE"},
      {"hw", 0, 0, G_OPTION_ARG_STRING, &o.hw, "Timelines: draw the GPU memory of this profile", "HW"},
      {"budget", 'b', 0, G_OPTION_ARG_STRING, &o.budget, "Timelines: draw a memory budget line", "SIZE"},
      CLI_CHART_ENTRIES(&style),
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, NULL);
  GError *error = NULL;
  gboolean ok = cli_parse(context, &argc, &argv, &error) && rok_charts_set_style(&style, &error) &&
                cli_positionals(argc, argv, 1, "FILE", &error) && plot(&o, argv[1], &error);
  rok_charts_release();
  return ok ? ROK_EXIT_OK : cli_fail(self->name, error);
}
