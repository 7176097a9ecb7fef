/* One disk, through one directory: sequential write and read bandwidth over
 * a grid of block sizes and queue depths, and the latency of small reads.
 *
 * The pattern is the executor's: O_DIRECT requests from pinned, huge-page
 * staging slots (io_uring fixed buffers) into one preallocated data file in
 * a fresh rok-XXXXXX work folder. The file is first laid out with random
 * data (unwritten extents read as zeros without touching the device, and
 * the first write into them converts extents, which the executor's
 * reused file does not pay). Each timed pass then keeps exactly QD
 * requests in flight, each completion issuing the next request, from the
 * start of the file until its end or the pass's time limit: writes are
 * timed to their last completion (through fdatasync where O_DIRECT was
 * refused; see run_pass), and the file's cached pages are dropped
 * (posix_fadvise DONTNEED) before each read. Then small random reads for
 * the latency, and bursts shaped like the executor's SSD legs for what a
 * leg costs beyond the streaming rate (measure_bursts). */
#define _GNU_SOURCE /* posix_fadvise flags, fdatasync */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <gsl/gsl_multifit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "rok/calibrate.h"
#include "rok/core.h"
#include "rok/storage.h"

#define LATENCY_BLOCK 4096
#define MIB ((guint64)1 << 20)
/* Idle time before each burst. The executor's legs come from under a
 * millisecond to tens of milliseconds apart, between the kernels that make
 * their tensors, and a disk left idle may answer late: on the development
 * VM's virtio disk (fio, QD1, O_DIRECT) a lone 256 KiB write took 165 us
 * 1 ms after the last request and 297 us 20 ms after; 1 MiB, 635 and 725
 * us. The bursts that fit the costs come after the short gap, lone ones
 * after the long gap and the deep one too, for the wakes. */
#define BURST_GAP_SHORT_S 1e-3
#define BURST_GAP_LONG_S 20e-3
#define BURST_GAP_DEEP_S 100e-3
/* A burst begun from the last completion of one like it, on the I/O
 * backend's thread, as the executor begins an SSD leg that the end of
 * the one before made ready: on the development VM, 2026-12-07, such read
 * legs of validate-gpt's and the LLaMA-shaped model's offload and tba
 * rows (all those not after 4.5 ms idle or more) came out 1.28x and
 * 1.38x shorter than the leg model fitted to the bursts after 1 ms idle
 * had them, median. */
#define BURST_CHAINED 0.0
/* rok_calib_disk_speed's data file: room for a round of its bursts. */
#define SPEED_FILE_BYTES ((guint64)32 << 20)
#define POOL_BYTES ((guint64)256 << 20)
#define MIN_POOL_BYTES ((guint64)8 << 20)

typedef struct _Pass Pass;

typedef struct {
  RokIoReq req; /* first: the completion hands back this pointer */
  Pass *pass;
  guint index;
} Req;

struct _Pass {
  RokIoBackend *backend;
  RokStaging *pool;
  Req *reqs; /* the queue's requests, qd at most */
  RokIoOp op;
  gsize block;
  guint64 next, end; /* next offset to issue; end of the range */
  guint64 then_end;  /* > end: the range up to it is a pass begun from this one's last completion (run_chained) */
  guint64 issued;
  guint qd;       /* requests in flight */
  double seconds; /* the pass's length; < 0: until END */
  gboolean started;
  gint64 start_us, deadline_us, last_us;
  GMutex lock;
  GCond idle;
  guint in_flight;
  guint64 done_bytes;
  int error; /* the first -errno */
  guint64 error_offset;
};

/* Everything one directory's measurement holds, freed in order. */
typedef struct {
  RokWorkdir *workdir;
  char *path;
  RokIoFile file;
  RokStaging *pool;
  RokIoBackend *backend;
  Req *reqs;
  Pass pass;
  RokCalibBusy *busy; /* NULL: the processors left idle */
} Run;

/* Aims REQ at the next block. Writes rotate over every slot, so the disk
 * sees the whole pool's random data; each read in flight has a slot of its
 * own (unless the pool, capped at POOL_BYTES, has fewer slots than the
 * queue is deep: then reads share, which costs nothing, as the data read
 * is not looked at). */
static void prepare(Pass *p, Req *q) {
  guint n_slots = rok_staging_n_slots(p->pool);
  guint slot = p->op == ROK_IO_WRITE ? (guint)(p->issued % n_slots) : q->index % n_slots;
  q->req = (RokIoReq){.op = p->op, .file = 0, .offset = p->next, .buf = rok_staging_slot(p->pool, slot),
                      .len = (gsize)MIN((guint64)p->block, p->end - p->next),
                      .buf_index = rok_io_backend_fixed_buffers(p->backend) ? (int)slot : -1,
                      .done = q->req.done};
  p->next += q->req.len;
  p->issued++;
}

/* Starts P's clock and aims its first requests, up to its queue depth;
 * how many, which the caller submits once P's lock is let go. */
static guint begin_pass(Pass *p) {
  p->start_us = p->last_us = g_get_monotonic_time();
  p->deadline_us = p->seconds < 0 ? G_MAXINT64 : p->start_us + (gint64)(p->seconds * 1e6);
  guint n = 0;
  for (; n < p->qd && p->next < p->end; n++)
    prepare(p, &p->reqs[n]);
  p->in_flight = n;
  return n;
}

/* A request's completion, on the backend's thread: the next block issued
 * in its place; after a pass's last, the pass chained to it begun
 * (run_chained), there and then, as the executor issues an SSD leg from
 * the completion of the one before. */
static void on_done(RokIoReq *r, int res) {
  Req *q = (Req *)r;
  Pass *p = q->pass;
  gboolean again = FALSE;
  g_mutex_lock(&p->lock);
  /* As the backend saw it end, as the executor times its legs: on one
   * clock with g_get_monotonic_time (CLOCK_MONOTONIC) */
  gint64 t = r->done_ns / 1000;
  if (res < 0 && p->error == 0) {
    p->error = res;
    p->error_offset = r->offset;
  } else if (res == 0) {
    p->done_bytes += r->len;
    p->last_us = MAX(p->last_us, t);
  }
  guint chained = 0;
  if (p->error == 0 && p->next < p->end && t < p->deadline_us) {
    prepare(p, q);
    again = TRUE;
  } else if (--p->in_flight == 0) {
    if (p->error == 0 && p->then_end > p->end) {
      p->next = p->end;
      p->end = p->then_end;
      p->then_end = 0;
      chained = begin_pass(p);
    }
    if (chained == 0)
      g_cond_signal(&p->idle);
  }
  g_mutex_unlock(&p->lock);
  if (again)
    rok_io_backend_submit(p->backend, r);
  for (guint i = 0; i < chained; i++)
    rok_io_backend_submit(p->backend, &p->reqs[i].req);
}

