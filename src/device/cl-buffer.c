/* Device buffers, the memory ledger and transfers. */
#ifdef ROK_WITH_OPENCL

#include "cl-device-private.h"
#include "rok/core.h"

/* ---- Ledger and idle buffers -------------------------------------------- */

/* A recycled buffer's memory. One recycled while compute commands may
 * still use it waits for the compute queue's next marker or finish
 * (device_cl_compute_marked); `after` is that marker (NULL: nothing
 * pending). */
typedef struct {
  cl_mem mem;
  cl_event after;
  gboolean waiting; /* for a marker: in device->waiting */
} Idle;

static void idle_release(gpointer data) {
  Idle *idle = data;
  if (idle->after != NULL)
    clReleaseEvent(idle->after);
  clReleaseMemObject(idle->mem);
  g_free(idle);
}

static gboolean idle_ready(const Idle *idle) {
  cl_int status = CL_COMPLETE;
  if (idle->waiting || (idle->after != NULL && clGetEventInfo(idle->after, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                                              sizeof status, &status, NULL) != CL_SUCCESS))
    return FALSE;
  return status == CL_COMPLETE; /* negative: the commands failed, and so did the run */
}

/* An idle buffer of `size` bytes that nothing uses any more, taken out of
 * the device's idle ones, or NULL; where none is and the idle ones leave
 * too little room for a new buffer of that size, as many idle ones as
 * make the room go into *release. Under the ledger's lock. */
static cl_mem take_idle(RokClDevice *device, guint64 size, GSList **release) {
  if (device->idle == NULL)
    return NULL;
  GSList *same = g_hash_table_lookup(device->idle, &size);
  for (GSList *l = same; l != NULL; l = l->next) {
    Idle *idle = l->data;
    if (!idle_ready(idle))
      continue;
    cl_mem mem = idle->mem;
    if (idle->after != NULL)
      clReleaseEvent(idle->after);
    g_free(idle);
    g_hash_table_insert(device->idle, g_memdup2(&size, sizeof size), g_slist_delete_link(same, l));
    device->idle_bytes -= size;
    return mem;
  }
  /* Those waiting for a marker stay: device_cl_compute_marked holds them. */
  guint64 total = device->info->global_memory;
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, device->idle);
  while (device->allocated + device->idle_bytes + size > total && g_hash_table_iter_next(&it, &key, &value)) {
    GSList *keep = NULL;
    for (GSList *l = value; l != NULL; l = l->next) {
      Idle *idle = l->data;
      if (idle->waiting) {
        keep = g_slist_prepend(keep, idle);
      } else {
        *release = g_slist_prepend(*release, idle);
        device->idle_bytes -= *(const guint64 *)key;
      }
    }
    g_slist_free(value);
    g_hash_table_iter_replace(&it, keep);
  }
  return NULL;
}

/* Reserve `bytes` against the device's global memory; the message says who
 * asked and how much was already taken. *reuse: an idle buffer of the
 * same size to back it, or NULL. */
static gboolean ledger_reserve(RokClDevice *device, guint64 bytes, const char *label, cl_mem *reuse,
                               GError **error) {
  *reuse = NULL;
  g_autofree char *size = g_format_size_full(bytes, G_FORMAT_SIZE_IEC_UNITS);
  if (bytes > device->info->max_alloc) {
    g_autofree char *max = g_format_size_full(device->info->max_alloc, G_FORMAT_SIZE_IEC_UNITS);
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "out of device memory: '%s' needs %s in one buffer, more than %s allows (%s at most: "
                "CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
                label, size, device->info->name, max);
    return FALSE;
  }
  GSList *release = NULL;
  g_mutex_lock(&device->ledger_lock);
  guint64 taken = device->allocated;
  gboolean fits = bytes <= device->info->global_memory - MIN(taken, device->info->global_memory);
  if (fits) {
    *reuse = take_idle(device, MAX(bytes, 8), &release);
    device->allocated += bytes;
    device->peak = MAX(device->peak, device->allocated);
    device->buffers++;
  }
  g_mutex_unlock(&device->ledger_lock);
  g_slist_free_full(release, idle_release);
  if (!fits) {
    g_autofree char *have = g_format_size_full(taken, G_FORMAT_SIZE_IEC_UNITS);
    g_autofree char *total = g_format_size_full(device->info->global_memory, G_FORMAT_SIZE_IEC_UNITS);
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "out of device memory: '%s' needs %s with %s of %s's %s already allocated", label, size, have,
                device->info->name, total);
  }
  return fits;
}

static void ledger_release(RokClDevice *device, guint64 bytes) {
  g_mutex_lock(&device->ledger_lock);
  device->allocated -= MIN(bytes, device->allocated);
  device->buffers -= device->buffers > 0;
  g_mutex_unlock(&device->ledger_lock);
}

guint64 rok_cl_device_allocated(RokClDevice *device) {
  g_mutex_lock(&device->ledger_lock);
  guint64 value = device->allocated;
  g_mutex_unlock(&device->ledger_lock);
  return value;
}

