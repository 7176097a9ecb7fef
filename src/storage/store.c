/* The tensor store: opening (sweep, space check, work folders, data files,
 * backend), striping chunks over the directories, and asynchronous chunk
 * I/O through the backend. Layout and rules in store.h. */
#include "store-impl.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rok/storage.h"
#include "rok/core.h"

void rok_store_options_init(RokStoreOptions *options) {
  *options = (RokStoreOptions){
    .queue_depth = 32,
    .backend = ROK_IO_BACKEND_AUTO,
    .reserve_bytes = 0,
    .faults = g_getenv("ROK_FAULT"),
  };
}

static void add_note(RokStore *s, char *note) {
  g_ptr_array_insert(s->notes, (gint)s->notes->len - 1, note);
}

void rok_store_free(RokStore *s) {
  if (s == NULL)
    return;
  if (s->n_tensors > 0)
    g_critical("rok_store_free: %u tensors still allocated", s->n_tensors);
  rok_io_backend_free(s->backend);
  for (guint d = 0; d < s->n_dirs; d++) {
    RokStoreDir *dir = &s->dirs[d];
    if (dir->path != NULL)
      rok_io_file_close(&dir->file);
    rok_workdir_free(dir->workdir);
    g_free(dir->path);
    storage_extents_free(dir->extents);
  }
  g_free(s->dirs);
  rok_fault_free(s->fault);
  g_ptr_array_unref(s->notes);
  g_mutex_clear(&s->lock);
  g_mutex_clear(&s->stats_lock);
  g_free(s);
}

gboolean rok_store_remove_workdirs(RokStore *s, GError **error) {
  gboolean ok = TRUE;
  for (guint d = 0; d < s->n_dirs; d++) {
    RokStoreDir *dir = &s->dirs[d];
    if (dir->path != NULL)
      rok_io_file_close(&dir->file);
    GError *local = NULL;
    if (dir->workdir != NULL && !rok_workdir_remove(dir->workdir, &local)) {
      if (ok)
        g_propagate_error(error, local);
      else
        g_error_free(local);
      ok = FALSE;
    }
  }
  return ok;
}

/* Existing directories, each given once. */
static gboolean check_dirs(const char *const *dirs, GError **error) {
  if (dirs == NULL || dirs[0] == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "no directory to store tensors in");
    return FALSE;
  }
  g_autoptr(GArray) seen = g_array_new(FALSE, FALSE, sizeof(struct stat));
  for (guint i = 0; dirs[i] != NULL; i++) {
    struct stat st;
    if (stat(dirs[i], &st) != 0) {
      int e = errno;
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: %s", dirs[i], g_strerror(e));
      return FALSE;
    }
    if (!S_ISDIR(st.st_mode)) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: not a directory", dirs[i]);
      return FALSE;
    }
    for (guint k = 0; k < seen->len; k++) {
      const struct stat *o = &g_array_index(seen, struct stat, k);
      if (o->st_dev == st.st_dev && o->st_ino == st.st_ino) {
        g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s and %s are the same directory", dirs[k],
                    dirs[i]);
        return FALSE;
      }
    }
    g_array_append_val(seen, st);
  }
  return TRUE;
}

static gboolean check_options(const RokStoreOptions *o, gsize unit, GError **error) {
  if (o->queue_depth == 0 || o->queue_depth > 1024) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "queue depth %u: must be between 1 and 1024",
                o->queue_depth);
    return FALSE;
  }
  if (o->reserve_bytes / unit > G_MAXINT64 / 2) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "reservation of %" G_GUINT64_FORMAT " bytes is too large",
                o->reserve_bytes);
    return FALSE;
  }
  return TRUE;
}

/* The work folder and data file of directory D, with UNITS preallocated. */
static gboolean open_dir(RokStore *s, guint d, const char *dir, guint64 units, GError **error) {
  RokStoreDir *sd = &s->dirs[d];
  sd->workdir = rok_workdir_new(dir, error);
  if (sd->workdir == NULL)
    return FALSE;
  char *path = rok_workdir_file(sd->workdir, "data");
  if (!rok_workdir_create_file(sd->workdir, "data", s->fault, &sd->file, error)) {
    g_free(path);
    return FALSE;
  }
  sd->path = path;
  if (s->unit % sd->file.align != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "%s needs %zu-byte alignment for direct I/O; the staging slot size %zu is not a multiple",
                path, sd->file.align, s->unit);
    return FALSE;
  }
  if (!sd->file.direct)
    add_note(s, g_strdup_printf("O_DIRECT refused in %s: buffered I/O there, so its bandwidth "
                                "includes the page cache",
                                dir));
  sd->extents = storage_extents_new(units);
  return rok_io_file_reserve(&sd->file, path, units * s->unit, error);
}

