/* The tensor store: round trips through both backends, striping and file
 * layout, space reuse and growth, injected faults (each names the file and
 * leaves no work folder behind), cancellation, bad input, the free-space
 * check, and real small file systems (tmpfs for ENOSPC, ramfs for the
 * buffered fallback) where this user may mount them. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "rok/storage.h"
#include "rok/core.h"

#define SLOT (64 * 1024)

/* ---- helpers ---------------------------------------------------------- */

/* The byte a tensor with SEED holds at offset X. */
static guint8 pattern(guint64 seed, guint64 x) {
  guint64 z = seed * 0x9e3779b97f4a7c15u + (x >> 3) + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  z ^= z >> 31;
  return (guint8)(z >> ((x & 7) * 8));
}

typedef struct {
  GMutex lock;
  GCond cond;
  guint outstanding;
  guint done;
  int first_res;          /* first failure */
  RokStoreTensor *first_tensor;
  guint first_chunk;
  guint cancelled;        /* completions with -ECANCELED */
  guint mismatches;       /* chunks read back wrong */
  guint64 mismatch_at;    /* tensor offset of the first wrong byte */
  gint64 last_called_ns;  /* when the last callback began */
} Waiter;

typedef struct {
  Waiter *w;
  RokStaging *pool;
  guint slot;
  guint64 seed;
  gboolean verify;
} Op;

static void waiter_init(Waiter *w) {
  memset(w, 0, sizeof *w);
  g_mutex_init(&w->lock);
  g_cond_init(&w->cond);
}

static void waiter_clear(Waiter *w) {
  g_mutex_clear(&w->lock);
  g_cond_clear(&w->cond);
}

static guint count_mismatch(RokStoreTensor *t, guint chunk, const guint8 *data, guint64 seed,
                            guint64 *first) {
  gsize n = rok_store_tensor_chunk_bytes(t, chunk);
  guint64 base = (guint64)chunk * SLOT;
  guint bad = 0;
  for (gsize i = 0; i < n; i++)
    if (data[i] != pattern(seed, base + i) && bad++ == 0)
      *first = base + i;
  return bad;
}

static void on_done(RokStoreTensor *t, guint chunk, int res, gpointer data) {
  gint64 called_ns = rok_host_now_ns();
  Op *op = data;
  Waiter *w = op->w;
  guint64 at = 0;
  guint bad = res == 0 && op->verify
                  ? count_mismatch(t, chunk, rok_staging_slot(op->pool, op->slot), op->seed, &at)
                  : 0;
  rok_staging_release(op->pool, op->slot);
  g_mutex_lock(&w->lock);
  w->last_called_ns = MAX(w->last_called_ns, called_ns);
  if (res == -ECANCELED)
    w->cancelled++;
  if (res < 0 && w->first_res == 0) {
    w->first_res = res;
    w->first_tensor = t;
    w->first_chunk = chunk;
  }
  if (bad > 0 && w->mismatches++ == 0)
    w->mismatch_at = at;
  w->done++;
  w->outstanding--;
  g_cond_signal(&w->cond);
  g_mutex_unlock(&w->lock);
  g_free(op);
}

static void wait_all(Waiter *w) {
  g_mutex_lock(&w->lock);
  while (w->outstanding > 0)
    g_cond_wait(&w->cond, &w->lock);
  g_mutex_unlock(&w->lock);
}

/* Writes (WRITE) or reads and checks every chunk of T, staging each chunk
 * through a slot of POOL, many at a time; returns the first failure. Where
 * all went well, the tensor's last completion (rok_store_tensor_done_ns)
 * lies after its requests were submitted and before the last callback. */
static int move(RokStore *store, RokStaging *pool, RokStoreTensor *t, gboolean write, guint64 seed,
                Waiter *w) {
  (void)store;
  gint64 submitted = rok_host_now_ns();
  for (guint c = 0; c < rok_store_tensor_n_chunks(t); c++) {
    int slot = rok_staging_acquire(pool, -1, NULL);
    g_assert_cmpint(slot, >=, 0);
    Op *op = g_new0(Op, 1);
    *op = (Op){ .w = w, .pool = pool, .slot = (guint)slot, .seed = seed, .verify = !write };
    guint8 *data = rok_staging_slot(pool, (guint)slot);
    if (write)
      for (gsize i = 0; i < rok_store_tensor_chunk_bytes(t, c); i++)
        data[i] = pattern(seed, (guint64)c * SLOT + i);
    else
      memset(data, 0xee, SLOT);
    g_mutex_lock(&w->lock);
    w->outstanding++;
    g_mutex_unlock(&w->lock);
    (write ? rok_store_write : rok_store_read)(t, c, (guint)slot, on_done, op);
  }
  wait_all(w);
  if (w->first_res == 0) {
    g_assert_cmpint(rok_store_tensor_done_ns(t), >=, submitted);
    g_assert_cmpint(rok_store_tensor_done_ns(t), <=, w->last_called_ns);
  }
  return w->first_res;
}

