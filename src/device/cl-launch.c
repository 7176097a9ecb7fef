/* Kernel arguments, enqueueing, and the checks launchers make. */
#ifdef ROK_WITH_OPENCL

#include <math.h>
#include <string.h>

#include "cl-kernels-private.h"
#include "rok/core.h"

RokClLaunch device_cl_launch(RokClKernels *kernels, RokClKernelId id) {
  return (RokClLaunch){.kernels = kernels, .id = id, .next = 0, .status = CL_SUCCESS};
}

static void set_arg(RokClLaunch *launch, size_t size, const void *value) {
  cl_int status = clSetKernelArg(launch->kernels->kernels[launch->id], launch->next, size, value);
  if (status != CL_SUCCESS && launch->status == CL_SUCCESS) {
    launch->status = status;
    launch->failed_at = launch->next;
  }
  launch->next++;
}

void device_cl_arg_buffer(RokClLaunch *launch, const RokClBuffer *buffer) {
  /* A NULL value sets a null global pointer (optional inputs). */
  set_arg(launch, sizeof(cl_mem), buffer != NULL ? &buffer->mem : NULL);
}

void device_cl_arg_u64(RokClLaunch *launch, guint64 value) {
  cl_ulong v = value;
  set_arg(launch, sizeof v, &v);
}

void device_cl_arg_u32(RokClLaunch *launch, guint32 value) {
  cl_uint v = value;
  set_arg(launch, sizeof v, &v);
}

void device_cl_arg_f32(RokClLaunch *launch, float value) {
  cl_float v = value;
  set_arg(launch, sizeof v, &v);
}

void device_cl_arg_seed(RokClLaunch *launch, guint64 seed) {
  cl_uint2 v = {{(cl_uint)seed, (cl_uint)(seed >> 32)}};
  set_arg(launch, sizeof v, &v);
}

void device_cl_arg_local(RokClLaunch *launch, gsize bytes) {
  set_arg(launch, bytes, NULL);
}

size_t device_cl_round_up(guint64 n, guint64 multiple) {
  return (size_t)((n + multiple - 1) / multiple * multiple);
}

gboolean device_cl_launch_run(RokClLaunch *launch, guint dims, const size_t *global, const size_t *local,
                           GError **error) {
  return device_cl_launch_run_at(launch, dims, NULL, global, local, NULL, error);
}

gboolean device_cl_launch_run_at(RokClLaunch *launch, guint dims, const size_t *offset, const size_t *global,
                                 const size_t *local, cl_event *event, GError **error) {
  const char *name = device_cl_kernel_name(launch->id);
  if (launch->status != CL_SUCCESS)
    return rok_cl_fail(error, launch->status, "setting argument %u of kernel %s", launch->failed_at, name);
  size_t rounded[3] = {1, 1, 1};
  for (guint d = 0; d < dims; d++) {
    if (global[d] == 0)
      return TRUE; /* nothing to do */
    rounded[d] = local != NULL ? device_cl_round_up(global[d], local[d]) : global[d];
  }
  RokClDevice *device = launch->kernels->device;
  cl_int status = clEnqueueNDRangeKernel(rok_cl_device_queue(device, ROK_CL_QUEUE_COMPUTE),
                                         launch->kernels->kernels[launch->id], dims, offset, rounded, local, 0,
                                         NULL, event);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "launching kernel %s on %s", name, rok_cl_device_info(device)->name);
  return TRUE;
}

double device_cl_chunk_budget(const RokClKernels *kernels) {
  if (kernels->chunk_fixed > 0)
    return (double)kernels->chunk_fixed;
  return kernels->chunk_rate > 0 ? kernels->chunk_rate * ROK_KERNEL_CHUNK_SECONDS : (double)ROK_CL_CHUNK_FLOPS;
}

