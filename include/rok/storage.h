/* The storage module: how tensors reach disks and come back.
 *
 * Sections, bottom up: fault (the $ROK_FAULT fault injection), backend
 * (io_uring or psync threads, queue depth, short transfers), file (data
 * files opened O_DIRECT where the file system allows), space (free-space
 * checks), staging (the bounded pool of pinned, aligned host slots), workdir
 * (rok-XXXXXX work folders with owner markers, the stale-folder sweep),
 * store (tensors as chunks striped over one data file per directory) and
 * signals (SIGINT/SIGTERM/SIGHUP turned into a cancellation callback).
 *
 * How the executor drives it:
 *
 *   watch = rok_signal_watch_new(on_signal, ctx, &error);  // first, in main
 *   pool  = rok_staging_new(slot_bytes, hw->host.pinned_buffer, &error);
 *   rok_store_options_init(&o);                // $ROK_FAULT, AUTO backend
 *   o.queue_depth = hw->nvme.queue_depth;
 *   o.reserve_bytes = peak bytes offloaded to disk at once;
 *   store = rok_store_open(dirs, pool, &o, &error);  // sweep, space check
 *   for each note in rok_store_notes(store): print it as a warning
 *
 *   offload of tensor T (device buffer B):
 *     st = rok_store_tensor_new(store, bytes, &error);
 *     for each chunk c:  slot = rok_staging_acquire(pool, -1, &stall_ns);
 *                        enqueue D2H of chunk c of B into rok_staging_slot(pool, slot)
 *                        (a CL_MEM_USE_HOST_PTR buffer over the slot), and on its
 *                        event: rok_store_write(st, c, slot, done, ...)
 *                        done (backend thread): res < 0 -> rok_store_set_error();
 *                        else release the slot (or keep it: host-memory offload)
 *   prefetch: the same backwards: acquire, rok_store_read, H2D on done, release.
 *
 *   on_signal / first error: rok_staging_cancel(pool); rok_store_cancel(store);
 *   then, on every path: rok_store_drain(store); free the tensors;
 *   rok_store_free(store);   // removes the work folders
 *   rok_staging_free(pool); rok_signal_watch_free(watch);
 *
 * Completion callbacks run on the backend's threads: keep them short (hand
 * the result to the executor's I/O thread), never block on the pool there.
 * Inside the hot path errors are -errno; GErrors (ROK_ERROR_IO naming the
 * file, ROK_ERROR_CANCELLED) are made at the edge by rok_store_set_error(). */
#pragma once

#include <glib.h>

#include "rok/core.h"

G_BEGIN_DECLS

/* ==== fault =============================================================== */

/* Fault injection for the storage layer's tests.
 *
 * A spec lists faults as KIND@OP:N, separated by commas; the N-th operation
 * of kind OP (counted from 1 over the whole store, in submission order) gets
 * the fault:
 *
 *   enospc@write:N   the write fails with ENOSPC and writes nothing
 *   eio@write:N      the write fails with EIO and writes nothing
 *   eio@read:N       the read fails with EIO and reads nothing
 *   short@write:N    the write's first attempt moves only about half the
 *   short@read:N     bytes, so the short-transfer path must finish it
 *   corrupt@read:N   one byte of the file is flipped on disk just before the
 *                    read is issued (what the executor's checksums must catch)
 *   nodirect@open:N  the N-th data-file open is refused O_DIRECT (EINVAL),
 *                    as tmpfs-like file systems do: buffered fallback
 *
 * The store reads the spec from its options (the command line passes
 * $ROK_FAULT). It is always compiled in; an unset spec is a NULL RokFault and
 * costs one pointer test per request. Resubmissions of a short transfer are
 * not new operations and are not counted. */

typedef enum {
  ROK_FAULT_OP_WRITE,
  ROK_FAULT_OP_READ,
  ROK_FAULT_OP_OPEN,
  ROK_FAULT_N_OPS,
} RokFaultOp;

typedef enum {
  ROK_FAULT_NONE,
  ROK_FAULT_ENOSPC,
  ROK_FAULT_EIO,
  ROK_FAULT_SHORT,
  ROK_FAULT_CORRUPT,
  ROK_FAULT_NODIRECT,
} RokFaultKind;

