/* Work folders across processes: a child killed with SIGKILL leaves its
 * folder, and the next store in that directory removes it while leaving
 * alone folders that are not stale or not ours; SIGINT and SIGTERM make a
 * child in the middle of I/O cancel, remove its folder and exit non-zero.
 *
 * The child is this binary run as `test-io-workdir --child DIR`: it opens a
 * store in DIR, prints its work folder, and keeps writing and reading a
 * tensor until a signal cancels it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rok/storage.h"
#include "rok/core.h"

#define SLOT (64 * 1024)

/* ---- the child ---------------------------------------------------------- */

typedef struct {
  RokStaging *pool;
  RokStore *store;
  GMutex lock;
  GCond cond;
  guint outstanding;
  int first_res;
} Child;

static void child_cancel(int signo, gpointer data) {
  (void)signo;
  Child *c = data;
  /* Called on the watch thread: everything here is thread-safe. */
  rok_staging_cancel(c->pool);
  g_mutex_lock(&c->lock);
  if (c->store != NULL)
    rok_store_cancel(c->store);
  g_mutex_unlock(&c->lock);
}

typedef struct {
  Child *c;
  guint slot;
} ChildOp;

static void child_done(RokStoreTensor *t, guint chunk, int res, gpointer data) {
  (void)t, (void)chunk;
  ChildOp *op = data;
  Child *c = op->c;
  rok_staging_release(c->pool, op->slot);
  g_mutex_lock(&c->lock);
  if (res < 0 && c->first_res == 0)
    c->first_res = res;
  c->outstanding--;
  g_cond_signal(&c->cond);
  g_mutex_unlock(&c->lock);
  g_free(op);
}

/* One pass over the tensor; FALSE once cancelled or failed. */
static gboolean child_pass(Child *c, RokStoreTensor *t, gboolean write) {
  gboolean cancelled = FALSE;
  for (guint k = 0; k < rok_store_tensor_n_chunks(t) && !cancelled; k++) {
    int slot = rok_staging_acquire(c->pool, -1, NULL);
    if ((cancelled = slot < 0))
      break;
    ChildOp *op = g_new(ChildOp, 1);
    *op = (ChildOp){ c, (guint)slot };
    g_mutex_lock(&c->lock);
    c->outstanding++;
    g_mutex_unlock(&c->lock);
    (write ? rok_store_write : rok_store_read)(t, k, (guint)slot, child_done, op);
  }
  g_mutex_lock(&c->lock);
  while (c->outstanding > 0)
    g_cond_wait(&c->cond, &c->lock);
  g_mutex_unlock(&c->lock);
  return !cancelled && c->first_res == 0;
}

static int child_main(const char *dir) {
  Child c = { 0 };
  g_mutex_init(&c.lock);
  g_cond_init(&c.cond);
  g_autoptr(GError) error = NULL;
  /* First, before any thread exists. */
  g_autoptr(RokSignalWatch) watch = rok_signal_watch_new(child_cancel, &c, &error);
  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, 4 * SLOT, &error);
  c.pool = pool;
  const char *dirs[] = { dir, NULL };
  RokStoreOptions o;
  rok_store_options_init(&o);
  o.queue_depth = 2;
  RokStore *store = rok_store_open(dirs, pool, &o, &error);
  if (store == NULL) {
    fprintf(stderr, "child: %s\n", error->message);
    return 2;
  }
  g_mutex_lock(&c.lock);
  c.store = store;
  g_mutex_unlock(&c.lock);
  RokStoreTensor *t = rok_store_tensor_new(store, 16 * SLOT, &error);
  gboolean ok = child_pass(&c, t, TRUE);
  printf("%s\n", rok_store_workdir(store, 0));
  fflush(stdout);
  while (ok)
    ok = child_pass(&c, t, FALSE) && child_pass(&c, t, TRUE);
  /* Cancelled (or failed): unwind as the executor does. */
  rok_store_drain(store);
  rok_store_tensor_free(t);
  g_mutex_lock(&c.lock);
  c.store = NULL;
  g_mutex_unlock(&c.lock);
  rok_store_free(store);
  int signo = rok_signal_watch_received(watch);
  if (signo != 0)
    fprintf(stderr, "child: interrupted by %s: work folder removed\n", strsignal(signo));
  else
    fprintf(stderr, "child: failed: work folder removed\n");
  g_mutex_clear(&c.lock);
  g_cond_clear(&c.cond);
  return 1;
}

