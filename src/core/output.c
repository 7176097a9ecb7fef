/* Output files and folders: the one place rok writes what the user asked for.
 *
 * A regular file (or a name that does not exist yet) is written as a
 * temporary file beside it and renamed over it, so a reader never sees half
 * of it. Anything else at the path is never replaced: a character device or
 * a FIFO is written through, like a shell's `>`; a directory, a block
 * device or a socket is refused. A symbolic link is followed to what it
 * names (refused when that does not exist).
 *
 * Every temporary file and folder is listed here while it exists, so that
 * rok_output_discard_all() (called on SIGINT/SIGTERM/SIGHUP) can remove
 * them; the swap of a folder holds the same lock, so a signal lands before
 * or after it, never in the middle. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output-private.h"
#include "rok/core.h"

struct _RokOutput {
  char *path;   /* as the caller named it, for messages */
  char *target; /* what is replaced; NULL when written through */
  char *temp;   /* the temporary file, NULL when written through */
  int fd;
  gboolean existed;
};

/* ---- the list of temporaries ---- */

static GMutex lock;
static GPtrArray *live; /* char *: temporary files and folders; folders end in '/' */
static gboolean discarded;

void output_lock(void) {
  g_mutex_lock(&lock);
}

void output_unlock(void) {
  g_mutex_unlock(&lock);
}

gboolean output_discarded_locked(void) {
  return discarded;
}

void output_live_add_locked(const char *path) {
  if (live == NULL)
    live = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(live, g_strdup(path));
}

void output_live_remove_locked(const char *path) {
  for (guint i = 0; live != NULL && i < live->len; i++)
    if (g_str_equal(g_ptr_array_index(live, i), path)) {
      g_ptr_array_remove_index_fast(live, i);
      return;
    }
}

/* rok writes no subfolders in a temporary folder: its files, then it. */
void output_remove_folder(const char *folder) {
  int dfd = open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (d == NULL && dfd >= 0)
    close(dfd);
  if (d != NULL) {
    for (struct dirent *e; (e = readdir(d)) != NULL;)
      if (!g_str_equal(e->d_name, ".") && !g_str_equal(e->d_name, ".."))
        unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
  }
  g_rmdir(folder);
}

void rok_output_discard_all(void) {
  g_mutex_lock(&lock);
  discarded = TRUE;
  /* Files first: some lie in the folders. */
  for (int pass = 0; pass < 2 && live != NULL; pass++)
    for (guint i = 0; i < live->len; i++) {
      const char *p = g_ptr_array_index(live, i);
      gboolean folder = g_str_has_suffix(p, "/");
      if (pass == 0 && !folder)
        g_unlink(p);
      else if (pass == 1 && folder)
        output_remove_folder(p);
    }
  if (live != NULL)
    g_ptr_array_set_size(live, 0);
  g_mutex_unlock(&lock);
}

/* ---- one file ---- */

static void io_error(GError **error, const char *path, const char *what, int saved_errno) {
  g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot write %s: %s%s", path, what ? what : "",
              what ? "" : g_strerror(saved_errno));
}

/* What `path` leads to, through symbolic links; NULL when a link leads
 * nowhere. */
static char *follow(const char *path, GError **error) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
    return g_strdup(path);
  char *real = realpath(path, NULL);
  if (real == NULL) {
    io_error(error, path, "it is a symbolic link to nothing that exists (not replaced)", 0);
    return NULL;
  }
  char *copy = g_strdup(real);
  free(real);
  return copy;
}

/* Opens a special file to write through; refuses what must not be written. */
static int open_through(const char *path, const struct stat *st, GError **error) {
  if (S_ISDIR(st->st_mode)) {
    io_error(error, path, "it is a directory", 0);
    return -1;
  }
  if (!S_ISCHR(st->st_mode) && !S_ISFIFO(st->st_mode)) {
    io_error(error, path, S_ISBLK(st->st_mode) ? "it is a block device (not written, not replaced)"
                                                : "it is not a regular file, a character device or a FIFO",
             0);
    return -1;
  }
  /* Non-blocking, so that a FIFO nobody reads is an error, not a hang. */
  int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    io_error(error, path, errno == ENXIO ? "no process reads it" : NULL, errno);
    return -1;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    io_error(error, path, NULL, errno);
    close(fd);
    return -1;
  }
  return fd;
}