static int round_trip(RokStore *store, RokStaging *pool, RokStoreTensor *t, guint64 seed, Waiter *w) {
  int r = move(store, pool, t, TRUE, seed, w);
  if (r == 0) {
    g_autoptr(GError) error = NULL;
    g_assert_true(rok_store_sync(store, &error));
    r = move(store, pool, t, FALSE, seed, w);
  }
  return r;
}

static char *make_dir(void) {
  g_autoptr(GError) error = NULL;
  char *dir = g_dir_make_tmp("rok-test-io-XXXXXX", &error);
  g_assert_no_error(error);
  return dir;
}

/* Removes a test directory that must hold nothing any more: what the store
 * wrote is gone. */
static void assert_empty_and_remove(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  g_assert_nonnull(d);
  const char *name = g_dir_read_name(d);
  g_assert_cmpstr(name, ==, NULL);
  g_assert_cmpint(rmdir(dir), ==, 0);
}

static RokStore *open_store(const char *const *dirs, RokStaging *pool, RokIoBackendKind kind,
                            const char *faults, guint64 reserve) {
  RokStoreOptions o;
  rok_store_options_init(&o);
  o.backend = kind;
  o.queue_depth = 4;
  o.faults = faults;
  o.reserve_bytes = reserve;
  g_autoptr(GError) error = NULL;
  RokStore *store = rok_store_open(dirs, pool, &o, &error);
  g_assert_no_error(error);
  return store;
}

/* ---- round trips ------------------------------------------------------- */

static void round_trip_sizes(gconstpointer data) {
  RokIoBackendKind kind = GPOINTER_TO_INT(data);
  g_autofree char *dir = make_dir();
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 6 * SLOT, NULL);
  RokStore *store = open_store(dirs, pool, kind, NULL, 4 * 1024 * 1024);
  const guint64 sizes[] = { 1, 4095, 4097, SLOT, SLOT + 1, 20 * SLOT + 123 };
  guint64 total = 0;
  for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
    Waiter w;
    waiter_init(&w);
    g_autoptr(GError) error = NULL;
    g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, sizes[i], &error);
    g_assert_no_error(error);
    g_assert_cmpuint(rok_store_tensor_n_chunks(t), ==, (sizes[i] + SLOT - 1) / SLOT);
    g_assert_cmpint(round_trip(store, pool, t, i + 1, &w), ==, 0);
    g_assert_cmpuint(w.mismatches, ==, 0);
    waiter_clear(&w);
    total += sizes[i];
  }
  RokStoreStats stats;
  rok_store_stats(store, &stats);
  g_assert_cmpuint(stats.bytes_written, ==, total);
  g_assert_cmpuint(stats.bytes_read, ==, total);
  g_assert_cmpuint(stats.errors, ==, 0);
  /* Buffered only where the file system refused O_DIRECT, and then said so. */
  g_autofree char *notes = g_strjoinv("\n", (char **)rok_store_notes(store));
  g_assert_cmpint(rok_store_direct(store, 0), ==, strstr(notes, "O_DIRECT") == NULL);
  if (kind == ROK_IO_BACKEND_PSYNC)
    g_assert_cmpstr(rok_store_backend_name(store), ==, "psync");
  g_autofree char *workdir = g_strdup(rok_store_workdir(store, 0));
  g_assert_true(g_file_test(workdir, G_FILE_TEST_IS_DIR));
  rok_store_free(store);
  g_assert_false(g_file_test(workdir, G_FILE_TEST_EXISTS));
  assert_empty_and_remove(dir);
}

/* Chunk i of a tensor is in directory (d0 + i) mod n, in one run per
 * directory, and what the file holds there is the chunk's data. */
