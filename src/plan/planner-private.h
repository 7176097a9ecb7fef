/* Private to src/plan: the planner's context and what its parts share.
 *
 * Structure. Saved tensors fall into classes: in a run of alike layers
 * (layers that save the same tensors, name for name and size for size) the
 * tensors with the same local name ("attn.softmax_out") form one class,
 * ordered by layer; a saved tensor outside the layers is a class of its
 * own. A class is cut into at most PLAN_CHUNKS units of consecutive layers;
 * the search decides per unit, the refinement per tensor.
 *
 * A plan under search is one guint8 RokDecision per tensor. Every plan is
 * judged by the simulator (plan_eval). */
#pragma once

#include "rok/plan.h"

/* Units per class in a run of alike layers. */
#define PLAN_CHUNKS 16
/* The memory_budget option that never holds anything back: a plan run with
 * it shows its own peak, and runs identically under any budget at least
 * that peak (the simulator only waits or holds reads when over budget). */
#define PLAN_NO_LIMIT G_MAXUINT64

typedef struct {
  guint first, n;   /* members: tensor ids planner->members[first .. first + n), by layer */
  guint8 allowed;   /* bit (1 << RokDecision) per decision the class may take */
  gint run;         /* run of alike layers; -1 outside the layers */
  guint64 bytes;    /* of one member */
  guint first_unit, n_units;
} PlanClass;

typedef struct {
  guint cls;
  guint lo, hi; /* member indexes within the class, [lo, hi) */
} PlanUnit;

/* Prefetch windows the final judgement tries every finalist and baseline
 * with; the first is the simulator's default, the one searches run with. */
typedef struct {
  RokPrefetchUnit unit;
  guint window;
} PlanPrefetch;
#define PLAN_PREFETCH_SETTINGS 6
extern const PlanPrefetch plan_prefetch[PLAN_PREFETCH_SETTINGS];

/* What the simulator said of a plan. */
typedef struct {
  gboolean valid; /* the simulator took it and host memory holds it */
  gint64 step_ns;
  guint64 peak;
  guint64 moved; /* over PCIe, both ways */
  guint64 host;  /* host memory peak */
  guint64 nvme;  /* bytes written to the SSDs in the step */
} PlanEval;

/* One step of the greedy descent: the plan after it and the move made. */
typedef struct {
  guint8 *decisions;
  PlanEval eval;
  guint unit;       /* the unit the step changed; G_MAXUINT for the start */
  guint8 decision;  /* what it became */
  gboolean back;    /* members taken from the last layer down */
} PlanStep;

/* A baseline, simulated once unbounded: under any budget at least its
 * peak it runs the same. */
typedef struct {
  guint8 *decisions; /* NULL: it does not apply here */
  gboolean whole_layers; /* its rebuilds re-run whole layers */
  PlanEval search, final; /* at the search detail and the default one */
} PlanBaseline;

typedef struct _PlanGrid PlanGrid;
typedef struct _PlanMemo PlanMemo;

struct _RokPlanner {
  const RokTrace *trace;
  const RokHw *hw;
  RokPlannerOptions options;
  RokSim *sim;
  guint n_tensors;
  guint64 host_limit;
  GArray *classes; /* PlanClass */
  GArray *members; /* guint tensor ids */
  GArray *units;   /* PlanUnit */
  guint8 *allowed; /* per tensor, as in PlanClass */
  /* Granularity (planner-groups.c): the tensor whose decision each tensor
   * follows (itself at tensor granularity), what it may take on its own,
   * and whether it is its block's input (kept when the block recomputes).
   * Only a group's representative is searched: the others may only keep. */
  guint *group_rep;
  guint8 *own_allowed;
  gboolean *group_input;
  RokStepPlan *scratch;
  guint8 *seen;    /* the decisions plan_eval last gave the simulator */
  guint64 runs;    /* simulator runs so far */
  GPtrArray *descent; /* PlanStep*, computed once */
  GPtrArray *ascent;  /* PlanStep*, computed once */
  /* The least memory any plan needs: its plan and squeezed peak. */
  gboolean min_done;
  guint8 *min_decisions;
  PlanEval min_eval;
  guint64 min_budget_option; /* the memory_budget option that reached it */
  char *min_what;
  guint baselines_done; /* bit (1 << RokStrategy) per baseline simulated */
  PlanBaseline baselines[ROK_STRATEGY_BASELINE_COUNT];
  gboolean worker; /* a copy for one thread: owns only sim, scratch, seen and a reference to memo */
  guint prefetch;  /* the plan_prefetch setting plan_eval runs with (0 but in final judgements) */
  PlanGrid *grid;  /* the curve's budgets, planned as needed */
  GPtrArray *reduced; /* RokPlanner*: the same machine without SSDs, host offload, or both */
  PlanMemo *memo;     /* shared with workers and reduced copies */
};

