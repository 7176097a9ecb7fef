/* Private to src/search: the specification and what the search's files
 * share. */
#pragma once

#include "rok/model.h"
#include "rok/search.h"

struct _RokSearchSpec {
  RokModelSource *model; /* the config and the user's --set */
  RokHw *hw;
  char *model_name;
  guint64 layers, global_batch;
  GArray *values[ROK_SEARCH_AXIS_COUNT]; /* guint64, rising; NULL: the default */
  guint64 gpus_per_node;
  gboolean modes[2]; /* offload 0 and 1 */
  double min_lifetime_years;
  guint top;
  gboolean prune;
};

/* The model at a layout: every pipeline stage's trace (one without
 * pipelining), RokTrace *. */
GPtrArray *search_layout_traces(const RokSearchSpec *spec, const RokLayout *layout, GError **error);
/* Mark the rows on the Pareto front (search-io.c). */
void search_mark_pareto(RokSearch *search);
