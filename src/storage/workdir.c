/* Work folders: creation with an owner marker, removal of exactly what rok
 * created, and the sweep of folders left by killed runs.
 *
 * Everything goes through handles, not paths: the folder is held open from
 * its creation, its files are made and removed relative to that handle, and
 * each is checked by device and inode before it is removed. A folder (or
 * its parent) renamed while rok runs is still the one removed; a new folder
 * of the same name made by someone else meanwhile is not touched. */
#define _GNU_SOURCE /* O_DIRECTORY, O_NOFOLLOW, fstatat flags */
#include "rok/storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "file-at.h"
#include "owner.h"
#include "rok/core.h"

#define MARKER "rok-owner"
#define MARKER_MAX 4096
/* An empty rok-XXXXXX folder is what a run killed between making its folder
 * and writing the marker (or between removing the marker and the folder)
 * leaves. It holds nothing, so removing it loses nothing; the grace period
 * keeps the sweep off a live run's folder in that instant. */
#define EMPTY_GRACE_S 60

typedef struct {
  char *name;
  dev_t dev;
  ino_t ino;
} Made;

struct _RokWorkdir {
  char *path; /* DIR/rok-XXXXXX as made, for messages */
  char *name; /* rok-XXXXXX */
  int parent; /* DIR */
  int fd;     /* the folder */
  dev_t dev;
  ino_t ino;
  GArray *made; /* Made: the marker, then the files created in it */
  gboolean removed;
};

/* The names rok writes in a work folder: the marker (and the temporaries of
 * versions that wrote it with g_file_set_contents) and the data files. */
static gboolean is_marker(const char *name) {
  return g_str_equal(name, MARKER) || g_str_has_prefix(name, MARKER ".");
}
static gboolean is_ours(const char *name) {
  return is_marker(name) || g_str_equal(name, "data") || g_str_has_prefix(name, "data.");
}

/* rok-XXXXXX as made below (and as g_mkdtemp() made it before). */
static gboolean is_workdir_name(const char *name) {
  if (!g_str_has_prefix(name, "rok-") || strlen(name) != 10)
    return FALSE;
  for (const char *p = name + 4; *p != '\0'; p++)
    if (!g_ascii_isalnum(*p))
      return FALSE;
  return TRUE;
}

