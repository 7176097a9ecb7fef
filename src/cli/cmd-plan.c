/* rok plan: the recommended plan for a model on a machine within a memory
 * budget, against the baselines; its schedule, the ROK curve, SSD figures. */
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rok/charts.h"
#include "cli.h"
#include "rok/core.h"
#include "rok/plan.h"
#include "rok/schedule.h"

typedef struct {
  char *hw, *budget, *output, *strategy, *host_memory, *tiers, *min_lifetime, *max_rate, *stage;
  char *timeline, *timeline_chart, *granularity;
  gint points;
  gint64 offload_min_elements; /* G_MININT64: the strategies' default */
  RokSsdModel ssd;
} Options;

/* The SSDs must last this long by default (README, "SSD wear"). */
#define DEFAULT_MIN_SSD_LIFETIME "3y"

static void options_clear(Options *o) {
  g_free(o->hw);
  g_free(o->budget);
  g_free(o->output);
  g_free(o->strategy);
  g_free(o->host_memory);
  g_free(o->tiers);
  g_free(o->min_lifetime);
  g_free(o->max_rate);
  g_free(o->stage);
  g_free(o->timeline);
  g_free(o->timeline_chart);
  g_free(o->granularity);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

/* What the command works out, for the summary and the files. */
typedef struct {
  const RokTrace *trace;
  const RokHw *hw;
  RokStrategy strategy;
  guint64 budget;
  RokPlanner *planner;
  RokStepPlan *plan;
  RokSimResult *result;
  RokSimResult *baselines[ROK_STRATEGY_BASELINE_COUNT];
  char *baseline_errors[ROK_STRATEGY_BASELINE_COUNT];
  RokCurve *curve;
  RokSsdFigures ssd;
  RokSsdModel ssd_model;
  double max_write_rate; /* the limit the plan kept to (0: none) */
  json_object *layers;
  char *summary;
} Outcome;

static void outcome_clear(Outcome *o) {
  rok_planner_free(o->planner);
  rok_step_plan_free(o->plan);
  rok_sim_result_free(o->result);
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    rok_sim_result_free(o->baselines[b]);
    g_free(o->baseline_errors[b]);
  }
  rok_curve_free(o->curve);
  if (o->layers != NULL)
    json_object_put(o->layers);
  g_free(o->summary);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Outcome, outcome_clear)

/* --tiers keep,host,nvme,recompute: any subset, as decision bits. */
static gboolean parse_tiers(const char *text, guint *tiers, GError **error) {
  static const struct {
    const char *name;
    RokDecision decision;
  } names[] = {{"keep", ROK_DECISION_KEEP}, {"host", ROK_DECISION_OFFLOAD_HOST},
               {"nvme", ROK_DECISION_OFFLOAD_NVME}, {"recompute", ROK_DECISION_RECOMPUTE}};
  *tiers = 0;
  if (text == NULL)
    return TRUE;
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  for (guint i = 0; parts[i] != NULL; i++) {
    guint k = 0;
    while (k < G_N_ELEMENTS(names) && g_strcmp0(g_strstrip(parts[i]), names[k].name) != 0)
      k++;
    if (k == G_N_ELEMENTS(names)) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--tiers: unknown tier \"%s\" (known: keep, host, nvme, recompute)",
                  parts[i]);
      return FALSE;
    }
    *tiers |= 1u << names[k].decision;
  }
  return TRUE;
}

static gboolean positive_factor(const char *name, double x, GError **error) {
  if (x > 0 && isfinite(x))
    return TRUE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--%s must be a positive number, not %g", name, x);
  return FALSE;
}

/* The lifetime model and the wear limit: the least of --max-ssd-write-rate
 * and what keeps the drives alive for --min-ssd-lifetime. */
static gboolean ssd_limit(const Options *o, const RokHw *hw, Outcome *out, RokPlannerOptions *popts,
                          GError **error) {
  out->ssd_model = o->ssd;
  if (!positive_factor("write-amplification", o->ssd.write_amplification, error) ||
      !positive_factor("rated-write-amplification", o->ssd.rated_write_amplification, error) ||
      !positive_factor("retention-factor", o->ssd.retention_factor, error))
    return FALSE;
  gint64 life_ns = 0;
  double rate = 0;
  const char *life = o->min_lifetime ? o->min_lifetime : DEFAULT_MIN_SSD_LIFETIME;
  if (!rok_units_parse_time(life, &life_ns, error)) {
    g_prefix_error(error, "--min-ssd-lifetime: ");
    return FALSE;
  }
  if (o->max_rate != NULL && (!rok_units_parse_rate(o->max_rate, &rate, error) || rate <= 0)) {
    if (error != NULL && *error == NULL)
      g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "must be more than 0");
    g_prefix_error(error, "--max-ssd-write-rate: ");
    return FALSE;
  }
  double lifetime_rate = rok_ssd_max_write_rate(hw, &o->ssd, (double)life_ns / 1e9);
  if (life_ns > 0 && lifetime_rate <= 0 && hw->nvme.devices > 0 && o->min_lifetime != NULL)
    g_printerr("rok plan: warning: --min-ssd-lifetime not applied: %s does not rate its drives' endurance "
               "(nvme.endurance_pbw)\n", hw->name);
  if (lifetime_rate > 0)
    rate = rate > 0 ? MIN(rate, lifetime_rate) : lifetime_rate;
  popts->max_nvme_write_rate = out->max_write_rate = rate;
  return TRUE;
}

