/* The planner's granularity: tensors that share one decision. Each group
 * (a layer, or a layer's block: its name's second component, "attn" or
 * "mlp", the layer's input going with the block that reads it first) is
 * decided through its largest saved tensor, the representative; the
 * others follow it where they can (plan_decision_of). */
#include "planner-private.h"
#include "strategy-private.h"

#include <string.h>

#include "rok/core.h"

static const char *const granularity_names[ROK_GRANULARITY_COUNT] = {"tensor", "module", "layer"};

const char *rok_granularity_name(RokGranularity granularity) {
  return granularity < ROK_GRANULARITY_COUNT ? granularity_names[granularity] : "?";
}

gboolean rok_granularity_from_name(const char *name, RokGranularity *granularity, GError **error) {
  for (guint i = 0; i < ROK_GRANULARITY_COUNT; i++)
    if (g_strcmp0(name, granularity_names[i]) == 0) {
      *granularity = i;
      return TRUE;
    }
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "unknown granularity \"%s\" (known: tensor, module, layer)",
              name ? name : "");
  return FALSE;
}

static gboolean same_block(const char *x, const char *y) {
  gsize lx = 0, ly = 0;
  const char *bx = plan_name_block(x, &lx), *by = plan_name_block(y, &ly);
  return bx != NULL && by != NULL && lx == ly && strncmp(bx, by, lx) == 0;
}

/* The group's first member in id order: a tensor of the same layer (and
 * block) seen before, else `t` itself. A block-less tensor (the layer's
 * input) joins the block of the layer's next saved tensor. */
static guint group_head(const RokPlanner *p, guint t) {
  const RokTensor *x = rok_trace_tensor(p->trace, t);
  gboolean module = p->options.granularity == ROK_GRANULARITY_MODULE;
  gsize len = 0;
  if (module && plan_name_block(x->name, &len) == NULL)
    for (guint u = t + 1; u < p->n_tensors; u++) {
      const RokTensor *y = rok_trace_tensor(p->trace, u);
      if (y->layer == x->layer && rok_tensor_is_saved(y) && plan_name_block(y->name, &len) != NULL)
        return group_head(p, u);
    }
  for (guint u = 0; u < t; u++) {
    const RokTensor *y = rok_trace_tensor(p->trace, u);
    if (y->layer == x->layer && rok_tensor_is_saved(y) && (!module || same_block(x->name, y->name)))
      return u;
  }
  return t;
}

/* A tensor made outside its group: the block's input, the checkpoint a
 * recompute of the block starts from. */
static gboolean is_input(const RokPlanner *p, guint t) {
  const RokTensor *x = rok_trace_tensor(p->trace, t);
  const RokOp *op = rok_trace_op(p->trace, x->producer);
  if (op->layer != x->layer)
    return TRUE;
  return p->options.granularity == ROK_GRANULARITY_MODULE && !same_block(op->name, x->name) &&
         plan_name_block(x->name, &(gsize){0}) != NULL;
}

void plan_build_groups(RokPlanner *p) {
  if (p->options.granularity == ROK_GRANULARITY_TENSOR)
    return;
  guint n = MAX(p->n_tensors, 1);
  p->group_rep = g_new(guint, n);
  p->own_allowed = g_memdup2(p->allowed, n);
  p->group_input = g_new0(gboolean, n);
  g_autofree guint *head = g_new(guint, n);
  for (guint t = 0; t < p->n_tensors; t++) {
    const RokTensor *x = rok_trace_tensor(p->trace, t);
    gboolean grouped = rok_tensor_is_saved(x) && x->layer >= 0;
    head[t] = grouped ? group_head(p, t) : t;
    p->group_rep[t] = t;
    p->group_input[t] = grouped && is_input(p, t);
    if (!grouped) /* outside the layers: kept, as the frameworks keep them */
      p->allowed[t] = 1u << ROK_DECISION_KEEP;
  }
  /* Representative: the largest member (the first of equals), taking any
   * decision some member can. Heads come first in id order, so one pass. */
  for (guint t = 0; t < p->n_tensors; t++) {
    guint h = head[t], *rep = &p->group_rep[h];
    if (h != t && rok_trace_tensor(p->trace, t)->bytes > rok_trace_tensor(p->trace, *rep)->bytes)
      *rep = t;
  }
  g_autofree guint8 *any = g_new0(guint8, n);
  for (guint t = 0; t < p->n_tensors; t++) {
    p->group_rep[t] = p->group_rep[head[t]];
    any[p->group_rep[t]] |= p->own_allowed[t];
  }
  for (guint t = 0; t < p->n_tensors; t++)
    if (rok_tensor_is_saved(rok_trace_tensor(p->trace, t)) && rok_trace_tensor(p->trace, t)->layer >= 0)
      p->allowed[t] = p->group_rep[t] == t ? any[t] : 1u << ROK_DECISION_KEEP;
}

void plan_free_groups(RokPlanner *p) {
  g_clear_pointer(&p->group_rep, g_free);
  g_clear_pointer(&p->own_allowed, g_free);
  g_clear_pointer(&p->group_input, g_free);
}

gboolean plan_groups_express(const RokPlanner *p, const guint8 *full, guint8 *out) {
  for (guint t = 0; t < p->n_tensors; t++)
    out[t] = p->group_rep == NULL || p->group_rep[t] == t ? full[t] : ROK_DECISION_KEEP;
  for (guint t = 0; t < p->n_tensors; t++)
    if (rok_tensor_is_saved(rok_trace_tensor(p->trace, t)) && plan_decision_of(p, out, t) != full[t])
      return FALSE;
  return TRUE;
}