static void stripe_layout(void) {
  g_autofree char *a = make_dir(), *b = make_dir(), *c = make_dir();
  const char *dirs[] = { a, b, c, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 4 * SLOT, NULL);
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_AUTO, NULL, 0);
  g_assert_cmpuint(rok_store_n_dirs(store), ==, 3);
  g_autoptr(RokStoreTensor) t1 = rok_store_tensor_new(store, 7 * SLOT - 5, NULL);
  g_autoptr(RokStoreTensor) t2 = rok_store_tensor_new(store, 2 * SLOT, NULL);
  Waiter w;
  waiter_init(&w);
  g_assert_cmpint(move(store, pool, t1, TRUE, 11, &w), ==, 0);
  g_assert_cmpint(move(store, pool, t2, TRUE, 12, &w), ==, 0);
  g_assert_true(rok_store_sync(store, NULL));
  guint64 first_offset[3] = { 0 };
  for (guint i = 0; i < 7; i++) {
    guint64 offset = 0;
    const char *path = rok_store_chunk_file(t1, i, &offset);
    g_autofree char *expect = g_build_filename(rok_store_workdir(store, i % 3), "data", NULL);
    g_assert_cmpstr(path, ==, expect); /* the first tensor starts at directory 0 */
    if (i < 3)
      first_offset[i] = offset;
    else
      g_assert_cmpuint(offset, ==, first_offset[i % 3] + (i / 3) * SLOT);
    /* The bytes on disk are the chunk's. */
    gsize n = rok_store_tensor_chunk_bytes(t1, i);
    g_autofree guint8 *buf = g_malloc(n);
    int fd = open(path, O_RDONLY);
    g_assert_cmpint(pread(fd, buf, n, (off_t)offset), ==, (ssize_t)n);
    close(fd);
    for (gsize k = 0; k < n; k += 997)
      g_assert_cmpuint(buf[k], ==, pattern(11, (guint64)i * SLOT + k));
  }
  /* The next tensor starts one directory further. */
  guint64 offset;
  g_autofree char *expect = g_build_filename(rok_store_workdir(store, 1), "data", NULL);
  g_assert_cmpstr(rok_store_chunk_file(t2, 0, &offset), ==, expect);
  g_assert_cmpint(move(store, pool, t1, FALSE, 11, &w), ==, 0);
  g_assert_cmpint(move(store, pool, t2, FALSE, 12, &w), ==, 0);
  g_assert_cmpuint(w.mismatches, ==, 0);
  waiter_clear(&w);
  g_clear_pointer(&t1, rok_store_tensor_free);
  g_clear_pointer(&t2, rok_store_tensor_free);
  rok_store_free(store);
  assert_empty_and_remove(a);
  assert_empty_and_remove(b);
  assert_empty_and_remove(c);
}

/* Freed space is reused first fit; a store with no reservation grows. */
static void space_reuse(void) {
  g_autofree char *dir = make_dir();
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 2 * SLOT, NULL);
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_PSYNC, NULL, 0);
  guint64 o1, o2, o3, o4;
  RokStoreTensor *t1 = rok_store_tensor_new(store, 3 * SLOT, NULL);
  RokStoreTensor *t2 = rok_store_tensor_new(store, SLOT, NULL);
  rok_store_chunk_file(t1, 0, &o1);
  rok_store_chunk_file(t2, 0, &o2);
  g_assert_cmpuint(o1, ==, 0);
  g_assert_cmpuint(o2, ==, 3 * SLOT);
  rok_store_tensor_free(t1);
  RokStoreTensor *t3 = rok_store_tensor_new(store, 2 * SLOT, NULL);
  RokStoreTensor *t4 = rok_store_tensor_new(store, 2 * SLOT, NULL);
  rok_store_chunk_file(t3, 0, &o3);
  rok_store_chunk_file(t4, 0, &o4);
  g_assert_cmpuint(o3, ==, 0);        /* in the hole t1 left */
  g_assert_cmpuint(o4, ==, 4 * SLOT); /* the hole is too small now: past t2 */
  Waiter w;
  waiter_init(&w);
  g_assert_cmpint(round_trip(store, pool, t4, 4, &w), ==, 0);
  g_assert_cmpuint(w.mismatches, ==, 0);
  waiter_clear(&w);
  rok_store_tensor_free(t2);
  rok_store_tensor_free(t3);
  rok_store_tensor_free(t4);
  rok_store_free(store);
  assert_empty_and_remove(dir);
}

/* ---- faults ------------------------------------------------------------ */

typedef struct {
  const char *spec;
  gboolean on_write;   /* the failure comes while writing */
  guint chunk;         /* the chunk that fails (QD 4 keeps submission order per file) */
  const char *text;    /* strerror of the errno */
} ErrorFault;

/* The N-th operation fails; the message names the data file and the error;
 * freeing the store leaves nothing behind. */
