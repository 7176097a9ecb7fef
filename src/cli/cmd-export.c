/* rok export: a plan in a training framework's own terms.
 *
 *   megatron   Megatron-LM arguments (export-map.c says which and why)
 *   deepspeed  a DeepSpeed "activation_checkpointing" config block and the
 *              layers to wrap in deepspeed.checkpointing.checkpoint
 *   torch      a rok-torch-policy/1 JSON: every decision keyed by the
 *              Hugging Face module path that saves the tensor, for
 *              rok_torch.apply (python/)
 *
 * Megatron and DeepSpeed cannot say everything a plan says (NVMe, a
 * decision per tensor and per layer): the closest plan they can express is
 * simulated next to the plan, both costs printed, and what was given up
 * listed. The plan is checked against its trace (the model it names, or
 * --model with the same --set as when it was made). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "rok/plan.h"
#include "rok/sim.h"

typedef struct {
  char *to, *model, *hw, *output;
} Options;

static void options_clear(Options *o) {
  g_free(o->to);
  g_free(o->model);
  g_free(o->hw);
  g_free(o->output);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

void cli_export_clear(Export *e) {
  g_free(e->arguments);
  if (e->config != NULL)
    json_object_put(e->config);
  rok_step_plan_free(e->closest);
  g_clear_pointer(&e->notes, g_ptr_array_unref);
  *e = (Export){0};
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Export, cli_export_clear)

void cli_export_swap(Export *a, Export *b) {
  Export t = *a;
  *a = *b;
  *b = t;
}

void cli_export_note(Export *e, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_ptr_array_add(e->notes, g_strdup_vprintf(format, args));
  va_end(args);
}
#define note cli_export_note

static guint64 bytes_where(const RokTrace *trace, const RokStepPlan *plan, RokDecision d) {
  guint64 total = 0;
  for (guint i = 0; i < trace->tensors->len; i++)
    if (rok_tensor_is_saved(rok_trace_tensor(trace, i)) && plan->decisions[i] == d)
      total += rok_trace_tensor(trace, i)->bytes;
  return total;
}

/* Tensors whose decision the closest plan changed, as a note. */
static void note_changes(Export *e, const RokTrace *trace, const RokStepPlan *plan) {
  guint64 changed = 0, total = 0;
  for (guint i = 0; i < trace->tensors->len; i++) {
    const RokTensor *t = rok_trace_tensor(trace, i);
    if (!rok_tensor_is_saved(t))
      continue;
    total += t->bytes;
    if (plan->decisions[i] != e->closest->decisions[i])
      changed += t->bytes;
  }
  if (changed > 0)
    note(e, "%.1f%% of the saved bytes get another decision than the plan's", 100.0 * changed / total);
  if (bytes_where(trace, plan, ROK_DECISION_OFFLOAD_NVME) > 0)
    note(e, "offloads to NVMe have no equivalent: the closest plan keeps or moves to host memory instead");
}

static void append_modules(GString *s, const char *flag, const RokExportGroup *groups, guint64 mask) {
  if (mask == 0)
    return;
  g_string_append_printf(s, " %s", flag);
  for (guint g = 0; groups[g].knob != NULL; g++)
    if (mask >> g & 1)
      g_string_append_printf(s, " %s", groups[g].knob);
}

static void export_megatron(Export *e, const RokTrace *trace, const RokStepPlan *plan) {
  RokExportMegatron m;
  cli_export_megatron(trace, plan, &m);
  GString *s = g_string_new(NULL);
  if (m.full_layers > 0)
    g_string_append_printf(s, "--recompute-granularity full --recompute-method block --recompute-num-layers %u",
                           m.full_layers);
  else if (m.cpu_offload_layers > 0)
    g_string_append_printf(s, "--cpu-offloading-num-layers %u", m.cpu_offload_layers);
  if (m.recompute_modules != 0) {
    g_string_append(s, "--recompute-granularity selective");
    append_modules(s, "--recompute-modules", cli_export_recompute_modules, m.recompute_modules);
  }
  if (m.offload_modules != 0) {
    g_string_append(s, s->len > 0 ? " " : "");
    g_string_append(s, "--fine-grained-activation-offloading --min-offloaded-tensor-size 0");
    append_modules(s, "--offload-modules", cli_export_offload_modules, m.offload_modules);
  }
  e->arguments = g_string_free(s, FALSE);
  e->closest = cli_export_megatron_plan(trace, plan, &m);
  if (m.full_layers > 0)
    note(e, "full recomputation rebuilds the first %u layers of a stage (method block), not the plan's choice "
         "of layers", m.full_layers);
  if (m.cpu_offload_layers > 0)
    note(e, "Transformer Engine offloads every activation of the first %u layers to host memory",
         m.cpu_offload_layers);
  if (m.recompute_modules != 0 || m.offload_modules != 0)
    note(e, "recompute and offload modules apply to every layer alike");
  note_changes(e, trace, plan);
}

