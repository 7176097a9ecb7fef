/* The policy shared by every I/O backend: queue depth per file, pending
 * FIFOs, fault injection, resubmission of short transfers and cancellation. */
#include "backend-impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rok/core.h"

/* A request that keeps failing with EINTR/EAGAIN or making no aligned
 * progress is given up after this many attempts rather than spun forever. */
#define MAX_RETRIES 1000

/* Sets up the attempt that moves what is left of REQ (or the no-op that
 * carries a forced result) and hands it to the backend proper. */
static void issue_attempt(RokIoBackend *be, RokIoReq *req) {
  if (req->forced != 0) {
    req->a_buf = NULL;
    req->a_offset = req->offset;
    req->a_len = 0;
  } else {
    gsize left = req->len - req->xfered;
    gsize align = be->align[req->file];
    if (req->shorten) {
      /* Half, kept aligned for O_DIRECT; too small to split: move it whole. */
      gsize half = left / 2 / align * align;
      if (half > 0)
        left = half;
      req->shorten = FALSE;
    }
    req->a_buf = req->buf + req->xfered;
    req->a_offset = req->offset + req->xfered;
    req->a_len = left;
  }
  be->ops->issue(be, req);
}

/* Flips one byte of the file in the range REQ is about to read: what a bad
 * disk or a stray writer would do. Done synchronously, before the read. */
static void corrupt_file(RokIoBackend *be, const RokIoReq *req) {
  int fd = be->fds[req->file];
  gsize block = MAX(be->align[req->file], 1);
  void *buf = NULL;
  if (posix_memalign(&buf, MAX(block, sizeof(void *)), block) != 0)
    return;
  if (pread(fd, buf, block, (off_t)req->offset) == (ssize_t)block) {
    ((guint8 *)buf)[block / 2] ^= 0xa5;
    if (pwrite(fd, buf, block, (off_t)req->offset) != (ssize_t)block)
      g_warning("fault injection: could not corrupt file %u: %s", req->file, g_strerror(errno));
  }
  free(buf);
}

static void apply_fault(RokIoBackend *be, RokIoReq *req) {
  RokFaultOp op = req->op == ROK_IO_WRITE ? ROK_FAULT_OP_WRITE : ROK_FAULT_OP_READ;
  RokFaultKind kind = rok_fault_next(be->fault, op);
  if (kind == ROK_FAULT_SHORT)
    req->shorten = TRUE;
  else if (kind == ROK_FAULT_CORRUPT)
    corrupt_file(be, req);
  else
    req->forced = rok_fault_errno(kind);
}

void rok_io_backend_submit(RokIoBackend *be, RokIoReq *req) {
  g_return_if_fail(req->file < be->n_files && req->done != NULL);
  g_return_if_fail(req->len > 0 && req->len <= (1u << 30));
  req->xfered = 0;
  req->forced = 0;
  req->shorten = FALSE;
  req->retries = 0;
  req->done_ns = 0;
  if (G_UNLIKELY(be->fault != NULL))
    apply_fault(be, req);

  RokIoFileQueue *q = &be->queues[req->file];
  g_mutex_lock(&be->lock);
  if (be->cancelled)
    req->forced = -ECANCELED;
  be->active++;
  gboolean now = q->in_flight < be->queue_depth;
  if (now) {
    q->in_flight++;
    be->stats.max_in_flight = MAX(be->stats.max_in_flight, q->in_flight);
  } else {
    g_queue_push_tail(&q->pending, req);
  }
  g_mutex_unlock(&be->lock);
  if (now)
    issue_attempt(be, req);
}

/* REQ is finished: its slot in the queue goes to the next pending request of
 * its file, then the submitter hears of it. */
static void finish(RokIoBackend *be, RokIoReq *req, int res) {
  RokIoFileQueue *q = &be->queues[req->file];
  g_mutex_lock(&be->lock);
  RokIoReq *next = g_queue_pop_head(&q->pending);
  if (next == NULL)
    q->in_flight--;
  be->stats.requests++;
  be->stats.retries += req->retries;
  g_mutex_unlock(&be->lock);
  if (next != NULL)
    issue_attempt(be, next);

  req->done(req, res);

  /* Counted down only after the callback, so that a drained backend runs no
   * more user code. */
  g_mutex_lock(&be->lock);
  if (--be->active == 0)
    g_cond_broadcast(&be->idle);
  g_mutex_unlock(&be->lock);
}

void storage_io_backend_attempt_done(RokIoBackend *be, RokIoReq *req, int res) {
  if (req->forced != 0) {
    finish(be, req, req->forced);
    return;
  }
  gboolean retry = FALSE;
  if (res == -EINTR || res == -EAGAIN) {
    retry = TRUE;
  } else if (res > 0) {
    req->xfered += (gsize)res;
    if (req->xfered < req->len) {
      /* O_DIRECT needs the rest to start aligned: redo the partial block. */
      req->xfered = req->xfered / be->align[req->file] * be->align[req->file];
      retry = TRUE;
    } else {
      res = 0;
    }
  } else if (res == 0) {
    /* No progress at all: past the end of the file, or a device that
     * accepts nothing. Either way, retrying would spin. */
    res = req->op == ROK_IO_READ ? -ENODATA : -EIO;
  }
  if (retry && ++req->retries < MAX_RETRIES) {
    issue_attempt(be, req);
    return;
  }
  if (retry)
    res = res > 0 ? -EIO : res;
  finish(be, req, res);
}