/* A request of OP at OFFSET that failed with -errno RES. */
static gboolean io_error(const Run *run, RokIoOp op, int res, guint64 offset, GError **error) {
  if (res == -ECANCELED) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_CANCELLED, "calibration interrupted");
    return FALSE;
  }
  g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "%s %s at offset %" G_GUINT64_FORMAT ": %s",
              op == ROK_IO_WRITE ? "writing" : "reading", run->path, offset, g_strerror(-res));
  return FALSE;
}

static gboolean pass_error(const Run *run, GError **error) {
  return io_error(run, run->pass.op, run->pass.error, run->pass.error_offset, error);
}

/* Issues the pass's first requests, up to its queue depth, and starts its
 * clock; run_io runs it on the backend's own thread for writes. */
static void start_pass(gpointer data) {
  Run *run = data;
  Pass *p = &run->pass;
  g_mutex_lock(&p->lock);
  guint n = begin_pass(p);
  p->started = TRUE;
  if (n == 0)
    g_cond_signal(&p->idle);
  g_mutex_unlock(&p->lock);
  for (guint i = 0; i < n; i++)
    rok_io_backend_submit(run->backend, &run->reqs[i].req);
}

/* Moves [FROM, TO) with QD requests in flight, stopping after SECONDS (< 0:
 * never), then from its last completion [TO, THEN_TO) the same way, begun
 * there on the backend's thread (on_done; THEN_TO = TO: nothing more); the
 * pass's start_us and last_us say when the last range began and when its
 * last request completed. A pass begins on the backend's own thread where
 * it has one, as the executor's staged SSD legs do (runner-storage.c:
 * writes since 2026-12-02, reads since 12-04), so that a burst's time
 * holds no hand-off those legs do not pay (30-130 us on the development
 * VM; with reads still handed over, a calibration fitted a read leg's
 * fixed part 131 us against a write's 78, and the LLaMA-shaped offload
 * row's 128-512 KiB reads, one right after another, came out 1.3-1.7x
 * shorter than predicted on 2026-12-07; the disk's own drift moves it as
 * much: 75-144 us in nine calibrations after). */
static gboolean run_chained(Run *run, RokIoOp op, gsize block, guint qd, guint64 from, guint64 to,
                            guint64 then_to, double seconds, GError **error) {
  Pass *p = &run->pass;
  g_mutex_lock(&p->lock);
  p->op = op;
  p->block = block;
  p->qd = qd;
  p->seconds = seconds;
  p->next = from;
  p->end = to;
  p->then_end = then_to;
  p->done_bytes = 0;
  p->error = 0;
  p->started = FALSE;
  g_mutex_unlock(&p->lock);
  if (!rok_io_backend_call(run->backend, start_pass, run))
    start_pass(run);
  g_mutex_lock(&p->lock);
  while (!p->started || p->in_flight > 0)
    g_cond_wait(&p->idle, &p->lock);
  g_mutex_unlock(&p->lock);
  return p->error == 0 || pass_error(run, error);
}

static gboolean run_io(Run *run, RokIoOp op, gsize block, guint qd, guint64 from, guint64 to, double seconds,
                       GError **error) {
  return run_chained(run, op, block, qd, from, to, to, seconds, error);
}

/* run_io, timed: *SECONDS_TAKEN and *BYTES say what it did. A write is
 * timed to its last completion where O_DIRECT took it, as the executor's
 * legs are (it never syncs its scratch file; through fdatasync the
 * development VM's virtio disk wrote 2.43 GB/s against fio's 3.23 without,
 * and the bursts' 3.1), and through fdatasync where O_DIRECT was refused
 * (the completions then only say the page cache took it). */
static gboolean run_pass(Run *run, RokIoOp op, gsize block, guint qd, guint64 from, guint64 to, double seconds,
                         double *taken, guint64 *bytes, GError **error) {
  Pass *p = &run->pass;
  if (!run_io(run, op, block, qd, from, to, seconds, error))
    return FALSE;
  gint64 end = p->last_us;
  if (op == ROK_IO_WRITE && !run->file.direct) {
    if (fdatasync(run->file.fd) != 0) {
      int e = errno;
      g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "fdatasync %s: %s", run->path, g_strerror(e));
      return FALSE;
    }
    end = g_get_monotonic_time();
  }
  *taken = (double)MAX(end - p->start_us, 1) / 1e6;
  *bytes = p->done_bytes;
  return TRUE;
}

/* Drops the file's pages from the page cache, so that a read comes from the
 * disk even where O_DIRECT was refused (no root needed, unlike drop_caches). */
