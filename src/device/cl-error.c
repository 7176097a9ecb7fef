/* OpenCL status names and the ROK_ERROR_DEVICE errors built from them. */
#ifdef ROK_WITH_OPENCL

#include <stdarg.h>

#include <CL/cl_ext.h> /* CL_PLATFORM_NOT_FOUND_KHR */

#include "rok/device.h"
#include "rok/core.h"

/* Statuses of OpenCL 1.2 and the ICD loader, by name. */
const char *rok_cl_status_name(cl_int status) {
#define NAME(code) {code, #code}
  static const struct {
    cl_int status;
    const char *name;
  } names[] = {
    NAME(CL_SUCCESS),
    NAME(CL_DEVICE_NOT_FOUND),
    NAME(CL_DEVICE_NOT_AVAILABLE),
    NAME(CL_COMPILER_NOT_AVAILABLE),
    NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE),
    NAME(CL_OUT_OF_RESOURCES),
    NAME(CL_OUT_OF_HOST_MEMORY),
    NAME(CL_PROFILING_INFO_NOT_AVAILABLE),
    NAME(CL_MEM_COPY_OVERLAP),
    NAME(CL_IMAGE_FORMAT_MISMATCH),
    NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED),
    NAME(CL_BUILD_PROGRAM_FAILURE),
    NAME(CL_MAP_FAILURE),
    NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET),
    NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
    NAME(CL_COMPILE_PROGRAM_FAILURE),
    NAME(CL_LINKER_NOT_AVAILABLE),
    NAME(CL_LINK_PROGRAM_FAILURE),
    NAME(CL_DEVICE_PARTITION_FAILED),
    NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE),
    NAME(CL_INVALID_VALUE),
    NAME(CL_INVALID_DEVICE_TYPE),
    NAME(CL_INVALID_PLATFORM),
    NAME(CL_INVALID_DEVICE),
    NAME(CL_INVALID_CONTEXT),
    NAME(CL_INVALID_QUEUE_PROPERTIES),
    NAME(CL_INVALID_COMMAND_QUEUE),
    NAME(CL_INVALID_HOST_PTR),
    NAME(CL_INVALID_MEM_OBJECT),
    NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR),
    NAME(CL_INVALID_IMAGE_SIZE),
    NAME(CL_INVALID_SAMPLER),
    NAME(CL_INVALID_BINARY),
    NAME(CL_INVALID_BUILD_OPTIONS),
    NAME(CL_INVALID_PROGRAM),
    NAME(CL_INVALID_PROGRAM_EXECUTABLE),
    NAME(CL_INVALID_KERNEL_NAME),
    NAME(CL_INVALID_KERNEL_DEFINITION),
    NAME(CL_INVALID_KERNEL),
    NAME(CL_INVALID_ARG_INDEX),
    NAME(CL_INVALID_ARG_VALUE),
    NAME(CL_INVALID_ARG_SIZE),
    NAME(CL_INVALID_KERNEL_ARGS),
    NAME(CL_INVALID_WORK_DIMENSION),
    NAME(CL_INVALID_WORK_GROUP_SIZE),
    NAME(CL_INVALID_WORK_ITEM_SIZE),
    NAME(CL_INVALID_GLOBAL_OFFSET),
    NAME(CL_INVALID_EVENT_WAIT_LIST),
    NAME(CL_INVALID_EVENT),
    NAME(CL_INVALID_OPERATION),
    NAME(CL_INVALID_GL_OBJECT),
    NAME(CL_INVALID_BUFFER_SIZE),
    NAME(CL_INVALID_MIP_LEVEL),
    NAME(CL_INVALID_GLOBAL_WORK_SIZE),
    NAME(CL_INVALID_PROPERTY),
    NAME(CL_INVALID_IMAGE_DESCRIPTOR),
    NAME(CL_INVALID_COMPILER_OPTIONS),
    NAME(CL_INVALID_LINKER_OPTIONS),
    NAME(CL_INVALID_DEVICE_PARTITION_COUNT),
    NAME(CL_PLATFORM_NOT_FOUND_KHR),
  };
#undef NAME
  for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
    if (names[i].status == status)
      return names[i].name;
  return "CL_ERROR(unknown status)";
}

static gboolean status_is_out_of_memory(cl_int status) {
  return status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
         status == CL_OUT_OF_HOST_MEMORY || status == CL_INVALID_BUFFER_SIZE;
}

gboolean rok_cl_fail(GError **error, cl_int status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *what = g_strdup_vprintf(format, args);
  va_end(args);
  const char *name = rok_cl_status_name(status);
  if (g_str_has_prefix(name, "CL_ERROR("))
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: OpenCL error %d", what, (int)status);
  else
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "%s: %s%s", what, name,
                status_is_out_of_memory(status) ? " (out of device memory or resources)" : "");
  return FALSE;
}

#endif /* ROK_WITH_OPENCL */
