/* Mixture-of-experts routing: the router's softmax and top-k, the dispatch
 * of token rows to experts, the weighted combine back to tokens, their
 * backward passes, and Qwen2-MoE's sigmoid gate on the shared expert.
 *
 * Layout. The router writes, per token t, k expert indices (long) and k
 * weights (float). A routed "choice" is i = t·k + j (token t's j-th pick).
 * The dispatched rows are grouped by expert, expert 0 first; within an
 * expert, choices in increasing i (token order, then slot). row_token[r]
 * holds the choice i of row r (the token is i / k), or -1 for a padding
 * row of a capacity-bounded expert. inv[i] is the row of choice i, or -1
 * when the expert's capacity dropped it.
 *
 * Determinism: no float atomics. Every sum runs in a fixed order (slots in
 * order, columns in order); the counts are integer. */

/* One item per token: probabilities softmax(logits) in fp32; the top k by
 * repeated arg-max, ties to the lower expert index; weights the picked
 * probabilities renormalised to sum to 1 (Mixtral's routing). */
__kernel void moe_route_fwd(__global const act_t *logits, __global float *probs, __global long *indices,
                            __global float *weights, ulong tokens, uint experts, uint k) {
  const ulong t = get_global_id(0);
  if (t >= tokens)
    return;
  const ulong row = t * experts;
  float max = -INFINITY;
  for (uint e = 0; e < experts; e++)
    max = fmax(max, act_load(logits, row + e));
  float sum = 0.0f;
  for (uint e = 0; e < experts; e++)
    sum += exp(act_load(logits, row + e) - max);
  for (uint e = 0; e < experts; e++)
    probs[row + e] = exp(act_load(logits, row + e) - max) / sum;
  float total = 0.0f;
  for (uint j = 0; j < k; j++) {
    int best = -1;
    float best_p = 0.0f;
    for (uint e = 0; e < experts; e++) {
      bool taken = false;
      for (uint q = 0; q < j; q++)
        taken = taken || indices[t * k + q] == (long)e;
      const float p = probs[row + e];
      if (!taken && (best < 0 || p > best_p)) {
        best = (int)e;
        best_p = p;
      }
    }
    indices[t * k + j] = best;
    total += best_p;
  }
  for (uint j = 0; j < k; j++)
    weights[t * k + j] = probs[row + indices[t * k + j]] / total;
}

/* One item per expert: how many choices picked it. */
__kernel void moe_count(__global const long *indices, __global long *counts, ulong choices, uint experts) {
  const uint e = get_global_id(0);
  if (e >= experts)
    return;
  long n = 0;
  for (ulong i = 0; i < choices; i++)
    n += indices[i] == (long)e;
  counts[e] = n;
}

/* One item per token. dlogits = the softmax backward of the renormalised
 * weights' gradient over the picked logits (w_j (dw_j - Σ w·dw)), plus,
 * when has_aux, the load-balancing loss's: the loss is
 * aux_scale · Σ_e counts[e] · Σ_t p[t][e], so dL/dp[t][e] = aux_scale ·
 * counts[e], through the softmax of all the token's logits. */
__kernel void moe_route_bwd(__global const float *probs, __global const long *indices, __global const float *dweights,
                            __global const long *counts, uint has_aux, float aux_scale, __global act_t *dlogits,
                            ulong tokens, uint experts, uint k) {
  const ulong t = get_global_id(0);
  if (t >= tokens)
    return;
  const ulong row = t * experts;
  float total = 0.0f;
  for (uint j = 0; j < k; j++)
    total += probs[row + indices[t * k + j]];
  float dot = 0.0f;
  for (uint j = 0; j < k; j++)
    dot += probs[row + indices[t * k + j]] / total * dweights[t * k + j];
  float pa = 0.0f;
  for (uint e = 0; has_aux && e < experts; e++)
    pa += probs[row + e] * aux_scale * (float)counts[e];
  for (uint e = 0; e < experts; e++) {
    const float p = probs[row + e];
    float g = has_aux ? p * (aux_scale * (float)counts[e] - pa) : 0.0f;
    for (uint j = 0; j < k; j++)
      if (indices[t * k + j] == (long)e)
        g += p / total * (dweights[t * k + j] - dot);
    act_store(dlogits, row + e, g);
  }
}

/* One item per expert: its rows start after the earlier experts' counts
 * (dropless) or at e·capacity; it takes its choices in order, up to the
 * capacity; a capacity's unused rows are padding (token -1, weight 0). */
__kernel void moe_place(__global const long *indices, __global const float *weights, __global const long *counts,
                        __global long *row_token, __global float *row_weight, ulong choices, uint experts,
                        ulong capacity) {
  const uint e = get_global_id(0);
  if (e >= experts)
    return;
  ulong start = 0;
  for (uint q = 0; q < e; q++)
    start += capacity > 0 ? capacity : (ulong)counts[q];
  const ulong limit = capacity > 0 ? capacity : (ulong)counts[e];
  ulong n = 0;
  for (ulong i = 0; i < choices && n < limit; i++)
    if (indices[i] == (long)e) {
      row_token[start + n] = (long)i;
      row_weight[start + n] = weights[i];
      n++;
    }
  for (; n < limit; n++) {
    row_token[start + n] = -1;
    row_weight[start + n] = 0.0f;
  }
}