static gboolean check_options(const Options *o, const RokHw *hw, Outcome *out, RokPlannerOptions *popts,
                              GError **error) {
  rok_planner_options_init(popts);
  out->budget = hw->gpu.memory;
  if ((o->budget != NULL && !cli_parse_size("budget", o->budget, FALSE, &out->budget, error)) ||
      (o->host_memory != NULL && !cli_parse_size("host-memory", o->host_memory, TRUE, &popts->host_memory, error)) ||
      !rok_strategy_from_name(o->strategy ? o->strategy : "rok", &out->strategy, error))
    return FALSE;
  if (o->offload_min_elements != G_MININT64 &&
      !cli_check_range("offload-min-elements", o->offload_min_elements, 0, G_MAXINT64, error))
    return FALSE;
  if (o->offload_min_elements != G_MININT64) /* the planner honours it too */
    popts->strategy.offload_min_elements = popts->offload_min_elements = (guint64)o->offload_min_elements;
  if (o->points < 2) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--points must be at least 2, not %d", o->points);
    return FALSE;
  }
  if (!cli_check_range("points", o->points, 2, ROK_CURVE_MAX_POINTS, error))
    return FALSE;
  popts->curve_points = (guint)o->points; /* each curve point is the plan at its budget */
  if (o->granularity != NULL && !rok_granularity_from_name(o->granularity, &popts->granularity, error)) {
    g_prefix_error(error, "--granularity: ");
    return FALSE;
  }
  return parse_tiers(o->tiers, &popts->tiers, error) && ssd_limit(o, hw, out, popts, error);
}

/* A baseline that does not fit the budget is exit 3, like the planner. */
static gboolean plan_baseline(Outcome *out, GError **error) {
  out->plan = rok_planner_baseline(out->planner, out->strategy, out->budget, &out->result, error);
  if (out->plan == NULL)
    return FALSE;
  if (out->result->peak_bytes <= out->budget)
    return TRUE;
  g_autofree char *want = rok_units_format_size(out->budget), *peak = rok_units_format_size(out->result->peak_bytes);
  const char *how = NULL;
  g_autofree char *least = rok_units_format_size(rok_planner_min_budget(out->planner, &how));
  g_set_error(error, ROK_ERROR, ROK_ERROR_NO_FIT,
              "strategy %s does not fit in %s: its peak is %s (the smallest plan that fits needs %s: %s)",
              rok_strategy_name(out->strategy), want, peak, least, how);
  return FALSE;
}

static void run_baselines(Outcome *out) {
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    GError *local = NULL;
    g_autoptr(RokStepPlan) plan = rok_planner_baseline(out->planner, b, out->budget, &out->baselines[b], &local);
    if (plan == NULL) {
      out->baseline_errors[b] = g_strdup(local->message);
      g_error_free(local);
    }
  }
}

static void progress(guint done, guint total, gpointer user_data) {
  (void)user_data;
  printf("\rROK curve: %u of %u budgets planned", done, total);
  if (done == total)
    printf("\r\033[K");
  fflush(stdout);
}

static gboolean run(const Options *o, const RokTrace *trace, const RokHw *hw, Outcome *out, GError **error) {
  RokPlannerOptions popts;
  out->trace = trace;
  out->hw = hw;
  if (!check_options(o, hw, out, &popts, error) ||
      (out->planner = rok_planner_new(trace, hw, &popts, error)) == NULL)
    return FALSE;
  if (out->strategy == ROK_STRATEGY_ROK)
    out->plan = rok_planner_plan(out->planner, out->budget, &out->result, error);
  else if (!plan_baseline(out, error))
    return FALSE;
  if (out->plan == NULL)
    return FALSE;
  run_baselines(out);
  out->curve = rok_planner_curve(out->planner, (guint)o->points, isatty(STDOUT_FILENO) ? progress : NULL, NULL,
                                 error);
  if (out->curve == NULL)
    return FALSE;
  rok_ssd_figures(trace, hw, out->plan, out->result, &out->ssd_model, &out->ssd);
  out->layers = rok_plan_layers_to_json(trace, out->plan);
  return TRUE;
}

/* ---- the other pipeline stages ---- */

static json_object *no_fit_json(const RokTrace *trace, const RokHw *hw, const Outcome *out);

/* Stage `s` planned under the same budget and strategy as the one shown;
 * when none fits, with --json, the stage's no-fit document in *no_fit. */
static RokStepPlan *plan_stage(const Options *o, const Outcome *shown, RokTrace *trace, guint s, gboolean json,
                               json_object **no_fit, GError **error) {
  RokPlannerOptions popts;
  g_auto(Outcome) local = {0};
  if (!check_options(o, shown->hw, &local, &popts, error) ||
      (local.planner = rok_planner_new(trace, shown->hw, &popts, error)) == NULL)
    return NULL;
  local.strategy = shown->strategy;
  RokStepPlan *plan = shown->strategy == ROK_STRATEGY_ROK
                          ? rok_planner_plan(local.planner, shown->budget, &local.result, error)
                          : rok_planner_baseline(local.planner, shown->strategy, shown->budget, &local.result, error);
  if (plan == NULL && json && g_error_matches(*error, ROK_ERROR, ROK_ERROR_NO_FIT)) {
    *no_fit = no_fit_json(trace, shown->hw, &local);
    json_object_object_add(*no_fit, "pipeline_stage", json_object_new_uint64(s));
  }
  if (plan == NULL)
    g_prefix_error(error, "pipeline stage %u: ", s);
  return plan;
}

