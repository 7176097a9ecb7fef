/* Processors kept busy while the disks are timed, as a CPU device's kernels
 * keep them while a step's SSD legs run, streaming through memory as
 * they do.
 *
 * A virtual machine's disk answers sooner then: an idle processor halts,
 * and waking it for the completion costs the hypervisor an exit and an
 * entry. On the development VM (2 processors, virtio) a lone 256 KiB
 * write after 1 ms idle took 167 us with the processors idle, 106 us
 * beside two busy loops; the executor's own 256 KiB legs 120-130 us. The
 * spinners run ROK_CL_CPU_WORKER_NICE nice levels below this process, as
 * the device's worker threads do, so the measuring threads take a
 * processor from them as the executor's I/O threads take one from a
 * kernel: at the same weight, neither sooner nor later.
 *
 * They are child processes, not threads: the bursts' processor time is this
 * process's own (getrusage), which the kernel brings up to date for a
 * running thread only at its next tick (4 ms), far coarser than a leg. */
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rok/calibrate.h"
#include "rok/device.h"

struct _RokCalibBusy {
  guint n;
  pid_t *pids;
  guint64 *stream; /* ROK_CALIB_BUSY_BYTES, zero; each spinner its own copy */
};

/* The child: only plain system calls between fork and its end. It
 * streams through `stream` (ROK_CALIB_BUSY_BYTES), as an element-wise
 * kernel streams through its tensors: its copy of the parent's untouched
 * pages, so no allocation after fork. A loop that touched no memory kept the
 * processors busy but left the I/O path's code and data in the caches,
 * where a step's kernels evict them: on the development VM, 2026-12-06,
 * the first submission of a burst took 21-37 us at the median beside
 * such loops, 38-54 beside these, and 54-69 in the executor's steps
 * (three calibrations each, in turn). */
G_GNUC_NORETURN static void spin(pid_t parent, int nice, volatile guint64 *stream) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* the forking thread: rok_calibrate()'s, which outlives them */
  if (getppid() != parent) /* the parent ended before the line above */
    _exit(0);
  setpriority(PRIO_PROCESS, 0, nice);
  const gsize half = ROK_CALIB_BUSY_BYTES / sizeof(guint64) / 2;
  for (guint64 v = 0;; v++)
    for (gsize i = 0; i < half; i++)
      stream[i + half] = stream[i] * 3 + v;
}

RokCalibBusy *rok_calib_busy_start(guint n) {
  RokCalibBusy *b = g_new0(RokCalibBusy, 1);
  b->pids = g_new0(pid_t, MAX(n, 1));
  /* Allocated here, not static: every rok process would carry 4 MiB of
   * zeros that LeakSanitizer scans at each exit. */
  b->stream = g_malloc0(ROK_CALIB_BUSY_BYTES);
  pid_t self = getpid();
  errno = 0;
  int base = getpriority(PRIO_PROCESS, 0); /* this thread's */
  int nice = MIN((base == -1 && errno != 0 ? 0 : base) + ROK_CL_CPU_WORKER_NICE, 19);
  for (guint i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid == 0)
      spin(self, nice, b->stream);
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
  g_free(b->stream);
  g_free(b);
  return children_seconds() - before;
}
