/* rok simulate: one training step under one strategy, as the simulator
 * sees it: a summary, the JSON figures, a Chrome/Perfetto timeline. */
#include <stdio.h>
#include <string.h>

#include "rok/charts.h"
#include "cli.h"
#include "rok/core.h"
#include "rok/plan.h"

typedef struct {
  char *hw, *strategy, *plan, *timeline, *timeline_chart, *budget, *prefetch_unit;
  gint prefetch_window, detail;
} Options;

static void options_clear(Options *o) {
  g_free(o->hw);
  g_free(o->strategy);
  g_free(o->plan);
  g_free(o->timeline);
  g_free(o->timeline_chart);
  g_free(o->budget);
  g_free(o->prefetch_unit);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

/* Options that change the plan's simulator settings. */
static gboolean apply_options(const Options *o, RokStepPlan *plan, GError **error) {
  if (o->budget != NULL) {
    if (!cli_parse_size("budget", o->budget, FALSE, &plan->options.memory_budget, error))
      return FALSE;
  }
  /* The simulator runs at most the step's micro-batches in detail. */
  if (!cli_check_range("prefetch-window", o->prefetch_window, 0, ROK_MAX_LAYERS, error) ||
      !cli_check_range("detail", o->detail, 1, ROK_MAX_MICRO_BATCHES_PER_STEP, error))
    return FALSE;
  if (o->prefetch_window != CLI_UNSET)
    plan->options.prefetch_window = (guint)o->prefetch_window;
  if (o->prefetch_unit != NULL && !rok_prefetch_unit_from_name(o->prefetch_unit, &plan->options.prefetch_unit, error)) {
    g_prefix_error(error, "--prefetch-unit: ");
    return FALSE;
  }
  if (o->detail != CLI_UNSET)
    plan->options.detail_micro_batches = (guint)o->detail;
  return TRUE;
}

/* simulate judges "fits" against the budget it was given, which the
 * GPU's memory bounds in any case. */
static gboolean fits(const RokSimResult *r) {
  return r->fits && r->within_budget;
}

static json_object *to_json(const RokSimResult *r, const RokTrace *trace, const RokHw *hw, const char *strategy) {
  json_object *out = json_object_new_object();
  json_object_object_add(out, "model", json_object_new_string(trace->model_name));
  json_object_object_add(out, "hw", json_object_new_string(hw->name));
  json_object_object_add(out, "strategy", json_object_new_string(strategy));
  json_object *figures = rok_sim_result_to_json(r, trace);
  json_object_object_foreach(figures, key, value) json_object_object_add(out, key, json_object_get(value));
  json_object_put(figures);
  json_object_object_add(out, "fits", json_object_new_boolean(fits(r)));
  return out;
}

static const char *peak_place(const RokSimResult *r, const RokTrace *trace) {
  return r->peak_op != ROK_NO_ID && r->peak_op < trace->ops->len ? rok_trace_op(trace, r->peak_op)->name
                                                                     : "the optimizer step";
}

static void print_line(const char *label, const char *value, const char *note) {
  printf("  %-16s %10s  %s\n", label, value, note);
}

static char *percent(gint64 part, gint64 whole) {
  return g_strdup_printf("%.1f%% of the step", whole > 0 ? 100.0 * (double)part / (double)whole : 0.0);
}

static void print_memory(const RokSimResult *r, const RokTrace *trace) {
  g_autofree char *peak = rok_units_format_size(r->peak_bytes), *cap = rok_units_format_size(r->gpu_memory_bytes);
  g_autofree char *fixed = rok_units_format_size(r->fixed_bytes);
  g_autofree char *act = rok_units_format_size(r->activation_peak_bytes);
  g_autofree char *budget = rok_units_format_size(r->budget_bytes);
  g_autofree char *limit = r->budget_bytes < r->gpu_memory_bytes ? g_strdup_printf("the budget %s", budget)
                                                                 : g_strdup(cap);
  g_autofree char *where = g_strdup_printf("of %s: %s (at %s %s, micro-batch %u)", limit,
                                           fits(r) ? "fits" : "DOES NOT FIT", rok_action_kind_name(r->peak_kind),
                                           peak_place(r, trace), r->peak_micro_batch);
  print_line("Peak memory", peak, where);
  print_line("  fixed", fixed, "weights, gradients, optimizer states");
  print_line("  activations", act, "activation peak");
}

static void print_time(const RokSimResult *r, const RokTrace *trace, const RokHw *hw) {
  g_autofree char *step = rok_units_format_time(r->step_time_s);
  g_autofree char *rate = rok_units_format_count(r->tokens_per_s), *basis = cli_replica_text(trace);
  g_autofree char *tokens = g_strdup_printf("%s tokens/s %s", rate, basis);
  g_autofree char *gpu_rate = rok_units_format_count(r->tokens_per_gpu_s), *flops = cli_flops_text(r->model_flops_per_gpu_s);
  g_autofree char *mfu = cli_percent_text(r->mfu), *peak = cli_flops_text(hw->gpu.peak_flops);
  g_autofree char *gpu_note =
      g_strdup_printf("tokens/s; %s of model FLOPs, MFU %s of the %s peak", flops, mfu, peak);
  g_autofree char *compute = rok_units_format_time((double)r->compute_ns / 1e9);
  g_autofree char *recompute = rok_units_format_time((double)r->recompute_ns / 1e9);
  g_autofree char *stall = rok_units_format_time((double)r->stall_total_ns / 1e9);
  g_autofree char *compute_note = g_strdup_printf("of which recompute %s", recompute);
  GString *causes = g_string_new(NULL);
  for (guint c = 0; c < ROK_STALL_COUNT; c++) {
    g_autofree char *t = rok_units_format_time((double)r->stall_ns[c] / 1e9);
    g_string_append_printf(causes, "%s%s %s", c ? ", " : "", rok_stall_cause_name(c), t);
  }
  print_line("Step time", step, tokens);
  print_line("Per GPU", gpu_rate, gpu_note);
  print_line("Compute", compute, compute_note);
  print_line("Stalls", stall, causes->str);
  g_string_free(causes, TRUE);
}

static void print_traffic(const RokSimResult *r) {
  g_autofree char *d2h = rok_units_format_size(r->pcie_d2h_bytes), *h2d = rok_units_format_size(r->pcie_h2d_bytes);
  g_autofree char *w = rok_units_format_size(r->nvme_write_bytes), *rd = rok_units_format_size(r->nvme_read_bytes);
  g_autofree char *pcie = g_strdup_printf("%s d2h, %s h2d", d2h, h2d), *nvme = g_strdup_printf("%s written, %s read", w, rd);
  print_line("PCIe", "", pcie);
  print_line("NVMe", "", nvme);
  for (guint s = ROK_STREAM_D2H; s < ROK_STREAM_COUNT; s++) {
    g_autofree char *busy = rok_units_format_time((double)r->busy_ns[s] / 1e9), *share = percent(r->busy_ns[s], r->step_ns);
    g_autofree char *label = g_strdup_printf("  %s busy", rok_stream_name(s));
    print_line(label, busy, share);
  }
}

static void print_summary(const RokSimResult *r, const RokTrace *trace, const RokHw *hw, const char *strategy) {
  g_autofree char *batch = cli_batch_text(trace);
  printf("%s on %s, strategy %s: %s, %" G_GUINT64_FORMAT " simulated in detail\n\n", trace->model_name, hw->name,
         strategy, batch, r->detailed_micro_batches);
  print_time(r, trace, hw);
  print_memory(r, trace);
  print_traffic(r);
  printf("\n%s.\n", CLI_MFU_BASIS);
}

/* The plan of --plan FILE (its decisions and step options) or of
 * --strategy; `strategy` names it. */
static RokStepPlan *load_plan(const Options *o, const RokTrace *trace, const RokHw *hw, char **strategy,
                              GError **error) {
  if (o->plan != NULL && o->strategy != NULL) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "--plan and --strategy exclude each other");
    return NULL;
  }
  if (o->plan != NULL) {
    g_autoptr(RokPlanFile) file = rok_plan_file_load(o->plan, trace, error);
    if (file == NULL)
      return NULL;
    if (!file->feasible) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: the plan is not feasible: it holds no decisions", o->plan);
      return NULL;
    }
    if (g_strcmp0(file->hw_name, hw->name) != 0)
      g_printerr("rok simulate: warning: %s was planned for %s, simulated on %s\n", o->plan, file->hw_name, hw->name);
    *strategy = g_strdup(file->strategy);
    return g_steal_pointer(&file->plan);
  }
  const char *name = o->strategy ? o->strategy : "keep";
  RokStrategy s;
  if (!rok_strategy_from_name(name, &s, error))
    return NULL;
  if (s == ROK_STRATEGY_ROK) { /* the planner's plans come as files from `rok plan` */
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "unknown strategy \"%s\" (known: keep, recompute, selective, offload, tba; a plan of `rok plan`: "
                "--plan FILE)", name);
    return NULL;
  }
  *strategy = g_strdup(name);
  return rok_strategy_plan(s, trace, hw, NULL, error);
}