/* The stages other than the one shown, planned in threads (each planner
 * is independent, so the plans do not depend on which thread made them). */
typedef struct {
  const Options *o;
  const Outcome *out;
  GPtrArray *traces;
  guint shown, n;
  gboolean json;
  RokStepPlan **plans;
  json_object **no_fits;
  GError **errors;
  gint next; /* atomic */
} StageJob;

static gpointer stage_worker(gpointer data) {
  StageJob *job = data;
  for (guint s; (s = (guint)g_atomic_int_add(&job->next, 1)) < job->n;)
    if (s != job->shown)
      job->plans[s] = plan_stage(job->o, job->out, g_ptr_array_index(job->traces, s), s, job->json,
                                 &job->no_fits[s], &job->errors[s]);
  return NULL;
}

static void plan_other_stages(StageJob *job) {
  guint threads = CLAMP(g_get_num_processors(), 1, job->n);
  g_autoptr(GPtrArray) workers = g_ptr_array_new();
  for (guint i = 0; i < threads; i++) {
    GThread *t = g_thread_try_new("rok-stage", stage_worker, job, NULL);
    if (t == NULL)
      break; /* RLIMIT_NPROC: the threads made, or this one, do it all */
    g_ptr_array_add(workers, t);
  }
  if (workers->len == 0)
    stage_worker(job);
  for (guint i = 0; i < workers->len; i++)
    g_thread_join(g_ptr_array_index(workers, i));
}

/* Every stage planned under the budget and the pipeline composed from
 * the plans; the table printed (unless JSON) and added to the report. The
 * first stage (in order) that cannot be planned is the one reported. */
static gboolean plan_stages(const Options *o, const Outcome *out, GPtrArray *traces, guint shown, RokPlanFile *file,
                            gboolean json, GError **error) {
  guint n = traces->len;
  g_autofree RokStepPlan **stage_plans = g_new0(RokStepPlan *, n);
  g_autofree json_object **no_fits = g_new0(json_object *, n);
  g_autofree GError **errors = g_new0(GError *, n);
  StageJob job = {.o = o, .out = out, .traces = traces, .shown = shown, .n = n, .json = json,
                  .plans = stage_plans, .no_fits = no_fits, .errors = errors};
  plan_other_stages(&job);
  stage_plans[shown] = rok_step_plan_copy(out->plan);
  g_autoptr(GPtrArray) plans = g_ptr_array_new_with_free_func((GDestroyNotify)rok_step_plan_free);
  gboolean ok = TRUE;
  for (guint s = 0; s < n; s++) {
    g_ptr_array_add(plans, stage_plans[s]);
    if (ok && stage_plans[s] == NULL) {
      ok = FALSE;
      if (no_fits[s] != NULL)
        cli_print_json(g_steal_pointer(&no_fits[s]), NULL);
      g_propagate_error(error, g_steal_pointer(&errors[s]));
    }
    if (no_fits[s] != NULL)
      json_object_put(no_fits[s]);
    g_clear_error(&errors[s]);
  }
  if (!ok)
    return FALSE;
  g_autofree RokSimResult **results = g_new0(RokSimResult *, n);
  if (!rok_pipeline_simulate((RokTrace *const *)traces->pdata, out->hw, (RokStepPlan *const *)plans->pdata, n, FALSE,
                             results, error))
    return FALSE;
  json_object *stages = json_object_new_array();
  for (guint s = 0; s < n; s++)
    json_object_array_add(stages, rok_sim_result_to_json(results[s], g_ptr_array_index(traces, s)));
  json_object_object_add(file->report, "stages", stages);
  if (!json) {
    cli_print_stages(results, (RokTrace *const *)traces->pdata, n);
    printf("Every stage planned under the budget; stage %u (%s) in detail below, its figures for the stage "
           "alone (no bubble); --stage N for another.\n\n",
           shown, shown == 0 ? "the first: embedding and the most micro-batches in flight" : "chosen");
  }
  for (guint s = 0; s < n; s++)
    rok_sim_result_free(results[s]);
  return TRUE;
}

/* ---- the plan document (rok-plan/1) ---- */

static json_object *baselines_json(const Outcome *out) {
  json_object *list = json_object_new_array();
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "strategy", json_object_new_string(rok_strategy_name(b)));
    if (out->baselines[b] == NULL) {
      json_object_object_add(o, "available", json_object_new_boolean(FALSE));
      json_object_object_add(o, "reason", json_object_new_string(out->baseline_errors[b]));
    } else {
      json_object_object_add(o, "available", json_object_new_boolean(TRUE));
      json_object *fields = rok_sim_result_to_json(out->baselines[b], out->trace);
      json_object_object_foreach(fields, key, value) json_object_object_add(o, key, json_object_get(value));
      json_object_put(fields);
    }
    json_object_array_add(list, o);
  }
  return list;
}

