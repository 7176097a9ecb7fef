/* Turning SIGINT, SIGTERM and SIGHUP into an orderly cancellation.
 *
 * No signal handler runs at all: rok_signal_watch_new() blocks the signals
 * in the calling thread, and a dedicated thread reads them from a signalfd
 * and calls FUNC there, in an ordinary thread context, where it may take
 * locks and call anything (typically: rok_staging_cancel(),
 * rok_store_cancel(), and a flag the executor polls). The executor then
 * unwinds as for any error: drains I/O, frees the store, which removes the
 * work folders, and exits non-zero (ROK_ERROR_CANCELLED).
 *
 * Threads inherit the signal mask they are created with, so create the
 * watch in the main thread before any other thread starts (OpenCL runtimes
 * and I/O backends start threads): then no thread can take the signal in
 * its default, process-killing way. A second signal while the first is
 * being handled restores the default action and re-raises it: a user who
 * presses Ctrl-C twice gets an immediate exit; folders left behind by that
 * are swept by the next run (workdir.h). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _RokSignalWatch RokSignalWatch;
typedef void (*RokSignalFunc)(int signo, gpointer user_data);

/* ROK_ERROR_IO if the signalfd cannot be made. */
RokSignalWatch *rok_signal_watch_new(RokSignalFunc func, gpointer user_data, GError **error);
/* Stops the watching thread and restores the calling thread's signal mask
 * (call it from the thread that created the watch). */
void rok_signal_watch_free(RokSignalWatch *watch);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSignalWatch, rok_signal_watch_free)

/* The first signal received, 0 if none. */
int rok_signal_watch_received(RokSignalWatch *watch);

G_END_DECLS
