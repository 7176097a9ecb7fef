/* Disk measurement on a real directory, kept tiny: the grid's shape, figures
 * that are positive, and nothing left behind, on success, on cancellation
 * and with a stale folder of a killed run to sweep. */
#include <errno.h>
#include <glib/gstdio.h>
#include <sys/wait.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rok/calibrate.h"
#include "storage/owner.h"
#include "rok/core.h"

#define MIB ((guint64)1 << 20)

static void tiny_options(RokCalibOptions *o) {
  rok_calib_options_init(o);
  o->blocks[0] = 256 * 1024, o->blocks[1] = MIB, o->n_blocks = 2;
  o->queue_depths[0] = 1, o->queue_depths[1] = 4, o->n_queue_depths = 2;
  o->file_bytes = 8 * MIB;
  o->trials = 2;
  o->pass_seconds = 0.05;
  GError *error = NULL;
  g_assert_true(rok_calib_options_resolve(o, &error));
}

static guint count_entries(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  guint n = 0;
  while (d != NULL && g_dir_read_name(d) != NULL)
    n++;
  return n;
}

static void remove_dir(char *dir) {
  g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
  g_assert_cmpint(system(cmd), ==, 0);
  g_free(dir);
}

static void test_measure(void) {
  char *dir = g_dir_make_tmp("rok-calib-disk-XXXXXX", NULL);
  RokCalibOptions o;
  tiny_options(&o);
  RokCalibDisk disk = {0};
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  g_assert_true(rok_calib_measure_disk(dir, &o, NULL, &disk, notes, &error));
  g_assert_no_error(error);
  for (guint i = 0; i < notes->len; i++)
    g_test_message("note: %s", (const char *)notes->pdata[i]);
  g_assert_cmpstr(disk.dir, ==, dir);
  g_assert_nonnull(disk.backend);
  g_assert_cmpuint(disk.file_bytes, ==, 8 * MIB);
  g_assert_cmpuint(disk.capacity, >, 8 * MIB);
  g_assert_cmpuint(disk.points->len, ==, 4);
  for (guint i = 0; i < disk.points->len; i++) {
    const RokCalibDiskPoint *p = &g_array_index(disk.points, RokCalibDiskPoint, i);
    g_test_message("%" G_GUINT64_FORMAT " QD %u: write %.3g read %.3g", p->block, p->queue_depth, p->write.median,
                   p->read.median);
    g_assert_cmpuint(p->block, ==, o.blocks[i / 2]);
    g_assert_cmpuint(p->queue_depth, ==, o.queue_depths[i % 2]);
    g_assert_cmpuint(p->write.n, ==, 2);
    g_assert_cmpfloat(p->write.min, >, 0);
    g_assert_cmpfloat(p->read.min, >, 0);
    g_assert_cmpfloat(p->write.min, <=, p->write.max);
  }
  const RokCalibDiskPoint *bw = &g_array_index(disk.points, RokCalibDiskPoint, disk.best_write);
  for (guint i = 0; i < disk.points->len; i++)
    g_assert_cmpfloat(g_array_index(disk.points, RokCalibDiskPoint, i).write.median, <=, bw->write.median);
  g_assert_cmpfloat(disk.latency.median, >, 0);
  g_assert_cmpfloat(disk.latency.median, <, 1.0);
  g_assert_cmpuint(disk.latency.n, >=, 10);
  g_assert_cmpfloat(disk.write_latency.median, >, 0);
  g_assert_cmpuint(disk.write_latency.n, >=, 10);
  /* Bursts of 1 and 4 requests of 1 MiB and 256 KiB and one of 64 KiB
   * after 1 ms (16 is deeper than --qd 4), lone ones of 1 MiB and 256
   * KiB after 20 ms and after 100 ms, and chained to one like them, 5
   * each. */
  g_assert_cmpuint(disk.n_bursts, ==, 11);
  g_assert_cmpfloat(disk.bursts[8].gap_s, >, disk.bursts[6].gap_s);
  g_assert_cmpfloat(disk.bursts[9].gap_s, ==, 0);
  g_assert_cmpuint(disk.bursts[10].request_bytes, ==, MIB / 4);
  g_assert_cmpuint(disk.bursts[1].requests, ==, 4);
  g_assert_cmpuint(disk.bursts[3].request_bytes, ==, MIB / 4);
  g_assert_cmpuint(disk.bursts[4].request_bytes, ==, MIB / 16);
  g_assert_cmpfloat(disk.bursts[6].gap_s, >, disk.bursts[0].gap_s);
  for (guint i = 0; i < disk.n_bursts; i++) {
    g_assert_cmpuint(disk.bursts[i].write.n, ==, 5);
    g_assert_cmpfloat(disk.bursts[i].write.median, >, 0);
    g_assert_cmpfloat(disk.bursts[i].read.median, >, 0);
  }
  g_assert_true(disk.legs.fitted);
  for (guint k = 0; k < 2; k++) {
    g_assert_cmpfloat(disk.legs.fixed[k], >=, 0);
    g_assert_cmpfloat(disk.legs.rate[k], >, 0);
  }
  g_assert_cmpfloat(disk.legs.request, >=, 0);
  /* At most the grid's rate at the executor's requests or the largest
   * burst's own, whichever is faster. */
  for (guint k = 0; k < 2; k++) {
    const RokCalibDiskPoint *p = rok_calib_disk_rate_point(&disk, k == 0);
    double ceiling = rok_calib_disk_leg_ceiling(&disk, k == 0);
    g_assert_cmpfloat(ceiling, >=, k == 0 ? p->write.median : p->read.median);
    g_assert_cmpfloat(disk.legs.rate[k], <=, ceiling * (1 + 1e-12));
  }
  g_assert_cmpuint(disk.n_wakes, ==, 2);
  g_assert_cmpfloat(disk.wakes[0].write, >=, 0);
  g_assert_cmpfloat(disk.wakes[0].read, >=, 0);
  g_assert_cmpfloat(disk.wakes[0].after, >, 1e-3);
  g_assert_cmpfloat(disk.wakes[0].after, <, 20e-3);
  g_assert_cmpfloat(disk.wakes[1].write, >=, disk.wakes[0].write);
  g_assert_cmpfloat(disk.wakes[1].read, >=, disk.wakes[0].read);
  g_assert_cmpfloat(disk.wakes[1].after, >, 20e-3);
  g_assert_cmpfloat(disk.wakes[1].after, <, 100e-3);
  g_assert_true(disk.warm_fitted);
  g_assert_cmpfloat(disk.warm[0], >=, 0);
  g_assert_cmpfloat(disk.warm[1], >=, 0);
  /* A leg joined by another takes a queue of 5: not timed at --qd 4. */
  g_assert_cmpuint(disk.join_ratio[0].n + disk.join_ratio[1].n, ==, 0);
  g_assert_false(disk.completes_together);
  /* Some processor time per burst, far below its wall time's worth. */
  for (guint i = 0; i < disk.n_bursts; i++)
    g_assert_cmpfloat(disk.bursts[i].write_cpu.median + disk.bursts[i].read_cpu.median, <, 1.0);
  g_assert_cmpfloat(disk.leg_cpu + disk.request_cpu, >, 0);
  g_assert_cmpuint(count_entries(dir), ==, 0);
  rok_calib_disk_clear(&disk);
  remove_dir(dir);
}

