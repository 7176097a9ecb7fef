/* The farm across MPI ranks (built with ROK_WITH_MPI).
 *
 * Rank 0 gathers: its own threads take tasks from the queue, and its main
 * thread (the only one that calls MPI: MPI_THREAD_FUNNELED) answers the
 * other ranks, one task at a time to whichever asks. A working rank's main
 * thread sends a heartbeat every second while a thread of its own runs the
 * task. A rank silent for runner->timeout_s while it holds a task (stopped,
 * hung, or gone while mpirun lets the job go on) is given up: its task goes
 * back to the queue and it gets no more. Each farm run (a phase) ends with
 * every live rank idle and told to stop, so that phases do not mix.
 * Communication errors return (MPI_ERRORS_RETURN) and end the run with a
 * message rather than a hang. */
#include "farm.h"

#include "rok/core.h"

#ifdef ROK_WITH_MPI
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { TAG_READY = 1, TAG_RESULT, TAG_HEARTBEAT, TAG_TASK, TAG_STOP, TAG_BYE };
#define NO_TASK G_MAXUINT

static gboolean mpi_on;
static gboolean *given_up; /* per rank, for the whole run */
static gboolean any_given_up;
static double timeout_s = 60; /* of the last farm run */

gboolean rok_search_mpi_init(int *argc, char ***argv, GError **error) {
  /* Only under mpirun: a plain `rok search` never starts MPI. */
  if (g_getenv("OMPI_COMM_WORLD_SIZE") == NULL && g_getenv("PMIX_RANK") == NULL)
    return FALSE;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS ||
      provided < MPI_THREAD_FUNNELED) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_IO, "MPI could not be started with threads (MPI_THREAD_FUNNELED)");
    return FALSE;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  given_up = g_new0(gboolean, size);
  mpi_on = TRUE;
  return TRUE;
}

void rok_search_mpi_rank(guint *rank, guint *size) {
  int r = 0, s = 1;
  if (mpi_on) {
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &s);
  }
  *rank = (guint)r;
  *size = (guint)s;
}

/* Before MPI_Finalize, which waits for every rank: each rank says goodbye
 * to rank 0, which waits for them as long as it would for a result. A rank
 * stopped while it held no task is found here. */
static void say_goodbye(int rank, int size) {
  if (rank != 0) {
    MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_BYE, MPI_COMM_WORLD);
    return;
  }
  gboolean *bye = g_new0(gboolean, size);
  gint64 start = g_get_monotonic_time();
  for (int left = 0;;) {
    left = 0;
    for (int r = 1; r < size; r++)
      left += !given_up[r] && !bye[r];
    if (left == 0)
      break;
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_BYE, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
      break;
    if (flag) {
      MPI_Recv(NULL, 0, MPI_BYTE, st.MPI_SOURCE, TAG_BYE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      bye[st.MPI_SOURCE] = TRUE;
    } else if (g_get_monotonic_time() - start > (gint64)(timeout_s * 1e6)) {
      for (int r = 1; r < size; r++)
        if (!given_up[r] && !bye[r]) {
          fprintf(stderr, "rok: MPI rank %d did not finish within %.0f s; it is given up\n", r, timeout_s);
          given_up[r] = any_given_up = TRUE;
        }
    } else {
      g_usleep(1000);
    }
  }
  g_free(bye);
}

int rok_search_mpi_finish(int code) {
  if (!mpi_on)
    return code;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (code == 0 && size > 1 && !any_given_up)
    say_goodbye(rank, size);
  if (any_given_up || (code != 0 && size > 1)) {
    /* MPI_Finalize would wait for a rank given up, or for ranks still
     * waiting for work after a failure: end the job here. */
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  MPI_Finalize();
  g_clear_pointer(&given_up, g_free);
  mpi_on = FALSE;
  return code;
}

gboolean farm_mpi_abandoned(void) {
  return any_given_up;
}

static gboolean mpi_failed(int rc, const char *what, GError **error) {
  if (rc == MPI_SUCCESS)
    return FALSE;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "MPI %s failed: %.*s", what, len, text);
  return TRUE;
}

/* ---- Rank 0 ---- */

typedef struct {
  FarmQueue *queue;
  int size;
  guint *task;        /* per rank: the task it holds, NO_TASK */
  gboolean *idle;     /* per rank: asked for work and got none yet */
  gint64 *last_heard; /* per rank, monotonic µs */
  double timeout_s;
} Server;

