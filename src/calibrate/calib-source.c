/* The profile's "source": what each figure is and how it was measured, in
 * words, with no date or measured number (those are in the figures). */
#include <math.h>
#include "rok/calibrate.h"
#include "rok/core.h"
#include "rok/device.h"

static const RokCalibGemm *best_gemm(const RokCalibDevice *d) {
  const RokCalibGemm *best = NULL;
  for (guint i = 0; i < d->gemms->len; i++) {
    const RokCalibGemm *g = &g_array_index(d->gemms, RokCalibGemm, i);
    if (best == NULL || g->rate.median > best->rate.median)
      best = g;
  }
  return best;
}

static void append_device(GString *s, const RokCalibration *c) {
  const RokCalibDevice *d = &c->device;
  g_string_append_printf(s, "OpenCL device %u \"%s\" (%s, %u compute units) running rok's own kernels with bf16 "
                            "activations. gpu.peak_flops: the best GEMM rate measured",
                         d->index, d->name ? d->name : "?", d->type ? d->type : "?", d->compute_units);
  const RokCalibGemm *b = best_gemm(d);
  if (b != NULL)
    g_string_append_printf(s, " (%s %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "%s)", b->label,
                           b->m, b->n, b->k, b->batch > 1 ? ", batched" : "");
  g_string_append(s, ", not a datasheet peak (OpenCL does not tell one); gpu.sm_count, gpu.gemm_tile and "
                     "gpu.matmul_efficiency: the GEMM model (tile and wave quantisation, the element-wise bandwidth "
                     "as the roofline of small shapes) fitted in log error to every GEMM timed, alone and as the "
                     "layers' linear and attention ops in both directions, launch overhead taken out; "
                     "calibrated_shapes: those GEMMs' shapes and the element-wise ops' smallest and largest bytes; "
                     "gpu.hbm_bandwidth: the element-wise add kernel over large buffers (2 reads, 1 write); "
                     "gpu.memory: the device's global memory; gpu.checksum_bandwidth and checksum_overhead: the "
                     "executor's checksum of a tensor on the device (its two kernels, the value read back), of 64 "
                     "KiB and of a few MiB, the line through their times. ");
  if (d->action_overhead > 0)
    g_string_append(s, "gpu.launch_overhead and host.copy_overhead: what the executor pays per action beyond "
                       "its work, a tiny kernel launched and waited for one at a time (the compute thread runs its "
                       "next action itself), and for host.copy_overhead a message to another thread and back "
                       "through a GAsyncQueue on top (a leg is handed to its thread, which sleeps between legs, "
                       "and its end back); op rates and GEMM ops have the first taken out. ");
  else
    g_string_append(s, "gpu.launch_overhead: a tiny kernel, back to back. ");
  if (g_strcmp0(d->type, "cpu") == 0)
    g_string_append(s, "gpu.shared_cpus: the device's compute units, as it is a CPU device: its kernels run on the "
                       "host's processors and so do copies in and out of it (no copy engine); gpu.copy_leg_cpu: "
                       "the processor time this process spent per blocking 4 KiB copy (getrusage, all its "
                       "threads), the least of five groups of 20 back to back. ");
  if (g_strcmp0(d->type, "cpu") == 0 && !d->out_of_order)
    g_string_append(s, "gpu.copy_queues_in_order: the device cannot run a command queue out of order "
                       "(CL_DEVICE_QUEUE_PROPERTIES), so the executor's copy queues run in order. ");
  if (d->contention)
    g_string_append_printf(s, "gpu.copy_kernel_free_at: when the wait of a 1 MiB copy issued at spread points of a "
                              "GEMM's first half ended (its time less the same copy's alone), over the GEMM's length, "
                              "median, while another thread runs 512x512x512 GEMMs one after another (the device "
                              "gives a copy a processor only when one is done with the kernel); "
                              "gpu.copy_launch_window and copy_launch_ahead: of 48 such copies issued 0-200 us "
                              "after a GEMM's launch, from a thread scheduled as the executor's stream threads are "
                              "and awake until then, the latest that took less than the copy alone and a quarter of "
                              "the GEMM (past the latest tenth of them), and the share of those issued within it "
                              "that did; "
                              "host.copy_overhead: the median time of a message to another thread and back through a "
                              "GAsyncQueue while those GEMMs run (the executor's hand-offs of each leg to its "
                              "stream's thread), to a thread scheduled as the executor's stream threads are: %s. ",
                           rok_host_wake_name(d->handoff_wake));
  g_autofree char *wake = d->contention ? rok_host_wake_note(d->handoff_wake) : NULL;
  if (wake != NULL)
    g_string_append_printf(s, "Here %s. ", wake);
  if (d->ops->len > 0 && c->model_name != NULL)
    g_string_append_printf(s, "gpu.op_rates: every op of one layer of %s (with its embedding and head), forward "
                              "and backward, ", c->model_name);
  else if (d->ops->len > 0)
    g_string_append(s, "gpu.op_rates: every op of small GPT (standard attention, dropout) and LLaMA (flash "
                       "attention) layers of doubling width, forward and backward, ");
  if (d->ops->len > 0)
    g_string_append(s, "run by the executor's op interpreter one at a time and waited for, as `rok execute` runs "
                       "them; per op kind but those the GEMM model times, and per direction, the work the trace "
                       "counts for the op (FLOPs for flash attention, bytes for the others) over its time less the "
                       "launch overhead, ops of equal work averaged. ");
  if (d->ops->len > 0 && c->model_name != NULL && g_strcmp0(d->type, "cpu") == 0)
    g_string_append(s, "calibrated_shapes.gemm_ops' backward_first: in seven more passes, a 1 MiB copy out of the "
                       "device handed over 0.15 into each GEMM op's backward of 0.3 ms or more; when its wait "
                       "ended (its time less its least of five alone), over that backward's own length (less the "
                       "copy's time alone over the device's processors) and "
                       "gpu.copy_kernel_free_at: the share of the backward its first kernel takes (copies that did "
                       "not wait, less than their time alone or 0.05 of the backward, or waited past 0.9 of it, "
                       "left out; the median where three or more waited). ");
  double change = rok_calib_speed_change(d);
  if (!isnan(change)) {
    const RokCalibGemm *g = &g_array_index(d->gemms, RokCalibGemm, d->speed_gemm);
    gboolean moved = fabs(change) > ROK_CALIB_SPEED_CHANGE;
    g_string_append_printf(s, "The %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT " GEMM was "
                              "timed again after the other GEMMs and the ops: %s %.0f%%%s. ",
                           g->m, g->n, g->k,
                           moved ? "the machine's speed changed by more than" : "within",
                           100 * ROK_CALIB_SPEED_CHANGE,
                           moved ? " while it was measured, and these figures mix both speeds"
                                 : " of its first time, the machine's speed held");
  }
  double ew = rok_calib_elementwise_change(d);
  if (!isnan(ew)) {
    gboolean moved = fabs(ew) > ROK_CALIB_SPEED_CHANGE;
    g_string_append_printf(s, "The element-wise add was timed again before each pass of the ops and around them: %s "
                              "%.0f%%%s. ",
                           moved ? "the machine's speed changed by more than" : "within", 100 * ROK_CALIB_SPEED_CHANGE,
                           moved ? " while they were measured, and their rates are of another speed than the rest"
                                 : " of its time around them");
  }
  if (d->h2d_legs > 0 && d->d2h_legs > 0)
    g_string_append(s, "pcie.h2d_bandwidth and d2h_bandwidth: the slope (least squares) of the median times of "
                       "copies of 256 KiB, 512 KiB and 1 MiB, nine of each, 1 ms apart, each at the next place in "
                       "the pinned buffer and the device's, as a step's legs copy (a staging slot at a time, bytes "
                       "written long before): the whole buffer copied again and again runs faster than they do. ");
  g_string_append_printf(s, "pcie: blocking copies between the device and %s host buffers%s; latency: the median "
                            "of 4 KiB copies 1 ms apart, as a step's legs come, the least of five groups of ten, "
                            "each with the timing thread on another processor in turn. ",
                         d->pinned ? "pinned (CL_MEM_ALLOC_HOST_PTR)" : "page-aligned",
                         g_strcmp0(d->type, "cpu") == 0 ? " (a CPU device has no bus: a copy is a memcpy)" : "");
}

