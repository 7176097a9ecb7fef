/* Classes and units: the structure the planner searches over.
 *
 * Alike layers save the same tensors, so a decision that pays for
 * "attn.softmax_out" in one layer pays about as much in the next: decide
 * per class and per run of layers, not per tensor. */
#include "planner-private.h"

#include <string.h>

/* A name without its "layer3." prefix. */
static const char *local_name(const char *name) {
  const char *dot = strchr(name, '.');
  return dot != NULL ? dot + 1 : name;
}

/* Saved tensors per layer, in trace order: lists[layer] (GArray of guint). */
static GPtrArray *saved_by_layer(const RokTrace *trace) {
  GPtrArray *lists = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  for (guint l = 0; l < trace->layers; l++)
    g_ptr_array_add(lists, g_array_new(FALSE, FALSE, sizeof(guint)));
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (rok_tensor_is_saved(tensor) && tensor->layer >= 0 && (guint)tensor->layer < trace->layers)
      g_array_append_val(g_ptr_array_index(lists, tensor->layer), t);
  }
  return lists;
}

static gboolean same_tensor(const RokTrace *trace, guint a, guint b) {
  const RokTensor *x = rok_trace_tensor(trace, a), *y = rok_trace_tensor(trace, b);
  return x->bytes == y->bytes && x->dtype == y->dtype && x->recomputable == y->recomputable &&
         g_str_equal(local_name(x->name), local_name(y->name));
}

static gboolean alike(const RokTrace *trace, const GArray *a, const GArray *b) {
  if (a->len != b->len)
    return FALSE;
  for (guint i = 0; i < a->len; i++)
    if (!same_tensor(trace, g_array_index(a, guint, i), g_array_index(b, guint, i)))
      return FALSE;
  return TRUE;
}

/* A class's decisions: those every member may take. */
static guint8 class_allowed(const RokPlanner *p, const PlanClass *c) {
  guint8 mask = 0xff;
  for (guint i = 0; i < c->n; i++)
    mask &= p->allowed[plan_member(p, c, i)];
  return mask;
}

/* Cut a class into units of consecutive members. */
static void add_class(RokPlanner *p, PlanClass *c) {
  guint cls = p->classes->len;
  guint chunks = MIN(c->n, PLAN_CHUNKS);
  c->allowed = class_allowed(p, c);
  c->first_unit = p->units->len;
  c->n_units = chunks;
  for (guint k = 0; k < chunks; k++) {
    PlanUnit u = {.cls = cls, .lo = k * c->n / chunks, .hi = (k + 1) * c->n / chunks};
    g_array_append_val(p->units, u);
  }
  g_array_append_val(p->classes, *c);
}

static void add_run(RokPlanner *p, const GPtrArray *lists, guint first, guint last, gint run) {
  const GArray *model = g_ptr_array_index(lists, first);
  for (guint i = 0; i < model->len; i++) {
    PlanClass c = {.first = p->members->len, .n = last - first + 1, .run = run,
                   .bytes = rok_trace_tensor(p->trace, g_array_index(model, guint, i))->bytes};
    for (guint l = first; l <= last; l++)
      g_array_append_val(p->members, g_array_index((GArray *)g_ptr_array_index(lists, l), guint, i));
    add_class(p, &c);
  }
}

void plan_build_classes(RokPlanner *p) {
  const RokTrace *trace = p->trace;
  p->classes = g_array_new(FALSE, FALSE, sizeof(PlanClass));
  p->members = g_array_new(FALSE, FALSE, sizeof(guint));
  p->units = g_array_new(FALSE, FALSE, sizeof(PlanUnit));
  g_autoptr(GPtrArray) lists = saved_by_layer(trace);
  gint run = 0;
  for (guint first = 0; first < trace->layers;) {
    guint last = first;
    while (last + 1 < trace->layers &&
           alike(trace, g_ptr_array_index(lists, first), g_ptr_array_index(lists, last + 1)))
      last++;
    add_run(p, lists, first, last, run++);
    first = last + 1;
  }
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (!rok_tensor_is_saved(tensor) || (tensor->layer >= 0 && (guint)tensor->layer < trace->layers))
      continue;
    PlanClass c = {.first = p->members->len, .n = 1, .run = -1, .bytes = tensor->bytes};
    g_array_append_val(p->members, t);
    add_class(p, &c);
  }
}
