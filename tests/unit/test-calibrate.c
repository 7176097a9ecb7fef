/* Calibration without measuring: statistics, options, the profile built
 * from hand-made measurements, its source text, and the sanity checks. */
#define _GNU_SOURCE /* SCHED_RESET_ON_FORK */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "rok/calibrate.h"
#include "rok/core.h"
#include "rok/plan.h"
#include "rok/sim.h"
#include "test-bundled.h"

#define GIB ((guint64)1 << 30)
#define MIB ((guint64)1 << 20)

static void test_stat(void) {
  double odd[] = {5, 1, 3};
  RokCalibStat s = rok_calib_stat(odd, 3);
  g_assert_cmpfloat(s.median, ==, 3);
  g_assert_cmpfloat(s.min, ==, 1);
  g_assert_cmpfloat(s.max, ==, 5);
  g_assert_cmpuint(s.n, ==, 3);
  double even[] = {4, 1, 2, 10};
  s = rok_calib_stat(even, 4);
  g_assert_cmpfloat(s.median, ==, 3);
  g_assert_cmpfloat(s.max, ==, 10);
  s = rok_calib_stat(NULL, 0);
  g_assert_cmpfloat(s.median, ==, 0);
  g_assert_cmpuint(s.n, ==, 0);
}

static void test_options(void) {
  RokCalibOptions o;
  rok_calib_options_init(&o);
  g_assert_cmpint(o.device, ==, -1);
  GError *error = NULL;
  g_assert_true(rok_calib_options_resolve(&o, &error));
  g_assert_cmpuint(o.trials, ==, 3);
  g_assert_cmpuint(o.file_bytes, ==, GIB);
  g_assert_cmpuint(o.n_blocks, ==, 3);
  g_assert_cmpuint(o.n_queue_depths, ==, 3);
  g_assert_cmpuint(o.blocks[1], ==, MIB);
  g_assert_cmpuint(o.queue_depths[2], ==, 32);
  g_assert_cmpfloat(o.pass_seconds, ==, 2.0);

  rok_calib_options_init(&o);
  o.quick = TRUE;
  g_assert_true(rok_calib_options_resolve(&o, &error));
  g_assert_cmpuint(o.file_bytes, ==, 128 * MIB);
  g_assert_cmpuint(o.n_blocks * o.n_queue_depths, ==, 4);
  g_assert_cmpfloat(o.pass_seconds, <, 1.0);

  /* What the user chose is kept. */
  rok_calib_options_init(&o);
  o.blocks[0] = 8192, o.n_blocks = 1, o.queue_depths[0] = 4, o.n_queue_depths = 1, o.file_bytes = MIB;
  g_assert_true(rok_calib_options_resolve(&o, &error));
  g_assert_cmpuint(o.blocks[0], ==, 8192);
  g_assert_cmpuint(o.n_blocks, ==, 1);
  g_assert_cmpuint(o.file_bytes, ==, MIB);
}