/* Bursts made by the model itself give its figures back: a leg of N
 * requests of B bytes after the short gap takes fixed + N (request + B /
 * bandwidth + B / MiB per_mib), fixed and per_mib the direction's
 * ([0] writes, [1] reads); after the long gap, WAKE more. */
static const struct {
  guint requests;
  guint64 request_bytes;
  double gap_s;
} shapes[] = {{1, MIB, 1e-3},     {4, MIB, 1e-3},       {16, MIB, 1e-3},     {1, MIB / 4, 1e-3},
              {4, MIB / 4, 1e-3}, {1, MIB / 16, 1e-3}, {1, MIB, 20e-3},     {1, MIB / 4, 20e-3},
              {1, MIB, 100e-3},   {1, MIB / 4, 100e-3}, {1, MIB, 0},        {1, MIB / 4, 0}};

typedef struct {
  double fixed[2], request, per_mib[2], wake, bandwidth[2], deep_wake, warm;
} DiskModel;

static void burst_disk(RokCalibDisk *d, const DiskModel *m) {
  /* The random 4 KiB latencies play no part in the fit. */
  *d = (RokCalibDisk){.points = g_array_new(FALSE, TRUE, sizeof(RokCalibDiskPoint)),
                      .latency = {.median = 48e-6, .n = 1},
                      .write_latency = {.median = 49e-6, .n = 1}};
  RokCalibDiskPoint p = {.block = MIB, .queue_depth = 32, .write.median = m->bandwidth[0],
                         .read.median = m->bandwidth[1]};
  g_array_append_val(d->points, p);
  for (guint i = 0; i < G_N_ELEMENTS(shapes); i++) {
    RokCalibBurst *b = &d->bursts[d->n_bursts++];
    *b = (RokCalibBurst){.requests = shapes[i].requests, .request_bytes = shapes[i].request_bytes,
                         .gap_s = shapes[i].gap_s};
    double mib = (double)b->request_bytes / MIB;
    double more = b->gap_s > 50e-3 ? m->deep_wake : b->gap_s > 1e-3 ? m->wake : b->gap_s == 0 ? -m->warm : 0;
    double t[2];
    for (guint k = 0; k < 2; k++)
      t[k] = m->fixed[k] + more +
             b->requests * (m->request + mib * m->per_mib[k] + b->request_bytes / m->bandwidth[k]);
    b->write.median = t[0];
    b->read.median = t[1];
  }
}