static void append_host(GString *s, const RokCalibration *c) {
  g_autofree char *size = rok_units_format_size(c->host.memcpy_bytes);
  g_string_append_printf(s, "host.memcpy_bandwidth: one thread copying %s; host.checksum_bandwidth: one thread "
                            "computing the executor's integrity checksum over a buffer (every copy that crosses PCIe "
                            "is checked on the host), where the checks after copies below were not timed; host.memory: the RAM the kernel reports; host.pinned_buffer: an eighth "
                            "of it (a choice, not a measurement). ",
                         size);
  const RokCalibDevice *d = &c->device;
  if (d->copied_check[0].n > 0) {
    guint last = 0;
    while (last + 1 < ROK_CALIB_CHECK_SIZES && d->copied_check[last + 1].n > 0)
      last++;
    g_autofree char *small = rok_units_format_size(d->copied_check_bytes[0]);
    g_autofree char *large = rok_units_format_size(d->copied_check_bytes[last]);
    g_string_append_printf(s, "host.checksum_rates: that checksum over a leg of %s to %s right after its copy out "
                              "of the device (the bytes over the time of all trials' legs, each at the next place in a pinned "
                              "buffer; on a CPU device on a thread scheduled as the executor's d2h thread), and "
                              "checksum_bandwidth the largest one's. ",
                           small, large);
  }
}

