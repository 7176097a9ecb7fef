/* The store on io_uring specifically: chosen by default, staging slots and
 * files registered, registration refused (more buffers than io_uring takes)
 * falling back to plain buffers, and a striped round trip at a deep queue.
 * Exits 77 (skipped) where the kernel or a sandbox refuses io_uring. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rok/storage.h"
#include "rok/core.h"

typedef struct {
  GMutex lock;
  GCond cond;
  guint outstanding;
  int first_res;
} Sync;

static void on_done(RokStoreTensor *t, guint chunk, int res, gpointer data) {
  (void)t, (void)chunk;
  Sync *s = data;
  g_mutex_lock(&s->lock);
  if (res < 0 && s->first_res == 0)
    s->first_res = res;
  s->outstanding--;
  g_cond_signal(&s->cond);
  g_mutex_unlock(&s->lock);
}

/* Chunk c goes through slot c (the pool has a slot per chunk), all at once. */
static int move_all(RokStoreTensor *t, gboolean write) {
  Sync s = { 0 };
  g_mutex_init(&s.lock);
  g_cond_init(&s.cond);
  s.outstanding = rok_store_tensor_n_chunks(t);
  for (guint c = 0; c < rok_store_tensor_n_chunks(t); c++)
    (write ? rok_store_write : rok_store_read)(t, c, c, on_done, &s);
  g_mutex_lock(&s.lock);
  while (s.outstanding > 0)
    g_cond_wait(&s.cond, &s.lock);
  g_mutex_unlock(&s.lock);
  g_mutex_clear(&s.lock);
  g_cond_clear(&s.cond);
  return s.first_res;
}

static void fill(RokStaging *pool, guint n, guint8 seed) {
  for (guint s = 0; s < n; s++)
    memset(rok_staging_slot(pool, s), seed + s, rok_staging_slot_bytes(pool));
}

static void check(RokStaging *pool, guint n, guint8 seed) {
  for (guint s = 0; s < n; s++) {
    const guint8 *p = rok_staging_slot(pool, s);
    for (gsize i = 0; i < rok_staging_slot_bytes(pool); i += 509)
      g_assert_cmpuint(p[i], ==, (guint8)(seed + s));
  }
}

static RokStore *open_store(const char *const *dirs, RokStaging *pool, RokIoBackendKind kind,
                            guint depth) {
  RokStoreOptions o;
  rok_store_options_init(&o);
  o.backend = kind;
  o.queue_depth = depth;
  o.faults = NULL;
  g_autoptr(GError) error = NULL;
  RokStore *store = rok_store_open(dirs, pool, &o, &error);
  g_assert_no_error(error);
  return store;
}

static char *notes_of(RokStore *store) {
  return g_strjoinv("\n", (char **)rok_store_notes(store));
}

/* AUTO takes io_uring here; slots and files are registered unless the
 * memlock limit refused, which a note then says. */
static void auto_is_uring(void) {
  g_autofree char *dir = g_dir_make_tmp("rok-test-uring-XXXXXX", NULL);
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(1 << 20, 8 << 20, NULL);
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_AUTO, 8);
  g_assert_cmpstr(rok_store_backend_name(store), ==, "io_uring");
  g_autofree char *notes = notes_of(store);
  g_test_message("notes: %s", notes);
  g_assert_null(strstr(notes, "io_uring is not available"));
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, 8 << 20, NULL);
  fill(pool, 8, 40);
  g_assert_cmpint(move_all(t, TRUE), ==, 0);
  fill(pool, 8, 0);
  g_assert_cmpint(move_all(t, FALSE), ==, 0);
  check(pool, 8, 40);
  g_clear_pointer(&t, rok_store_tensor_free);
  rok_store_free(store);
  g_assert_cmpint(rmdir(dir), ==, 0);
}

/* io_uring takes at most 16384 registered buffers: a pool of more slots is
 * refused registration, and the store goes on with plain buffers. */