/* The rate a model's legs stream at: its bandwidth less its per-MiB cost. */
static double model_rate(const DiskModel *m, guint k) {
  return 1 / (1 / m->bandwidth[k] + m->per_mib[k] / MIB);
}

/* 30 us per request and 100 us per MiB of it beyond the grid's rate, 160
 * us per leg, both directions alike. */
static const DiskModel alike = {{160e-6, 160e-6}, 30e-6, {100e-6, 100e-6}, 0, {4e9, 3.6e9}};

/* The bursts of M give M's figures back. */
static void assert_fit_gives(const DiskModel *m) {
  RokCalibDisk d;
  RokCalibLegFit f;
  burst_disk(&d, m);
  g_assert_true(rok_calib_disk_fit_legs(&d, &f));
  g_assert_true(f.fitted);
  g_assert_cmpfloat_with_epsilon(f.request, m->request, 1e-9);
  for (guint k = 0; k < 2; k++) {
    g_assert_cmpfloat_with_epsilon(f.fixed[k], m->fixed[k], 1e-9);
    g_assert_cmpfloat_with_epsilon(f.rate[k] / model_rate(m, k), 1, 1e-6);
  }
  g_array_unref(d.points);
}

static void test_fit_legs(void) {
  RokCalibDisk d;
  RokCalibLegFit f;
  assert_fit_gives(&alike);
  /* A disk that takes a write sooner than it answers a read, and whose
   * reads in bursts stream slower than the grid's passes (the development
   * VM's virtio disk: 1 MiB reads at 2.77 GB/s at QD 1, 16 of them
   * together at 2.31): each direction's fixed part and rate apart. */
  DiskModel cached = alike;
  cached.fixed[0] = 70e-6, cached.per_mib[0] = 0, cached.per_mib[1] = 150e-6;
  assert_fit_gives(&cached);
  /* A fixed part below the random 4 KiB latency (48 us here): sequential
   * bursts answer sooner, and the fit takes it as it is. */
  DiskModel prompt = cached;
  prompt.fixed[1] = 20e-6;
  assert_fit_gives(&prompt);
  /* The bursts after the long gap, slower, are not fitted. */
  DiskModel waking = alike;
  waking.wake = 500e-6;
  burst_disk(&d, &waking);
  g_assert_true(rok_calib_disk_fit_legs(&d, &f));
  g_assert_cmpfloat_with_epsilon(f.fixed[1], 160e-6, 1e-9);
  g_array_unref(d.points);
  /* No fixed part and no per-request cost: never negative, however the
   * noise leans, and never faster than the grid. */
  DiskModel bare = alike;
  bare.fixed[0] = bare.fixed[1] = bare.request = 0;
  burst_disk(&d, &bare);
  d.bursts[0].write.median -= 5e-6;
  d.bursts[3].read.median -= 5e-6;
  g_assert_true(rok_calib_disk_fit_legs(&d, &f));
  g_assert_cmpfloat(f.fixed[0], >=, 0);
  g_assert_cmpfloat(f.fixed[1], >=, 0);
  g_assert_cmpfloat(f.request, >=, 0);
  g_assert_cmpfloat(f.fixed[0] + f.fixed[1] + f.request, <, 3e-6);
  for (guint k = 0; k < 2; k++)
    g_assert_cmpfloat_with_epsilon(f.rate[k] / model_rate(&bare, k), 1, 0.01);
  g_array_unref(d.points);
  /* Bursts faster than the grid's passes (a virtual disk's host caches a
   * burst; its grid streams for seconds): faster than the grid, at most
   * the largest burst's own rate, and the fixed part near theirs rather
   * than lowered to make up for a rate held at the grid's. */
  DiskModel quick = alike;
  quick.per_mib[0] = quick.per_mib[1] = -50e-6;
  burst_disk(&d, &quick);
  g_assert_true(rok_calib_disk_fit_legs(&d, &f));
  for (guint k = 0; k < 2; k++) {
    const RokCalibBurst *largest = &d.bursts[2]; /* 16 x 1 MiB */
    g_assert_cmpuint(largest->requests, ==, 16);
    double own = 16.0 * MIB / (k == 0 ? largest->write : largest->read).median;
    g_assert_cmpfloat(rok_calib_disk_leg_ceiling(&d, k == 0), ==, own);
    g_assert_cmpfloat(f.rate[k], >, alike.bandwidth[k]);
    g_assert_cmpfloat(f.rate[k], <=, own * (1 + 1e-12));
    g_assert_cmpfloat(f.fixed[k], >, 0.5 * quick.fixed[k]);
  }
  g_array_unref(d.points);
  /* One request size cannot tell a request's cost from its bytes': the
   * rate is the grid's and the request takes it all. */
  burst_disk(&d, &alike);
  d.n_bursts = 3;
  g_assert_true(rok_calib_disk_fit_legs(&d, &f));
  g_assert_cmpfloat(f.rate[0], ==, alike.bandwidth[0]);
  g_assert_cmpfloat_with_epsilon(f.request, 130e-6, 1e-9);
  g_assert_cmpfloat_with_epsilon(f.fixed[1], 160e-6, 1e-9);
  /* One burst alone: each direction's fixed part takes what it leaves. */
  d.n_bursts = 1;
  g_assert_true(rok_calib_disk_fit_legs(&d, &f));
  g_assert_cmpfloat(f.request, ==, 0);
  g_assert_cmpfloat_with_epsilon(f.fixed[0], 160e-6 + 30e-6 + 100e-6, 1e-9);
  g_assert_cmpfloat_with_epsilon(f.fixed[1], 160e-6 + 30e-6 + 100e-6, 1e-9);
  g_array_set_size(d.points, 0);
  g_assert_false(rok_calib_disk_fit_legs(&d, &f));
  g_assert_false(f.fitted);
  g_assert_cmpfloat(f.request + f.fixed[0] + f.fixed[1] + f.rate[0] + f.rate[1], ==, 0);
  g_array_unref(d.points);
}