void rok_io_backend_cancel(RokIoBackend *be) {
  g_mutex_lock(&be->lock);
  be->cancelled = TRUE;
  /* Pending requests still go through the queue (as no-ops) so that their
   * callbacks, too, come from a backend thread. */
  for (guint f = 0; f < be->n_files; f++)
    for (GList *l = be->queues[f].pending.head; l != NULL; l = l->next)
      ((RokIoReq *)l->data)->forced = -ECANCELED;
  g_mutex_unlock(&be->lock);
}

void rok_io_backend_drain(RokIoBackend *be) {
  g_mutex_lock(&be->lock);
  while (be->active > 0)
    g_cond_wait(&be->idle, &be->lock);
  g_mutex_unlock(&be->lock);
}

void rok_io_backend_stats(RokIoBackend *be, RokIoBackendStats *stats) {
  g_mutex_lock(&be->lock);
  *stats = be->stats;
  g_mutex_unlock(&be->lock);
}

gboolean rok_io_backend_call(RokIoBackend *be, RokIoCallFunc fn, gpointer data) {
  g_return_val_if_fail(fn != NULL, FALSE);
  if (be->ops->call == NULL)
    return FALSE;
  be->ops->call(be, fn, data);
  return TRUE;
}

const char *rok_io_backend_name(const RokIoBackend *be) {
  return be->ops->name;
}

gboolean rok_io_backend_fixed_buffers(const RokIoBackend *be) {
  return be->fixed_buffers;
}

static gboolean check_config(const RokIoBackendConfig *config, GError **error) {
  if (config->n_files == 0 || config->queue_depth == 0 || config->queue_depth > 1024) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "I/O backend: need at least one file and a queue depth in 1..1024 (got %u files, depth %u)",
                config->n_files, config->queue_depth);
    return FALSE;
  }
  for (guint f = 0; f < config->n_files; f++)
    if (config->align[f] == 0 || (config->align[f] & (config->align[f] - 1)) != 0) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                  "I/O backend: alignment %zu of file %u is not a power of two", config->align[f], f);
      return FALSE;
    }
  return TRUE;
}

static RokIoBackend *common_new(const RokIoBackendConfig *config) {
  RokIoBackend *be = g_new0(RokIoBackend, 1);
  be->fds = g_memdup2(config->fds, config->n_files * sizeof(int));
  be->align = g_memdup2(config->align, config->n_files * sizeof(gsize));
  be->n_files = config->n_files;
  be->queue_depth = config->queue_depth;
  be->fault = config->fault;
  g_mutex_init(&be->lock);
  g_cond_init(&be->idle);
  be->queues = g_new0(RokIoFileQueue, config->n_files);
  for (guint f = 0; f < config->n_files; f++)
    g_queue_init(&be->queues[f].pending);
  return be;
}

/* Tries io_uring; AUTO falls back to psync on any failure to set it up. */
static int init_backend(RokIoBackend *be, const RokIoBackendConfig *config, char **note,
                        GError **error) {
  if (config->kind == ROK_IO_BACKEND_PSYNC)
    return storage_io_psync_init(be, config, note);
#ifdef ROK_WITH_URING
  int r = storage_io_uring_init(be, config, note);
  if (r == 0 || config->kind == ROK_IO_BACKEND_URING) {
    if (r < 0)
      g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "io_uring: %s", g_strerror(-r));
    return r;
  }
  g_free(*note);
  *note = g_strdup_printf("io_uring is not available (%s): using psync (pread/pwrite threads)",
                          g_strerror(-r));
#else
  if (config->kind == ROK_IO_BACKEND_URING) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "io_uring: this rok was built without it (ROK_WITH_URING=OFF)");
    return -ENOSYS;
  }
  *note = g_strdup("built without io_uring: using psync (pread/pwrite threads)");
#endif
  char *psync_note = NULL;
  int p = storage_io_psync_init(be, config, &psync_note);
  g_free(psync_note);
  return p;
}

static void common_free(RokIoBackend *be) {
  g_mutex_clear(&be->lock);
  g_cond_clear(&be->idle);
  g_free(be->queues);
  g_free(be->fds);
  g_free(be->align);
  g_free(be);
}

RokIoBackend *rok_io_backend_new(const RokIoBackendConfig *config, char **note, GError **error) {
  char *my_note = NULL;
  if (!check_config(config, error))
    return NULL;
  RokIoBackend *be = common_new(config);
  int r = init_backend(be, config, &my_note, error);
  if (r < 0) {
    if (error != NULL && *error == NULL)
      g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "I/O backend: %s", g_strerror(-r));
    g_free(my_note);
    common_free(be);
    return NULL;
  }
  if (note != NULL)
    *note = my_note;
  else
    g_free(my_note);
  return be;
}

void rok_io_backend_free(RokIoBackend *be) {
  if (be == NULL)
    return;
  rok_io_backend_drain(be);
  be->ops->shutdown(be);
  common_free(be);
}
