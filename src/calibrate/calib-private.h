/* Private to src/calibrate: what its measurements share.
 *
 *   calib-copy.c  a blocking copy between the device and pinned host
 *                 memory, timed (bandwidth, latency; the probes of
 *                 calib-contention.c and calib-ops.c) */
#pragma once

#ifdef ROK_WITH_OPENCL

#include "rok/device.h"

/* One blocking copy of BYTES between DEV and HOST (host to device where
 * H2D, else device to host) and the seconds it took. */
gboolean calib_copy_seconds(RokClBuffer *dev, RokClHostBuffer *host, guint64 bytes, gboolean h2d, double *seconds,
                            GError **error);

#endif /* ROK_WITH_OPENCL */