/* inv[row_token[r]] = r, one item per row (inv is filled with -1 first). */
__kernel void moe_invert(__global const long *row_token, __global long *inv, ulong rows) {
  const ulong r = get_global_id(0);
  if (r < rows && row_token[r] >= 0)
    inv[row_token[r]] = (long)r;
}

/* Item (r, col): dst[r] = src[token of r] (· scale[r] when has_scale);
 * zeros for padding rows. Dispatch forward; combine backward's rows. */
__kernel void moe_gather(__global const long *row_token, __global const act_t *src, __global const float *scale,
                         uint has_scale, __global act_t *dst, ulong rows, uint hidden, uint k) {
  const ulong i = get_global_id(0), r = i / hidden;
  const uint col = i % hidden;
  if (r >= rows)
    return;
  const long choice = row_token[r];
  float v = 0.0f;
  if (choice >= 0)
    v = act_load(src, (ulong)(choice / k) * hidden + col) * (has_scale ? scale[r] : 1.0f);
  act_store(dst, r * hidden + col, v);
}

/* Item (t, col): out[t] = Σ over the token's slots j in order of
 * (scale[r] ·) y[r], r = inv[t·k + j], dropped choices left out. Combine
 * forward; dispatch backward's token gradient. */
__kernel void moe_combine(__global const long *inv, __global const act_t *y, __global const float *scale,
                          uint has_scale, __global act_t *out, ulong tokens, uint hidden, uint k) {
  const ulong i = get_global_id(0), t = i / hidden;
  const uint col = i % hidden;
  if (t >= tokens)
    return;
  float sum = 0.0f;
  for (uint j = 0; j < k; j++) {
    const long r = inv[t * k + j];
    if (r >= 0)
      sum += (has_scale ? scale[r] : 1.0f) * act_load(y, (ulong)r * hidden + col);
  }
  act_store(out, t * hidden + col, sum);
}

/* One item per row: drow[r] (+)= dout[token of r] · y[r] (the gradient of
 * a row's combine weight); 0 for padding rows. */
__kernel void moe_row_dot(__global const long *row_token, __global const act_t *dout, __global const act_t *y,
                          __global float *drow, uint accumulate, ulong rows, uint hidden, uint k) {
  const ulong r = get_global_id(0);
  if (r >= rows)
    return;
  const long choice = row_token[r];
  float sum = 0.0f;
  if (choice >= 0)
    for (uint col = 0; col < hidden; col++)
      sum += act_load(dout, (ulong)(choice / k) * hidden + col) * act_load(y, r * hidden + col);
  drow[r] = (accumulate ? drow[r] : 0.0f) + sum;
}

/* One item per choice: dchoice[i] (+)= drow[inv[i]] (0 when dropped). */
__kernel void moe_unpermute(__global const long *inv, __global const float *drow, __global float *dchoice,
                            uint accumulate, ulong choices) {
  const ulong i = get_global_id(0);
  if (i >= choices)
    return;
  const long r = inv[i];
  dchoice[i] = (accumulate ? dchoice[i] : 0.0f) + (r >= 0 ? drow[r] : 0.0f);
}

/* (pointwise.cl, later in the program, has its own sigmoid.) */
inline float moe_sigmoid(float x) {
  return 1.0f / (1.0f + exp(-x));
}

/* Qwen2-MoE's shared-expert gate: out[t] = y[t] · sigmoid(g[t]). */
__kernel void moe_gate_fwd(__global const act_t *y, __global const act_t *g, __global act_t *out, ulong tokens,
                           uint hidden) {
  const ulong i = get_global_id(0), t = i / hidden;
  if (t < tokens)
    act_store(out, i, act_load(y, i) * moe_sigmoid(act_load(g, t)));
}

/* dy[t] = dout[t] · s and, one item per (t, col) with col 0 summing the
 * row in order, dg[t] = Σ dout·y · s(1 - s), s = sigmoid(g[t]). */
__kernel void moe_gate_bwd(__global const act_t *y, __global const act_t *g, __global const act_t *dout,
                           __global act_t *dy, __global act_t *dg, ulong tokens, uint hidden) {
  const ulong i = get_global_id(0), t = i / hidden;
  if (t >= tokens)
    return;
  const float s = moe_sigmoid(act_load(g, t));
  act_store(dy, i, act_load(dout, i) * s);
  if (i % hidden != 0)
    return;
  float sum = 0.0f;
  for (uint col = 0; col < hidden; col++)
    sum += act_load(dout, t * hidden + col) * act_load(y, t * hidden + col);
  act_store(dg, t, sum * s * (1.0f - s));
}
