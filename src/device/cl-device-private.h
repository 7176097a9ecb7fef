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
  GMutex ledger_lock; /* guards the three fields below */
  guint64 allocated;
  guint64 peak;
  guint buffers;
};

#endif /* ROK_WITH_OPENCL */