/* The wakes: what lone requests took more after each longer gap; between
 * each gap and the one before, their geometric mean; nothing without two
 * gaps, never negative, a deeper one never less than a shallower one. */
static void test_fit_wakes(void) {
  RokCalibDisk d;
  RokCalibWake w[ROK_CALIB_WAKES];
  guint n = 0;
  DiskModel waking = alike;
  waking.wake = 150e-6, waking.deep_wake = 400e-6;
  burst_disk(&d, &waking);
  g_assert_true(rok_calib_disk_fit_wakes(&d, w, &n));
  g_assert_cmpuint(n, ==, 2);
  g_assert_cmpfloat_with_epsilon(w[0].write, 150e-6, 1e-12);
  g_assert_cmpfloat_with_epsilon(w[0].read, 150e-6, 1e-12);
  g_assert_cmpfloat_with_epsilon(w[0].after, sqrt(1e-3 * 20e-3), 1e-12);
  g_assert_cmpfloat_with_epsilon(w[1].write, 400e-6, 1e-12);
  g_assert_cmpfloat_with_epsilon(w[1].after, sqrt(20e-3 * 100e-3), 1e-12);
  /* Faster after the deep gap than after the long one: the shallower wake. */
  d.bursts[8].write.median = d.bursts[9].write.median = 0;
  g_assert_true(rok_calib_disk_fit_wakes(&d, w, &n));
  g_assert_cmpfloat_with_epsilon(w[1].write, 150e-6, 1e-12);
  /* Faster after the long gap: no wake. */
  d.bursts[6].write.median = d.bursts[7].write.median = 0;
  g_assert_true(rok_calib_disk_fit_wakes(&d, w, &n));
  g_assert_cmpfloat(w[0].write, ==, 0);
  /* Without the deep gap, one level; without the long one, none. */
  d.n_bursts = 8;
  g_assert_true(rok_calib_disk_fit_wakes(&d, w, &n));
  g_assert_cmpuint(n, ==, 1);
  d.n_bursts = 6;
  g_assert_false(rok_calib_disk_fit_wakes(&d, w, &n));
  g_assert_cmpuint(n, ==, 0);
  g_array_unref(d.points);
}

