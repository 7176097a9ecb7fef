/* The io_uring backend: one ring, owned by one thread that sets it up,
 * submits every request and takes every completion.
 *
 * Why one owner: block I/O completions are finished by task work of the
 * task that submitted them. If the executor's threads submitted directly,
 * each completion would interrupt whichever of them submitted it (perhaps
 * one busy driving the device) and would wait while it sleeps. With one
 * owner, that work runs in the thread that is waiting for it anyway, the
 * ring can be IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN, and requests
 * batch naturally. Other threads hand requests over through a queue and an
 * eventfd the owner keeps a read posted on; requests the owner issues itself
 * (resubmissions, the next pending request of a file, submissions from
 * completion callbacks and from calls run on it) go straight into its
 * submission queue. A call (rok_io_backend_call) is work handed over the
 * same way, so that a whole leg's requests leave with one hand-off, made
 * where its thread would otherwise have made one per request.
 *
 * The ring has an entry for every request the queue depth allows plus the
 * eventfd read, so an SQE is always free and the CQ cannot overflow. */
#ifdef ROK_WITH_URING

#include "backend-impl.h"

#include <errno.h>
#include <liburing.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rok/core.h"

/* user_data of the eventfd read; requests carry their RokIoReq pointer. */
#define WAKE_TAG ((void *)&wake_tag)
static const char wake_tag;

typedef struct {
  RokIoCallFunc fn;
  gpointer data;
} UringCall;

typedef struct {
  struct io_uring ring;
  GThread *owner;        /* set by the owner itself */
  gboolean fixed_files;
  int wake_fd;
  guint64 wake_value;    /* the eventfd read lands here */

  GMutex lock;           /* guards the fields below */
  GCond ready;
  gboolean started;      /* set-up finished: init_res tells how */
  int init_res;
  char *init_note;
  const RokIoBackendConfig *config; /* during set-up only */
  GQueue incoming;       /* requests from other threads */
  GQueue calls;          /* UringCall: work to run on the owner */
  gboolean woken;        /* wake_fd written since the owner last looked */
  gboolean stopping;
} RokUring;

static struct io_uring_sqe *get_sqe(RokUring *u) {
  struct io_uring_sqe *sqe;
  while ((sqe = io_uring_get_sqe(&u->ring)) == NULL)
    io_uring_submit(&u->ring); /* only if many were queued since the last submit */
  return sqe;
}

/* Queues REQ's attempt in the SQ and submits it at once, on its own
 * (owner thread only). Requests submitted together are plugged, and the
 * block layer merges a tensor's adjacent chunks into requests of up to
 * max_sectors_kb, which a virtual disk serves one at a time: on the virtio
 * disk of the development VM, an offload step's chunks merged into 4 MiB
 * requests moved 2.1 GB/s (writes) and 1.9-2.3 GB/s (reads) while the disk
 * was busy, the same 1 MiB chunks submitted one by one 3.3 and 2.7
 * (tests/bench/bench-small-tensors.sh, block-layer traces). One
 * io_uring_enter per request costs microseconds (the eventfd read and
 * no-ops wait for the next one). */
static void prep(RokUring *u, RokIoBackend *be, RokIoReq *req) {
  struct io_uring_sqe *sqe = get_sqe(u);
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
  if (req->a_len > 0)
    io_uring_submit(&u->ring);
}

static void arm_wake(RokUring *u) {
  struct io_uring_sqe *sqe = get_sqe(u);
  io_uring_prep_read(sqe, u->wake_fd, &u->wake_value, sizeof u->wake_value, 0);
  io_uring_sqe_set_data(sqe, WAKE_TAG);
}

/* Unlocks U and makes the owner look at `incoming` and `stopping`: one
 * eventfd write covers all that is queued until it looks. */
static void wake_owner_unlock(RokUring *u) {
  gboolean wake = !u->woken;
  u->woken = TRUE;
  g_mutex_unlock(&u->lock);
  guint64 one = 1;
  if (wake && write(u->wake_fd, &one, sizeof one) != (ssize_t)sizeof one)
    g_warning("io_uring backend: cannot wake its thread: %s", g_strerror(errno));
}

static void uring_issue(RokIoBackend *be, RokIoReq *req) {
  RokUring *u = be->impl;
  if (g_thread_self() == u->owner) {
    prep(u, be, req); /* a request goes out at once, a no-op when the owner next waits */
    return;
  }
  g_mutex_lock(&u->lock);
  g_queue_push_tail(&u->incoming, req);
  wake_owner_unlock(u);
}

/* Work for the owner, from any thread (the owner's own calls, from a
 * completion callback, wait for its next turn: the eventfd read completes
 * at once then, without a wake-up). */
static void uring_call(RokIoBackend *be, RokIoCallFunc fn, gpointer data) {
  RokUring *u = be->impl;
  UringCall *call = g_new(UringCall, 1);
  *call = (UringCall){fn, data};
  g_mutex_lock(&u->lock);
  g_queue_push_tail(&u->calls, call);
  wake_owner_unlock(u);
}

/* The eventfd fired: take what other threads queued. FALSE when stopping
 * (nothing is in flight then, and no call is queued: its caller waits for
 * it). */
static gboolean take_incoming(RokUring *u, RokIoBackend *be) {
  g_mutex_lock(&u->lock);
  GQueue batch = u->incoming, calls = u->calls;
  g_queue_init(&u->incoming);
  g_queue_init(&u->calls);
  u->woken = FALSE;
  gboolean stopping = u->stopping;
  g_mutex_unlock(&u->lock);
  for (GList *l = batch.head; l != NULL; l = l->next)
    prep(u, be, l->data);
  g_list_free(batch.head);
  for (GList *l = calls.head; l != NULL; l = l->next) {
    UringCall *call = l->data;
    call->fn(call->data);
    g_free(call);
  }
  g_list_free(calls.head);
  if (!stopping)
    arm_wake(u);
  return !stopping;
}