guint64 rok_cl_device_peak(RokClDevice *device) {
  g_mutex_lock(&device->ledger_lock);
  guint64 value = device->peak;
  g_mutex_unlock(&device->ledger_lock);
  return value;
}

guint rok_cl_device_buffer_count(RokClDevice *device) {
  g_mutex_lock(&device->ledger_lock);
  guint value = device->buffers;
  g_mutex_unlock(&device->ledger_lock);
  return value;
}

void rok_cl_device_reset_peak(RokClDevice *device) {
  g_mutex_lock(&device->ledger_lock);
  device->peak = device->allocated;
  g_mutex_unlock(&device->ledger_lock);
}

/* ---- Buffers ------------------------------------------------------------ */

/* Make the implementation really allocate (they do it on first use). */
static gboolean commit_buffer(RokClBuffer *buffer, GError **error) {
  static const cl_uchar zero = 0;
  cl_event event = NULL;
  cl_int status = clEnqueueFillBuffer(buffer->device->queues[ROK_CL_QUEUE_COMPUTE], buffer->mem, &zero,
                                      sizeof zero, 0, 1, 0, NULL, &event);
  if (status == CL_SUCCESS) {
    status = clWaitForEvents(1, &event);
    clReleaseEvent(event);
  }
  if (status != CL_SUCCESS) {
    g_autofree char *size = g_format_size_full(buffer->bytes, G_FORMAT_SIZE_IEC_UNITS);
    return rok_cl_fail(error, status, "allocating '%s' (%s) on %s", buffer->label, size,
                       buffer->device->info->name);
  }
  return TRUE;
}

RokClBuffer *rok_cl_buffer_new(RokClDevice *device, RokDtype dtype, guint64 elements, const char *label,
                               gboolean commit, GError **error) {
  if (label == NULL)
    label = "buffer";
  if ((guint)dtype > ROK_DTYPE_I64) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "allocating '%s': unknown dtype %d", label, (int)dtype);
    return NULL;
  }
  guint size = rok_dtype_bytes(dtype);
  if (elements > G_MAXUINT64 / size) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "allocating '%s': %" G_GUINT64_FORMAT " elements of %s do not fit 64 bits",
                label, elements, rok_dtype_name(dtype));
    return NULL;
  }
  guint64 bytes = elements * size;
  cl_mem reuse = NULL;
  if (!ledger_reserve(device, bytes, label, &reuse, error))
    return NULL;
  g_autoptr(RokClBuffer) buffer = g_new0(RokClBuffer, 1);
  buffer->device = device;
  buffer->dtype = dtype;
  buffer->elements = elements;
  buffer->bytes = bytes;
  buffer->label = g_strdup(label);
  cl_int status = CL_SUCCESS;
  /* OpenCL refuses empty buffers; an empty tensor still gets a handle. */
  buffer->mem = reuse != NULL ? reuse
                              : clCreateBuffer(device->context, CL_MEM_READ_WRITE, MAX(bytes, 8), NULL, &status);
  if (status != CL_SUCCESS) {
    g_autofree char *text = g_format_size_full(bytes, G_FORMAT_SIZE_IEC_UNITS);
    return rok_cl_fail(error, status, "allocating '%s' (%s) on %s", label, text, device->info->name), NULL;
  }
  if (commit && !commit_buffer(buffer, error))
    return NULL;
  return g_steal_pointer(&buffer);
}

void rok_cl_buffer_free(RokClBuffer *buffer) {
  if (buffer == NULL)
    return;
  /* Releasing is safe with commands still pending: OpenCL keeps the memory
   * until they complete. The ledger counts it as free from now on. */
  if (buffer->mem != NULL)
    clReleaseMemObject(buffer->mem);
  ledger_release(buffer->device, buffer->bytes);
  g_free(buffer->label);
  g_free(buffer);
}

void rok_cl_buffer_recycle(RokClBuffer *buffer, gboolean compute_pending) {
  if (buffer == NULL)
    return;
  RokClDevice *device = buffer->device;
  if (buffer->mem != NULL) {
    Idle *idle = g_new(Idle, 1);
    *idle = (Idle){.mem = buffer->mem, .waiting = compute_pending};
    guint64 size = MAX(buffer->bytes, 8);
    g_mutex_lock(&device->ledger_lock);
    if (device->idle == NULL)
      device->idle = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    GSList *same = g_hash_table_lookup(device->idle, &size);
    g_hash_table_insert(device->idle, g_memdup2(&size, sizeof size), g_slist_prepend(same, idle));
    device->idle_bytes += size;
    if (compute_pending)
      device->waiting = g_slist_prepend(device->waiting, idle);
    g_mutex_unlock(&device->ledger_lock);
    buffer->mem = NULL;
  }
  rok_cl_buffer_free(buffer);
}