/* The warm saving: what lone requests chained to one like them took less
 * than after the short gap, the median over sizes, never negative, and
 * nothing without chained bursts; the legs and wakes fitted without them. */
static void test_fit_warm(void) {
  RokCalibDisk d;
  RokCalibLegFit f;
  RokCalibWake w[ROK_CALIB_WAKES];
  guint n = 0;
  double warm[2];
  DiskModel chained = alike;
  chained.warm = 40e-6, chained.wake = 150e-6;
  burst_disk(&d, &chained);
  g_assert_true(rok_calib_disk_fit_warm(&d, warm));
  g_assert_cmpfloat_with_epsilon(warm[0], 40e-6, 1e-12);
  g_assert_cmpfloat_with_epsilon(warm[1], 40e-6, 1e-12);
  g_assert_true(rok_calib_disk_fit_legs(&d, &f));
  g_assert_cmpfloat_with_epsilon(f.fixed[0], 160e-6, 1e-9);
  g_assert_true(rok_calib_disk_fit_wakes(&d, w, &n));
  g_assert_cmpfloat_with_epsilon(w[0].after, sqrt(1e-3 * 20e-3), 1e-12);
  g_assert_cmpfloat_with_epsilon(w[0].read, 150e-6, 1e-12);
  /* One size slower chained: the median of the two; both slower: none. */
  d.bursts[11].read.median += 60e-6;
  g_assert_true(rok_calib_disk_fit_warm(&d, warm));
  g_assert_cmpfloat_with_epsilon(warm[1], 10e-6, 1e-12);
  d.bursts[10].read.median += 60e-6;
  g_assert_true(rok_calib_disk_fit_warm(&d, warm));
  g_assert_cmpfloat(warm[1], ==, 0);
  g_assert_cmpfloat_with_epsilon(warm[0], 40e-6, 1e-12);
  d.n_bursts = 10;
  g_assert_false(rok_calib_disk_fit_warm(&d, warm));
  g_assert_cmpfloat(warm[0] + warm[1], ==, 0);
  g_array_unref(d.points);
}

/* The processor time of bursts of N requests, leg + N * request, gives
 * both back; without a per-request part (or with one size) the leg takes
 * it all; a negative intercept is never a negative leg. */
static void test_fit_cpu(void) {
  RokCalibDisk d = {.n_bursts = 3};
  static const guint sizes[] = {1, 4, 16};
  double request = 0, leg = 0;
  for (guint i = 0; i < 3; i++) {
    d.bursts[i] = (RokCalibBurst){.requests = sizes[i], .request_bytes = MIB, .gap_s = 1e-3};
    d.bursts[i].write_cpu.median = d.bursts[i].read_cpu.median = 50e-6 + sizes[i] * 2e-6;
  }
  g_assert_true(rok_calib_disk_fit_cpu(&d, &request, &leg));
  g_assert_cmpfloat_with_epsilon(request, 2e-6, 1e-12);
  g_assert_cmpfloat_with_epsilon(leg, 50e-6, 1e-12);
  for (guint i = 0; i < 3; i++)
    d.bursts[i].write_cpu.median = d.bursts[i].read_cpu.median = sizes[i] * 8e-6 - 1e-6;
  g_assert_true(rok_calib_disk_fit_cpu(&d, &request, &leg));
  g_assert_cmpfloat(leg, ==, 0);
  g_assert_cmpfloat(request, >, 7e-6);
  d.n_bursts = 1;
  g_assert_true(rok_calib_disk_fit_cpu(&d, &request, &leg));
  g_assert_cmpfloat(request, ==, 0);
  g_assert_cmpfloat_with_epsilon(leg, 7e-6, 1e-12);
  d.n_bursts = 0;
  g_assert_false(rok_calib_disk_fit_cpu(&d, &request, &leg));
  g_assert_cmpfloat(leg + request, ==, 0);
}

