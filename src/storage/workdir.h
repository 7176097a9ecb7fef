/* Work folders: the only places rok writes in a user's directory.
 *
 * Each run makes a fresh DIR/rok-XXXXXX (mode 0700) and writes an owner
 * marker into it first, DIR/rok-XXXXXX/rok-owner:
 *
 *   rok-workdir/1
 *   host=<host name>
 *   boot=<contents of /proc/sys/kernel/random/boot_id>
 *   pid=<process id>
 *   start=<process start time: field 22 of /proc/PID/stat, clock ticks since boot>
 *   uid=<user id>
 *   pidns=<pid namespace: the link /proc/self/ns/pid>
 *
 * The data files it holds are named "data" or "data.*". On success, error
 * and cancellation the folder is removed (rok_workdir_free). A run killed
 * with SIGKILL cannot clean up; the next run in the same directory sweeps:
 * a rok-XXXXXX folder is stale, and removed, only when it is a real
 * directory (not a link) of this user holding a marker that names this host
 * and this user and a process that is gone: another boot, or, in this pid
 * namespace, no such pid or the pid now belongs to a process started at
 * another time (the host name is taken to name one machine). Folders of
 * live rok processes, of other hosts, users and pid namespaces (containers
 * sharing a directory), and anything without a readable marker (a folder of
 * another program, or one whose marker was never written) are never
 * touched. Removal unlinks only the marker and data
 * files, relative to an open handle of the folder (no links followed), then
 * the folder; a folder holding anything else stays, with a note. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _RokWorkdir RokWorkdir;

/* Creates DIR/rok-XXXXXX with its marker. Errors (ROK_ERROR_IO) name DIR. */
RokWorkdir *rok_workdir_new(const char *dir, GError **error);
/* Removes the folder if rok_workdir_remove() has not (a warning if that
 * fails), then frees. */
void rok_workdir_free(RokWorkdir *workdir);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokWorkdir, rok_workdir_free)

const char *rok_workdir_path(const RokWorkdir *workdir);
/* The path of a file in the folder; NAME must be "data" or "data.*" so that
 * removal knows it. */
char *rok_workdir_file(const RokWorkdir *workdir, const char *name);

/* Removes the data files, the marker and the folder. A folder that cannot
 * be removed entirely is ROK_ERROR_IO naming it and what is left. */
gboolean rok_workdir_remove(RokWorkdir *workdir, GError **error);

/* Removes the stale work folders in DIR (see above) and returns how many.
 * Each removal, and each stale folder that could not be removed, adds a
 * line for the user to NOTES (a GPtrArray of strings owned by it). */
guint rok_workdir_sweep(const char *dir, GPtrArray *notes);

G_END_DECLS
