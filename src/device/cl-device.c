/* Enumerating OpenCL devices, picking one, opening it with its queues. */
#ifdef ROK_WITH_OPENCL

#include <CL/cl_ext.h> /* CL_PLATFORM_NOT_FOUND_KHR */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cl-device-private.h"
#include "rok/core.h"

void rok_cl_device_info_free(RokClDeviceInfo *info) {
  if (info == NULL)
    return;
  g_free(info->name);
  g_free(info->vendor);
  g_free(info->platform);
  g_free(info->version);
  g_free(info->c_version);
  g_free(info->driver);
  g_free(info);
}

/* A string property, trimmed (drivers pad some with spaces). */
static char *device_string(cl_device_id device, cl_device_info param) {
  size_t size = 0;
  if (clGetDeviceInfo(device, param, 0, NULL, &size) != CL_SUCCESS || size == 0)
    return g_strdup("?");
  char *text = g_malloc0(size + 1);
  if (clGetDeviceInfo(device, param, size, text, NULL) != CL_SUCCESS) {
    g_free(text);
    return g_strdup("?");
  }
  return g_strstrip(text);
}

static char *platform_string(cl_platform_id platform, cl_platform_info param) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, param, 0, NULL, &size) != CL_SUCCESS || size == 0)
    return g_strdup("?");
  char *text = g_malloc0(size + 1);
  if (clGetPlatformInfo(platform, param, size, text, NULL) != CL_SUCCESS) {
    g_free(text);
    return g_strdup("?");
  }
  return g_strstrip(text);
}

static guint64 device_ulong(cl_device_id device, cl_device_info param) {
  cl_ulong value = 0;
  clGetDeviceInfo(device, param, sizeof value, &value, NULL);
  return value;
}

static const char *type_name(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU)
    return "gpu";
  if (type & CL_DEVICE_TYPE_CPU)
    return "cpu";
  if (type & CL_DEVICE_TYPE_ACCELERATOR)
    return "accelerator";
  return "other";
}

static RokClDeviceInfo *describe(guint index, cl_platform_id platform, cl_device_id device) {
  RokClDeviceInfo *info = g_new0(RokClDeviceInfo, 1);
  info->index = index;
  info->name = device_string(device, CL_DEVICE_NAME);
  info->vendor = device_string(device, CL_DEVICE_VENDOR);
  info->platform = platform_string(platform, CL_PLATFORM_NAME);
  info->version = device_string(device, CL_DEVICE_VERSION);
  info->c_version = device_string(device, CL_DEVICE_OPENCL_C_VERSION);
  info->driver = device_string(device, CL_DRIVER_VERSION);
  cl_device_type type = 0;
  clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  info->type = type_name(type);
  info->global_memory = device_ulong(device, CL_DEVICE_GLOBAL_MEM_SIZE);
  info->max_alloc = device_ulong(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info->local_memory = device_ulong(device, CL_DEVICE_LOCAL_MEM_SIZE);
  cl_uint units = 0;
  clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
  info->compute_units = units;
  size_t work_group = 0;
  clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof work_group, &work_group, NULL);
  info->max_work_group = work_group;
  cl_bool little = CL_FALSE;
  clGetDeviceInfo(device, CL_DEVICE_ENDIAN_LITTLE, sizeof little, &little, NULL);
  info->little_endian = little == CL_TRUE;
  cl_command_queue_properties queues = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_QUEUE_PROPERTIES, sizeof queues, &queues, NULL) == CL_SUCCESS)
    info->out_of_order = (queues & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
  return info;
}

/* Calls `visit` for every device of every platform in enumeration order;
 * stops early when it returns FALSE. */
typedef gboolean (*DeviceVisitor)(guint index, cl_platform_id platform, cl_device_id device, gpointer data);

/* Threads held until the gate opens, so that they all live at once. */
typedef struct {
  GMutex lock;
  GCond opened;
  gboolean open;
} Gate;

static gpointer wait_at_gate(gpointer data) {
  Gate *gate = data;
  g_mutex_lock(&gate->lock);
  while (!gate->open)
    g_cond_wait(&gate->opened, &gate->lock);
  g_mutex_unlock(&gate->lock);
  return NULL;
}

/* A process limit as `ulimit` prints it. */
static char *limit_text(int resource) {
  struct rlimit limit;
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return g_strdup("unlimited");
  return g_strdup_printf("%llu", (unsigned long long)(resource == RLIMIT_AS ? limit.rlim_cur / 1024 : limit.rlim_cur));
}

