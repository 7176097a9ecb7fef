/* Opening data files for direct I/O with a buffered fallback, and growing
 * them by preallocation. */
#define _GNU_SOURCE /* O_DIRECT, statx, fallocate */
#include "rok/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file-at.h"
#include "rok/core.h"

#define DEFAULT_ALIGN 4096

/* The file's direct-I/O alignment; 0 when the kernel says it has none (the
 * file system does not do direct I/O on it after all). */
static gsize dio_align(int fd) {
#ifdef STATX_DIOALIGN
  struct statx stx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 && (stx.stx_mask & STATX_DIOALIGN))
    return MAX(stx.stx_dio_mem_align, stx.stx_dio_offset_align);
#else
  (void)fd;
#endif
  return DEFAULT_ALIGN;
}

gboolean rok_io_file_create(const char *path, RokFault *fault, RokIoFile *file, GError **error) {
  return storage_file_create_at(AT_FDCWD, path, path, fault, file, error);
}

gboolean storage_file_create_at(int dirfd, const char *name, const char *shown, RokFault *fault, RokIoFile *file,
                                GError **error) {
  *file = (RokIoFile){ .fd = -1 };
  int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = -1;
  if (rok_fault_next(fault, ROK_FAULT_OP_OPEN) == ROK_FAULT_NODIRECT)
    errno = EINVAL;
  else
    fd = openat(dirfd, name, flags | O_DIRECT, 0600);
  gsize align = 0;
  if (fd >= 0 && (align = dio_align(fd)) == 0) {
    close(fd);
    fd = -1;
    errno = EINVAL;
  }
  if (fd < 0 && errno == EINVAL) {
    /* The refused open may have created the file already: open it again
     * without O_EXCL (the folder is ours and fresh, nobody else made it). */
    fd = openat(dirfd, name, (flags & ~O_EXCL), 0600);
    align = 1;
  }
  if (fd < 0) {
    int e = errno;
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot create %s: %s", shown, g_strerror(e));
    return FALSE;
  }
  file->fd = fd;
  file->align = MAX(align, 1);
  file->direct = align > 1;
  return TRUE;
}

gboolean rok_io_file_reserve(RokIoFile *file, const char *path, guint64 size, GError **error) {
  if (size <= file->size)
    return TRUE;
  int r;
  /* fallocate(2), not posix_fallocate(): where the file system cannot
   * preallocate, glibc's emulation would write every block. */
  do
    r = fallocate(file->fd, 0, (off_t)file->size, (off_t)(size - file->size)) == 0 ? 0 : errno;
  while (r == EINTR);
  if (r == EOPNOTSUPP || r == EINVAL)
    r = ftruncate(file->fd, (off_t)size) == 0 ? 0 : errno;
  if (r != 0) {
    g_autofree char *want = rok_units_format_size(size);
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "cannot allocate %s for %s: %s", want, path,
                g_strerror(r));
    return FALSE;
  }
  file->size = size;
  return TRUE;
}

void rok_io_file_close(RokIoFile *file) {
  if (file->fd >= 0)
    close(file->fd);
  file->fd = -1;
}