/* Sweeps stale folders, checks free space, opens every directory. */
static gboolean open_dirs(RokStore *s, const char *const *dirs, guint64 reserve, GError **error) {
  g_autoptr(GPtrArray) swept = g_ptr_array_new_with_free_func(g_free);
  for (guint d = 0; d < s->n_dirs; d++)
    rok_workdir_sweep(dirs[d], swept);
  for (guint i = 0; i < swept->len; i++)
    add_note(s, g_strdup(swept->pdata[i]));

  guint64 total_units = (reserve + s->unit - 1) / s->unit;
  guint64 units = (total_units + s->n_dirs - 1) / s->n_dirs;
  g_autofree guint64 *need = g_new(guint64, s->n_dirs);
  for (guint d = 0; d < s->n_dirs; d++)
    need[d] = units * s->unit;
  if (!rok_space_check(dirs, need, s->n_dirs, error))
    return FALSE;
  for (guint d = 0; d < s->n_dirs; d++)
    if (!open_dir(s, d, dirs[d], units, error))
      return FALSE;
  return TRUE;
}

static gboolean open_backend(RokStore *s, RokIoBackendKind kind, guint depth, GError **error) {
  g_autofree int *fds = g_new(int, s->n_dirs);
  g_autofree gsize *align = g_new(gsize, s->n_dirs);
  for (guint d = 0; d < s->n_dirs; d++) {
    fds[d] = s->dirs[d].file.fd;
    align[d] = s->dirs[d].file.align;
  }
  RokIoBackendConfig config = {
    .kind = kind, .fds = fds, .align = align, .n_files = s->n_dirs, .queue_depth = depth,
    .buffers = rok_staging_iovecs(s->staging), .n_buffers = rok_staging_n_slots(s->staging),
    .fault = s->fault,
  };
  char *note = NULL;
  s->backend = rok_io_backend_new(&config, &note, error);
  if (note != NULL)
    add_note(s, note);
  return s->backend != NULL;
}

RokStore *rok_store_open(const char *const *dirs, RokStaging *staging,
                         const RokStoreOptions *options, GError **error) {
  gsize unit = rok_staging_slot_bytes(staging);
  if (!check_dirs(dirs, error) || !check_options(options, unit, error))
    return NULL;
  g_autoptr(RokStore) s = g_new0(RokStore, 1);
  g_mutex_init(&s->lock);
  g_mutex_init(&s->stats_lock);
  s->notes = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(s->notes, NULL);
  s->staging = staging;
  s->unit = unit;
  s->n_dirs = g_strv_length((char **)dirs);
  s->dirs = g_new0(RokStoreDir, s->n_dirs);
  if (!rok_fault_parse(options->faults, &s->fault, error) ||
      !open_dirs(s, dirs, options->reserve_bytes, error) ||
      !open_backend(s, options->backend, options->queue_depth, error))
    return NULL;
  if (!rok_staging_locked(staging))
    add_note(s, g_strdup_printf("staging memory is not locked (mlock: %s): it may be paged out",
                                g_strerror(rok_staging_lock_error(staging))));
  return g_steal_pointer(&s);
}

const char *const *rok_store_notes(RokStore *s) { return (const char *const *)s->notes->pdata; }
const char *rok_store_backend_name(const RokStore *s) { return rok_io_backend_name(s->backend); }
guint rok_store_n_dirs(const RokStore *s) { return s->n_dirs; }
gboolean rok_store_direct(const RokStore *s, guint d) { return s->dirs[d].file.direct; }
gsize rok_store_align(const RokStore *s, guint d) { return s->dirs[d].file.align; }

const char *rok_store_workdir(const RokStore *s, guint d) {
  g_return_val_if_fail(d < s->n_dirs, NULL);
  return rok_workdir_path(s->dirs[d].workdir);
}