/* ---- the parent's side --------------------------------------------------- */

typedef struct {
  GPid pid;
  int out, err;
  char *workdir;
} Spawned;

static void spawn_child(const char *dir, Spawned *s) {
  g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
  char *argv[] = { self, "--child", (char *)dir, NULL };
  g_autoptr(GError) error = NULL;
  g_assert_true(g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                         &s->pid, NULL, &s->out, &s->err, &error));
  g_assert_no_error(error);
  GString *line = g_string_new(NULL);
  char ch;
  while (read(s->out, &ch, 1) == 1 && ch != '\n')
    g_string_append_c(line, ch);
  s->workdir = g_string_free(line, FALSE);
  g_assert_true(g_str_has_prefix(s->workdir, dir));
  g_assert_true(g_file_test(s->workdir, G_FILE_TEST_IS_DIR));
}

static int reap(Spawned *s, char **err_text) {
  int status = 0;
  g_assert_cmpint(waitpid(s->pid, &status, 0), ==, s->pid);
  GString *text = g_string_new(NULL);
  char buf[256];
  ssize_t n;
  while ((n = read(s->err, buf, sizeof buf)) > 0)
    g_string_append_len(text, buf, n);
  close(s->out);
  close(s->err);
  *err_text = g_string_free(text, FALSE);
  return status;
}

static gboolean is_empty_dir(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  return d != NULL && g_dir_read_name(d) == NULL;
}

static void make_folder(const char *path, const char *marker, const char *other_file) {
  g_assert_cmpint(g_mkdir_with_parents(path, 0700), ==, 0);
  if (marker != NULL) {
    g_autofree char *m = g_build_filename(path, "rok-owner", NULL);
    g_assert_true(g_file_set_contents(m, marker, -1, NULL));
  }
  if (other_file != NULL) {
    g_autofree char *f = g_build_filename(path, other_file, NULL);
    g_assert_true(g_file_set_contents(f, "not rok's", -1, NULL));
  }
}

static void remove_folder(const char *path, const char *file) {
  g_autofree char *m = g_build_filename(path, "rok-owner", NULL);
  unlink(m);
  if (file != NULL) {
    g_autofree char *f = g_build_filename(path, file, NULL);
    g_assert_cmpint(unlink(f), ==, 0);
  }
  g_assert_cmpint(rmdir(path), ==, 0);
}

static char *marker_of_self(void) {
  g_autofree char *stat = NULL;
  g_assert_true(g_file_get_contents("/proc/self/stat", &stat, NULL, NULL));
  g_auto(GStrv) f = g_strsplit(strrchr(stat, ')') + 2, " ", 0);
  g_autofree char *boot = NULL;
  g_assert_true(g_file_get_contents("/proc/sys/kernel/random/boot_id", &boot, NULL, NULL));
  g_autofree char *ns = g_file_read_link("/proc/self/ns/pid", NULL);
  return g_strdup_printf("rok-workdir/1\nhost=%s\nboot=%s\npid=%d\nstart=%s\nuid=%u\npidns=%s\n",
                         g_get_host_name(), g_strstrip(boot), (int)getpid(), f[19], (unsigned)getuid(), ns);
}