/* Submits what is queued, waits for at least one completion and handles
 * all that are there. Every completion is stamped as seen before any
 * callback runs: a callback can lose the processor (it primes copies and
 * wakes threads beside a CPU device's busy workers), and the requests
 * reaped with it had ended all the same (the LLaMA-shaped model's read
 * batches, 2026-12-06: the last 2-3 reads of a quarter of them stamped
 * 1.4-4.2 ms late, the thread runnable that long behind a kernel's
 * worker). FALSE once told to stop. */
static gboolean turn(RokUring *u, RokIoBackend *be) {
  int r = io_uring_submit_and_wait(&u->ring, 1);
  if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME) {
    g_warning("io_uring_submit_and_wait: %s", g_strerror(-r));
    g_usleep(1000);
  }
  gboolean running = TRUE;
  unsigned head, seen = 0;
  /* This turn's completions, all seen now; without DEFER_TASKRUN more can
   * be posted while their callbacks run, and wait for the next turn. */
  unsigned reaped = io_uring_cq_ready(&u->ring);
  gint64 now = rok_host_now_ns();
  struct io_uring_cqe *cqe;
  io_uring_for_each_cqe(&u->ring, head, cqe) {
    if (seen == reaped)
      break;
    void *data = io_uring_cqe_get_data(cqe);
    seen++;
    if (data == WAKE_TAG) {
      running = take_incoming(u, be) && running;
    } else {
      ((RokIoReq *)data)->done_ns = now;
      storage_io_backend_attempt_done(be, data, cqe->res);
    }
  }
  io_uring_cq_advance(&u->ring, seen);
  return running;
}

/* Without SINGLE_ISSUER / DEFER_TASKRUN (Linux 6.1) or COOP_TASKRUN (5.19)
 * the ring still works; it only costs a little more per completion. */
static int init_ring(RokUring *u, unsigned entries) {
  static const unsigned flags[] = {
    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
    IORING_SETUP_COOP_TASKRUN,
    0,
  };
  int r = -EINVAL;
  for (guint i = 0; i < G_N_ELEMENTS(flags) && r == -EINVAL; i++)
    r = io_uring_queue_init(entries, &u->ring, flags[i]);
  return r;
}

/* Registration only speeds things up: where it is refused (registered
 * buffers count against RLIMIT_MEMLOCK for unprivileged users) the ring
 * still works with plain descriptors and addresses. */
static char *register_all(RokUring *u, RokIoBackend *be, const RokIoBackendConfig *config) {
  g_autoptr(GString) note = g_string_new(NULL);
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
  if (note->len == 0)
    return NULL;
  g_string_append(note, ": using plain descriptors and buffers");
  return g_strdup(note->str);
}

static gpointer owner_main(gpointer data) {
  RokIoBackend *be = data;
  RokUring *u = be->impl;
  u->owner = g_thread_self();
  rok_host_thread_prompt(); /* completions wait for it, beside the kernels of a CPU device */
  const RokIoBackendConfig *config = u->config;
  int r = init_ring(u, config->queue_depth * config->n_files + 1);
  char *note = r == 0 ? register_all(u, be, config) : NULL;
  g_mutex_lock(&u->lock);
  u->started = TRUE;
  u->init_res = r;
  u->init_note = note;
  g_cond_signal(&u->ready);
  g_mutex_unlock(&u->lock);
  if (r < 0)
    return NULL;
  arm_wake(u);
  while (turn(u, be))
    ;
  io_uring_queue_exit(&u->ring);
  return NULL;
}

static void uring_free(RokUring *u) {
  if (u->wake_fd >= 0)
    close(u->wake_fd);
  g_mutex_clear(&u->lock);
  g_cond_clear(&u->ready);
  g_free(u);
}

/* Called once nothing is in flight: only the eventfd read is posted. */
static void uring_shutdown(RokIoBackend *be) {
  RokUring *u = be->impl;
  g_mutex_lock(&u->lock);
  u->stopping = TRUE;
  wake_owner_unlock(u);
  g_thread_join(u->owner);
  uring_free(u);
  be->impl = NULL;
}

static const RokIoBackendOps uring_ops = {
  .name = "io_uring",
  .issue = uring_issue,
  .call = uring_call,
  .shutdown = uring_shutdown,
};

int storage_io_uring_init(RokIoBackend *be, const RokIoBackendConfig *config, char **note) {
  RokUring *u = g_new0(RokUring, 1);
  g_mutex_init(&u->lock);
  g_cond_init(&u->ready);
  g_queue_init(&u->incoming);
  g_queue_init(&u->calls);
  u->config = config;
  u->wake_fd = eventfd(0, EFD_CLOEXEC);
  if (u->wake_fd < 0) {
    int e = errno;
    uring_free(u);
    return -e;
  }
  be->impl = u;
  be->ops = &uring_ops;
  GThread *thread = g_thread_try_new("rok-uring", owner_main, be, NULL);
  if (thread == NULL) { /* RLIMIT_NPROC: an error, not an abort */
    uring_free(u);
    be->impl = NULL;
    be->ops = NULL;
    return -EAGAIN;
  }
  g_mutex_lock(&u->lock);
  while (!u->started)
    g_cond_wait(&u->ready, &u->lock);
  g_mutex_unlock(&u->lock);
  int r = u->init_res;
  *note = u->init_note;
  u->config = NULL;
  if (r < 0) {
    g_thread_join(thread);
    uring_free(u);
    be->impl = NULL;
    be->ops = NULL;
  }
  return r;
}

#endif /* ROK_WITH_URING */
