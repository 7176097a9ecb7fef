/* Cross-entropy over the vocabulary: softmax probabilities (saved as fp32
 * for backward) and the loss per token; backward from the probabilities.
 * A label outside [0, vocab) (e.g. -100) is ignored: loss 0, gradient 0. */

__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
cross_entropy_fwd(__global const act_t *logits, __global const long *labels, __global float *probs,
                  __global float *loss, uint vocab) {
  __local float scratch[ROK_WG];
  const ulong row = get_group_id(0), base = row * vocab;
  const uint lid = get_local_id(0);
  float top = -INFINITY;
  for (uint j = lid; j < vocab; j += ROK_WG)
    top = fmax(top, act_load(logits, base + j));
  top = wg_max(top, scratch);
  float sum = 0.0f;
  for (uint j = lid; j < vocab; j += ROK_WG)
    sum += exp(act_load(logits, base + j) - top);
  sum = wg_sum(sum, scratch);
  const float inverse = 1.0f / sum;
  for (uint j = lid; j < vocab; j += ROK_WG)
    probs[base + j] = exp(act_load(logits, base + j) - top) * inverse;
  if (lid == 0) {
    const long label = labels[row];
    loss[row] = label >= 0 && label < (long)vocab ? log(sum) + top - act_load(logits, base + label) : 0.0f;
  }
}

/* dlogits = scale·(p − onehot(label)); scale is dloss per token (1/tokens
 * for a mean). */
__kernel void cross_entropy_bwd(__global const float *probs, __global const long *labels, __global act_t *dlogits,
                                ulong tokens, uint vocab, float scale) {
  const ulong i = get_global_id(0);
  if (i >= tokens * vocab)
    return;
  const ulong row = i / vocab;
  const long label = labels[row];
  if (label < 0 || label >= (long)vocab) {
    act_store(dlogits, i, 0.0f);
    return;
  }
  const float onehot = (long)(i % vocab) == label ? 1.0f : 0.0f;
  act_store(dlogits, i, scale * (probs[i] - onehot));
}
