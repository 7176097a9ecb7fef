/* Whether the figures describe a disk at all: a virtual machine's disk, a
 * disk in memory, figures only a cache reaches, two directories on one
 * disk; and whether the machine was busy or its speed moved while it was
 * measured. Each finding becomes a warning for the user. */
#include <linux/magic.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include "rok/calibrate.h"
#include "rok/core.h"

/* No disk reads or writes this fast; DDR memory copies do. */
#define CACHED_BANDWIDTH 20e9

static gboolean contains(const char *haystack, const char *needle) {
  if (haystack == NULL)
    return FALSE;
  g_autofree char *h = g_ascii_strdown(haystack, -1), *n = g_ascii_strdown(needle, -1);
  return strstr(h, n) != NULL;
}

/* Names vendors and hypervisors give their virtual disks in sysfs. */
static const char *const virtual_names[] = {"QEMU",          "VirtIO", "VMware", "VBOX", "Xen", "Virtual Disk",
                                            "PersistentDisk", "Amazon Elastic Block Store", NULL};

char *rok_calib_virtual_reason(const char *name, const char *vendor, const char *model, const char *device_path) {
  static const struct {
    const char *prefix, *what;
  } memory[] = {{"zram", "zram (compressed memory), not a disk"},
                {"ram", "a RAM disk"},
                {"loop", "a loop device (a file on another file system)"},
                {"nbd", "a network block device"}};
  for (guint i = 0; name != NULL && i < G_N_ELEMENTS(memory); i++)
    if (g_str_has_prefix(name, memory[i].prefix))
      return g_strdup(memory[i].what);
  for (guint i = 0; virtual_names[i] != NULL; i++) {
    const char *field = contains(vendor, virtual_names[i]) ? vendor : contains(model, virtual_names[i]) ? model : NULL;
    if (field != NULL)
      return g_strdup_printf("a virtual disk (\"%s\")", field);
  }
  if (vendor != NULL && g_ascii_strcasecmp(vendor, "0x1af4") == 0)
    return g_strdup("a virtio disk (PCI vendor 0x1af4)");
  if (contains(device_path, "/virtio"))
    return g_strdup("a virtio disk");
  if (contains(device_path, "/vmbus") || contains(device_path, "/xen"))
    return g_strdup("a hypervisor's virtual disk");
  return NULL;
}

static char *read_line(const char *dir, const char *file) {
  g_autofree char *path = g_build_filename(dir, file, NULL);
  char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL))
    return NULL;
  return g_strstrip(text);
}

/* The whole disk's folder in sysfs for a block device folder (a partition's
 * parent). */
static char *whole_disk(const char *block_dir) {
  g_autofree char *real = realpath(block_dir, NULL);
  if (real == NULL)
    return NULL;
  g_autofree char *partition = g_build_filename(real, "partition", NULL);
  return g_file_test(partition, G_FILE_TEST_EXISTS) ? g_path_get_dirname(real) : g_strdup(real);
}

/* The disk of a sysfs block folder, or of what it is built on (device
 * mapper, md: its "slaves"), DEPTH levels down at most. */
static char *kind_of(const char *block_dir, char **name, guint depth) {
  g_autofree char *real = whole_disk(block_dir);
  if (real == NULL)
    return NULL;
  if (*name == NULL)
    *name = g_path_get_basename(real);
  g_autofree char *base = g_path_get_basename(real), *vendor = read_line(real, "device/vendor");
  g_autofree char *model = read_line(real, "device/model"), *device = g_build_filename(real, "device", NULL);
  g_autofree char *device_path = realpath(device, NULL);
  char *reason = rok_calib_virtual_reason(base, vendor, model, device_path != NULL ? device_path : real);
  g_autofree char *slaves = g_build_filename(real, "slaves", NULL);
  g_autoptr(GDir) d = depth > 0 && reason == NULL ? g_dir_open(slaves, 0, NULL) : NULL;
  for (const char *entry; d != NULL && reason == NULL && (entry = g_dir_read_name(d)) != NULL;) {
    g_autofree char *slave = g_build_filename(slaves, entry, NULL), *slave_name = NULL;
    g_autofree char *under = kind_of(slave, &slave_name, depth - 1);
    if (under != NULL)
      reason = g_strdup_printf("built on %s, %s", slave_name, under);
  }
  return reason;
}