static gboolean limited(int resource) {
  struct rlimit limit;
  return getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
}

/* Start `wanted` threads that live at once, then end them; NULL or why not. */
static GError *start_threads(guint wanted) {
  Gate gate = {.open = FALSE};
  g_mutex_init(&gate.lock);
  g_cond_init(&gate.opened);
  g_autoptr(GPtrArray) threads = g_ptr_array_new();
  GError *failure = NULL;
  while (threads->len < wanted && failure == NULL) {
    GThread *t = g_thread_try_new("rok-probe", wait_at_gate, &gate, &failure);
    if (t != NULL)
      g_ptr_array_add(threads, t);
  }
  g_mutex_lock(&gate.lock);
  gate.open = TRUE;
  g_cond_broadcast(&gate.opened);
  g_mutex_unlock(&gate.lock);
  for (guint i = 0; i < threads->len; i++)
    g_thread_join(g_ptr_array_index(threads, i));
  g_mutex_clear(&gate.lock);
  g_cond_clear(&gate.opened);
  return failure;
}

/* An OpenCL runtime starts its worker threads when first called, and PoCL
 * aborts the process when it cannot (under a small RLIMIT_NPROC, `ulimit
 * -u`, or RLIMIT_AS, `ulimit -v`, which leaves no room for their stacks).
 * Under such a limit, see first that as many threads as there are cores,
 * and four more, can run at once; once per process, as the runtime starts
 * once. */
static gboolean probe_threads(GError **error) {
  static gint probed;
  if (g_atomic_int_get(&probed) || (!limited(RLIMIT_NPROC) && !limited(RLIMIT_AS)))
    return TRUE;
  guint wanted = g_get_num_processors() + 4;
  GError *failure = start_threads(wanted);
  if (failure != NULL) {
    g_autofree char *nproc = limit_text(RLIMIT_NPROC), *as = limit_text(RLIMIT_AS);
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "cannot start the %u threads an OpenCL runtime may start (%s): "
                "the limits on processes (ulimit -u: %s) or address space (ulimit -v: %s) are too low", wanted,
                failure->message, nproc, as);
    g_error_free(failure);
    return FALSE;
  }
  g_atomic_int_set(&probed, 1);
  return TRUE;
}

/* The threads an OpenCL runtime started: those that appeared during its
 * first calls (it starts its workers once per process, as it loads its
 * devices) and while a context was made. On a CPU device they run the
 * kernels; lower_runtime_threads gives them a lower weight. */
G_LOCK_DEFINE_STATIC(runtime_threads);
typedef struct {
  int tid;
  guint64 started; /* its start time (clock ticks since boot): an id is reused once its thread ends */
} RuntimeThread;
static GArray *runtime_threads; /* RuntimeThread */

/* The ids of this process's threads now (none where /proc is not). */
static GHashTable *thread_ids(void) {
  GHashTable *ids = g_hash_table_new(NULL, NULL);
  GDir *dir = g_dir_open("/proc/self/task", 0, NULL);
  for (const char *name; dir != NULL && (name = g_dir_read_name(dir)) != NULL;)
    g_hash_table_add(ids, GINT_TO_POINTER(atoi(name)));
  if (dir != NULL)
    g_dir_close(dir);
  return ids;
}

/* When thread `tid` started (proc(5): stat's 22nd field, counted after
 * the command name, which may hold spaces); 0 where it has ended. */
static guint64 thread_started(int tid) {
  g_autofree char *path = g_strdup_printf("/proc/self/task/%d/stat", tid), *stat = NULL;
  if (!g_file_get_contents(path, &stat, NULL, NULL))
    return 0;
  const char *rest = strrchr(stat, ')');
  if (rest == NULL)
    return 0;
  g_auto(GStrv) fields = g_strsplit(rest + 2, " ", 21); /* from the 3rd field, state */
  return g_strv_length(fields) > 19 ? g_ascii_strtoull(fields[19], NULL, 10) : 0;
}

