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
};

/* Release every idle buffer (cl-buffer.c). */
void device_cl_idle_release(RokClDevice *device);

#endif /* ROK_WITH_OPENCL */