/* SIGKILL leaves the folder; the next store removes it, and only it. */
static void killed_then_swept(void) {
  g_autofree char *dir = g_dir_make_tmp("rok-test-workdir-XXXXXX", NULL);
  Spawned s;
  spawn_child(dir, &s);
  g_assert_cmpint(kill(s.pid, SIGKILL), ==, 0);
  g_autofree char *err = NULL;
  int status = reap(&s, &err);
  g_assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  g_autofree char *data = g_build_filename(s.workdir, "data", NULL);
  g_assert_true(g_file_test(data, G_FILE_TEST_IS_REGULAR)); /* left behind */

  /* Not ours or not stale: a folder without marker, one of a live process
   * (this one), one of another host, one of another pid namespace, and a
   * stale one holding a foreign file. */
  g_autofree char *foreign = g_build_filename(dir, "rok-abc123", NULL);
  g_autofree char *live = g_build_filename(dir, "rok-live01", NULL);
  g_autofree char *remote = g_build_filename(dir, "rok-host01", NULL);
  g_autofree char *mixed = g_build_filename(dir, "rok-mixd01", NULL);
  g_autofree char *other_ns = g_build_filename(dir, "rok-pidn01", NULL);
  g_autofree char *self_marker = marker_of_self();
  g_autofree char *remote_marker = g_strdup_printf(
      "rok-workdir/1\nhost=elsewhere\nboot=x\npid=%d\nstart=1\nuid=%u\npidns=\n", (int)s.pid,
      (unsigned)getuid());
  g_autofree char *dead_marker = g_strdup_printf(
      "rok-workdir/1\nhost=%s\nboot=\npid=%d\nstart=1\nuid=%u\npidns=\n", g_get_host_name(),
      (int)s.pid, (unsigned)getuid());
  make_folder(foreign, NULL, "data");
  make_folder(live, self_marker, NULL);
  make_folder(remote, remote_marker, NULL);
  make_folder(mixed, dead_marker, "notes.txt");
  g_autofree char *ns_marker = g_strdup_printf(
      "rok-workdir/1\nhost=%s\nboot=\npid=%d\nstart=1\nuid=%u\npidns=pid:[1]\n", g_get_host_name(),
      (int)s.pid, (unsigned)getuid());
  make_folder(other_ns, ns_marker, NULL);

  g_autoptr(RokStaging) pool = rok_staging_new(SLOT, SLOT, NULL);
  const char *dirs[] = { dir, NULL };
  RokStoreOptions o;
  rok_store_options_init(&o);
  g_autoptr(GError) error = NULL;
  RokStore *store = rok_store_open(dirs, pool, &o, &error);
  g_assert_no_error(error);
  g_autofree char *notes = g_strjoinv("\n", (char **)rok_store_notes(store));
  g_test_message("%s", notes);
  g_autofree char *removed = g_strdup_printf("removed stale work folder %s (pid %d is gone)",
                                             s.workdir, (int)s.pid);
  g_assert_nonnull(strstr(notes, removed));
  g_autofree char *kept = g_strdup_printf("could not remove stale work folder %s", mixed);
  g_assert_nonnull(strstr(notes, kept));
  g_assert_false(g_file_test(s.workdir, G_FILE_TEST_EXISTS));
  rok_store_free(store);

  g_autofree char *foreign_data = g_build_filename(foreign, "data", NULL);
  g_assert_true(g_file_test(foreign_data, G_FILE_TEST_IS_REGULAR));
  remove_folder(foreign, "data");
  remove_folder(live, NULL);
  remove_folder(remote, NULL);
  remove_folder(other_ns, NULL);
  /* The stale folder holding a foreign file keeps its marker, so that later
   * runs still know it was rok's and say so. */
  g_autofree char *mixed_marker = g_build_filename(mixed, "rok-owner", NULL);
  g_assert_true(g_file_test(mixed_marker, G_FILE_TEST_IS_REGULAR));
  remove_folder(mixed, "notes.txt");
  g_assert_true(is_empty_dir(dir));
  g_assert_cmpint(rmdir(dir), ==, 0);
  g_free(s.workdir);
}

/* SIGINT or SIGTERM in the middle of I/O: cancel, clean up, exit 1. */
static void interrupted(gconstpointer data) {
  int signo = GPOINTER_TO_INT(data);
  g_autofree char *dir = g_dir_make_tmp("rok-test-workdir-XXXXXX", NULL);
  Spawned s;
  spawn_child(dir, &s);
  g_usleep(20000); /* let it get into its read/write loop */
  g_assert_cmpint(kill(s.pid, signo), ==, 0);
  g_autofree char *err = NULL;
  int status = reap(&s, &err);
  g_test_message("child: %s", err);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 1);
  g_autofree char *expect = g_strdup_printf("interrupted by %s", strsignal(signo));
  g_assert_nonnull(strstr(err, expect));
  g_assert_false(g_file_test(s.workdir, G_FILE_TEST_EXISTS));
  g_assert_true(is_empty_dir(dir));
  g_assert_cmpint(rmdir(dir), ==, 0);
  g_free(s.workdir);
}

