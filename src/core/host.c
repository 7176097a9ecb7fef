/* What other processes use of the processors rok may run on, for the
 * commands that measure (calibrate, validate) and must say when the
 * machine was busy. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_ISSET */
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rok/core.h"

/* Busy ticks of one /proc/stat "cpuN" line: user, nice, system, irq,
 * softirq and steal (the hypervisor's share); not idle nor iowait. */
static gboolean busy_ticks(const char *line, guint *cpu, guint64 *ticks) {
  guint64 v[8];
  if (sscanf(line, "cpu%u %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
                   " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT,
             cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
    return FALSE;
  *ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return TRUE;
}

gint64 rok_host_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double rok_host_own_cpu_seconds(void) {
  struct rusage self;
  if (getrusage(RUSAGE_SELF, &self) != 0)
    return -1;
  return (double)self.ru_utime.tv_sec + self.ru_utime.tv_usec / 1e6 + (double)self.ru_stime.tv_sec +
         self.ru_stime.tv_usec / 1e6;
}

double rok_host_others_cpu_seconds(void) {
  g_autofree char *text = NULL;
  cpu_set_t mine;
  long hz = sysconf(_SC_CLK_TCK);
  double own = rok_host_own_cpu_seconds();
  if (!g_file_get_contents("/proc/stat", &text, NULL, NULL) || sched_getaffinity(0, sizeof mine, &mine) != 0 ||
      hz <= 0 || own < 0)
    return -1;
  /* Only the processors this process may run on: in a container or under
   * taskset the others are someone else's. */
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  guint64 busy = 0;
  guint counted = 0, cpu = 0;
  for (guint i = 0; lines[i] != NULL; i++) {
    guint64 ticks = 0;
    if (busy_ticks(lines[i], &cpu, &ticks) && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &mine)) {
      busy += ticks;
      counted++;
    }
  }
  if (counted == 0)
    return -1;
  return (double)busy / (double)hz - own;
}

double rok_host_others_share(double others_start, double wall_s) {
  double now = rok_host_others_cpu_seconds();
  guint cpus = g_get_num_processors();
  if (others_start < 0 || now < 0 || !(wall_s > 0) || cpus == 0)
    return -1;
  return CLAMP((now - others_start) / (wall_s * cpus), 0, 1);
}

#ifdef SYS_sched_setattr
/* The kernel's struct sched_attr, whose header clashes with sched.h. */
typedef struct {
  guint32 size, sched_policy;
  guint64 sched_flags;
  gint32 sched_nice;
  guint32 sched_priority;
  guint64 sched_runtime, sched_deadline, sched_period;
} SchedAttr;

#define SCHED_FLAG_RESET_ON_FORK_ 0x01 /* linux/sched.h's SCHED_FLAG_RESET_ON_FORK */
#define SHORT_SLICE_NS (100 * 1000)

/* The lowest real-time priority takes a processor from any fair-class
 * thread as soon as the thread wakes. Fair classes do not: on the
 * development VM (2 processors, Linux 6.18, PoCL's workers 5 nice levels
 * below rok, 2026-12-06) `perf sched timehist` had the io_uring thread,
 * woken by a completion, wait 2.4 ms for its processor while a worker ran
 * a kernel (EEVDF lets a thread that ran ahead of its share wait until it
 * is eligible again, up to a tick, short slice or not), and in `rok
 * execute` of an offload schedule 3-17 h2d legs a step were issued 1-4 ms
 * after their reads ended; with the stream threads real-time, none. Only
 * with more than one processor: with one, a real-time thread would stop
 * the kernels whenever it runs, where the simulator has the two share it.
 * Children go back to the fair class (reset on fork). */
static gboolean realtime(void) {
  if (g_get_num_processors() < 2)
    return FALSE;
  SchedAttr attr = {.size = sizeof attr, .sched_policy = SCHED_FIFO, .sched_priority = 1,
                    .sched_flags = SCHED_FLAG_RESET_ON_FORK_};
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
}

/* Linux 6.12 and later take a fair-class thread's sched_runtime as the
 * slice it asks for (sched_setattr(2)): a short one gives the thread an
 * early deadline, so that when it wakes it preempts a thread that has
 * been computing rather than waiting out that thread's slice (when it is
 * eligible). Unprivileged; older kernels refuse it (EINVAL) or ignore it. */
static gboolean short_slice(void) {
  SchedAttr attr = {.size = sizeof attr, .sched_policy = SCHED_OTHER, .sched_runtime = SHORT_SLICE_NS};
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
}
#endif

RokHostWake rok_host_thread_prompt(void) {
#ifdef SYS_sched_setattr
  if (realtime())
    return ROK_HOST_WAKE_REALTIME;
  if (short_slice())
    return ROK_HOST_WAKE_SHORT_SLICE;
#endif
  return ROK_HOST_WAKE_FAIR;
}

const char *rok_host_wake_name(RokHostWake wake) {
  static const char *const names[] = {"fair", "short slice", "real-time"};
  return wake < G_N_ELEMENTS(names) ? names[wake] : "?";
}

char *rok_host_wake_note(RokHostWake wake) {
  if (wake == ROK_HOST_WAKE_REALTIME)
    return NULL;
  return g_strdup_printf("the stream threads ran in the fair class (%s), real time refused (not root, no "
                         "CAP_SYS_NICE, `ulimit -r` 0, or one processor): a thread woken beside the kernels may "
                         "wait up to a scheduler tick for a processor, so its copies and SSD legs may start that "
                         "much later than predicted",
                         rok_host_wake_name(wake));
}
