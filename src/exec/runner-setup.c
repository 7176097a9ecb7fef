/* Everything a run needs, made before it starts and checked against this
 * machine (device memory, host memory, disk space), and taken apart after
 * it, on success, error and cancellation alike: the streams' threads, the
 * device, kernels and model, the pinned pools, the store (which removes its
 * work folders). */
#ifdef ROK_WITH_OPENCL

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runner-private.h"
#include "rok/core.h"

static void note(Runner *r, char *text) {
  g_ptr_array_add(r->notes, text);
}

static gboolean too_big(GError **error, RokErrorCode code, const char *what, guint64 need, const char *detail,
                        const char *where, guint64 have) {
  g_autofree char *n = rok_units_format_size(need), *h = rok_units_format_size(have);
  g_set_error(error, ROK_ERROR, code, "the schedule is too big to run here: it needs %s of %s (%s); %s has %s", n, what,
              detail, where, h);
  return FALSE;
}

/* Host memory free for new allocations (MemAvailable), or 0 if unknown. */
static guint64 host_available(void) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/meminfo", &text, NULL, NULL))
    return 0;
  const char *line = strstr(text, "MemAvailable:");
  guint64 kib = 0;
  return line != NULL && sscanf(line, "MemAvailable: %" G_GUINT64_FORMAT, &kib) == 1 ? kib * 1024 : 0;
}

/* Pool sizes. Copies to the SSDs hold staging slots as the simulator's
 * timeline holds its pinned buffer (reservations up to its peak, at least
 * the largest copy: the simulator lets a tensor larger than the buffer
 * through an empty one), plus room for gpudirect legs' passing chunks.
 * Copies to host memory keep their chunks, so their pool holds them all. */
static void pool_sizes(const Runner *r, guint64 *staging, guint64 *limit, guint64 *host) {
  const RunnerProgram *p = &r->prog;
  guint64 depth = CLAMP(r->schedule->hw->nvme.queue_depth, 1, 64);
  *limit = MAX(p->staging_peak, p->staged_largest);
  *staging = *limit + (p->gpudirect_legs > 0 ? depth * p->slot_bytes : 0);
  *host = p->host_total;
}

static guint64 predicted_activations(const Runner *r) {
  json_object *value = NULL;
  if (json_object_object_get_ex(r->schedule->predicted, "activation_peak_bytes", &value))
    return (guint64)json_object_get_uint64(value);
  return 0;
}

static gboolean check_device(Runner *r, GError **error) {
  const RokClDeviceInfo *info = rok_cl_device_info(r->device);
  if (r->prog.largest_tensor > info->max_alloc) {
    g_autofree char *where = g_strdup_printf("%s (CL_DEVICE_MAX_MEM_ALLOC_SIZE)", info->name);
    return too_big(error, ROK_ERROR_DEVICE, "device memory in one buffer", r->prog.largest_tensor, "its largest tensor",
                   where, info->max_alloc);
  }
  guint64 fixed = rok_cl_device_allocated(r->device);
  guint64 act = predicted_activations(r);
  if (fixed + act <= info->global_memory)
    return TRUE;
  g_autofree char *f = rok_units_format_size(fixed), *a = rok_units_format_size(act);
  g_autofree char *detail =
      g_strdup_printf("parameters, gradients and optimizer states %s, the predicted activation peak %s", f, a);
  return too_big(error, ROK_ERROR_DEVICE, "device memory", fixed + act, detail, info->name, info->global_memory);
}

/* A CPU device's memory is host memory: its activations count here too
 * (its parameters are allocated and written by now). */
static gboolean check_host(Runner *r, guint64 staging, guint64 host, GError **error) {
  guint64 available = host_available();
  guint64 device = g_str_equal(rok_cl_device_info(r->device)->type, "cpu") ? predicted_activations(r) : 0;
  if (available == 0 || staging + host + device <= available)
    return TRUE;
  g_autofree char *s = rok_units_format_size(staging), *h = rok_units_format_size(host);
  g_autofree char *d = rok_units_format_size(device);
  g_autofree char *detail = g_strdup_printf("staging %s, copies kept in host memory %s, the CPU device's "
                                            "activations %s",
                                            s, h, d);
  return too_big(error, ROK_ERROR_IO, "host memory", staging + host + device, detail, "this machine (MemAvailable)",
                 available);
}

/* Before any parameter is made: the trace's parameters (values and fp32
 * gradients, or its fixed memory when that is more: see reserve_optimizer)
 * and the predicted activation peak must fit the device. */
