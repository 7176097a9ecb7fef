/* Pipeline stages at the command line: loading every stage of a model,
 * --stage N|all, and the per-stage table. */
#include <stdio.h>

#include "cli.h"
#include "rok/core.h"
#include "rok/model.h"

GPtrArray *cli_load_stages(const char *arg, char **sets, GError **error) {
  g_autoptr(GPtrArray) traces = g_ptr_array_new_with_free_func((GDestroyNotify)rok_trace_free);
  gboolean from_file = FALSE;
  RokTrace *first = cli_load_trace_file_or_model(arg, sets, &from_file, error);
  if (first == NULL)
    return NULL;
  g_ptr_array_add(traces, first);
  if (first->model == NULL || first->model->pipeline_parallel < 2)
    return g_steal_pointer(&traces);
  if (from_file) {
    g_printerr("rok: warning: %s is stage %u of a %u-stage pipeline; without the other stages it is simulated "
               "alone, with no pipeline bubble or sends\n",
               arg, first->stage, first->stages);
    return g_steal_pointer(&traces);
  }
  for (guint s = 1; s < first->model->pipeline_parallel; s++) {
    RokTrace *trace = rok_trace_new_for_stage(first->model, s, error);
    if (trace == NULL)
      return NULL;
    g_ptr_array_add(traces, trace);
  }
  return g_steal_pointer(&traces);
}

gboolean cli_parse_stage(const char *text, guint stages, gint *stage, GError **error) {
  *stage = stages > 1 ? -1 : 0;
  if (text == NULL || g_str_equal(text, "all"))
    return TRUE;
  guint64 value = 0;
  if (!g_ascii_string_to_unsigned(text, 10, 0, stages - 1, &value, NULL)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--stage must be \"all\" or a stage from 0 to %u, not \"%s\"",
                stages - 1, text);
    return FALSE;
  }
  *stage = (gint)value;
  return TRUE;
}

void cli_print_stages(RokSimResult *const *results, RokTrace *const *traces, guint n) {
  const RokSimResult *r0 = results[0];
  g_autofree char *step = rok_units_format_time(r0->step_time_s);
  g_autofree char *send = rok_units_format_time((double)r0->send_ns / 1e9);
  g_autofree char *schedule = r0->chunks > 1 ? g_strdup_printf("interleaved 1F1B, %u virtual stages each", r0->chunks)
                                             : g_strdup("1F1B");
  printf("Pipeline of %u stages (%s): step %s, %" G_GUINT64_FORMAT
         " micro-batches, one send between stages %s\n\n",
         n, schedule, step, r0->micro_batches, send);
  printf("  %-5s %6s %9s %9s %7s %8s %10s %10s %10s  %s\n", "stage", "layers", "busy", "bubble", "bubble%",
         "in flight", "peak", "held act.", "fixed", "fits");
  for (guint s = 0; s < n; s++) {
    const RokSimResult *r = results[s];
    g_autofree char *busy = rok_units_format_time((double)(r->step_ns - r->bubble_ns - r->optimizer_ns) / 1e9);
    g_autofree char *bubble = rok_units_format_time((double)r->bubble_ns / 1e9);
    g_autofree char *peak = rok_units_format_size(r->peak_bytes);
    g_autofree char *held = rok_units_format_size(r->held_activation_bytes);
    g_autofree char *fixed = rok_units_format_size(r->fixed_bytes);
    printf("  %-5u %6u %9s %9s %6.1f%% %8" G_GUINT64_FORMAT " %10s %10s %10s  %s\n", s, traces[s]->layers, busy,
           bubble, r->step_ns > 0 ? 100.0 * (double)r->bubble_ns / (double)r->step_ns : 0.0, r->in_flight, peak,
           held, fixed, r->fits ? (r->within_budget ? "yes" : "yes, over the budget") : "NO");
  }
  printf("\n");
}

void cli_warn_unmodelled(const RokModel *m, const RokHw *hw) {
  if (m == NULL)
    return;
  gboolean parallel = m->tensor_parallel > 1 || m->pipeline_parallel > 1 || m->data_parallel > 1;
  if (parallel && hw->interconnect.gpus_per_node == 0)
    g_printerr("rok: warning: hardware profile %s has no \"interconnect\" section: the communication of this "
               "layout (tensor %" G_GUINT64_FORMAT ", pipeline %" G_GUINT64_FORMAT ", data %" G_GUINT64_FORMAT
               ") is not costed\n",
               hw->name, m->tensor_parallel, m->pipeline_parallel, m->data_parallel);
  if (m->pipeline_parallel > 1 && m->zero_stage >= 2 && m->data_parallel > 1)
    g_printerr("rok: warning: zero_stage %" G_GUINT64_FORMAT " with pipeline_parallel %" G_GUINT64_FORMAT
               " is a layout DeepSpeed refuses (ZeRO-2/3 are incompatible with its pipeline engine) and "
               "Megatron-LM does not offer; rok costs it as written%s\n",
               m->zero_stage, m->pipeline_parallel,
               m->zero_stage >= 3 ? ": every layer's parameters gathered for every micro-batch" : "");
}

void cli_warn_far_shapes(const RokTrace *trace, const RokHw *hw) {
  g_autofree char *warning = rok_sim_far_shapes(trace, hw);
  if (warning != NULL)
    g_printerr("%s: warning: %s\n", g_get_prgname(), warning);
}
