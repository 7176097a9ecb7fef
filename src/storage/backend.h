/* I/O backends: asynchronous positional reads and writes on a fixed set of
 * files, at a bounded queue depth per file.
 *
 * Two backends share this interface and all their policy (backend.c):
 * - io_uring (backend-uring.c, only #ifdef ROK_WITH_URING): one ring for all
 *   files, files and buffers registered (READ_FIXED / WRITE_FIXED), owned
 *   by one thread that submits and takes every completion;
 * - psync (backend-psync.c, always built): pread/pwrite on a small pool of
 *   threads, so that a queue depth is kept without io_uring.
 * ROK_IO_BACKEND_AUTO takes io_uring and falls back to psync, with a note,
 * where the ring cannot be set up (containers often refuse it with EPERM;
 * kernels without it say ENOSYS).
 *
 * Every submitted request gets exactly one completion, on a backend thread
 * (never inside rok_io_backend_submit()): res is 0 when all len bytes moved,
 * or -errno. Short transfers, EINTR and EAGAIN are resubmitted here; the
 * callback never sees them. Requests beyond the queue depth wait in a FIFO
 * per file, so submitting never blocks. Callbacks should be brief (hand the
 * result to another thread) but may submit more requests. */
#pragma once

#include <glib.h>
#include <sys/uio.h>

#include "rok/storage.h"

G_BEGIN_DECLS

typedef enum {
  ROK_IO_BACKEND_AUTO,  /* io_uring where the kernel allows it, else psync */
  ROK_IO_BACKEND_URING, /* io_uring or an error */
  ROK_IO_BACKEND_PSYNC, /* pread/pwrite threads */
} RokIoBackendKind;

typedef enum {
  ROK_IO_WRITE,
  ROK_IO_READ,
} RokIoOp;

typedef struct _RokIoBackend RokIoBackend;
typedef struct _RokIoReq RokIoReq;
typedef void (*RokIoReqDone)(RokIoReq *req, int res);

/* One request. The submitter fills the first block and keeps the struct
 * alive and untouched until its completion; embed it in a larger struct to
 * carry context (the completion gets the same pointer back). */
struct _RokIoReq {
  RokIoOp op;
  guint file;        /* index into the backend's file table */
  guint64 offset;    /* aligned for O_DIRECT files */
  guint8 *buf;       /* aligned for O_DIRECT files */
  gsize len;         /* aligned for O_DIRECT files, at most 1 GiB */
  int buf_index;     /* registered buffer that holds [buf, buf + len), or -1 */
  RokIoReqDone done;

  /* Backend state, set by rok_io_backend_submit(). */
  gsize xfered;      /* bytes moved so far */
  int forced;        /* -errno to complete with, without doing the I/O */
  gboolean shorten;  /* fault injection: the next attempt moves about half */
  guint retries;     /* attempts after the first */
  guint8 *a_buf;     /* the attempt in progress */
  guint64 a_offset;
  gsize a_len;       /* 0: a no-op that only carries `forced` back */
};

typedef struct {
  RokIoBackendKind kind;
  const int *fds;               /* the files, opened by the caller */
  const gsize *align;           /* per file: O_DIRECT alignment, 1 when buffered */
  guint n_files;
  guint queue_depth;            /* requests in flight per file */
  const struct iovec *buffers;  /* to register (io_uring fixed buffers); may be NULL */
  guint n_buffers;
  RokFault *fault;              /* borrowed; NULL: no fault injection */
} RokIoBackendConfig;

typedef struct {
  guint64 requests;     /* completed requests */
  guint64 retries;      /* resubmissions after short transfers, EINTR or EAGAIN */
  guint max_in_flight;  /* most requests a file had in flight at once */
} RokIoBackendStats;

/* Sets the backend up; the fds stay the caller's (close them after
 * rok_io_backend_free()). A note (may be NULL) tells what was given up and
 * why: io_uring refused, buffers or files not registered. An unusable
 * configuration or a refused forced kind is ROK_ERROR_IO. */
RokIoBackend *rok_io_backend_new(const RokIoBackendConfig *config, char **note, GError **error);

/* Waits for every request to complete, then stops the backend's threads. */
void rok_io_backend_free(RokIoBackend *backend);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokIoBackend, rok_io_backend_free)

/* "io_uring" or "psync". */
const char *rok_io_backend_name(const RokIoBackend *backend);
/* Whether requests with a buf_index use registered buffers (READ_FIXED /
 * WRITE_FIXED); FALSE for psync or when registration was refused. */
gboolean rok_io_backend_fixed_buffers(const RokIoBackend *backend);

/* Queues REQ; its done callback runs later on a backend thread. Thread-safe,
 * never blocks on I/O. */
void rok_io_backend_submit(RokIoBackend *backend, RokIoReq *req);

/* Requests not yet issued, and all submitted from now on, complete with
 * -ECANCELED without doing I/O; those already in the kernel finish. */
void rok_io_backend_cancel(RokIoBackend *backend);

/* Blocks until every submitted request has completed and its callback
 * returned. Must not be called from a completion callback. */
void rok_io_backend_drain(RokIoBackend *backend);

void rok_io_backend_stats(RokIoBackend *backend, RokIoBackendStats *stats);

G_END_DECLS
