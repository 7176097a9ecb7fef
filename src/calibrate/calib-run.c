/* A whole calibration, in order: the host, the device and its copies, the
 * disks, then the checks. Ctrl-C cancels it cleanly. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "rok/calibrate.h"
#include "rok/storage.h"
#include "rok/core.h"

/* Every --dir an existing directory, none twice: checked before the long
 * device measurements, not after. */
static gboolean check_dirs(const char *const *dirs, GError **error) {
  g_autoptr(GArray) seen = g_array_new(FALSE, FALSE, sizeof(struct stat));
  for (guint i = 0; dirs != NULL && dirs[i] != NULL; i++) {
    struct stat st;
    if (stat(dirs[i], &st) != 0) {
      int e = errno;
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "--dir %s: %s", dirs[i], g_strerror(e));
      return FALSE;
    }
    if (!S_ISDIR(st.st_mode)) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "--dir %s: not a directory", dirs[i]);
      return FALSE;
    }
    for (guint k = 0; k < seen->len; k++) {
      const struct stat *o = &g_array_index(seen, struct stat, k);
      if (o->st_dev == st.st_dev && o->st_ino == st.st_ino) {
        g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--dir %s and --dir %s are the same directory", dirs[k],
                    dirs[i]);
        return FALSE;
      }
    }
    g_array_append_val(seen, st);
  }
  return TRUE;
}

static double load_now(void) {
  double load[3];
  return getloadavg(load, 3) == 3 ? load[0] : 0;
}

static void on_signal(int signo, gpointer data) {
  (void)signo;
  rok_calib_cancel_now(data);
}

static gboolean measure_disks(const RokCalibOptions *o, RokCalibCancel *cancel, RokCalibration *c, GError **error) {
  for (guint i = 0; o->dirs != NULL && o->dirs[i] != NULL; i++) {
    RokCalibDisk disk = {0};
    gboolean ok = rok_calib_measure_disk(o->dirs[i], o, cancel, &disk, c->warnings, error);
    if (disk.dir != NULL)
      g_array_append_val(c->disks, disk);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

/* One measurement of everything, checked; NULL (ERROR set) where it failed
 * or was cancelled. O's busy_processors is set the first time. */
static RokCalibration *measure_once(RokCalibOptions *o, RokCalibCancel *cancel, GError **error) {
  g_autoptr(RokCalibration) c = rok_calibration_new();
  c->quick = o->quick;
  c->trials = o->trials;
  c->model_name = o->model != NULL ? g_strdup(o->model->model_name) : NULL;
  c->cpus = g_get_num_processors();
  c->load[0] = load_now();
  double others = rok_host_others_cpu_seconds();
  gint64 start = g_get_monotonic_time();
  gboolean ok = rok_calib_measure_host(o, cancel, &c->host, error) &&
                rok_calib_measure_device(o, cancel, &c->device, error);
  if (ok && g_strcmp0(c->device.type, "cpu") == 0 && o->busy_processors == 0)
    o->busy_processors = c->cpus; /* as the device's kernels keep them during a step */
  ok = ok && measure_disks(o, cancel, c, error);
  c->load[1] = load_now();
  for (guint i = 0; others >= 0 && i < c->disks->len; i++) /* the spinners are not another's load */
    others += g_array_index(c->disks, RokCalibDisk, i).busy_seconds;
  c->others_share = rok_host_others_share(others, (double)(g_get_monotonic_time() - start) / 1e6);
  if (!ok)
    return NULL;
  rok_calib_check(c);
  return g_steal_pointer(&c);
}

RokCalibration *rok_calibrate(const RokCalibOptions *options, GError **error) {
  RokCalibOptions o = *options;
  if (!rok_calib_options_resolve(&o, error) || !check_dirs(o.dirs, error))
    return NULL;
  RokCalibCancel cancel;
  rok_calib_cancel_init(&cancel);
  /* The process's watch, or one of our own made first, before the OpenCL
   * runtime and the I/O backend start threads. */
  RokSignalWatch *watch = o.signals;
  RokSignalFunc was_func = NULL;
  gpointer was_data = NULL;
  if (watch != NULL)
    rok_signal_watch_retarget(watch, on_signal, &cancel, &was_func, &was_data);
  else if ((watch = rok_signal_watch_new(on_signal, &cancel, error)) == NULL) {
    rok_calib_cancel_clear(&cancel);
    return NULL;
  }
  /* Measured again while the machine's speed moved (o.attempts), the
   * steadiest kept: the first of the least unsteadiness. */
  RokCalibration *kept = NULL;
  g_autoptr(GArray) seen = g_array_new(FALSE, FALSE, sizeof(RokCalibAttempt));
  for (guint attempt = 1; attempt <= o.attempts; attempt++) {
    if (attempt > 1) {
      const RokCalibAttempt *last = &g_array_index(seen, RokCalibAttempt, attempt - 2);
      rok_calib_progress(&o, "attempt %u of %u, the last unsteady (%s, %.0f%%)", attempt, o.attempts, last->what,
                         100 * last->unsteadiness);
    }
    RokCalibration *c = measure_once(&o, &cancel, error);
    if (c == NULL) {
      g_clear_pointer(&kept, rok_calibration_free);
      break;
    }
    RokCalibAttempt now = {0};
    now.unsteadiness = rok_calib_unsteadiness(c, &now.what);
    g_array_append_val(seen, now);
    if (kept == NULL || now.unsteadiness < g_array_index(seen, RokCalibAttempt, kept->attempt - 1).unsteadiness) {
      g_clear_pointer(&kept, rok_calibration_free);
      kept = c;
      kept->attempt = attempt;
    } else {
      rok_calibration_free(c);
    }
    if (now.unsteadiness == 0)
      break;
  }
  if (o.signals != NULL)
    rok_signal_watch_retarget(watch, was_func, was_data, NULL, NULL);
  else
    rok_signal_watch_free(watch);
  rok_calib_cancel_clear(&cancel);
  if (kept != NULL)
    kept->seen = g_array_steal(seen, &kept->attempts);
  return kept;
}
