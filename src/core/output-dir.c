/* An output folder (`-o DIR`), all or nothing.
 *
 * The files are written into a fresh temporary folder beside DIR (inside
 * DIR when DIR is a mount point, so that renames stay on one file system).
 * When every file is written they are put in place: a DIR that did not
 * exist is the temporary folder renamed; otherwise each of DIR's files of
 * the same name is moved into the temporary folder and the new one moved
 * in, and when one move fails those made are undone. Files of DIR that rok
 * did not write stay; a name of DIR that is not a regular file is refused
 * before anything moves. The swap holds the output lock, so a signal
 * handled by rok_output_discard_all() lands before or after it. */
#include <dirent.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output-private.h"
#include "rok/core.h"

struct _RokOutputDir {
  char *dir;       /* as named, for messages */
  char *real;      /* DIR through symbolic links */
  char *temp;      /* where the files are written; listed with a final '/' */
  gboolean exists; /* DIR existed: files move one by one */
};

static void dir_error(GError **error, const char *path, const char *what, int saved_errno) {
  g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot write %s: %s", path, what ? what : g_strerror(saved_errno));
}

/* Beside DIR, or in it when DIR is on another file system than its parent. */
static char *temp_template(const char *real, gboolean exists) {
  g_autofree char *parent = g_path_get_dirname(real), *base = g_path_get_basename(real);
  struct stat sp, sd;
  if (exists && (stat(parent, &sp) != 0 || stat(real, &sd) != 0 || sp.st_dev != sd.st_dev))
    return g_build_filename(real, ".rok-new-XXXXXX", NULL);
  return g_strdup_printf("%s/.%s.rok-new-XXXXXX", parent, base);
}

static char *resolve(const char *dir) {
  char *resolved = realpath(dir, NULL);
  char *copy = g_strdup(resolved != NULL ? resolved : dir);
  free(resolved);
  return copy;
}

RokOutputDir *rok_output_dir_begin(const char *dir, GError **error) {
  g_return_val_if_fail(dir != NULL && *dir != '\0', NULL);
  struct stat st;
  gboolean exists = stat(dir, &st) == 0;
  if (!exists && lstat(dir, &st) == 0) {
    dir_error(error, dir, "it is a symbolic link to nothing that exists (not replaced)", 0);
    return NULL;
  }
  if (exists && !S_ISDIR(st.st_mode)) {
    dir_error(error, dir, "it exists and is not a directory", 0);
    return NULL;
  }
  g_autofree char *real = exists ? resolve(dir) : g_strdup(dir);
  g_autofree char *parent = g_path_get_dirname(real);
  if (!exists && g_mkdir_with_parents(parent, 0777) != 0) {
    dir_error(error, dir, NULL, errno);
    return NULL;
  }
  g_autofree char *temp = temp_template(real, exists);
  output_lock();
  gboolean made = !output_discarded_locked() && g_mkdtemp_full(temp, 0777) != NULL;
  int saved = errno;
  g_autofree char *listed = made ? g_strconcat(temp, "/", NULL) : NULL;
  if (made)
    output_live_add_locked(listed);
  output_unlock();
  if (!made) {
    dir_error(error, dir, NULL, saved);
    return NULL;
  }
  RokOutputDir *d = g_new0(RokOutputDir, 1);
  d->dir = g_strdup(dir);
  d->real = g_steal_pointer(&real);
  d->temp = g_steal_pointer(&temp);
  d->exists = exists;
  return d;
}

const char *rok_output_dir_path(const RokOutputDir *d) {
  return d->temp;
}

static gint by_name(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names written, sorted (so that a refusal is the same every run). */
static GPtrArray *written_names(const char *temp) {
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GDir) dir = g_dir_open(temp, 0, NULL);
  for (const char *name; dir != NULL && (name = g_dir_read_name(dir)) != NULL;)
    g_ptr_array_add(names, g_strdup(name));
  g_ptr_array_sort(names, by_name);
  return names;
}

