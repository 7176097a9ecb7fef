/* Calibration options: defaults for a full and a quick run, and checks. */
#include <stdarg.h>

#include "rok/calibrate.h"
#include "rok/core.h"

#define KIB ((guint64)1 << 10)
#define MIB ((guint64)1 << 20)
#define GIB ((guint64)1 << 30)
/* Disk requests: 4 KiB alignment suits every block device; 64 MiB is far
 * past where any disk's sequential bandwidth stops growing. */
#define BLOCK_ALIGN (4 * KIB)
#define MAX_BLOCK (64 * MIB)
#define MAX_QUEUE_DEPTH 1024

void rok_calib_options_init(RokCalibOptions *options) {
  *options = (RokCalibOptions){.device = -1};
}

static void default_grid(RokCalibOptions *o) {
  static const guint64 blocks[] = {128 * KIB, 1 * MIB, 4 * MIB};
  static const guint depths[] = {1, 8, 32};
  static const guint64 quick_blocks[] = {128 * KIB, 1 * MIB};
  static const guint quick_depths[] = {1, 32};
  if (o->n_blocks == 0) {
    const guint64 *b = o->quick ? quick_blocks : blocks;
    o->n_blocks = o->quick ? G_N_ELEMENTS(quick_blocks) : G_N_ELEMENTS(blocks);
    for (guint i = 0; i < o->n_blocks; i++)
      o->blocks[i] = b[i];
  }
  if (o->n_queue_depths == 0) {
    const guint *d = o->quick ? quick_depths : depths;
    o->n_queue_depths = o->quick ? G_N_ELEMENTS(quick_depths) : G_N_ELEMENTS(depths);
    for (guint i = 0; i < o->n_queue_depths; i++)
      o->queue_depths[i] = d[i];
  }
}

static gboolean usage(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);
static gboolean usage(GError **error, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, message);
  return FALSE;
}

static gboolean check_grid(const RokCalibOptions *o, GError **error) {
  for (guint i = 0; i < o->n_blocks; i++)
    if (o->blocks[i] == 0 || o->blocks[i] % BLOCK_ALIGN != 0 || o->blocks[i] > MAX_BLOCK) {
      g_autofree char *b = rok_units_format_size(o->blocks[i]);
      return usage(error, "--block %s: must be a multiple of 4 KiB up to 64 MiB", b);
    }
  for (guint i = 0; i < o->n_queue_depths; i++)
    if (o->queue_depths[i] == 0 || o->queue_depths[i] > MAX_QUEUE_DEPTH)
      return usage(error, "--qd %u: must be from 1 to %d", o->queue_depths[i], MAX_QUEUE_DEPTH);
  guint64 largest = 0;
  for (guint i = 0; i < o->n_blocks; i++)
    largest = MAX(largest, o->blocks[i]);
  if (o->file_bytes < largest || o->file_bytes % BLOCK_ALIGN != 0) {
    g_autofree char *f = rok_units_format_size(o->file_bytes), *b = rok_units_format_size(largest);
    return usage(error, "--file-size %s: must be a multiple of 4 KiB and at least the largest block (%s)", f, b);
  }
  return TRUE;
}

gboolean rok_calib_options_resolve(RokCalibOptions *o, GError **error) {
  default_grid(o);
  if (o->trials == 0)
    o->trials = 3;
  if (o->file_bytes == 0)
    o->file_bytes = o->quick ? 128 * MIB : 1 * GIB;
  if (!(o->pass_seconds > 0))
    o->pass_seconds = o->quick ? 0.2 : 2.0;
  if (o->attempts == 0)
    o->attempts = 1;
  if (o->trials > 100)
    return usage(error, "--trials %u: must be from 1 to 100", o->trials);
  if (o->attempts > ROK_CALIB_MAX_ATTEMPTS)
    return usage(error, "--attempts %u: must be from 1 to %d", o->attempts, ROK_CALIB_MAX_ATTEMPTS);
  return check_grid(o, error);
}
