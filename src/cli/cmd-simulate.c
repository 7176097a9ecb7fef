/* rok simulate: one training step under one strategy, as the simulator
 * sees it: a summary, the JSON figures, a Chrome/Perfetto timeline. */
#include <stdio.h>
#include <string.h>

#include "rok/charts.h"
#include "cli.h"
#include "rok/core.h"
#include "rok/plan.h"

typedef struct {
  char *hw, *strategy, *timeline, *timeline_chart, *budget, *prefetch_unit, *stage, *plan;
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
  g_free(o->stage);
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
  g_autofree char *comm = rok_units_format_time((double)r->exposed_comm_ns / 1e9);
  g_autofree char *tp = rok_units_format_time((double)r->tp_comm_ns / 1e9);
  g_autofree char *dp = rok_units_format_time((double)r->dp_exposed_ns / 1e9);
  g_autofree char *dp_all = rok_units_format_time((double)r->dp_comm_ns / 1e9);
  g_autofree char *z3 = rok_units_format_time((double)r->zero3_exposed_ns / 1e9);
  g_autofree char *comm_note = g_strdup_printf("exposed: tensor-parallel %s, ZeRO-3 gathers %s, data-parallel %s of %s",
                                               tp, z3, dp, dp_all);
  g_autofree char *bubble = rok_units_format_time((double)r->bubble_ns / 1e9);
  g_autofree char *bubble_note = percent(r->bubble_ns, r->step_ns);
  print_line("Step time", step, tokens);
  print_line("Per GPU", gpu_rate, gpu_note);
  print_line("Compute", compute, compute_note);
  print_line("Communication", comm, comm_note);
  if (r->stages > 1)
    print_line("Pipeline bubble", bubble, bubble_note);
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

static gboolean pick_strategy(const Options *o, RokStrategy *strategy, GError **error) {
  if (o->plan != NULL && o->strategy != NULL) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "--plan and --strategy exclude each other");
    return FALSE;
  }
  if (o->plan != NULL) { /* the file names its strategy: rok_plan_file_load reads it */
    *strategy = ROK_STRATEGY_ROK;
    return TRUE;
  }
  const char *name = o->strategy ? o->strategy : "keep";
  if (!rok_strategy_from_name(name, strategy, error))
    return FALSE;
  if (*strategy == ROK_STRATEGY_ROK) { /* the planner's plans come as files from `rok plan` */
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "unknown strategy \"%s\" (known: keep, recompute, selective, offload, tba; a plan of `rok plan`: "
                "--plan FILE)", name);
    return FALSE;
  }
  return TRUE;
}

/* The plan of --plan FILE: its decisions and step options, for a model of
 * one pipeline stage (a plan file holds one trace's decisions). */
static RokStepPlan *load_plan_file(const Options *o, GPtrArray *traces, const RokHw *hw, RokStrategy *strategy,
                                   GError **error) {
  if (traces->len > 1) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "--plan: the model has %u pipeline stages; a plan file holds the decisions of one (plan the stages "
                "with rok plan --stage N)", traces->len);
    return NULL;
  }
  g_autoptr(RokPlanFile) file = rok_plan_file_load(o->plan, g_ptr_array_index(traces, 0), error);
  if (file == NULL)
    return NULL;
  if (!file->feasible) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: the plan is not feasible: it holds no decisions", o->plan);
    return NULL;
  }
  if (g_strcmp0(file->hw_name, hw->name) != 0)
    g_printerr("rok simulate: warning: %s was planned for %s, simulated on %s\n", o->plan, file->hw_name, hw->name);
  if (!rok_strategy_from_name(file->strategy, strategy, error))
    return NULL;
  return g_steal_pointer(&file->plan);
}

/* The timeline files, of the stage shown (stage 0 when all are). */
static gboolean save_timelines(const Options *o, const RokSimResult *r, const RokTrace *trace, const RokHw *hw,
                               RokStrategy strategy, GError **error) {
  return cli_timeline_write(r, trace, hw, rok_strategy_name(strategy), o->timeline, o->timeline_chart, error);
}

/* Every stage under the strategy; one result per stage, composed into the
 * pipeline when there are several. */
static RokSimResult **run(const Options *o, GPtrArray *traces, const RokHw *hw, RokStrategy *strategy, guint shown,
                          GError **error) {
  guint n = traces->len;
  g_autoptr(GPtrArray) plans = g_ptr_array_new_with_free_func((GDestroyNotify)rok_step_plan_free);
  for (guint s = 0; s < n; s++) {
    RokStepPlan *plan = o->plan != NULL ? load_plan_file(o, traces, hw, strategy, error)
                                        : rok_strategy_plan(*strategy, g_ptr_array_index(traces, s), hw, NULL, error);
    if (plan == NULL || !apply_options(o, plan, error)) {
      rok_step_plan_free(plan);
      return NULL;
    }
    g_ptr_array_add(plans, plan);
  }
  gboolean record = o->timeline != NULL || o->timeline_chart != NULL;
  RokSimResult **results = g_new0(RokSimResult *, n + 1);
  gboolean ok = n > 1 ? rok_pipeline_simulate((RokTrace *const *)traces->pdata, hw, (RokStepPlan *const *)plans->pdata,
                                              n, record, results, error)
                      : (results[0] = (record ? rok_simulate_recorded : rok_simulate)(g_ptr_array_index(traces, 0), hw,
                                                                                     g_ptr_array_index(plans, 0),
                                                                                     error)) != NULL;
  if (ok && record)
    ok = save_timelines(o, results[shown], g_ptr_array_index(traces, shown), hw, *strategy, error);
  if (!ok) {
    for (guint s = 0; s < n; s++)
      rok_sim_result_free(results[s]);
    g_clear_pointer(&results, g_free);
  }
  return results;
}

