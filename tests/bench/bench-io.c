/* bench-io: the storage layer's sequential write and read bandwidth on one
 * directory, measured the way fio measures it (tests/bench/bench-io.sh runs
 * both with the same block size, queue depth, O_DIRECT and file size).
 *
 * Each trial opens a fresh store (a new preallocated data file, as fio's
 * fallocate=native gives it), writes one tensor of --size bytes as
 * block-sized chunks with --qd requests in flight, syncs (fdatasync is part
 * of the write time), then reads it back. The staging slots hold random
 * data, so the reads come from written extents. Prints one line per trial
 * and the medians, in bytes per second, as key=value pairs. */
#include <stdio.h>
#include <stdlib.h>

#include "rok/storage.h"
#include "rok/core.h"

typedef struct {
  RokStaging *pool;
  GMutex lock;
  GCond cond;
  guint outstanding;
  int first_res;
  RokStoreTensor *failed;
  guint failed_chunk;
} Pass;

/* What a completion needs: its pass and the slot to give back. */
typedef struct {
  Pass *pass;
  guint slot;
} SlotOp;

static void on_done(RokStoreTensor *t, guint chunk, int res, gpointer data) {
  SlotOp *op = data;
  Pass *p = op->pass;
  rok_staging_release(p->pool, op->slot);
  g_mutex_lock(&p->lock);
  if (res < 0 && p->first_res == 0) {
    p->first_res = res;
    p->failed = t;
    p->failed_chunk = chunk;
  }
  if (--p->outstanding == 0)
    g_cond_signal(&p->cond);
  g_mutex_unlock(&p->lock);
}

/* Moves every chunk of T the way the executor will: take a staging slot
 * (waiting while all are in flight), submit, give the slot back on
 * completion. The pool has queue-depth slots, so that many are in flight. */
static gboolean run_pass(RokStore *store, RokStoreTensor *t, Pass *p, SlotOp *ops, gboolean write,
                         GError **error) {
  p->first_res = 0;
  for (guint c = 0; c < rok_store_tensor_n_chunks(t); c++) {
    int slot = rok_staging_acquire(p->pool, -1, NULL);
    g_assert(slot >= 0);
    g_mutex_lock(&p->lock);
    p->outstanding++;
    g_mutex_unlock(&p->lock);
    (write ? rok_store_write : rok_store_read)(t, c, (guint)slot, on_done, &ops[slot]);
  }
  g_mutex_lock(&p->lock);
  while (p->outstanding > 0)
    g_cond_wait(&p->cond, &p->lock);
  g_mutex_unlock(&p->lock);
  if (p->first_res < 0) {
    rok_store_set_error(p->failed, p->failed_chunk, p->first_res, error);
    return FALSE;
  }
  return !write || rok_store_sync(store, error);
}

typedef struct {
  const char *dir;
  guint64 block, size;
  guint qd, trials;
  RokIoBackendKind backend;
} Options;

static gboolean trial(const Options *o, RokStaging *pool, double *write_bw, double *read_bw,
                      GError **error) {
  const char *dirs[] = { o->dir, NULL };
  RokStoreOptions so;
  rok_store_options_init(&so);
  so.queue_depth = o->qd;
  so.backend = o->backend;
  so.reserve_bytes = o->size;
  g_autoptr(RokStore) store = rok_store_open(dirs, pool, &so, error);
  if (store == NULL)
    return FALSE;
  for (const char *const *note = rok_store_notes(store); *note != NULL; note++)
    fprintf(stderr, "bench-io: note: %s\n", *note);
  g_autoptr(RokStoreTensor) t = rok_store_tensor_new(store, o->size, error);
  if (t == NULL)
    return FALSE;
  Pass p = { .pool = pool };
  g_mutex_init(&p.lock);
  g_cond_init(&p.cond);
  g_autofree SlotOp *ops = g_new(SlotOp, rok_staging_n_slots(pool));
  for (guint s = 0; s < rok_staging_n_slots(pool); s++)
    ops[s] = (SlotOp){ &p, s };
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = run_pass(store, t, &p, ops, TRUE, error);
  gint64 t1 = g_get_monotonic_time();
  ok = ok && run_pass(store, t, &p, ops, FALSE, error);
  gint64 t2 = g_get_monotonic_time();
  g_mutex_clear(&p.lock);
  g_cond_clear(&p.cond);
  *write_bw = (double)o->size / ((double)(t1 - t0) / 1e6);
  *read_bw = (double)o->size / ((double)(t2 - t1) / 1e6);
  if (ok)
    printf("backend=%s direct=%s\n", rok_store_backend_name(store),
           rok_store_direct(store, 0) ? "yes" : "no");
  return ok;
}