static void export_deepspeed(Export *e, const RokTrace *trace, const RokStepPlan *plan) {
  RokExportDeepSpeed ds;
  cli_export_deepspeed(trace, plan, &ds);
  json_object *block = json_object_new_object(), *root = json_object_new_object();
  json_object_object_add(block, "partition_activations", json_object_new_boolean(FALSE));
  json_object_object_add(block, "cpu_checkpointing", json_object_new_boolean(ds.cpu_checkpointing));
  json_object_object_add(block, "contiguous_memory_optimization", json_object_new_boolean(FALSE));
  json_object_object_add(block, "number_checkpoints",
                         ds.n_checkpointed > 0 ? json_object_new_int64(ds.n_checkpointed) : NULL);
  json_object_object_add(block, "synchronize_checkpoint_boundary", json_object_new_boolean(FALSE));
  json_object_object_add(block, "profile", json_object_new_boolean(FALSE));
  json_object_object_add(root, "activation_checkpointing", block);
  e->config = root;
  GString *layers = g_string_new(NULL);
  for (guint l = 0; l < trace->layers; l++)
    if (ds.checkpointed[l])
      g_string_append_printf(layers, "%s%u", layers->len ? ", " : "", l);
  if (ds.n_checkpointed > 0)
    note(e, "wrap layers %s in deepspeed.checkpointing.checkpoint (the model's code chooses the layers)",
         layers->str);
  else
    note(e, "no layer is mostly recomputed: wrap none");
  g_string_free(layers, TRUE);
  note(e, "DeepSpeed recomputes whole layers and can move only their inputs to host memory "
       "(cpu_checkpointing); per-tensor offloading has no equivalent");
  e->closest = cli_export_deepspeed_plan(trace, plan, &ds);
  g_free(ds.checkpointed);
  note_changes(e, trace, plan);
}

gboolean cli_export_run(Export *e, const char *to, const RokTrace *trace, const RokStepPlan *plan,
                        GError **error) {
  e->notes = g_ptr_array_new_with_free_func(g_free);
  if (g_strcmp0(to, "megatron") == 0)
    export_megatron(e, trace, plan);
  else if (g_strcmp0(to, "deepspeed") == 0)
    export_deepspeed(e, trace, plan);
  else if (g_strcmp0(to, "torch") == 0)
    return cli_export_torch(e, trace, plan, error);
  else {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--to %s: must be megatron, deepspeed or torch",
                to ? to : "(missing)");
    return FALSE;
  }
  return TRUE;
}

/* Against the budget the plan was made for (its file's budget_bytes). */
static json_object *cost_json(const RokSimResult *r, guint64 budget) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "step_time_s", rok_json_new_double(r->step_time_s));
  json_object_object_add(o, "peak_bytes", json_object_new_int64((gint64)r->peak_bytes));
  json_object_object_add(o, "within_budget", json_object_new_boolean(r->peak_bytes <= budget));
  return o;
}

static void print_cost(const char *label, const RokSimResult *r, guint64 budget) {
  g_autofree char *step = rok_units_format_time(r->step_time_s), *peak = rok_units_format_size(r->peak_bytes);
  g_autofree char *cap = rok_units_format_size(budget);
  printf("  %-8s %10s per step, peak %s %s %s\n", label, step, peak, r->peak_bytes <= budget ? "within" : "OVER",
         cap);
}

/* The closest plan per run of alike layers: bytes by decision. */
static void print_layers(const RokTrace *trace, const RokStepPlan *plan) {
  json_object *runs = rok_plan_layers_to_json(trace, plan);
  printf("\nThe closest plan's decisions (bytes of one micro-batch; a run of layers shows the sum):\n");
  for (gsize i = 0; i < json_object_array_length(runs); i++) {
    json_object *run = json_object_array_get_idx(runs, i), *first, *last, *bytes;
    json_object_object_get_ex(run, "first", &first);
    json_object_object_get_ex(run, "last", &last);
    json_object_object_get_ex(run, "bytes", &bytes);
    int a = json_object_get_int(first), b = json_object_get_int(last);
    g_autofree char *label = a < 0 ? g_strdup("outside the layers") : a == b ? g_strdup_printf("layer %d", a)
                                                                             : g_strdup_printf("layers %d–%d", a, b);
    printf("  %s:", label);
    for (guint d = 0; d < ROK_DECISION_COUNT; d++) {
      json_object *v = NULL;
      json_object_object_get_ex(bytes, rok_decision_name(d), &v);
      g_autofree char *size = rok_units_format_size((guint64)json_object_get_int64(v));
      printf("%s %s %s", d ? "," : "", rok_decision_name(d), size);
    }
    printf("\n");
  }
  json_object_put(runs);
}

