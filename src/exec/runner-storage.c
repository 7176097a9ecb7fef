/* The nvme-write and nvme-read legs: a copy's chunks between staging slots
 * and the tensor store, every chunk in flight at once (the store keeps the
 * queue depth per disk); a staged leg ends with its last completion, on
 * the store's backend thread, which marks it done and issues what that
 * made ready, so no thread of the executor waits for the disk. A staged
 * leg begins on that thread too where it can (every write, a read whose
 * slots are free), so that its requests go into the ring with no hand-off
 * to a lane's thread first (validate-gpt's offload row, 2026-12-04: the
 * reads' stream 9.3 ms a step through a lane, 7.2 on the store's thread,
 * medians of 10 runs taken in turn). A
 * gpudirect leg cannot be done here: it is run as the d2h (h2d) copy of
 * each chunk through a staging slot plus the SSD leg, pipelined chunk by
 * chunk. */
#ifdef ROK_WITH_OPENCL

#include <errno.h>
#include <string.h>

#include "runner-private.h"
#include "rok/core.h"

/* The chunks of one leg in flight; completions arrive on a backend thread. */
typedef struct {
  Runner *r;
  guint copy;
  GMutex lock;
  GCond cond;
  guint outstanding;
  int first_res;
  guint first_chunk;
  gboolean release; /* give a chunk's slot back when it completes */
  guint8 *arrived;  /* per chunk, when the leg consumes them in order */
} LegIo;

static void leg_init(LegIo *io, Runner *r, guint copy) {
  *io = (LegIo){.r = r, .copy = copy};
  g_mutex_init(&io->lock);
  g_cond_init(&io->cond);
}

static void on_done(RokStoreTensor *tensor, guint chunk, int res, gpointer data) {
  (void)tensor;
  LegIo *io = data;
  if (io->release)
    runner_copy_release_chunk(io->r, io->copy, chunk);
  g_mutex_lock(&io->lock);
  if (res < 0 && io->first_res == 0) {
    io->first_res = res;
    io->first_chunk = chunk;
  }
  if (io->arrived != NULL)
    io->arrived[chunk] = 1;
  io->outstanding--;
  g_cond_broadcast(&io->cond);
  g_mutex_unlock(&io->lock);
}

static void submit(LegIo *io, RokStoreTensor *tensor, guint chunk, int slot, gboolean write) {
  g_mutex_lock(&io->lock);
  io->outstanding++;
  g_mutex_unlock(&io->lock);
  (write ? rok_store_write : rok_store_read)(tensor, chunk, (guint)slot, on_done, io);
}

/* Wait for everything in flight (always, even after an error: the
 * completions point into this leg), then turn a failure into an error. */
static gboolean leg_finish(LegIo *io, GError **error) {
  g_mutex_lock(&io->lock);
  while (io->outstanding > 0)
    g_cond_wait(&io->cond, &io->lock);
  g_mutex_unlock(&io->lock);
  g_mutex_clear(&io->lock);
  g_cond_clear(&io->cond);
  g_free(io->arrived);
  if (io->first_res == 0)
    return TRUE;
  if (error != NULL && *error == NULL)
    rok_store_set_error(io->r->copies[io->copy].stored, io->first_chunk, io->first_res, error);
  return FALSE;
}

/* A staged leg in flight on its own: the submitter holds one reference
 * until every chunk is submitted, each chunk one until it completes; who
 * drops the last ends the leg. */
typedef struct {
  Runner *r;
  guint id, copy;
  gboolean write;
  gint refs;      /* atomic */
  gint first_res; /* atomic: the first failure, or 0 */
  guint first_chunk;
} AsyncLeg;

static void async_end(AsyncLeg *a) {
  Runner *r = a->r;
  const RunnerCopy *c = runner_copy(&r->prog, a->copy);
  RunnerCopyState *st = &r->copies[a->copy];
  GError *error = NULL;
  gint64 end_ns = rok_store_tensor_done_ns(st->stored); /* read before a forwarded write frees it */
  if (a->first_res != 0) {
    rok_store_set_error(st->stored, a->first_chunk, a->first_res, &error);
  } else if (a->write) {
    r->rec[a->id].moved = c->bytes;
    runner_copy_unref(r, a->copy);
    if (c->nvme_read == RUN_NONE) /* forwarded: nobody reads it back */
      g_clear_pointer(&st->stored, rok_store_tensor_free);
  } else {
    r->rec[a->id].moved = c->bytes;
    g_atomic_int_set(&st->refs, 1); /* the h2d leg's */
  }
  guint id = a->id;
  g_free(a);
  runner_leg_done_at(r, id, end_ns, error);
}