typedef struct _RokFault RokFault;

/* Parses SPEC (NULL or "" means no faults: *fault = NULL, returns TRUE).
 * A bad spec is ROK_ERROR_INPUT naming the item and what was expected. */
gboolean rok_fault_parse(const char *spec, RokFault **fault, GError **error);
void rok_fault_free(RokFault *fault);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokFault, rok_fault_free)

/* Counts one more operation of kind OP and returns the fault it must suffer
 * (ROK_FAULT_NONE for most). Thread-safe; FAULT may be NULL. */
RokFaultKind rok_fault_next(RokFault *fault, RokFaultOp op);

/* The -errno an error fault stands for (0 for the others). */
int rok_fault_errno(RokFaultKind kind);

/* ==== backend ============================================================= */

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

#include <sys/uio.h>

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
  gint64 done_ns;    /* when its completion was seen (rok_host_now_ns), set before its callback runs */
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

/* Work to run where the requests go out. */
typedef void (*RokIoCallFunc)(gpointer data);

/* Runs FN(DATA) later on the backend's own thread, where one thread submits
 * every request (io_uring): what FN submits then reaches the disk at once,
 * where submitting from another thread costs a hand-off to that thread (a
 * wake-up: a median 30-130 us beside a CPU device's kernels on the
 * development VM, a third of a lone 1 MiB write). Returns FALSE, without
 * running FN, for a backend without such a thread (psync). FN runs like a
 * completion callback, and completions wait while it runs: it must not
 * wait for I/O or for another thread (a short system call, as a data
 * file's growth, is all right). */
gboolean rok_io_backend_call(RokIoBackend *backend, RokIoCallFunc fn, gpointer data);

/* ==== file ================================================================ */

/* Data files: opened for O_DIRECT where the file system allows it, buffered
 * otherwise, with the alignment O_DIRECT needs, and grown by preallocation. */

typedef struct {
  int fd;
  gboolean direct;  /* FALSE: O_DIRECT was refused, I/O goes through the page cache */
  gsize align;      /* buffer address, offset and length multiple: 1 when buffered */
  guint64 size;     /* bytes allocated so far */
} RokIoFile;

/* Creates PATH (which must not exist), read-write, mode 0600. O_DIRECT is
 * tried first; a file system that refuses it with EINVAL (tmpfs on older
 * kernels, ramfs, some FUSE and overlay setups) gets a buffered file. The
 * alignment comes from statx(STATX_DIOALIGN) where the kernel tells it
 * (Linux 6.1+), else 4096, which every block device accepts. FAULT may turn
 * the open into a refusal (nodirect@open). Errors name PATH. */
gboolean rok_io_file_create(const char *path, RokFault *fault, RokIoFile *file, GError **error);

/* Allocates the file up to SIZE bytes (never shrinks) with fallocate, so
 * that writes neither fail for space nor extend the file (O_DIRECT writes
 * past the end are serialised on some file systems); where fallocate is not
 * supported the file is only extended (sparse). ENOSPC and friends are
 * ROK_ERROR_IO naming PATH and the sizes. */
gboolean rok_io_file_reserve(RokIoFile *file, const char *path, guint64 size, GError **error);

void rok_io_file_close(RokIoFile *file);

/* ==== space =============================================================== */

/* Free-space check before a run writes anything. */

/* Checks that each file system holding some of DIRS has room for what is
 * meant to go there: NEED[i] bytes in DIRS[i]. Directories on one file
 * system add up. On a shortfall, ROK_ERROR_IO says, per file system, how
 * much is needed and how much is available:
 *   "not enough free space: /mnt/a needs 2.0 GiB, 1.2 GiB available"
 * A directory that cannot be examined is ROK_ERROR_INPUT naming it. */
gboolean rok_space_check(const char *const *dirs, const guint64 *need, guint n_dirs,
                         GError **error);

/* Bytes an unprivileged user may still write in DIR's file system
 * (statvfs f_bavail); FALSE with errno set when DIR cannot be examined. */
gboolean rok_space_available(const char *dir, guint64 *bytes);

/* ==== staging ============================================================= */

