/* Private to the planner's local search (planner-polish*.c): the state
 * of one refinement and the moves the files share. */
#pragma once

#include "planner-private.h"


typedef struct {
  RokPlanner *p;
  guint8 *cur, *trial;
  PlanEval *eval;
  guint64 budget, memory_budget;
  guint runs, max_runs;
} Polish;

/* keep, offload-nvme, offload-host, recompute: the order moves try them. */
extern const guint8 polish_decisions[ROK_DECISION_COUNT];

static inline gboolean polish_spent(const Polish *s) {
  return s->runs >= s->max_runs;
}
/* Pairs of tensors, ruins and blocks are tried on small traces. */
static inline gboolean polish_small(const Polish *s) {
  return plan_small(s->p);
}

/* planner-polish.c: judge s->trial and take it when better; set tensors
 * `ids` to `d` and judge; passes of single changes (TRUE: improved). */
gboolean polish_try(Polish *s);
gboolean polish_try_group(Polish *s, const guint *ids, guint n, guint8 d);
gboolean polish_unit_pass(Polish *s, const guint *order, guint n_order);
gboolean polish_tensor_pass(Polish *s);

/* planner-polish-ruin.c: make s->trial fit again, freeing memory greedily
 * (not touching `spare`); ruin-and-recreate and block passes. */
gboolean polish_recreate(Polish *s, guint spare, PlanEval *e);
gboolean polish_ruin_pass(Polish *s);
gboolean polish_block_pass(Polish *s);

/* planner-polish-ils.c: iterated local search from s->cur. */
void polish_iterate(Polish *s, const guint *order);