static gboolean send_task(Server *s, int rank, GError **error) {
  guint task;
  if (!farm_queue_next(s->queue, FALSE, &task)) {
    s->idle[rank] = TRUE;
    return TRUE;
  }
  guint32 t = task;
  s->idle[rank] = FALSE;
  s->task[rank] = task;
  s->last_heard[rank] = g_get_monotonic_time();
  return !mpi_failed(MPI_Send(&t, 1, MPI_UINT32_T, rank, TAG_TASK, MPI_COMM_WORLD), "send", error);
}

static void take_result(Server *s, int rank, const guint8 *msg, int len) {
  guint32 head[3];
  if (len < (int)sizeof head)
    return;
  memcpy(head, msg, sizeof head);
  if (head[0] != s->task[rank])
    return; /* a task already handed elsewhere */
  s->task[rank] = NO_TASK;
  const guint8 *body = msg + sizeof head;
  gsize body_len = (gsize)len - sizeof head;
  if (head[1] == 0) {
    farm_queue_complete(s->queue, head[0], g_bytes_new(body, body_len), NULL);
  } else {
    g_autofree char *text = g_strndup((const char *)body, body_len);
    farm_queue_complete(s->queue, head[0], NULL, g_error_new_literal(ROK_ERROR, (gint)head[2], text));
  }
}

/* One message, if any is waiting; *heard TRUE when one was. */
static gboolean serve_one(Server *s, gboolean *heard, GError **error) {
  int flag = 0;
  MPI_Status st;
  if (mpi_failed(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st), "probe", error))
    return FALSE;
  *heard = flag != 0;
  if (!flag)
    return TRUE;
  int len = 0, r = st.MPI_SOURCE;
  MPI_Get_count(&st, MPI_BYTE, &len);
  g_autofree guint8 *msg = g_malloc(MAX(len, 1));
  if (mpi_failed(MPI_Recv(msg, len, MPI_BYTE, r, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "receive", error))
    return FALSE;
  if (given_up[r])
    return TRUE;
  s->last_heard[r] = g_get_monotonic_time();
  if (st.MPI_TAG == TAG_RESULT)
    take_result(s, r, msg, len);
  if (st.MPI_TAG == TAG_RESULT || st.MPI_TAG == TAG_READY)
    return send_task(s, r, error);
  return TRUE;
}

static void give_up(Server *s, int r, const char *why) {
  fprintf(stderr, "rok: MPI rank %d %s for %.0f s; %s\n", r, why, s->timeout_s,
          s->task[r] != NO_TASK ? "its task goes to another rank" : "it gets no work");
  given_up[r] = TRUE;
  any_given_up = TRUE;
  if (s->task[r] != NO_TASK)
    farm_queue_return(s->queue, s->task[r]);
  s->task[r] = NO_TASK;
}

/* Ranks holding a task too long silent are given up; idle ranks get any
 * task that came back. At the end, a rank never heard from is waited for
 * as long. */
