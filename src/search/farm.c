/* The farm's dispatcher and its local worker threads (see farm.h). */
#include "farm.h"

struct _FarmQueue {
  Farm farm;
  GMutex lock;
  GCond changed;
  guint next;     /* position in the order */
  GQueue *again;  /* tasks to hand out again (guint + 1) */
  guint out;      /* handed out, not done */
  guint finished; /* done or skipped */
  const RokSearchRunner *runner;
};

FarmQueue *farm_queue_new(const Farm *farm, const RokSearchRunner *runner) {
  FarmQueue *q = g_new0(FarmQueue, 1);
  q->farm = *farm;
  g_mutex_init(&q->lock);
  g_cond_init(&q->changed);
  q->again = g_queue_new();
  q->runner = runner;
  return q;
}

void farm_queue_free(FarmQueue *q) {
  if (q == NULL)
    return;
  g_mutex_clear(&q->lock);
  g_cond_clear(&q->changed);
  g_queue_free(q->again);
  g_free(q);
}

static void progress(FarmQueue *q) {
  if (q->runner->progress != NULL)
    q->runner->progress(q->farm.phase, q->finished, q->farm.count, q->runner->user_data);
}

static gboolean take(FarmQueue *q, guint *task) {
  if (!g_queue_is_empty(q->again)) {
    *task = GPOINTER_TO_UINT(g_queue_pop_head(q->again)) - 1;
    q->out++;
    return TRUE;
  }
  while (q->next < q->farm.count) {
    guint t = q->farm.order != NULL ? q->farm.order[q->next] : q->next;
    q->next++;
    if (q->farm.wanted == NULL || q->farm.wanted(t, q->farm.data)) {
      q->out++;
      *task = t;
      return TRUE;
    }
    q->finished++;
    progress(q);
  }
  return FALSE;
}

static gboolean all_done(const FarmQueue *q) {
  return q->next >= q->farm.count && g_queue_is_empty(q->again) && q->out == 0;
}

gboolean farm_queue_next(FarmQueue *q, gboolean wait, guint *task) {
  g_mutex_lock(&q->lock);
  gboolean got;
  while (!(got = take(q, task)) && wait && !all_done(q))
    g_cond_wait(&q->changed, &q->lock);
  g_mutex_unlock(&q->lock);
  return got;
}

void farm_queue_complete(FarmQueue *q, guint task, GBytes *result, GError *error) {
  g_mutex_lock(&q->lock);
  q->farm.done(task, result, error, q->farm.data);
  q->out--;
  q->finished++;
  progress(q);
  g_cond_broadcast(&q->changed);
  g_mutex_unlock(&q->lock);
}

void farm_queue_return(FarmQueue *q, guint task) {
  g_mutex_lock(&q->lock);
  g_queue_push_tail(q->again, GUINT_TO_POINTER(task + 1));
  q->out--;
  g_cond_broadcast(&q->changed);
  g_mutex_unlock(&q->lock);
}

gboolean farm_queue_finished(FarmQueue *q) {
  g_mutex_lock(&q->lock);
  gboolean done = all_done(q);
  g_mutex_unlock(&q->lock);
  return done;
}

void farm_queue_run(FarmQueue *q, guint task) {
  GError *error = NULL;
  GBytes *result = q->farm.work(task, q->farm.data, &error);
  farm_queue_complete(q, task, result, error);
}

static gpointer worker(gpointer data) {
  FarmQueue *q = data;
  guint task;
  while (farm_queue_next(q, TRUE, &task))
    farm_queue_run(q, task);
  return NULL;
}

GPtrArray *farm_workers_start(FarmQueue *q, guint threads) {
  GPtrArray *workers = g_ptr_array_new();
  /* g_thread_try_new: where no more threads can be made (RLIMIT_NPROC)
   * the ones made, or this thread alone, do the work. */
  for (guint i = 0; i < threads; i++) {
    GThread *t = g_thread_try_new("rok-farm", worker, q, NULL);
    if (t == NULL)
      break;
    g_ptr_array_add(workers, t);
  }
  if (workers->len == 0 && threads > 0)
    worker(q);
  return workers;
}

void farm_workers_join(GPtrArray *workers) {
  for (guint i = 0; i < workers->len; i++)
    g_thread_join(workers->pdata[i]);
  g_ptr_array_unref(workers);
}

void rok_search_runner_init(RokSearchRunner *runner) {
  *runner = (RokSearchRunner){.threads = 0, .mpi = FALSE, .timeout_s = 60};
}

gboolean farm_run(const Farm *farm, const RokSearchRunner *runner, gboolean *root, GError **error) {
  *root = TRUE;
  if (runner->mpi)
    return farm_mpi_run(farm, runner, root, error);
  FarmQueue *q = farm_queue_new(farm, runner);
  guint threads = runner->threads == 0 ? g_get_num_processors() : runner->threads;
  if (threads <= 1) {
    guint task;
    while (farm_queue_next(q, FALSE, &task))
      farm_queue_run(q, task);
  } else {
    farm_workers_join(farm_workers_start(q, MIN(threads, MAX(farm->count, 1))));
  }
  farm_queue_free(q);
  return TRUE;
}