/* The staging pool: pinned host memory between the device and the disks.
 *
 * A bounded pool of equal slots carved from one page-aligned mapping. Every
 * offloaded chunk passes through a slot (device -> slot -> SSD, and back),
 * so the pool's size bounds the bytes in flight, as the hardware profile's
 * host.pinned_buffer does in the simulator. The memory is locked with mlock
 * where the limit allows (the pool works unlocked, only slower to register
 * and liable to be swapped); io_uring registers each slot as a fixed buffer
 * whose index is the slot number; the executor wraps slots as OpenCL host
 * buffers (CL_MEM_USE_HOST_PTR), so slot addresses and sizes are public and
 * stable for the pool's life.
 *
 * Acquire and release are thread-safe. Acquire blocks while the pool is
 * empty; the time it waits is a "staging" stall, summed in the stats. */

#include <sys/uio.h>

typedef struct _RokStaging RokStaging;

typedef struct {
  guint64 acquires;  /* slots handed out */
  guint64 stalls;    /* acquires that had to wait */
  gint64 stall_ns;   /* total time acquires waited */
  guint min_free;    /* fewest free slots seen */
} RokStagingStats;

/* SLOT_BYTES must be a positive multiple of the page size; TOTAL_BYTES at
 * least one slot (the pool holds TOTAL_BYTES / SLOT_BYTES slots). Bad sizes
 * are ROK_ERROR_INPUT; a failed mapping is ROK_ERROR_IO. */
RokStaging *rok_staging_new(gsize slot_bytes, guint64 total_bytes, GError **error);
void rok_staging_free(RokStaging *pool);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokStaging, rok_staging_free)

guint rok_staging_n_slots(const RokStaging *pool);
gsize rok_staging_slot_bytes(const RokStaging *pool);
/* The slot's memory: page-aligned, rok_staging_slot_bytes() long. */
guint8 *rok_staging_slot(const RokStaging *pool, guint slot);
/* Whether mlock succeeded (if not, errno says why in rok_staging_lock_error). */
gboolean rok_staging_locked(const RokStaging *pool);
int rok_staging_lock_error(const RokStaging *pool);
/* One iovec per slot, for buffer registration. */
const struct iovec *rok_staging_iovecs(const RokStaging *pool);

/* Takes a free slot, waiting up to TIMEOUT_US (-1: forever, 0: don't wait).
 * Returns the slot number, -ETIMEDOUT, or -ECANCELED once the pool is
 * cancelled. If WAITED_NS is not NULL it gets the time spent waiting. */
int rok_staging_acquire(RokStaging *pool, gint64 timeout_us, gint64 *waited_ns);
/* Gives SLOT back; releasing a slot that is not held is a critical warning. */
void rok_staging_release(RokStaging *pool, guint slot);
/* Wakes all waiters and makes every later acquire fail with -ECANCELED
 * (Ctrl-C, or an error elsewhere). Releases still work. */
void rok_staging_cancel(RokStaging *pool);
guint rok_staging_n_free(RokStaging *pool);
void rok_staging_stats(RokStaging *pool, RokStagingStats *stats);

/* ==== workdir ============================================================= */

/* Work folders: the only places rok writes in a user's directory.
 *
 * Each run makes a fresh DIR/rok-XXXXXX (mode 0700) and writes an owner
 * marker into it first, DIR/rok-XXXXXX/rok-owner:
 *
 *   rok-workdir/1
 *   host=<host name>
 *   boot=<contents of /proc/sys/kernel/random/boot_id>
 *   pid=<process id>
 *   start=<process start time: field 22 of /proc/PID/stat, clock ticks since boot>
 *   uid=<user id>
 *   pidns=<pid namespace: the link /proc/self/ns/pid>
 *
 * The data files it holds are named "data" or "data.*". On success, error
 * and cancellation the folder is removed (rok_workdir_free). A run killed
 * with SIGKILL cannot clean up; the next run in the same directory sweeps:
 * a rok-XXXXXX folder is stale, and removed, only when it is a real
 * directory (not a link) of this user holding a marker that names this host
 * and this user and a process that is gone: another boot, or, in this pid
 * namespace, no such pid or the pid now belongs to a process started at
 * another time (the host name is taken to name one machine). Folders of
 * live rok processes, of other hosts, users and pid namespaces (containers
 * sharing a directory), and anything else without a readable marker (a
 * folder of another program) are never touched. An empty rok-XXXXXX folder
 * of this user not modified for a minute is stale too: a run killed between
 * making its folder and writing the marker, or between removing the marker
 * and the folder, leaves one, and removing it loses nothing. The sweep
 * removes a stale folder only when it holds nothing but the marker and data
 * files (else it touches nothing and adds a note), relative to an open
 * handle of the folder (no links followed), then the folder, checked by
 * inode.
 *
 * A run's own folder is held by handle from its creation: its files are
 * made and removed through it and each is checked by device and inode
 * before removal, so a folder renamed mid-run is still the one removed, and
 * a look-alike made at the old path by someone else is not touched. */

