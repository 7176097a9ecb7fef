/* Free space per file system, with directories on the same one summed. */
#include "rok/storage.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "rok/core.h"

gboolean rok_space_available(const char *dir, guint64 *bytes) {
  struct statvfs vfs;
  if (statvfs(dir, &vfs) != 0)
    return FALSE;
  *bytes = (guint64)vfs.f_bavail * vfs.f_frsize;
  return TRUE;
}

typedef struct {
  dev_t dev;
  GString *names;   /* the directories on it, for the message */
  guint64 need;
  guint64 avail;
} FileSystem;

/* Groups the directories by file system (st_dev) in the order given. */
static GArray *group(const char *const *dirs, const guint64 *need, guint n, GError **error) {
  g_autoptr(GArray) fss = g_array_new(FALSE, TRUE, sizeof(FileSystem));
  for (guint i = 0; i < n; i++) {
    struct stat st;
    guint64 avail = 0;
    if (stat(dirs[i], &st) != 0 || !rok_space_available(dirs[i], &avail)) {
      int e = errno;
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: %s", dirs[i], g_strerror(e));
      for (guint k = 0; k < fss->len; k++)
        g_string_free(g_array_index(fss, FileSystem, k).names, TRUE);
      return NULL;
    }
    guint k = 0;
    while (k < fss->len && g_array_index(fss, FileSystem, k).dev != st.st_dev)
      k++;
    if (k == fss->len) {
      FileSystem fs = { .dev = st.st_dev, .names = g_string_new(dirs[i]), .avail = avail };
      g_array_append_val(fss, fs);
    } else {
      g_string_append_printf(g_array_index(fss, FileSystem, k).names, " + %s", dirs[i]);
    }
    g_array_index(fss, FileSystem, k).need += need[i];
  }
  return g_steal_pointer(&fss);
}

gboolean rok_space_check(const char *const *dirs, const guint64 *need, guint n_dirs,
                         GError **error) {
  g_autoptr(GArray) fss = group(dirs, need, n_dirs, error);
  if (fss == NULL)
    return FALSE;
  g_autoptr(GString) msg = g_string_new(NULL);
  for (guint k = 0; k < fss->len; k++) {
    FileSystem *fs = &g_array_index(fss, FileSystem, k);
    if (fs->need > fs->avail) {
      g_autofree char *need_text = rok_units_format_size(fs->need);
      g_autofree char *avail_text = rok_units_format_size(fs->avail);
      g_string_append_printf(msg, "%s%s needs %s, %s available", msg->len > 0 ? "; " : "",
                             fs->names->str, need_text, avail_text);
    }
    g_string_free(fs->names, TRUE);
  }
  if (msg->len > 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "not enough free space: %s", msg->str);
    return FALSE;
  }
  return TRUE;
}