static void drop_cache(const Run *run) {
  posix_fadvise(run->file.fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* Random bytes in every slot: data a disk cannot compress or skip. */
static void fill_slot(RokStaging *pool, guint slot, gsize bytes, guint64 *state) {
  guint64 *words = (guint64 *)rok_staging_slot(pool, slot);
  for (gsize i = 0; i < bytes / 8; i++) {
    guint64 z = (*state += 0x9e3779b97f4a7c15u); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    words[i] = z ^ (z >> 31);
  }
}

static void fill_random(RokStaging *pool) {
  guint64 state = 0x9e3779b97f4a7c15u;
  for (guint s = 0; s < rok_staging_n_slots(pool); s++)
    fill_slot(pool, s, rok_staging_slot_bytes(pool), &state);
}

static guint64 largest_block(const RokCalibOptions *o) {
  guint64 b = LATENCY_BLOCK;
  for (guint i = 0; i < o->n_blocks; i++)
    b = MAX(b, o->blocks[i]);
  return b;
}

static guint deepest_queue(const RokCalibOptions *o) {
  guint qd = 1;
  for (guint i = 0; i < o->n_queue_depths; i++)
    qd = MAX(qd, o->queue_depths[i]);
  return qd;
}

/* Frees everything and removes the work folder; FALSE (with ERROR, unless
 * one is set already) when the folder could not be removed entirely. */
static gboolean run_clear(Run *run, RokCalibCancel *cancel, GError **error) {
  rok_calib_cancel_set_backend(cancel, NULL);
  rok_io_backend_free(run->backend);
  g_free(run->reqs);
  if (run->path != NULL)
    rok_io_file_close(&run->file);
  g_free(run->path);
  GError *local = NULL;
  gboolean removed = run->workdir == NULL || rok_workdir_remove(run->workdir, &local);
  if (!removed) {
    if (error != NULL && *error == NULL)
      g_propagate_error(error, local);
    else
      g_clear_error(&local);
  }
  rok_workdir_free(run->workdir);
  rok_staging_free(run->pool);
  g_mutex_clear(&run->pass.lock);
  g_cond_clear(&run->pass.idle);
  return removed;
}

/* Sweeps stale folders, checks space, makes the work folder, its data file
 * (preallocated), the staging pool and the backend. */
static gboolean run_open(Run *run, const char *dir, const RokCalibOptions *o, RokCalibCancel *cancel,
                         RokCalibDisk *disk, GPtrArray *notes, GError **error) {
  rok_workdir_sweep(dir, notes);
  const char *dirs[] = {dir, NULL};
  if (!rok_space_check(dirs, &o->file_bytes, 1, error) || (run->workdir = rok_workdir_new(dir, error)) == NULL)
    return FALSE;
  run->path = rok_workdir_file(run->workdir, "data");
  if (!rok_workdir_create_file(run->workdir, "data", NULL, &run->file, error)) {
    g_clear_pointer(&run->path, g_free);
    return FALSE;
  }
  disk->direct = run->file.direct;
  if (!run->file.direct)
    g_ptr_array_add(notes, g_strdup_printf("O_DIRECT refused in %s: buffered I/O there, timed through fdatasync "
                                           "and with the cache dropped, but not what the executor would see",
                                           dir));
  if (LATENCY_BLOCK % run->file.align != 0 || largest_block(o) % run->file.align != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s needs %zu-byte alignment for direct I/O", run->path,
                run->file.align);
    return FALSE;
  }
  if (!rok_io_file_reserve(&run->file, run->path, o->file_bytes, error))
    return FALSE;
  guint64 slot = MAX(largest_block(o), MIB);
  guint qd = deepest_queue(o);
  /* At least a few huge pages' worth: the pool is only backed by
   * (transparent) 2 MiB pages when it spans whole ones, and a request in
   * 4 KiB pages is a scatter list of many segments (on this virtio disk,
   * 128 KiB reads at QD 8 ran at half fio's speed from 1 MiB of 4 KiB pages). */
  guint n_slots = (guint)CLAMP(MAX(slot * qd, MIN_POOL_BYTES) / slot, 1, MAX(POOL_BYTES / slot, 1));
  if ((run->pool = rok_staging_new(slot, slot * n_slots, error)) == NULL)
    return FALSE;
  fill_random(run->pool);
  RokIoBackendConfig config = {.kind = ROK_IO_BACKEND_AUTO, .fds = &run->file.fd, .align = &run->file.align,
                               .n_files = 1, .queue_depth = qd, .buffers = rok_staging_iovecs(run->pool),
                               .n_buffers = n_slots};
  g_autofree char *note = NULL;
  if ((run->backend = rok_io_backend_new(&config, &note, error)) == NULL)
    return FALSE;
  if (note != NULL)
    g_ptr_array_add(notes, g_strdup_printf("%s: %s", dir, note));
  rok_calib_cancel_set_backend(cancel, run->backend);
  disk->backend = g_strdup(rok_io_backend_name(run->backend));
  run->reqs = g_new0(Req, qd);
  for (guint i = 0; i < qd; i++)
    run->reqs[i] = (Req){.req.done = on_done, .pass = &run->pass, .index = i};
  run->pass.reqs = run->reqs;
  run->pass.backend = run->backend;
  run->pass.pool = run->pool;
  return TRUE;
}

/* One grid point: TRIALS times an overwrite then a read of the file. */
static gboolean measure_point(Run *run, const RokCalibOptions *o, RokCalibCancel *cancel, RokCalibDiskPoint *pt,
                              GError **error) {
  g_autofree double *w = g_new(double, o->trials), *r = g_new(double, o->trials);
  for (guint t = 0; t < o->trials; t++) {
    double s = 0;
    guint64 bytes = 0;
    if (rok_calib_check_cancelled(cancel, error) ||
        !run_pass(run, ROK_IO_WRITE, pt->block, pt->queue_depth, 0, o->file_bytes, o->pass_seconds, &s, &bytes,
                  error))
      return FALSE;
    w[t] = (double)bytes / s;
    drop_cache(run);
    if (!run_pass(run, ROK_IO_READ, pt->block, pt->queue_depth, 0, o->file_bytes, o->pass_seconds, &s, &bytes,
                  error))
      return FALSE;
    r[t] = (double)bytes / s;
  }
  pt->write = rok_calib_stat(w, o->trials);
  pt->read = rok_calib_stat(r, o->trials);
  return TRUE;
}

static gboolean measure_grid(Run *run, const char *dir, const RokCalibOptions *o, RokCalibCancel *cancel,
                             RokCalibDisk *disk, GError **error) {
  for (guint b = 0; b < o->n_blocks; b++)
    for (guint q = 0; q < o->n_queue_depths; q++) {
      RokCalibDiskPoint pt = {.block = o->blocks[b], .queue_depth = o->queue_depths[q]};
      g_autofree char *size = rok_units_format_size(pt.block);
      rok_calib_progress(o, "disk %s: %s blocks, queue depth %u", dir, size, pt.queue_depth);
      if (!measure_point(run, o, cancel, &pt, error))
        return FALSE;
      g_array_append_val(disk->points, pt);
      const RokCalibDiskPoint *bw = &g_array_index(disk->points, RokCalibDiskPoint, disk->best_write);
      const RokCalibDiskPoint *br = &g_array_index(disk->points, RokCalibDiskPoint, disk->best_read);
      if (pt.write.median > bw->write.median)
        disk->best_write = disk->points->len - 1;
      if (pt.read.median > br->read.median)
        disk->best_read = disk->points->len - 1;
    }
  return TRUE;
}

/* QD1 4 KiB requests at random places in the file: what one small
 * request costs, end to end (the sequential passes hide it behind the
 * queue). Reads then writes (a disk, or the host's cache behind a virtual
 * one, may take a write sooner than it answers a read: the development
 * VM's virtio disk 45 against 42 us for 4 KiB, 62 against 87 for 64 KiB,
 * at fio's QD1), each timed to its completion as an SSD leg's requests
 * are: a write without fdatasync (4 KiB: 200 us with it here). */
static gboolean measure_latency(Run *run, const RokCalibOptions *o, RokCalibCancel *cancel, RokCalibDisk *disk,
                                GError **error) {
  guint max = o->quick ? 200 : 1000;
  g_autofree double *s = g_new(double, max);
  guint64 blocks = o->file_bytes / LATENCY_BLOCK;
  for (guint d = 0; d < 2; d++) {
    RokIoOp op = d == 0 ? ROK_IO_READ : ROK_IO_WRITE;
    g_autoptr(GRand) rand = g_rand_new_with_seed(1);
    drop_cache(run);
    guint n = 0;
    gint64 deadline = g_get_monotonic_time() + (gint64)(o->pass_seconds * 1e6);
    for (; n < max && (n < 10 || g_get_monotonic_time() < deadline); n++) {
      guint64 offset = (guint64)g_rand_double_range(rand, 0, (double)blocks) * LATENCY_BLOCK;
      offset = MIN(offset, (blocks - 1) * LATENCY_BLOCK);
      if (rok_calib_check_cancelled(cancel, error) ||
          !run_io(run, op, LATENCY_BLOCK, 1, offset, offset + LATENCY_BLOCK, -1, error))
        return FALSE;
      s[n] = (double)MAX(run->pass.last_us - run->pass.start_us, 1) / 1e6;
    }
    *(op == ROK_IO_READ ? &disk->latency : &disk->write_latency) = rok_calib_stat(s, n);
  }
  return TRUE;
}

/* One burst like the executor's SSD legs: B->requests of B->request_bytes
 * (at most its staging slot, the simulator's request) submitted together
 * after B->gap_s idle, timed to the last completion (*SECONDS) with the
 * processor time it took (*CPU), at the next place in the file as
 * successive tensors are. A write's requests are filled anew just before
 * it, as the executor's d2h copy fills them (the request's bytes, not the
 * whole slot): on the development VM, 1 MiB from slots written just
 * before took 0.53 ms against 0.33 ms from slots written long before. A
 * chained burst (gap_s BURST_CHAINED) is timed from the last completion
 * of one like it, itself after the short gap (run_chained). */
static gboolean time_burst(Run *run, guint rep, RokCalibCancel *cancel, RokIoOp op, const RokCalibBurst *b,
                           guint64 *offset, guint64 file_bytes, double *seconds, double *cpu, GError **error) {
  guint n = b->requests;
  gboolean chained = b->gap_s == BURST_CHAINED;
  guint64 span = (guint64)n * b->request_bytes, end = *offset + (chained ? 2 : 1) * span;
  if (end > file_bytes) {
    *offset = 0;
    end = (chained ? 2 : 1) * span;
  }
  g_usleep((gulong)llround((chained ? BURST_GAP_SHORT_S : b->gap_s) * 1e6));
  for (guint k = 0; op == ROK_IO_WRITE && k < (chained ? 2 * n : n); k++) {
    guint64 state = (guint64)rep << 32 | k;
    fill_slot(run->pool, (guint)((run->pass.issued + k) % rok_staging_n_slots(run->pool)), b->request_bytes, &state);
  }
  if (rok_calib_check_cancelled(cancel, error))
    return FALSE;
  double cpu0 = rok_host_own_cpu_seconds();
  if (!run_chained(run, op, b->request_bytes, n, *offset, *offset + span, end, -1, error))
    return FALSE;
  *cpu = MAX(rok_host_own_cpu_seconds() - cpu0, 0);
  *seconds = (double)MAX(run->pass.last_us - run->pass.start_us, 1) / 1e6;
  *offset = end;
  return TRUE;
}

/* Every burst of DISK in direction OP, REPS[i] times each, in rounds: one
 * of each burst per round, so that a spell of the machine's (a virtual
 * disk's host busy for a second) falls on every size alike rather than on
 * the few timed then, which would tilt the fit of a leg's fixed part
 * against its rate (on the development VM, 2026-12-06, with each size's
 * bursts back to back: quick calibrations minutes apart fitted a write
 * leg 22-104 us and 4.6-8.5 GB/s). Each burst's figure is the median of
 * its times. */
static gboolean time_bursts(Run *run, const guint *reps, RokCalibCancel *cancel, RokIoOp op, RokCalibDisk *disk,
                            guint64 file_bytes, GError **error) {
  guint most = 0;
  for (guint i = 0; i < disk->n_bursts; i++)
    most = MAX(most, reps[i]);
  g_autofree double *s = g_new(double, (gsize)disk->n_bursts * most);
  g_autofree double *c = g_new(double, (gsize)disk->n_bursts * most);
  guint64 offset = 0;
  for (guint rep = 0; rep < most; rep++)
    for (guint i = 0; i < disk->n_bursts; i++)
      if (rep < reps[i] && !time_burst(run, rep, cancel, op, &disk->bursts[i], &offset, file_bytes,
                                       &s[(gsize)i * most + rep], &c[(gsize)i * most + rep], error))
        return FALSE;
  for (guint i = 0; i < disk->n_bursts; i++) {
    RokCalibBurst *b = &disk->bursts[i];
    *(op == ROK_IO_WRITE ? &b->write : &b->read) = rok_calib_stat(&s[(gsize)i * most], reps[i]);
    *(op == ROK_IO_WRITE ? &b->write_cpu : &b->read_cpu) = rok_calib_stat(&c[(gsize)i * most], reps[i]);
  }
  return TRUE;
}

/* A leg joined by another: JOIN_FIRST requests of 1 MiB submitted together
 * after the short gap, then, a quarter of the way through (a quarter of
 * the median 4 x 1 MiB burst), one request of JOIN_SECOND_BYTES; each
 * request's completion time. */
#define JOIN_FIRST 4
#define JOIN_SECOND_BYTES (MIB / 16)
#define JOIN_TOGETHER 0.6 /* join_ratio at which the second ended with the first */

typedef struct _Join Join;

typedef struct {
  RokIoReq req; /* first: the completion hands back this pointer */
  Join *join;
  gint64 done_us;
  int res;
} JoinReq;

/* A joined pair in flight: the first leg's requests, then the second. */
struct _Join {
  GMutex lock;
  GCond idle;
  guint pending;
  JoinReq q[JOIN_FIRST + 1];
};

static void join_done(RokIoReq *r, int res) {
  JoinReq *q = (JoinReq *)r;
  Join *j = q->join;
  g_mutex_lock(&j->lock);
  q->done_us = r->done_ns / 1000;
  q->res = res;
  if (--j->pending == 0)
    g_cond_signal(&j->idle);
  g_mutex_unlock(&j->lock);
}

/* One joined pair at OFFSET: the second request's time from its
 * submission to its completion over the first leg's from then to its
 * last completion (about 1 where the disk completes what was queued
 * together at one moment; a drive serving each request as it comes:
 * about the second's own time over the rest of the first's). */
static gboolean join_once(Run *run, RokIoOp op, guint64 offset, gulong delay_us, double *ratio, GError **error) {
  Join j = {.pending = JOIN_FIRST + 1};
  g_mutex_init(&j.lock);
  g_cond_init(&j.idle);
  gboolean fixed = rok_io_backend_fixed_buffers(run->backend);
  for (guint k = 0; k <= JOIN_FIRST; k++) {
    guint slot = (guint)((run->pass.issued + k) % rok_staging_n_slots(run->pool));
    gsize len = k < JOIN_FIRST ? MIB : JOIN_SECOND_BYTES;
    /* the second lies past a gap, so that the block layer cannot merge it */
    guint64 at = k < JOIN_FIRST ? offset + k * MIB : offset + (JOIN_FIRST + 4) * MIB;
    if (op == ROK_IO_WRITE) {
      guint64 state = offset ^ k;
      fill_slot(run->pool, slot, len, &state);
    }
    j.q[k] = (JoinReq){.req = {.op = op, .file = 0, .offset = at, .buf = rok_staging_slot(run->pool, slot),
                               .len = len, .buf_index = fixed ? (int)slot : -1, .done = join_done},
                       .join = &j};
  }
  run->pass.issued += JOIN_FIRST + 1;
  for (guint k = 0; k < JOIN_FIRST; k++)
    rok_io_backend_submit(run->backend, &j.q[k].req);
  g_usleep(delay_us);
  gint64 second_us = g_get_monotonic_time();
  rok_io_backend_submit(run->backend, &j.q[JOIN_FIRST].req);
  g_mutex_lock(&j.lock);
  while (j.pending > 0)
    g_cond_wait(&j.idle, &j.lock);
  g_mutex_unlock(&j.lock);
  g_mutex_clear(&j.lock);
  g_cond_clear(&j.idle);
  gint64 first_end = 0;
  for (guint k = 0; k <= JOIN_FIRST; k++)
    if (j.q[k].res < 0)
      return io_error(run, op, j.q[k].res, j.q[k].req.offset, error);
  for (guint k = 0; k < JOIN_FIRST; k++)
    first_end = MAX(first_end, j.q[k].done_us);
  *ratio = (double)MAX(j.q[JOIN_FIRST].done_us - second_us, 0) / (double)MAX(first_end - second_us, 1);
  return TRUE;
}

/* Whether the disk completes together what was queued together (the
 * simulator's nvme.completes_together): REPS joined pairs in each
 * direction after the short gap, at successive places in the file; the
 * median ratio of each direction (join_once). */
static gboolean measure_joins(Run *run, const RokCalibOptions *o, guint reps, RokCalibCancel *cancel,
                              RokCalibDisk *disk, GError **error) {
  guint64 span = (JOIN_FIRST + 5) * MIB;
  if (span > o->file_bytes || deepest_queue(o) < JOIN_FIRST + 1)
    return TRUE; /* too shallow a queue: the second would wait for a place in it, whatever the disk */
  g_autofree double *r = g_new(double, reps);
  for (guint d = 0; d < 2; d++) {
    RokIoOp op = d == 0 ? ROK_IO_WRITE : ROK_IO_READ;
    double first = 0; /* the 4 x 1 MiB burst's median */
    for (guint i = 0; i < disk->n_bursts; i++)
      if (disk->bursts[i].requests == JOIN_FIRST && disk->bursts[i].request_bytes == MIB &&
          disk->bursts[i].gap_s == BURST_GAP_SHORT_S)
        first = (op == ROK_IO_WRITE ? disk->bursts[i].write : disk->bursts[i].read).median;
    gulong delay_us = first > 0 ? (gulong)llround(first * 1e6 / 4) : 250;
    guint64 offset = 0;
    drop_cache(run);
    for (guint i = 0; i < reps; i++) {
      if (offset + span > o->file_bytes)
        offset = 0;
      g_usleep((gulong)llround(BURST_GAP_SHORT_S * 1e6));
      if (rok_calib_check_cancelled(cancel, error) || !join_once(run, op, offset, delay_us, &r[i], error))
        return FALSE;
      offset += span;
    }
    disk->join_ratio[d] = rok_calib_stat(r, reps);
  }
  disk->completes_together = MIN(disk->join_ratio[0].median, disk->join_ratio[1].median) >= JOIN_TOGETHER;
  return TRUE;
}

/* The shortest idle gap longer than AFTER that D's bursts came after
 * (INFINITY: none); gap_after(d, 0), the shortest, is the fits'. */
static double gap_after(const RokCalibDisk *d, double after) {
  double gap = INFINITY;
  for (guint i = 0; i < d->n_bursts; i++)
    if (d->bursts[i].gap_s > after)
      gap = MIN(gap, d->bursts[i].gap_s);
  return gap;
}

#define FIT_MAX_COLUMNS 5

/* Weighted least squares of Y on the columns of X (N rows of P) that KEEP
 * selects; FALSE when a coefficient comes out negative or the columns
 * cannot be told apart. C gets P coefficients, 0 for those left out. */
static gboolean fit_subset(const double *x, guint p, const double *y, const double *wt, gsize n, guint keep,
                           double *c, double *chisq) {
  guint k = 0, cols[FIT_MAX_COLUMNS];
  for (guint j = 0; j < p; j++)
    if (keep & (1u << j))
      cols[k++] = j;
  if (k == 0 || n < k)
    return FALSE;
  gsl_matrix *m = gsl_matrix_alloc(n, k), *cov = gsl_matrix_alloc(k, k);
  gsl_vector *vy = gsl_vector_alloc(n), *vw = gsl_vector_alloc(n), *vc = gsl_vector_alloc(k);
  gsl_multifit_linear_workspace *work = gsl_multifit_linear_alloc(n, k);
  for (gsize i = 0; i < n; i++) {
    for (guint j = 0; j < k; j++)
      gsl_matrix_set(m, i, j, x[p * i + cols[j]]);
    gsl_vector_set(vy, i, y[i]);
    gsl_vector_set(vw, i, wt[i]);
  }
  size_t rank = 0;
  gboolean ok = gsl_multifit_wlinear_tsvd(m, vw, vy, 1e-9, vc, cov, chisq, &rank, work) == 0 && rank == k;
  for (guint j = 0; j < p; j++)
    c[j] = 0;
  for (guint j = 0; ok && j < k; j++)
    ok = (c[cols[j]] = gsl_vector_get(vc, j)) >= 0;
  gsl_multifit_linear_free(work);
  gsl_vector_free(vc);
  gsl_vector_free(vw);
  gsl_vector_free(vy);
  gsl_matrix_free(cov);
  gsl_matrix_free(m);
  return ok;
}

/* Weighted least squares with every coefficient at least 0: of the
 * subsets of the P columns that fit with none negative, the one nearest
 * the points, the first of equals (fewer and earlier columns). C gets P
 * coefficients; all 0 where no subset fits. */
static void fit_nonnegative(const double *x, guint p, const double *y, const double *wt, gsize n, double *c) {
  g_assert(p <= FIT_MAX_COLUMNS);
  double best = INFINITY, trial[FIT_MAX_COLUMNS], chisq = 0;
  for (guint j = 0; j < p; j++)
    c[j] = 0;
  for (guint keep = 1; keep < (1u << p); keep++)
    if (fit_subset(x, p, y, wt, n, keep, trial, &chisq) && chisq < best * (1 - 1e-9) - 1e-18) {
      best = chisq;
      memcpy(c, trial, p * sizeof *c);
    }
}

const RokCalibDiskPoint *rok_calib_disk_rate_point(const RokCalibDisk *d, gboolean write) {
  if (d->points == NULL || d->points->len == 0)
    return NULL;
  const RokCalibDiskPoint *best = NULL;
  for (guint i = 0; i < d->points->len; i++) {
    const RokCalibDiskPoint *p = &g_array_index(d->points, RokCalibDiskPoint, i);
    if (p->block == ROK_HW_NVME_REQUEST_BYTES &&
        (best == NULL || (write ? p->write.median > best->write.median : p->read.median > best->read.median)))
      best = p;
  }
  return best != NULL ? best
                      : &g_array_index(d->points, RokCalibDiskPoint, write ? d->best_write : d->best_read);
}

double rok_calib_disk_leg_ceiling(const RokCalibDisk *d, gboolean write) {
  if (d->points == NULL || d->points->len == 0)
    return 0;
  const RokCalibDiskPoint *p = rok_calib_disk_rate_point(d, write);
  double ceiling = write ? p->write.median : p->read.median, shortest = gap_after(d, 0), largest = 0, t = 0;
  for (guint i = 0; i < d->n_bursts; i++) {
    const RokCalibBurst *b = &d->bursts[i];
    double bytes = (double)b->requests * (double)b->request_bytes;
    if (b->gap_s == shortest && bytes > largest) {
      largest = bytes;
      t = (write ? b->write : b->read).median;
    }
  }
  return t > 0 ? MAX(ceiling, largest / t) : ceiling;
}

gboolean rok_calib_disk_fit_legs(const RokCalibDisk *d, RokCalibLegFit *fit) {
  *fit = (RokCalibLegFit){0};
  if (d->n_bursts == 0 || d->points == NULL || d->points->len == 0)
    return FALSE;
  const double rate[2] = {rok_calib_disk_leg_ceiling(d, TRUE), rok_calib_disk_leg_ceiling(d, FALSE)};
  if (!(rate[0] > 0 && rate[1] > 0))
    return FALSE;
  /* What each burst took beyond streaming at its direction's ceiling
   * is fixed (the direction's) + N request + B per_mib (the direction's):
   * the columns below, in that order, writes first. */
  double x[5 * 2 * ROK_CALIB_MAX_BURSTS], y[2 * ROK_CALIB_MAX_BURSTS], wt[G_N_ELEMENTS(y)];
  double shortest = gap_after(d, 0);
  gsize n = 0;
  for (guint k = 0; k < 2; k++)
    for (guint i = 0; i < d->n_bursts; i++) {
      const RokCalibBurst *b = &d->bursts[i];
      double t = (k == 0 ? b->write : b->read).median;
      if (b->gap_s != shortest || !(t > 0))
        continue;
      double bytes = (double)b->requests * (double)b->request_bytes, *row = &x[5 * n];
      row[0] = k == 0;
      row[1] = k == 1;
      row[2] = b->requests;
      row[3] = k == 0 ? bytes / MIB : 0;
      row[4] = k == 1 ? bytes / MIB : 0;
      y[n] = t - bytes / rate[k];
      wt[n++] = 1 / t;
    }
  if (n == 0)
    return FALSE;
  double c[5];
  fit_nonnegative(x, 5, y, wt, n, c);
  *fit = (RokCalibLegFit){.fitted = TRUE, .fixed = {c[0], c[1]}, .request = c[2]};
  for (guint k = 0; k < 2; k++)
    fit->rate[k] = c[3 + k] > 0 ? 1 / (1 / rate[k] + c[3 + k] / MIB) : rate[k];
  return TRUE;
}

/* What a lone request took more after GAP (or chained, BURST_CHAINED)
 * than one of the same size after SHORTEST, the median over the sizes
 * timed after both, writes and reads into MORE (negative: less); FALSE
 * where no size was. */
static gboolean wake_after_gap(const RokCalibDisk *d, double shortest, double gap, double more[2]) {
  double m[2][ROK_CALIB_MAX_BURSTS];
  gsize n = 0;
  for (guint i = 0; i < d->n_bursts; i++)
    for (guint j = 0; j < d->n_bursts; j++) {
      const RokCalibBurst *a = &d->bursts[i], *b = &d->bursts[j];
      if (a->requests == 1 && b->requests == 1 && a->gap_s == shortest && b->gap_s == gap &&
          a->request_bytes == b->request_bytes) {
        m[0][n] = b->write.median - a->write.median;
        m[1][n++] = b->read.median - a->read.median;
      }
    }
  for (guint k = 0; k < 2 && n > 0; k++) {
    gsl_sort(m[k], 1, n);
    more[k] = gsl_stats_median_from_sorted_data(m[k], 1, n);
  }
  return n > 0;
}

gboolean rok_calib_disk_fit_wakes(const RokCalibDisk *d, RokCalibWake *wakes, guint *n) {
  *n = 0;
  double shortest = gap_after(d, 0), previous = shortest, gap, more[2];
  while (*n < ROK_CALIB_WAKES && isfinite(gap = gap_after(d, previous))) {
    if (wake_after_gap(d, shortest, gap, more)) {
      /* A deeper sleep wakes no sooner than a shallower one. */
      const RokCalibWake *shallower = *n > 0 ? &wakes[*n - 1] : NULL;
      wakes[*n] = (RokCalibWake){.after = sqrt(previous * gap),
                                 .write = MAX(more[0], shallower ? shallower->write : 0),
                                 .read = MAX(more[1], shallower ? shallower->read : 0)};
      (*n)++;
    }
    previous = gap;
  }
  return *n > 0;
}

gboolean rok_calib_disk_fit_warm(const RokCalibDisk *d, double warm[2]) {
  double more[2] = {0, 0}; /* a chained burst's "wake": negative where it is quicker */
  gboolean timed = wake_after_gap(d, gap_after(d, 0), BURST_CHAINED, more);
  for (guint k = 0; k < 2; k++)
    warm[k] = timed ? MAX(-more[k], 0) : 0;
  return timed;
}

gboolean rok_calib_disk_fit_cpu(const RokCalibDisk *d, double *request, double *leg) {
  *request = *leg = 0;
  if (d->n_bursts == 0)
    return FALSE;
  /* Plain least squares: the processor time is a small sum of thread
   * wake-ups and system calls, as noisy for one request as for sixteen. */
  double x[2 * 2 * ROK_CALIB_MAX_BURSTS], y[2 * ROK_CALIB_MAX_BURSTS], wt[G_N_ELEMENTS(y)];
  double shortest = gap_after(d, 0);
  gsize n = 0;
  for (guint k = 0; k < 2; k++)
    for (guint i = 0; i < d->n_bursts; i++) {
      const RokCalibBurst *b = &d->bursts[i];
      if (b->gap_s != shortest)
        continue;
      x[2 * n] = 1;
      x[2 * n + 1] = b->requests;
      y[n] = (k == 0 ? b->write_cpu : b->read_cpu).median;
      wt[n++] = 1;
    }
  double c[2];
  fit_nonnegative(x, 2, y, wt, n, c);
  *leg = c[0], *request = c[1];
  return TRUE;
}

/* time_burst's fill round for the bursts timed again: past any first pass's. */
#define AGAIN_FILL (1u << 20)

/* The bursts after the short gap timed again once everything else is,
 * REPS rounds of one of each per direction, each round's time over the
 * sum of the same bursts' first medians (disk->again): this virtio disk's
 * read legs were fitted at 77-144 us and 1.78-2.39 GB/s by nine
 * calibrations over three hours (the development VM, 2026-12-07), so a
 * profile taken while it moves is told of, as one taken while the
 * processors' speed moves is (rok_calib_check). */
static gboolean time_again(Run *run, guint reps, RokCalibCancel *cancel, RokCalibDisk *disk, guint64 file_bytes,
                           GError **error) {
  g_autofree double *ratio = g_new(double, reps);
  for (guint d = 0; d < 2; d++) {
    RokIoOp op = d == 0 ? ROK_IO_WRITE : ROK_IO_READ;
    double first = 0;
    for (guint i = 0; i < disk->n_bursts; i++)
      if (disk->bursts[i].gap_s == BURST_GAP_SHORT_S)
        first += (op == ROK_IO_WRITE ? disk->bursts[i].write : disk->bursts[i].read).median;
    if (!(first > 0))
      continue;
    drop_cache(run);
    guint64 offset = 0;
    for (guint rep = 0; rep < reps; rep++) {
      double sum = 0, seconds = 0, cpu = 0;
      for (guint i = 0; i < disk->n_bursts; i++) {
        if (disk->bursts[i].gap_s != BURST_GAP_SHORT_S)
          continue;
        /* Writes from fresh random bytes, not the first pass's again. */
        if (!time_burst(run, AGAIN_FILL + rep, cancel, op, &disk->bursts[i], &offset, file_bytes, &seconds, &cpu,
                        error))
          return FALSE;
        sum += seconds;
      }
      ratio[rep] = sum / first;
    }
    disk->again[d] = rok_calib_stat(ratio, reps);
  }
  return TRUE;
}

/* The bursts that fit a leg's costs: shaped like the executor's SSD legs,
 * after the short gap (rok_calib_disk_speed times them again, those up to
 * its queue of 4). */
static const RokCalibBurst LEG_BURSTS[] = {
    {.requests = 1, .request_bytes = MIB, .gap_s = BURST_GAP_SHORT_S},
    {.requests = 4, .request_bytes = MIB, .gap_s = BURST_GAP_SHORT_S},
    {.requests = 16, .request_bytes = MIB, .gap_s = BURST_GAP_SHORT_S},
    {.requests = 1, .request_bytes = MIB / 4, .gap_s = BURST_GAP_SHORT_S},
    {.requests = 4, .request_bytes = MIB / 4, .gap_s = BURST_GAP_SHORT_S},
    {.requests = 1, .request_bytes = MIB / 16, .gap_s = BURST_GAP_SHORT_S}};
/* Lone bursts after the other gaps, for the wakes and the warm saving. */
static const RokCalibBurst LONE_BURSTS[] = {
    {.requests = 1, .request_bytes = MIB, .gap_s = BURST_GAP_LONG_S},
    {.requests = 1, .request_bytes = MIB / 4, .gap_s = BURST_GAP_LONG_S},
    {.requests = 1, .request_bytes = MIB, .gap_s = BURST_GAP_DEEP_S},
    {.requests = 1, .request_bytes = MIB / 4, .gap_s = BURST_GAP_DEEP_S},
    {.requests = 1, .request_bytes = MIB, .gap_s = BURST_CHAINED},
    {.requests = 1, .request_bytes = MIB / 4, .gap_s = BURST_CHAINED}};
G_STATIC_ASSERT(G_N_ELEMENTS(LEG_BURSTS) + G_N_ELEMENTS(LONE_BURSTS) <= ROK_CALIB_MAX_BURSTS);

/* Adds to DISK's bursts those of SHAPES that O's deepest queue and file
 * hold. */
static void add_bursts(RokCalibDisk *disk, const RokCalibOptions *o, const RokCalibBurst *shapes, guint n) {
  for (guint i = 0; i < n; i++)
    if (shapes[i].requests <= deepest_queue(o) && shapes[i].requests * shapes[i].request_bytes <= o->file_bytes)
      disk->bursts[disk->n_bursts++] = shapes[i];
}

/* LEG_BURSTS (small tensors: validate-gpt's are 2-256 KiB) and
 * LONE_BURSTS, those the queue depth and the file allow: lone requests of
 * 1 MiB and 256 KiB after the long gap and after the deep one
 * (a step's SSD legs come 60-100 ms apart in a small model's forward; on
 * the development VM's virtio disk a lone 1 MiB write took 123 us more
 * after 20 ms than after 1 ms, 170 more after 60 ms and 231 after 150:
 * fio, 2026-12-04) and chained; writes then reads; then as many joined pairs
 * (measure_joins), half as many rounds of the short-gap bursts again
 * (time_again), and the fits. REPS follows --pass-time (10 for
 * --quick, 40 for a full run), half that after the deep gap (at least 5):
 * about 2.9 and 11.6 seconds of idle gaps. */
static gboolean measure_bursts(Run *run, const RokCalibOptions *o, RokCalibCancel *cancel, RokCalibDisk *disk,
                               GError **error) {
  guint reps = (guint)CLAMP(o->pass_seconds * 50, 5, 40);
  add_bursts(disk, o, LEG_BURSTS, G_N_ELEMENTS(LEG_BURSTS));
  add_bursts(disk, o, LONE_BURSTS, G_N_ELEMENTS(LONE_BURSTS));
  guint shape_reps[ROK_CALIB_MAX_BURSTS];
  for (guint i = 0; i < disk->n_bursts; i++)
    shape_reps[i] = disk->bursts[i].gap_s == BURST_GAP_DEEP_S ? MAX(reps / 2, 5) : reps;
  for (guint d = 0; d < 2; d++) {
    drop_cache(run);
    if (!time_bursts(run, shape_reps, cancel, d == 0 ? ROK_IO_WRITE : ROK_IO_READ, disk, o->file_bytes, error))
      return FALSE;
  }
  if (!measure_joins(run, o, reps, cancel, disk, error) ||
      !time_again(run, MAX(reps / 2, 3), cancel, disk, o->file_bytes, error))
    return FALSE;
  rok_calib_disk_fit_legs(disk, &disk->legs);
  rok_calib_disk_fit_wakes(disk, disk->wakes, &disk->n_wakes);
  disk->warm_fitted = rok_calib_disk_fit_warm(disk, disk->warm);
  rok_calib_disk_fit_cpu(disk, &disk->request_cpu, &disk->leg_cpu);
  return TRUE;
}

static void describe_dir(const char *dir, RokCalibDisk *disk) {
  struct stat st;
  struct statvfs vfs;
  if (stat(dir, &st) == 0)
    disk->st_dev = (guint64)st.st_dev;
  if (statvfs(dir, &vfs) == 0)
    disk->capacity = (guint64)vfs.f_blocks * (guint64)vfs.f_frsize;
  disk->virtual_reason = rok_calib_disk_kind("/sys", dir, &disk->disk);
}

static gboolean check_dir(const char *dir, GError **error) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    int e = errno;
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "--dir %s: %s", dir, g_strerror(e));
    return FALSE;
  }
  if (!S_ISDIR(st.st_mode)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "--dir %s: not a directory", dir);
    return FALSE;
  }
  return TRUE;
}