/* Every name to replace must be absent or a regular file: checked before
 * anything moves. */
static gboolean check_targets(const RokOutputDir *d, GPtrArray *names, GError **error) {
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *to = g_build_filename(d->real, g_ptr_array_index(names, i), NULL);
    struct stat st;
    if (lstat(to, &st) == 0 && !S_ISREG(st.st_mode)) {
      g_autofree char *shown = g_build_filename(d->dir, g_ptr_array_index(names, i), NULL);
      dir_error(error, shown, "it exists and is not a regular file (nothing in the folder changed)", 0);
      return FALSE;
    }
  }
  return TRUE;
}

/* Old file i (if any) to temp/.old.NAME, new file i into place. */
static gboolean move_one(const RokOutputDir *d, const char *name, gboolean *had_old) {
  g_autofree char *from = g_build_filename(d->temp, name, NULL), *to = g_build_filename(d->real, name, NULL);
  g_autofree char *old_name = g_strconcat(".old.", name, NULL);
  g_autofree char *old = g_build_filename(d->temp, old_name, NULL);
  *had_old = rename(to, old) == 0;
  if (!*had_old && errno != ENOENT)
    return FALSE;
  if (rename(from, to) == 0)
    return TRUE;
  int saved = errno;
  if (*had_old)
    (void)rename(old, to);
  errno = saved;
  return FALSE;
}

static void undo_one(const RokOutputDir *d, const char *name, gboolean had_old) {
  g_autofree char *from = g_build_filename(d->temp, name, NULL), *to = g_build_filename(d->real, name, NULL);
  g_autofree char *old_name = g_strconcat(".old.", name, NULL);
  g_autofree char *old = g_build_filename(d->temp, old_name, NULL);
  (void)rename(to, from);
  if (had_old)
    (void)rename(old, to);
}

/* With the lock held. */
static gboolean swap_in(const RokOutputDir *d, GError **error) {
  g_autoptr(GPtrArray) names = written_names(d->temp);
  if (!check_targets(d, names, error))
    return FALSE;
  g_autofree gboolean *had_old = g_new0(gboolean, names->len + 1);
  for (guint i = 0; i < names->len; i++) {
    if (move_one(d, g_ptr_array_index(names, i), &had_old[i]))
      continue;
    g_autofree char *shown = g_build_filename(d->dir, g_ptr_array_index(names, i), NULL);
    dir_error(error, shown, NULL, errno);
    while (i-- > 0)
      undo_one(d, g_ptr_array_index(names, i), had_old[i]);
    return FALSE;
  }
  return TRUE;
}

gboolean rok_output_dir_commit(RokOutputDir *d, GError **error) {
  output_lock();
  gboolean ok;
  if (output_discarded_locked()) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_CANCELLED, "%s: not written: interrupted", d->dir);
    ok = FALSE;
  } else if (!d->exists && rename(d->temp, d->real) == 0) {
    g_clear_pointer(&d->temp, g_free); /* it is DIR now */
    ok = TRUE;
  } else {
    /* DIR appeared meanwhile (rename refuses a folder with files in it). */
    ok = (d->exists || errno == ENOTEMPTY || errno == EEXIST) ? swap_in(d, error) : FALSE;
    if (!ok && error != NULL && *error == NULL)
      dir_error(error, d->dir, NULL, errno);
  }
  output_unlock();
  rok_output_dir_discard(d); /* the old files, or the new ones that did not go in */
  return ok;
}

void rok_output_dir_discard(RokOutputDir *d) {
  if (d == NULL)
    return;
  if (d->temp != NULL) {
    g_autofree char *listed = g_strconcat(d->temp, "/", NULL);
    output_lock();
    output_remove_folder(d->temp);
    output_live_remove_locked(listed);
    output_unlock();
  }
  g_free(d->dir);
  g_free(d->real);
  g_free(d->temp);
  g_free(d);
}