static gboolean listed(const GArray *values, guint64 v) {
  for (guint i = 0; i < values->len; i++)
    if (g_array_index(values, guint64, i) == v)
      return TRUE;
  return FALSE;
}

/* "block sizes 128 KiB, 1 MiB x queue depths 1, 32", in the order tried. */
static void append_grid(GString *s, const RokCalibDisk *d) {
  g_autoptr(GArray) blocks = g_array_new(FALSE, FALSE, sizeof(guint64));
  g_autoptr(GArray) depths = g_array_new(FALSE, FALSE, sizeof(guint64));
  for (guint i = 0; i < d->points->len; i++) {
    const RokCalibDiskPoint *p = &g_array_index(d->points, RokCalibDiskPoint, i);
    guint64 qd = p->queue_depth;
    if (!listed(blocks, p->block))
      g_array_append_val(blocks, p->block);
    if (!listed(depths, qd))
      g_array_append_val(depths, qd);
  }
  g_string_append(s, "block sizes ");
  for (guint i = 0; i < blocks->len; i++) {
    g_autofree char *b = rok_units_format_size(g_array_index(blocks, guint64, i));
    g_string_append_printf(s, "%s%s", i ? ", " : "", b);
  }
  g_string_append(s, " x queue depths ");
  for (guint i = 0; i < depths->len; i++)
    g_string_append_printf(s, "%s%" G_GUINT64_FORMAT, i ? ", " : "", g_array_index(depths, guint64, i));
}