typedef struct _RokWorkdir RokWorkdir;

/* Creates DIR/rok-XXXXXX with its marker. Errors (ROK_ERROR_IO) name DIR. */
RokWorkdir *rok_workdir_new(const char *dir, GError **error);
/* Removes the folder if rok_workdir_remove() has not (a warning if that
 * fails), then frees. */
void rok_workdir_free(RokWorkdir *workdir);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokWorkdir, rok_workdir_free)

const char *rok_workdir_path(const RokWorkdir *workdir);
/* The path of a file in the folder (for messages); NAME must be "data" or
 * "data.*". */
char *rok_workdir_file(const RokWorkdir *workdir, const char *name);
/* Creates NAME ("data" or "data.*") in the folder through its handle, as
 * rok_io_file_create() does; only files made so are removed with it. */
gboolean rok_workdir_create_file(RokWorkdir *workdir, const char *name, RokFault *fault, RokIoFile *file,
                                 GError **error);
/* The folder's open handle (valid until rok_workdir_free). */
int rok_workdir_fd(const RokWorkdir *workdir);

/* Removes the files it made (each checked by device and inode, through the
 * folder's handle), the marker and the folder (where it is now, if it was
 * renamed). A folder that cannot be removed entirely is ROK_ERROR_IO naming
 * it and what is left. */
gboolean rok_workdir_remove(RokWorkdir *workdir, GError **error);

/* Removes every work folder of this process now, as rok_workdir_remove()
 * does, from any thread: for a run that must stop at once (a second after
 * Ctrl-C, while a device kernel still runs) and then _exit()s. */
void rok_workdir_remove_all(void);

/* Removes the stale work folders in DIR (see above) and returns how many.
 * Each removal, and each stale folder that could not be removed, adds a
 * line for the user to NOTES (a GPtrArray of strings owned by it). */
guint rok_workdir_sweep(const char *dir, GPtrArray *notes);

/* ==== store =============================================================== */

/* The tensor store: tensors in files striped over one or more directories
 * (one per disk), moved chunk by chunk between staging slots and the files.
 *
 * Layout. Each directory gets a fresh work folder (workdir.h) holding one
 * data file, preallocated with fallocate to its share of reserve_bytes and
 * grown (by fallocate again) if that runs out. A tensor is cut into chunks
 * of the staging slot size, the stripe unit; chunk i lives in directory
 * (d0 + i) mod n_dirs, where d0 rotates from tensor to tensor so that small
 * tensors spread too. In each directory a tensor's chunks sit in one
 * contiguous run of the data file (first fit, freed runs reused), so a large
 * offload is a sequential stream of slot-sized requests per disk: the access
 * pattern fio measures with the same block size and queue depth. One file
 * per disk (rather than per tensor) means no file creation, allocation or
 * registration on the hot path, and the space is reserved before the run.
 *
 * I/O. Files are opened O_DIRECT (buffered where refused, with a note), the
 * staging slots are io_uring fixed buffers and the files fixed files. The
 * last chunk of a tensor is padded to the file's alignment: reading it
 * clobbers the slot up to that length (never beyond the slot). At most one
 * operation may be outstanding per chunk of a tensor; different chunks and
 * tensors move concurrently, from any thread, up to queue_depth requests in
 * flight per directory (the rest wait in order). Completions arrive on a
 * backend thread (backend.h): res 0 or -errno; rok_store_set_error() turns
 * a failure into a GError naming the file.
 *
 * Safety. Opening sweeps stale work folders of killed runs (workdir.h),
 * checks free space for the reservation on every file system, and removes
 * everything it made if any step fails. rok_store_free() waits for
 * outstanding I/O and removes the work folders; call it on success, error
 * and cancellation alike. */

