/* The storage layer's parts on their own: fault specs, the extent
 * allocator, the staging pool, owner markers and the free-space check. */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "storage/extents.h"
#include "rok/storage.h"
#include "storage/owner.h"
#include "rok/storage.h"
#include "rok/storage.h"
#include "rok/core.h"

/* ---- fault specs ------------------------------------------------------- */

static void fault_counts(void) {
  g_autoptr(RokFault) f = NULL;
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_fault_parse(" enospc@write:3 , corrupt@read:1,short@read:2,nodirect@open:2", &f, &error));
  g_assert_no_error(error);
  RokFaultKind w[4], r[3], o[2];
  for (guint i = 0; i < 4; i++)
    w[i] = rok_fault_next(f, ROK_FAULT_OP_WRITE);
  for (guint i = 0; i < 3; i++)
    r[i] = rok_fault_next(f, ROK_FAULT_OP_READ);
  for (guint i = 0; i < 2; i++)
    o[i] = rok_fault_next(f, ROK_FAULT_OP_OPEN);
  g_assert_cmpint(w[0], ==, ROK_FAULT_NONE);
  g_assert_cmpint(w[1], ==, ROK_FAULT_NONE);
  g_assert_cmpint(w[2], ==, ROK_FAULT_ENOSPC);
  g_assert_cmpint(w[3], ==, ROK_FAULT_NONE);
  g_assert_cmpint(r[0], ==, ROK_FAULT_CORRUPT);
  g_assert_cmpint(r[1], ==, ROK_FAULT_SHORT);
  g_assert_cmpint(r[2], ==, ROK_FAULT_NONE);
  g_assert_cmpint(o[0], ==, ROK_FAULT_NONE);
  g_assert_cmpint(o[1], ==, ROK_FAULT_NODIRECT);
  g_assert_cmpint(rok_fault_errno(ROK_FAULT_ENOSPC), ==, -ENOSPC);
  g_assert_cmpint(rok_fault_errno(ROK_FAULT_EIO), ==, -EIO);
  g_assert_cmpint(rok_fault_errno(ROK_FAULT_SHORT), ==, 0);
}

static void fault_none(void) {
  RokFault *f = (RokFault *)&f; /* must be overwritten */
  g_assert_true(rok_fault_parse(NULL, &f, NULL));
  g_assert_null(f);
  g_assert_true(rok_fault_parse("", &f, NULL));
  g_assert_null(f);
  g_assert_cmpint(rok_fault_next(NULL, ROK_FAULT_OP_WRITE), ==, ROK_FAULT_NONE);
}

static void fault_bad(void) {
  static const struct {
    const char *spec, *text;
  } cases[] = {
    { "enospc", "expected KIND@OP:N" },
    { "enospc@write", "expected KIND@OP:N" },
    { "boom@write:1", "unknown kind \"boom\"" },
    { "eio@open:1", "eio does not apply to \"open\"" },
    { "corrupt@write:1", "corrupt does not apply to \"write\"" },
    { "eio@read:0", "\"0\" is not a count from 1" },
    { "eio@read:x", "\"x\" is not a count from 1" },
    { "eio@read:1,", "expected KIND@OP:N" },
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    RokFault *f = NULL;
    g_autoptr(GError) error = NULL;
    g_assert_false(rok_fault_parse(cases[i].spec, &f, &error));
    g_assert_null(f);
    g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
    g_assert_true(g_str_has_prefix(error->message, "ROK_FAULT="));
    if (strstr(error->message, cases[i].text) == NULL)
      g_error("%s: \"%s\" lacks \"%s\"", cases[i].spec, error->message, cases[i].text);
  }
}

/* ---- extents ------------------------------------------------------------ */

static void extents_first_fit(void) {
  g_autoptr(RokExtents) ex = storage_extents_new(10);
  g_assert_cmpint(storage_extents_alloc(ex, 4), ==, 0);
  g_assert_cmpint(storage_extents_alloc(ex, 3), ==, 4);
  g_assert_cmpint(storage_extents_alloc(ex, 4), ==, -1); /* 3 left */
  g_assert_cmpuint(storage_extents_shortfall(ex, 4), ==, 1); /* the free tail counts */
  storage_extents_release(ex, 0, 4);
  g_assert_cmpuint(storage_extents_shortfall(ex, 4), ==, 0);
  g_assert_cmpint(storage_extents_alloc(ex, 2), ==, 0);  /* first fit: the hole */
  g_assert_cmpint(storage_extents_alloc(ex, 3), ==, 7);  /* the hole has 2: the tail */
  g_assert_cmpuint(storage_extents_used(ex), ==, 8);
  storage_extents_grow(ex, 12);
  g_assert_cmpint(storage_extents_alloc(ex, 2), ==, 2);  /* the rest of the hole */
  g_assert_cmpint(storage_extents_alloc(ex, 2), ==, 10); /* the grown tail */
  g_assert_cmpint(storage_extents_alloc(ex, 1), ==, -1);
  g_assert_cmpuint(storage_extents_shortfall(ex, 3), ==, 3); /* no free tail */
}

