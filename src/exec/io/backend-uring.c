/* The io_uring backend: one ring for all files, registered files and
 * buffers, and a reaper thread that takes completions.
 *
 * Submitters share the submission queue under a mutex; only the reaper
 * touches the completion queue, so the two sides never wait for each other.
 * The ring has one entry per request the queue depth allows, plus one for
 * the no-op that stops the reaper, so an SQE is always free. */
#ifdef ROK_WITH_URING

#include "exec/io/backend-impl.h"

#include <errno.h>
#include <liburing.h>

typedef struct {
  struct io_uring ring;
  GMutex sq_lock;
  GThread *reaper;
  gboolean fixed_files;
} RokUring;

/* Hands everything queued in the SQ to the kernel. EINTR, EAGAIN and EBUSY
 * are passing conditions (the kernel is short of memory or the CQ is
 * overflowing): the SQEs stay queued, so try again shortly. */
static void submit_locked(RokUring *u) {
  for (int tries = 0; io_uring_sq_ready(&u->ring) > 0; tries++) {
    int r = io_uring_submit(&u->ring);
    if (r >= 0 || r == -EINTR)
      continue;
    if ((r != -EAGAIN && r != -EBUSY) || tries > 10000) {
      /* Left queued: the next submit or the reaper will push it. */
      g_warning("io_uring_submit: %s", g_strerror(-r));
      return;
    }
    g_usleep(50);
  }
}

static void prep(RokUring *u, RokIoBackend *be, struct io_uring_sqe *sqe, RokIoReq *req) {
  int fd = u->fixed_files ? (int)req->file : be->fds[req->file];
  unsigned len = (unsigned)req->a_len;
  gboolean fixed = be->fixed_buffers && req->buf_index >= 0;
  if (req->a_len == 0)
    io_uring_prep_nop(sqe);
  else if (req->op == ROK_IO_WRITE && fixed)
    io_uring_prep_write_fixed(sqe, fd, req->a_buf, len, req->a_offset, req->buf_index);
  else if (req->op == ROK_IO_WRITE)
    io_uring_prep_write(sqe, fd, req->a_buf, len, req->a_offset);
  else if (fixed)
    io_uring_prep_read_fixed(sqe, fd, req->a_buf, len, req->a_offset, req->buf_index);
  else
    io_uring_prep_read(sqe, fd, req->a_buf, len, req->a_offset);
  if (u->fixed_files && req->a_len > 0)
    sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data(sqe, req);
}

static struct io_uring_sqe *get_sqe_locked(RokUring *u) {
  struct io_uring_sqe *sqe;
  /* Only if a submit failed above can the SQ be full; push it and retry. */
  while ((sqe = io_uring_get_sqe(&u->ring)) == NULL) {
    submit_locked(u);
    g_usleep(50);
  }
  return sqe;
}

static void uring_issue(RokIoBackend *be, RokIoReq *req) {
  RokUring *u = be->impl;
  g_mutex_lock(&u->sq_lock);
  prep(u, be, get_sqe_locked(u), req);
  submit_locked(u);
  g_mutex_unlock(&u->sq_lock);
}

static gpointer reap(gpointer data) {
  RokIoBackend *be = data;
  RokUring *u = be->impl;
  for (;;) {
    struct io_uring_cqe *cqe = NULL;
    int r = io_uring_wait_cqe(&u->ring, &cqe);
    if (r < 0) {
      if (r != -EINTR && r != -EAGAIN && r != -ETIME) {
        g_warning("io_uring_wait_cqe: %s", g_strerror(-r));
        g_usleep(1000);
      }
      continue;
    }
    RokIoReq *req = io_uring_cqe_get_data(cqe);
    int res = cqe->res;
    io_uring_cqe_seen(&u->ring, cqe);
    if (req == NULL)
      return NULL; /* the stop no-op */
    rok_io_backend_attempt_done(be, req, res);
  }
}

static void uring_shutdown(RokIoBackend *be) {
  RokUring *u = be->impl;
  g_mutex_lock(&u->sq_lock);
  struct io_uring_sqe *sqe = get_sqe_locked(u);
  io_uring_prep_nop(sqe);
  io_uring_sqe_set_data(sqe, NULL);
  submit_locked(u);
  g_mutex_unlock(&u->sq_lock);
  g_thread_join(u->reaper);
  io_uring_queue_exit(&u->ring);
  g_mutex_clear(&u->sq_lock);
  g_free(u);
  be->impl = NULL;
}

static const RokIoBackendOps uring_ops = {
  .name = "io_uring",
  .issue = uring_issue,
  .shutdown = uring_shutdown,
};

/* Registration only speeds things up: where it is refused (registered
 * buffers count against RLIMIT_MEMLOCK for unprivileged users) the ring
 * still works with plain file descriptors and addresses. */
static char *register_all(RokUring *u, RokIoBackend *be, const RokIoBackendConfig *config) {
  GString *note = g_string_new(NULL);
  int r = io_uring_register_files(&u->ring, config->fds, config->n_files);
  u->fixed_files = r == 0;
  if (r < 0)
    g_string_append_printf(note, "io_uring could not register the files (%s)", g_strerror(-r));
  if (config->n_buffers > 0) {
    r = io_uring_register_buffers(&u->ring, config->buffers, config->n_buffers);
    be->fixed_buffers = r == 0;
    if (r < 0)
      g_string_append_printf(note, "%sio_uring could not register the %u staging buffers (%s%s)",
                             note->len > 0 ? "; " : "", config->n_buffers, g_strerror(-r),
                             r == -ENOMEM ? ": RLIMIT_MEMLOCK too low?" : "");
  }
  if (note->len == 0) {
    g_string_free(note, TRUE);
    return NULL;
  }
  g_string_append(note, ": using plain descriptors and buffers");
  return g_string_free(note, FALSE);
}

int rok_io_uring_init(RokIoBackend *be, const RokIoBackendConfig *config, char **note) {
  RokUring *u = g_new0(RokUring, 1);
  unsigned entries = config->queue_depth * config->n_files + 1;
  int r = io_uring_queue_init(entries, &u->ring, 0);
  if (r < 0) {
    g_free(u);
    return r;
  }
  be->impl = u;
  be->ops = &uring_ops;
  *note = register_all(u, be, config);
  g_mutex_init(&u->sq_lock);
  u->reaper = g_thread_new("rok-uring", reap, be);
  return 0;
}

#endif /* ROK_WITH_URING */