static void error_fault(gconstpointer data) {
  const ErrorFault *f = data;
  g_autofree char *dir = make_dir();
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 8 * SLOT, NULL);
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_AUTO, f->spec, 0);
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, 6 * SLOT, NULL);
  Waiter w;
  waiter_init(&w);
  int r = move(store, pool, t, TRUE, 3, &w);
  g_assert_cmpint(r != 0, ==, f->on_write);
  if (r == 0)
    r = move(store, pool, t, FALSE, 3, &w);
  g_assert_cmpint(r, <, 0);
  g_assert_cmpuint(w.first_chunk, ==, f->chunk);
  g_autoptr(GError) error = NULL;
  rok_store_set_error(w.first_tensor, w.first_chunk, r, &error);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_autofree char *path = g_build_filename(rok_store_workdir(store, 0), "data", NULL);
  g_test_message("%s -> %s", f->spec, error->message);
  g_assert_nonnull(strstr(error->message, path));
  g_assert_nonnull(strstr(error->message, f->text));
  g_assert_nonnull(strstr(error->message, f->on_write ? "writing" : "reading"));
  waiter_clear(&w);
  g_clear_pointer(&t, rok_store_tensor_free);
  rok_store_free(store);
  assert_empty_and_remove(dir);
}

/* A short transfer is finished by resubmission: the data is whole. */
static void short_fault(gconstpointer spec) {
  g_autofree char *dir = make_dir();
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 4 * SLOT, NULL);
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_AUTO, spec, 0);
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, 3 * SLOT + 100, NULL);
  Waiter w;
  waiter_init(&w);
  g_assert_cmpint(round_trip(store, pool, t, 5, &w), ==, 0);
  g_assert_cmpuint(w.mismatches, ==, 0);
  waiter_clear(&w);
  RokStoreStats stats;
  rok_store_stats(store, &stats);
  g_assert_cmpuint(stats.retries, >=, 1);
  g_clear_pointer(&t, rok_store_tensor_free);
  rok_store_free(store);
  assert_empty_and_remove(dir);
}

/* corrupt@read:1 flips one byte on disk: the read returns it changed, in
 * the chunk read first, and the store can say where that chunk lives. */
static void corrupt_fault(void) {
  g_autofree char *dir = make_dir();
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 1 * SLOT, NULL); /* one at a time */
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_AUTO, "corrupt@read:1", 0);
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, 3 * SLOT, NULL);
  Waiter w;
  waiter_init(&w);
  g_assert_cmpint(round_trip(store, pool, t, 6, &w), ==, 0);
  g_assert_cmpuint(w.mismatches, ==, 1);
  g_assert_cmpuint(w.mismatch_at / SLOT, ==, 0);
  guint64 offset = 1;
  g_autofree char *path = g_build_filename(rok_store_workdir(store, 0), "data", NULL);
  g_assert_cmpstr(rok_store_chunk_file(t, 0, &offset), ==, path);
  g_assert_cmpuint(offset, ==, 0);
  waiter_clear(&w);
  g_clear_pointer(&t, rok_store_tensor_free);
  rok_store_free(store);
  assert_empty_and_remove(dir);
}

/* nodirect@open:1 stands for a file system that refuses O_DIRECT. */
static void nodirect_fault(void) {
  g_autofree char *a = make_dir(), *b = make_dir();
  const char *dirs[] = { a, b, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 4 * SLOT, NULL);
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_AUTO, "nodirect@open:1", 0);
  g_assert_false(rok_store_direct(store, 0));
  g_assert_cmpuint(rok_store_align(store, 0), ==, 1);
  g_assert_true(rok_store_direct(store, 1));
  const char *const *notes = rok_store_notes(store);
  gboolean noted = FALSE;
  for (guint i = 0; notes[i] != NULL; i++)
    noted |= strstr(notes[i], "O_DIRECT refused in") != NULL && strstr(notes[i], a) != NULL;
  g_assert_true(noted);
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, 5 * SLOT - 1, NULL);
  Waiter w;
  waiter_init(&w);
  g_assert_cmpint(round_trip(store, pool, t, 7, &w), ==, 0);
  g_assert_cmpuint(w.mismatches, ==, 0);
  waiter_clear(&w);
  g_clear_pointer(&t, rok_store_tensor_free);
  rok_store_free(store);
  assert_empty_and_remove(a);
  assert_empty_and_remove(b);
}

/* ---- cancellation, input, space ----------------------------------------- */