/* Freed runs merge with both neighbours, whatever the order. */
static void extents_merge(void) {
  g_autoptr(RokExtents) ex = storage_extents_new(6);
  for (guint i = 0; i < 6; i++)
    g_assert_cmpint(storage_extents_alloc(ex, 1), ==, i);
  static const guint order[] = { 1, 3, 2, 5, 0, 4 };
  for (guint i = 0; i < 6; i++)
    storage_extents_release(ex, order[i], 1);
  g_assert_cmpuint(storage_extents_used(ex), ==, 0);
  g_assert_cmpint(storage_extents_alloc(ex, 6), ==, 0); /* one run again */
}

static void extents_double_release(void) {
  if (g_test_subprocess()) {
    g_autoptr(RokExtents) ex = storage_extents_new(4);
    storage_extents_alloc(ex, 2);
    storage_extents_release(ex, 0, 2);
    storage_extents_release(ex, 0, 2);
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed();
  g_test_trap_assert_stderr("*CRITICAL*");
}

/* ---- staging pool ------------------------------------------------------- */

static void staging_slots(void) {
  gsize page = (gsize)sysconf(_SC_PAGESIZE);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokStaging) pool = rok_staging_new(16 * page, 50 * page, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rok_staging_n_slots(pool), ==, 3); /* whole slots only */
  g_assert_cmpuint(rok_staging_slot_bytes(pool), ==, 16 * page);
  const struct iovec *iov = rok_staging_iovecs(pool);
  for (guint s = 0; s < 3; s++) {
    guint8 *p = rok_staging_slot(pool, s);
    g_assert_cmpuint((guintptr)p % page, ==, 0);
    g_assert_true(iov[s].iov_base == p);
    g_assert_cmpuint(iov[s].iov_len, ==, 16 * page);
    memset(p, (int)s, 16 * page); /* writable, and slots do not overlap */
  }
  for (guint s = 0; s < 3; s++)
    g_assert_cmpuint(rok_staging_slot(pool, s)[16 * page - 1], ==, s);
}