static void results_free(RokSimResult **results) {
  for (guint s = 0; results != NULL && results[s] != NULL; s++)
    rok_sim_result_free(results[s]);
  g_free(results);
}

static json_object *stages_json(RokSimResult **results, GPtrArray *traces, const RokHw *hw, RokStrategy strategy) {
  json_object *out = to_json(results[0], g_ptr_array_index(traces, 0), hw, rok_strategy_name(strategy));
  json_object *stages = json_object_new_array();
  for (guint s = 0; s < traces->len; s++)
    json_object_array_add(stages, rok_sim_result_to_json(results[s], g_ptr_array_index(traces, s)));
  json_object_object_add(out, "stages", stages);
  return out;
}

static int report(const Options *o, RokSimResult **results, GPtrArray *traces, const RokHw *hw, RokStrategy strategy,
                  gint stage, gboolean json) {
  GError *error = NULL;
  guint shown = stage < 0 ? 0 : (guint)stage;
  RokTrace *trace = g_ptr_array_index(traces, shown);
  if (json) {
    json_object *value = stage < 0 ? stages_json(results, traces, hw, strategy)
                                   : to_json(results[shown], trace, hw, rok_strategy_name(strategy));
    return cli_print_json(value, &error) ? ROK_EXIT_OK : cli_fail("simulate", error);
  }
  if (traces->len > 1)
    cli_print_stages(results, (RokTrace *const *)traces->pdata, traces->len);
  if (stage < 0 && traces->len > 1)
    printf("Stage 0 (the first: embedding and the most micro-batches in flight) in detail; --stage N for "
           "another:\n\n");
  else if (traces->len > 1)
    printf("Stage %d in detail:\n\n", stage);
  print_summary(results[shown], trace, hw, rok_strategy_name(strategy));
  (void)o;
  return ROK_EXIT_OK;
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
      {"stage", 0, 0, G_OPTION_ARG_STRING, &o.stage,
       "Pipeline stage to report in detail, or all (default: all, stage 0 in detail)", "N|all"},
      {"plan", 0, 0, G_OPTION_ARG_FILENAME, &o.plan,
       "Simulate a rok-plan/1 file (from rok plan, maybe edited): its decisions and step options", "FILE"},
      {"timeline", 't', 0, G_OPTION_ARG_FILENAME, &o.timeline,
       "Write a Chrome/Perfetto trace-event timeline to FILE (of the --stage shown)", "FILE"},
      {"timeline-chart", 0, 0, G_OPTION_ARG_FILENAME, &o.timeline_chart,
       "Draw the step's timeline and memory to CHART (.png, .svg or .pdf)", "CHART"},
      {"budget", 'b', 0, G_OPTION_ARG_STRING, &o.budget,
       "GPU memory that prefetching and waiting respect (default: the GPU's)", "SIZE"},
      {"prefetch-window", 0, 0, G_OPTION_ARG_INT, &o.prefetch_window,
       "Prefetch look-ahead in units of --prefetch-unit (default 1)", "N"},
      {"prefetch-unit", 0, 0, G_OPTION_ARG_STRING, &o.prefetch_unit,
       "What the window counts: layer (default), module (attention, MLP) or op", "UNIT"},
      {"detail", 0, 0, G_OPTION_ARG_INT, &o.detail,
       "Micro-batches simulated event by event (default 3; a pipeline stage's warm-up is always in detail)", "N"},
      CLI_CHART_ENTRIES(&style),
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, &common);
  GError *error = NULL;
  g_autoptr(GPtrArray) traces = NULL;
  g_autoptr(RokHw) hw = NULL;
  RokSimResult **results = NULL;
  RokStrategy strategy = ROK_STRATEGY_KEEP;
  gint stage = 0;
  if (!cli_parse(context, &argc, &argv, &error) || !rok_charts_set_style(&style, &error) ||
      !cli_positionals(argc, argv, 1, "MODEL", &error) ||
      (o.hw == NULL && (error = g_error_new_literal(ROK_ERROR, ROK_ERROR_USAGE, "missing --hw HW (see --help)"))) ||
      !pick_strategy(&o, &strategy, &error) || (hw = cli_load_hw(o.hw, common.hw_sets, &error)) == NULL ||
      (traces = cli_load_stages(argv[1], common.sets, &error)) == NULL ||
      !cli_parse_stage(o.stage, traces->len, &stage, &error) ||
      (results = run(&o, traces, hw, &strategy, stage < 0 ? 0 : (guint)stage, &error)) == NULL) {
    cli_common_clear(&common);
    return cli_fail(self->name, error);
  }
  cli_warn_unmodelled(((RokTrace *)g_ptr_array_index(traces, 0))->model, hw);
  cli_warn_far_shapes(g_ptr_array_index(traces, 0), hw);
  cli_common_clear(&common);
  int code = report(&o, results, traces, hw, strategy, stage, common.json);
  results_free(results);
  return code;
}
