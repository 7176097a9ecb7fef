/* What other processes use of this machine's processors, for the commands
 * that measure it (calibrate, validate) and must say when it was busy. */
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rok/core.h"

double rok_host_others_cpu_seconds(void) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/stat", &text, NULL, NULL))
    return -1;
  guint64 v[8] = {0};
  if (sscanf(text, "cpu %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
                   " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT,
             &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
    return -1;
  long hz = sysconf(_SC_CLK_TCK);
  struct rusage self;
  if (hz <= 0 || getrusage(RUSAGE_SELF, &self) != 0)
    return -1;
  /* user, nice, system, irq, softirq and steal (the hypervisor's share);
   * not idle (3) nor iowait (4). */
  double busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
  double own = (double)self.ru_utime.tv_sec + self.ru_utime.tv_usec / 1e6 + (double)self.ru_stime.tv_sec +
               self.ru_stime.tv_usec / 1e6;
  return busy - own;
}

double rok_host_others_share(double others_start, double wall_s) {
  double now = rok_host_others_cpu_seconds();
  guint cpus = g_get_num_processors();
  if (others_start < 0 || now < 0 || !(wall_s > 0) || cpus == 0)
    return -1;
  return CLAMP((now - others_start) / (wall_s * cpus), 0, 1);
}