static void append_disks(GString *s, const RokCalibration *c) {
  if (c->disks->len == 0) {
    g_string_append(s, "No --dir: no SSD section.");
    return;
  }
  const RokCalibDisk *first = &g_array_index(c->disks, RokCalibDisk, 0);
  g_string_append_printf(s, "nvme: one device per --dir, each taken to be a disk of its own (%u:", c->disks->len);
  for (guint i = 0; i < c->disks->len; i++) {
    const RokCalibDisk *d = &g_array_index(c->disks, RokCalibDisk, i);
    g_string_append_printf(s, "%s %s (%s%s%s)", i ? "," : "", d->dir, d->disk ? d->disk : "no block device",
                           d->virtual_reason ? ", " : "", d->virtual_reason ? d->virtual_reason : "");
  }
  g_autofree char *file = rok_units_format_size(first->file_bytes);
  g_string_append_printf(s, "); sequential %s %s I/O on a %s file laid out with random data, over ",
                         first->direct ? "O_DIRECT" : "buffered", first->backend ? first->backend : "?", file);
  append_grid(s, first);
  g_string_append(s, first->direct ? " (writes overwrite it, timed to their last completion, as the executor's are; "
                                   "reads follow posix_fadvise DONTNEED); "
                                 : " (writes overwrite it, timed through fdatasync; reads follow posix_fadvise "
                                   "DONTNEED); ");
  g_string_append(s, "queue_depth: where the best of all was reached; read_bandwidth, write_bandwidth, latency "
                     "(reads), write_latency and request_overhead: a leg's fixed part, each request's cost and "
                     "the rate of its bytes, fitted to bursts of 1, 4 and 16 requests of 1 MiB, 1 and 4 of 256 KiB "
                     "and 1 of 64 KiB submitted together after 1 ms idle (writes from requests filled just before), "
                     "as the executor's SSD legs are, in rounds of one of each (least squares weighted by each "
                     "burst's time), the rates at most the grid's best at 1 MiB blocks, the executor's requests "
                     "(the best of all where the grid has none), or the largest burst's own rate where it is "
                     "faster, the slowest directory's (where no burst was timed, those rates and the QD1 "
                     "4 KiB random reads' and writes' latencies); wake_write and "
                     "wake_read: what a lone request of either size took more after 20 ms idle, wake_after "
                     "between the two gaps (their geometric mean); deep_wake_write, deep_wake_read and "
                     "deep_wake_after: the same after 100 ms idle, between 20 and 100 ms; warm_write and "
                     "warm_read: what a lone request of either size took less begun from the last completion of "
                     "one like it (as the executor begins a leg another's end made ready), at most the latency; "
                     "completes_together: a 64 KiB request "
                     "submitted a quarter of the way through a burst of 4 x 1 MiB, in each direction, took 0.6 "
                     "or more of what was left of the burst (median); "
                     "with a CPU device, leg_cpu and request_cpu: the processor time rok spent on those "
                     "bursts (getrusage: its threads and the kernel's work for them), fitted the same "
                     "way; "
                     "capacity: the smallest file system "
                     "(statvfs); endurance unknown (nothing tells it): left out.");
  if (first->busy_processors > 0) {
    g_autofree char *streamed = rok_units_format_size(ROK_CALIB_BUSY_BYTES);
    g_string_append_printf(s, " Every disk figure was timed beside %u processes streaming through %s of memory %d nice "
                              "levels below rok, as the CPU device's worker threads run, for its kernels keep the "
                              "processors busy and evict the I/O path from the caches during a step (an idle "
                              "processor of a virtual machine wakes late for a completion).",
                           first->busy_processors, streamed, ROK_CL_CPU_WORKER_NICE);
  }
  for (guint i = 0; i < c->disks->len; i++) {
    const RokCalibDisk *d = &g_array_index(c->disks, RokCalibDisk, i);
    double w = rok_calib_disk_change(d, TRUE), r = rok_calib_disk_change(d, FALSE);
    if (isnan(w) && isnan(r))
      continue;
    gboolean moved = fabs(w) > ROK_CALIB_SPEED_CHANGE || fabs(r) > ROK_CALIB_SPEED_CHANGE;
    g_string_append_printf(s, " %s: the bursts after 1 ms idle were timed again at the end: %s %.0f%%%s.", d->dir,
                           moved ? "the disk's speed changed by more than" : "within", 100 * ROK_CALIB_SPEED_CHANGE,
                           moved ? " while they were measured, and its figures mix both speeds"
                                 : " of their first times, the disk held its speed");
  }
}

char *rok_calib_source(const RokCalibration *c) {
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "Measured on this machine by `rok calibrate`%s, the median of %u trials per figure. ",
                         c->quick ? " --quick (small sizes, short passes)" : "", c->trials);
  if (c->attempts > 1)
    g_string_append_printf(s, "Of %zu measurements in a row (--attempts), number %u: the steadiest, whose "
                              "machine's and disks' speeds moved least while it measured. ",
                           c->attempts, c->attempt);
  append_device(s, c);
  append_host(s, c);
  append_disks(s, c);
  if (c->others_share >= 0)
    g_string_append(s, " calibrated_busy: the share of the processors other processes used while it ran "
                       "(/proc/stat, less this process's time and its own busy processes beside the disks).");
  if (g_strcmp0(c->device.type, "cpu") == 0 && rok_calib_copies_memory_speed(&c->device) > 0)
    g_string_append(s, " calibrated_copies_memory_speed: the element-wise add's rate right before and after the "
                       "copies over its rate before the passes of the ops, for rok validate to carry the kernels' "
                       "speed over to the copies.");
  return g_string_free(s, FALSE);
}