static gboolean check_estimate(Runner *r, RokDtype act, GError **error) {
  const RokClDeviceInfo *info = rok_cl_device_info(r->device);
  const RokFixedMemory *f = &r->trace->fixed;
  guint64 params = MAX(f->params_per_gpu * (rok_dtype_bytes(act) + 4),
                       rok_fixed_memory_bytes(f));
  guint64 acts = predicted_activations(r);
  if (params + acts <= info->global_memory)
    return TRUE;
  g_autofree char *fs = rok_units_format_size(params), *a = rok_units_format_size(acts);
  g_autofree char *detail =
      g_strdup_printf("parameters, gradients and optimizer states about %s, the predicted activation peak %s", fs, a);
  return too_big(error, ROK_ERROR_DEVICE, "device memory", params + acts, detail, info->name, info->global_memory);
}

/* The trace's fixed memory is what a real step holds: weights, gradients
 * and the optimizer's states (and master weights). The executor runs no
 * optimizer, so the part of it that its parameters and their fp32 gradient
 * accumulators do not take is reserved as one buffer (zeroed, so that the
 * memory is really there): the ledger holds the bytes the plan counted,
 * and a schedule that would not fit with its optimizer does not fit here. */
static gboolean reserve_optimizer(Runner *r, GError **error) {
  const RokFixedMemory *f = &r->trace->fixed;
  guint64 want = rok_fixed_memory_bytes(f);
  guint64 have = rok_exec_model_param_bytes(r->model);
  if (want <= have)
    return TRUE;
  r->reserved = rok_cl_buffer_new(r->device, ROK_DTYPE_U8, want - have, "optimizer states (reserved)", FALSE, error);
  if (r->reserved == NULL || !rok_cl_buffer_zero(r->reserved, error))
    return FALSE;
  g_autofree char *p = rok_units_format_size(have), *o = rok_units_format_size(want - have);
  note(r, g_strdup_printf("parameters and their fp32 gradients take %s; the rest of the fixed memory the plan "
                          "counts (optimizer states, master weights: %s) is reserved, unused",
                          p, o));
  return TRUE;
}

static gboolean open_compute(Runner *r, GError **error) {
  r->device = rok_cl_device_open(r->options.device, error);
  if (r->device == NULL)
    return FALSE;
  const RokClDeviceInfo *info = rok_cl_device_info(r->device);
  r->report->device = g_strdup(info->name);
  r->report->device_type = g_strdup(info->type);
  r->report->platform = g_strdup(info->platform);
  if (g_str_equal(info->type, "cpu"))
    note(r, g_strdup_printf("%s is a CPU device: its memory is host memory and a copy is a memcpy on the threads "
                            "that run kernels (no copy engine), so copies wait for kernels and slow them down",
                            info->name));
  if (g_str_equal(info->type, "cpu") && !info->out_of_order)
    note(r, g_strdup("the device cannot run command queues out of order, so its copy queues run in order: a copy "
                     "enqueued behind another waits for the kernel launched meanwhile (a profile says so with "
                     "gpu.copy_queues_in_order, which `rok calibrate` sets on this device)"));
  RokDtype act = rok_trace_activation_dtype(r->trace);
  if (!check_estimate(r, act, error))
    return FALSE;
  r->kernels = rok_cl_kernels_new(r->device, act, error);
  if (r->kernels == NULL)
    return FALSE;
  rok_cl_kernels_set_cancel(r->kernels, &r->cancelled); /* a long GEMM stops between its chunks */
  r->model = rok_exec_model_new(r->kernels, r->trace, r->options.seed, error);
  if (r->model == NULL || !reserve_optimizer(r, error))
    return FALSE;
  r->sums = rok_cl_buffer_new(r->device, ROK_DTYPE_I64, MAX(r->prog.copies->len, 1), "copy checksums", TRUE, error);
  return r->sums != NULL;
}

/* Register a pool with OpenCL (CL_MEM_USE_HOST_PTR, mapped for the run), so
 * that a GPU driver can pin it and copy at full speed. Optional. */