RokOutput *rok_output_open(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL && *path != '\0', NULL);
  g_autofree char *target = follow(path, error);
  if (target == NULL)
    return NULL;
  RokOutput *out = g_new0(RokOutput, 1);
  out->path = g_strdup(path);
  out->fd = -1;
  struct stat st;
  int found = stat(target, &st);
  if (found == 0 && !S_ISREG(st.st_mode)) {
    out->fd = open_through(path, &st, error);
    if (out->fd < 0) {
      rok_output_discard(out);
      return NULL;
    }
    return out;
  }
  out->existed = found == 0;
  g_autofree char *dir = g_path_get_dirname(target), *base = g_path_get_basename(target);
  out->temp = g_strdup_printf("%s/.%s.XXXXXX", dir, base);
  out->target = g_steal_pointer(&target);
  g_mutex_lock(&lock); /* so that a signal finds it listed as soon as it exists */
  out->fd = discarded ? -1 : g_mkstemp_full(out->temp, O_WRONLY | O_CLOEXEC, 0666);
  int saved = discarded ? EINTR : errno;
  if (out->fd >= 0)
    output_live_add_locked(out->temp);
  g_mutex_unlock(&lock);
  if (out->fd < 0) {
    io_error(error, path, NULL, saved);
    g_clear_pointer(&out->temp, g_free);
    rok_output_discard(out);
    return NULL;
  }
  if (out->existed && S_ISREG(st.st_mode))
    (void)fchmod(out->fd, st.st_mode & 07777); /* keep the replaced file's permissions */
  return out;
}

int rok_output_fd(const RokOutput *out) {
  return out->fd;
}

const char *rok_output_path(const RokOutput *out) {
  return out->path;
}

gboolean rok_output_write(RokOutput *out, const void *data, gsize length, GError **error) {
  const guint8 *p = data;
  while (length > 0) {
    ssize_t n = write(out->fd, p, MIN(length, (gsize)1 << 30));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      io_error(error, out->path, NULL, n < 0 ? errno : EIO);
      return FALSE;
    }
    p += n;
    length -= (gsize)n;
  }
  return TRUE;
}

gboolean rok_output_commit(RokOutput *out, GError **error) {
  gboolean ok = TRUE;
  /* Synced before the rename replaces a file, so a crash leaves the old
   * contents or the new, never an empty file. */
  if (out->temp != NULL && out->existed && fsync(out->fd) != 0) {
    io_error(error, out->path, NULL, errno);
    ok = FALSE;
  }
  int fd = out->fd;
  out->fd = -1;
  if (close(fd) != 0 && ok) {
    io_error(error, out->path, NULL, errno);
    ok = FALSE;
  }
  if (ok && out->temp != NULL) {
    g_mutex_lock(&lock);
    if (discarded) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_CANCELLED, "%s: not written: interrupted", out->path);
      ok = FALSE;
    } else if (rename(out->temp, out->target) != 0) {
      io_error(error, out->path, NULL, errno);
      ok = FALSE;
    } else {
      output_live_remove_locked(out->temp);
      g_clear_pointer(&out->temp, g_free);
    }
    g_mutex_unlock(&lock);
  }
  rok_output_discard(out);
  return ok;
}

void rok_output_discard(RokOutput *out) {
  if (out == NULL)
    return;
  if (out->fd >= 0)
    close(out->fd);
  if (out->temp != NULL) {
    g_mutex_lock(&lock);
    g_unlink(out->temp);
    output_live_remove_locked(out->temp);
    g_mutex_unlock(&lock);
  }
  g_free(out->path);
  g_free(out->target);
  g_free(out->temp);
  g_free(out);
}

gboolean rok_file_write(const char *path, const void *data, gsize length, GError **error) {
  RokOutput *out = rok_output_open(path, error);
  if (out == NULL)
    return FALSE;
  if (!rok_output_write(out, data, length, error)) {
    rok_output_discard(out);
    return FALSE;
  }
  return rok_output_commit(out, error);
}