static RokPlanFile *plan_file(const Outcome *out) {
  RokPlanFile *file = g_new0(RokPlanFile, 1);
  file->strategy = g_strdup(rok_strategy_name(out->strategy));
  file->model_name = g_strdup(out->trace->model_name);
  file->hw_name = g_strdup(out->hw->name);
  file->trace_sha256 = rok_trace_sha256(out->trace, NULL);
  file->budget_bytes = out->budget;
  file->feasible = TRUE;
  file->plan = rok_step_plan_copy(out->plan);
  file->report = json_object_new_object();
  json_object_object_add(file->report, "summary", json_object_new_string(out->summary));
  json_object_object_add(file->report, "predicted", rok_sim_result_to_json(out->result, out->trace));
  json_object_object_add(file->report, "baselines", baselines_json(out));
  json_object_object_add(file->report, "curve", rok_curve_to_json(out->curve));
  json_object_object_add(file->report, "curve_baselines", rok_curve_baselines_to_json(out->curve));
  json_object *ssd = rok_ssd_figures_to_json(&out->ssd);
  /* The wear limit every candidate kept to (null: none). */
  json_object_object_add(ssd, "max_write_rate", out->max_write_rate > 0 ? rok_json_new_double(out->max_write_rate) : NULL);
  json_object_object_add(file->report, "ssd", ssd);
  json_object_object_add(file->report, "layers", json_object_get(out->layers));
  return file;
}

/* With --json and no plan that fits: say so on stdout as well. */
static json_object *no_fit_json(const RokTrace *trace, const RokHw *hw, const Outcome *out) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "format", json_object_new_string("rok-plan/1"));
  json_object_object_add(o, "strategy", json_object_new_string(rok_strategy_name(out->strategy)));
  json_object_object_add(o, "model", json_object_new_string(trace->model_name));
  json_object_object_add(o, "hw", json_object_new_string(hw->name));
  g_autofree char *hash = rok_trace_sha256(trace, NULL);
  json_object_object_add(o, "trace_sha256", json_object_new_string(hash));
  json_object_object_add(o, "budget_bytes", json_object_new_uint64(out->budget));
  json_object_object_add(o, "feasible", json_object_new_boolean(FALSE));
  const char *how = NULL;
  json_object_object_add(o, "min_budget_bytes", json_object_new_uint64(rok_planner_min_budget(out->planner, &how)));
  json_object_object_add(o, "min_budget_how", json_object_new_string(how));
  return o;
}

/* ---- when nothing fits: what the fixed memory is, and what would help ---- */

static char *fixed_text(const RokTrace *trace) {
  const RokFixedMemory *f = &trace->fixed;
  g_autofree char *w = rok_units_format_size(f->weight_bytes), *g = rok_units_format_size(f->gradient_bytes);
  g_autofree char *o = rok_units_format_size(f->optimizer_bytes);
  g_autofree char *sum = rok_units_format_size(rok_fixed_memory_bytes(f));
  g_autofree char *params = rok_units_format_count((double)f->params_per_gpu);
  const RokModel *m = trace->model;
  /* The config's own words for its optimizer and precision. */
  json_object *config = m == NULL ? NULL : rok_model_to_json(m);
  g_autofree char *how =
      m == NULL ? g_strdup("")
                : g_strdup_printf(" (%s parameters on this GPU, optimizer %s, precision %s, ZeRO stage %" G_GUINT64_FORMAT
                                  " over %" G_GUINT64_FORMAT " data-parallel copies)",
                                  params, json_object_get_string(json_object_object_get(config, "optimizer")),
                                  json_object_get_string(json_object_object_get(config, "precision")), m->zero_stage,
                                  m->data_parallel);
  if (config != NULL)
    json_object_put(config);
  return g_strdup_printf("weights %s + gradients %s + optimizer states %s = %s%s", w, g, o, sum, how);
}

/* Appends to a "no plan fits" error what the budget must hold before any
 * activation and the levers that shrink it. */
static void explain_no_fit(const Outcome *out, GError **error) {
  if (error == NULL || *error == NULL || !g_error_matches(*error, ROK_ERROR, ROK_ERROR_NO_FIT))
    return;
  const RokFixedMemory *f = &out->trace->fixed;
  guint64 fixed = rok_fixed_memory_bytes(f);
  g_autofree char *parts = fixed_text(out->trace);
  const char *how = NULL;
  g_autofree char *least = rok_units_format_size(rok_planner_min_budget(out->planner, &how));
  g_strdelimit(least, " ", '\0'); /* "26.4 GiB" -> "26.4" */
  g_autofree char *least_arg = g_strconcat(least, least + strlen(least) + 1, NULL);
  const RokModel *m = out->trace->model;
  guint64 stage = m != NULL ? m->zero_stage : 3;
  /* Megatron-LM stops at its distributed optimizer (stage 1); ZeRO-2 and 3 are DeepSpeed's. */
  gboolean megatron = m != NULL && m->train.framework == ROK_FRAMEWORK_MEGATRON;
  g_autofree char *zero =
      stage >= 3 ? g_strdup("")
                 : g_strdup_printf(", a higher ZeRO stage (%s--set zero_stage=%" G_GUINT64_FORMAT
                                   "%s: 1 shards optimizer states over the data-parallel copies, 2 "
                                   "also gradients, 3 also weights)",
                                   megatron && stage + 1 >= 2 ? "--set framework=deepspeed " : "",
                                   megatron && stage == 0 ? (guint64)1 : stage + 1, stage + 1 < 3 ? " or more" : "");
  GString *text = g_string_new((*error)->message);
  g_string_append_printf(text, "\n  Fixed memory, before any activation: %s%s.", parts,
                         fixed >= out->budget ? ": more than the budget by itself" : "");
  g_string_append_printf(text,
                         "\n  What would make room: a bigger budget (--budget %s or more)%s, more tensor or pipeline "
                         "parallelism (--set tensor_parallel=N), a "
                         "memory-efficient optimizer (--set optimizer=adam8bit, adafactor, apollo or apollo_mini), "
                         "LoRA or frozen layers (--set lora_rank=16, --set frozen_layers=N: gradients and "
                         "optimizer states only for what trains), a shorter sequence or smaller micro-batch "
                         "(--set seq_len=N, --set micro_batch=N); outside what rok models: offloading optimizer "
                         "states (ZeRO-Offload).",
                         least_arg, zero);
  g_free((*error)->message);
  (*error)->message = g_string_free(text, FALSE);
}

