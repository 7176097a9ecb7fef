/* The psync backend: pread/pwrite on a pool of threads, one attempt per task,
 * so that the queue depth backend.c keeps is real concurrency at the disk.
 * Always built: it is what runs where io_uring is refused. */
#include "backend-impl.h"

#include <errno.h>
#include <unistd.h>

#include "rok/core.h"

/* Enough threads for the queue depth of a few disks; more only costs
 * memory and scheduling without adding bandwidth. */
#define MAX_THREADS 64

typedef struct {
  GThreadPool *pool;
} RokPsync;

static void run_attempt(gpointer data, gpointer user_data) {
  RokIoReq *req = data;
  RokIoBackend *be = user_data;
  static _Thread_local gboolean asked;
  if (!asked) { /* completions wait for these threads, beside the kernels of a CPU device */
    asked = TRUE;
    rok_host_thread_prompt();
  }
  int res = 0;
  if (req->a_len > 0) {
    int fd = be->fds[req->file];
    ssize_t n = req->op == ROK_IO_WRITE ? pwrite(fd, req->a_buf, req->a_len, (off_t)req->a_offset)
                                        : pread(fd, req->a_buf, req->a_len, (off_t)req->a_offset);
    res = n < 0 ? -errno : (int)n;
  }
  req->done_ns = rok_host_now_ns();
  storage_io_backend_attempt_done(be, req, res);
}

static void psync_issue(RokIoBackend *be, RokIoReq *req) {
  RokPsync *ps = be->impl;
  GError *error = NULL;
  /* With exclusive threads the pool only queues the task; an error would
   * mean a thread could not be started, and the task still runs later. */
  if (!g_thread_pool_push(ps->pool, req, &error)) {
    g_warning("psync: %s", error->message);
    g_error_free(error);
  }
}

static void psync_shutdown(RokIoBackend *be) {
  RokPsync *ps = be->impl;
  g_thread_pool_free(ps->pool, FALSE, TRUE);
  g_free(ps);
  be->impl = NULL;
}

static const RokIoBackendOps psync_ops = {
  .name = "psync",
  .issue = psync_issue,
  .call = NULL, /* any of its threads submits: nothing is saved by running there */
  .shutdown = psync_shutdown,
};

int storage_io_psync_init(RokIoBackend *be, const RokIoBackendConfig *config, char **note) {
  (void)note;
  guint threads = MIN(config->queue_depth * config->n_files, MAX_THREADS);
  GError *error = NULL;
  GThreadPool *pool = g_thread_pool_new(run_attempt, be, (gint)threads, TRUE, &error);
  /* An exclusive pool that could not start all its threads still comes
   * back, with the error set: it serves with those it started, and with
   * none it would take requests no thread ever runs. */
  if (pool != NULL && error != NULL && g_thread_pool_get_num_threads(pool) == 0) {
    g_thread_pool_free(pool, TRUE, FALSE);
    pool = NULL;
  }
  g_clear_error(&error);
  if (pool == NULL)
    return -EAGAIN;
  RokPsync *ps = g_new0(RokPsync, 1);
  ps->pool = pool;
  be->impl = ps;
  be->ops = &psync_ops;
  be->fixed_buffers = FALSE;
  return 0;
}
