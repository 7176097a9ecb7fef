/* Free-space check before a run writes anything. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Checks that each file system holding some of DIRS has room for what is
 * meant to go there: NEED[i] bytes in DIRS[i]. Directories on one file
 * system add up. On a shortfall, ROK_ERROR_IO says, per file system, how
 * much is needed and how much is available:
 *   "not enough free space: /mnt/a needs 2.0 GiB, 1.2 GiB available"
 * A directory that cannot be examined is ROK_ERROR_INPUT naming it. */
gboolean rok_space_check(const char *const *dirs, const guint64 *need, guint n_dirs,
                         GError **error);

/* Bytes an unprivileged user may still write in DIR's file system
 * (statvfs f_bavail); FALSE with errno set when DIR cannot be examined. */
gboolean rok_space_available(const char *dir, guint64 *bytes);

G_END_DECLS
