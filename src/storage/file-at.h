/* Creating a data file relative to a folder's handle (workdir.c), the way
 * rok_io_file_create() creates one by path. */
#pragma once

#include "rok/storage.h"

/* NAME in the folder DIRFD (AT_FDCWD: a path); SHOWN names it in errors. */
gboolean storage_file_create_at(int dirfd, const char *name, const char *shown, RokFault *fault, RokIoFile *file,
                                GError **error);