static int compare_double(gconstpointer a, gconstpointer b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, guint n) {
  qsort(v, n, sizeof *v, (int (*)(const void *, const void *))compare_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static gboolean parse_args(int argc, char **argv, Options *o, GError **error) {
  g_autofree char *block = NULL, *size = NULL, *backend = NULL;
  int qd = 32, trials = 3;
  GOptionEntry entries[] = {
    { "block", 'b', 0, G_OPTION_ARG_STRING, &block, "request (and stripe) size [1MiB]", "SIZE" },
    { "qd", 'q', 0, G_OPTION_ARG_INT, &qd, "requests in flight [32]", "N" },
    { "size", 's', 0, G_OPTION_ARG_STRING, &size, "bytes written then read per trial [1GiB]", "SIZE" },
    { "trials", 't', 0, G_OPTION_ARG_INT, &trials, "trials [3]", "N" },
    { "backend", 0, 0, G_OPTION_ARG_STRING, &backend, "auto, uring or psync [auto]", "NAME" },
    { NULL },
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("DIR - storage layer bandwidth");
  g_option_context_add_main_entries(ctx, entries, NULL);
  if (!g_option_context_parse(ctx, &argc, &argv, error))
    return FALSE;
  o->block = 1 << 20;
  o->size = 1 << 30;
  if ((block != NULL && !rok_units_parse_size(block, &o->block, error)) ||
      (size != NULL && !rok_units_parse_size(size, &o->size, error)))
    return FALSE;
  o->backend = backend == NULL || g_str_equal(backend, "auto") ? ROK_IO_BACKEND_AUTO
               : g_str_equal(backend, "uring")                 ? ROK_IO_BACKEND_URING
               : g_str_equal(backend, "psync")                 ? ROK_IO_BACKEND_PSYNC
                                                               : (ROK_IO_BACKEND_AUTO - 1);
  if (argc != 2 || qd < 1 || trials < 1 || (int)o->backend < 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "usage: bench-io [--block SIZE] [--qd N] [--size SIZE] [--trials N] "
                "[--backend auto|uring|psync] DIR");
    return FALSE;
  }
  o->dir = argv[1];
  o->qd = (guint)qd;
  o->trials = (guint)trials;
  return TRUE;
}

int main(int argc, char **argv) {
  g_autoptr(GError) error = NULL;
  Options o;
  if (!parse_args(argc, argv, &o, &error)) {
    fprintf(stderr, "bench-io: %s\n", error->message);
    return 2;
  }
  g_autoptr(RokStaging) pool = rok_staging_new(o.block, o.block * o.qd, &error);
  if (pool == NULL) {
    fprintf(stderr, "bench-io: %s\n", error->message);
    return 2;
  }
  g_autoptr(GRand) rand = g_rand_new_with_seed(42);
  for (guint s = 0; s < rok_staging_n_slots(pool); s++) {
    guint32 *words = (guint32 *)rok_staging_slot(pool, s);
    for (gsize i = 0; i < o.block / 4; i++)
      words[i] = g_rand_int(rand);
  }
  g_autofree double *w = g_new(double, o.trials);
  g_autofree double *r = g_new(double, o.trials);
  for (guint i = 0; i < o.trials; i++) {
    if (!trial(&o, pool, &w[i], &r[i], &error)) {
      fprintf(stderr, "bench-io: %s\n", error->message);
      return rok_error_exit_code(error);
    }
    printf("trial=%u write_bw=%.0f read_bw=%.0f\n", i + 1, w[i], r[i]);
  }
  double wmin = w[0], wmax = w[0], rmin = r[0], rmax = r[0];
  for (guint i = 1; i < o.trials; i++) {
    wmin = MIN(wmin, w[i]), wmax = MAX(wmax, w[i]);
    rmin = MIN(rmin, r[i]), rmax = MAX(rmax, r[i]);
  }
  printf("write_bw_median=%.0f write_bw_min=%.0f write_bw_max=%.0f\n", median(w, o.trials), wmin, wmax);
  printf("read_bw_median=%.0f read_bw_min=%.0f read_bw_max=%.0f\n", median(r, o.trials), rmin, rmax);
  return 0;
}
