/* Communication between the GPUs of a job, as the simulator costs it. */
#include "sim-private.h"

#include <math.h>

/* Megatron-LM places tensor-parallel ranks next to each other, then
 * data-parallel, then pipeline-parallel ranks: neighbouring stages are
 * tensor_parallel × data_parallel ranks apart, in another node once that
 * reaches the node's GPUs. */
static gboolean stages_cross_nodes(const RokModel *m, const RokHw *hw) {
  return m->tensor_parallel * m->data_parallel >= hw->interconnect.gpus_per_node;
}

gint64 sim_send_ns(const RokTrace *trace, const RokHw *hw) {
  const RokModel *m = trace->model;
  if (m == NULL || m->pipeline_parallel < 2)
    return 0;
  /* What a stage sends: its residual stream for one micro-batch, split by
   * sequence under sequence parallelism (Megatron's scatter-gather). */
  guint64 tokens = m->seq_len * m->micro_batch / (m->sequence_parallel ? m->tensor_parallel : 1);
  double bytes = (double)(tokens * m->hidden * rok_dtype_bytes(m->dtype));
  return (gint64)llround(1e9 * rok_hw_collective_s(hw, ROK_COLLECTIVE_SEND, bytes, 2, stages_cross_nodes(m, hw)));
}