/* rok_workdir_remove leaves a folder that holds a file rok did not write,
 * and says so. */
static void remove_refuses_foreign_files(void) {
  g_autofree char *dir = g_dir_make_tmp("rok-test-workdir-XXXXXX", NULL);
  g_autoptr(GError) error = NULL;
  RokWorkdir *w = rok_workdir_new(dir, &error);
  g_assert_no_error(error);
  g_autofree char *path = g_strdup(rok_workdir_path(w));
  g_autofree char *data = rok_workdir_file(w, "data.0");
  RokIoFile file;
  g_assert_true(rok_workdir_create_file(w, "data.0", NULL, &file, &error));
  rok_io_file_close(&file);
  g_autofree char *other = g_build_filename(path, "keep-me", NULL);
  g_assert_true(g_file_set_contents(other, "y", 1, NULL));
  g_assert_false(rok_workdir_remove(w, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_assert_nonnull(strstr(error->message, path));
  g_assert_nonnull(strstr(error->message, "files rok did not write"));
  g_assert_false(g_file_test(data, G_FILE_TEST_EXISTS));
  g_assert_cmpint(unlink(other), ==, 0);
  g_clear_error(&error);
  g_assert_true(rok_workdir_remove(w, &error)); /* now it can */
  rok_workdir_free(w);
  g_assert_true(is_empty_dir(dir));
  g_assert_cmpint(rmdir(dir), ==, 0);
}

/* A look-alike of a dead run holding rok's names and a user's file: nothing
 * of it is removed, "data" included. */
static void lookalike_untouched(void) {
  g_autofree char *dir = g_dir_make_tmp("rok-test-workdir-XXXXXX", NULL);
  g_autofree char *look = g_build_filename(dir, "rok-look01", NULL);
  g_autofree char *dead = g_strdup_printf("rok-workdir/1\nhost=%s\nboot=\npid=%d\nstart=1\nuid=%u\npidns=\n",
                                          g_get_host_name(), G_MAXINT32 - 1, (unsigned)getuid());
  make_folder(look, dead, "mine.txt");
  g_autofree char *data = g_build_filename(look, "data", NULL);
  g_assert_true(g_file_set_contents(data, "a user's data", -1, NULL));
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
  g_assert_cmpuint(rok_workdir_sweep(dir, notes), ==, 0);
  g_assert_true(g_file_test(data, G_FILE_TEST_IS_REGULAR));
  g_assert_cmpint(unlink(data), ==, 0);
  remove_folder(look, "mine.txt");
  g_assert_cmpint(rmdir(dir), ==, 0);
}

/* DIR renamed while a work folder is in use and a look-alike made at the
 * old path: rok removes its own folder where it is now, and nothing of the
 * look-alike. */
static void renamed_away(void) {
  g_autofree char *base = g_dir_make_tmp("rok-test-workdir-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename(base, "v", NULL), *moved = g_build_filename(base, "v2", NULL);
  g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
  g_autoptr(GError) error = NULL;
  RokWorkdir *w = rok_workdir_new(dir, &error);
  g_assert_no_error(error);
  RokIoFile file;
  g_assert_true(rok_workdir_create_file(w, "data", NULL, &file, &error));
  rok_io_file_close(&file);
  g_autofree char *name = g_path_get_basename(rok_workdir_path(w));
  g_assert_cmpint(rename(dir, moved), ==, 0);
  g_autofree char *fake = g_build_filename(dir, name, NULL);
  make_folder(fake, NULL, "data");
  g_assert_true(rok_workdir_remove(w, &error));
  g_assert_no_error(error);
  rok_workdir_free(w);
  g_autofree char *fake_data = g_build_filename(fake, "data", NULL);
  g_assert_true(g_file_test(fake_data, G_FILE_TEST_IS_REGULAR));
  g_assert_true(is_empty_dir(moved));
  remove_folder(fake, "data");
  g_assert_cmpint(rmdir(dir), ==, 0);
  g_assert_cmpint(rmdir(moved), ==, 0);

  /* The work folder itself renamed: still found by its handle. */
  g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
  w = rok_workdir_new(dir, &error);
  g_autofree char *elsewhere = g_build_filename(dir, "elsewhere", NULL);
  g_assert_cmpint(rename(rok_workdir_path(w), elsewhere), ==, 0);
  g_assert_true(rok_workdir_remove(w, &error));
  rok_workdir_free(w);
  g_assert_true(is_empty_dir(dir));
  g_assert_cmpint(rmdir(dir), ==, 0);
  g_assert_cmpint(rmdir(base), ==, 0);
}

/* An empty rok-XXXXXX folder (a run killed between making it and writing
 * its marker) is swept once it is a minute old, not before. */
static void empty_swept(void) {
  g_autofree char *dir = g_dir_make_tmp("rok-test-workdir-XXXXXX", NULL);
  g_autofree char *empty = g_build_filename(dir, "rok-empty1", NULL);
  g_assert_cmpint(g_mkdir(empty, 0700), ==, 0);
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
  g_assert_cmpuint(rok_workdir_sweep(dir, notes), ==, 0);
  g_assert_true(g_file_test(empty, G_FILE_TEST_IS_DIR));
  struct timespec old[2] = {{.tv_sec = time(NULL) - 120}, {.tv_sec = time(NULL) - 120}};
  g_assert_cmpint(utimensat(AT_FDCWD, empty, old, 0), ==, 0);
  g_assert_cmpuint(rok_workdir_sweep(dir, notes), ==, 1);
  g_assert_false(g_file_test(empty, G_FILE_TEST_EXISTS));
  g_assert_cmpint(rmdir(dir), ==, 0);
}

/* ---- a watch retargeted ------------------------------------------------- */

static void note_signal(int signo, gpointer data) {
  g_atomic_int_set((gint *)data, signo);
}

/* Waits up to 5 s for *FLAG to be set. */
static gboolean noted(gint *flag) {
  for (int i = 0; i < 500 && g_atomic_int_get(flag) == 0; i++)
    g_usleep(10000);
  return g_atomic_int_get(flag) != 0;
}

/* A signal goes to the function the watch was last pointed at, and only
 * to it; the one replaced comes back for the caller to put back. In a
 * subprocess: the watch must come before any thread. */
static void retargeted(void) {
  if (g_test_subprocess()) {
    gint first = 0, second = 0;
    g_autoptr(GError) error = NULL;
    g_autoptr(RokSignalWatch) watch = rok_signal_watch_new(note_signal, &first, &error);
    g_assert_no_error(error);
    RokSignalFunc was = NULL;
    gpointer was_data = NULL;
    rok_signal_watch_retarget(watch, note_signal, &second, &was, &was_data);
    g_assert_true(was == note_signal && was_data == &first);
    gboolean back = g_str_equal(g_test_get_path(), "/io/signals/retarget-back");
    if (back)
      rok_signal_watch_retarget(watch, was, was_data, NULL, NULL);
    g_assert_cmpint(kill(getpid(), SIGHUP), ==, 0);
    g_assert_true(noted(back ? &first : &second));
    g_assert_cmpint(g_atomic_int_get(back ? &first : &second), ==, SIGHUP);
    g_assert_cmpint(g_atomic_int_get(back ? &second : &first), ==, 0);
    g_assert_cmpint(rok_signal_watch_received(watch), ==, SIGHUP);
    return;
  }
  g_test_trap_subprocess(NULL, 10 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
}

int main(int argc, char **argv) {
  if (argc == 3 && g_str_equal(argv[1], "--child"))
    return child_main(argv[2]);
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/io/workdir/killed-then-swept", killed_then_swept);
  g_test_add_data_func("/io/workdir/sigint", GINT_TO_POINTER(SIGINT), interrupted);
  g_test_add_data_func("/io/workdir/sigterm", GINT_TO_POINTER(SIGTERM), interrupted);
  g_test_add_func("/io/workdir/remove-refuses-foreign-files", remove_refuses_foreign_files);
  g_test_add_func("/io/workdir/lookalike-untouched", lookalike_untouched);
  g_test_add_func("/io/workdir/renamed-away", renamed_away);
  g_test_add_func("/io/workdir/empty-swept", empty_swept);
  g_test_add_func("/io/signals/retarget", retargeted);
  g_test_add_func("/io/signals/retarget-back", retargeted);
  return g_test_run();
}