GSList *device_cl_compute_waiting(RokClDevice *device) {
  g_mutex_lock(&device->ledger_lock);
  GSList *waiting = g_steal_pointer(&device->waiting);
  g_mutex_unlock(&device->ledger_lock);
  return waiting;
}

void device_cl_compute_marked(RokClDevice *device, GSList *waiting, gboolean marked, cl_event after) {
  g_mutex_lock(&device->ledger_lock);
  for (GSList *l = waiting, *next; l != NULL; l = next) {
    next = l->next;
    Idle *idle = l->data;
    if (marked && (after == NULL || clRetainEvent(after) == CL_SUCCESS)) {
      idle->waiting = FALSE;
      idle->after = after;
      waiting = g_slist_delete_link(waiting, l);
    }
  }
  device->waiting = g_slist_concat(waiting, device->waiting); /* those still waiting */
  g_mutex_unlock(&device->ledger_lock);
}

void device_cl_idle_release(RokClDevice *device) {
  g_mutex_lock(&device->ledger_lock);
  GHashTable *idle = g_steal_pointer(&device->idle);
  device->idle_bytes = 0;
  g_clear_pointer(&device->waiting, g_slist_free); /* their entries are in idle */
  g_mutex_unlock(&device->ledger_lock);
  if (idle == NULL)
    return;
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, idle);
  while (g_hash_table_iter_next(&it, NULL, &value))
    g_slist_free_full(value, idle_release);
  g_hash_table_destroy(idle);
}

guint64 rok_cl_device_idle_bytes(RokClDevice *device) {
  g_mutex_lock(&device->ledger_lock);
  guint64 value = device->idle_bytes;
  g_mutex_unlock(&device->ledger_lock);
  return value;
}

static gboolean check_range(const RokClBuffer *buffer, guint64 offset, guint64 bytes, const char *what,
                            GError **error) {
  if (offset > buffer->bytes || bytes > buffer->bytes - offset) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "%s '%s': bytes %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT " are outside its %" G_GUINT64_FORMAT
                " bytes",
                what, buffer->label, offset, offset + bytes, buffer->bytes);
    return FALSE;
  }
  return TRUE;
}

gboolean rok_cl_buffer_write(RokClBuffer *buffer, RokClQueue queue, guint64 offset, guint64 bytes,
                             const void *src, gboolean blocking, guint n_wait, const cl_event *wait,
                             cl_event *event, GError **error) {
  if (!check_range(buffer, offset, bytes, "writing to", error))
    return FALSE;
  if (bytes == 0)
    return event == NULL || rok_cl_device_marker(buffer->device, queue, event, error);
  cl_int status = clEnqueueWriteBuffer(buffer->device->queues[queue], buffer->mem, blocking ? CL_TRUE : CL_FALSE,
                                       offset, bytes, src, n_wait, n_wait > 0 ? wait : NULL, event);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "copying %" G_GUINT64_FORMAT " bytes to '%s' on the %s queue", bytes,
                       buffer->label, rok_cl_queue_name(queue));
  return TRUE;
}

gboolean rok_cl_buffer_read(RokClBuffer *buffer, RokClQueue queue, guint64 offset, guint64 bytes, void *dst,
                            gboolean blocking, guint n_wait, const cl_event *wait, cl_event *event,
                            GError **error) {
  if (!check_range(buffer, offset, bytes, "reading from", error))
    return FALSE;
  if (bytes == 0)
    return event == NULL || rok_cl_device_marker(buffer->device, queue, event, error);
  cl_int status = clEnqueueReadBuffer(buffer->device->queues[queue], buffer->mem, blocking ? CL_TRUE : CL_FALSE,
                                      offset, bytes, dst, n_wait, n_wait > 0 ? wait : NULL, event);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "copying %" G_GUINT64_FORMAT " bytes from '%s' on the %s queue", bytes,
                       buffer->label, rok_cl_queue_name(queue));
  return TRUE;
}

gboolean rok_cl_buffer_zero(RokClBuffer *buffer, GError **error) {
  static const cl_uchar zero = 0;
  if (buffer->bytes == 0)
    return TRUE;
  cl_int status = clEnqueueFillBuffer(buffer->device->queues[ROK_CL_QUEUE_COMPUTE], buffer->mem, &zero,
                                      sizeof zero, 0, buffer->bytes, 0, NULL, NULL);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "zeroing '%s'", buffer->label);
  return TRUE;
}

gboolean rok_cl_buffer_copy(RokClBuffer *src, guint64 src_offset, RokClBuffer *dst, guint64 dst_offset,
                            guint64 bytes, GError **error) {
  if (!check_range(src, src_offset, bytes, "copying from", error) ||
      !check_range(dst, dst_offset, bytes, "copying to", error))
    return FALSE;
  if (bytes == 0)
    return TRUE;
  cl_int status = clEnqueueCopyBuffer(src->device->queues[ROK_CL_QUEUE_COMPUTE], src->mem, dst->mem, src_offset,
                                      dst_offset, bytes, 0, NULL, NULL);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "copying '%s' to '%s'", src->label, dst->label);
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
