/* Virtual-disk detection: what sysfs says of a block device, and finding a
 * directory's disk in a fake sysfs tree laid out as Linux lays it out. */
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "rok/calibrate.h"

static void test_reason(void) {
  static const struct {
    const char *name, *vendor, *model, *path, *expect; /* expect NULL: a real disk */
  } cases[] = {
      {"sda", "ATA", "QEMU HARDDISK", "/sys/devices/pci0000:00/0000:00:01.1/ata1/host0/target0:0:0/0:0:0:0",
       "QEMU HARDDISK"},
      {"vda", "0x1af4", NULL, "/sys/devices/pci0000:00/0000:00:02.0/virtio1", "0x1af4"},
      {"vdb", NULL, NULL, "/sys/devices/pci0000:00/0000:00:04.0/virtio3", "virtio"},
      {"sdb", "VMware  ", "Virtual disk", "/sys/devices/pci0000:00/0000:00:10.0/host2/target2:0:0/2:0:0:0",
       "VMware"},
      {"sdc", "Msft", "Virtual Disk", "/sys/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/x", "Virtual Disk"},
      {"sdd", "VBOX", "HARDDISK", "/sys/devices/pci0000:00/0000:00:0d.0/ata3", "VBOX"},
      {"nvme1n1", NULL, "Amazon Elastic Block Store", "/sys/devices/pci0000:00/0000:00:1f.0/nvme/nvme1",
       "Amazon Elastic Block Store"},
      {"xvda", NULL, NULL, "/sys/devices/vbd-51712", NULL}, /* nothing to tell by */
      {"xvdb", NULL, NULL, "/sys/devices/xen/vbd-51728", "hypervisor"},
      {"zram0", NULL, NULL, "/sys/devices/virtual/block/zram0", "zram"},
      {"loop3", NULL, NULL, "/sys/devices/virtual/block/loop3", "loop device"},
      {"ram0", NULL, NULL, "/sys/devices/virtual/block/ram0", "RAM disk"},
      {"nvme0n1", NULL, "Samsung SSD 980 PRO 1TB", "/sys/devices/pci0000:00/0000:00:01.2/0000:01:00.0/nvme/nvme0",
       NULL},
      {"sda", "ATA", "WDC WD40EFRX-68N", "/sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0",
       NULL},
      {NULL, NULL, NULL, NULL, NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *why = rok_calib_virtual_reason(cases[i].name, cases[i].vendor, cases[i].model, cases[i].path);
    g_test_message("%s: %s", cases[i].name ? cases[i].name : "(null)", why ? why : "real");
    if (cases[i].expect == NULL) {
      g_assert_null(why);
    } else {
      g_assert_nonnull(why);
      g_assert_nonnull(strstr(why, cases[i].expect));
    }
  }
}

/* A fake sysfs: ROOT/devices/<path>/block/<disk>[/<part>], the device link
 * and its files, and ROOT/dev/block/<major:minor of DIR> to it. */
typedef struct {
  char *root;
  char *dir; /* a real directory whose st_dev the tree describes */
} Fake;

static void fake_init(Fake *f) {
  f->root = g_dir_make_tmp("rok-sysfs-XXXXXX", NULL);
  f->dir = g_dir_make_tmp("rok-kind-XXXXXX", NULL);
  g_assert_nonnull(f->root);
  g_assert_nonnull(f->dir);
}

static void fake_clear(Fake *f) {
  g_autofree char *cmd = g_strdup_printf("rm -rf '%s' '%s'", f->root, f->dir);
  g_assert_cmpint(system(cmd), ==, 0);
  g_free(f->root);
  g_free(f->dir);
}

static void put(const char *root, const char *path, const char *text) {
  g_autofree char *full = g_build_filename(root, path, NULL), *parent = g_path_get_dirname(full);
  g_assert_cmpint(g_mkdir_with_parents(parent, 0755), ==, 0);
  g_assert_true(g_file_set_contents(full, text, -1, NULL));
}

static void link_to(const char *root, const char *path, const char *target) {
  g_autofree char *full = g_build_filename(root, path, NULL), *parent = g_path_get_dirname(full);
  g_assert_cmpint(g_mkdir_with_parents(parent, 0755), ==, 0);
  g_assert_cmpint(symlink(target, full), ==, 0);
}

/* ROOT/dev/block/M:N -> the block folder at DEVICES_PATH (under devices/). */
static void map_dir(const Fake *f, const char *devices_path) {
  struct stat st;
  g_assert_cmpint(stat(f->dir, &st), ==, 0);
  g_autofree char *id = g_strdup_printf("dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
  g_autofree char *target = g_strconcat("../../devices/", devices_path, NULL);
  link_to(f->root, id, target);
}

static gboolean dir_on_tmpfs(const char *dir) {
  struct statfs fs;
  return statfs(dir, &fs) == 0 && fs.f_type == 0x01021994;
}

static void test_virtio_partition(void) {
  Fake f;
  fake_init(&f);
  if (dir_on_tmpfs(f.dir)) {
    fake_clear(&f);
    g_test_skip("the temporary folder is a tmpfs: no block device to fake");
    return;
  }
  /* /sys/block/vdb/device -> ../../../virtio3: the partition vdb1 holds DIR. */
  put(f.root, "devices/pci0000:00/0000:00:04.0/virtio3/vendor", "0x1af4\n");
  put(f.root, "devices/pci0000:00/0000:00:04.0/virtio3/block/vdb/vdb1/partition", "1\n");
  link_to(f.root, "devices/pci0000:00/0000:00:04.0/virtio3/block/vdb/device", "../../../virtio3");
  map_dir(&f, "pci0000:00/0000:00:04.0/virtio3/block/vdb/vdb1");
  g_autofree char *disk = NULL;
  g_autofree char *why = rok_calib_disk_kind(f.root, f.dir, &disk);
  g_assert_cmpstr(disk, ==, "vdb");
  g_assert_nonnull(why);
  g_assert_nonnull(strstr(why, "virtio"));
  fake_clear(&f);
}

static void test_real_nvme(void) {
  Fake f;
  fake_init(&f);
  if (dir_on_tmpfs(f.dir)) {
    fake_clear(&f);
    g_test_skip("the temporary folder is a tmpfs: no block device to fake");
    return;
  }
  const char *nvme = "devices/pci0000:00/0000:00:01.2/0000:01:00.0/nvme/nvme0";
  g_autofree char *model = g_strconcat(nvme, "/model", NULL), *dev = g_strconcat(nvme, "/nvme0n1/device", NULL);
  put(f.root, model, "Samsung SSD 980 PRO 1TB                 \n");
  link_to(f.root, dev, "../../nvme0");
  map_dir(&f, "pci0000:00/0000:00:01.2/0000:01:00.0/nvme/nvme0/nvme0n1");
  g_autofree char *disk = NULL;
  g_autofree char *why = rok_calib_disk_kind(f.root, f.dir, &disk);
  g_assert_cmpstr(disk, ==, "nvme0n1");
  g_assert_null(why);
  fake_clear(&f);
}

/* A device-mapper volume (LVM) on a QEMU disk: virtual through its slave. */
static void test_dm_over_qemu(void) {
  Fake f;
  fake_init(&f);
  if (dir_on_tmpfs(f.dir)) {
    fake_clear(&f);
    g_test_skip("the temporary folder is a tmpfs: no block device to fake");
    return;
  }
  const char *sda = "devices/pci0000:00/0000:00:01.1/ata1/host0/target0:0:0/0:0:0:0";
  g_autofree char *model = g_strconcat(sda, "/model", NULL), *part = g_strconcat(sda, "/block/sda/sda2/partition", NULL);
  g_autofree char *dev = g_strconcat(sda, "/block/sda/device", NULL);
  put(f.root, model, "QEMU HARDDISK\n");
  put(f.root, part, "2\n");
  link_to(f.root, dev, "../../../0:0:0:0");
  put(f.root, "devices/virtual/block/dm-0/dm/name", "vg-root\n");
  link_to(f.root, "devices/virtual/block/dm-0/slaves/sda2",
          "../../../../pci0000:00/0000:00:01.1/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda2");
  map_dir(&f, "virtual/block/dm-0");
  g_autofree char *disk = NULL;
  g_autofree char *why = rok_calib_disk_kind(f.root, f.dir, &disk);
  g_test_message("%s: %s", disk, why);
  g_assert_cmpstr(disk, ==, "dm-0");
  g_assert_nonnull(why);
  g_assert_nonnull(strstr(why, "built on sda"));
  g_assert_nonnull(strstr(why, "QEMU HARDDISK"));
  fake_clear(&f);
}

static void test_no_block_device(void) {
  Fake f;
  fake_init(&f);
  g_autofree char *disk = NULL;
  g_autofree char *why = rok_calib_disk_kind(f.root, f.dir, &disk);
  g_assert_null(disk);
  if (!dir_on_tmpfs(f.dir))
    g_assert_null(why);
  fake_clear(&f);
}

/* The real machine: whatever it is, the answer is consistent. */
static void test_this_machine(void) {
  g_autofree char *disk = NULL;
  g_autofree char *why = rok_calib_disk_kind("/sys", g_get_tmp_dir(), &disk);
  g_test_message("%s: disk %s, %s", g_get_tmp_dir(), disk ? disk : "none", why ? why : "looks real");
  if (dir_on_tmpfs(g_get_tmp_dir()))
    g_assert_nonnull(why);
  if (access("/dev/shm", F_OK) == 0 && dir_on_tmpfs("/dev/shm")) {
    g_autofree char *shm_disk = NULL;
    g_autofree char *shm = rok_calib_disk_kind("/sys", "/dev/shm", &shm_disk);
    g_assert_nonnull(shm);
    g_assert_nonnull(strstr(shm, "tmpfs"));
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/calibrate-disk-kind/reason", test_reason);
  g_test_add_func("/calibrate-disk-kind/virtio-partition", test_virtio_partition);
  g_test_add_func("/calibrate-disk-kind/real-nvme", test_real_nvme);
  g_test_add_func("/calibrate-disk-kind/dm-over-qemu", test_dm_over_qemu);
  g_test_add_func("/calibrate-disk-kind/no-block-device", test_no_block_device);
  g_test_add_func("/calibrate-disk-kind/this-machine", test_this_machine);
  return g_test_run();
}
