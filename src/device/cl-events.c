/* Ordering between the queues and profiling times. */
#ifdef ROK_WITH_OPENCL

#include "cl-device-private.h"
#include "rok/core.h"

gboolean rok_cl_device_marker(RokClDevice *device, RokClQueue queue, cl_event *event, GError **error) {
  GSList *waiting = queue == ROK_CL_QUEUE_COMPUTE && event != NULL ? device_cl_compute_waiting(device) : NULL;
  cl_int status = clEnqueueMarkerWithWaitList(device->queues[queue], 0, NULL, event);
  if (waiting != NULL)
    device_cl_compute_marked(device, waiting, status == CL_SUCCESS, status == CL_SUCCESS ? *event : NULL);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "marking the %s queue", rok_cl_queue_name(queue));
  return TRUE;
}

gboolean rok_cl_device_wait_events(RokClDevice *device, RokClQueue queue, guint n, const cl_event *events,
                                   GError **error) {
  if (n == 0)
    return TRUE;
  cl_int status = clEnqueueBarrierWithWaitList(device->queues[queue], n, events, NULL);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "making the %s queue wait for %u event%s", rok_cl_queue_name(queue), n,
                       n == 1 ? "" : "s");
  return TRUE;
}

gboolean rok_cl_device_flush(RokClDevice *device, RokClQueue queue, GError **error) {
  cl_int status = clFlush(device->queues[queue]);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "flushing the %s queue", rok_cl_queue_name(queue));
  return TRUE;
}

gboolean rok_cl_device_finish(RokClDevice *device, RokClQueue queue, GError **error) {
  GSList *waiting = queue == ROK_CL_QUEUE_COMPUTE ? device_cl_compute_waiting(device) : NULL;
  cl_int status = clFinish(device->queues[queue]);
  if (waiting != NULL)
    device_cl_compute_marked(device, waiting, status == CL_SUCCESS, NULL);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "waiting for the %s queue", rok_cl_queue_name(queue));
  return TRUE;
}

gboolean rok_cl_device_finish_all(RokClDevice *device, GError **error) {
  for (int q = 0; q < ROK_CL_QUEUE_COUNT; q++)
    if (!rok_cl_device_finish(device, q, error))
      return FALSE;
  return TRUE;
}

gboolean rok_cl_events_wait(guint n, const cl_event *events, GError **error) {
  if (n == 0)
    return TRUE;
  cl_int status = clWaitForEvents(n, events);
  if (status == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
    /* Name the command's own failure rather than the generic status. */
    for (guint i = 0; i < n; i++) {
      cl_int state = CL_COMPLETE;
      clGetEventInfo(events[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, NULL);
      if (state < 0)
        return rok_cl_fail(error, state, "a device command failed");
    }
  }
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "waiting for %u device event%s", n, n == 1 ? "" : "s");
  return TRUE;
}

gboolean rok_cl_event_times(cl_event event, guint64 *start_ns, guint64 *end_ns, GError **error) {
  cl_ulong start = 0, end = 0;
  cl_int status = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
  if (status == CL_SUCCESS)
    status = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "reading an event's profiling times");
  if (start_ns != NULL)
    *start_ns = start;
  if (end_ns != NULL)
    *end_ns = end;
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