/* planner.c: run a plan with these options (the others default). */
gboolean plan_eval(RokPlanner *p, const guint8 *decisions, guint64 memory_budget, guint detail, PlanEval *out);
/* The same, rebuilding whole layers (the recompute baseline's way). */
gboolean plan_eval_whole(RokPlanner *p, const guint8 *decisions, guint64 memory_budget, guint detail,
                         gboolean whole_layers, PlanEval *out);
/* Better: valid, fits `budget`, then faster; on equal times, fewer bytes
 * over PCIe (keep rather than offload for nothing), then less host memory
 * (it serves the rest of the job; the SSDs' wear is reported), then a
 * smaller peak. */
gboolean plan_better(const PlanEval *a, const PlanEval *b, guint64 budget);
static inline gboolean plan_fits(const PlanEval *e, guint64 budget) {
  return e->valid && e->peak <= budget;
}
static inline guint plan_member(const RokPlanner *p, const PlanClass *c, guint i) {
  return g_array_index(p->members, guint, c->first + i);
}
/* A trace with at most 24 saved tensors, whose runs are cheap: the search
 * tries more there (pairs, ruins, every prefetch window). */
static inline gboolean plan_small(const RokPlanner *p) {
  return p->members->len <= 24;
}
static inline const PlanClass *plan_class(const RokPlanner *p, guint i) {
  return &g_array_index(p->classes, PlanClass, i);
}
static inline const PlanUnit *plan_unit(const RokPlanner *p, guint i) {
  return &g_array_index(p->units, PlanUnit, i);
}
/* Set every member of unit `u` (all of them, or the first `count` from the
 * front or the back) to `d`. */
void plan_set_unit(const RokPlanner *p, guint8 *decisions, guint u, guint8 d, gboolean back, guint count);
/* The plan of a baseline strategy as decisions (and whether it rebuilds
 * whole layers), or NULL when the strategy does not apply to this machine
 * or the planner's options. */
guint8 *plan_baseline(RokPlanner *p, RokStrategy strategy, gboolean *whole_layers);
/* A plan's decisions as the planner's (representatives'), or NULL when
 * its granularity or tiers cannot express them. */
guint8 *plan_express(const RokPlanner *p, const RokStepPlan *plan);
/* The baselines, simulated (once). */
const PlanBaseline *plan_baselines(RokPlanner *p);
/* One of them, simulated (once) on its own. */
const PlanBaseline *plan_baseline_of(RokPlanner *p, RokStrategy strategy);
/* Everything the budgets share: baselines, descent, least memory. */
void plan_prepare(RokPlanner *p);
/* A planner for another thread, sharing what plan_prepare made. */
RokPlanner *plan_worker_new(const RokPlanner *p);

/* planner-memo.c: what the simulator said of each plan run (see there). */
PlanMemo *plan_memo_new(gsize n_tensors);
PlanMemo *plan_memo_ref(PlanMemo *memo);
void plan_memo_unref(PlanMemo *memo);
/* The budgets and prefetch windows a run is the same under (as
 * RokSimResult's same_budget_* and same_window_*). */
typedef struct {
  guint64 budget_lo, budget_hi;
  guint window_lo, window_hi;
} MemoSame;
/* `budget`: the budget the simulator runs with (options->memory_budget,
 * or the GPU's memory for 0). */
gboolean plan_memo_lookup(PlanMemo *memo, const guint8 *decisions, const RokStepOptions *options, guint64 budget,
                          PlanEval *out);
void plan_memo_insert(PlanMemo *memo, const guint8 *decisions, const RokStepOptions *options, const MemoSame *same,
                      const PlanEval *eval);
guint64 plan_memo_hits(PlanMemo *memo);

/* planner-groups.c: groups of tensors deciding alike (the granularity),
 * made after allowed_decisions. */
