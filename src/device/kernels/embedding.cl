/* Token (+ learned position) embedding: forward lookup and a deterministic
 * backward scatter.
 *
 * Token t has position t % seq_len (tokens are batch-major). Ids outside
 * [0, vocab) embed as zeros and are left out of the gradient.
 *
 * Backward without float atomics: a counting sort of the token indices by
 * id (integer counts, so their order of arrival does not matter), placing
 * each token at starts[id] + (how many earlier tokens share its id), which
 * keeps every id's tokens in increasing order; then one item per (id
 * segment, column) sums its segment in that order and adds the total to
 * the fp32 table gradient once. */

/* Launches are 1-D over (row, column) pairs, columns fastest: a GPU's
 * second and third grid dimensions are too small for token counts. */

__kernel void embedding_fwd(__global const long *ids, __global const act_t *table, __global const act_t *positions,
                            uint has_positions, __global act_t *y, uint hidden, ulong vocab, uint seq_len,
                            ulong tokens) {
  const ulong i = get_global_id(0), token = i / hidden;
  const uint col = i % hidden;
  if (token >= tokens)
    return;
  const long id = ids[token];
  float v = 0.0f;
  if (id >= 0 && (ulong)id < vocab) {
    v = act_load(table, (ulong)id * hidden + col);
    if (has_positions)
      v += act_load(positions, (ulong)(token % seq_len) * hidden + col);
  }
  act_store(y, token * hidden + col, v);
}

__kernel void embedding_count(__global const long *ids, __global uint *counts, ulong tokens, ulong vocab) {
  const ulong t = get_global_id(0);
  if (t >= tokens)
    return;
  const long id = ids[t];
  if (id >= 0 && (ulong)id < vocab)
    atomic_inc(&counts[id]);
}

/* Exclusive prefix sum of counts into starts, by one work-group of ROK_WG:
 * each item sums a contiguous chunk, the chunk totals are scanned in local
 * memory by item 0, then each item writes its chunk's starts. */
__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
embedding_scan(__global const uint *counts, __global uint *starts, ulong vocab) {
  __local uint totals[ROK_WG];
  const uint lid = get_local_id(0);
  const ulong chunk = (vocab + ROK_WG - 1) / ROK_WG;
  const ulong begin = min((ulong)lid * chunk, vocab), end = min(begin + chunk, vocab);
  uint total = 0;
  for (ulong v = begin; v < end; v++)
    total += counts[v];
  totals[lid] = total;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    uint running = 0;
    for (uint i = 0; i < ROK_WG; i++) {
      const uint here = totals[i];
      totals[i] = running;
      running += here;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  uint running = totals[lid];
  for (ulong v = begin; v < end; v++) {
    starts[v] = running;
    running += counts[v];
  }
}

/* order[starts[id] + rank] = t, rank = earlier tokens with the same id. The
 * ids are walked in tiles staged in local memory. */
__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
embedding_place(__global const long *ids, __global const uint *starts, __global uint *order, ulong tokens,
                ulong vocab) {
  __local long tile[ROK_WG];
  const ulong t = get_global_id(0);
  const uint lid = get_local_id(0);
  const long id = t < tokens ? ids[t] : -1;
  const ulong group_end = min((ulong)get_group_id(0) * ROK_WG + ROK_WG, tokens);
  uint rank = 0;
  for (ulong base = 0; base < group_end; base += ROK_WG) {
    tile[lid] = base + lid < tokens ? ids[base + lid] : -1;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = 0; i < ROK_WG; i++)
      rank += (base + i < t && tile[i] == id);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t < tokens && id >= 0 && (ulong)id < vocab)
    order[starts[id] + rank] = (uint)t;
}

/* Item (col, p): when sorted position p starts an id's segment, add the
 * segment's dy rows (in token order) to dtable[id]. Positions past the
 * placed tokens hold UINT_MAX (the buffer is filled with it first). */
__kernel void embedding_reduce(__global const long *ids, __global const uint *order, __global const uint *starts,
                               __global const uint *counts, __global const act_t *dy, __global float *dtable,
                               uint hidden, uint tokens) {
  const ulong i = get_global_id(0);
  const uint p = i / hidden, col = i % hidden;
  if (p >= tokens || order[p] == UINT_MAX)
    return;
  const long id = ids[order[p]];
  if (starts[id] != p)
    return;
  float sum = 0.0f;
  for (uint q = p; q < p + counts[id]; q++)
    sum += act_load(dy, (ulong)order[q] * hidden + col);
  dtable[(ulong)id * hidden + col] += sum;
}

/* dpositions[pos] += Σ over batch entries b of dy[b·seq_len + pos]. */
__kernel void embedding_positions_bwd(__global const act_t *dy, __global float *dpositions, uint hidden,
                                      ulong tokens, uint seq_len) {
  const ulong i = get_global_id(0);
  const uint pos = i / hidden, col = i % hidden;
  if (pos >= seq_len)
    return;
  float sum = 0.0f;
  for (ulong t = pos; t < tokens; t += seq_len)
    sum += act_load(dy, t * hidden + col);
  dpositions[(ulong)pos * hidden + col] += sum;
}
