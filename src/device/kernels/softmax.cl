/* Softmax over the last dimension of scores, with an optional scale and
 * causal mask, and its backward. One work-group of ROK_WG items per row.
 *
 * Causal: rows come in blocks of `queries` (one block per batch entry and
 * head); row r is query q = r % queries, and key j is visible when
 * j <= q + cols − queries (the last query sees every key). Masked entries
 * output exactly zero. */

/* Number of keys row `row` may see. */
inline uint softmax_visible(ulong row, uint cols, uint queries, uint causal) {
  if (!causal)
    return cols;
  const long q = (long)(row % queries);
  const long visible = q + (long)cols - (long)queries + 1;
  return (uint)clamp(visible, 0L, (long)cols);
}

__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
softmax_fwd(__global const act_t *x, __global act_t *y, uint cols, uint queries, uint causal, float scale) {
  __local float scratch[ROK_WG];
  const ulong row = get_group_id(0), base = row * cols;
  const uint lid = get_local_id(0);
  const uint visible = softmax_visible(row, cols, queries, causal);
  float top = -INFINITY;
  for (uint j = lid; j < visible; j += ROK_WG)
    top = fmax(top, scale * act_load(x, base + j));
  top = wg_max(top, scratch);
  float sum = 0.0f;
  for (uint j = lid; j < visible; j += ROK_WG)
    sum += exp(scale * act_load(x, base + j) - top);
  sum = wg_sum(sum, scratch);
  const float inverse = visible > 0 ? 1.0f / sum : 0.0f;
  for (uint j = lid; j < cols; j += ROK_WG)
    act_store(y, base + j, j < visible ? exp(scale * act_load(x, base + j) - top) * inverse : 0.0f);
}

/* dx = scale·y·(dy − Σ y·dy); masked entries have y = 0 and get 0. */
__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
softmax_bwd(__global const act_t *y, __global const act_t *dy, __global act_t *dx, uint cols, float scale) {
  __local float scratch[ROK_WG];
  const ulong row = get_group_id(0), base = row * cols;
  const uint lid = get_local_id(0);
  float dot = 0.0f;
  for (uint j = lid; j < cols; j += ROK_WG)
    dot = mad(act_load(y, base + j), act_load(dy, base + j), dot);
  dot = wg_sum(dot, scratch);
  for (uint j = lid; j < cols; j += ROK_WG)
    act_store(dx, base + j, scale * act_load(y, base + j) * (act_load(dy, base + j) - dot));
}
