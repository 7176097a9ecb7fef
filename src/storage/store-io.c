/* Tensors in the store: space striped over the directories, chunk writes
 * and reads through the backend, and errors turned into messages. */
#include <errno.h>
#include <unistd.h>

#include "store-impl.h"
#include "rok/core.h"

/* The directory that holds CHUNK, and the chunk's place in its run there. */
static guint chunk_dir(const RokStoreTensor *t, guint chunk, guint64 *index) {
  guint n = t->store->n_dirs;
  *index = chunk / n;
  return (t->first_dir + chunk) % n;
}

/* Chunks of a tensor of N_CHUNKS that land in directory D. */
static guint64 chunks_in_dir(guint n_chunks, guint n_dirs, guint first, guint d) {
  guint r = (d + n_dirs - first) % n_dirs; /* the first chunk index that lands there */
  return n_chunks > r ? (n_chunks - r - 1) / n_dirs + 1 : 0;
}

/* Makes room for N more units in directory D's file. */
static gboolean grow(RokStore *s, guint d, guint64 n, GError **error) {
  RokStoreDir *dir = &s->dirs[d];
  guint64 capacity = storage_extents_capacity(dir->extents) + storage_extents_shortfall(dir->extents, n);
  if (!rok_io_file_reserve(&dir->file, dir->path, capacity * s->unit, error))
    return FALSE;
  storage_extents_grow(dir->extents, capacity);
  return TRUE;
}

static void release_runs(RokStoreTensor *t) {
  for (guint d = 0; d < t->store->n_dirs; d++)
    if (t->start[d] >= 0)
      storage_extents_release(t->store->dirs[d].extents, (guint64)t->start[d], t->units[d]);
}

/* Takes a run in every directory the tensor has chunks in. Store locked. */
static gboolean alloc_runs(RokStore *s, RokStoreTensor *t, GError **error) {
  for (guint d = 0; d < s->n_dirs; d++) {
    RokExtents *ex = s->dirs[d].extents;
    if (t->units[d] == 0)
      continue;
    gint64 start = storage_extents_alloc(ex, t->units[d]);
    if (start < 0) {
      if (!grow(s, d, t->units[d], error)) {
        release_runs(t);
        return FALSE;
      }
      start = storage_extents_alloc(ex, t->units[d]);
    }
    t->start[d] = start;
  }
  return TRUE;
}

RokStoreTensor *rok_store_tensor_new(RokStore *s, guint64 bytes, GError **error) {
  guint64 n_chunks = (bytes + s->unit - 1) / s->unit;
  if (bytes == 0 || n_chunks > G_MAXINT32) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "tensor of %" G_GUINT64_FORMAT " bytes: must be between 1 byte and 2^31 chunks", bytes);
    return NULL;
  }
  RokStoreTensor *t = g_malloc0(sizeof *t + n_chunks * sizeof(RokStoreChunkOp));
  t->store = s;
  t->bytes = bytes;
  t->n_chunks = (guint)n_chunks;
  t->start = g_new(gint64, s->n_dirs);
  t->units = g_new(guint64, s->n_dirs);
  for (guint c = 0; c < t->n_chunks; c++) {
    t->ops[c].tensor = t;
    t->ops[c].chunk = c;
  }
  g_mutex_lock(&s->lock);
  t->first_dir = s->next_dir;
  s->next_dir = (s->next_dir + 1) % s->n_dirs;
  for (guint d = 0; d < s->n_dirs; d++) {
    t->start[d] = -1;
    t->units[d] = chunks_in_dir(t->n_chunks, s->n_dirs, t->first_dir, d);
  }
  gboolean ok = alloc_runs(s, t, error);
  if (ok)
    s->n_tensors++;
  g_mutex_unlock(&s->lock);
  if (!ok) {
    g_free(t->start);
    g_free(t->units);
    g_free(t);
    return NULL;
  }
  return t;
}

void rok_store_tensor_free(RokStoreTensor *t) {
  if (t == NULL)
    return;
  if (g_atomic_int_get(&t->pending) != 0) {
    /* Freeing it would let the completions write into freed memory: leak. */
    g_critical("rok_store_tensor_free: %d operations outstanding", g_atomic_int_get(&t->pending));
    return;
  }
  RokStore *s = t->store;
  g_mutex_lock(&s->lock);
  release_runs(t);
  s->n_tensors--;
  g_mutex_unlock(&s->lock);
  g_free(t->start);
  g_free(t->units);
  g_free(t);
}

guint64 rok_store_tensor_bytes(const RokStoreTensor *t) { return t->bytes; }
guint rok_store_tensor_n_chunks(const RokStoreTensor *t) { return t->n_chunks; }

gsize rok_store_tensor_chunk_bytes(const RokStoreTensor *t, guint chunk) {
  g_return_val_if_fail(chunk < t->n_chunks, 0);
  gsize unit = t->store->unit;
  return chunk + 1 < t->n_chunks ? unit : (gsize)(t->bytes - (guint64)chunk * unit);
}