/* Those of now not in `before` are the runtime's. */
static void note_runtime_threads(GHashTable *before) {
  g_autoptr(GHashTable) now = thread_ids();
  GHashTableIter it;
  gpointer id;
  G_LOCK(runtime_threads);
  if (runtime_threads == NULL)
    runtime_threads = g_array_new(FALSE, FALSE, sizeof(RuntimeThread));
  for (guint i = runtime_threads->len; i-- > 0;) { /* ended since */
    const RuntimeThread *t = &g_array_index(runtime_threads, RuntimeThread, i);
    if (thread_started(t->tid) != t->started)
      g_array_remove_index_fast(runtime_threads, i);
  }
  g_hash_table_iter_init(&it, now);
  while (g_hash_table_iter_next(&it, &id, NULL))
    if (!g_hash_table_contains(before, id)) {
      RuntimeThread t = {.tid = GPOINTER_TO_INT(id), .started = thread_started(GPOINTER_TO_INT(id))};
      if (t.started > 0)
        g_array_append_val(runtime_threads, t);
    }
  G_UNLOCK(runtime_threads);
}

/* On a CPU device the runtime's workers and rok's stream threads share the
 * processors. At equal weight a stream's thread woken beside a kernel
 * often waited for the processor until the kernel's end, where a GPU's
 * copy engines would have run its copy at once and the simulator has it
 * take a processor from the kernels: validate-gpt's rok row on the
 * development VM (2026-12-02, three alternating runs each of `rok execute
 * --repeat 4`), d2h at 621-960 MB/s against 1189 predicted, eight of 130
 * legs a step taking 1.6-3.3 ms against 54-154 us predicted; with the
 * workers ROK_CL_CPU_WORKER_NICE above the process (a third of the
 * weight) 1200-1540 MB/s, the step 0.46-0.48 s against 0.44-0.48. Raising
 * a thread's nice needs no privilege; lowering it would, so the workers
 * are lowered rather than the streams raised (which also go real-time
 * where rok may: rok_host_thread_prompt). Linux weighs nice only
 * within a task group (sched(7): the session's autogroup, or a cgroup),
 * so jobs of other sessions or cgroups take what they took before. */

static void lower_runtime_threads(void) {
  errno = 0;
  int base = getpriority(PRIO_PROCESS, 0); /* this thread's: Linux keeps nice per thread */
  if (base == -1 && errno != 0)
    return;
  G_LOCK(runtime_threads);
  for (guint i = 0; runtime_threads != NULL && i < runtime_threads->len; i++) /* live: noted just before */
    setpriority(PRIO_PROCESS, (id_t)g_array_index(runtime_threads, RuntimeThread, i).tid,
                MIN(base + ROK_CL_CPU_WORKER_NICE, 19));
  G_UNLOCK(runtime_threads);
}

static gboolean visit_devices(DeviceVisitor visit, gpointer data, GError **error) {
  cl_uint n_platforms = 0;
  cl_int status = clGetPlatformIDs(0, NULL, &n_platforms);
  if (status == CL_PLATFORM_NOT_FOUND_KHR || (status == CL_SUCCESS && n_platforms == 0)) {
    /* The ICD loader cannot load a driver that does not fit the address space. */
    g_autofree char *as = limited(RLIMIT_AS) ? limit_text(RLIMIT_AS) : NULL;
    g_autofree char *why = as != NULL ? g_strdup_printf(", or the address-space limit (ulimit -v: %s) left no room "
                                                        "to load one", as)
                                      : g_strdup("");
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "no OpenCL platform found: install a driver (an ICD), e.g. pocl-opencl-icd for the CPU%s", why);
    return FALSE;
  }
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "listing OpenCL platforms");
  g_autofree cl_platform_id *platforms = g_new0(cl_platform_id, n_platforms);
  clGetPlatformIDs(n_platforms, platforms, NULL);
  guint index = 0;
  for (cl_uint p = 0; p < n_platforms; p++) {
    cl_uint n_devices = 0;
    status = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n_devices);
    if (status == CL_DEVICE_NOT_FOUND || n_devices == 0)
      continue;
    if (status != CL_SUCCESS)
      return rok_cl_fail(error, status, "listing the devices of OpenCL platform %u", p);
    g_autofree cl_device_id *devices = g_new0(cl_device_id, n_devices);
    clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, n_devices, devices, NULL);
    for (cl_uint d = 0; d < n_devices; d++)
      if (!visit(index++, platforms[p], devices[d], data))
        return TRUE;
  }
  return TRUE;
}

/* The runtime starts on its first call, once per process: the threads
 * that appear during the first visit are its. */
static gboolean for_each_device(DeviceVisitor visit, gpointer data, GError **error) {
  static gint visited;
  if (!probe_threads(error))
    return FALSE;
  if (!g_atomic_int_compare_and_exchange(&visited, 0, 1))
    return visit_devices(visit, data, error);
  g_autoptr(GHashTable) before = thread_ids();
  gboolean ok = visit_devices(visit, data, error);
  note_runtime_threads(before);
  return ok;
}