static gboolean write_artifact(const Export *e, const char *path, GError **error) {
  if (e->config != NULL)
    return rok_json_write_file(e->config, path, error);
  g_autofree char *text = g_strconcat(e->arguments, "\n", NULL);
  return rok_file_write(path, text, strlen(text), error);
}

static int report(const Export *e, const Options *o, gboolean json, const RokSimResult *plan_r,
                  const RokSimResult *closest_r, const RokTrace *trace, guint64 budget) {
  GError *error = NULL;
  if (o->output != NULL && !write_artifact(e, o->output, &error))
    return cli_fail("export", error);
  if (json) {
    json_object *out = json_object_new_object(), *notes = json_object_new_array();
    json_object_object_add(out, "framework", json_object_new_string(o->to));
    if (e->arguments != NULL)
      json_object_object_add(out, "arguments", json_object_new_string(e->arguments));
    if (e->config != NULL)
      json_object_object_add(out, "config", json_object_get(e->config));
    for (guint i = 0; i < e->notes->len; i++)
      json_object_array_add(notes, json_object_new_string(g_ptr_array_index(e->notes, i)));
    json_object_object_add(out, "notes", notes);
    json_object_object_add(out, "closest_layers", rok_plan_layers_to_json(trace, e->closest));
    json_object_object_add(out, "predicted_plan", cost_json(plan_r, budget));
    json_object_object_add(out, "predicted_closest", cost_json(closest_r, budget));
    return cli_print_json(out, &error) ? ROK_EXIT_OK : cli_fail("export", error);
  }
  if (e->arguments != NULL)
    printf("%s\n", e->arguments);
  else {
    g_autofree char *text = rok_json_to_string(e->config);
    fputs(text, stdout); /* ends with a newline */
  }
  printf("\nWhat %s cannot say as the plan does:\n", o->to);
  for (guint i = 0; i < e->notes->len; i++)
    printf("  - %s\n", (const char *)g_ptr_array_index(e->notes, i));
  if (e->notes->len == 0)
    printf("  nothing: the export is the plan\n");
  print_layers(trace, e->closest);
  printf("\nPredicted (rok simulate with the plan's options; the budget the plan was made for):\n");
  print_cost("plan", plan_r, budget);
  print_cost("closest", closest_r, budget);
  return ROK_EXIT_OK;
}

/* The model and machine the plan names, unless given. */
static gboolean plan_names(const char *path, Options *o, GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_load(path, error);
  g_auto(RokJsonObj) root = {0};
  return doc != NULL && rok_json_root(doc, &root, error) &&
         (o->model != NULL || rok_json_get_string(&root, "model", TRUE, &o->model, error)) &&
         (o->hw != NULL || rok_json_get_string(&root, "hw", TRUE, &o->hw, error));
}

int cli_cmd_export(int argc, char **argv) {
  const RokCommand *self = cli_find("export");
  RokCliCommon common = {0};
  g_auto(Options) o = {0};
  const GOptionEntry entries[] = {
      {"to", 0, 0, G_OPTION_ARG_STRING, &o.to, "megatron, deepspeed or torch (required)", "FRAMEWORK"},
      {"model", 'm', 0, G_OPTION_ARG_STRING, &o.model,
       "The model config or trace the plan was made for (default: the model the plan names)", "MODEL"},
      {"hw", 0, 0, G_OPTION_ARG_STRING, &o.hw, "Hardware profile (default: the one the plan names)", "HW"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output, "Also write the arguments or config to FILE", "FILE"},
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, &common);
  GError *error = NULL;
  g_autoptr(RokTrace) trace = NULL;
  g_autoptr(RokHw) hw = NULL;
  g_autoptr(RokPlanFile) file = NULL;
  g_auto(Export) e = {0};
  g_autoptr(RokSimResult) plan_r = NULL, closest_r = NULL;
  gboolean ok = cli_parse(context, &argc, &argv, &error) && cli_positionals(argc, argv, 1, "PLAN", &error) &&
                plan_names(argv[1], &o, &error) && (hw = cli_load_hw(o.hw, common.hw_sets, &error)) != NULL &&
                (trace = cli_load_trace(o.model, common.sets, &error)) != NULL &&
                (file = rok_plan_file_load(argv[1], trace, &error)) != NULL &&
                cli_export_run(&e, o.to, trace, file->plan, &error) &&
                (plan_r = rok_simulate(trace, hw, file->plan, &error)) != NULL &&
                cli_export_replan(&e, o.to, trace, hw, g_strcmp0(file->strategy, "rok") == 0, file->budget_bytes,
                                  &closest_r, &error);
  cli_common_clear(&common);
  if (!ok)
    return cli_fail(self->name, error);
  return report(&e, &o, common.json, plan_r, closest_r, trace, file->budget_bytes);
}
