/* Shared by output.c and output-dir.c: the list of temporary files and
 * folders that exist, under one lock. */
#pragma once

#include <glib.h>

void output_lock(void);
void output_unlock(void);
/* With the lock held: TRUE once rok_output_discard_all() ran (nothing more
 * may be put in place). */
gboolean output_discarded_locked(void);
/* With the lock held. Folders are listed with a final '/'. */
void output_live_add_locked(const char *path);
void output_live_remove_locked(const char *path);
/* Removes the files a temporary folder holds, then the folder. */
void output_remove_folder(const char *folder);