static void async_unref(AsyncLeg *a) {
  if (g_atomic_int_dec_and_test(&a->refs))
    async_end(a);
}

static void on_async_done(RokStoreTensor *tensor, guint chunk, int res, gpointer data) {
  (void)tensor;
  AsyncLeg *a = data;
  if (res < 0 && g_atomic_int_compare_and_exchange(&a->first_res, 0, res))
    a->first_chunk = chunk;
  async_unref(a);
}

/* Every chunk of a staged leg between its slots and the store, without
 * waiting: the leg ends with its last completion. */
static void submit_async(Runner *r, guint id, guint copy, gboolean write) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RokStoreTensor *stored = r->copies[copy].stored;
  AsyncLeg *a = g_new(AsyncLeg, 1);
  *a = (AsyncLeg){.r = r, .id = id, .copy = copy, .write = write, .refs = (gint)c->n_chunks + 1};
  for (guint i = 0; i < c->n_chunks; i++)
    (write ? rok_store_write : rok_store_read)(stored, i, (guint)r->slots[c->chunk_base + i], on_async_done, a);
  async_unref(a);
}

static RokStoreTensor *store_tensor(Runner *r, guint copy, GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RunnerCopyState *st = &r->copies[copy];
  st->stored = rok_store_tensor_new(r->store, c->bytes, error);
  if (st->stored == NULL)
    g_prefix_error(error, "tensor '%s' (micro-batch %u): ", rok_trace_tensor(r->trace, c->tensor)->name, c->mb);
  return st->stored;
}

/* Device -> slot -> SSD, chunk by chunk (gpudirect, emulated). */
static gboolean write_direct(Runner *r, guint id, guint copy, LegIo *io, GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RokClBuffer *buffer = runner_buffer_get(r, c->mb, c->tensor);
  RunnerSum sum;
  runner_sum_init(&sum);
  io->release = TRUE;
  for (guint i = 0; i < c->n_chunks; i++) {
    if (!runner_slot_acquire(r, r->copies[copy].pool, &r->rec[id], &r->slots[c->chunk_base + i], error) ||
        !runner_chunk_out(r, buffer, copy, i, error))
      return FALSE;
    gsize len = rok_store_tensor_chunk_bytes(r->copies[copy].stored, i);
    runner_integrity_out(r, c, &sum, i, runner_chunk_data(r, copy, i), len);
    submit(io, r->copies[copy].stored, i, r->slots[c->chunk_base + i], TRUE);
  }
  return runner_integrity_out_done(r, copy, &sum, error);
}

typedef struct {
  Runner *r;
  guint n;
  guint ids[]; /* in the order they were issued */
} StoreCall;

/* On the store's thread: the leg begun as its stream's thread would begin
 * it (after a failure, only acknowledged), its requests out at once; a
 * read whose slots cannot all be had now goes to its lane to wait for the
 * rest (the slots it took are kept), so this thread never waits. */
static void leg_on_store(Runner *r, guint id) {
  GError *error = NULL;
  gboolean deferred = FALSE;
  if (!runner_failed(r)) {
    RokStream s = runner_action(&r->prog, id)->stream;
    if (s == ROK_STREAM_NVME_READ && !runner_read_slots_now(r, id, r->prog.actions[id].copy)) {
      g_async_queue_push(r->work[s], runner_msg(id));
      return;
    }
    gboolean ok = s == ROK_STREAM_NVME_WRITE ? runner_nvme_write_leg(r, id, &deferred, &error)
                                             : runner_nvme_read_leg(r, id, &deferred, &error);
    if (ok && deferred)
      return; /* staged: its last completion ends it */
  }
  runner_leg_done(r, id, error);
}

static void legs_on_store(gpointer data) {
  StoreCall *call = data;
  for (guint i = 0; i < call->n; i++)
    leg_on_store(call->r, call->ids[i]);
  g_free(call);
}

gboolean runner_ssd_leg_staged(const Runner *r, guint id) {
  const RunnerCopy *c = runner_copy(&r->prog, r->prog.actions[id].copy);
  return runner_action(&r->prog, id)->stream == ROK_STREAM_NVME_WRITE ? !c->gd_write : !c->gd_read;
}