/* ---- files: all written in a temporary folder, then put in DIR (rok_output_dir_begin) ---- */

static const char *const file_names[] = {"plan.json", "schedule.json", "rok-curve.csv", "rok-curve.png",
                                         "rok-curve.svg"};

static void point_of(const RokSimResult *r, RokCurvePoint *pt) {
  pt->peak_bytes = r->peak_bytes;
  pt->activation_peak_bytes = r->activation_peak_bytes;
  pt->step_time_s = r->step_time_s;
  pt->tokens_per_s = r->tokens_per_s;
}

/* The curve with what the table reports at the budget marked on it. */
static gboolean save_curve_chart(const Outcome *out, const char *path, GError **error) {
  RokCurveMarks marks = {.budget_bytes = out->budget, .has_chosen = TRUE};
  point_of(out->result, &marks.chosen);
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++)
    if ((marks.has_baseline[b] = out->baselines[b] != NULL))
      point_of(out->baselines[b], &marks.baselines[b]);
  return rok_curve_save_chart(out->curve, &marks, path, error);
}

static gboolean write_one(const Outcome *out, const RokPlanFile *file, guint i, const char *path, GError **error) {
  g_autoptr(RokSchedule) schedule = NULL;
  switch (i) {
  case 0:
    return rok_plan_file_save(file, out->trace, path, error);
  case 1:
    schedule = rok_sim_schedule_new(out->trace, out->hw, out->plan, rok_strategy_name(out->strategy), out->budget,
                                error);
    return schedule != NULL && rok_schedule_save(schedule, path, error);
  case 2:
    return rok_curve_save_csv(out->curve, path, error);
  default:
    return save_curve_chart(out, path, error);
  }
}

static gboolean write_files(const Outcome *out, const RokPlanFile *file, const char *dir, GError **error) {
  g_autoptr(RokOutputDir) folder = rok_output_dir_begin(dir, error);
  if (folder == NULL)
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS(file_names); i++) {
    g_autofree char *path = g_build_filename(rok_output_dir_path(folder), file_names[i], NULL);
    if (!write_one(out, file, i, path, error))
      return FALSE;
  }
  return rok_output_dir_commit(g_steal_pointer(&folder), error);
}

/* ---- the human summary ---- */

/* printf's widths count bytes; "–" is three. Pad by characters instead. */
static void cell(const char *text, int width, gboolean right) {
  int pad = MAX(width - (int)g_utf8_strlen(text, -1), 0);
  if (right)
    printf("%*s%s  ", pad, "", text);
  else
    printf("%s%*s  ", text, pad, "");
}

static char *names_text(json_object *tensors, RokDecision d) {
  json_object *list = json_object_object_get(tensors, rok_decision_name(d));
  GString *s = g_string_new(NULL);
  for (gsize i = 0; i < json_object_array_length(list); i++)
    g_string_append_printf(s, "%s%s", i ? ", " : "", json_object_get_string(json_object_array_get_idx(list, i)));
  return g_string_free(s, FALSE);
}

static void print_layer_row(json_object *run) {
  gint first = json_object_get_int(json_object_object_get(run, "first"));
  gint last = json_object_get_int(json_object_object_get(run, "last"));
  g_autofree char *layers = first < 0     ? g_strdup("outside")
                            : first == last ? g_strdup_printf("%d", first)
                                            : g_strdup_printf("%d–%d", first, last);
  json_object *bytes = json_object_object_get(run, "bytes"), *tensors = json_object_object_get(run, "tensors");
  printf("  ");
  cell(layers, 8, FALSE);
  for (guint d = 0; d < ROK_DECISION_COUNT; d++) {
    g_autofree char *size =
        rok_units_format_size((guint64)json_object_get_uint64(json_object_object_get(bytes, rok_decision_name(d))));
    cell(size, 10, TRUE);
  }
  GString *what = g_string_new(NULL);
  for (guint d = ROK_DECISION_OFFLOAD_NVME; d < ROK_DECISION_COUNT; d++) {
    g_autofree char *names = names_text(tensors, d);
    if (*names)
      g_string_append_printf(what, "%s%s: %s", what->len ? "; " : "", rok_decision_name(d), names);
  }
  printf("%s\n", what->len ? what->str : "everything kept");
  g_string_free(what, TRUE);
}

static void print_layers(const Outcome *out) {
  printf("\nDecisions per layer (bytes of one micro-batch; a run of layers shows the sum):\n  ");
  cell("layers", 8, FALSE);
  const char *heads[] = {"keep", "to NVMe", "to host", "recompute"};
  for (guint d = 0; d < ROK_DECISION_COUNT; d++)
    cell(heads[d], 10, TRUE);
  printf("offloaded or recomputed\n");
  for (gsize i = 0; i < json_object_array_length(out->layers); i++)
    print_layer_row(json_object_array_get_idx(out->layers, i));
}