static gboolean collect_info(guint index, cl_platform_id platform, cl_device_id device, gpointer data) {
  g_ptr_array_add(data, describe(index, platform, device));
  return TRUE;
}

GPtrArray *rok_cl_device_list(GError **error) {
  g_autoptr(GPtrArray) infos = g_ptr_array_new_with_free_func((GDestroyNotify)rok_cl_device_info_free);
  if (!for_each_device(collect_info, infos, error))
    return NULL;
  return g_steal_pointer(&infos);
}

gint rok_cl_device_default_index(const GPtrArray *infos) {
  static const char *const preference[] = {"gpu", "cpu"};
  for (gsize p = 0; p < G_N_ELEMENTS(preference); p++)
    for (guint i = 0; i < infos->len; i++) {
      const RokClDeviceInfo *info = g_ptr_array_index(infos, i);
      if (g_strcmp0(info->type, preference[p]) == 0)
        return (gint)i;
    }
  return infos->len > 0 ? 0 : -1;
}

char *rok_cl_device_list_format(const GPtrArray *infos) {
  GString *out = g_string_new(NULL);
  gint chosen = rok_cl_device_default_index(infos);
  g_string_append_printf(out, "  %-3s %-36s %-20s %-5s %10s %4s  %s\n", "#", "name", "vendor", "type", "memory",
                         "CUs", "OpenCL");
  for (guint i = 0; i < infos->len; i++) {
    const RokClDeviceInfo *info = g_ptr_array_index(infos, i);
    g_autofree char *memory = g_format_size_full(info->global_memory, G_FORMAT_SIZE_IEC_UNITS);
    g_string_append_printf(out, "%c %-3u %-36s %-20s %-5s %10s %4u  %s\n", (gint)i == chosen ? '*' : ' ',
                           info->index, info->name, info->vendor, info->type, memory, info->compute_units,
                           info->version);
  }
  if (chosen >= 0)
    g_string_append(out, "(* the default; choose another with --device N)\n");
  return g_string_free(out, FALSE);
}

json_object *rok_cl_device_list_to_json(const GPtrArray *infos) {
  json_object *array = json_object_new_array();
  gint chosen = rok_cl_device_default_index(infos);
  for (guint i = 0; i < infos->len; i++) {
    const RokClDeviceInfo *info = g_ptr_array_index(infos, i);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "index", json_object_new_int64(info->index));
    json_object_object_add(o, "name", json_object_new_string(info->name));
    json_object_object_add(o, "vendor", json_object_new_string(info->vendor));
    json_object_object_add(o, "platform", json_object_new_string(info->platform));
    json_object_object_add(o, "type", json_object_new_string(info->type));
    json_object_object_add(o, "global_memory", json_object_new_uint64(info->global_memory));
    json_object_object_add(o, "max_alloc", json_object_new_uint64(info->max_alloc));
    json_object_object_add(o, "compute_units", json_object_new_int64(info->compute_units));
    json_object_object_add(o, "version", json_object_new_string(info->version));
    json_object_object_add(o, "opencl_c_version", json_object_new_string(info->c_version));
    json_object_object_add(o, "driver", json_object_new_string(info->driver));
    json_object_object_add(o, "out_of_order", json_object_new_boolean(info->out_of_order));
    json_object_object_add(o, "default", json_object_new_boolean((gint)i == chosen));
    json_object_array_add(array, o);
  }
  return array;
}

typedef struct {
  guint wanted;
  cl_platform_id platform;
  cl_device_id device;
} FindDevice;

static gboolean find_device(guint index, cl_platform_id platform, cl_device_id device, gpointer data) {
  FindDevice *find = data;
  if (index != find->wanted)
    return TRUE;
  find->platform = platform;
  find->device = device;
  return FALSE;
}

/* Which index to open: the one asked for, checked, or the default. */
static gboolean choose_index(gint asked, guint *index, GError **error) {
  g_autoptr(GPtrArray) infos = rok_cl_device_list(error);
  if (infos == NULL)
    return FALSE;
  if (infos->len == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "no OpenCL device found on any platform");
    return FALSE;
  }
  if (asked >= (gint)infos->len) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "--device %d: there %s %u OpenCL device%s (0..%u); see `rok execute --list-devices`", asked,
                infos->len == 1 ? "is" : "are", infos->len, infos->len == 1 ? "" : "s", infos->len - 1);
    return FALSE;
  }
  *index = asked >= 0 ? (guint)asked : (guint)rok_cl_device_default_index(infos);
  return TRUE;
}

