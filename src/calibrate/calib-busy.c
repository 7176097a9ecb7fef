/* Processors kept busy at the lowest priority while the disks are timed.
 *
 * On a CPU device the kernels keep every processor busy while a step's SSD
 * legs run, and a virtual machine's disk answers sooner then: an idle
 * processor halts, and waking it for the completion costs the hypervisor
 * an exit and an entry. On the development VM (2 processors, virtio)
 * with both processors spinning, a lone 256 KiB write after 1 ms idle took
 * 106 us against 167 idle, the executor's own 256 KiB legs 120-130 us. The
 * spinners run under SCHED_IDLE, so the measuring threads take a processor
 * from them at once, as a woken I/O thread does from a kernel's.
 *
 * They are child processes, not threads: the bursts' processor time is this
 * process's own (getrusage), which the kernel brings up to date for a
 * running thread only at its next tick (4 ms), far coarser than a leg. */
#define _GNU_SOURCE /* SCHED_IDLE */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rok/calibrate.h"

struct _RokCalibBusy {
  guint n;
  pid_t *pids;
};

/* The child: only async-signal-safe calls between fork and its end. */
G_GNUC_NORETURN static void spin(pid_t parent) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) /* the parent ended before the line above */
    _exit(0);
  struct sched_param lowest = {0};
  sched_setscheduler(0, SCHED_IDLE, &lowest); /* best effort: else it runs at normal priority */
  for (;;)
    ;
}

RokCalibBusy *rok_calib_busy_start(guint n) {
  RokCalibBusy *b = g_new0(RokCalibBusy, 1);
  b->pids = g_new0(pid_t, MAX(n, 1));
  pid_t self = getpid();
  for (guint i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid == 0)
      spin(self);
    if (pid < 0)
      break; /* fewer spinners: the figures say how many */
    b->pids[b->n++] = pid;
  }
  return b;
}

guint rok_calib_busy_processes(const RokCalibBusy *b) {
  return b != NULL ? b->n : 0;
}

static double children_seconds(void) {
  struct rusage u;
  if (getrusage(RUSAGE_CHILDREN, &u) != 0)
    return 0;
  return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

double rok_calib_busy_stop(RokCalibBusy *b) {
  if (b == NULL)
    return 0;
  double before = children_seconds();
  for (guint i = 0; i < b->n; i++)
    kill(b->pids[i], SIGKILL);
  for (guint i = 0; i < b->n; i++)
    while (waitpid(b->pids[i], NULL, 0) < 0 && errno == EINTR)
      ;
  g_free(b->pids);
  g_free(b);
  return children_seconds() - before;
}
