/* What backend.c shares with the backends proper (backend-uring.c,
 * backend-psync.c); nothing outside the three includes this.
 *
 * backend.c owns the policy: queue depth per file, the pending FIFOs, fault
 * injection, short-transfer and EINTR/EAGAIN resubmission, cancellation and
 * draining. A backend proper only starts one attempt (issue) and reports how
 * it ended (storage_io_backend_attempt_done, from its own thread). */
#pragma once

#include "rok/storage.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;
  /* Starts the attempt described by req->a_buf, a_offset, a_len (a_len 0: a
   * no-op whose completion only carries req->forced back). Called from any
   * thread, including the backend's own; must not block on I/O. */
  void (*issue)(RokIoBackend *backend, RokIoReq *req);
  /* Queues FN(DATA) to run on the thread that submits every request; NULL
   * where there is no such thread. */
  void (*call)(RokIoBackend *backend, RokIoCallFunc fn, gpointer data);
  /* Stops threads and frees the backend proper; called once nothing is in
   * flight. Must not free the RokIoBackend itself (backend.c does). */
  void (*shutdown)(RokIoBackend *backend);
} RokIoBackendOps;

typedef struct {
  guint in_flight;  /* attempts the kernel or a worker holds */
  GQueue pending;   /* RokIoReq waiting for the queue depth to free */
} RokIoFileQueue;

struct _RokIoBackend {
  const RokIoBackendOps *ops;
  gpointer impl;          /* the backend proper's state */
  gboolean fixed_buffers; /* set by the backend proper */

  int *fds;
  gsize *align;
  guint n_files;
  guint queue_depth;
  RokFault *fault;

  GMutex lock;            /* guards the fields below */
  GCond idle;
  RokIoFileQueue *queues; /* one per file */
  guint active;           /* submitted and not yet past their callback */
  gboolean cancelled;
  RokIoBackendStats stats;
};

/* Called by the backend proper when an attempt of REQ ended: RES bytes moved
 * or -errno; req->done_ns says when it saw the attempt end. */
void storage_io_backend_attempt_done(RokIoBackend *backend, RokIoReq *req, int res);

/* The backends proper: fill BACKEND->ops, impl and fixed_buffers. They
 * return 0 or -errno (io_uring refusal is told apart from other failures by
 * the caller), with a note on what they gave up. */
int storage_io_psync_init(RokIoBackend *backend, const RokIoBackendConfig *config, char **note);
#ifdef ROK_WITH_URING
int storage_io_uring_init(RokIoBackend *backend, const RokIoBackendConfig *config, char **note);
#endif

G_END_DECLS
