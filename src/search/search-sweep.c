/* A sweep's tasks through the farm (threads or MPI ranks): rows by task,
 * the first failing point's error, as rok_sweep_run gives them. */
#include <string.h>

#include "farm.h"
#include "rok/core.h"

typedef struct {
  const RokSweepSpec *spec;
  GArray **rows;   /* per task */
  GError **errors; /* per task */
} SweepRun;

static GBytes *point_work(guint task, gpointer data, GError **error) {
  const SweepRun *run = data;
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(RokSweepRow));
  if (!rok_sweep_run_task(run->spec, task, rows, error))
    return NULL;
  return g_bytes_new(rows->data, rows->len * sizeof(RokSweepRow));
}

static void point_done(guint task, GBytes *result, GError *error, gpointer data) {
  SweepRun *run = data;
  if (result == NULL) {
    run->errors[task] = error;
    return;
  }
  gsize len = 0;
  const void *bytes = g_bytes_get_data(result, &len);
  run->rows[task] = g_array_new(FALSE, FALSE, sizeof(RokSweepRow));
  g_array_append_vals(run->rows[task], bytes, (guint)(len / sizeof(RokSweepRow)));
  g_bytes_unref(result);
}

RokSweep *rok_search_sweep_run(const RokSweepSpec *spec, const RokSearchRunner *runner, gboolean *root,
                               GError **error) {
  guint total = rok_sweep_spec_tasks(spec);
  SweepRun run = {.spec = spec, .rows = g_new0(GArray *, total), .errors = g_new0(GError *, total)};
  Farm farm = {.phase = "points", .count = total, .work = point_work, .done = point_done, .data = &run};
  RokSweep *sweep = NULL;
  if (farm_run(&farm, runner, root, error) && *root) {
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(RokSweepRow));
    for (guint i = 0; i < total && rows != NULL; i++) {
      if (run.errors[i] != NULL) {
        g_propagate_error(error, g_steal_pointer(&run.errors[i]));
        g_clear_pointer(&rows, g_array_unref);
      } else {
        g_array_append_vals(rows, run.rows[i]->data, run.rows[i]->len);
      }
    }
    if (rows != NULL)
      sweep = rok_sweep_new_from_rows(spec, rows);
  }
  for (guint i = 0; i < total; i++) {
    if (run.rows[i] != NULL)
      g_array_unref(run.rows[i]);
    g_clear_error(&run.errors[i]);
  }
  g_free(run.rows);
  g_free(run.errors);
  return sweep;
}
