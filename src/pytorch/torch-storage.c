/* librok_torch_storage: the executor's NVMe store (io_uring or psync,
 * O_DIRECT, staging slots, work folders, $ROK_FAULT) behind a small C ABI
 * for rok_torch (python/rok_torch/storage.py, over ctypes).
 *
 * Calls are synchronous and thread-safe: Python runs them on its own I/O
 * threads (ctypes releases the GIL), so writes overlap the forward pass and
 * prefetches the backward pass. A tensor is cut into slot-sized chunks that
 * move through the staging pool; all chunks of one call are in flight at
 * once, up to the pool's slots. Errors come back as -1 and a message in the
 * caller's buffer; the store is then still usable and must be closed, which
 * frees every tensor and removes the rok-XXXXXX work folder. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "rok/storage.h"
#include "rok/core.h"

#define ROK_TORCH_EXPORT __attribute__((visibility("default")))

typedef struct {
  RokStaging *pool;
  RokStore *store;
  GMutex lock;         /* guards tensors */
  GPtrArray *tensors;  /* handle -> RokStoreTensor (NULL once dropped) */
} RokTorchStore;

/* One call's chunks in flight: completions count down under the lock. */
typedef struct {
  GMutex lock;
  GCond done;
  guint pending;
  int first_error;
  guint error_chunk;
  RokStaging *pool;
  guint *slots;        /* per chunk */
  guint8 *dst;         /* reads: where chunk payloads go */
  RokStoreTensor *tensor;
} Batch;

static void set_message(char *buf, size_t len, const char *message) {
  if (buf != NULL && len > 0)
    g_strlcpy(buf, message, len);
}

static void fail(char *buf, size_t len, GError *error) {
  set_message(buf, len, error->message);
  g_error_free(error);
}

ROK_TORCH_EXPORT RokTorchStore *rok_torch_store_open(const char *dir, uint64_t slot_bytes, uint32_t n_slots,
                                                     char *err, size_t err_len) {
  GError *error = NULL;
  RokTorchStore *s = g_new0(RokTorchStore, 1);
  g_mutex_init(&s->lock);
  s->tensors = g_ptr_array_new();
  s->pool = rok_staging_new(slot_bytes, slot_bytes * n_slots, &error);
  if (s->pool != NULL) {
    RokStoreOptions o;
    rok_store_options_init(&o);
    const char *dirs[] = {dir, NULL};
    s->store = rok_store_open(dirs, s->pool, &o, &error);
  }
  if (s->store == NULL) {
    fail(err, err_len, error);
    rok_staging_free(s->pool);
    g_ptr_array_unref(s->tensors);
    g_mutex_clear(&s->lock);
    g_free(s);
    return NULL;
  }
  return s;
}

ROK_TORCH_EXPORT const char *rok_torch_store_workdir(RokTorchStore *s) {
  return rok_store_workdir(s->store, 0);
}

ROK_TORCH_EXPORT const char *rok_torch_store_backend(RokTorchStore *s) {
  return rok_store_backend_name(s->store);
}

ROK_TORCH_EXPORT int rok_torch_store_direct(RokTorchStore *s) {
  return rok_store_direct(s->store, 0);
}

/* The store's notes (io_uring or O_DIRECT refused, stale folders swept),
 * one per line, for Python to show as warnings; freed with
 * rok_torch_store_free_string(). */
ROK_TORCH_EXPORT char *rok_torch_store_notes(RokTorchStore *s) {
  return g_strjoinv("\n", (char **)rok_store_notes(s->store));
}

ROK_TORCH_EXPORT void rok_torch_store_free_string(char *text) {
  g_free(text);
}

static void chunk_done(RokStoreTensor *tensor, guint chunk, int res, gpointer user_data) {
  Batch *b = user_data;
  if (b->dst != NULL && res == 0) {
    gsize bytes = rok_store_tensor_chunk_bytes(tensor, chunk);
    guint64 at = (guint64)chunk * rok_staging_slot_bytes(b->pool);
    memcpy(b->dst + at, rok_staging_slot(b->pool, b->slots[chunk]), bytes);
  }
  rok_staging_release(b->pool, b->slots[chunk]);
  g_mutex_lock(&b->lock);
  if (res < 0 && b->first_error == 0) {
    b->first_error = res;
    b->error_chunk = chunk;
  }
  if (--b->pending == 0)
    g_cond_signal(&b->done);
  g_mutex_unlock(&b->lock);
}

/* Moves every chunk of TENSOR between BUF and the file (a write when SRC is
 * set, else a read into DST); returns FALSE with ERROR set on failure. */