static void pin_pool(Runner *r, RokStaging *pool, guint index) {
  gsize bytes = rok_staging_n_slots(pool) * rok_staging_slot_bytes(pool);
  void *base = rok_staging_slot(pool, 0);
  cl_int status = CL_SUCCESS;
  cl_mem mem =
      clCreateBuffer(rok_cl_device_context(r->device), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, base, &status);
  void *ptr = NULL;
  if (status == CL_SUCCESS)
    ptr = clEnqueueMapBuffer(rok_cl_device_queue(r->device, ROK_CL_QUEUE_D2H), mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                             0, bytes, 0, NULL, NULL, &status);
  if (status != CL_SUCCESS || ptr != base) {
    note(r, g_strdup_printf("a staging pool could not be registered with OpenCL (%s): copies use it unpinned",
                            rok_cl_status_name(status)));
    if (ptr != NULL)
      clEnqueueUnmapMemObject(rok_cl_device_queue(r->device, ROK_CL_QUEUE_D2H), mem, ptr, 0, NULL, NULL);
    if (mem != NULL)
      clReleaseMemObject(mem);
    return;
  }
  r->pinned[index] = mem;
  r->pinned_ptr[index] = ptr;
}

static gboolean make_pools(Runner *r, GError **error) {
  guint64 staging = 0, host = 0, limit = 0;
  pool_sizes(r, &staging, &limit, &host);
  r->gate_limit = limit / r->prog.slot_bytes;
  if (!check_host(r, staging, host, error))
    return FALSE;
  if (staging > 0 && (r->staging = rok_staging_new(r->prog.slot_bytes, staging, error)) == NULL)
    return FALSE;
  if (host > 0 && (r->host_pool = rok_staging_new(r->prog.slot_bytes, host, error)) == NULL)
    return FALSE;
  RokStaging *pools[] = {r->staging, r->host_pool};
  for (guint i = 0; i < 2; i++)
    if (pools[i] != NULL) {
      pin_pool(r, pools[i], i);
      if (!rok_staging_locked(pools[i]))
        note(r, g_strdup_printf("the %s pool is not locked in memory (mlock: %s)", i == 0 ? "staging" : "host copy",
                                g_strerror(rok_staging_lock_error(pools[i]))));
    }
  r->report->staging_bytes = staging;
  r->report->host_pool_bytes = host;
  r->report->slot_bytes = r->prog.slot_bytes;
  return TRUE;
}

static gboolean backend_kind(const char *name, RokIoBackendKind *kind, GError **error) {
  if (name == NULL || g_str_equal(name, "auto"))
    *kind = ROK_IO_BACKEND_AUTO;
  else if (g_str_equal(name, "io_uring"))
    *kind = ROK_IO_BACKEND_URING;
  else if (g_str_equal(name, "psync"))
    *kind = ROK_IO_BACKEND_PSYNC;
  else {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "unknown I/O backend \"%s\" (expected auto, io_uring or psync)",
                name);
    return FALSE;
  }
  return TRUE;
}

static gboolean open_store(Runner *r, GError **error) {
  if (r->prog.stored_total == 0) {
    if (r->options.dirs != NULL && r->options.dirs[0] != NULL)
      note(r, g_strdup("the schedule writes nothing to the SSDs: the directories were not used"));
    return TRUE;
  }
  if (r->options.dirs == NULL || r->options.dirs[0] == NULL) {
    g_autofree char *size = rok_units_format_size(r->prog.stored_total);
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "the schedule writes tensors to the SSDs (%s): give a directory on each disk to use (--dir DIR)", size);
    return FALSE;
  }
  RokStoreOptions so;
  rok_store_options_init(&so);
  if (r->options.faults != NULL)
    so.faults = r->options.faults;
  so.queue_depth = (guint)CLAMP(r->schedule->hw->nvme.queue_depth, 1, 4096);
  so.reserve_bytes = r->prog.disk_peak;
  if (!backend_kind(r->options.backend, &so.backend, error) ||
      (r->store = rok_store_open(r->options.dirs, r->staging, &so, error)) == NULL)
    return FALSE;
  for (const char *const *n = rok_store_notes(r->store); *n != NULL; n++)
    note(r, g_strdup(*n));
  r->report->backend = g_strdup(rok_store_backend_name(r->store));
  r->report->direct = TRUE;
  for (guint d = 0; d < rok_store_n_dirs(r->store); d++) {
    r->report->direct &= rok_store_direct(r->store, d);
    g_ptr_array_add(r->report->dirs, g_strdup(rok_store_workdir(r->store, d)));
  }
  return TRUE;
}