/* The compute queue runs its kernels in order. The copy queues run out of
 * order where the device allows: their commands depend on nothing queued
 * with them (the tracker waits for what a copy needs), and a copy that
 * waits for the one before it can miss the moment the device is free. On
 * PoCL's CPU device a d2h leg enqueued behind another before a kernel's
 * launch became ready only once that one had ended, by when the kernel
 * held the processors: validate-gpt's offload row (2026-12-02), the 256 KiB
 * dropout outputs primed beside their masks ended 1.3-1.4 ms after them,
 * a 1.5 ms kernel later; out of order, 128-408 us. */
static gboolean create_queues(RokClDevice *device, GError **error) {
  for (int q = 0; q < ROK_CL_QUEUE_COUNT; q++) {
    cl_int status = CL_SUCCESS;
    cl_command_queue_properties props = CL_QUEUE_PROFILING_ENABLE;
    if (q != ROK_CL_QUEUE_COMPUTE && device->info->out_of_order)
      props |= CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
    device->queues[q] = clCreateCommandQueue(device->context, device->id, props, &status);
    if (status != CL_SUCCESS)
      return rok_cl_fail(error, status, "creating the %s command queue on %s", rok_cl_queue_name(q),
                         device->info->name);
  }
  return TRUE;
}

RokClDevice *rok_cl_device_open(gint index, GError **error) {
  guint chosen = 0;
  if (!choose_index(index, &chosen, error))
    return NULL;
  FindDevice find = {.wanted = chosen};
  if (!for_each_device(find_device, &find, error))
    return NULL;
  if (find.device == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "OpenCL device %u disappeared while opening it", chosen);
    return NULL;
  }
  g_autoptr(RokClDevice) device = g_new0(RokClDevice, 1);
  g_mutex_init(&device->ledger_lock);
  device->id = find.device;
  device->platform = find.platform;
  device->info = describe(chosen, find.platform, find.device);
  if (!device->info->little_endian) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "OpenCL device %u (%s) is big-endian: not supported",
                chosen, device->info->name);
    return NULL;
  }
  cl_int status = CL_SUCCESS;
  g_autoptr(GHashTable) before = thread_ids();
  device->context = clCreateContext(NULL, 1, &device->id, NULL, NULL, &status);
  if (status != CL_SUCCESS)
    return rok_cl_fail(error, status, "creating an OpenCL context on %s", device->info->name), NULL;
  if (!create_queues(device, error))
    return NULL;
  note_runtime_threads(before);
  if (strcmp(device->info->type, "cpu") == 0)
    lower_runtime_threads();
  return g_steal_pointer(&device);
}

void rok_cl_device_free(RokClDevice *device) {
  if (device == NULL)
    return;
  for (int q = 0; q < ROK_CL_QUEUE_COUNT; q++)
    if (device->queues[q] != NULL) {
      clFinish(device->queues[q]);
      clReleaseCommandQueue(device->queues[q]);
    }
  device_cl_idle_release(device);
  if (device->buffers > 0)
    g_warning("closing OpenCL device %s with %u buffers (%" G_GUINT64_FORMAT " bytes) still allocated",
              device->info->name, device->buffers, device->allocated);
  if (device->context != NULL)
    clReleaseContext(device->context);
  rok_cl_device_info_free(device->info);
  g_mutex_clear(&device->ledger_lock);
  g_free(device);
}

const RokClDeviceInfo *rok_cl_device_info(const RokClDevice *device) {
  return device->info;
}

cl_device_id rok_cl_device_id(const RokClDevice *device) {
  return device->id;
}

cl_context rok_cl_device_context(const RokClDevice *device) {
  return device->context;
}

cl_command_queue rok_cl_device_queue(const RokClDevice *device, RokClQueue queue) {
  g_return_val_if_fail(queue < ROK_CL_QUEUE_COUNT, NULL);
  return device->queues[queue];
}

const char *rok_cl_queue_name(RokClQueue queue) {
  static const char *const names[] = {"compute", "d2h", "h2d"};
  return queue < ROK_CL_QUEUE_COUNT ? names[queue] : "?";
}

#endif /* ROK_WITH_OPENCL */