static void cancel_pending(void) {
  g_autofree char *dir = make_dir();
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 64 * SLOT, NULL);
  RokStoreOptions o;
  rok_store_options_init(&o);
  o.backend = ROK_IO_BACKEND_PSYNC;
  o.queue_depth = 1;
  o.faults = NULL;
  RokStore *store = rok_store_open(dirs, pool, &o, NULL);
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, 64 * SLOT, NULL);
  Waiter w;
  waiter_init(&w);
  g_mutex_lock(&w.lock); /* completions wait until everything is queued */
  for (guint c = 0; c < 64; c++) {
    Op *op = g_new0(Op, 1);
    *op = (Op){ .w = &w, .pool = pool, .slot = (guint)rok_staging_acquire(pool, 0, NULL) };
    w.outstanding++;
    rok_store_write(t, c, op->slot, on_done, op);
  }
  rok_store_cancel(store);
  g_mutex_unlock(&w.lock);
  wait_all(&w);
  /* At most the one in flight and the one its completion started got
   * through; the rest were cancelled without touching the disk. */
  g_assert_cmpuint(w.cancelled, >=, 62);
  g_autoptr(GError) error = NULL;
  rok_store_set_error(w.first_tensor, w.first_chunk, w.first_res, &error);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_CANCELLED);
  waiter_clear(&w);
  g_clear_pointer(&t, rok_store_tensor_free);
  rok_store_free(store);
  assert_empty_and_remove(dir);
}

static void expect_open_error(const char *const *dirs, guint depth, const char *faults, int code,
                              const char *text) {
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, SLOT, NULL);
  RokStoreOptions o;
  rok_store_options_init(&o);
  o.queue_depth = depth;
  o.faults = faults;
  g_autoptr(GError) error = NULL;
  g_assert_null(rok_store_open(dirs, pool, &o, &error));
  g_assert_error(error, ROK_ERROR, code);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, text));
}

static void bad_input(void) {
  g_autofree char *dir = make_dir();
  g_autofree char *file = g_build_filename(dir, "plain", NULL);
  g_assert_true(g_file_set_contents(file, "x", 1, NULL));
  const char *none[] = { NULL };
  const char *missing[] = { "/nonexistent/rok", NULL };
  const char *not_dir[] = { file, NULL };
  const char *twice[] = { dir, dir, NULL };
  const char *ok[] = { dir, NULL };
  expect_open_error(none, 4, NULL, ROK_ERROR_INPUT, "no directory");
  expect_open_error(missing, 4, NULL, ROK_ERROR_INPUT, "/nonexistent/rok: No such file");
  expect_open_error(not_dir, 4, NULL, ROK_ERROR_INPUT, "not a directory");
  expect_open_error(twice, 4, NULL, ROK_ERROR_INPUT, "the same directory");
  expect_open_error(ok, 0, NULL, ROK_ERROR_INPUT, "queue depth 0");
  expect_open_error(ok, 4, "enospc@read:1", ROK_ERROR_INPUT, "enospc does not apply to \"read\"");
  g_assert_cmpint(unlink(file), ==, 0);
  assert_empty_and_remove(dir);
}