static void registration_refused(void) {
  g_autofree char *dir = g_dir_make_tmp("rok-test-uring-XXXXXX", NULL);
  const char *dirs[] = { dir, NULL };
  gsize page = (gsize)sysconf(_SC_PAGESIZE);
  g_autoptr(RokStaging) pool = rok_staging_new(page, 16385 * (guint64)page, NULL);
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_URING, 16);
  g_autofree char *notes = notes_of(store);
  g_test_message("notes: %s", notes);
  g_assert_nonnull(strstr(notes, "could not register the 16385 staging buffers"));
  g_assert_nonnull(strstr(notes, "using plain descriptors and buffers"));
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, 64 * page, NULL);
  fill(pool, 64, 7);
  g_assert_cmpint(move_all(t, TRUE), ==, 0);
  fill(pool, 64, 0);
  g_assert_cmpint(move_all(t, FALSE), ==, 0);
  check(pool, 64, 7);
  g_clear_pointer(&t, rok_store_tensor_free);
  rok_store_free(store);
  g_assert_cmpint(rmdir(dir), ==, 0);
}

/* Three directories, queue depth 32 each, 96 chunks in flight. */
static void striped_deep_queue(void) {
  g_autofree char *a = g_dir_make_tmp("rok-test-uring-XXXXXX", NULL);
  g_autofree char *b = g_dir_make_tmp("rok-test-uring-XXXXXX", NULL);
  g_autofree char *c = g_dir_make_tmp("rok-test-uring-XXXXXX", NULL);
  const char *dirs[] = { a, b, c, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new(256 << 10, 96 * (256 << 10), NULL);
  RokStore *store = open_store(dirs, pool, ROK_IO_BACKEND_URING, 32);
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, 96 * (256 << 10), NULL);
  fill(pool, 96, 90);
  g_assert_cmpint(move_all(t, TRUE), ==, 0);
  g_assert_true(rok_store_sync(store, NULL));
  fill(pool, 96, 0);
  g_assert_cmpint(move_all(t, FALSE), ==, 0);
  check(pool, 96, 90);
  RokStoreStats stats;
  rok_store_stats(store, &stats);
  g_assert_cmpuint(stats.writes, ==, 96);
  g_assert_cmpuint(stats.reads, ==, 96);
  g_assert_cmpuint(stats.bytes_read, ==, 96 * (256 << 10));
  g_clear_pointer(&t, rok_store_tensor_free);
  rok_store_free(store);
  g_assert_cmpint(rmdir(a), ==, 0);
  g_assert_cmpint(rmdir(b), ==, 0);
  g_assert_cmpint(rmdir(c), ==, 0);
}

/* Whether this kernel, in this sandbox, gives us a ring; why not if not. */
static char *uring_refused(void) {
#ifdef ROK_WITH_URING
  g_autofree char *dir = g_dir_make_tmp("rok-test-uring-XXXXXX", NULL);
  const char *dirs[] = { dir, NULL };
  g_autoptr(RokStaging) pool = rok_staging_new((gsize)sysconf(_SC_PAGESIZE), (guint64)sysconf(_SC_PAGESIZE), NULL);
  RokStoreOptions o;
  rok_store_options_init(&o);
  o.backend = ROK_IO_BACKEND_URING;
  o.faults = NULL;
  GError *error = NULL;
  RokStore *store = rok_store_open(dirs, pool, &o, &error);
  rok_store_free(store);
  rmdir(dir);
  if (store != NULL)
    return NULL;
  char *why = g_strdup(error->message);
  g_error_free(error);
  return why;
#else
  return g_strdup("built without io_uring (ROK_WITH_URING=OFF)");
#endif
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_autofree char *why = uring_refused();
  if (why != NULL) {
    printf("1..0 # SKIP %s\n", why);
    return 77;
  }
  g_test_add_func("/io/uring/auto-is-uring", auto_is_uring);
  g_test_add_func("/io/uring/registration-refused", registration_refused);
  g_test_add_func("/io/uring/striped-deep-queue", striped_deep_queue);
  return g_test_run();
}