static gboolean start_threads(Runner *r, GError **error) {
  for (guint s = 0; s < ROK_STREAM_ALL_COUNT; s++) {
    r->work[s] = g_async_queue_new();
    r->workers[s] = (RunnerWorker){.r = r, .stream = s};
    for (guint l = 0; l < runner_threads(s); l++) {
      g_autofree char *name = g_strdup_printf("rok-%s", rok_stream_name(s));
      r->threads[s][l] = g_thread_try_new(name, runner_worker_thread, &r->workers[s], error);
      if (r->threads[s][l] == NULL)
        return FALSE;
    }
  }
  return TRUE;
}

static void state_new(Runner *r) {
  const RunnerProgram *p = &r->prog;
  r->buffers = g_new0(RokClBuffer *, MAX((gsize)p->n_mb * p->n_tensors, 1));
  r->view = g_new0(RokClBuffer *, MAX(p->n_tensors, 1));
  r->rec = g_new0(RunnerRecord, p->n_actions);
  r->copies = g_new0(RunnerCopyState, MAX(p->copies->len, 1));
  r->slots = g_new(int, MAX(p->n_chunks, 1));
  r->chunk_sums = g_new0(guint64, MAX(p->n_chunks, 1));
  r->gate_taken = g_new0(guint8, MAX(p->n_tickets, 1));
  for (guint i = 0; i < p->n_chunks; i++)
    r->slots[i] = -1;
  for (guint i = 0; i < p->copies->len; i++)
    r->copies[i].pool = runner_copy(p, i)->host ? r->host_pool : r->staging;
}

gboolean runner_setup(Runner *r, GError **error) {
  if (!open_compute(r, error) || !check_device(r, error) || !make_pools(r, error) || !open_store(r, error))
    return FALSE;
  state_new(r);
  return start_threads(r, error);
}

static void stop_threads(Runner *r) {
  for (guint s = 0; s < ROK_STREAM_ALL_COUNT; s++)
    for (guint l = 0; l < runner_threads(s); l++)
      if (r->threads[s][l] != NULL)
        g_async_queue_push(r->work[s], runner_msg(RUN_TASK_STOP));
  for (guint s = 0; s < ROK_STREAM_ALL_COUNT; s++)
    for (guint l = 0; l < runner_threads(s); l++)
      if (r->threads[s][l] != NULL) {
        g_thread_join(r->threads[s][l]);
        r->threads[s][l] = NULL;
      }
  for (guint s = 0; s < ROK_STREAM_ALL_COUNT; s++)
    g_clear_pointer(&r->work[s], g_async_queue_unref);
}

static void unpin_pools(Runner *r) {
  for (guint i = 0; i < 2; i++)
    if (r->pinned[i] != NULL) {
      cl_command_queue q = rok_cl_device_queue(r->device, ROK_CL_QUEUE_D2H);
      clEnqueueUnmapMemObject(q, r->pinned[i], r->pinned_ptr[i], 0, NULL, NULL);
      clFinish(q);
      clReleaseMemObject(r->pinned[i]);
      r->pinned[i] = NULL;
    }
}

void runner_teardown(Runner *r) {
  stop_threads(r);
  if (r->store != NULL)
    rok_store_drain(r->store);
  if (r->copies != NULL)
    runner_copies_clear(r);
  if (r->buffers != NULL)
    runner_buffers_clear(r);
  if (r->device != NULL)
    rok_cl_device_finish_all(r->device, NULL);
  g_clear_pointer(&r->sums, rok_cl_buffer_free);
  g_clear_pointer(&r->reserved, rok_cl_buffer_free);
  g_clear_pointer(&r->model, rok_exec_model_free);
  g_clear_pointer(&r->kernels, rok_cl_kernels_free);
  if (r->store != NULL && !rok_store_remove_workdirs(r->store, &r->removal_error))
    g_prefix_error(&r->removal_error, "after the run: ");
  g_clear_pointer(&r->store, rok_store_free);
  if (r->device != NULL)
    unpin_pools(r);
  g_clear_pointer(&r->staging, rok_staging_free);
  g_clear_pointer(&r->host_pool, rok_staging_free);
  g_clear_pointer(&r->device, rok_cl_device_free);
  g_clear_pointer(&r->buffers, g_free);
  g_clear_pointer(&r->view, g_free);
  g_clear_pointer(&r->rec, g_free);
  g_clear_pointer(&r->copies, g_free);
  g_clear_pointer(&r->slots, g_free);
  g_clear_pointer(&r->chunk_sums, g_free);
  g_clear_pointer(&r->gate_taken, g_free);
}

#endif /* ROK_WITH_OPENCL */
