/* The OpenCL device layer of the executor: which devices exist, opening one
 * with a context and three in-order command queues (compute, device-to-host,
 * host-to-device, all with profiling enabled), device buffers counted in a
 * memory ledger, transfers, events and pinned host staging buffers.
 *
 * Errors are GError ROK_ERROR_DEVICE whose message names what was being done
 * and the OpenCL status by name ("allocating 'layer3.qkv' (1.0 GiB):
 * CL_MEM_OBJECT_ALLOCATION_FAILURE"); a bad device index is ROK_ERROR_USAGE.
 *
 * Threads: the memory ledger is thread-safe (allocations and frees may come
 * from any thread); queues may be used from several threads as OpenCL allows.
 * Kernel launches (cl-kernels.h) must come from one thread at a time.
 *
 * Everything here exists only when the build has ROK_WITH_OPENCL. */
#pragma once

#ifdef ROK_WITH_OPENCL

#include <CL/cl.h>
#include <glib.h>
#include <json-c/json.h>

#include "rok/model.h"

G_BEGIN_DECLS

/* ---- Listing --------------------------------------------------------- */

typedef struct {
  guint index;            /* across all platforms, in enumeration order: what --device takes */
  char *name;
  char *vendor;
  char *platform;         /* platform name */
  char *version;          /* CL_DEVICE_VERSION, e.g. "OpenCL 3.0 PoCL ..." */
  char *c_version;        /* CL_DEVICE_OPENCL_C_VERSION */
  char *driver;
  const char *type;       /* "gpu", "cpu", "accelerator" or "other" */
  guint64 global_memory;  /* bytes */
  guint64 max_alloc;      /* bytes in one buffer */
  guint64 local_memory;   /* bytes per work-group */
  guint compute_units;
  gsize max_work_group;
  gboolean little_endian;
} RokClDeviceInfo;

void rok_cl_device_info_free(RokClDeviceInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokClDeviceInfo, rok_cl_device_info_free)

/* Every device of every platform, as RokClDeviceInfo (the array owns them).
 * No platform at all is an error naming the ICD packages to install. */
GPtrArray *rok_cl_device_list(GError **error);
/* The index rok_cl_device_open(-1) picks: the first GPU, else the first CPU
 * device, else the first device; -1 for an empty list. */
gint rok_cl_device_default_index(const GPtrArray *infos);
/* The table `rok execute --list-devices` prints (default marked with '*'). */
char *rok_cl_device_list_format(const GPtrArray *infos);
/* The same as a JSON array of objects (sizes in bytes). */
json_object *rok_cl_device_list_to_json(const GPtrArray *infos);

/* ---- An open device ---------------------------------------------------- */

typedef enum {
  ROK_CL_QUEUE_COMPUTE, /* kernels */
  ROK_CL_QUEUE_D2H,     /* offload: device to host */
  ROK_CL_QUEUE_H2D,     /* prefetch: host to device */
  ROK_CL_QUEUE_COUNT
} RokClQueue;

typedef struct _RokClDevice RokClDevice;

/* Open device `index` of rok_cl_device_list(), or the default one when
 * index < 0. */
RokClDevice *rok_cl_device_open(gint index, GError **error);
void rok_cl_device_free(RokClDevice *device);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokClDevice, rok_cl_device_free)

const RokClDeviceInfo *rok_cl_device_info(const RokClDevice *device);
cl_device_id rok_cl_device_id(const RokClDevice *device);
cl_context rok_cl_device_context(const RokClDevice *device);
cl_command_queue rok_cl_device_queue(const RokClDevice *device, RokClQueue queue);
const char *rok_cl_queue_name(RokClQueue queue);

/* Memory ledger: bytes of device buffers allocated now, the most at once
 * since open (or the last reset), and the number of live buffers. */
guint64 rok_cl_device_allocated(RokClDevice *device);
guint64 rok_cl_device_peak(RokClDevice *device);
guint rok_cl_device_buffer_count(RokClDevice *device);
void rok_cl_device_reset_peak(RokClDevice *device);

/* ---- Buffers ------------------------------------------------------------ */

/* A device buffer of `elements` elements of `dtype`. Kernels check dtypes and
 * sizes of the buffers they are given. Fields are read-only. */
typedef struct {
  RokClDevice *device;
  cl_mem mem;
  RokDtype dtype;
  guint64 elements;
  guint64 bytes;
  char *label; /* for messages: the tensor name */
} RokClBuffer;