gint64 rok_store_tensor_done_ns(const RokStoreTensor *t) {
  gint64 last = 0;
  for (guint c = 0; c < t->n_chunks; c++)
    last = MAX(last, t->ops[c].io.done_ns);
  return last;
}

const char *rok_store_chunk_file(const RokStoreTensor *t, guint chunk, guint64 *offset) {
  g_return_val_if_fail(chunk < t->n_chunks, NULL);
  guint64 index;
  guint d = chunk_dir(t, chunk, &index);
  *offset = ((guint64)t->start[d] + index) * t->store->unit;
  return t->store->dirs[d].path;
}

static void chunk_done(RokIoReq *io, int res) {
  RokStoreChunkOp *op = (RokStoreChunkOp *)io;
  RokStoreTensor *t = op->tensor;
  RokStore *s = t->store;
  gboolean write = io->op == ROK_IO_WRITE;
  gsize bytes = rok_store_tensor_chunk_bytes(t, op->chunk);
  g_mutex_lock(&s->stats_lock);
  *(write ? &s->stats.writes : &s->stats.reads) += 1;
  if (res == 0)
    *(write ? &s->stats.bytes_written : &s->stats.bytes_read) += bytes;
  else
    s->stats.errors++;
  g_mutex_unlock(&s->stats_lock);
  /* Counted down first: the callback may free the tensor. */
  RokStoreDoneFunc done = op->done;
  gpointer user_data = op->user_data;
  guint chunk = op->chunk;
  g_atomic_int_dec_and_test(&t->pending);
  done(t, chunk, res, user_data);
}

static void submit(RokStoreTensor *t, guint chunk, guint slot, RokIoOp kind,
                   RokStoreDoneFunc done, gpointer user_data) {
  RokStore *s = t->store;
  g_return_if_fail(chunk < t->n_chunks && slot < rok_staging_n_slots(s->staging) && done != NULL);
  RokStoreChunkOp *op = &t->ops[chunk];
  guint64 index;
  guint d = chunk_dir(t, chunk, &index);
  gsize align = s->dirs[d].file.align;
  gsize len = (rok_store_tensor_chunk_bytes(t, chunk) + align - 1) / align * align;
  op->io = (RokIoReq){
    .op = kind,
    .file = d,
    .offset = ((guint64)t->start[d] + index) * s->unit,
    .buf = rok_staging_slot(s->staging, slot),
    .len = len,
    .buf_index = (int)slot,
    .done = chunk_done,
  };
  op->done = done;
  op->user_data = user_data;
  g_atomic_int_inc(&t->pending);
  rok_io_backend_submit(s->backend, &op->io);
}

void rok_store_write(RokStoreTensor *t, guint chunk, guint slot, RokStoreDoneFunc done,
                     gpointer user_data) {
  submit(t, chunk, slot, ROK_IO_WRITE, done, user_data);
}

void rok_store_read(RokStoreTensor *t, guint chunk, guint slot, RokStoreDoneFunc done,
                    gpointer user_data) {
  submit(t, chunk, slot, ROK_IO_READ, done, user_data);
}

void rok_store_set_error(const RokStoreTensor *t, guint chunk, int res, GError **error) {
  g_return_if_fail(chunk < t->n_chunks && res < 0);
  guint64 offset = 0;
  const char *path = rok_store_chunk_file(t, chunk, &offset);
  const RokIoReq *io = &t->ops[chunk].io;
  g_autofree char *size = rok_units_format_size(rok_store_tensor_chunk_bytes(t, chunk));
  g_set_error(error, ROK_ERROR, res == -ECANCELED ? ROK_ERROR_CANCELLED : ROK_ERROR_IO,
              "%s %s at offset %" G_GUINT64_FORMAT " (%s): %s",
              io->op == ROK_IO_WRITE ? "writing" : "reading", path, offset, size, g_strerror(-res));
}

void rok_store_cancel(RokStore *s) { rok_io_backend_cancel(s->backend); }
void rok_store_drain(RokStore *s) { rok_io_backend_drain(s->backend); }
gboolean rok_store_call(RokStore *s, RokIoCallFunc fn, gpointer data) { return rok_io_backend_call(s->backend, fn, data); }

gboolean rok_store_sync(RokStore *s, GError **error) {
  for (guint d = 0; d < s->n_dirs; d++) {
    if (fdatasync(s->dirs[d].file.fd) != 0) {
      int e = errno;
      g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "syncing %s: %s", s->dirs[d].path, g_strerror(e));
      return FALSE;
    }
  }
  return TRUE;
}

void rok_store_stats(RokStore *s, RokStoreStats *stats) {
  g_mutex_lock(&s->stats_lock);
  *stats = s->stats;
  g_mutex_unlock(&s->stats_lock);
  RokIoBackendStats be;
  rok_io_backend_stats(s->backend, &be);
  stats->retries = be.retries;
}
