/* Private to src/plan: what the sweep's files share. */
#pragma once

#include "rok/sweep.h"

/* Strategies a sweep knows: the baselines and rok, by the planner's names. */
#define ROK_SWEEP_STRATEGY_COUNT ROK_STRATEGY_COUNT
#define rok_sweep_strategy_from_name rok_plan_strategy_from_name
/* offload and tba need SSDs. */
gboolean sweep_strategy_needs_nvme(RokStrategy strategy);

struct _RokSweepSpec {
  RokModelSource *model; /* the config and the user's --set */
  RokHw *hw;
  char *model_name;     /* as the config names the model */
  guint64 accumulation; /* micro-batches per step in the config */
  guint64 data_parallel;
  guint64 global_batch, gpus; /* the config's; 0: data_parallel as configured */
  GArray *values[ROK_SWEEP_AXIS_COUNT]; /* guint64, rising, never empty */
  gboolean swept[ROK_SWEEP_AXIS_COUNT]; /* set by the caller */
  GArray *strategies;                   /* RokStrategy */
};

/* The value of each axis at point `index`. */
void sweep_spec_point(const RokSweepSpec *spec, guint index, guint64 *at);
/* What a point tells the next micro-batch of a chain (the points that
 * differ only in micro-batch, rising): once the planner fits nowhere, it
 * fits nowhere at a larger micro-batch either (every activation grows
 * with it), so those points skip the search and report a least-memory
 * plan (rok_planner_least_memory), the previous point's among the
 * candidates. */
typedef struct {
  gboolean no_fit;
  GPtrArray *least; /* RokStepPlan*: the last point's rok plan per stage */
} SweepChain;
void sweep_chain_clear(SweepChain *chain);
/* Simulate every strategy at point `index`, appending a row each; `chain`
 * (NULL: none) carries what the point before it in its chain found. */
gboolean sweep_point_run(const RokSweepSpec *spec, guint index, SweepChain *chain, GArray *rows, GError **error);

/* A sweep of these rows (taken), its values and strategies worked out. */
RokSweep *sweep_new_from_rows(const char *model_name, const char *hw_name, GArray *rows);

/* The CSV's columns, in order, and where each lives in a row. */
typedef enum {
  ROK_SWEEP_FIELD_STRATEGY,
  ROK_SWEEP_FIELD_MODEL, /* the sweep's model_name */
  ROK_SWEEP_FIELD_HW,    /* the sweep's hw_name */
  ROK_SWEEP_FIELD_UINT,  /* guint64 */
  ROK_SWEEP_FIELD_DOUBLE,
  ROK_SWEEP_FIELD_BOOL,  /* gboolean, 0 or 1 */
} RokSweepFieldKind;

typedef struct {
  const char *name;
  RokSweepFieldKind kind;
  gsize offset; /* in RokSweepRow, for numbers */
} RokSweepColumn;

#define ROK_SWEEP_COLUMNS 27
extern const RokSweepColumn sweep_columns[ROK_SWEEP_COLUMNS];
