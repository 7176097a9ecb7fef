/* LayerNorm and RMSNorm over the last dimension, forward and backward, and
 * the column sums their parameter gradients (and a linear bias's) need.
 * Saved statistics are fp32 per row: LayerNorm's [rows, 2] = (mean, rstd),
 * RMSNorm's [rows] = rstd (the trace's `_stats` tensors).
 *
 * Row kernels: one work-group of ROK_WG items per row; item i takes columns
 * i, i + ROK_WG, ... in order, then wg_sum() combines the items in a fixed
 * tree. Column kernels: one item per column, rows summed in increasing
 * order, the total added once to the fp32 gradient. Both are reproducible bit
 * for bit and need no atomics. */

__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
layernorm_fwd(__global const act_t *x, __global const act_t *gamma, __global const act_t *beta, __global act_t *y,
              __global float *stats, uint cols, float eps) {
  __local float scratch[ROK_WG];
  const ulong row = get_group_id(0), base = row * cols;
  const uint lid = get_local_id(0);
  float sum = 0.0f;
  for (uint j = lid; j < cols; j += ROK_WG)
    sum += act_load(x, base + j);
  const float mean = wg_sum(sum, scratch) / (float)cols;
  float squares = 0.0f;
  for (uint j = lid; j < cols; j += ROK_WG) {
    const float d = act_load(x, base + j) - mean;
    squares = mad(d, d, squares);
  }
  const float rstd = 1.0f / sqrt(wg_sum(squares, scratch) / (float)cols + eps);
  for (uint j = lid; j < cols; j += ROK_WG) {
    const float xhat = (act_load(x, base + j) - mean) * rstd;
    act_store(y, base + j, mad(xhat, act_load(gamma, j), act_load(beta, j)));
  }
  if (lid == 0) {
    stats[2 * row] = mean;
    stats[2 * row + 1] = rstd;
  }
}

/* dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·gamma. */
__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
layernorm_bwd(__global const act_t *x, __global const act_t *gamma, __global const float *stats,
              __global const act_t *dy, __global act_t *dx, uint cols) {
  __local float scratch[ROK_WG];
  const ulong row = get_group_id(0), base = row * cols;
  const uint lid = get_local_id(0);
  const float mean = stats[2 * row], rstd = stats[2 * row + 1];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (uint j = lid; j < cols; j += ROK_WG) {
    const float g = act_load(dy, base + j) * act_load(gamma, j);
    sum_g += g;
    sum_gx = mad(g, (act_load(x, base + j) - mean) * rstd, sum_gx);
  }
  const float mean_g = wg_sum(sum_g, scratch) / (float)cols;
  const float mean_gx = wg_sum(sum_gx, scratch) / (float)cols;
  for (uint j = lid; j < cols; j += ROK_WG) {
    const float g = act_load(dy, base + j) * act_load(gamma, j);
    const float xhat = (act_load(x, base + j) - mean) * rstd;
    act_store(dx, base + j, rstd * (g - mean_g - xhat * mean_gx));
  }
}

/* dgamma += Σ dy·x̂, dbeta += Σ dy over the rows. */
__kernel void layernorm_params_bwd(__global const act_t *x, __global const float *stats, __global const act_t *dy,
                                   __global float *dgamma, __global float *dbeta, uint rows, uint cols) {
  const uint col = get_global_id(0);
  if (col >= cols)
    return;
  float sum_gamma = 0.0f, sum_beta = 0.0f;
  for (uint r = 0; r < rows; r++) {
    const ulong at = (ulong)r * cols + col;
    const float g = act_load(dy, at);
    sum_gamma = mad(g, (act_load(x, at) - stats[2 * r]) * stats[2 * r + 1], sum_gamma);
    sum_beta += g;
  }
  dgamma[col] += sum_gamma;
  dbeta[col] += sum_beta;
}

__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
rmsnorm_fwd(__global const act_t *x, __global const act_t *gamma, __global act_t *y, __global float *rstd_out,
            uint cols, float eps) {
  __local float scratch[ROK_WG];
  const ulong row = get_group_id(0), base = row * cols;
  const uint lid = get_local_id(0);
  float squares = 0.0f;
  for (uint j = lid; j < cols; j += ROK_WG) {
    const float v = act_load(x, base + j);
    squares = mad(v, v, squares);
  }
  const float rstd = 1.0f / sqrt(wg_sum(squares, scratch) / (float)cols + eps);
  for (uint j = lid; j < cols; j += ROK_WG)
    act_store(y, base + j, act_load(x, base + j) * rstd * act_load(gamma, j));
  if (lid == 0)
    rstd_out[row] = rstd;
}

/* dx = rstd·(g − x̂·mean(g·x̂)) with g = dy·gamma, x̂ = x·rstd. */
__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
rmsnorm_bwd(__global const act_t *x, __global const act_t *gamma, __global const float *rstd_in,
            __global const act_t *dy, __global act_t *dx, uint cols) {
  __local float scratch[ROK_WG];
  const ulong row = get_group_id(0), base = row * cols;
  const uint lid = get_local_id(0);
  const float rstd = rstd_in[row];
  float sum_gx = 0.0f;
  for (uint j = lid; j < cols; j += ROK_WG)
    sum_gx = mad(act_load(dy, base + j) * act_load(gamma, j), act_load(x, base + j) * rstd, sum_gx);
  const float mean_gx = wg_sum(sum_gx, scratch) / (float)cols;
  for (uint j = lid; j < cols; j += ROK_WG) {
    const float g = act_load(dy, base + j) * act_load(gamma, j);
    act_store(dx, base + j, rstd * (g - act_load(x, base + j) * rstd * mean_gx));
  }
}

/* dgamma += Σ dy·x̂ over the rows. */
__kernel void rmsnorm_params_bwd(__global const act_t *x, __global const float *rstd_in, __global const act_t *dy,
                                 __global float *dgamma, uint rows, uint cols) {
  const uint col = get_global_id(0);
  if (col >= cols)
    return;
  float sum = 0.0f;
  for (uint r = 0; r < rows; r++) {
    const ulong at = (ulong)r * cols + col;
    sum = mad(act_load(dy, at), act_load(x, at) * rstd_in[r], sum);
  }
  dgamma[col] += sum;
}

/* dbias += Σ dy over the rows (a linear layer's bias gradient). */
__kernel void column_sum_bwd(__global const act_t *dy, __global float *dbias, uint rows, uint cols) {
  const uint col = get_global_id(0);
  if (col >= cols)
    return;
  float sum = 0.0f;
  for (uint r = 0; r < rows; r++)
    sum += act_load(dy, (ulong)r * cols + col);
  dbias[col] += sum;
}