static void print_row(const char *name, const RokSimResult *r, guint64 budget, const char *note) {
  g_autofree char *step = rok_units_format_time(r->step_time_s), *rate = rok_units_format_count(r->tokens_per_s);
  g_autofree char *peak = rok_units_format_size(r->peak_bytes), *act = rok_units_format_size(r->activation_peak_bytes);
  g_autofree char *tokens = g_strdup_printf("%s/s", rate), *gpu_rate = rok_units_format_count(r->tokens_per_gpu_s);
  g_autofree char *gpu_tokens = g_strdup_printf("%s/s", gpu_rate), *flops = cli_flops_text(r->model_flops_per_gpu_s);
  g_autofree char *mfu = cli_percent_text(r->mfu);
  printf("  ");
  cell(name, 10, FALSE);
  cell(step, 9, TRUE);
  cell(tokens, 10, TRUE);
  cell(gpu_tokens, 10, TRUE);
  cell(flops, 12, TRUE);
  cell(mfu, 5, TRUE);
  cell(peak, 10, TRUE);
  cell(act, 10, TRUE);
  printf("%s%s\n", r->peak_bytes <= budget ? "fits" : "does not fit", note);
}

static void print_comparison(const Outcome *out) {
  g_autofree char *budget = rok_units_format_size(out->budget), *basis = cli_replica_text(out->trace);
  printf("\nPredicted, against the baselines under the same budget (%s); tokens %s:\n  ", budget, basis);
  static const struct {
    const char *head;
    int width;
  } heads[] = {{"strategy", -10}, {"step", 9},       {"tokens", 10}, {"per GPU", 10},
               {"model FLOP/s", 12}, {"MFU", 5}, {"peak", 10},   {"activation", 10}};
  for (guint i = 0; i < G_N_ELEMENTS(heads); i++)
    cell(heads[i].head, ABS(heads[i].width), heads[i].width > 0);
  printf("\n");
  print_row(rok_strategy_name(out->strategy), out->result, out->budget, " (this plan)");
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    if (out->baselines[b] != NULL)
      print_row(rok_strategy_name(b), out->baselines[b], out->budget, "");
    else
      printf("  %-10s  n/a: %s\n", rok_strategy_name(b), out->baseline_errors[b]);
  }
  const RokSimResult *r = out->result;
  g_autofree char *recompute = rok_units_format_time((double)r->recompute_ns / 1e9);
  g_autofree char *stall = rok_units_format_time((double)r->stall_total_ns / 1e9);
  g_autofree char *host = rok_units_format_size(r->host_peak_bytes);
  printf("  This plan: recompute %s and stalls %s per step; host memory for offloads %s.\n", recompute, stall, host);
  printf("  Per GPU: tokens/s over the copy's GPUs and model FLOP/s; %s.\n", CLI_MFU_BASIS);
}

/* Why "needed" and the simulated stalls can disagree, in one sentence. */
static void print_ssd_bandwidth_sentence(const Outcome *out) {
  const RokSsdFigures *s = &out->ssd;
  g_autofree char *stall = rok_units_format_time((double)out->result->stall_total_ns / 1e9);
  g_autofree char *read = rok_units_format_time((double)out->result->stall_ns[ROK_STALL_READ] / 1e9);
  if (s->required_write_bandwidth <= s->path_write_bandwidth)
    printf("  The SSDs write faster than SSDTrain's rule needs, so the writes hide behind 1.5 forward passes;"
           " simulated stalls: %s per step.\n", stall);
  else
    printf("  Needed is more than the SSDs write: by SSDTrain's rule the writes do not hide behind 1.5 forward "
           "passes, but the simulation lets them run on into backward and finds %s of stalls per step (%s waiting "
           "for reads)%s.\n",
           stall, read, out->result->stall_total_ns == 0 ? ": they finish before backward needs the tensors" : "");
}

/* Why the bytes written differ from the decisions table's sum. */
static void print_ssd_bytes_sentence(const Outcome *out) {
  const RokSimResult *r = out->result;
  const RokSsdFigures *s = &out->ssd;
  guint64 table = s->offload_bytes_per_micro_batch * r->micro_batches;
  if (table == r->nvme_write_bytes && r->nvme_read_bytes == r->nvme_write_bytes)
    return;
  g_autofree char *per_mb = rok_units_format_size(s->offload_bytes_per_micro_batch);
  g_autofree char *sum = rok_units_format_size(table), *w = rok_units_format_size(r->nvme_write_bytes);
  g_autofree char *rd = rok_units_format_size(r->nvme_read_bytes);
  printf("  The decisions table sends %s per micro-batch to the SSDs, %s over the step's %" G_GUINT64_FORMAT
         " micro-batches; the simulated step writes %s and reads back %s: backward found %" G_GUINT64_FORMAT
         " offloaded tensors still in GPU memory (their copies dropped or not read back), and reads of tensors still "
         "in the staging buffer are served from there, not from the SSDs.\n",
         per_mb, sum, r->micro_batches, w, rd, r->forwarded_tensors);
}

/* Per drive, and for the whole node when the profile is a node's. */
static void print_ssd_shares(const RokSsdFigures *s, const RokHw *hw) {
  double drives = (double)hw->nvme.devices;
  g_autofree char *day = rok_units_format_size((guint64)(s->write_bytes_per_day / drives));
  g_autofree char *need = rok_units_format_rate(s->required_write_bandwidth / drives);
  printf("  Per drive: %s per day, %s of write bandwidth needed (each of %" G_GUINT64_FORMAT " striped).\n", day,
         need, hw->nvme.devices);
  if (hw->node.gpus > 1) {
    g_autofree char *node = rok_units_format_size((guint64)(s->write_bytes_per_day * (double)hw->node.gpus));
    printf("  Per node: %" G_GUINT64_FORMAT " GPUs like GPU %" G_GUINT64_FORMAT " write %s per day in all.\n",
           hw->node.gpus, hw->node.gpu, node);
  }
}