gboolean device_cl_chunk_next(RokClKernels *kernels, RokClChunks *chunks, cl_event newest, double flops,
                              const char *name, GError **error) {
  gboolean ok = TRUE;
  if (chunks->event != NULL) {
    ok = rok_cl_events_wait(1, &chunks->event, error);
    clReleaseEvent(chunks->event);
    /* With two queued the device ran this chunk since the one before ended
     * (the first one's time counts the queue ahead of it: a lower rate). */
    gint64 now = g_get_monotonic_time();
    if (ok && now > chunks->mark)
      kernels->chunk_rate = chunks->flops / ((double)(now - chunks->mark) / G_USEC_PER_SEC);
    chunks->mark = now;
  } else {
    chunks->mark = g_get_monotonic_time();
  }
  chunks->event = newest;
  chunks->flops = flops;
  if (ok && kernels->cancel != NULL && g_atomic_int_get(kernels->cancel) != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_CANCELLED, "%s: cancelled between chunks", name);
    return FALSE;
  }
  return ok;
}

void device_cl_chunks_end(RokClChunks *chunks) {
  if (chunks->event != NULL)
    clReleaseEvent(chunks->event);
  chunks->event = NULL;
}

gboolean device_cl_launch_chunked(RokClLaunch *launch, guint dims, const size_t *global, const size_t *local,
                                  double work, GError **error) {
  guint outer = dims - 1;
  size_t slices = global[outer];
  double per_slice = work / (double)MAX(slices, 1);
  if (work <= device_cl_chunk_budget(launch->kernels) && slices <= 65535)
    return device_cl_launch_run(launch, dims, global, local, error);
  RokClChunks chunks = {0};
  gboolean ok = TRUE;
  for (size_t at = 0; ok && at < slices;) {
    double fit = floor(device_cl_chunk_budget(launch->kernels) / per_slice);
    size_t offset[3] = {0, 0, 0}, part[3] = {0, 0, 0};
    memcpy(part, global, dims * sizeof(size_t));
    offset[outer] = at;
    part[outer] = MIN((size_t)MIN(MAX(fit, 1.0), 65535.0), slices - at);
    cl_event event = NULL;
    ok = device_cl_launch_run_at(launch, dims, offset, part, local, &event, error) &&
         device_cl_chunk_next(launch->kernels, &chunks, event, per_slice * (double)part[outer],
                              device_cl_kernel_name(launch->id), error);
    at += part[outer];
  }
  device_cl_chunks_end(&chunks);
  return ok;
}

gboolean device_cl_check_buffer(const RokClBuffer *buffer, RokDtype dtype, guint64 elements, const char *op,
                             const char *role, GError **error) {
  if (buffer == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: no buffer given for %s", op, role);
    return FALSE;
  }
  if (buffer->dtype != dtype) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: %s '%s' holds %s, the kernel needs %s", op, role,
                buffer->label, rok_dtype_name(buffer->dtype), rok_dtype_name(dtype));
    return FALSE;
  }
  if (buffer->elements < elements) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "%s: %s '%s' has %" G_GUINT64_FORMAT " elements, the kernel touches %" G_GUINT64_FORMAT, op, role,
                buffer->label, buffer->elements, elements);
    return FALSE;
  }
  return TRUE;
}

gboolean device_cl_check_act(const RokClKernels *kernels, const RokClBuffer *buffer, guint64 elements, const char *op,
                          const char *role, GError **error) {
  return device_cl_check_buffer(buffer, kernels->act, elements, op, role, error);
}

gboolean device_cl_check_u32(guint64 value, const char *op, const char *what, GError **error) {
  if (value > G_MAXUINT32) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: %s = %" G_GUINT64_FORMAT " exceeds 2^32 - 1", op, what,
                value);
    return FALSE;
  }
  return TRUE;
}

gboolean device_cl_mul(guint64 a, guint64 b, guint64 *product, const char *op, GError **error) {
  if (!g_uint64_checked_mul(product, a, b)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                " elements do not fit 64 bits", op, a, b);
    return FALSE;
  }
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