static gboolean move_chunks(RokTorchStore *s, RokStoreTensor *tensor, const guint8 *src, guint8 *dst,
                            GError **error) {
  guint n = rok_store_tensor_n_chunks(tensor);
  gsize slot_bytes = rok_staging_slot_bytes(s->pool);
  Batch b = {.pool = s->pool, .dst = dst, .tensor = tensor, .slots = g_new0(guint, n)};
  g_mutex_init(&b.lock);
  g_cond_init(&b.done);
  guint submitted = 0;
  for (; submitted < n; submitted++) {
    int slot = rok_staging_acquire(s->pool, -1, NULL);
    if (slot < 0) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_CANCELLED, "staging pool cancelled");
      break;
    }
    b.slots[submitted] = (guint)slot;
    g_mutex_lock(&b.lock);
    b.pending++;
    g_mutex_unlock(&b.lock);
    if (src != NULL) {
      memcpy(rok_staging_slot(s->pool, slot), src + (guint64)submitted * slot_bytes,
             rok_store_tensor_chunk_bytes(tensor, submitted));
      rok_store_write(tensor, submitted, slot, chunk_done, &b);
    } else {
      rok_store_read(tensor, submitted, slot, chunk_done, &b);
    }
  }
  g_mutex_lock(&b.lock);
  while (b.pending > 0)
    g_cond_wait(&b.done, &b.lock);
  g_mutex_unlock(&b.lock);
  if (b.first_error != 0 && (error == NULL || *error == NULL))
    rok_store_set_error(tensor, b.error_chunk, b.first_error, error);
  g_free(b.slots);
  g_mutex_clear(&b.lock);
  g_cond_clear(&b.done);
  return error == NULL || *error == NULL;
}

/* Writes BYTES from SRC into a new tensor; returns its handle, or -1. */
ROK_TORCH_EXPORT int64_t rok_torch_store_put(RokTorchStore *s, const void *src, uint64_t bytes, char *err,
                                             size_t err_len) {
  GError *error = NULL;
  RokStoreTensor *tensor = rok_store_tensor_new(s->store, MAX(bytes, 1), &error);
  if (tensor == NULL || !move_chunks(s, tensor, src, NULL, &error)) {
    rok_store_tensor_free(tensor);
    fail(err, err_len, error);
    return -1;
  }
  g_mutex_lock(&s->lock);
  int64_t handle = s->tensors->len;
  g_ptr_array_add(s->tensors, tensor);
  g_mutex_unlock(&s->lock);
  return handle;
}

static RokStoreTensor *lookup(RokTorchStore *s, int64_t handle) {
  g_mutex_lock(&s->lock);
  RokStoreTensor *t = handle >= 0 && handle < s->tensors->len ? g_ptr_array_index(s->tensors, handle) : NULL;
  g_mutex_unlock(&s->lock);
  return t;
}

/* Reads tensor HANDLE (BYTES, as written) into DST; 0 or -1. */
ROK_TORCH_EXPORT int rok_torch_store_get(RokTorchStore *s, int64_t handle, void *dst, uint64_t bytes, char *err,
                                         size_t err_len) {
  GError *error = NULL;
  RokStoreTensor *tensor = lookup(s, handle);
  if (tensor == NULL || rok_store_tensor_bytes(tensor) != MAX(bytes, 1)) {
    set_message(err, err_len, "no such stored tensor, or not of that size");
    return -1;
  }
  if (bytes > 0 && !move_chunks(s, tensor, NULL, dst, &error)) {
    fail(err, err_len, error);
    return -1;
  }
  return 0;
}

/* Gives tensor HANDLE's space back (no operation on it may be running). */
ROK_TORCH_EXPORT void rok_torch_store_drop(RokTorchStore *s, int64_t handle) {
  g_mutex_lock(&s->lock);
  if (handle >= 0 && handle < s->tensors->len) {
    rok_store_tensor_free(g_ptr_array_index(s->tensors, handle));
    g_ptr_array_index(s->tensors, handle) = NULL;
  }
  g_mutex_unlock(&s->lock);
}

/* bytes written, bytes read, errors. */
ROK_TORCH_EXPORT void rok_torch_store_stats(RokTorchStore *s, uint64_t out[3]) {
  RokStoreStats st;
  rok_store_stats(s->store, &st);
  out[0] = st.bytes_written;
  out[1] = st.bytes_read;
  out[2] = st.errors;
}

/* Frees every tensor, waits for I/O, removes the work folder, frees S. */
ROK_TORCH_EXPORT void rok_torch_store_close(RokTorchStore *s) {
  if (s == NULL)
    return;
  rok_store_drain(s->store);
  for (guint i = 0; i < s->tensors->len; i++)
    rok_store_tensor_free(g_ptr_array_index(s->tensors, i));
  rok_store_free(s->store);
  rok_staging_free(s->pool);
  g_ptr_array_unref(s->tensors);
  g_mutex_clear(&s->lock);
  g_free(s);
}
