/* Data files: opened for O_DIRECT where the file system allows it, buffered
 * otherwise, with the alignment O_DIRECT needs, and grown by preallocation. */
#pragma once

#include <glib.h>

#include "rok/storage.h"

G_BEGIN_DECLS

typedef struct {
  int fd;
  gboolean direct;  /* FALSE: O_DIRECT was refused, I/O goes through the page cache */
  gsize align;      /* buffer address, offset and length multiple: 1 when buffered */
  guint64 size;     /* bytes allocated so far */
} RokIoFile;

/* Creates PATH (which must not exist), read-write, mode 0600. O_DIRECT is
 * tried first; a file system that refuses it with EINVAL (tmpfs on older
 * kernels, ramfs, some FUSE and overlay setups) gets a buffered file. The
 * alignment comes from statx(STATX_DIOALIGN) where the kernel tells it
 * (Linux 6.1+), else 4096, which every block device accepts. FAULT may turn
 * the open into a refusal (nodirect@open). Errors name PATH. */
gboolean rok_io_file_create(const char *path, RokFault *fault, RokIoFile *file, GError **error);

/* Allocates the file up to SIZE bytes (never shrinks) with fallocate, so
 * that writes neither fail for space nor extend the file (O_DIRECT writes
 * past the end are serialised on some file systems); where fallocate is not
 * supported the file is only extended (sparse). ENOSPC and friends are
 * ROK_ERROR_IO naming PATH and the sizes. */
gboolean rok_io_file_reserve(RokIoFile *file, const char *path, guint64 size, GError **error);

void rok_io_file_close(RokIoFile *file);

G_END_DECLS
