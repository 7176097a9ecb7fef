/* The recommendation in one sentence: what the plan does with the
 * activations of a micro-batch, how fast the step is, and how that
 * compares with the fastest baseline that fits the same budget. */
#include <math.h>

#include "rok/plan.h"
#include "rok/core.h"

static guint64 decision_bytes(const RokTrace *trace, const RokStepPlan *plan, RokDecision d) {
  guint64 bytes = 0;
  for (guint t = 0; t < trace->tensors->len; t++)
    if (rok_tensor_is_saved(rok_trace_tensor(trace, t)) && plan->decisions[t] == d)
      bytes += rok_trace_tensor(trace, t)->bytes;
  return bytes;
}

/* The layers in which some tensor takes `d`: "layers 0–59", or "". */
static char *layers_with(const RokTrace *trace, const RokStepPlan *plan, RokDecision d) {
  gint first = -1, last = -1;
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (tensor->layer >= 0 && rok_tensor_is_saved(tensor) && plan->decisions[t] == d) {
      first = first < 0 ? tensor->layer : MIN(first, tensor->layer);
      last = MAX(last, tensor->layer);
    }
  }
  if (first < 0)
    return g_strdup("");
  return first == last ? g_strdup_printf(" in layer %d", first) : g_strdup_printf(" in layers %d–%d", first, last);
}

/* Parts under a thousandth of the saved bytes (norm statistics) are left
 * to the table. */
static void append_part(GString *s, const char *verb, guint64 bytes, guint64 total, const char *where) {
  if (bytes == 0 || bytes < total / 1000)
    return;
  g_autofree char *size = rok_units_format_size(bytes);
  g_string_append_printf(s, "%s%s %s%s", s->len ? ", " : "", verb, size, where);
}

static char *decisions_text(const RokTrace *trace, const RokStepPlan *plan) {
  guint64 offloaded = decision_bytes(trace, plan, ROK_DECISION_OFFLOAD_NVME) +
                      decision_bytes(trace, plan, ROK_DECISION_OFFLOAD_HOST) +
                      decision_bytes(trace, plan, ROK_DECISION_RECOMPUTE);
  if (offloaded == 0)
    return g_strdup("keep every activation");
  GString *s = g_string_new(NULL);
  const struct {
    RokDecision d;
    const char *verb;
  } parts[] = {{ROK_DECISION_OFFLOAD_NVME, "offload to NVMe"},
               {ROK_DECISION_OFFLOAD_HOST, "offload to host memory"},
               {ROK_DECISION_RECOMPUTE, "recompute"},
               {ROK_DECISION_KEEP, "keep"}};
  for (guint i = 0; i < G_N_ELEMENTS(parts); i++) {
    g_autofree char *where = parts[i].d == ROK_DECISION_KEEP ? g_strdup("") : layers_with(trace, plan, parts[i].d);
    append_part(s, parts[i].verb, decision_bytes(trace, plan, parts[i].d), rok_trace_total_saved_bytes(trace), where);
  }
  g_string_append(s, " per micro-batch");
  return g_string_free(s, FALSE);
}

/* How the plan compares with the fastest baseline that fits. */
static char *comparison_text(const RokSimResult *result, guint64 budget, const RokSimResult *const *baselines) {
  gint best = -1;
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    const RokSimResult *r = baselines[b];
    if (r != NULL && r->peak_bytes <= budget && (best < 0 || r->step_ns < baselines[best]->step_ns))
      best = (gint)b;
  }
  if (best < 0)
    return g_strdup("no baseline fits this budget");
  double gain = 1.0 - result->step_time_s / baselines[best]->step_time_s;
  if (fabs(gain) < 5e-4)
    return g_strdup_printf("as fast as %s, the fastest baseline that fits", rok_strategy_name(best));
  return g_strdup_printf("%.1f%% %s than %s, the fastest baseline that fits", fabs(gain) * 100,
                         gain > 0 ? "faster" : "slower", rok_strategy_name(best));
}

char *rok_plan_summary(const RokTrace *trace, const RokStepPlan *plan, const RokSimResult *result,
                       RokStrategy strategy, guint64 budget, const RokSimResult *const *baselines) {
  g_autofree char *what = decisions_text(trace, plan), *than = comparison_text(result, budget, baselines);
  g_autofree char *step = rok_units_format_time(result->step_time_s);
  g_autofree char *peak = rok_units_format_size(result->peak_bytes), *within = rok_units_format_size(budget);
  g_autofree char *who = strategy == ROK_STRATEGY_ROK ? g_strdup("Recommendation")
                                                      : g_strdup_printf("Strategy %s", rok_strategy_name(strategy));
  return g_strdup_printf("%s: %s: %s per step, peak %s within %s; %s.", who, what, step, peak, within, than);
}