char *rok_calib_disk_kind(const char *sys_root, const char *dir, char **disk) {
  *disk = NULL;
  struct statfs fs;
  if (statfs(dir, &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC))
    return g_strdup("a tmpfs (memory), not a disk");
  struct stat st;
  if (stat(dir, &st) != 0)
    return NULL;
  g_autofree char *id = g_strdup_printf("%u:%u", major(st.st_dev), minor(st.st_dev));
  g_autofree char *block = g_build_filename(sys_root, "dev", "block", id, NULL);
  return kind_of(block, disk, 4);
}

static void warn(RokCalibration *c, const char *format, ...) G_GNUC_PRINTF(2, 3);
static void warn(RokCalibration *c, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_ptr_array_add(c->warnings, g_strdup_vprintf(format, args));
  va_end(args);
}

static void check_speed(RokCalibration *c, const RokCalibDisk *d, const char *what, double rate) {
  g_autofree char *r = rok_units_format_rate(rate), *m = rok_units_format_rate(c->host.memcpy.median);
  if (rate > CACHED_BANDWIDTH)
    warn(c, "%s: %s at %s, faster than any disk: the figures look cached", d->dir, what, r);
  else if (c->host.memcpy.median > 0 && rate > c->host.memcpy.median)
    warn(c, "%s: %s at %s, faster than memcpy (%s): the figures look cached", d->dir, what, r, m);
}

double rok_calib_speed_change(const RokCalibDevice *d) {
  if (d->speed_again.n == 0 || d->speed_gemm >= d->gemms->len)
    return NAN;
  double first = g_array_index(d->gemms, RokCalibGemm, d->speed_gemm).rate.median;
  return first > 0 ? d->speed_again.median / first - 1 : NAN;
}

double rok_calib_elementwise_change(const RokCalibDevice *d) {
  if (d->elementwise_ops.n == 0 || !(d->elementwise_around.median > 0))
    return NAN;
  return d->elementwise_ops.median / d->elementwise_around.median - 1;
}

double rok_calib_copies_memory_speed(const RokCalibDevice *d) {
  if (d->elementwise_copies.n == 0 || d->elementwise_ops.n == 0 || !(d->elementwise_ops.median > 0))
    return 0;
  return d->elementwise_copies.median / d->elementwise_ops.median;
}

double rok_calib_copies_memory_change(const RokCalibDevice *d) {
  const RokCalibStat *around = d->elementwise_copies_around;
  if (around[0].n == 0 || around[1].n == 0 || !(around[0].median > 0))
    return NAN;
  return around[1].median / around[0].median - 1;
}

double rok_calib_disk_change(const RokCalibDisk *disk, gboolean write) {
  const RokCalibStat *again = &disk->again[write ? 0 : 1];
  return again->n == 0 || !(again->median > 0) ? NAN : again->median - 1;
}

/* Where |CHANGE| is beyond LIMIT and the largest yet, it and WHAT. */
static void take_larger(double change, double limit, const char *what, double *largest, const char **found) {
  if (fabs(change) > limit && fabs(change) > *largest) { /* NaN (not timed): neither */
    *largest = fabs(change);
    *found = what;
  }
}

double rok_calib_unsteadiness(const RokCalibration *c, const char **what) {
  double largest = 0;
  const char *found = NULL;
  take_larger(rok_calib_speed_change(&c->device), ROK_CALIB_SPEED_CHANGE, "a change in the device's GEMM speed",
              &largest, &found);
  take_larger(rok_calib_elementwise_change(&c->device), ROK_CALIB_SPEED_CHANGE,
              "a change in the device's memory speed", &largest, &found);
  take_larger(rok_calib_copies_memory_change(&c->device), ROK_CALIB_SPEED_CHANGE,
              "a change in the device's memory speed across the copies", &largest, &found);
  for (guint i = 0; i < c->disks->len; i++)
    for (guint w = 0; w < 2; w++)
      take_larger(rok_calib_disk_change(&g_array_index(c->disks, RokCalibDisk, i), w == 0), ROK_CALIB_SPEED_CHANGE,
                  "a change in a disk's speed", &largest, &found);
  if (c->others_share > 0) /* negative: unknown */
    take_larger(c->others_share, ROK_HOST_BUSY_SHARE, "others' use of the processors", &largest, &found);
  if (what != NULL)
    *what = found;
  return largest;
}