typedef struct _RokStore RokStore;
typedef struct _RokStoreTensor RokStoreTensor;

typedef struct {
  guint queue_depth;        /* requests in flight per directory (nvme.queue_depth) */
  RokIoBackendKind backend; /* AUTO: io_uring, psync where refused */
  guint64 reserve_bytes;    /* preallocated over all directories, checked first */
  const char *faults;       /* fault spec (fault.h); NULL or "" for none */
} RokStoreOptions;

/* Defaults: queue depth 32, AUTO, nothing reserved, faults from $ROK_FAULT. */
void rok_store_options_init(RokStoreOptions *options);

/* Opens a store over DIRS (NULL-terminated, at least one, each an existing
 * directory, no directory twice) moving data through STAGING, which must
 * outlive the store. Bad options and directories are ROK_ERROR_INPUT; too
 * little space and failures to create files are ROK_ERROR_IO. */
RokStore *rok_store_open(const char *const *dirs, RokStaging *staging,
                         const RokStoreOptions *options, GError **error);
/* Waits for outstanding I/O, closes the files and removes the work folders.
 * Every tensor must have been freed. */
void rok_store_free(RokStore *store);
/* Closes the files and removes the work folders now (after
 * rok_store_drain, every tensor freed), so that a folder that could not be
 * removed entirely is an error (ROK_ERROR_IO naming it) rather than the
 * warning rok_store_free() prints. */
gboolean rok_store_remove_workdirs(RokStore *store, GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokStore, rok_store_free)

/* What the store gave up or cleaned, one line each, for the user to see
 * (the command line prints them as warnings): io_uring refused, O_DIRECT
 * refused in a directory, buffers not registered, stale folders removed.
 * NULL-terminated, owned by the store. */
const char *const *rok_store_notes(RokStore *store);
const char *rok_store_backend_name(const RokStore *store);
guint rok_store_n_dirs(const RokStore *store);
/* DIRS[i]/rok-XXXXXX. */
const char *rok_store_workdir(const RokStore *store, guint dir);
/* Whether directory DIR's file does O_DIRECT, and its alignment. */
gboolean rok_store_direct(const RokStore *store, guint dir);
gsize rok_store_align(const RokStore *store, guint dir);

/* Space for BYTES (> 0) of a tensor. Growing a data file that lacks room
 * can fail: ROK_ERROR_IO naming the file. */
RokStoreTensor *rok_store_tensor_new(RokStore *store, guint64 bytes, GError **error);
/* Gives the space back; no operation on the tensor may be outstanding. */
void rok_store_tensor_free(RokStoreTensor *tensor);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokStoreTensor, rok_store_tensor_free)

guint64 rok_store_tensor_bytes(const RokStoreTensor *tensor);
guint rok_store_tensor_n_chunks(const RokStoreTensor *tensor);
/* Bytes of the tensor in CHUNK: the slot size, less for the last chunk. */
gsize rok_store_tensor_chunk_bytes(const RokStoreTensor *tensor, guint chunk);

/* Called once per write or read, on a backend thread: RES is 0 when the
 * chunk moved whole, else -errno (-ECANCELED after rok_store_cancel()). */
typedef void (*RokStoreDoneFunc)(RokStoreTensor *tensor, guint chunk, int res, gpointer user_data);

/* Writes CHUNK of TENSOR from staging slot SLOT (its first
 * rok_store_tensor_chunk_bytes() bytes) / reads it back into SLOT. */
void rok_store_write(RokStoreTensor *tensor, guint chunk, guint slot, RokStoreDoneFunc done,
                     gpointer user_data);
void rok_store_read(RokStoreTensor *tensor, guint chunk, guint slot, RokStoreDoneFunc done,
                    gpointer user_data);

/* When the last of TENSOR's chunk writes or reads was seen to complete
 * (rok_host_now_ns), for the callback of the last chunk: the backend may
 * run that callback after the callbacks of the completions it reaped
 * before it. */
