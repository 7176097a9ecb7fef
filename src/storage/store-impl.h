/* The store's state, shared by store.c (opening and closing) and
 * store-io.c (tensors and their I/O); nothing else includes this. */
#pragma once

#include "extents.h"
#include "rok/storage.h"
#include "rok/storage.h"
#include "rok/storage.h"
#include "rok/storage.h"

G_BEGIN_DECLS

typedef struct {
  RokWorkdir *workdir;
  char *path;          /* the data file */
  RokIoFile file;
  RokExtents *extents; /* in stripe units */
} RokStoreDir;

struct _RokStore {
  RokStaging *staging;
  gsize unit; /* stripe unit: the slot size */
  guint n_dirs;
  RokStoreDir *dirs;
  RokFault *fault;
  RokIoBackend *backend;
  GPtrArray *notes; /* strings, NULL-terminated */

  GMutex lock; /* guards the extents, next_dir and n_tensors */
  guint next_dir;
  guint n_tensors;
  /* Apart, so that completions never wait for an allocation (which may
   * grow a file, and fallocate waits for the file's direct I/O). */
  GMutex stats_lock;
  RokStoreStats stats;
};

/* One chunk's operation; the backend hands back &io. */
typedef struct {
  RokIoReq io;
  RokStoreTensor *tensor;
  guint chunk;
  RokStoreDoneFunc done;
  gpointer user_data;
} RokStoreChunkOp;

struct _RokStoreTensor {
  RokStore *store;
  guint64 bytes;
  guint n_chunks;
  guint first_dir;
  gint64 *start;  /* per directory: first unit of the tensor's run, -1 if none */
  guint64 *units; /* per directory: length of the run */
  gint pending;   /* operations outstanding (atomic) */
  RokStoreChunkOp ops[];  /* one per chunk */
};

G_END_DECLS