static void print_ssd(const Outcome *out) {
  const RokSsdFigures *s = &out->ssd;
  const RokHw *hw = out->hw;
  if (hw->nvme.devices == 0) {
    printf("\nSSDs: none in %s.\n", hw->name);
    return;
  }
  g_autofree char *cap = rok_units_format_size(hw->nvme.capacity);
  if (hw->nvme.endurance_pbw > 0)
    printf("\nSSDs (%" G_GUINT64_FORMAT " x %s, %g PBW each):", hw->nvme.devices, cap, hw->nvme.endurance_pbw);
  else
    printf("\nSSDs (%" G_GUINT64_FORMAT " x %s, endurance not rated in the profile):", hw->nvme.devices, cap);
  if (s->write_bytes_per_step == 0) {
    printf(" this plan writes nothing to them.\n");
    return;
  }
  g_autofree char *step = rok_units_format_size(s->write_bytes_per_step);
  g_autofree char *day = rok_units_format_size((guint64)s->write_bytes_per_day);
  g_autofree char *need = rok_units_format_rate(s->required_write_bandwidth);
  g_autofree char *avg = rok_units_format_rate(s->average_write_bandwidth);
  g_autofree char *array = rok_units_format_rate(s->array_write_bandwidth);
  g_autofree char *path = rok_units_format_rate(s->path_write_bandwidth);
  g_autofree char *fwd = rok_units_format_time(s->forward_time_s);
  printf(" writes %s per step, %s per day at the predicted step time, training 24/7.\n", step, day);
  print_ssd_shares(s, hw);
  printf("  Write bandwidth needed: %s (SSDTrain: offloaded bytes per micro-batch / (1.5 x forward %s));\n"
         "  simulated average %s; the array writes %s (%s through PCIe).\n",
         need, fwd, avg, array, path);
  print_ssd_bandwidth_sentence(out);
  print_ssd_bytes_sentence(out);
  if (isnan(s->lifetime_years)) {
    printf("  Lifetime: unknown (add nvme.endurance_pbw, the drives' rated petabytes written, to the profile).\n");
    return;
  }
  g_autofree char *life = s->lifetime_years >= 1 ? g_strdup_printf("%.1f years", s->lifetime_years)
                                                 : rok_units_format_time(s->lifetime_years * 365.25 * 86400);
  printf("  Lifetime: %s: the rated endurance x %g (the rating's workload amplification) x %g (retention)\n"
         "  / %g (this workload's write amplification) over the writes per day.\n",
         life, s->rated_write_amplification, s->retention_factor, s->write_amplification);
}

static void print_summary(const Outcome *out, const char *dir) {
  const RokTrace *trace = out->trace;
  g_autofree char *budget = rok_units_format_size(out->budget), *gpu = rok_units_format_size(out->hw->gpu.memory);
  const RokFixedMemory *f = &trace->fixed;
  g_autofree char *fixed = rok_units_format_size(rok_fixed_memory_bytes(f));
  g_autofree char *batch = cli_batch_text(trace);
  printf("%s on %s, budget %s (the GPU has %s; fixed memory %s)%s\n%s.\n\n%s\n", trace->model_name, out->hw->name,
         budget, gpu, fixed, out->budget > out->hw->gpu.memory ? ": the budget exceeds the GPU's memory" : "", batch,
         out->summary);
  print_layers(out);
  print_comparison(out);
  print_ssd(out);
  if (out->curve->points->len > 0) {
    const RokCurvePoint *lo = &g_array_index(out->curve->points, RokCurvePoint, 0);
    const RokCurvePoint *hi = &g_array_index(out->curve->points, RokCurvePoint, out->curve->points->len - 1);
    g_autofree char *a = rok_units_format_size(lo->budget_bytes), *b = rok_units_format_size(hi->budget_bytes);
    g_autofree char *ta = rok_units_format_time(lo->step_time_s), *tb = rok_units_format_time(hi->step_time_s);
    printf("\nROK curve: %u budgets from %s (%s per step) to %s (%s, everything kept).\n", out->curve->points->len, a,
           ta, b, tb);
  }
  if (dir != NULL)
    printf("Wrote plan.json, schedule.json, rok-curve.csv, rok-curve.png and rok-curve.svg in %s\n", dir);
}

/* The recommended plan's step, simulated again recording its actions (the
 * same step: the simulator is deterministic). */
static gboolean write_timeline(const Options *o, const Outcome *out, GError **error) {
  if (o->timeline == NULL && o->timeline_chart == NULL)
    return TRUE;
  g_autoptr(RokSimResult) r = rok_simulate_recorded(out->trace, out->hw, out->plan, error);
  return r != NULL && cli_timeline_write(r, out->trace, out->hw, rok_strategy_name(out->strategy), o->timeline,
                                         o->timeline_chart, error);
}

