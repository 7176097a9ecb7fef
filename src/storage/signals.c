/* A thread that waits for SIGINT/SIGTERM/SIGHUP on a signalfd, next to an
 * eventfd that tells it to stop. */
#include "rok/storage.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "rok/core.h"

struct _RokSignalWatch {
  GMutex lock;     /* guards func and user_data */
  RokSignalFunc func;
  gpointer user_data;
  sigset_t set, old_mask;
  int sigfd, stopfd;
  GThread *thread;
  gint received; /* atomic */
};

/* Second signal: let it do what it would have done without us. */
static void die_by(int signo) {
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signo);
  signal(signo, SIG_DFL);
  /* Only this thread unblocks it, so it is delivered here, at once. */
  pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  raise(signo);
  _exit(128 + signo); /* not reached for the default actions of these three */
}

static gpointer watch(gpointer data) {
  RokSignalWatch *w = data;
  struct pollfd fds[2] = { { .fd = w->sigfd, .events = POLLIN }, { .fd = w->stopfd, .events = POLLIN } };
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      g_warning("signal watch: poll: %s", g_strerror(errno));
      return NULL;
    }
    if (fds[1].revents != 0)
      return NULL;
    struct signalfd_siginfo info;
    if (read(w->sigfd, &info, sizeof info) != (ssize_t)sizeof info)
      continue;
    int signo = (int)info.ssi_signo;
    if (!g_atomic_int_compare_and_exchange(&w->received, 0, signo))
      die_by(signo);
    /* Called under the lock: once rok_signal_watch_retarget() has
     * returned, the function it replaced is not running and will not run. */
    g_mutex_lock(&w->lock);
    w->func(signo, w->user_data);
    g_mutex_unlock(&w->lock);
  }
}

RokSignalWatch *rok_signal_watch_new(RokSignalFunc func, gpointer user_data, GError **error) {
  RokSignalWatch *w = g_new0(RokSignalWatch, 1);
  g_mutex_init(&w->lock);
  w->func = func;
  w->user_data = user_data;
  sigemptyset(&w->set);
  sigaddset(&w->set, SIGINT);
  sigaddset(&w->set, SIGTERM);
  sigaddset(&w->set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &w->set, &w->old_mask);
  w->sigfd = signalfd(-1, &w->set, SFD_CLOEXEC);
  w->stopfd = eventfd(0, EFD_CLOEXEC);
  if (w->sigfd < 0 || w->stopfd < 0) {
    int e = errno;
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot watch for signals: %s", g_strerror(e));
    rok_signal_watch_free(w);
    return NULL;
  }
  /* Not g_thread_new(), which aborts when no thread can be made
   * (RLIMIT_NPROC). */
  g_autoptr(GError) local = NULL;
  w->thread = g_thread_try_new("rok-signals", watch, w, &local);
  if (w->thread == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot watch for signals: %s", local->message);
    rok_signal_watch_free(w);
    return NULL;
  }
  return w;
}

void rok_signal_watch_free(RokSignalWatch *w) {
  if (w == NULL)
    return;
  if (w->thread != NULL) {
    guint64 one = 1;
    if (write(w->stopfd, &one, sizeof one) != (ssize_t)sizeof one)
      g_warning("signal watch: cannot stop: %s", g_strerror(errno));
    g_thread_join(w->thread);
  }
  if (w->sigfd >= 0)
    close(w->sigfd);
  if (w->stopfd >= 0)
    close(w->stopfd);
  pthread_sigmask(SIG_SETMASK, &w->old_mask, NULL);
  g_mutex_clear(&w->lock);
  g_free(w);
}

void rok_signal_watch_retarget(RokSignalWatch *w, RokSignalFunc func, gpointer user_data, RokSignalFunc *old_func,
                               gpointer *old_data) {
  g_mutex_lock(&w->lock);
  if (old_func != NULL)
    *old_func = w->func;
  if (old_data != NULL)
    *old_data = w->user_data;
  w->func = func;
  w->user_data = user_data;
  g_mutex_unlock(&w->lock);
}

int rok_signal_watch_received(RokSignalWatch *w) {
  return g_atomic_int_get(&w->received);
}