static RokSimResult *run(const Options *o, const RokTrace *trace, const RokHw *hw, char **strategy,
                         GError **error) {
  g_autoptr(RokStepPlan) plan = load_plan(o, trace, hw, strategy, error);
  if (plan == NULL || !apply_options(o, plan, error))
    return NULL;
  gboolean record = o->timeline != NULL || o->timeline_chart != NULL;
  RokSimResult *r = (record ? rok_simulate_recorded : rok_simulate)(trace, hw, plan, error);
  if (r != NULL && !cli_timeline_write(r, trace, hw, *strategy, o->timeline, o->timeline_chart, error))
    g_clear_pointer(&r, rok_sim_result_free);
  return r;
}

int cli_cmd_simulate(int argc, char **argv) {
  const RokCommand *self = cli_find("simulate");
  RokCliCommon common = {0};
  RokChartStyle style = {0};
  g_auto(Options) o = {.prefetch_window = CLI_UNSET, .detail = CLI_UNSET};
  const GOptionEntry entries[] = {
      {"hw", 0, 0, G_OPTION_ARG_STRING, &o.hw, "Hardware profile (required)", "HW"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING, &o.strategy,
       "keep (default), recompute, selective, offload or tba", "S"},
      {"plan", 0, 0, G_OPTION_ARG_FILENAME, &o.plan,
       "Simulate a rok-plan/1 file (from rok plan, maybe edited): its decisions and step options", "FILE"},
      {"timeline", 't', 0, G_OPTION_ARG_FILENAME, &o.timeline,
       "Write a Chrome/Perfetto trace-event timeline to FILE", "FILE"},
      {"timeline-chart", 0, 0, G_OPTION_ARG_FILENAME, &o.timeline_chart,
       "Draw the step's timeline and memory to CHART (.png, .svg or .pdf)", "CHART"},
      {"budget", 'b', 0, G_OPTION_ARG_STRING, &o.budget,
       "GPU memory that prefetching and waiting respect (default: the GPU's)", "SIZE"},
      {"prefetch-window", 0, 0, G_OPTION_ARG_INT, &o.prefetch_window,
       "Prefetch look-ahead in units of --prefetch-unit (default 1)", "N"},
      {"prefetch-unit", 0, 0, G_OPTION_ARG_STRING, &o.prefetch_unit,
       "What the window counts: layer (default), module (attention, MLP) or op", "UNIT"},
      {"detail", 0, 0, G_OPTION_ARG_INT, &o.detail, "Micro-batches simulated event by event (default 3)", "N"},
      CLI_CHART_ENTRIES(&style),
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, &common);
  GError *error = NULL;
  g_autoptr(RokTrace) trace = NULL;
  g_autoptr(RokHw) hw = NULL;
  g_autoptr(RokSimResult) r = NULL;
  g_autofree char *strategy = NULL;
  if (!cli_parse(context, &argc, &argv, &error) || !rok_charts_set_style(&style, &error) ||
      !cli_positionals(argc, argv, 1, "MODEL", &error) ||
      (o.hw == NULL && (error = g_error_new_literal(ROK_ERROR, ROK_ERROR_USAGE, "missing --hw HW (see --help)"))) ||
      (hw = cli_load_hw(o.hw, common.hw_sets, &error)) == NULL ||
      (trace = cli_load_trace(argv[1], common.sets, &error)) == NULL ||
      (r = run(&o, trace, hw, &strategy, &error)) == NULL) {
    cli_common_clear(&common);
    return cli_fail(self->name, error);
  }
  cli_common_clear(&common);
  if (common.json)
    return cli_print_json(to_json(r, trace, hw, strategy), &error) ? ROK_EXIT_OK
                                                                       : cli_fail(self->name, error);
  print_summary(r, trace, hw, strategy);
  return ROK_EXIT_OK;
}
