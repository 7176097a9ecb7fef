/* rok trace: every tensor a training step saves for backward, per layer. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rok/core.h"

/* A name without its "layer3." prefix: the same in every layer. */
static const char *local_name(const char *name) {
  const char *dot = strchr(name, '.');
  return dot != NULL ? dot + 1 : name;
}

static char *shape_text(const RokTensor *t) {
  GString *text = g_string_new(NULL);
  for (guint i = 0; i < t->rank; i++)
    g_string_append_printf(text, "%s%" G_GUINT64_FORMAT, i ? "×" : "", t->shape[i]);
  return g_string_free(text, FALSE);
}

/* The ops whose backward reads `t`; a long list (T5's encoder output, read
 * by every decoder layer) shows its ends. */
static char *needers_text(const RokTrace *trace, const RokTensor *t) {
  GString *text = g_string_new(NULL);
  guint n = t->needed_by->len;
  for (guint i = 0; i < n; i++) {
    if (n > 4 && i == 2) {
      g_string_append_printf(text, ", … (%u ops)", n);
      i = n - 2;
    }
    const RokOp *op = rok_trace_op(trace, g_array_index(t->needed_by, guint, i));
    g_string_append_printf(text, "%s%s", i ? ", " : "", t->layer >= 0 ? local_name(op->name) : op->name);
  }
  return g_string_free(text, FALSE);
}

/* printf's widths count bytes; "×" is two. Pad by characters instead. */
static void print_cell(const char *text, int width, gboolean right) {
  int pad = MAX(width - (int)g_utf8_strlen(text, -1), 0);
  if (right)
    printf("%*s%s ", pad, "", text);
  else
    printf("%s%*s ", text, pad, "");
}

static void print_row(const char *name, const char *shape, const char *dtype, const char *bytes,
                      const char *needers) {
  printf("  ");
  print_cell(name, 28, FALSE);
  print_cell(shape, 22, FALSE);
  print_cell(dtype, 5, FALSE);
  print_cell(bytes, 10, TRUE);
  printf(" %s\n", needers);
}

/* Two layers are alike when they save the same tensors, name for name. */
static gboolean layers_alike(const RokTrace *trace, gint a, gint b) {
  guint i = 0, j = 0, n = trace->tensors->len;
  for (;;) {
    while (i < n && (rok_trace_tensor(trace, i)->layer != a || !rok_tensor_is_saved(rok_trace_tensor(trace, i))))
      i++;
    while (j < n && (rok_trace_tensor(trace, j)->layer != b || !rok_tensor_is_saved(rok_trace_tensor(trace, j))))
      j++;
    if (i == n || j == n)
      return i == n && j == n;
    const RokTensor *x = rok_trace_tensor(trace, i++), *y = rok_trace_tensor(trace, j++);
    if (x->bytes != y->bytes || x->dtype != y->dtype || x->rank != y->rank ||
        memcmp(x->shape, y->shape, sizeof x->shape) != 0 || g_strcmp0(local_name(x->name), local_name(y->name)))
      return FALSE;
  }
}

static void print_tensors(const RokTrace *trace, gint layer) {
  print_row("tensor", "shape", "dtype", "bytes", "needed by");
  for (guint i = 0; i < trace->tensors->len; i++) {
    const RokTensor *t = rok_trace_tensor(trace, i);
    if (t->layer != layer || !rok_tensor_is_saved(t))
      continue;
    g_autofree char *shape = shape_text(t), *needers = needers_text(trace, t);
    g_autofree char *bytes = rok_units_format_size(t->bytes);
    print_row(layer >= 0 ? local_name(t->name) : t->name, shape, rok_dtype_name(t->dtype), bytes, needers);
  }
}

static void print_group(const RokTrace *trace, gint first, gint last) {
  g_autofree char *total = rok_units_format_size(rok_trace_saved_bytes(trace, first));
  if (first == last)
    printf("\nLayer %d:\n", first);
  else
    printf("\nLayers %d–%d (alike; layer %d shown):\n", first, last, first);
  print_tensors(trace, first);
  guint64 reference = trace->model != NULL ? rok_model_reference_layer_bytes(trace->model) : 0;
  g_autofree char *formula = reference > 0 ? rok_units_format_size(reference) : NULL;
  g_autofree char *note =
      reference > 0 ? g_strdup_printf("(Korthikanti et al.: %s without norm statistics)", formula) : g_strdup("");
  print_row("total per layer", "", "", total, note);
}

/* Every term of the fixed memory with the accounting it follows. */
static void print_fixed_terms(const RokModel *m, guint stage) {
  static const char *const kinds[] = {"weights", "gradients", "optimizer"};
  RokFixedTerm terms[ROK_FIXED_MAX_TERMS];
  guint n = rok_model_fixed_terms(m, stage, terms);
  g_autofree char *trained = rok_units_format_count((double)rok_model_trainable_params_per_gpu(m, stage));
  printf("  %s, %s, ZeRO-%" G_GUINT64_FORMAT " over %" G_GUINT64_FORMAT " data-parallel ranks, %s trained here:\n",
         rok_framework_name(m->train.framework), rok_optimizer_name(m->optimizer), m->zero_stage, m->data_parallel,
         trained);
  for (guint i = 0; i < n; i++) {
    g_autofree char *bytes = rok_units_format_size(terms[i].bytes);
    printf("    %-44s %-9s %10s  %s\n", terms[i].name, kinds[terms[i].kind], bytes, terms[i].source);
  }
}

