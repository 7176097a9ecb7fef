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
#pragma once

#include <glib.h>

#include "rok/storage.h"
#include "rok/storage.h"

G_BEGIN_DECLS

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

G_END_DECLS