void rok_calib_check(RokCalibration *c) {
  double busiest = MAX(c->load[0], c->load[1]);
  if (c->others_share > ROK_HOST_BUSY_SHARE)
    warn(c, "the machine was busy: other processes used %.0f%% of the processors while it was measured, so the "
            "timings mix different contention (a large held-out error of the GEMM model says so); calibrate on an "
            "idle machine",
         100 * c->others_share);
  else if (c->others_share < 0 && c->cpus > 0 && busiest > 0.5 * c->cpus) /* no /proc/stat */
    warn(c, "the machine was busy (load average %.2f on %u processors): other work competed with the measurements, "
            "which then mix timings taken under different contention (a large held-out error of the GEMM model "
            "says so); calibrate on an idle machine",
         busiest, c->cpus);
  double change = rok_calib_speed_change(&c->device);
  if (fabs(change) > ROK_CALIB_SPEED_CHANGE) {
    const RokCalibGemm *g = &g_array_index(c->device.gemms, RokCalibGemm, c->device.speed_gemm);
    warn(c, "the device ran its %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT " GEMM %.0f%% %s "
            "at the end of its measurements than at the start: the machine's speed changed while it was measured (a "
            "virtual machine's host, a power or thermal limit), so the profile mixes both speeds and predictions "
            "made from it can be off by as much; calibrate again when it holds steady (--attempts N measures again "
            "by itself)",
         g->m, g->n, g->k, 100 * fabs(change), change < 0 ? "slower" : "faster");
  }
  double ew = rok_calib_elementwise_change(&c->device);
  if (fabs(ew) > ROK_CALIB_SPEED_CHANGE)
    warn(c, "the device ran its element-wise add %.0f%% %s between the passes of the ops than right before and "
            "after them: the machine's speed changed while it was measured (a virtual machine's host, another "
            "tenant's memory traffic), so the op rates are of another speed than the rest and predictions made "
            "from them can be off by as much; calibrate again when it holds steady (--attempts N measures again by "
            "itself)",
         100 * fabs(ew), ew < 0 ? "slower" : "faster");
  double copies = rok_calib_copies_memory_change(&c->device);
  if (fabs(copies) > ROK_CALIB_SPEED_CHANGE)
    warn(c, "the device ran its element-wise add %.0f%% %s right after the copies than right before them: the "
            "machine's speed changed while they were measured, so the copy figures mix both speeds and `rok "
            "validate`'s copies carried over from its kernels (calibrated_copies_memory_speed) can be off by as "
            "much; calibrate again when it holds steady (--attempts N measures again by itself)",
         100 * fabs(copies), copies < 0 ? "slower" : "faster");
  for (guint i = 0; i < c->disks->len; i++) {
    const RokCalibDisk *d = &g_array_index(c->disks, RokCalibDisk, i);
    if (d->virtual_reason != NULL)
      warn(c, "%s: %s%s%s: its figures are those of whatever backs it (a host's disks and caches), not a drive's",
           d->dir, d->disk != NULL ? d->disk : "the file system", d->disk != NULL ? " is " : " is on ",
           d->virtual_reason);
    else if (d->disk == NULL)
      warn(c, "%s: no block device under its file system: cannot tell whether the disk is real", d->dir);
    for (guint w = 0; w < 2; w++) {
      double change = rok_calib_disk_change(d, w == 0);
      if (fabs(change) > ROK_CALIB_SPEED_CHANGE)
        warn(c, "%s: its %s bursts took %.0f%% %s when timed again at the end than at first: the disk's speed "
                "changed while it was measured (a virtual disk's host, another tenant's I/O), so its SSD figures "
                "mix both speeds and predictions made from them can be off by as much; calibrate again when it "
                "holds steady (--attempts N measures again by itself)",
             d->dir, w == 0 ? "write" : "read", 100 * fabs(change), change > 0 ? "longer" : "less time");
    }
    if (d->points->len > 0) {
      check_speed(c, d, "reads", g_array_index(d->points, RokCalibDiskPoint, d->best_read).read.median);
      check_speed(c, d, "writes", g_array_index(d->points, RokCalibDiskPoint, d->best_write).write.median);
    }
    for (guint j = 0; j < i; j++) {
      const RokCalibDisk *e = &g_array_index(c->disks, RokCalibDisk, j);
      if (e->st_dev == d->st_dev)
        warn(c, "%s and %s are on one file system: the profile counts them as two devices, but they share a disk",
             e->dir, d->dir);
    }
  }
}