void plan_build_groups(RokPlanner *p);
void plan_free_groups(RokPlanner *p);
/* The decision tensor `t` takes when the representatives decide `d`. */
static inline guint8 plan_decision_of(const RokPlanner *p, const guint8 *d, guint t) {
  if (p->group_rep == NULL)
    return d[t];
  guint8 x = d[p->group_rep[t]];
  if ((x == ROK_DECISION_RECOMPUTE && p->group_input[t]) || !(p->own_allowed[t] & (1u << x)))
    return ROK_DECISION_KEEP;
  return x;
}
/* Decisions of a whole plan (a baseline's) as representatives' decisions,
 * or FALSE when the groups cannot express it. */
gboolean plan_groups_express(const RokPlanner *p, const guint8 *full, guint8 *out);

/* planner-classes.c */
void plan_build_classes(RokPlanner *p);

/* planner-descent.c: the greedy descent from keeping everything. */
void plan_descent(RokPlanner *p);
/* A descent under `budget` (the memory_budget option of its runs) from
 * `start` until the plan fits, in at most `max_runs` runs: the plan in
 * `out` and its figures, or FALSE. */
gboolean plan_descent_under(RokPlanner *p, const guint8 *start, guint64 budget, guint max_runs, guint8 *out,
                            PlanEval *eval);
void plan_step_free(gpointer step);

/* planner-ascent.c: the greedy ascent from the least-memory plan. */
void plan_ascent(RokPlanner *p);

/* planner-minmem.c: the plan that needs the least memory. */
void plan_min_memory(RokPlanner *p);

/* planner-polish.c: local search for plans that fit `budget`, each run
 * with the `memory_budget` option, at most `max_runs` runs; `decisions`
 * and `eval` (of such a run) are improved in place. */
void plan_polish(RokPlanner *p, guint8 *decisions, PlanEval *eval, guint64 budget, guint64 memory_budget,
                 guint max_runs);

/* planner-solve.c: the best plan for `budget`, simulated with the default
 * detail, or FALSE when nothing fits. `source` says who made it. */
typedef struct {
  guint8 *decisions;
  guint64 memory_budget;
  gboolean whole_layers; /* rebuild whole layers (a baseline's option) */
  guint prefetch;        /* plan_prefetch setting */
  PlanEval eval;
  gboolean final;   /* eval is at the default detail */
  RokStrategy source;
} PlanChoice;
gboolean plan_solve(RokPlanner *p, guint64 budget, guint polish_runs, PlanChoice *out);
/* Keeping everything, when its peak fits `budget`, is the answer: every
 * other plan computes at least as much and moves bytes besides (so it is
 * no faster, writes no less and moves no less). */
gboolean plan_keep_fits(RokPlanner *p, guint64 budget, PlanChoice *out);
void plan_choice_clear(PlanChoice *choice);
/* planner-run.c */
guint plan_polish_runs(const RokPlanner *p, gboolean curve);
/* ROK_ERROR_NO_FIT for `budget`, naming the smallest budget that fits. */
void plan_no_fit(RokPlanner *p, guint64 budget, GError **error);
/* Run a choice again with the default detail, as a RokStepPlan. */
RokStepPlan *plan_choice_plan(const RokPlanner *p, const PlanChoice *choice);

/* planner-grid.c: budgets planned once, shared by plans and the curve. */
struct _PlanGrid {
  guint n;
  guint64 *budgets;
  PlanChoice *found; /* decisions NULL: nothing fits */
  gboolean *done;
};
PlanGrid *plan_grid_new(guint n, guint64 lo, guint64 hi);
void plan_grid_free(PlanGrid *grid);
/* Among `cands` (PlanChoice*) that fit: the least SSD writes, then PCIe
 * bytes, then the better, among those within the wear tolerance of
 * the fastest; NULL when none fits. */
const PlanChoice *plan_pick(const RokPlanner *p, GPtrArray *cands, guint64 budget);
/* The plan for `budget` (see planner-grid.c); FALSE where none fits, as
 * below the least budget. */
gboolean plan_choose(RokPlanner *p, guint64 budget, PlanChoice *out);
/* The curve's `n` points from the least budget to keep's peak, each as
 * plan_choose would return it with that grid; `points` and `budgets` have
 * n entries (1 used when keep's peak is not above the least budget); a
 * point with NULL decisions has no plan. Returns the count. */
guint plan_grid_curve(RokPlanner *p, guint n, RokProgressFunc progress, gpointer user_data, PlanChoice *points,
                      guint64 *budgets);