static void test_bad_options(void) {
  static const struct {
    guint64 block, file;
    guint qd, trials;
    const char *expect;
  } cases[] = {
      {1000, 0, 1, 0, "--block 1000 B: must be a multiple of 4 KiB"},
      {128 * MIB, 0, 1, 0, "--block 128 MiB"},
      {MIB, 0, 0, 0, "--qd 0"},
      {MIB, 0, 5000, 0, "--qd 5000"},
      {4 * MIB, MIB, 1, 0, "--file-size 1.00 MiB: must be a multiple of 4 KiB and at least the largest block"},
      {MIB, MIB + 1, 1, 0, "--file-size"},
      {MIB, 0, 1, 500, "--trials 500"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    RokCalibOptions o;
    rok_calib_options_init(&o);
    o.blocks[0] = cases[i].block, o.n_blocks = 1;
    o.queue_depths[0] = cases[i].qd, o.n_queue_depths = 1;
    o.file_bytes = cases[i].file;
    o.trials = cases[i].trials;
    GError *error = NULL;
    g_assert_false(rok_calib_options_resolve(&o, &error));
    g_test_message("%s", error->message);
    g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
    g_assert_nonnull(strstr(error->message, cases[i].expect));
    g_error_free(error);
  }
}

static RokCalibStat stat_of(double v) {
  return (RokCalibStat){v, v * 0.9, v * 1.1, 3};
}

static void add_gemm(RokCalibration *c, const char *label, guint64 batch, guint64 m, guint64 n, guint64 k,
                     double rate) {
  RokCalibGemm g = {.label = label, .batch = batch, .m = m, .n = n, .k = k, .rate = stat_of(rate)};
  g.flops = 2.0 * batch * m * n * k;
  g_array_append_val(c->device.gemms, g);
}

static void add_disk(RokCalibration *c, const char *dir, guint64 dev, double scale, double latency,
                     guint64 capacity) {
  RokCalibDisk d = {.dir = g_strdup(dir), .st_dev = dev, .disk = g_strdup("nvme0n1"), .backend = g_strdup("io_uring"),
                    .direct = TRUE, .file_bytes = GIB, .capacity = capacity,
                    .points = g_array_new(FALSE, TRUE, sizeof(RokCalibDiskPoint)), .latency = stat_of(latency)};
  /* Reads best at 1 MiB QD 8, writes at 4 MiB QD 1. */
  const RokCalibDiskPoint points[] = {
      {MIB, 1, stat_of(1e9 * scale), stat_of(1.5e9 * scale)},
      {MIB, 8, stat_of(2e9 * scale), stat_of(3e9 * scale)},
      {4 * MIB, 1, stat_of(2.5e9 * scale), stat_of(2e9 * scale)},
      {4 * MIB, 8, stat_of(2.4e9 * scale), stat_of(2.9e9 * scale)},
  };
  g_array_append_vals(d.points, points, G_N_ELEMENTS(points));
  d.best_read = 1;
  d.best_write = 2;
  g_array_append_val(c->disks, d);
}

/* Measurements as a real run leaves them: GEMMs out of size order, two
 * shapes of equal FLOPs, two disks of different speeds. */
static RokCalibration *made_up(void) {
  RokCalibration *c = rok_calibration_new();
  c->trials = 3;
  c->host = (RokCalibHost){.memory = 24 * GIB, .memcpy_bytes = 256 * MIB, .memcpy = stat_of(10e9)};
  RokCalibDevice *d = &c->device;
  d->name = g_strdup("Test Device");
  d->type = g_strdup("gpu");
  d->compute_units = 108;
  d->memory = 40 * GIB;
  add_gemm(c, "square", 1, 512, 512, 512, 4e12);
  add_gemm(c, "square", 1, 128, 128, 128, 0.5e12);
  add_gemm(c, "square", 1, 2048, 2048, 2048, 20e12);
  add_gemm(c, "linear x·W", 1, 2048, 4096, 1024, 16e12); /* the FLOPs of 2048³ */
  add_gemm(c, "square", 1, 1024, 1024, 1024, 12e12);
  d->elementwise = stat_of(1.3e12);
  d->launch = stat_of(5e-6);
  d->h2d = stat_of(24e9);
  d->d2h = stat_of(22e9);
  d->copy_latency = stat_of(10e-6);
  d->pinned = TRUE;
  add_disk(c, "/mnt/a", 1, 1.0, 80e-6, 2000 * GIB);
  add_disk(c, "/mnt/b", 2, 0.8, 100e-6, 1000 * GIB);
  return c;
}

/* The GEMM model fitted to the GEMMs (calib-fit.c; test-calibrate-fit.c
 * checks the fit itself): no curve, peak_flops at least the best GEMM, and
 * every GEMM's shape recorded. */
static void check_gemm_model(const RokHw *hw) {
  g_assert_cmpuint(hw->gpu.gemm_curve_len, ==, 0);
  g_assert_cmpfloat(hw->gpu.peak_flops, >=, 20e12);
  g_assert_cmpfloat(hw->gpu.matmul_efficiency, >, 0);
  g_assert_cmpfloat(hw->gpu.matmul_efficiency, <=, 1);
  g_assert_cmpuint(hw->gpu.sm_count, >, 0);
  g_assert_cmpuint(hw->calibrated.gemms_len, ==, 5);
}

static void test_profile(void) {
  g_autoptr(RokCalibration) c = made_up();
  GError *error = NULL;
  g_autoptr(RokHw) hw = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(hw->name, ==, "lab");
  check_gemm_model(hw);
  g_assert_cmpuint(hw->gpu.memory, ==, 40 * GIB);
  g_assert_cmpfloat(hw->gpu.hbm_bandwidth, ==, 1.3e12);
  g_assert_cmpint(hw->gpu.launch_overhead, ==, 5000);
  g_assert_cmpfloat(hw->pcie.h2d_bandwidth, ==, 24e9);
  g_assert_cmpfloat(hw->pcie.d2h_bandwidth, ==, 22e9);
  g_assert_cmpint(hw->pcie.latency, ==, 10000);
  g_assert_cmpuint(hw->host.memory, ==, 24 * GIB);
  g_assert_cmpuint(hw->host.pinned_buffer, ==, 3 * GIB);
  g_assert_cmpfloat(hw->host.memcpy_bandwidth, ==, 10e9);
  /* The array: the slower disk's best figures at the executor's 1 MiB
   * requests (writes do better at 4 MiB, which the executor never
   * issues), the longer latency, the smaller capacity, the deepest queue
   * where a best figure of all was reached. */
  g_assert_cmpuint(hw->nvme.devices, ==, 2);
  g_assert_cmpfloat_with_epsilon(hw->nvme.read_bandwidth, 3e9 * 0.8, 1);
  g_assert_cmpfloat_with_epsilon(hw->nvme.write_bandwidth, 2e9 * 0.8, 1);
  g_assert_cmpint(hw->nvme.latency, ==, 100000);
  g_assert_cmpuint(hw->nvme.queue_depth, ==, 8);
  g_assert_cmpuint(hw->nvme.capacity, ==, 1000 * GIB);
  g_assert_cmpfloat(hw->nvme.endurance_pbw, ==, 0);
  g_assert_false(hw->nvme.gpudirect);
  /* A GPU's per-action costs measured: an action's hand-off goes to the
   * compute thread (which looks before it sleeps), a leg's to a sleeping
   * thread; each becomes its own figure. */
  c->device.action_overhead = 12e-6;
  c->device.leg_action_overhead = 30e-6;
  g_autoptr(RokHw) measured = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  g_assert_cmpint(measured->gpu.launch_overhead, ==, 12000);
  g_assert_cmpint(measured->host.copy_overhead, ==, 30000);
  /* The copy queues: only a CPU device that cannot run queues out of
   * order has them in order (a GPU's copies do not wait for kernels). */
  g_assert_false(measured->gpu.copy_queues_in_order);
  g_free(c->device.type);
  c->device.type = g_strdup("cpu");
  c->device.out_of_order = TRUE;
  g_autoptr(RokHw) cpu = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(cpu->gpu.shared_cpus, ==, 108);
  g_assert_false(cpu->gpu.copy_queues_in_order);
  c->device.out_of_order = FALSE;
  g_autoptr(RokHw) in_order = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  g_assert_true(in_order->gpu.copy_queues_in_order);
  g_assert_nonnull(strstr(in_order->source, "gpu.copy_queues_in_order"));
  /* One disk that completes together what was queued together makes the
   * array's legs end so: neither does not. */
  g_assert_false(hw->nvme.completes_together);
  g_array_index(c->disks, RokCalibDisk, 1).completes_together = TRUE;
  g_autoptr(RokHw) together = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  g_assert_true(together->nvme.completes_together);
}

/* Disks whose bursts were fitted: the array's SSD legs take the larger
 * fixed parts and request cost and the smaller rates of the fits (not the
 * grid's, nor the random 4 KiB latencies), leave the other leg costs at
 * 0, and take each wake level's largest, the deep one in deep_wake_*. */
static void test_profile_fitted_legs(void) {
  g_autoptr(RokCalibration) c = made_up();
  GError *error = NULL;
  RokCalibDisk *a = &g_array_index(c->disks, RokCalibDisk, 0), *b = &g_array_index(c->disks, RokCalibDisk, 1);
  a->legs = (RokCalibLegFit){.fitted = TRUE, .fixed = {60e-6, 40e-6}, .request = 5e-6, .rate = {2e9, 1.8e9}};
  b->legs = (RokCalibLegFit){.fitted = TRUE, .fixed = {50e-6, 70e-6}, .request = 2e-6, .rate = {1.5e9, 2.2e9}};
  a->wakes[0] = (RokCalibWake){4.47e-3, 50e-6, 80e-6};
  a->wakes[1] = (RokCalibWake){44.7e-3, 200e-6, 300e-6};
  a->n_wakes = 2;
  b->wakes[0] = (RokCalibWake){4.47e-3, 90e-6, 20e-6};
  b->n_wakes = 1;
  g_autoptr(RokHw) hw = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  g_assert_cmpint(hw->nvme.latency, ==, 70000);
  g_assert_true(hw->nvme.write_fixed);
  g_assert_cmpint(hw->nvme.write_latency, ==, 60000);
  g_assert_cmpint(hw->nvme.request_overhead, ==, 5000);
  g_assert_cmpfloat(hw->nvme.read_bandwidth, ==, 1.8e9);
  g_assert_cmpfloat(hw->nvme.write_bandwidth, ==, 1.5e9);
  g_assert_cmpint(hw->nvme.leg_overhead + hw->nvme.write_leg_overhead + hw->nvme.request_overhead_per_mib, ==, 0);
  g_assert_cmpint(hw->nvme.wake_write, ==, 90000);
  g_assert_cmpint(hw->nvme.wake_read, ==, 80000);
  g_assert_cmpint(hw->nvme.wake_after, ==, 4470000);
  g_assert_cmpint(hw->nvme.deep_wake_write, ==, 200000);
  g_assert_cmpint(hw->nvme.deep_wake_read, ==, 300000);
  g_assert_cmpint(hw->nvme.deep_wake_after, ==, 44700000);
  /* The warm saving: the least of the disks' (one without it: none),
   * no more than the array's latency. */
  g_assert_cmpint(hw->nvme.warm_write + hw->nvme.warm_read, ==, 0);
  a->warm_fitted = b->warm_fitted = TRUE;
  a->warm[0] = 30e-6, a->warm[1] = 90e-6;
  b->warm[0] = 45e-6, b->warm[1] = 20e-6;
  g_autoptr(RokHw) warm = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  g_assert_cmpint(warm->nvme.warm_write, ==, 30000);
  g_assert_cmpint(warm->nvme.warm_read, ==, 20000);
  b->warm[1] = 80e-6;
  g_autoptr(RokHw) capped = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  g_assert_cmpint(capped->nvme.warm_read, ==, 70000);
  b->warm_fitted = FALSE;
  g_autoptr(RokHw) one = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  g_assert_cmpint(one->nvme.warm_write + one->nvme.warm_read, ==, 0);
}

/* What is written reads back equal, without a date, and a model simulates
 * on it under offloading (what `rok plan` needs of it). */
static void test_profile_usable(void) {
  g_autoptr(RokCalibration) c = made_up();
  GError *error = NULL;
  g_autoptr(RokHw) hw = rok_calib_profile(c, "lab", &error);
  g_assert_no_error(error);
  json_object *o = rok_hw_to_json(hw);
  g_autofree char *text = rok_json_to_string(o);
  json_object_put(o);
  g_assert_null(strstr(text, "endurance_pbw"));
  g_autoptr(RokHw) again = rok_calib_profile(c, "lab", &error);
  json_object *p = rok_hw_to_json(again);
  g_autofree char *text2 = rok_json_to_string(p);
  json_object_put(p);
  g_assert_cmpstr(text, ==, text2);

  g_autofree char *model_path =
      g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", "models", "gpt3-1.3b.json", NULL);
  const char *sets[] = {"layers=2", NULL};
  g_autoptr(RokModel) model = rok_model_load(model_path, sets, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(ROK_STRATEGY_OFFLOAD, trace, hw, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(RokSimResult) r = rok_simulate(trace, hw, plan, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(r->step_time_s, >, 0);
  g_assert_cmpuint(r->nvme_write_bytes, >, 0);
}

static void test_profile_without_disks(void) {
  g_autoptr(RokCalibration) c = made_up();
  g_array_set_size(c->disks, 0);
  GError *error = NULL;
  g_autoptr(RokHw) hw = rok_calib_profile(c, "nodisk", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(hw->nvme.devices, ==, 0);
  g_autofree char *source = rok_calib_source(c);
  g_assert_nonnull(strstr(source, "No --dir"));
}

static void test_profile_bad(void) {
  g_autoptr(RokCalibration) c = made_up();
  c->device.h2d = (RokCalibStat){0};
  GError *error = NULL;
  g_autoptr(RokHw) hw = rok_calib_profile(c, "lab", &error);
  g_assert_null(hw);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_assert_nonnull(strstr(error->message, "pcie.h2d_bandwidth"));
  g_clear_error(&error);
  g_autoptr(RokCalibration) none = made_up();
  g_array_set_size(none->device.gemms, 0);
  g_assert_null(rok_calib_profile(none, "lab", &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_clear_error(&error);
}

static void test_source(void) {
  g_autoptr(RokCalibration) c = made_up();
  g_autofree char *source = rok_calib_source(c);
  g_test_message("%s", source);
  const char *expect[] = {"rok calibrate",
                          "median of 3 trials",
                          "\"Test Device\" (gpu, 108 compute units)",
                          "best GEMM rate measured (square 2048x2048x2048)",
                          "not a datasheet peak",
                          "element-wise add",
                          "pinned",
                          "an eighth of it (a choice, not a measurement)",
                          "one device per --dir",
                          "/mnt/a (nvme0n1), /mnt/b (nvme0n1)",
                          "block sizes 1.00 MiB, 4.00 MiB x queue depths 1, 8",
                          "timed to their last completion, as the executor's are",
                          "DONTNEED",
                          "endurance unknown"};
  for (guint i = 0; i < G_N_ELEMENTS(expect); i++)
    g_assert_nonnull(strstr(source, expect[i]));
  g_assert_null(strstr(source, "spinning")); /* idle processors: nothing to say */
  /* Disks timed beside spinners (a CPU device) say so, and how low they ran. */
  g_array_index(c->disks, RokCalibDisk, 0).busy_processors = 2;
  g_autofree char *busy = rok_calib_source(c);
  g_assert_nonnull(strstr(busy, "Every disk figure was timed beside 2 processes streaming through 4.00 MiB of "
                                "memory 5 nice levels below rok"));
  /* No date or time of day: a profile names what was measured, not when. */
  g_assert_false(g_regex_match_simple("(19|20)[0-9][0-9]-[0-9][0-9]|[0-9][0-9]:[0-9][0-9]", source, 0, 0));
}

static gboolean has_warning(const RokCalibration *c, const char *needle) {
  for (guint i = 0; i < c->warnings->len; i++)
    if (strstr(c->warnings->pdata[i], needle) != NULL)
      return TRUE;
  return FALSE;
}

static void test_checks(void) {
  g_autoptr(RokCalibration) c = made_up();
  rok_calib_check(c);
  g_assert_cmpuint(c->warnings->len, ==, 0);

  /* A cache's speed; a read faster than memcpy; a virtual disk; two
   * directories on one file system; a file system without a disk. */
  RokCalibDisk *a = &g_array_index(c->disks, RokCalibDisk, 0), *b = &g_array_index(c->disks, RokCalibDisk, 1);
  g_array_index(a->points, RokCalibDiskPoint, a->best_read).read.median = 25e9;
  g_array_index(b->points, RokCalibDiskPoint, b->best_write).write.median = 12e9;
  a->virtual_reason = g_strdup("a virtio disk");
  b->st_dev = a->st_dev;
  g_clear_pointer(&b->disk, g_free);
  rok_calib_check(c);
  for (guint i = 0; i < c->warnings->len; i++)
    g_test_message("%s", (const char *)c->warnings->pdata[i]);
  g_assert_true(has_warning(c, "/mnt/a: reads at 25.0 GB/s, faster than any disk: the figures look cached"));
  g_assert_true(has_warning(c, "/mnt/b: writes at 12.0 GB/s, faster than memcpy (10.0 GB/s)"));
  g_assert_true(has_warning(c, "/mnt/a: nvme0n1 is a virtio disk"));
  g_assert_true(has_warning(c, "/mnt/a and /mnt/b are on one file system"));
  g_assert_true(has_warning(c, "/mnt/b: no block device"));
  g_assert_cmpuint(c->warnings->len, ==, 5);
}

/* Load above half the processors: the measurements competed with other
 * work, and the user is told. */
static void test_busy(void) {
  g_autoptr(RokCalibration) c = made_up();
  c->cpus = 2;
  c->load[0] = 0.4;
  c->load[1] = 0.9;
  rok_calib_check(c);
  g_assert_cmpuint(c->warnings->len, ==, 0);
  c->load[1] = 3.5;
  rok_calib_check(c);
  g_assert_cmpuint(c->warnings->len, ==, 1);
  g_assert_true(has_warning(c, "the machine was busy (load average 3.50 on 2 processors)"));
  /* What other processes used of the processors, where measured, decides:
   * a high load average alone (tasks waiting on a virtual disk) does not. */
  g_ptr_array_set_size(c->warnings, 0);
  c->others_share = 0.01;
  rok_calib_check(c);
  g_assert_cmpuint(c->warnings->len, ==, 0);
  c->others_share = 0.4;
  rok_calib_check(c);
  g_assert_true(has_warning(c, "the machine was busy: other processes used 40% of the processors"));
  /* Measured for real: a share, or unknown without /proc/stat. */
  double start = rok_host_others_cpu_seconds();
  double share = rok_host_others_share(start, 0.001);
  if (g_file_test("/proc/stat", G_FILE_TEST_EXISTS)) {
    g_assert_cmpfloat(start, >=, 0);
    g_assert_cmpfloat(share, >=, 0);
    g_assert_cmpfloat(share, <=, 1);
  }
}

/* The reference GEMM timed again at the end: a change beyond 10% either
 * way is said, with its size and direction; within it, nothing. The
 * profile's source says which, without the figure (it gives no measured
 * numbers). */
static void test_speed_change(void) {
  g_autoptr(RokCalibration) c = made_up();
  g_assert_true(isnan(rok_calib_speed_change(&c->device)));
  c->device.speed_gemm = 0; /* the 512³ square, at 4 TFLOP/s */
  c->device.speed_again = (RokCalibStat){.median = 3.8e12, .min = 3.7e12, .max = 3.9e12, .n = 3};
  g_assert_cmpfloat(fabs(rok_calib_speed_change(&c->device) + 0.05), <, 1e-12);
  rok_calib_check(c);
  g_assert_cmpuint(c->warnings->len, ==, 0);
  g_autofree char *source = rok_calib_source(c);
  g_assert_nonnull(strstr(source, "The 512x512x512 GEMM was timed again after the other GEMMs and the ops: within 10%"));
  c->device.speed_again.median = 2.6e12;
  rok_calib_check(c);
  g_assert_cmpuint(c->warnings->len, ==, 1);
  g_assert_true(has_warning(c, "the device ran its 512x512x512 GEMM 35% slower at the end of its measurements"));
  g_autofree char *mixed = rok_calib_source(c);
  g_assert_nonnull(strstr(mixed, "the machine's speed changed by more than 10% while it was measured"));
  g_ptr_array_set_size(c->warnings, 0);
  c->device.speed_again.median = 4.6e12;
  rok_calib_check(c);
  g_assert_true(has_warning(c, "GEMM 15% faster at the end"));
}

/* The element-wise add between the op passes against right before and
 * after them: the op rates are medians over the passes, so a slow spell
 * of the memory there is said as the GEMM's change at the end is; the
 * first element-wise figure is no reference (a made-up 40% below). */
static void test_elementwise_change(void) {
  g_autoptr(RokCalibration) c = made_up();
  g_assert_true(isnan(rok_calib_elementwise_change(&c->device)));
  c->device.elementwise.median = 0.6e12;
  c->device.elementwise_around = (RokCalibStat){.median = 1e12, .min = 0.1e12, .max = 1.1e12, .n = 10};
  c->device.elementwise_ops = (RokCalibStat){.median = 0.96e12, .min = 0.9e12, .max = 1e12, .n = 5};
  g_assert_cmpfloat(fabs(rok_calib_elementwise_change(&c->device) + 0.04), <, 1e-12);
  /* Around the copies: none timed, none known; else its rate over the ops'. */
  g_assert_cmpfloat(rok_calib_copies_memory_speed(&c->device), ==, 0);
  c->device.elementwise_copies = (RokCalibStat){.median = 1.2e12, .min = 1.1e12, .max = 1.3e12, .n = 10};
  g_assert_cmpfloat(fabs(rok_calib_copies_memory_speed(&c->device) - 1.25), <, 1e-12);
  /* Across the copies: the five after against the five before, within 10%
   * not warned of, 25% slower warned of and counted as unsteadiness. */
  g_assert_true(isnan(rok_calib_copies_memory_change(&c->device)));
  c->device.elementwise_copies_around[0] = (RokCalibStat){.median = 1.2e12, .min = 1.1e12, .max = 1.3e12, .n = 5};
  c->device.elementwise_copies_around[1] = (RokCalibStat){.median = 1.14e12, .min = 1.1e12, .max = 1.2e12, .n = 5};
  g_assert_cmpfloat(fabs(rok_calib_copies_memory_change(&c->device) + 0.05), <, 1e-12);
  rok_calib_check(c);
  g_assert_false(has_warning(c, "right after the copies"));
  g_assert_cmpfloat(rok_calib_unsteadiness(c, NULL), ==, 0);
  c->device.elementwise_copies_around[1].median = 0.9e12;
  rok_calib_check(c);
  g_assert_true(has_warning(c, "the device ran its element-wise add 25% slower right after the copies than right "
                               "before them: the machine's speed changed while they were measured"));
  const char *what = NULL;
  g_assert_cmpfloat(fabs(rok_calib_unsteadiness(c, &what) - 0.25), <, 1e-12);
  g_assert_cmpstr(what, ==, "a change in the device's memory speed across the copies");
  c->device.elementwise_copies_around[1].median = 1.2e12;
  g_ptr_array_set_size(c->warnings, 0);
  rok_calib_check(c);
  g_assert_false(has_warning(c, "element-wise add"));
  g_autofree char *source = rok_calib_source(c);
  g_assert_nonnull(strstr(source, "before each pass of the ops and around them: within 10% of its time around them"));
  g_assert_nonnull(strstr(source, "latency: the median of 4 KiB copies 1 ms apart"));
  c->device.elementwise_ops.median = 0.5e12;
  rok_calib_check(c);
  g_assert_true(has_warning(c, "the device ran its element-wise add 50% slower between the passes of the ops than "
                               "right before and after them: the machine's speed changed while it was measured"));
  g_autofree char *slow = rok_calib_source(c);
  g_assert_nonnull(strstr(slow, "the machine's speed changed by more than 10% while they were measured"));
}

/* The disk's bursts timed again at the end: within 10% of their first
 * times, said in the source and not warned of; 13% longer (the
 * development VM's virtio disk in a quick calibration, 2026-12-07),
 * warned of by direction, with the words bench-validate.sh looks for. */
/* One layer of the bundled validate-gpt at the widths SETS give. */
static RokTrace *gpt_layer(const char *const *sets) {
  g_autoptr(RokModel) model = test_bundled_model2("validate-gpt", (const char *const[]){"layers=1", NULL}, sets);
  GError *error = NULL;
  RokTrace *trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  return trace;
}

/* Every op of a trace timed as the op rates are, pass after pass: a time
 * for every op with work in each direction (a dropout's rebuild too), none
 * where it has none; a trace too large for the device refused, naming
 * it, and one that leaves too little beside it for other work. */
static void test_op_timer(void) {
  g_autoptr(RokTrace) trace = gpt_layer((const char *const[]){"hidden=64", "heads=1", "ffn_hidden=256", "vocab=256",
                                                              "seq_len=64", NULL});
  guint n = trace->ops->len;
  g_autofree double *seconds = g_new(double, ROK_HW_DIRECTIONS * n);
  GError *error = NULL;
  g_autoptr(RokCalibOpTimer) timer = rok_calib_op_timer_new(-1, trace, 0, &error);
  if (timer == NULL) {
    g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
    g_test_skip(error->message);
    g_error_free(error);
    return;
  }
  for (guint pass = 0; pass < 2; pass++) {
    for (guint i = 0; i < ROK_HW_DIRECTIONS * n; i++)
      seconds[i] = -1;
    g_assert_true(rok_calib_op_timer_pass(timer, NULL, seconds, &error));
    g_assert_no_error(error);
    for (guint o = 0; o < n; o++) {
      const RokOp *op = rok_trace_op(trace, o);
      const double *s = &seconds[ROK_HW_DIRECTIONS * o];
      g_assert_cmpfloat(s[ROK_HW_FORWARD], >, 0);
      if (op->kind != ROK_OP_INPUT && rok_op_work(op, TRUE) > 0)
        g_assert_cmpfloat(s[ROK_HW_BACKWARD], >, 0);
      g_assert_cmpfloat(s[ROK_HW_BACKWARD], >=, 0);
      g_assert_true((s[ROK_HW_REBUILD] > 0) == (op->kind == ROK_OP_DROPOUT));
      g_assert_cmpfloat(s[ROK_HW_REBUILD], >=, 0);
    }
  }
  g_autoptr(RokTrace) huge = gpt_layer((const char *const[]){"hidden=16384", "heads=128", "seq_len=65536", NULL});
  g_assert_null(rok_calib_op_timer_new(-1, huge, 0, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "is more than its"));
  g_clear_error(&error);
  /* The small one, beside all but nothing of the device's memory. */
  g_assert_null(rok_calib_op_timer_new(-1, trace, G_MAXUINT64 - 1, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "kept for other work"));
  g_error_free(error);
}

/* The device's copies against a profile's pcie figures: against one whose
 * copies take a second more each (latency) or go at 1 MB/s, far faster
 * (the ratio below 0.1); against one of no latency and 1 PB/s, far slower
 * (above 10); and each direction against its own rate: d2h at 1 MB/s and
 * h2d at 1 PB/s, then the other way round. */
static void test_copy_speed(void) {
  g_autoptr(RokHw) hw = test_bundled_hw("cpu-2core-virtio");
  double ratio[2];
  GError *error = NULL;
  hw->pcie.latency = 1000000000;
  if (!rok_calib_copy_speed(-1, hw, NULL, ratio, &error)) {
    g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
    g_test_skip(error->message);
    g_error_free(error);
    return;
  }
  for (guint d = 0; d < 2; d++)
    g_assert_cmpfloat(ratio[d], <, 0.1);
  hw->pcie.latency = 0;
  hw->pcie.d2h_bandwidth = hw->pcie.h2d_bandwidth = 1e6;
  g_assert_true(rok_calib_copy_speed(-1, hw, NULL, ratio, &error));
  g_assert_no_error(error);
  for (guint d = 0; d < 2; d++)
    g_assert_cmpfloat(ratio[d], <, 0.1);
  hw->pcie.d2h_bandwidth = hw->pcie.h2d_bandwidth = 1e15;
  g_assert_true(rok_calib_copy_speed(-1, hw, NULL, ratio, &error));
  g_assert_no_error(error);
  for (guint d = 0; d < 2; d++)
    g_assert_cmpfloat(ratio[d], >, 10);
  for (guint slow = 0; slow < 2; slow++) { /* ratio[0]: d2h, [1]: h2d */
    hw->pcie.d2h_bandwidth = slow == 0 ? 1e6 : 1e15;
    hw->pcie.h2d_bandwidth = slow == 1 ? 1e6 : 1e15;
    g_assert_true(rok_calib_copy_speed(-1, hw, NULL, ratio, &error));
    g_assert_no_error(error);
    g_assert_cmpfloat(ratio[slow], <, 0.1);
    g_assert_cmpfloat(ratio[1 - slow], >, 10);
  }
}

static void test_disk_change(void) {
  g_autoptr(RokCalibration) c = made_up();
  RokCalibDisk *d = &g_array_index(c->disks, RokCalibDisk, 0);
  g_assert_true(isnan(rok_calib_disk_change(d, TRUE)));
  d->again[0] = (RokCalibStat){.median = 0.986, .min = 0.9, .max = 1.1, .n = 5};
  d->again[1] = (RokCalibStat){.median = 1.045, .min = 0.95, .max = 1.2, .n = 5};
  g_assert_cmpfloat(fabs(rok_calib_disk_change(d, TRUE) + 0.014), <, 1e-12);
  g_assert_cmpfloat(fabs(rok_calib_disk_change(d, FALSE) - 0.045), <, 1e-12);
  rok_calib_check(c);
  g_assert_false(has_warning(c, "the disk's speed changed"));
  g_autofree char *source = rok_calib_source(c);
  g_assert_nonnull(strstr(source, "/mnt/a: the bursts after 1 ms idle were timed again at the end: within 10% of "
                                  "their first times, the disk held its speed"));
  g_assert_null(strstr(source, "/mnt/b: the bursts"));
  d->again[0].median = 1.131;
  rok_calib_check(c);
  g_assert_true(has_warning(c, "/mnt/a: its write bursts took 13% longer when timed again at the end than at "
                               "first: the disk's speed changed while it was measured"));
  g_assert_false(has_warning(c, "its read bursts"));
  g_autofree char *moved = rok_calib_source(c);
  g_assert_nonnull(strstr(moved, "the disk's speed changed by more than 10% while they were measured"));
}

/* What the stream and I/O threads ask for (rok_host_thread_prompt), read
 * back through other calls than the one that set it: the lowest
 * real-time priority, children reset to the fair class
 * (sched_getscheduler, sched_getparam), where the process may have it and
 * there are two processors or more; else the short slice, a
 * sched_runtime of 100 us at byte 24 of the kernel's sched_attr
 * (sched_setattr(2)), which a wrong layout of rok's copy of it would not
 * survive, on Linux 6.12 and later (an older kernel may refuse it). */
typedef struct {
  RokHostWake wake;
  int policy; /* with SCHED_RESET_ON_FORK */
  struct sched_param param;
  guint64 runtime_ns;
} Prompted;

static gpointer prompt_thread(gpointer data) {
  Prompted *p = data;
  p->wake = rok_host_thread_prompt();
  p->policy = sched_getscheduler(0);
  g_assert_cmpint(sched_getparam(0, &p->param), ==, 0);
  guint8 attr[56] = {0};
  g_assert_cmpint(syscall(SYS_sched_getattr, 0, attr, sizeof attr, 0), ==, 0);
  memcpy(&p->runtime_ns, attr + 24, sizeof p->runtime_ns);
  return NULL;
}

static gboolean recent_kernel(void) {
  struct utsname u;
  guint major = 0, minor = 0;
  return uname(&u) == 0 && sscanf(u.release, "%u.%u", &major, &minor) == 2 &&
         (major > 6 || (major == 6 && minor >= 12));
}

static void check_prompted(const Prompted *p) {
  switch (p->wake) {
  case ROK_HOST_WAKE_REALTIME:
    g_assert_cmpint(p->policy, ==, SCHED_FIFO | SCHED_RESET_ON_FORK);
    g_assert_cmpint(p->param.sched_priority, ==, 1);
    g_assert_cmpuint(g_get_num_processors(), >=, 2);
    break;
  case ROK_HOST_WAKE_SHORT_SLICE:
    g_assert_cmpint(p->policy, ==, SCHED_OTHER);
    g_assert_cmpuint(p->runtime_ns, ==, 100000);
    break;
  case ROK_HOST_WAKE_FAIR:
    g_assert_false(recent_kernel());
    g_assert_cmpint(p->policy, ==, SCHED_OTHER);
    break;
  }
}

/* Whether a thread of this process may take SCHED_FIFO 1, asked through
 * pthreads rather than sched_setattr (a container's root may lack
 * CAP_SYS_NICE, a cgroup real-time time). */
static gpointer may_realtime_thread(gpointer data) {
  (void)data;
  struct sched_param one = {.sched_priority = 1};
  return GINT_TO_POINTER(pthread_setschedparam(pthread_self(), SCHED_FIFO, &one) == 0);
}

static void test_prompt(void) {
  Prompted p = {0};
  g_thread_join(g_thread_new("prompt", prompt_thread, &p));
  g_test_message("this process's stream threads: %s", rok_host_wake_name(p.wake));
  check_prompted(&p);
  gboolean may = GPOINTER_TO_INT(g_thread_join(g_thread_new("may", may_realtime_thread, NULL)));
  if (may && g_get_num_processors() >= 2)
    g_assert_cmpint(p.wake, ==, ROK_HOST_WAKE_REALTIME);
  /* What a report says where real time was refused, and nothing where not. */
  g_assert_null(rok_host_wake_note(ROK_HOST_WAKE_REALTIME));
  g_autofree char *note = rok_host_wake_note(ROK_HOST_WAKE_SHORT_SLICE);
  g_assert_nonnull(strstr(note, "fair class (short slice), real time refused"));
}

/* Where real time is refused (no RLIMIT_RTPRIO, not root: root gives up
 * its rights as nobody), the short slice, and no error. */
static void test_prompt_refused(void) {
  if (g_test_subprocess()) {
    struct rlimit none = {0, 0};
    g_assert_cmpint(setrlimit(RLIMIT_RTPRIO, &none), ==, 0);
    if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
      g_test_message("cannot become nobody: not tried");
      return;
    }
    Prompted p = {0};
    g_thread_join(g_thread_new("prompt", prompt_thread, &p));
    g_assert_cmpint(p.wake, !=, ROK_HOST_WAKE_REALTIME);
    if (recent_kernel())
      g_assert_cmpint(p.wake, ==, ROK_HOST_WAKE_SHORT_SLICE);
    check_prompted(&p);
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
}

/* How unsteady a calibration was, as `rok calibrate --attempts` chooses by
 * it: 0 with nothing beyond its limit (a 5% GEMM change, 4% busy, others'
 * share unknown); else the largest change beyond its limit and what it
 * was: the GEMM 35% slower at the end, then a disk's writes 40% longer,
 * then others using 60% of the processors. */
static void test_unsteadiness(void) {
  g_autoptr(RokCalibration) c = made_up();
  const char *what = "unset";
  g_assert_cmpfloat(rok_calib_unsteadiness(c, &what), ==, 0);
  g_assert_null(what);
  c->device.speed_gemm = 0;
  c->device.speed_again = (RokCalibStat){.median = 3.8e12, .min = 3.7e12, .max = 3.9e12, .n = 3};
  c->others_share = 0.04;
  g_assert_cmpfloat(rok_calib_unsteadiness(c, NULL), ==, 0);
  c->device.speed_again.median = 2.6e12;
  g_assert_cmpfloat(fabs(rok_calib_unsteadiness(c, &what) - 0.35), <, 1e-12);
  g_assert_cmpstr(what, ==, "a change in the device's GEMM speed");
  RokCalibDisk *d = &g_array_index(c->disks, RokCalibDisk, 1);
  d->again[0] = (RokCalibStat){.median = 1.4, .min = 1.3, .max = 1.5, .n = 5};
  g_assert_cmpfloat(fabs(rok_calib_unsteadiness(c, &what) - 0.4), <, 1e-12);
  g_assert_cmpstr(what, ==, "a change in a disk's speed");
  c->others_share = 0.6;
  g_assert_cmpfloat(fabs(rok_calib_unsteadiness(c, &what) - 0.6), <, 1e-12);
  g_assert_cmpstr(what, ==, "others' use of the processors");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/calibrate/stat", test_stat);
  g_test_add_func("/calibrate/options", test_options);
  g_test_add_func("/calibrate/bad-options", test_bad_options);
  g_test_add_func("/calibrate/profile", test_profile);
  g_test_add_func("/calibrate/profile-fitted-legs", test_profile_fitted_legs);
  g_test_add_func("/calibrate/profile-usable", test_profile_usable);
  g_test_add_func("/calibrate/profile-without-disks", test_profile_without_disks);
  g_test_add_func("/calibrate/profile-bad", test_profile_bad);
  g_test_add_func("/calibrate/source", test_source);
  g_test_add_func("/calibrate/checks", test_checks);
  g_test_add_func("/calibrate/busy", test_busy);
  g_test_add_func("/calibrate/speed-change", test_speed_change);
  g_test_add_func("/calibrate/elementwise-change", test_elementwise_change);
  g_test_add_func("/calibrate/disk-change", test_disk_change);
  g_test_add_func("/calibrate/unsteadiness", test_unsteadiness);
  g_test_add_func("/calibrate/copy-speed", test_copy_speed);
  g_test_add_func("/calibrate/op-timer", test_op_timer);
  g_test_add_func("/calibrate/prompt", test_prompt);
  g_test_add_func("/calibrate/prompt-refused", test_prompt_refused);
  return g_test_run();
}
