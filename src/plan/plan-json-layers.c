/* The per-layer table of a plan: runs of consecutive layers that decide
 * alike, name for name, with the bytes of one micro-batch per decision. */
#include <string.h>

#include "rok/plan.h"

/* A name without its "layer3." prefix. */
static const char *local_name(const char *name) {
  const char *dot = strchr(name, '.');
  return dot != NULL ? dot + 1 : name;
}

/* The saved tensors of `layer` as "decision:local-name" words, in order:
 * two layers decide alike when these are equal. */
static char *signature(const RokTrace *trace, const RokStepPlan *plan, gint layer) {
  GString *s = g_string_new(NULL);
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (tensor->layer == layer && rok_tensor_is_saved(tensor))
      g_string_append_printf(s, "%d:%s:%" G_GUINT64_FORMAT ";", plan->decisions[t],
                             layer >= 0 ? local_name(tensor->name) : tensor->name, tensor->bytes);
  }
  return g_string_free(s, FALSE);
}

static json_object *run_json(const RokTrace *trace, const RokStepPlan *plan, gint first, gint last) {
  guint64 bytes[ROK_DECISION_COUNT] = {0};
  json_object *names[ROK_DECISION_COUNT];
  for (guint d = 0; d < ROK_DECISION_COUNT; d++)
    names[d] = json_object_new_array();
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (tensor->layer < first || tensor->layer > last || !rok_tensor_is_saved(tensor))
      continue;
    RokDecision d = plan->decisions[t];
    bytes[d] += tensor->bytes;
    if (tensor->layer == first)
      json_object_array_add(names[d], json_object_new_string(first >= 0 ? local_name(tensor->name) : tensor->name));
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "first", json_object_new_int(first));
  json_object_object_add(o, "last", json_object_new_int(last));
  json_object *by = json_object_new_object(), *which = json_object_new_object();
  for (guint d = 0; d < ROK_DECISION_COUNT; d++) {
    json_object_object_add(by, rok_decision_name(d), json_object_new_uint64(bytes[d]));
    json_object_object_add(which, rok_decision_name(d), names[d]);
  }
  json_object_object_add(o, "bytes", by);
  json_object_object_add(o, "tensors", which);
  return o;
}

json_object *rok_plan_layers_to_json(const RokTrace *trace, const RokStepPlan *plan) {
  json_object *list = json_object_new_array();
  for (gint first = 0; first < (gint)trace->layers;) {
    g_autofree char *sig = signature(trace, plan, first);
    gint last = first;
    for (;;) {
      if (last + 1 >= (gint)trace->layers)
        break;
      g_autofree char *next = signature(trace, plan, last + 1);
      if (!g_str_equal(sig, next))
        break;
      last++;
    }
    json_object_array_add(list, run_json(trace, plan, first, last));
    first = last + 1;
  }
  if (rok_trace_saved_bytes(trace, -1) > 0)
    json_object_array_add(list, run_json(trace, plan, -1, -1));
  return list;
}
