/* What every part of the calibration shares: statistics over trials,
 * cancellation, progress, the result's life cycle. */
#include <stdarg.h>
#include <stdlib.h>

#include "rok/calibrate.h"
#include "rok/core.h"

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

RokCalibStat rok_calib_stat(double *values, guint n) {
  if (n == 0)
    return (RokCalibStat){0};
  qsort(values, n, sizeof *values, compare_double);
  double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return (RokCalibStat){.median = median, .min = values[0], .max = values[n - 1], .n = n};
}

void rok_calib_cancel_init(RokCalibCancel *cancel) {
  g_mutex_init(&cancel->lock);
  cancel->cancelled = 0;
  cancel->backend = NULL;
}

void rok_calib_cancel_clear(RokCalibCancel *cancel) {
  g_mutex_clear(&cancel->lock);
}

/* Runs on the signal watch's thread. */
void rok_calib_cancel_now(RokCalibCancel *cancel) {
  g_atomic_int_set(&cancel->cancelled, 1);
  g_mutex_lock(&cancel->lock);
  if (cancel->backend != NULL)
    rok_io_backend_cancel(cancel->backend);
  g_mutex_unlock(&cancel->lock);
}

void rok_calib_cancel_set_backend(RokCalibCancel *cancel, RokIoBackend *backend) {
  if (cancel == NULL)
    return;
  g_mutex_lock(&cancel->lock);
  cancel->backend = backend;
  g_mutex_unlock(&cancel->lock);
  /* A signal that came just before the backend was registered. */
  if (backend != NULL && g_atomic_int_get(&cancel->cancelled))
    rok_io_backend_cancel(backend);
}

gboolean rok_calib_check_cancelled(RokCalibCancel *cancel, GError **error) {
  if (cancel == NULL || !g_atomic_int_get(&cancel->cancelled))
    return FALSE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_CANCELLED, "calibration interrupted");
  return TRUE;
}

void rok_calib_progress(const RokCalibOptions *options, const char *format, ...) {
  if (options->progress == NULL)
    return;
  va_list args;
  va_start(args, format);
  g_autofree char *line = g_strdup_vprintf(format, args);
  va_end(args);
  options->progress(line, options->progress_data);
}

void rok_calib_disk_clear(RokCalibDisk *disk) {
  g_free(disk->dir);
  g_free(disk->disk);
  g_free(disk->virtual_reason);
  g_free(disk->backend);
  if (disk->points != NULL)
    g_array_unref(disk->points);
  *disk = (RokCalibDisk){0};
}

static void op_clear(gpointer data) {
  g_free(((RokCalibOp *)data)->label);
}

RokCalibration *rok_calibration_new(void) {
  RokCalibration *c = g_new0(RokCalibration, 1);
  c->device.gemms = g_array_new(FALSE, TRUE, sizeof(RokCalibGemm));
  c->device.ops = g_array_new(FALSE, TRUE, sizeof(RokCalibOp));
  g_array_set_clear_func(c->device.ops, op_clear);
  c->disks = g_array_new(FALSE, TRUE, sizeof(RokCalibDisk));
  g_array_set_clear_func(c->disks, (GDestroyNotify)rok_calib_disk_clear);
  c->warnings = g_ptr_array_new_with_free_func(g_free);
  c->others_share = -1; /* unknown until a run measures it */
  return c;
}

void rok_calibration_free(RokCalibration *c) {
  if (c == NULL)
    return;
  g_free(c->model_name);
  g_free(c->device.name);
  g_free(c->device.type);
  g_array_unref(c->device.gemms);
  g_array_unref(c->device.ops);
  g_array_unref(c->disks);
  g_ptr_array_unref(c->warnings);
  g_free(c->seen);
  g_free(c);
}