static void print_summary(const RokTrace *trace, const RokHw *hw) {
  const RokFixedMemory *f = &trace->fixed;
  guint64 fixed = rok_fixed_memory_bytes(f);
  guint64 saved = rok_trace_total_saved_bytes(trace);
  g_autofree char *params = rok_units_format_count((double)f->params_total);
  g_autofree char *params_gpu = rok_units_format_count((double)f->params_per_gpu);
  g_autofree char *w = rok_units_format_size(f->weight_bytes), *g = rok_units_format_size(f->gradient_bytes);
  g_autofree char *o = rok_units_format_size(f->optimizer_bytes), *fx = rok_units_format_size(fixed);
  g_autofree char *act = rok_units_format_size(saved), *all = rok_units_format_size(fixed + saved);
  g_autofree char *outside = rok_units_format_size(rok_trace_saved_bytes(trace, -1));
  printf("\nParameters: %s (%" G_GUINT64_FORMAT "); %s on this GPU\n", params, f->params_total, params_gpu);
  printf("Fixed memory on this GPU: weights %s + gradients %s + optimizer %s = %s\n", w, g, o, fx);
  if (trace->model != NULL)
    print_fixed_terms(trace->model, trace->stage);
  printf("Activations saved for backward, one micro-batch: %s (%s outside the layers)\n", act, outside);
  printf("Keeping everything needs %s", all);
  if (hw != NULL) {
    g_autofree char *capacity = rok_units_format_size(hw->gpu.memory);
    printf(" of the %s on %s: %s", capacity, hw->name,
           fixed + saved <= hw->gpu.memory ? "it fits" : "it does not fit");
  }
  printf("\n");
}

static void print_trace(const RokTrace *trace, const RokHw *hw) {
  const RokModel *m = trace->model;
  if (m != NULL)
    printf("%s: %s, %u layers, hidden %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
           " heads, seq %" G_GUINT64_FORMAT ", micro-batch %" G_GUINT64_FORMAT ", %s, %s attention, TP %" G_GUINT64_FORMAT
           "%s\n",
           m->name, rok_arch_name(m->arch), trace->layers, m->hidden, m->heads, m->seq_len, m->micro_batch,
           rok_dtype_name(m->dtype), m->attention == ROK_ATTENTION_FLASH ? "flash" : "standard",
           m->tensor_parallel, m->sequence_parallel ? " + SP" : "");
  else
    printf("%s: %u layers (imported trace)\n", trace->model_name, trace->layers);
  printf("\nOutside the layers:\n");
  print_tensors(trace, -1);
  for (gint first = 0; first < (gint)trace->layers;) {
    gint last = first;
    while (last + 1 < (gint)trace->layers && layers_alike(trace, first, last + 1))
      last++;
    print_group(trace, first, last);
    first = last + 1;
  }
  print_summary(trace, hw);
}

/* The trace of pipeline stage `stage` of a model config (a trace file is
 * the stage it is). */
static RokTrace *load_stage(const char *arg, char **sets, gint stage, GError **error) {
  gboolean from_file = FALSE;
  g_autoptr(RokTrace) first = cli_load_trace_file_or_model(arg, sets, &from_file, error);
  if (first == NULL || stage == 0)
    return g_steal_pointer(&first);
  if (stage < 0 || from_file || first->model == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--stage %d: %s", stage,
                stage < 0 ? "a stage is 0 or more" : "a trace file is the stage it is; give a model config");
    return NULL;
  }
  return rok_trace_new_for_stage(first->model, (guint)stage, error);
}

int cli_cmd_trace(int argc, char **argv) {
  const RokCommand *self = cli_find("trace");
  RokCliCommon common = {0};
  g_autofree char *hw_arg = NULL, *output = NULL;
  gint stage = 0;
  const GOptionEntry entries[] = {
      {"stage", 0, 0, G_OPTION_ARG_INT, &stage, "Pipeline stage whose trace to make (default 0, the first)", "N"},
      {"hw", 0, 0, G_OPTION_ARG_STRING, &hw_arg, "Hardware profile: say whether keeping everything fits", "HW"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the trace (rok-trace/1) to FILE", "FILE"},
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, &common);
  GError *error = NULL;
  g_autoptr(RokTrace) trace = NULL;
  g_autoptr(RokHw) hw = NULL;
  if (!cli_parse(context, &argc, &argv, &error) || !cli_positionals(argc, argv, 1, "MODEL", &error) ||
      !cli_check_hw_sets(hw_arg, common.hw_sets, &error) ||
      (hw_arg != NULL && (hw = cli_load_hw(hw_arg, common.hw_sets, &error)) == NULL) ||
      (trace = load_stage(argv[1], common.sets, stage, &error)) == NULL ||
      (output != NULL && !rok_trace_save(trace, output, &error))) {
    cli_common_clear(&common);
    return cli_fail(self->name, error);
  }
  cli_common_clear(&common);
  if (common.json)
    return cli_print_json(rok_trace_to_json(trace), &error) ? ROK_EXIT_OK : cli_fail(self->name, error);
  print_trace(trace, hw);
  return ROK_EXIT_OK;
}