static void staging_bad_sizes(void) {
  gsize page = (gsize)sysconf(_SC_PAGESIZE);
  g_autoptr(GError) error = NULL;
  g_assert_null(rok_staging_new(page + 1, 8 * page, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "multiple of the page size"));
  g_clear_error(&error);
  g_assert_null(rok_staging_new(0, 8 * page, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_clear_error(&error);
  g_assert_null(rok_staging_new(4 * page, 3 * page, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "between 1 and"));
}

typedef struct {
  RokStaging *pool;
  guint slot;
} Release;

static gpointer release_later(gpointer data) {
  Release *r = data;
  g_usleep(50000);
  rok_staging_release(r->pool, r->slot);
  return NULL;
}

static gpointer cancel_later(gpointer data) {
  g_usleep(50000);
  rok_staging_cancel(data);
  return NULL;
}

/* An exhausted pool makes acquire wait, and the wait is counted. */
static void staging_stall(void) {
  gsize page = (gsize)sysconf(_SC_PAGESIZE);
  g_autoptr(RokStaging) pool = rok_staging_new(page, 2 * page, NULL);
  int a = rok_staging_acquire(pool, -1, NULL), b = rok_staging_acquire(pool, -1, NULL);
  g_assert_cmpint(a, >=, 0);
  g_assert_cmpint(b, >=, 0);
  g_assert_cmpint(a, !=, b);
  g_assert_cmpuint(rok_staging_n_free(pool), ==, 0);
  gint64 waited = -1;
  g_assert_cmpint(rok_staging_acquire(pool, 0, &waited), ==, -ETIMEDOUT);
  g_assert_cmpint(rok_staging_acquire(pool, 20000, &waited), ==, -ETIMEDOUT);
  g_assert_cmpint(waited, >=, 20000 * 1000);
  Release r = { pool, (guint)b };
  GThread *t = g_thread_new("release", release_later, &r);
  int c = rok_staging_acquire(pool, -1, &waited);
  g_thread_join(t);
  g_assert_cmpint(c, ==, b); /* the slot just given back */
  g_assert_cmpint(waited, >=, 40000 * 1000);
  RokStagingStats stats;
  rok_staging_stats(pool, &stats);
  g_assert_cmpuint(stats.acquires, ==, 3);
  g_assert_cmpuint(stats.stalls, ==, 3);
  g_assert_cmpint(stats.stall_ns, >=, 60000 * 1000);
  g_assert_cmpuint(stats.min_free, ==, 0);
  rok_staging_release(pool, (guint)a);
  rok_staging_release(pool, (guint)c);
  g_assert_cmpuint(rok_staging_n_free(pool), ==, 2);
}

/* Cancelling wakes a waiter and refuses later acquires. */
static void staging_cancel(void) {
  gsize page = (gsize)sysconf(_SC_PAGESIZE);
  g_autoptr(RokStaging) pool = rok_staging_new(page, page, NULL);
  int a = rok_staging_acquire(pool, -1, NULL);
  GThread *t = g_thread_new("cancel", cancel_later, pool);
  g_assert_cmpint(rok_staging_acquire(pool, -1, NULL), ==, -ECANCELED);
  g_thread_join(t);
  rok_staging_release(pool, (guint)a);
  g_assert_cmpint(rok_staging_acquire(pool, -1, NULL), ==, -ECANCELED);
}

static void staging_double_release(void) {
  if (g_test_subprocess()) {
    g_autoptr(RokStaging) pool = rok_staging_new((gsize)sysconf(_SC_PAGESIZE), 4096 * 2, NULL);
    rok_staging_release(pool, 0);
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed();
  g_test_trap_assert_stderr("*slot 0 is not held*");
}

/* ---- owner markers -------------------------------------------------------- */

static void owner_round_trip(void) {
  RokOwner self, back;
  storage_owner_self(&self);
  g_assert_cmpint(self.pid, ==, getpid());
  g_assert_cmpuint(self.start, >, 0); /* /proc is there on Linux */
  g_autofree char *text = storage_owner_to_text(&self);
  g_assert_true(g_str_has_prefix(text, "rok-workdir/1\nhost="));
  g_assert_true(storage_owner_parse(text, &back));
  g_assert_cmpstr(back.host, ==, self.host);
  g_assert_cmpstr(back.boot, ==, self.boot);
  g_assert_true(g_str_has_prefix(self.pidns, "pid:["));
  g_assert_cmpstr(back.pidns, ==, self.pidns);
  g_assert_cmpint(back.pid, ==, self.pid);
  g_assert_cmpuint(back.start, ==, self.start);
  g_assert_cmpuint(back.uid, ==, self.uid);
  char *why = NULL;
  g_assert_cmpint(storage_owner_state(&back, &self, &why), ==, ROK_OWNER_LIVE);
  g_assert_null(why);
  storage_owner_clear(&back);
  storage_owner_clear(&self);
}

static void owner_bad_markers(void) {
  static const char *const bad[] = {
    "",
    "rok-workdir/2\nhost=a\nboot=b\npid=1\nstart=1\nuid=0\npidns=p\n",
    "rok-workdir/1\nhost=a\nboot=b\npid=1\nstart=1\npidns=p\n",              /* no uid */
    "rok-workdir/1\nhost=a\nboot=b\npid=1\nstart=1\nuid=0\n",                 /* no pidns */
    "rok-workdir/1\nhost=a\nboot=b\npid=1\nstart=1\nuid=0\nuid=0\npidns=p\n", /* twice */
    "rok-workdir/1\nhost=a\nboot=b\npid=0\nstart=1\nuid=0\npidns=p\n",       /* pid 0 */
    "rok-workdir/1\nhost=a\nboot=b\npid=x\nstart=1\nuid=0\npidns=p\n",
    "rok-workdir/1\nhost=\nboot=b\npid=1\nstart=1\nuid=0\npidns=p\n",
    "rok-workdir/1\nhost=a\nboot=b\npid=1\nstart=1\nuid=0\npidns=p\ncolour=red\n",
  };
  RokOwner good;
  g_assert_true(storage_owner_parse("rok-workdir/1\nhost=a\nboot=\npid=1\nstart=1\nuid=0\npidns=\n", &good));
  storage_owner_clear(&good);
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    RokOwner o;
    if (storage_owner_parse(bad[i], &o))
      g_error("accepted marker %u: %s", i, bad[i]);
  }
}

/* Another boot, a pid that is gone, a pid now another process: gone. Another
 * host, user or pid namespace: not ours to judge. */
static void owner_states(void) {
  RokOwner self;
  storage_owner_self(&self);
  GPid child = 0;
  char *argv[] = { "/bin/true", NULL };
  g_assert_true(g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &child, NULL));
  int status;
  g_assert_cmpint(waitpid(child, &status, 0), ==, child); /* now a pid nobody has */
  char *host = self.host, *boot = self.boot, *ns = self.pidns;
  struct {
    RokOwner o;
    RokOwnerState state;
    const char *why;
  } cases[] = {
    { { host, "other-boot", ns, self.pid, self.start, self.uid }, ROK_OWNER_GONE, "before the machine last booted" },
    { { host, boot, ns, child, 0, self.uid }, ROK_OWNER_GONE, "is gone" },
    { { host, boot, "", child, 0, self.uid }, ROK_OWNER_GONE, "is gone" },
    { { host, boot, ns, self.pid, self.start + 1, self.uid }, ROK_OWNER_GONE, "now another process" },
    { { host, "", ns, self.pid, self.start, self.uid }, ROK_OWNER_LIVE, NULL },
    { { host, boot, ns, self.pid, 0, self.uid }, ROK_OWNER_LIVE, NULL },
    { { "another-host", "other-boot", ns, child, 1, self.uid }, ROK_OWNER_FOREIGN, NULL },
    { { host, boot, ns, child, 1, self.uid + 1 }, ROK_OWNER_FOREIGN, NULL },
    { { host, boot, "pid:[1]", child, 1, self.uid }, ROK_OWNER_FOREIGN, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *why = NULL;
    g_assert_cmpint(storage_owner_state(&cases[i].o, &self, &why), ==, cases[i].state);
    if (cases[i].why != NULL)
      g_assert_nonnull(strstr(why, cases[i].why));
  }
  storage_owner_clear(&self);
}

/* ---- free space ------------------------------------------------------------ */

static void space_sums_per_file_system(void) {
  g_autofree char *a = g_dir_make_tmp("rok-test-space-XXXXXX", NULL);
  g_autofree char *b = g_dir_make_tmp("rok-test-space-XXXXXX", NULL);
  guint64 avail = 0;
  g_assert_true(rok_space_available(a, &avail));
  g_assert_cmpuint(avail, >, 0);
  const char *dirs[] = { a, b };
  /* Each fits alone; together they do not (same file system). */
  guint64 need[] = { avail / 2 + avail / 4, avail / 2 + avail / 4 };
  g_assert_true(rok_space_check(dirs, need, 1, NULL));
  g_autoptr(GError) error = NULL;
  g_assert_false(rok_space_check(dirs, need, 2, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_autofree char *names = g_strdup_printf("%s + %s needs ", a, b);
  g_assert_nonnull(strstr(error->message, names));
  g_clear_error(&error);
  const char *missing[] = { "/nonexistent/rok" };
  g_assert_false(rok_space_check(missing, need, 1, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "/nonexistent/rok"));
  g_assert_cmpint(rmdir(a), ==, 0);
  g_assert_cmpint(rmdir(b), ==, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/io/fault/counts", fault_counts);
  g_test_add_func("/io/fault/none", fault_none);
  g_test_add_func("/io/fault/bad", fault_bad);
  g_test_add_func("/io/extents/first-fit", extents_first_fit);
  g_test_add_func("/io/extents/merge", extents_merge);
  g_test_add_func("/io/extents/double-release", extents_double_release);
  g_test_add_func("/io/staging/slots", staging_slots);
  g_test_add_func("/io/staging/bad-sizes", staging_bad_sizes);
  g_test_add_func("/io/staging/stall", staging_stall);
  g_test_add_func("/io/staging/cancel", staging_cancel);
  g_test_add_func("/io/staging/double-release", staging_double_release);
  g_test_add_func("/io/owner/round-trip", owner_round_trip);
  g_test_add_func("/io/owner/bad-markers", owner_bad_markers);
  g_test_add_func("/io/owner/states", owner_states);
  g_test_add_func("/io/space/sums-per-file-system", space_sums_per_file_system);
  return g_test_run();
}