gboolean rok_calib_measure_disk(const char *dir, const RokCalibOptions *o, RokCalibCancel *cancel,
                                RokCalibDisk *disk, GPtrArray *notes, GError **error) {
  if (!check_dir(dir, error))
    return FALSE;
  *disk = (RokCalibDisk){.dir = g_strdup(dir), .file_bytes = o->file_bytes,
                         .points = g_array_new(FALSE, TRUE, sizeof(RokCalibDiskPoint))};
  describe_dir(dir, disk);
  Run run = {.file.fd = -1};
  if (o->busy_processors > 0) {
    run.busy = rok_calib_busy_start(o->busy_processors);
    disk->busy_processors = rok_calib_busy_processes(run.busy);
  }
  g_mutex_init(&run.pass.lock);
  g_cond_init(&run.pass.idle);
  g_autofree char *size = rok_units_format_size(o->file_bytes);
  rok_calib_progress(o, "disk %s: laying out %s of random data", dir, size);
  double s = 0;
  guint64 bytes = 0;
  gboolean ok = run_open(&run, dir, o, cancel, disk, notes, error) &&
                run_pass(&run, ROK_IO_WRITE, largest_block(o), deepest_queue(o), 0, o->file_bytes, -1, &s, &bytes,
                         error) &&
                measure_grid(&run, dir, o, cancel, disk, error) && measure_latency(&run, o, cancel, disk, error) &&
                measure_bursts(&run, o, cancel, disk, error);
  /* On failure the first error stands; a folder left behind then gets
   * the workdir module's own warning. */
  disk->busy_seconds = rok_calib_busy_stop(run.busy);
  return run_clear(&run, cancel, ok ? error : NULL) && ok;
}

