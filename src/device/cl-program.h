/* Building OpenCL programs from source at run time.
 *
 * The kernels live in .cl files in src/device/kernels/; the build embeds them
 * into the library (embed-kernels.cmake) as device_cl_sources, sorted by name.
 * A program is built from common.cl first, then every other source in name
 * order, with options that choose the activation dtype and the tile sizes
 * for the device (cl-kernels.h). A build that fails is ROK_ERROR_DEVICE with
 * the compiler's build log in the message. */
#pragma once

#ifdef ROK_WITH_OPENCL

#include "rok/device.h"

G_BEGIN_DECLS

typedef struct {
  const char *name; /* "gemm.cl" */
  const char *text;
  gsize length; /* bytes, without the terminating NUL */
} RokClSource;

/* The embedded kernel sources (generated at build time). */
extern const RokClSource device_cl_sources[];
extern const guint device_cl_source_count;

/* The embedded source called `name`, or NULL. */
const RokClSource *device_cl_source_find(const char *name);

/* Build `n` sources, concatenated in the given order, for the device. The
 * caller releases the program. */
cl_program device_cl_program_build(RokClDevice *device, const RokClSource *sources, guint n, const char *options,
                                GError **error);
/* Build every embedded source (common.cl first). */
cl_program device_cl_program_build_embedded(RokClDevice *device, const char *options, GError **error);

G_END_DECLS

#endif /* ROK_WITH_OPENCL */