/* Cancelled before it starts (a Ctrl-C that came early): the error says
 * so and the work folder is gone. */
static void test_cancelled(void) {
  char *dir = g_dir_make_tmp("rok-calib-disk-XXXXXX", NULL);
  RokCalibOptions o;
  tiny_options(&o);
  RokCalibCancel cancel;
  rok_calib_cancel_init(&cancel);
  rok_calib_cancel_now(&cancel);
  RokCalibDisk disk = {0};
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  g_assert_false(rok_calib_measure_disk(dir, &o, &cancel, &disk, notes, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_CANCELLED);
  g_clear_error(&error);
  g_assert_cmpuint(count_entries(dir), ==, 0);
  rok_calib_disk_clear(&disk);
  rok_calib_cancel_clear(&cancel);
  remove_dir(dir);
}

/* The disk's speed against a profile's leg model: a positive ratio each
 * way and the folder left empty; against a model that has every leg take
 * a second more (its leg overhead, or each MiB of a request a second) far
 * below 1, against one that has it take a nanosecond far above (no disk
 * moves a burst in microseconds, none in seconds); cancelled, an error and
 * nothing left; a directory that is not there, an input error. */
static void test_disk_speed(void) {
  char *dir = g_dir_make_tmp("rok-calib-disk-XXXXXX", NULL);
  RokHw hw = {0};
  hw.nvme.devices = 1;
  hw.nvme.latency = 100000;
  hw.nvme.read_bandwidth = hw.nvme.write_bandwidth = 2e9;
  double ratio[2], half[2];
  GError *error = NULL;
  g_assert_true(rok_calib_disk_speed(dir, &hw, 2, NULL, ratio, &error));
  g_assert_no_error(error);
  g_test_message("write %.3f, read %.3f of the model", ratio[0], ratio[1]);
  g_assert_cmpfloat(ratio[0], >, 0);
  g_assert_cmpfloat(ratio[1], >, 0);
  g_assert_cmpuint(count_entries(dir), ==, 0);
  RokHw slow = hw, per_mib = hw, fast = hw;
  slow.nvme.leg_overhead = 1000000000;
  per_mib.nvme.request_overhead_per_mib = 1000000000;
  fast.nvme.latency = 1;
  fast.nvme.read_bandwidth = fast.nvme.write_bandwidth = 1e18;
  const RokHw *models[] = {&slow, &per_mib, &fast};
  for (guint m = 0; m < G_N_ELEMENTS(models); m++) {
    double against[2];
    g_assert_true(rok_calib_disk_speed(dir, models[m], 1, NULL, against, &error));
    g_assert_no_error(error);
    for (guint d = 0; d < 2; d++) {
      if (models[m] == &fast)
        g_assert_cmpfloat(against[d], >, 10);
      else
        g_assert_cmpfloat(against[d], <, 0.1);
    }
  }
  g_assert_cmpuint(count_entries(dir), ==, 0);
  RokCalibCancel cancel;
  rok_calib_cancel_init(&cancel);
  rok_calib_cancel_now(&cancel);
  g_assert_false(rok_calib_disk_speed(dir, &hw, 2, &cancel, half, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_CANCELLED);
  g_clear_error(&error);
  g_assert_cmpuint(count_entries(dir), ==, 0);
  rok_calib_cancel_clear(&cancel);
  g_assert_false(rok_calib_disk_speed("/nonexistent/rok", &hw, 2, NULL, half, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_clear_error(&error);
  remove_dir(dir);
}

/* Child processes of this one still there (none reaped or running):
 * waitpid(-1) finds none once the spinners are gone. */
static gboolean no_children(void) {
  return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

/* Beside spinners (a CPU device's calibration): they run while the disk is
 * timed, their processor time is counted, and none outlives the
 * measurement, whether it ends or is cancelled. */
static void test_busy(void) {
  g_assert_true(no_children());
  RokCalibBusy *busy = rok_calib_busy_start(2);
  g_assert_cmpuint(rok_calib_busy_processes(busy), ==, 2);
  g_assert_false(no_children());
  gint64 until = g_get_monotonic_time() + 50000;
  while (g_get_monotonic_time() < until)
    ;
  g_assert_cmpfloat(rok_calib_busy_stop(busy), >, 0);
  g_assert_true(no_children());
  g_assert_cmpfloat(rok_calib_busy_stop(NULL), ==, 0);

  char *dir = g_dir_make_tmp("rok-calib-disk-XXXXXX", NULL);
  RokCalibOptions o;
  tiny_options(&o);
  o.n_blocks = 1, o.n_queue_depths = 1, o.trials = 1;
  o.busy_processors = 1;
  RokCalibDisk disk = {0};
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  g_assert_true(rok_calib_measure_disk(dir, &o, NULL, &disk, notes, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(disk.busy_processors, ==, 1);
  g_assert_cmpfloat(disk.busy_seconds, >, 0);
  g_assert_true(no_children());
  rok_calib_disk_clear(&disk);

  RokCalibCancel cancel;
  rok_calib_cancel_init(&cancel);
  rok_calib_cancel_now(&cancel);
  g_assert_false(rok_calib_measure_disk(dir, &o, &cancel, &disk, notes, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_CANCELLED);
  g_clear_error(&error);
  g_assert_true(no_children());
  g_assert_cmpuint(count_entries(dir), ==, 0);
  rok_calib_disk_clear(&disk);
  rok_calib_cancel_clear(&cancel);
  remove_dir(dir);
}

/* A work folder left by a killed run (its owner's pid no longer exists) is
 * swept, with a note. */
static void test_sweeps_stale(void) {
  char *dir = g_dir_make_tmp("rok-calib-disk-XXXXXX", NULL);
  g_autofree char *stale = g_build_filename(dir, "rok-AbC123", NULL);
  g_assert_cmpint(g_mkdir(stale, 0700), ==, 0);
  RokOwner owner;
  storage_owner_self(&owner);
  owner.pid = 0x7ffffff0; /* beyond any pid_max: that process is gone */
  g_autofree char *marker_text = storage_owner_to_text(&owner);
  storage_owner_clear(&owner);
  g_autofree char *marker = g_build_filename(stale, "rok-owner", NULL), *data = g_build_filename(stale, "data", NULL);
  g_assert_true(g_file_set_contents(marker, marker_text, -1, NULL));
  g_assert_true(g_file_set_contents(data, "old", -1, NULL));
  RokCalibOptions o;
  tiny_options(&o);
  o.n_blocks = 1, o.n_queue_depths = 1, o.trials = 1;
  RokCalibDisk disk = {0};
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  g_assert_true(rok_calib_measure_disk(dir, &o, NULL, &disk, notes, &error));
  g_assert_no_error(error);
  gboolean noted = FALSE;
  for (guint i = 0; i < notes->len; i++)
    noted = noted || strstr(notes->pdata[i], "rok-AbC123") != NULL;
  g_assert_true(noted);
  g_assert_cmpuint(count_entries(dir), ==, 0);
  rok_calib_disk_clear(&disk);
  remove_dir(dir);
}

static void test_bad_dir(void) {
  RokCalibOptions o;
  tiny_options(&o);
  RokCalibDisk disk = {0};
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  g_assert_false(rok_calib_measure_disk("/nonexistent/rok", &o, NULL, &disk, notes, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "/nonexistent/rok"));
  g_clear_error(&error);
  g_assert_false(rok_calib_measure_disk("/proc/self/status", &o, NULL, &disk, notes, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "not a directory"));
  g_clear_error(&error);
  rok_calib_disk_clear(&disk);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/calibrate-disk/measure", test_measure);
  g_test_add_func("/calibrate-disk/fit-legs", test_fit_legs);
  g_test_add_func("/calibrate-disk/fit-wakes", test_fit_wakes);
  g_test_add_func("/calibrate-disk/fit-warm", test_fit_warm);
  g_test_add_func("/calibrate-disk/fit-cpu", test_fit_cpu);
  g_test_add_func("/calibrate-disk/cancelled", test_cancelled);
  g_test_add_func("/calibrate-disk/disk-speed", test_disk_speed);
  g_test_add_func("/calibrate-disk/busy", test_busy);
  g_test_add_func("/calibrate-disk/sweeps-stale", test_sweeps_stale);
  g_test_add_func("/calibrate-disk/bad-dir", test_bad_dir);
  return g_test_run();
}