/* Allocate (uninitialised). More bytes than one allocation may have, or than
 * the device has left according to the ledger, fails at once with "out of
 * device memory" naming `label`. OpenCL implementations allocate lazily:
 * pass `commit` = TRUE to touch the buffer and wait for it (on the compute
 * queue), so that a failure shows here rather than at the first kernel
 * that uses it. */
RokClBuffer *rok_cl_buffer_new(RokClDevice *device, RokDtype dtype, guint64 elements, const char *label,
                               gboolean commit, GError **error);
void rok_cl_buffer_free(RokClBuffer *buffer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokClBuffer, rok_cl_buffer_free)

/* Transfers of `bytes` at byte `offset` of the buffer, on `queue`. A
 * non-blocking transfer needs its host memory untouched until its event
 * completes. `wait` (n_wait events, may be NULL) must complete first;
 * `event` (may be NULL) receives the transfer's event, which the caller
 * releases. */
gboolean rok_cl_buffer_write(RokClBuffer *buffer, RokClQueue queue, guint64 offset, guint64 bytes,
                             const void *src, gboolean blocking, guint n_wait, const cl_event *wait,
                             cl_event *event, GError **error);
gboolean rok_cl_buffer_read(RokClBuffer *buffer, RokClQueue queue, guint64 offset, guint64 bytes, void *dst,
                            gboolean blocking, guint n_wait, const cl_event *wait, cl_event *event,
                            GError **error);
/* Fill the whole buffer with zero bytes (on the compute queue). */
gboolean rok_cl_buffer_zero(RokClBuffer *buffer, GError **error);
/* Device-side copy of `bytes` between buffers (on the compute queue). */
gboolean rok_cl_buffer_copy(RokClBuffer *src, guint64 src_offset, RokClBuffer *dst, guint64 dst_offset,
                            guint64 bytes, GError **error);

/* ---- Ordering and timing ---------------------------------------------- */

/* An event that completes when everything enqueued on `queue` so far has. */
gboolean rok_cl_device_marker(RokClDevice *device, RokClQueue queue, cl_event *event, GError **error);
/* Commands enqueued on `queue` from now on wait for `events` (other queues'
 * markers, transfers). */
gboolean rok_cl_device_wait_events(RokClDevice *device, RokClQueue queue, guint n, const cl_event *events,
                                   GError **error);
gboolean rok_cl_device_flush(RokClDevice *device, RokClQueue queue, GError **error);
gboolean rok_cl_device_finish(RokClDevice *device, RokClQueue queue, GError **error);
/* Finish all three queues. */
gboolean rok_cl_device_finish_all(RokClDevice *device, GError **error);
/* Block until the events complete; a failed command is an error. */
gboolean rok_cl_events_wait(guint n, const cl_event *events, GError **error);
/* Profiling times of a completed event, in device-clock nanoseconds (the same
 * clock for every queue of the device, so overlaps can be compared). */
gboolean rok_cl_event_times(cl_event event, guint64 *start_ns, guint64 *end_ns, GError **error);

/* ---- Pinned host staging buffers -------------------------------------- */

/* Host memory the device can transfer from and to at full speed
 * (CL_MEM_ALLOC_HOST_PTR, mapped). `ptr` is aligned to at least `alignment`
 * bytes (a power of two, e.g. 4096 for O_DIRECT); where the mapped memory is
 * not, it falls back to aligned host memory wrapped with CL_MEM_USE_HOST_PTR
 * (`pinned` says which). Not counted in the device ledger. Wait for the
 * transfers that use `ptr` before freeing it. */
typedef struct {
  RokClDevice *device;
  cl_mem mem;
  void *ptr;
  guint64 bytes;
  gboolean pinned;
  void *owned; /* the aligned allocation in the fallback */
} RokClHostBuffer;

RokClHostBuffer *rok_cl_host_buffer_new(RokClDevice *device, guint64 bytes, gsize alignment, GError **error);
void rok_cl_host_buffer_free(RokClHostBuffer *buffer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokClHostBuffer, rok_cl_host_buffer_free)

/* ---- Errors --------------------------------------------------------- */

/* "CL_OUT_OF_RESOURCES", ... ("CL_ERROR(unknown status)" otherwise). */
const char *rok_cl_status_name(cl_int status);
/* Set `error` to ROK_ERROR_DEVICE "<what>: <status name>" (with a hint for
 * the out-of-memory statuses) and return FALSE. */
gboolean rok_cl_fail(GError **error, cl_int status, const char *format, ...) G_GNUC_PRINTF(3, 4);

G_END_DECLS

#endif /* ROK_WITH_OPENCL */