/* What HW's leg model gives burst B, as the simulator times an SSD leg
 * after a short idle: its fixed part (latency and leg overhead), then
 * each request's cost (request_overhead, request_overhead_per_mib) and
 * bytes at the array's rate. */
static double modelled_burst(const RokHw *hw, const RokCalibBurst *b, gboolean write) {
  double rate = write ? hw->nvme.write_bandwidth : hw->nvme.read_bandwidth;
  double fixed = (double)(rok_hw_nvme_latency(hw, write) + rok_hw_nvme_leg_overhead(hw, write)) / 1e9;
  double request = ((double)hw->nvme.request_overhead +
                    (double)hw->nvme.request_overhead_per_mib * (double)b->request_bytes / MIB) / 1e9;
  return fixed + b->requests * (request + (double)b->request_bytes / rate);
}

gboolean rok_calib_disk_speed(const char *dir, const RokHw *hw, guint rounds, RokCalibCancel *cancel,
                              double ratio[2], GError **error) {
  ratio[0] = ratio[1] = 0;
  if (!check_dir(dir, error))
    return FALSE;
  RokCalibOptions o;
  rok_calib_options_init(&o);
  o.file_bytes = SPEED_FILE_BYTES;
  o.blocks[0] = MIB;
  o.n_blocks = 1;
  o.queue_depths[0] = 4;
  o.n_queue_depths = 1;
  RokCalibDisk disk = {0};
  add_bursts(&disk, &o, LEG_BURSTS, G_N_ELEMENTS(LEG_BURSTS));
  guint reps[ROK_CALIB_MAX_BURSTS];
  for (guint i = 0; i < disk.n_bursts; i++)
    reps[i] = MAX(rounds, 1);
  Run run = {.file.fd = -1};
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
  if (hw->gpu.shared_cpus > 0) /* as rok calibrate times them with a CPU device (calib-run.c) */
    run.busy = rok_calib_busy_start(hw->gpu.shared_cpus);
  g_mutex_init(&run.pass.lock);
  g_cond_init(&run.pass.idle);
  double s = 0;
  guint64 bytes = 0;
  gboolean ok = run_open(&run, dir, &o, cancel, &disk, notes, error) &&
                run_pass(&run, ROK_IO_WRITE, MIB, 4, 0, o.file_bytes, -1, &s, &bytes, error);
  for (guint d = 0; ok && d < 2; d++) {
    gboolean write = d == 0;
    drop_cache(&run);
    ok = time_bursts(&run, reps, cancel, write ? ROK_IO_WRITE : ROK_IO_READ, &disk, o.file_bytes, error);
    double took = 0, modelled = 0;
    for (guint i = 0; ok && i < disk.n_bursts; i++) {
      took += (write ? disk.bursts[i].write : disk.bursts[i].read).median;
      modelled += modelled_burst(hw, &disk.bursts[i], write);
    }
    if (ok)
      ratio[d] = took / modelled;
  }
  rok_calib_busy_stop(run.busy);
  g_free(disk.backend);
  return run_clear(&run, cancel, ok ? error : NULL) && ok;
}
