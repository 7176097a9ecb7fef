/* Work folders: creation with an owner marker, removal of exactly what rok
 * writes, and the sweep of folders left by killed runs. */
#define _GNU_SOURCE /* O_DIRECTORY, O_NOFOLLOW, fstatat flags */
#include "rok/storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "owner.h"
#include "rok/core.h"

#define MARKER "rok-owner"

struct _RokWorkdir {
  char *path;
  gboolean removed;
};

/* The names rok writes in a work folder: the marker (and the temporary
 * g_file_set_contents() renames onto it) and the data files. */
static gboolean is_marker(const char *name) {
  return g_str_equal(name, MARKER) || g_str_has_prefix(name, MARKER ".");
}
static gboolean is_ours(const char *name) {
  return is_marker(name) || g_str_equal(name, "data") || g_str_has_prefix(name, "data.");
}

/* rok-XXXXXX as g_mkdtemp() makes it. */
static gboolean is_workdir_name(const char *name) {
  if (!g_str_has_prefix(name, "rok-") || strlen(name) != 10)
    return FALSE;
  for (const char *p = name + 4; *p != '\0'; p++)
    if (!g_ascii_isalnum(*p))
      return FALSE;
  return TRUE;
}

/* Unlinks our regular files in the folder DIRFD: the data files when not
 * MARKERS, else the markers. Returns 0, the first errno, or ENOTEMPTY when
 * the data pass meets anything rok does not write (then the markers stay,
 * and with them the record of whose folder it is). */
static int unlink_ours(int dirfd, gboolean markers) {
  DIR *d = fdopendir(dup(dirfd));
  if (d == NULL)
    return errno;
  rewinddir(d); /* the dup shares its position with DIRFD and earlier passes */
  int err = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (g_str_equal(e->d_name, ".") || g_str_equal(e->d_name, ".."))
      continue;
    gboolean regular = fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    if (!regular || !is_ours(e->d_name)) {
      err = err != 0 ? err : ENOTEMPTY;
      continue;
    }
    if (is_marker(e->d_name) != markers)
      continue;
    if (unlinkat(dirfd, e->d_name, 0) != 0 && errno != ENOENT && err == 0)
      err = errno;
  }
  closedir(d);
  return err;
}

/* Removes PATH's data files, its marker and PATH; 0 or an errno
 * (ENOTEMPTY: it holds something rok did not write). */
static int remove_folder(const char *path) {
  int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd < 0)
    return errno == ENOENT ? 0 : errno;
  int err = unlink_ours(dirfd, FALSE);
  if (err == 0)
    err = unlink_ours(dirfd, TRUE);
  close(dirfd);
  if (err == 0 && rmdir(path) != 0 && errno != ENOENT)
    err = errno;
  return err;
}

static const char *not_ours_hint(int err) {
  return err == ENOTEMPTY ? " (it holds files rok did not write)" : "";
}

RokWorkdir *rok_workdir_new(const char *dir, GError **error) {
  g_autofree char *path = g_build_filename(dir, "rok-XXXXXX", NULL);
  if (g_mkdtemp_full(path, 0700) == NULL) {
    int e = errno;
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot create a work folder in %s: %s", dir,
                g_strerror(e));
    return NULL;
  }
  RokOwner self;
  storage_owner_self(&self);
  g_autofree char *text = storage_owner_to_text(&self);
  storage_owner_clear(&self);
  g_autofree char *marker = g_build_filename(path, MARKER, NULL);
  GError *write_error = NULL;
  if (!g_file_set_contents_full(marker, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600,
                                &write_error)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "%s", write_error->message);
    g_error_free(write_error);
    remove_folder(path);
    return NULL;
  }
  RokWorkdir *w = g_new0(RokWorkdir, 1);
  w->path = g_steal_pointer(&path);
  return w;
}

const char *rok_workdir_path(const RokWorkdir *w) { return w->path; }

char *rok_workdir_file(const RokWorkdir *w, const char *name) {
  g_return_val_if_fail(is_ours(name) && !is_marker(name), NULL);
  return g_build_filename(w->path, name, NULL);
}

gboolean rok_workdir_remove(RokWorkdir *w, GError **error) {
  if (w->removed)
    return TRUE;
  int err = remove_folder(w->path);
  if (err != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot remove work folder %s: %s%s", w->path,
                g_strerror(err), not_ours_hint(err));
    return FALSE;
  }
  w->removed = TRUE;
  return TRUE;
}

void rok_workdir_free(RokWorkdir *w) {
  if (w == NULL)
    return;
  g_autoptr(GError) error = NULL;
  if (!rok_workdir_remove(w, &error))
    g_warning("%s", error->message);
  g_free(w->path);
  g_free(w);
}

/* Whether PATH is a stale work folder; WHY says why it is. */
static gboolean is_stale(const char *path, const RokOwner *self, char **why) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != self->uid)
    return FALSE;
  g_autofree char *marker = g_build_filename(path, MARKER, NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents(marker, &text, NULL, NULL))
    return FALSE;
  RokOwner owner;
  if (!storage_owner_parse(text, &owner))
    return FALSE;
  RokOwnerState state = storage_owner_state(&owner, self, why);
  storage_owner_clear(&owner);
  return state == ROK_OWNER_GONE;
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

guint rok_workdir_sweep(const char *dir, GPtrArray *notes) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  if (d == NULL)
    return 0;
  RokOwner self;
  storage_owner_self(&self);
  /* Sorted, so that the notes come out the same way every time. */
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  for (const char *name; (name = g_dir_read_name(d)) != NULL;)
    if (is_workdir_name(name))
      g_ptr_array_add(names, g_strdup(name));
  g_ptr_array_sort(names, compare_names);
  guint removed = 0;
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename(dir, names->pdata[i], NULL);
    g_autofree char *why = NULL;
    if (!is_stale(path, &self, &why))
      continue;
    int err = remove_folder(path);
    if (err == 0)
      removed++;
    g_ptr_array_add(notes, err == 0 ? g_strdup_printf("removed stale work folder %s (%s)", path, why)
                                    : g_strdup_printf("could not remove stale work folder %s (%s): %s%s",
                                                      path, why, g_strerror(err), not_ours_hint(err)));
  }
  storage_owner_clear(&self);
  return removed;
}