int cli_cmd_plan(int argc, char **argv) {
  const RokCommand *self = cli_find("plan");
  RokCliCommon common = {0};
  RokChartStyle style = {0};
  g_auto(Options) o = {.points = 32, .offload_min_elements = G_MININT64};
  rok_ssd_model_init(&o.ssd);
  const GOptionEntry entries[] = {
      {"hw", 0, 0, G_OPTION_ARG_STRING, &o.hw, "Hardware profile (required)", "HW"},
      {"budget", 'b', 0, G_OPTION_ARG_STRING, &o.budget,
       "GPU memory the step may use, fixed memory included (default: the GPU's)", "SIZE"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output,
       "Write plan.json, schedule.json and the ROK curve (CSV, PNG, SVG) in DIR", "DIR"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING, &o.strategy,
       "rok (default, the planner), keep, recompute, selective, offload or tba", "S"},
      {"points", 'n', 0, G_OPTION_ARG_INT, &o.points, "Budgets on the ROK curve (default 32)", "N"},
      {"host-memory", 0, 0, G_OPTION_ARG_STRING, &o.host_memory,
       "Host memory offloads may use (default: the host's less the staging buffer; 0: SSDs only)", "SIZE"},
      {"offload-min-elements", 0, 0, G_OPTION_ARG_INT64, &o.offload_min_elements,
       "Offload tensors of at least N elements (default 8Mi, SSDTrain's floor; 0: any size)", "N"},
      {"tiers", 0, 0, G_OPTION_ARG_STRING, &o.tiers,
       "Decisions the planner may take: any of keep,host,nvme,recompute (default: all)", "LIST"},
      {"timeline", 't', 0, G_OPTION_ARG_FILENAME, &o.timeline,
       "Write the recommended plan's step as a Chrome/Perfetto trace-event timeline to FILE", "FILE"},
      {"timeline-chart", 0, 0, G_OPTION_ARG_FILENAME, &o.timeline_chart,
       "Draw the recommended plan's step (timeline and memory) to CHART (.png, .svg or .pdf)", "CHART"},
      {"granularity", 0, 0, G_OPTION_ARG_STRING, &o.granularity,
       "What one decision covers: tensor (default), module (a layer's attention or MLP block) or layer", "G"},
      {"min-ssd-lifetime", 0, 0, G_OPTION_ARG_STRING, &o.min_lifetime,
       "The SSDs must last this long training 24/7 (default 3y; 0: no limit)", "DURATION"},
      {"max-ssd-write-rate", 0, 0, G_OPTION_ARG_STRING, &o.max_rate,
       "Most bytes per second written to the SSDs on average (default: no limit)", "RATE"},
      {"write-amplification", 0, 0, G_OPTION_ARG_DOUBLE, &o.ssd.write_amplification,
       "The activation workload's write amplification (default 1.0: large sequential writes)", "X"},
      {"rated-write-amplification", 0, 0, G_OPTION_ARG_DOUBLE, &o.ssd.rated_write_amplification,
       "The write amplification the endurance rating assumes (default 1.0: the rating at face value; SSDTrain 2.5)",
       "X"},
      {"retention-factor", 0, 0, G_OPTION_ARG_DOUBLE, &o.ssd.retention_factor,
       "Endurance gained by relaxed retention (default 1.0)", "X"},
      CLI_CHART_ENTRIES(&style),
      {"stage", 0, 0, G_OPTION_ARG_STRING, &o.stage,
       "Pipeline stage to plan in detail, or all (default: all, every stage planned, stage 0 in detail)", "N|all"},
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, &common);
  GError *error = NULL;
  g_autoptr(GPtrArray) traces = NULL;
  RokTrace *trace = NULL;
  g_autoptr(RokHw) hw = NULL;
  g_auto(Outcome) out = {0};
  g_autoptr(RokPlanFile) file = NULL;
  gint stage = 0;
  if (!cli_parse(context, &argc, &argv, &error) || !rok_charts_set_style(&style, &error) ||
      !cli_positionals(argc, argv, 1, "MODEL", &error) ||
      (o.hw == NULL && (error = g_error_new_literal(ROK_ERROR, ROK_ERROR_USAGE, "missing --hw HW (see --help)"))) ||
      (hw = cli_load_hw(o.hw, common.hw_sets, &error)) == NULL ||
      (traces = cli_load_stages(argv[1], common.sets, &error)) == NULL ||
      !cli_parse_stage(o.stage, traces->len, &stage, &error) ||
      (trace = g_ptr_array_index(traces, stage < 0 ? 0 : stage)) == NULL || !run(&o, trace, hw, &out, &error)) {
    cli_common_clear(&common);
    if (common.json && error->code == ROK_ERROR_NO_FIT && error->domain == ROK_ERROR && out.planner != NULL)
      cli_print_json(no_fit_json(trace, hw, &out), NULL);
    if (out.planner != NULL)
      explain_no_fit(&out, &error);
    return cli_fail(self->name, error);
  }
  cli_warn_unmodelled(((RokTrace *)g_ptr_array_index(traces, 0))->model, hw);
  cli_warn_far_shapes(g_ptr_array_index(traces, 0), hw);
  cli_common_clear(&common);
  out.summary = rok_plan_summary(trace, out.plan, out.result, out.strategy, out.budget,
                                 (const RokSimResult *const *)out.baselines);
  file = plan_file(&out);
  if (stage < 0 && traces->len > 1 && !plan_stages(&o, &out, traces, 0, file, common.json, &error))
    return cli_fail(self->name, error);
  gboolean written = (o.output == NULL || write_files(&out, file, o.output, &error)) &&
                     write_timeline(&o, &out, &error);
  if (o.output != NULL)
    rok_charts_release(); /* the charts are drawn; nothing else draws */
  if (!written)
    return cli_fail(self->name, error);
  if (common.json)
    return cli_print_json(rok_plan_file_to_json(file, trace), &error) ? ROK_EXIT_OK
                                                                          : cli_fail(self->name, error);
  print_summary(&out, o.output);
  return ROK_EXIT_OK;
}