gboolean runner_ssd_legs_on_store(Runner *r, const GArray *ids) {
  StoreCall *call = g_malloc(sizeof(StoreCall) + ids->len * sizeof(guint));
  call->r = r;
  call->n = ids->len;
  memcpy(call->ids, ids->data, ids->len * sizeof(guint));
  if (rok_store_call(r->store, legs_on_store, call))
    return TRUE;
  g_free(call);
  return FALSE;
}

gboolean runner_nvme_write_leg(Runner *r, guint id, gboolean *deferred, GError **error) {
  guint copy = r->prog.actions[id].copy;
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RunnerCopyState *st = &r->copies[copy];
  if (store_tensor(r, copy, error) == NULL)
    return FALSE;
  if (!c->gd_write) {
    *deferred = TRUE;
    submit_async(r, id, copy, TRUE);
    return TRUE;
  }
  LegIo io;
  leg_init(&io, r, copy);
  gboolean ok = write_direct(r, id, copy, &io, error);
  ok = leg_finish(&io, ok ? error : NULL) && ok;
  if (!ok)
    return FALSE;
  r->rec[id].moved = c->bytes;
  if (c->nvme_read == RUN_NONE) /* forwarded: nobody reads it back */
    g_clear_pointer(&st->stored, rok_store_tensor_free);
  return TRUE;
}

/* SSD -> slot -> device, chunk by chunk, each checked before it goes to
 * the device (gpudirect, emulated): reads are issued while slots are
 * free, the chunks consumed in order. */
static gboolean read_direct(Runner *r, guint id, guint copy, RokClBuffer *buffer, LegIo *io, GError **error) {
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RokStaging *pool = r->copies[copy].pool;
  RunnerSum sum;
  runner_sum_init(&sum);
  io->arrived = g_new0(guint8, c->n_chunks);
  guint issued = 0;
  for (guint next = 0; next < c->n_chunks; next++) {
    while (issued < c->n_chunks) {
      gint64 waited = 0;
      int slot = rok_staging_acquire(pool, issued == next ? -1 : 0, &waited);
      r->rec[id].wait_ns += waited;
      r->rec[id].waits += waited > 0;
      if (slot == -ETIMEDOUT)
        break;
      if (slot < 0) {
        g_set_error(error, ROK_ERROR, slot == -ECANCELED ? ROK_ERROR_CANCELLED : ROK_ERROR_IO,
                    "waiting for a staging slot: %s", g_strerror(-slot));
        return FALSE;
      }
      r->slots[c->chunk_base + issued] = slot;
      submit(io, r->copies[copy].stored, issued++, slot, FALSE);
    }
    g_mutex_lock(&io->lock);
    while (!io->arrived[next] && io->first_res == 0)
      g_cond_wait(&io->cond, &io->lock);
    gboolean failed = io->first_res != 0;
    g_mutex_unlock(&io->lock);
    if (failed || !runner_chunk_in(r, buffer, copy, next, &sum, error))
      return FALSE;
    runner_copy_release_chunk(r, copy, next);
  }
  return runner_integrity_in_done(r, copy, &sum, error);
}

gboolean runner_nvme_read_leg(Runner *r, guint id, gboolean *deferred, GError **error) {
  guint copy = r->prog.actions[id].copy;
  const RunnerCopy *c = runner_copy(&r->prog, copy);
  RunnerCopyState *st = &r->copies[copy];
  /* Device memory is taken when the read is issued, as the simulator counts it. */
  RokClBuffer *buffer = runner_buffer_alloc(r, c->mb, c->tensor, error);
  if (buffer == NULL)
    return FALSE;
  if (!c->gd_read) {
    if (!runner_read_slots(r, id, copy, error))
      return FALSE;
    *deferred = TRUE;
    submit_async(r, id, copy, FALSE);
    return TRUE;
  }
  LegIo io;
  leg_init(&io, r, copy);
  gboolean ok = read_direct(r, id, copy, buffer, &io, error);
  ok = leg_finish(&io, ok ? error : NULL) && ok;
  if (!ok)
    return FALSE;
  r->rec[id].moved = c->bytes;
  g_clear_pointer(&st->stored, rok_store_tensor_free);
  return TRUE;
}

#endif /* ROK_WITH_OPENCL */
