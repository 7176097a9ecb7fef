/* The device struct, shared by the files of the device layer only. */
#pragma once

#ifdef ROK_WITH_OPENCL

#include "rok/device.h"

struct _RokClDevice {
  RokClDeviceInfo *info;
  cl_platform_id platform;
  cl_device_id id;
  cl_context context;
  cl_command_queue queues[ROK_CL_QUEUE_COUNT];
  GMutex ledger_lock; /* guards the fields below */
  guint64 allocated;
  guint64 peak;
  guint buffers;
  GHashTable *idle;   /* size in bytes -> GSList of the buffers recycled idle (cl-buffer.c) */
  guint64 idle_bytes; /* their bytes */
  GSList *waiting;    /* those of them waiting for a compute marker or finish */
};

/* Release every idle buffer (cl-buffer.c). */
void device_cl_idle_release(RokClDevice *device);

/* Idle buffers recycled while compute commands may use them are reused
 * once the queue is past those commands, with no command of their own:
 * before the compute queue is marked or finished, take those waiting
 * (recycled before it, so their commands come before it); after, hand
 * them back with whether it was (`marked`), and the marker (NULL: the
 * queue finished). */
GSList *device_cl_compute_waiting(RokClDevice *device);
void device_cl_compute_marked(RokClDevice *device, GSList *waiting, gboolean marked, cl_event after);

#endif /* ROK_WITH_OPENCL */