/* A reservation beyond the free space fails before anything is written. */
static void not_enough_space(void) {
  g_autofree char *dir = make_dir();
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, SLOT, NULL);
  RokStoreOptions o;
  rok_store_options_init(&o);
  o.faults = NULL;
  o.reserve_bytes = G_GUINT64_CONSTANT(1) << 60; /* 1 EiB */
  g_autoptr(GError) error = NULL;
  g_assert_null(rok_store_open(dirs, pool, &o, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_test_message("%s", error->message);
  g_assert_true(g_str_has_prefix(error->message, "not enough free space: "));
  g_autofree char *expect = g_strdup_printf("%s needs 1.00 EiB, ", dir);
  g_assert_nonnull(strstr(error->message, expect));
  g_assert_nonnull(strstr(error->message, " available"));
  assert_empty_and_remove(dir);
}

/* ---- real small file systems (root only) ---------------------------------- */

static char *mount_or_skip(const char *type, const char *data) {
  char *dir = make_dir();
  if (mount(type, dir, type, 0, data) != 0) {
    g_autofree char *why = g_strdup_printf("cannot mount %s here: %s", type, g_strerror(errno));
    g_test_skip(why);
    rmdir(dir);
    g_free(dir);
    return NULL;
  }
  return dir;
}

static void unmount(char *dir) {
  /* A closed io_uring drops its registered files from a kernel worker a
   * moment later: until then the file system is busy. */
  int r, tries = 0;
  while ((r = umount(dir)) != 0 && errno == EBUSY && tries++ < 200)
    g_usleep(10000);
  g_assert_cmpint(r, ==, 0);
  assert_empty_and_remove(dir);
  g_free(dir);
}

/* A 1 MiB tmpfs: the space check refuses 2 MiB up front; growing past the
 * end meets a real ENOSPC, named with the file; nothing is left behind. */
static void tmpfs_enospc(void) {
  char *dir = mount_or_skip("tmpfs", "size=1m");
  if (dir == NULL)
    return;
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 4 * SLOT, NULL);
  RokStoreOptions o;
  rok_store_options_init(&o);
  o.faults = NULL;
  o.reserve_bytes = 2 * 1024 * 1024;
  g_autoptr(GError) error = NULL;
  g_assert_null(rok_store_open(dirs, pool, &o, &error));
  g_assert_nonnull(strstr(error->message, "needs 2.00 MiB, 1.00 MiB available"));
  g_clear_error(&error);

  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_AUTO, NULL, 4 * SLOT);
  g_autoptr(RokStoreTensor) small = rok_store_tensor_new(store, 4 * SLOT, &error);
  g_assert_no_error(error);
  Waiter w;
  waiter_init(&w);
  g_assert_cmpint(round_trip(store, pool, small, 8, &w), ==, 0);
  waiter_clear(&w);
  g_assert_null(rok_store_tensor_new(store, 2 * 1024 * 1024, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_test_message("%s", error->message);
  g_autofree char *path = g_build_filename(rok_store_workdir(store, 0), "data", NULL);
  g_assert_nonnull(strstr(error->message, path));
  g_assert_nonnull(strstr(error->message, g_strerror(ENOSPC)));
  g_clear_pointer(&small, rok_store_tensor_free);
  rok_store_free(store);
  unmount(dir);
}

/* ramfs refuses O_DIRECT: buffered I/O, said in a note, data intact. */
static void ramfs_buffered(void) {
  char *dir = mount_or_skip("ramfs", NULL);
  if (dir == NULL)
    return;
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 4 * SLOT, NULL);
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_AUTO, NULL, 0);
  g_assert_false(rok_store_direct(store, 0));
  g_assert_nonnull(strstr(rok_store_notes(store)[0], "O_DIRECT refused"));
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, 3 * SLOT + 7, NULL);
  Waiter w;
  waiter_init(&w);
  g_assert_cmpint(round_trip(store, pool, t, 9, &w), ==, 0);
  g_assert_cmpuint(w.mismatches, ==, 0);
  waiter_clear(&w);
  g_clear_pointer(&t, rok_store_tensor_free);
  rok_store_free(store);
  unmount(dir);
}

static const ErrorFault error_faults[] = {
  { "enospc@write:3", TRUE, 2, "No space left on device" },
  { "eio@write:1", TRUE, 0, "Input/output error" },
  { "eio@read:2", FALSE, 1, "Input/output error" },
};

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/io/store/round-trip/psync", GINT_TO_POINTER(ROK_IO_BACKEND_PSYNC),
                       round_trip_sizes);
  g_test_add_data_func("/io/store/round-trip/auto", GINT_TO_POINTER(ROK_IO_BACKEND_AUTO),
                       round_trip_sizes);
  g_test_add_func("/io/store/stripe-layout", stripe_layout);
  g_test_add_func("/io/store/space-reuse", space_reuse);
  for (guint i = 0; i < G_N_ELEMENTS(error_faults); i++) {
    g_autofree char *name = g_strdup_printf("/io/store/fault/%s", error_faults[i].spec);
    g_test_add_data_func(name, &error_faults[i], error_fault);
  }
  g_test_add_data_func("/io/store/fault/short@write:2", "short@write:2", short_fault);
  g_test_add_data_func("/io/store/fault/short@read:3", "short@read:3", short_fault);
  g_test_add_func("/io/store/fault/corrupt@read:1", corrupt_fault);
  g_test_add_func("/io/store/fault/nodirect@open:1", nodirect_fault);
  g_test_add_func("/io/store/cancel", cancel_pending);
  g_test_add_func("/io/store/bad-input", bad_input);
  g_test_add_func("/io/store/not-enough-space", not_enough_space);
  g_test_add_func("/io/store/tmpfs-enospc", tmpfs_enospc);
  g_test_add_func("/io/store/ramfs-buffered", ramfs_buffered);
  return g_test_run();
}
