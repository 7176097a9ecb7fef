/* Device buffers of the tensors, per micro-batch: allocated when a compute
 * action makes a tensor or a read brings it back, freed by the schedule's
 * frees. The ledger of the device counts them (the measured peak). The
 * table is shared by the compute thread, the transfer threads and the
 * frees run by the tracker; the schedule's dependencies keep them off each other's
 * entries, the lock keeps the table itself consistent. */
#ifdef ROK_WITH_OPENCL

#include <string.h>

#include "runner-private.h"
#include "rok/core.h"

static RokClBuffer **entry(Runner *r, guint mb, guint tensor) {
  return &r->buffers[(gsize)mb * r->prog.n_tensors + tensor];
}

RokClBuffer *runner_buffer_get(Runner *r, guint mb, guint tensor) {
  g_mutex_lock(&r->lock);
  RokClBuffer *buffer = *entry(r, mb, tensor);
  g_mutex_unlock(&r->lock);
  return buffer;
}

RokClBuffer *runner_buffer_alloc(Runner *r, guint mb, guint tensor, GError **error) {
  const RokTensor *t = rok_trace_tensor(r->trace, tensor);
  guint64 elements = 1;
  for (guint d = 0; d < t->rank; d++)
    elements *= t->shape[d];
  RokClBuffer *buffer = rok_cl_buffer_new(r->device, t->dtype, elements, t->name, FALSE, error);
  if (buffer == NULL)
    return NULL;
  g_mutex_lock(&r->lock);
  RokClBuffer **e = entry(r, mb, tensor);
  RokClBuffer *old = *e;
  if (old == NULL)
    *e = buffer;
  g_mutex_unlock(&r->lock);
  if (old != NULL) {
    /* The dependencies should make this impossible: say so rather than leak. */
    rok_cl_buffer_free(buffer);
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "tensor '%s' of micro-batch %u is made while its previous copy is still in device memory", t->name, mb);
    return NULL;
  }
  return buffer;
}

/* A schedule's free runs once every action before it has completed (the
 * compute thread waits for its kernels, a copy's stream for its copy), so
 * nothing is pending on the buffer: its memory is kept for the next tensor
 * of its size. Each step allocates the same tensors again; on the
 * development VM, PoCL's CPU device backed every new buffer with fresh
 * pages, and an h2d copy of 1 MiB into one took 3.2 ms against 0.12 into
 * one written before (29,000 page faults a step of bench-small-tensors'
 * 2-layer GPT; about 200 with the memory kept). */
void runner_buffer_free(Runner *r, guint mb, guint tensor) {
  g_mutex_lock(&r->lock);
  RokClBuffer **e = entry(r, mb, tensor);
  RokClBuffer *buffer = *e;
  *e = NULL;
  g_mutex_unlock(&r->lock);
  rok_cl_buffer_recycle(buffer, FALSE);
}

void runner_buffer_view(Runner *r, guint mb, RokClBuffer **view) {
  g_mutex_lock(&r->lock);
  memcpy(view, entry(r, mb, 0), sizeof(RokClBuffer *) * r->prog.n_tensors);
  g_mutex_unlock(&r->lock);
}

guint runner_buffers_clear(Runner *r) {
  guint n = 0;
  gsize total = (gsize)r->prog.n_mb * r->prog.n_tensors;
  g_mutex_lock(&r->lock);
  for (gsize i = 0; i < total; i++) {
    n += r->buffers[i] != NULL;
    g_clear_pointer(&r->buffers[i], rok_cl_buffer_free);
  }
  g_mutex_unlock(&r->lock);
  return n;
}

#endif /* ROK_WITH_OPENCL */
