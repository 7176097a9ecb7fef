/* The compute stream: one thread launches every kernel (the op interpreter
 * is not thread-safe), runs each action to completion on the device and
 * reports it. A forward that makes a tensor bound for host memory or the
 * SSDs also takes the tensor's checksum on the device, before any copy can
 * start: that is the value the copy is checked against. */
#ifdef ROK_WITH_OPENCL

#include "runner-private.h"
#include "rok/core.h"

/* The tensor table for a forward or a recompute: the outputs it makes get
 * new buffers; the other outputs of a recompute go to scratch, so that a
 * resident copy (maybe being copied out) is never written again. */
static gboolean forward_view(Runner *r, guint id, RokClBuffer **view, GError **error) {
  const RokAction *a = runner_action(&r->prog, id);
  const RunnerAction *ra = &r->prog.actions[id];
  runner_buffer_view(r, a->micro_batch, view);
  const GArray *outs = rok_trace_op(r->trace, a->op)->outputs;
  for (guint i = 0; i < outs->len; i++)
    view[g_array_index(outs, guint, i)] = NULL;
  const guint *allocs = runner_ids(&r->prog, ra->allocs);
  for (guint i = 0; i < ra->n_allocs; i++) {
    view[allocs[i]] = runner_buffer_alloc(r, a->micro_batch, allocs[i], error);
    if (view[allocs[i]] == NULL)
      return FALSE;
  }
  return TRUE;
}

static gboolean take_sums(Runner *r, const RunnerAction *ra, RokClBuffer *const *view, GError **error) {
  const guint *sums = runner_ids(&r->prog, ra->sums);
  for (guint i = 0; i < ra->n_sums; i++) {
    const RunnerCopy *c = runner_copy(&r->prog, sums[i]);
    if (!rok_cl_checksum_enqueue(r->kernels, view[c->tensor], 0, c->bytes, r->sums, sums[i], error))
      return FALSE;
  }
  return TRUE;
}

/* Wait for the action's kernels; read the checksums it took. */
static gboolean finish(Runner *r, const RunnerAction *ra, GError **error) {
  cl_event event = NULL;
  if (!rok_cl_device_marker(r->device, ROK_CL_QUEUE_COMPUTE, &event, error))
    return FALSE;
  gboolean ok = rok_cl_events_wait(1, &event, error);
  clReleaseEvent(event);
  const guint *sums = runner_ids(&r->prog, ra->sums);
  for (guint i = 0; ok && i < ra->n_sums; i++)
    ok = rok_cl_buffer_read(r->sums, ROK_CL_QUEUE_COMPUTE, (guint64)sums[i] * sizeof(guint64), sizeof(guint64),
                            &r->copies[sums[i]].device_sum, TRUE, 0, NULL, NULL, error);
  return ok;
}

/* After a micro-batch's last backward: its loss, and its bookkeeping gone
 * so that the next step may use the same number. */
static gboolean end_micro_batch(Runner *r, guint mb, GError **error) {
  if (r->prog.has_loss) {
    double loss = 0;
    if (!rok_exec_model_loss(r->model, mb, &loss, error))
      return FALSE;
    r->loss_sum += loss;
    r->loss_count++;
  }
  rok_exec_model_end_micro_batch(r->model, mb);
  return TRUE;
}

gboolean runner_compute_action(Runner *r, guint id, GError **error) {
  const RokAction *a = runner_action(&r->prog, id);
  const RunnerAction *ra = &r->prog.actions[id];
  gboolean ok = TRUE;
  switch (a->kind) {
  case ROK_ACTION_FORWARD:
  case ROK_ACTION_RECOMPUTE:
    ok = forward_view(r, id, r->view, error) &&
         (ra->seed_only ? rok_exec_model_rebuild_mask(r->model, a->op, a->micro_batch, r->view, error)
                        : rok_exec_model_forward(r->model, a->op, a->micro_batch, r->view, error)) &&
         take_sums(r, ra, r->view, error);
    break;
  case ROK_ACTION_BACKWARD:
    runner_buffer_view(r, a->micro_batch, r->view);
    ok = rok_exec_model_backward(r->model, a->op, a->micro_batch, r->view, error);
    break;
  default: /* the optimizer step: the interpreter has none (the report says so) */
    return TRUE;
  }
  ok = ok && finish(r, ra, error);
  return ok && (!ra->ends_mb || end_micro_batch(r, a->micro_batch, error));
}

gboolean runner_compute_special(Runner *r, guint task, GError **error) {
  if (task == RUN_TASK_ZERO) {
    r->loss_sum = 0;
    r->loss_count = 0;
    return rok_exec_model_zero_gradients(r->model, error) &&
           rok_cl_device_finish(r->device, ROK_CL_QUEUE_COMPUTE, error);
  }
  g_assert(task == RUN_TASK_CHECKSUM);
  return rok_exec_model_gradient_checksum(r->model, &r->gradient_checksum, error);
}

#endif /* ROK_WITH_OPENCL */
