/* Building programs from source, with the build log on failure. */
#ifdef ROK_WITH_OPENCL

#include <string.h>

#include "cl-program.h"
#include "rok/core.h"

const RokClSource *device_cl_source_find(const char *name) {
  for (guint i = 0; i < device_cl_source_count; i++)
    if (strcmp(device_cl_sources[i].name, name) == 0)
      return &device_cl_sources[i];
  return NULL;
}

static char *build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) != CL_SUCCESS || size == 0)
    return g_strdup("(no build log)");
  char *log = g_malloc0(size + 1);
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
  g_strstrip(log);
  if (*log == '\0') {
    g_free(log);
    return g_strdup("(empty build log)");
  }
  return log;
}

static char *source_names(const RokClSource *sources, guint n) {
  GString *names = g_string_new(NULL);
  for (guint i = 0; i < n; i++)
    g_string_append_printf(names, "%s%s", i > 0 ? ", " : "", sources[i].name);
  return g_string_free(names, FALSE);
}

cl_program device_cl_program_build(RokClDevice *device, const RokClSource *sources, guint n, const char *options,
                                GError **error) {
  /* A #line before each source makes the build log name the .cl file and
   * its own line numbers. */
  g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
  g_autofree const char **texts = g_new0(const char *, 2 * n + 1);
  g_autofree size_t *lengths = g_new0(size_t, 2 * n + 1);
  for (guint i = 0; i < n; i++) {
    char *line = g_strdup_printf("\n#line 1 \"%s\"\n", sources[i].name);
    g_ptr_array_add(lines, line);
    texts[2 * i] = line;
    lengths[2 * i] = strlen(line);
    texts[2 * i + 1] = sources[i].text;
    lengths[2 * i + 1] = sources[i].length;
  }
  g_autofree char *names = source_names(sources, n);
  const RokClDeviceInfo *info = rok_cl_device_info(device);
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(rok_cl_device_context(device), 2 * n, texts, lengths, &status);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "loading OpenCL sources %s", names), NULL;
  cl_device_id id = rok_cl_device_id(device);
  status = clBuildProgram(program, 1, &id, options, NULL, NULL);
  if (status != CL_SUCCESS) {
    g_autofree char *log = build_log(program, id);
    clReleaseProgram(program);
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "building OpenCL kernels (%s) for %s with options \"%s\" failed: %s\nbuild log:\n%s", names,
                info->name, options != NULL ? options : "", rok_cl_status_name(status), log);
    return NULL;
  }
  return program;
}

cl_program device_cl_program_build_embedded(RokClDevice *device, const char *options, GError **error) {
  const RokClSource *common = device_cl_source_find("common.cl");
  if (common == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "the embedded OpenCL sources lack common.cl");
    return NULL;
  }
  g_autoptr(GArray) ordered = g_array_new(FALSE, FALSE, sizeof(RokClSource));
  g_array_append_val(ordered, *common);
  for (guint i = 0; i < device_cl_source_count; i++)
    if (&device_cl_sources[i] != common)
      g_array_append_val(ordered, device_cl_sources[i]);
  return device_cl_program_build(device, (const RokClSource *)ordered->data, ordered->len, options, error);
}

#endif /* ROK_WITH_OPENCL */