gint64 rok_store_tensor_done_ns(const RokStoreTensor *tensor);

/* Where CHUNK lives: its file and offset (for messages, e.g. a checksum
 * mismatch found by the executor). */
const char *rok_store_chunk_file(const RokStoreTensor *tensor, guint chunk, guint64 *offset);

/* A failed write or read of CHUNK (RES = -errno from its completion) as
 * ROK_ERROR_IO, or ROK_ERROR_CANCELLED for -ECANCELED:
 * "writing /mnt/a/rok-Xy12ab/data at offset 8388608 (1.0 MiB): No space left on device". */
void rok_store_set_error(const RokStoreTensor *tensor, guint chunk, int res, GError **error);

/* Operations not yet issued, and all later ones, complete with -ECANCELED
 * (the executor calls this on Ctrl-C or after a first error). */
void rok_store_cancel(RokStore *store);
/* Blocks until every submitted operation has completed and its callback
 * returned (not from a callback). */
void rok_store_drain(RokStore *store);
/* rok_io_backend_call() on the store's backend: FN runs where the store's
 * requests are submitted (FALSE: it has no such thread; FN not run). */
gboolean rok_store_call(RokStore *store, RokIoCallFunc fn, gpointer data);
/* fdatasync on every data file, so that timed writes include reaching the
 * device (essential where O_DIRECT was refused). ROK_ERROR_IO names the file. */
gboolean rok_store_sync(RokStore *store, GError **error);

typedef struct {
  guint64 bytes_written, bytes_read; /* payload of completed operations */
  guint64 writes, reads;             /* completed operations, failed ones too */
  guint64 errors;
  guint64 retries;                   /* short transfers, EINTR, EAGAIN resubmitted */
} RokStoreStats;
void rok_store_stats(RokStore *store, RokStoreStats *stats);

/* ==== signals ============================================================= */

/* Turning SIGINT, SIGTERM and SIGHUP into an orderly cancellation.
 *
 * No signal handler runs at all: rok_signal_watch_new() blocks the signals
 * in the calling thread, and a dedicated thread reads them from a signalfd
 * and calls FUNC there, in an ordinary thread context, where it may take
 * locks and call anything (typically: rok_staging_cancel(),
 * rok_store_cancel(), and a flag the executor polls). The executor then
 * unwinds as for any error: drains I/O, frees the store, which removes the
 * work folders, and exits non-zero (ROK_ERROR_CANCELLED).
 *
 * Threads inherit the signal mask they are created with, so create the
 * watch in the main thread before any other thread starts (OpenCL runtimes
 * and I/O backends start threads): then no thread can take the signal in
 * its default, process-killing way. A second signal while the first is
 * being handled restores the default action and re-raises it: a user who
 * presses Ctrl-C twice gets an immediate exit; folders left behind by that
 * are swept by the next run (workdir.h). */

typedef struct _RokSignalWatch RokSignalWatch;
typedef void (*RokSignalFunc)(int signo, gpointer user_data);

/* ROK_ERROR_IO if the signalfd cannot be made. */
RokSignalWatch *rok_signal_watch_new(RokSignalFunc func, gpointer user_data, GError **error);
/* Stops the watching thread and restores the calling thread's signal mask
 * (call it from the thread that created the watch). */
void rok_signal_watch_free(RokSignalWatch *watch);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSignalWatch, rok_signal_watch_free)

/* Sends the signals to FUNC(signo, USER_DATA) from now on; the function
 * and data it replaces come back through OLD_FUNC and OLD_DATA (either may
 * be NULL), for the caller to put back when its work is over. A process
 * keeps one watch until it exits (freeing it lets a late signal take its
 * default action, after the work was written, or while it is): code that
 * handles signals for a while retargets that watch rather than making its
 * own. Once this returns, the replaced function is not running. */
void rok_signal_watch_retarget(RokSignalWatch *watch, RokSignalFunc func, gpointer user_data, RokSignalFunc *old_func,
                               gpointer *old_data);

/* The first signal received, 0 if none. */
int rok_signal_watch_received(RokSignalWatch *watch);

G_END_DECLS
