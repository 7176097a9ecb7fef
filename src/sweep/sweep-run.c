/* Running a sweep's points, serially or on a GLib thread pool. Each point
 * writes only its own slot, so the rows come out in sweep order whatever
 * the threads did; the error reported is that of the first failing point,
 * as a serial run would report it. With the planner among the strategies
 * a task is a chain (the micro-batches at one value of the other axes),
 * run in order: a point learns from the one before it (SweepChain), the
 * same on any number of threads. */
#include "sweep-private.h"

typedef struct {
  const RokSweepSpec *spec;
  GArray **rows;        /* per point */
  GError **errors;      /* per point */
  gint first_failed;    /* atomic: the lowest failing index; G_MAXINT while none */
  GAsyncQueue *done;    /* a token per finished point */
  guint total;          /* points */
  guint chain_len;      /* points per task */
  RokSweepProgressFunc progress;
  gpointer user_data;
} Job;

/* Points after a failure need not run: only the first failure is reported. */
static void note_failure(Job *job, guint index) {
  gint seen = g_atomic_int_get(&job->first_failed);
  while ((gint)index < seen && !g_atomic_int_compare_and_exchange_full(&job->first_failed, seen, (gint)index, &seen))
    ;
}

static void run_one(Job *job, guint index, SweepChain *chain) {
  if ((gint)index > g_atomic_int_get(&job->first_failed))
    return;
  job->rows[index] = g_array_new(FALSE, FALSE, sizeof(RokSweepRow));
  if (!sweep_point_run(job->spec, index, chain, job->rows[index], &job->errors[index]))
    note_failure(job, index);
}

/* Task `task`'s points in order; each finished point is a token on
 * `done` (a pool's worker) or, without one, reported at once. */
static void run_task(Job *job, guint task, GAsyncQueue *done) {
  SweepChain chain = {0};
  for (guint i = task * job->chain_len; i < (task + 1) * job->chain_len; i++) {
    run_one(job, i, &chain);
    if (done != NULL)
      g_async_queue_push(done, GUINT_TO_POINTER(i + 1));
    else if (job->progress != NULL)
      job->progress(i + 1, job->total, job->user_data);
  }
  sweep_chain_clear(&chain);
}

static void worker(gpointer data, gpointer user_data) {
  Job *job = user_data;
  run_task(job, GPOINTER_TO_UINT(data) - 1, job->done);
}

/* FALSE when the pool's threads could not all be started (RLIMIT_NPROC, or
 * RLIMIT_AS leaving no room for their stacks): GLib then returns a pool with
 * fewer threads, maybe none, and sets the error; the caller runs serially. */
static gboolean run_parallel(Job *job, guint threads) {
  GError *failure = NULL;
  GThreadPool *pool = g_thread_pool_new(worker, job, (gint)threads, TRUE, &failure);
  if (failure != NULL) {
    if (pool != NULL)
      g_thread_pool_free(pool, TRUE, TRUE);
    g_error_free(failure);
    return FALSE;
  }
  for (guint i = 0; i < job->total / job->chain_len; i++)
    g_thread_pool_push(pool, GUINT_TO_POINTER(i + 1), NULL);
  for (guint done = 1; done <= job->total; done++) {
    g_async_queue_pop(job->done);
    if (job->progress != NULL)
      job->progress(done, job->total, job->user_data);
  }
  g_thread_pool_free(pool, FALSE, TRUE);
  return TRUE;
}

static void run_serial(Job *job) {
  for (guint t = 0; t < job->total / job->chain_len && g_atomic_int_get(&job->first_failed) == G_MAXINT; t++)
    run_task(job, t, NULL);
}

/* Points per task: a chain's with the planner, else one. */
static guint chain_len(const RokSweepSpec *spec) {
  for (guint i = 0; i < spec->strategies->len; i++)
    if (g_array_index(spec->strategies, RokStrategy, i) == ROK_STRATEGY_ROK)
      return spec->values[ROK_SWEEP_MICRO_BATCH]->len;
  return 1;
}

static RokSweep *collect(Job *job, guint total, GError **error) {
  gint failed = g_atomic_int_get(&job->first_failed);
  if (failed != G_MAXINT) {
    g_propagate_error(error, g_steal_pointer(&job->errors[failed]));
    return NULL;
  }
  GArray *rows = g_array_new(FALSE, FALSE, sizeof(RokSweepRow));
  for (guint i = 0; i < total; i++)
    g_array_append_vals(rows, job->rows[i]->data, job->rows[i]->len);
  return sweep_new_from_rows(job->spec->model_name, job->spec->hw->name, rows);
}

RokSweep *rok_sweep_run(const RokSweepSpec *spec, guint threads, RokSweepProgressFunc progress, gpointer user_data,
                        GError **error) {
  guint total = rok_sweep_spec_points(spec);
  Job job = {.spec = spec,
             .first_failed = G_MAXINT,
             .total = total,
             .chain_len = chain_len(spec),
             .progress = progress,
             .user_data = user_data};
  job.rows = g_new0(GArray *, total);
  job.errors = g_new0(GError *, total);
  job.done = g_async_queue_new();
  if (threads == 0)
    threads = g_get_num_processors();
  threads = MIN(threads, total / job.chain_len);
  if (threads <= 1 || !run_parallel(&job, threads))
    run_serial(&job);
  RokSweep *sweep = collect(&job, total, error);
  for (guint i = 0; i < total; i++) {
    if (job.rows[i] != NULL)
      g_array_unref(job.rows[i]);
    g_clear_error(&job.errors[i]);
  }
  g_free(job.rows);
  g_free(job.errors);
  g_async_queue_unref(job.done);
  return sweep;
}

guint rok_sweep_spec_tasks(const RokSweepSpec *spec) {
  return rok_sweep_spec_points(spec) / chain_len(spec);
}

gboolean rok_sweep_run_task(const RokSweepSpec *spec, guint task, GArray *rows, GError **error) {
  g_return_val_if_fail(task < rok_sweep_spec_tasks(spec), FALSE);
  guint len = chain_len(spec);
  SweepChain chain = {0};
  gboolean ok = TRUE;
  for (guint i = task * len; ok && i < (task + 1) * len; i++)
    ok = sweep_point_run(spec, i, &chain, rows, error);
  sweep_chain_clear(&chain);
  return ok;
}

gboolean rok_sweep_run_point(const RokSweepSpec *spec, guint index, GArray *rows, GError **error) {
  g_return_val_if_fail(index < rok_sweep_spec_points(spec), FALSE);
  return sweep_point_run(spec, index, NULL, rows, error);
}

RokSweep *rok_sweep_new_from_rows(const RokSweepSpec *spec, GArray *rows) {
  return sweep_new_from_rows(spec->model_name, spec->hw->name, rows);
}