static gboolean same_file(int dirfd, const char *name, dev_t dev, ino_t ino) {
  struct stat st;
  return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* The entries of the folder FD (sorted), NULL when it cannot be read. */
static GPtrArray *entries(int fd) {
  int copy = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
  if (d == NULL) {
    if (copy >= 0)
      close(copy);
    return NULL;
  }
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (!g_str_equal(e->d_name, ".") && !g_str_equal(e->d_name, ".."))
      g_ptr_array_add(names, g_strdup(e->d_name));
  closedir(d);
  return names;
}

/* The folders of this process that exist, for rok_workdir_remove_all(). */
static GMutex live_lock;
static GPtrArray *live;

static const char *not_ours_hint(int err) {
  return err == ENOTEMPTY ? " (it holds files rok did not write)" : "";
}

/* ---- making ---- */

/* mkdtemp relative to a handle: rok- and six random letters or digits. */
static char *make_folder(int parent) {
  static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (int attempt = 0; attempt < 1000; attempt++) {
    char name[11] = "rok-";
    for (int i = 4; i < 10; i++)
      name[i] = letters[g_random_int_range(0, (gint32)sizeof letters - 1)];
    name[10] = '\0';
    if (mkdirat(parent, name, 0700) == 0)
      return g_strdup(name);
    if (errno != EEXIST)
      return NULL;
  }
  errno = EEXIST;
  return NULL;
}

static void remember(RokWorkdir *w, const char *name, int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return; /* then it is not removed: left, rather than someone else's removed */
  Made m = {g_strdup(name), st.st_dev, st.st_ino};
  g_array_append_val(w->made, m);
}

static gboolean write_marker(RokWorkdir *w, GError **error) {
  RokOwner self;
  storage_owner_self(&self);
  g_autofree char *text = storage_owner_to_text(&self);
  storage_owner_clear(&self);
  int fd = openat(w->fd, MARKER, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  gsize length = strlen(text);
  gboolean ok = fd >= 0 && write(fd, text, length) == (ssize_t)length;
  int saved = errno;
  if (fd >= 0) {
    remember(w, MARKER, fd);
    ok = close(fd) == 0 && ok;
  }
  if (!ok)
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot write %s/%s: %s", w->path, MARKER,
                g_strerror(saved ? saved : EIO));
  return ok;
}

static void made_clear(gpointer data) {
  g_free(((Made *)data)->name);
}

RokWorkdir *rok_workdir_new(const char *dir, GError **error) {
  RokWorkdir *w = g_new0(RokWorkdir, 1);
  w->parent = w->fd = -1;
  w->made = g_array_new(FALSE, FALSE, sizeof(Made));
  g_array_set_clear_func(w->made, made_clear);
  w->parent = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  w->name = w->parent >= 0 ? make_folder(w->parent) : NULL;
  if (w->name == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot create a work folder in %s: %s", dir, g_strerror(errno));
    w->removed = TRUE;
    rok_workdir_free(w);
    return NULL;
  }
  w->path = g_build_filename(dir, w->name, NULL);
  w->fd = openat(w->parent, w->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (w->fd < 0 || fstat(w->fd, &st) != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot open work folder %s: %s", w->path, g_strerror(errno));
    unlinkat(w->parent, w->name, AT_REMOVEDIR); /* empty: nothing but it is lost */
    w->removed = TRUE;
    rok_workdir_free(w);
    return NULL;
  }
  w->dev = st.st_dev;
  w->ino = st.st_ino;
  if (!write_marker(w, error)) {
    rok_workdir_free(w); /* removes what was made */
    return NULL;
  }
  g_mutex_lock(&live_lock);
  if (live == NULL)
    live = g_ptr_array_new();
  g_ptr_array_add(live, w);
  g_mutex_unlock(&live_lock);
  return w;
}

const char *rok_workdir_path(const RokWorkdir *w) {
  return w->path;
}

char *rok_workdir_file(const RokWorkdir *w, const char *name) {
  g_return_val_if_fail(is_ours(name) && !is_marker(name), NULL);
  return g_build_filename(w->path, name, NULL);
}

gboolean rok_workdir_create_file(RokWorkdir *w, const char *name, RokFault *fault, RokIoFile *file,
                                 GError **error) {
  g_return_val_if_fail(is_ours(name) && !is_marker(name), FALSE);
  g_autofree char *shown = g_build_filename(w->path, name, NULL);
  if (!storage_file_create_at(w->fd, name, shown, fault, file, error))
    return FALSE;
  remember(w, name, file->fd);
  return TRUE;
}

/* ---- removing ---- */

/* The folder's entry in its parent, removed once empty: where it was made
 * if it is still there (the parent held open follows a renamed parent),
 * else wherever the handle says it went now. */
static int remove_entry(RokWorkdir *w) {
  if (same_file(w->parent, w->name, w->dev, w->ino))
    return unlinkat(w->parent, w->name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : errno;
  g_autofree char *link = g_strdup_printf("/proc/self/fd/%d", w->fd);
  g_autofree char *now = g_file_read_link(link, NULL);
  struct stat st;
  if (now != NULL && g_path_is_absolute(now) && lstat(now, &st) == 0 && st.st_dev == w->dev && st.st_ino == w->ino)
    return rmdir(now) == 0 ? 0 : errno;
  return ENOENT; /* moved where it cannot be found: its files are gone, the empty folder stays */
}

/* Removes what rok made in the folder (checked by inode), then the folder.
 * Anything else in it keeps the marker and the folder. */
static int remove_made(RokWorkdir *w) {
  for (guint i = w->made->len; i-- > 1;) { /* files first, the marker (0) last */
    Made *m = &g_array_index(w->made, Made, i);
    if (same_file(w->fd, m->name, m->dev, m->ino) && unlinkat(w->fd, m->name, 0) != 0 && errno != ENOENT)
      return errno;
  }
  g_autoptr(GPtrArray) left = entries(w->fd);
  if (left == NULL)
    return errno;
  if (left->len > 1 || (left->len == 1 && !g_str_equal(g_ptr_array_index(left, 0), MARKER)))
    return ENOTEMPTY;
  if (w->made->len > 0) {
    Made *m = &g_array_index(w->made, Made, 0);
    if (same_file(w->fd, m->name, m->dev, m->ino) && unlinkat(w->fd, m->name, 0) != 0 && errno != ENOENT)
      return errno;
  }
  return remove_entry(w);
}

gboolean rok_workdir_remove(RokWorkdir *w, GError **error) {
  g_mutex_lock(&live_lock);
  int err = w->removed ? 0 : remove_made(w);
  w->removed = w->removed || err == 0;
  g_mutex_unlock(&live_lock);
  if (err != 0) {
    g_autofree char *link = g_strdup_printf("/proc/self/fd/%d", w->fd);
    g_autofree char *now = g_file_read_link(link, NULL);
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot remove work folder %s: %s%s", now ? now : w->path,
                err == ENOENT ? "it was moved away (its files are removed)" : g_strerror(err), not_ours_hint(err));
    return FALSE;
  }
  return TRUE;
}

void rok_workdir_remove_all(void) {
  g_mutex_lock(&live_lock);
  for (guint i = 0; live != NULL && i < live->len; i++) {
    RokWorkdir *w = g_ptr_array_index(live, i);
    if (!w->removed && remove_made(w) == 0)
      w->removed = TRUE;
  }
  g_mutex_unlock(&live_lock);
}

void rok_workdir_free(RokWorkdir *w) {
  if (w == NULL)
    return;
  g_autoptr(GError) error = NULL;
  if (!rok_workdir_remove(w, &error))
    g_warning("%s", error->message);
  g_mutex_lock(&live_lock);
  if (live != NULL)
    g_ptr_array_remove_fast(live, w);
  g_mutex_unlock(&live_lock);
  if (w->fd >= 0)
    close(w->fd);
  if (w->parent >= 0)
    close(w->parent);
  g_array_unref(w->made);
  g_free(w->path);
  g_free(w->name);
  g_free(w);
}

int rok_workdir_fd(const RokWorkdir *w) {
  return w->fd;
}

/* ---- sweeping what killed runs left ---- */

/* The marker of the folder FD, read through the handle (no link followed). */
static char *read_marker(int fd) {
  int m = openat(fd, MARKER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (m < 0)
    return NULL;
  struct stat st;
  char *text = NULL;
  if (fstat(m, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < MARKER_MAX) {
    text = g_malloc0(MARKER_MAX);
    ssize_t n = read(m, text, MARKER_MAX - 1);
    if (n <= 0)
      g_clear_pointer(&text, g_free);
  }
  close(m);
  return text;
}

/* Whether the folder FD is a stale work folder of SELF; WHY says why. An
 * empty folder of this user, untouched for EMPTY_GRACE_S, is stale too. */
static gboolean is_stale(int fd, const struct stat *st, GPtrArray *names, const RokOwner *self, char **why) {
  if (names->len == 0) {
    if (time(NULL) - st->st_mtime < EMPTY_GRACE_S)
      return FALSE;
    *why = g_strdup("empty: left by a run killed while making or removing it");
    return TRUE;
  }
  g_autofree char *text = read_marker(fd);
  RokOwner owner;
  if (text == NULL || !storage_owner_parse(text, &owner))
    return FALSE;
  RokOwnerState state = storage_owner_state(&owner, self, why);
  storage_owner_clear(&owner);
  return state == ROK_OWNER_GONE;
}

/* Removes a stale folder's marker and data files, then it: all or nothing,
 * so a look-alike holding anything else loses nothing. */
static int remove_stale(int dirfd, const char *name, int fd, const struct stat *st, GPtrArray *names) {
  for (guint i = 0; i < names->len; i++) {
    struct stat f;
    const char *n = g_ptr_array_index(names, i);
    if (!is_ours(n) || fstatat(fd, n, &f, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(f.st_mode))
      return ENOTEMPTY;
  }
  for (int markers = 0; markers < 2; markers++)
    for (guint i = 0; i < names->len; i++) {
      const char *n = g_ptr_array_index(names, i);
      if (is_marker(n) == markers && unlinkat(fd, n, 0) != 0 && errno != ENOENT)
        return errno;
    }
  if (!same_file(dirfd, name, st->st_dev, st->st_ino))
    return ENOENT;
  return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 ? 0 : errno;
}

/* One name of DIR: a note when it was a stale folder; 1 when removed. */
static guint sweep_one(int dirfd, const char *dir, const char *name, const RokOwner *self, GPtrArray *notes) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct stat st;
  g_autoptr(GPtrArray) names = fstat(fd, &st) == 0 && st.st_uid == self->uid ? entries(fd) : NULL;
  g_autofree char *why = NULL;
  guint removed = 0;
  if (names != NULL && is_stale(fd, &st, names, self, &why)) {
    int err = remove_stale(dirfd, name, fd, &st, names);
    g_autofree char *path = g_build_filename(dir, name, NULL);
    removed = err == 0;
    g_ptr_array_add(notes, err == 0 ? g_strdup_printf("removed stale work folder %s (%s)", path, why)
                                    : g_strdup_printf("could not remove stale work folder %s (%s): %s%s", path,
                                                      why, g_strerror(err), not_ours_hint(err)));
  }
  close(fd);
  return removed;
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

guint rok_workdir_sweep(const char *dir, GPtrArray *notes) {
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return 0;
  g_autoptr(GPtrArray) all = entries(dirfd);
  guint removed = 0;
  if (all != NULL) {
    /* Sorted, so that the notes come out the same way every time. */
    g_ptr_array_sort(all, compare_names);
    RokOwner self;
    storage_owner_self(&self);
    for (guint i = 0; i < all->len; i++)
      if (is_workdir_name(g_ptr_array_index(all, i)))
        removed += sweep_one(dirfd, dir, g_ptr_array_index(all, i), &self, notes);
    storage_owner_clear(&self);
  }
  close(dirfd);
  return removed;
}
