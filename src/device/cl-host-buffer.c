/* Pinned host staging buffers for transfers (and O_DIRECT I/O). */
#ifdef ROK_WITH_OPENCL

#include <stdlib.h>

#include "cl-device-private.h"
#include "rok/core.h"

/* The pinned way: memory the implementation allocates and maps. */
static gboolean map_pinned(RokClHostBuffer *buffer, gsize alignment) {
  RokClDevice *device = buffer->device;
  cl_int status = CL_SUCCESS;
  buffer->mem = clCreateBuffer(device->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, buffer->bytes, NULL,
                               &status);
  if (status != CL_SUCCESS)
    return FALSE;
  void *ptr = clEnqueueMapBuffer(device->queues[ROK_CL_QUEUE_COMPUTE], buffer->mem, CL_TRUE,
                                 CL_MAP_READ | CL_MAP_WRITE, 0, buffer->bytes, 0, NULL, NULL, &status);
  if (status != CL_SUCCESS || ptr == NULL || (guintptr)ptr % alignment != 0) {
    if (status == CL_SUCCESS && ptr != NULL) {
      clEnqueueUnmapMemObject(device->queues[ROK_CL_QUEUE_COMPUTE], buffer->mem, ptr, 0, NULL, NULL);
      clFinish(device->queues[ROK_CL_QUEUE_COMPUTE]);
    }
    clReleaseMemObject(buffer->mem);
    buffer->mem = NULL;
    return FALSE;
  }
  buffer->ptr = ptr;
  buffer->pinned = TRUE;
  return TRUE;
}

/* The fallback: aligned host memory the implementation uses in place. */
static gboolean wrap_aligned(RokClHostBuffer *buffer, gsize alignment, GError **error) {
  if (posix_memalign(&buffer->owned, alignment, buffer->bytes) != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "allocating %" G_GUINT64_FORMAT " bytes of host staging memory failed",
                buffer->bytes);
    return FALSE;
  }
  cl_int status = CL_SUCCESS;
  buffer->mem = clCreateBuffer(buffer->device->context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, buffer->bytes,
                               buffer->owned, &status);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "registering %" G_GUINT64_FORMAT " bytes of host staging memory",
                       buffer->bytes);
  buffer->ptr = buffer->owned;
  return TRUE;
}

RokClHostBuffer *rok_cl_host_buffer_new(RokClDevice *device, guint64 bytes, gsize alignment, GError **error) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment % sizeof(void *) != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "host staging buffer: alignment %" G_GSIZE_FORMAT
                " is not a power of two multiple of the pointer size", alignment);
    return NULL;
  }
  if (bytes == 0 || bytes > G_MAXSIZE) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "host staging buffer: invalid size %" G_GUINT64_FORMAT,
                bytes);
    return NULL;
  }
  g_autoptr(RokClHostBuffer) buffer = g_new0(RokClHostBuffer, 1);
  buffer->device = device;
  buffer->bytes = bytes;
  if (!map_pinned(buffer, alignment) && !wrap_aligned(buffer, alignment, error))
    return NULL;
  return g_steal_pointer(&buffer);
}

void rok_cl_host_buffer_free(RokClHostBuffer *buffer) {
  if (buffer == NULL)
    return;
  if (buffer->pinned) {
    cl_command_queue queue = buffer->device->queues[ROK_CL_QUEUE_COMPUTE];
    clEnqueueUnmapMemObject(queue, buffer->mem, buffer->ptr, 0, NULL, NULL);
    clFinish(queue);
  }
  if (buffer->mem != NULL)
    clReleaseMemObject(buffer->mem);
  /* Transfers from or to ptr have completed: the header asks callers to
   * wait for them before freeing. */
  free(buffer->owned);
  g_free(buffer);
}

#endif /* ROK_WITH_OPENCL */