static gboolean check_ranks(Server *s, gboolean end, GError **error) {
  gint64 now = g_get_monotonic_time(), limit = (gint64)(s->timeout_s * 1e6);
  for (int r = 1; r < s->size; r++) {
    if (given_up[r])
      continue;
    if ((s->task[r] != NO_TASK || (end && !s->idle[r])) && now - s->last_heard[r] > limit)
      give_up(s, r, s->task[r] != NO_TASK ? "sent nothing while it held a task" : "never asked for work");
    else if (s->idle[r] && !send_task(s, r, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean all_idle(const Server *s) {
  for (int r = 1; r < s->size; r++)
    if (!given_up[r] && !s->idle[r])
      return FALSE;
  return TRUE;
}

static gboolean serve(Server *s, GError **error) {
  gint64 start = g_get_monotonic_time();
  for (int r = 1; r < s->size; r++)
    s->last_heard[r] = start;
  for (;;) {
    gboolean finished = farm_queue_finished(s->queue);
    if (finished && all_idle(s))
      break;
    gboolean heard = FALSE;
    if (!serve_one(s, &heard, error) || !check_ranks(s, finished, error))
      return FALSE;
    if (!heard)
      g_usleep(200);
  }
  for (int r = 1; r < s->size; r++)
    if (!given_up[r] && mpi_failed(MPI_Send(NULL, 0, MPI_BYTE, r, TAG_STOP, MPI_COMM_WORLD), "send", error))
      return FALSE;
  return TRUE;
}

static gboolean run_root(const Farm *farm, const RokSearchRunner *runner, int size, GError **error) {
  FarmQueue *queue = farm_queue_new(farm, runner);
  Server s = {.queue = queue, .size = size, .timeout_s = runner->timeout_s};
  s.task = g_new(guint, size);
  for (int r = 0; r < size; r++)
    s.task[r] = NO_TASK;
  s.idle = g_new0(gboolean, size);
  s.last_heard = g_new0(gint64, size);
  GPtrArray *workers = farm_workers_start(queue, runner->threads == 0 ? 1 : runner->threads);
  gboolean ok = serve(&s, error);
  if (!ok) /* the local workers finish what is left: they must not be left running */
    for (int r = 1; r < size; r++)
      if (s.task[r] != NO_TASK)
        farm_queue_return(queue, s.task[r]);
  farm_workers_join(workers);
  g_free(s.task);
  g_free(s.idle);
  g_free(s.last_heard);
  farm_queue_free(queue);
  return ok;
}

/* ---- Other ranks ---- */

typedef struct {
  const Farm *farm;
  guint task;
  GBytes *result;
  GError *error;
  GAsyncQueue *finished;
} Job;

static gpointer job_thread(gpointer data) {
  Job *job = data;
  job->result = job->farm->work(job->task, job->farm->data, &job->error);
  g_async_queue_push(job->finished, job);
  return NULL;
}

static GBytes *result_message(Job *job) {
  guint32 head[3] = {job->task, job->result == NULL, job->error != NULL ? (guint32)job->error->code : 0};
  GByteArray *msg = g_byte_array_new();
  g_byte_array_append(msg, (const guint8 *)head, sizeof head);
  if (job->result != NULL) {
    gsize len = 0;
    const guint8 *data = g_bytes_get_data(job->result, &len);
    g_byte_array_append(msg, data, (guint)len);
  } else {
    g_byte_array_append(msg, (const guint8 *)job->error->message, (guint)strlen(job->error->message));
  }
  return g_byte_array_free_to_bytes(msg);
}

/* Run a task on a thread, a heartbeat to rank 0 every second meanwhile. */
static gboolean run_task(const Farm *farm, guint task, GError **error) {
  Job job = {.farm = farm, .task = task, .finished = g_async_queue_new()};
  /* g_thread_try_new: where no thread can be made (RLIMIT_NPROC) the task
   * runs here, without heartbeats, rather than the rank aborting. */
  GThread *thread = g_thread_try_new("rok-task", job_thread, &job, NULL);
  if (thread == NULL)
    job_thread(&job);
  gboolean ok = TRUE;
  while (g_async_queue_timeout_pop(job.finished, G_USEC_PER_SEC) == NULL)
    if (ok && mpi_failed(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_HEARTBEAT, MPI_COMM_WORLD), "send", error))
      ok = FALSE;
  if (thread != NULL)
    g_thread_join(thread);
  g_async_queue_unref(job.finished);
  g_autoptr(GBytes) msg = result_message(&job);
  g_clear_pointer(&job.result, g_bytes_unref);
  g_clear_error(&job.error);
  gsize len = 0;
  const void *data = g_bytes_get_data(msg, &len);
  return ok && !mpi_failed(MPI_Send(data, (int)len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD), "send", error);
}

static gboolean run_worker(const Farm *farm, GError **error) {
  if (mpi_failed(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD), "send", error))
    return FALSE;
  for (;;) {
    guint32 task = 0;
    MPI_Status st;
    if (mpi_failed(MPI_Recv(&task, 1, MPI_UINT32_T, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st), "receive", error))
      return FALSE;
    if (st.MPI_TAG == TAG_STOP)
      return TRUE;
    if (task >= farm->count) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "MPI: rank 0 sent task %u of %u", task, farm->count);
      return FALSE;
    }
    if (!run_task(farm, task, error))
      return FALSE;
  }
}

gboolean farm_mpi_run(const Farm *farm, const RokSearchRunner *runner, gboolean *root, GError **error) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  *root = rank == 0;
  timeout_s = runner->timeout_s;
  return rank == 0 ? run_root(farm, runner, size, error) : run_worker(farm, error);
}

#else /* without MPI */

gboolean rok_search_mpi_init(int *argc, char ***argv, GError **error) {
  (void)argc, (void)argv;
  /* Every rank would run the whole search and write the same files. */
  const char *size = g_getenv("OMPI_COMM_WORLD_SIZE");
  if (size != NULL && g_ascii_strtoull(size, NULL, 10) > 1)
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE,
                        "started by mpirun, but rok was built without MPI (ROK_WITH_MPI, libopenmpi-dev)");
  return FALSE;
}

void rok_search_mpi_rank(guint *rank, guint *size) {
  *rank = 0;
  *size = 1;
}

int rok_search_mpi_finish(int code) {
  return code;
}

gboolean farm_mpi_abandoned(void) {
  return FALSE;
}

gboolean farm_mpi_run(const Farm *farm, const RokSearchRunner *runner, gboolean *root, GError **error) {
  (void)farm, (void)runner;
  *root = TRUE;
  g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "rok was built without MPI (ROK_WITH_MPI)");
  return FALSE;
}

#endif
