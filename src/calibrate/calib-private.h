/* Private to src/calibrate: what its measurements share.
 *
 *   calib-copy.c  the buffers of timed copies and a blocking copy between
 *                 them, timed (bandwidth, latency, the legs' rates; the
 *                 probes of calib-contention.c and calib-ops.c) */
#pragma once

#ifdef ROK_WITH_OPENCL

#include "rok/device.h"

/* A pinned host buffer and a device buffer of the same size, for timed
 * copies between them; the host's bytes are written first, so that no
 * copy is the first touch of its pages. */
typedef struct {
  RokClHostBuffer *host;
  RokClBuffer *dev;
} CalibCopyPair;

/* FALSE (PAIR empty) where either buffer could not be had. */
gboolean calib_copy_pair_init(CalibCopyPair *pair, RokClDevice *cl, guint64 bytes, const char *label,
                              GError **error);
void calib_copy_pair_clear(CalibCopyPair *pair);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(CalibCopyPair, calib_copy_pair_clear)

/* One blocking copy of BYTES at offset AT of both buffers (host to device
 * where H2D, else device to host) and the seconds it took. */
gboolean calib_copy_seconds(const CalibCopyPair *pair, guint64 at, guint64 bytes, gboolean h2d, double *seconds,
                            GError **error);

#endif /* ROK_WITH_OPENCL */
