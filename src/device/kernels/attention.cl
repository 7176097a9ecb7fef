/* Fused ("flash") attention: O = dropout(softmax(scale·Q·Kᵀ + causal mask))·V
 * without materialising the probabilities. Forward saves the log-sum-exp
 * of each query row; backward recomputes the probabilities from it.
 *
 * Views: element (b, h, row, c) of a tensor is at
 *   offset + b·batch_stride + h·head_stride + row·row_stride + c.
 * Q, O, dO, dQ have `heads` heads; K, V, dK, dV have heads / group (grouped-
 * query attention: head h reads K/V head h / group). lse and delta are fp32
 * [batch·heads, queries].
 *
 * Causal: query i sees key j when j <= i + keys − queries. Dropout on the
 * probabilities: element (bh, i, j) is kept when word (bh·queries + i)·keys + j
 * of the Philox stream is at least `threshold` — the same mask dropout_mask
 * would write for a [batch·heads, queries, keys] tensor.
 *
 * Work: forward and dQ give an item a query row and a work-group FA_BQ rows,
 * staging tiles of bk keys in local memory; dK/dV give an item a key row and
 * walk the queries of every head that shares it. Each output is summed by
 * one item in a fixed order: reproducible bit for bit, no atomics. */

#ifndef FA_BQ
#define FA_BQ 32
#endif
#ifndef FA_MAX_D
#define FA_MAX_D 256
#endif
#ifndef FA_MAX_BK
#define FA_MAX_BK 32
#endif

#define VIEW(name) ulong name##_offset, ulong name##_row, ulong name##_batch, ulong name##_head
#define IN_VIEW(name) __global const act_t *name, VIEW(name)
#define OUT_VIEW(name) __global act_t *name, VIEW(name)
#define VIEW_BASE(name, b, h) (name##_offset + (ulong)(b)*name##_batch + (ulong)(h)*name##_head)

#define ATTN_PARAMS                                                                                               \
  uint heads, uint group, uint sq, uint sk, uint d, uint causal, float scale, uint use_dropout, uint threshold, \
      float drop_scale, uint2 seed, ulong stream

/* One past the last key query i sees. */
inline uint attn_key_end(uint i, uint sq, uint sk, uint causal) {
  if (!causal)
    return sk;
  return (uint)clamp((long)i + (long)sk - (long)sq + 1, 0L, (long)sk);
}

/* The first query that sees key j. */
inline uint attn_query_begin(uint j, uint sq, uint sk, uint causal) {
  if (!causal)
    return 0;
  return (uint)clamp((long)j - (long)sk + (long)sq, 0L, (long)sq);
}

/* The factor dropout applies to probability (bh, i, j): 0 or 1/(1−p). */
inline float attn_keep(uint use_dropout, uint threshold, float drop_scale, uint2 seed, ulong stream, ulong element) {
  if (!use_dropout)
    return 1.0f;
  return rok_random(seed, stream, element) >= threshold ? drop_scale : 0.0f;
}

inline float dot_local(const float *a, __local const float *b, uint d) {
  float sum = 0.0f;
  for (uint c = 0; c < d; c++)
    sum = mad(a[c], b[c], sum);
  return sum;
}

/* Stage rows j0 .. j0+tile-1 of two K/V-like views into local memory. */
inline void attn_stage(__local float *dst_a, __global const act_t *a, ulong a_base, ulong a_row,
                       __local float *dst_b, __global const act_t *b, ulong b_base, ulong b_row, uint j0, uint tile,
                       uint d, uint items) {
  for (uint l = get_local_id(0); l < tile * d; l += items) {
    const uint jj = l / d, c = l % d;
    dst_a[l] = act_load(a, a_base + (ulong)(j0 + jj) * a_row + c);
    dst_b[l] = act_load(b, b_base + (ulong)(j0 + jj) * b_row + c);
  }
}

__kernel __attribute__((reqd_work_group_size(FA_BQ, 1, 1))) void
attn_fwd(IN_VIEW(q), IN_VIEW(k), IN_VIEW(v), OUT_VIEW(o), __global float *lse, ATTN_PARAMS, __local float *kt,
         __local float *vt, uint bk) {
  const uint i = get_global_id(0), bh = get_global_id(1);
  const uint b = bh / heads, h = bh % heads;
  const ulong qb = VIEW_BASE(q, b, h), kb = VIEW_BASE(k, b, h / group), vb = VIEW_BASE(v, b, h / group);
  const bool active = i < sq;
  float qv[FA_MAX_D], acc[FA_MAX_D];
  for (uint c = 0; c < d; c++) {
    qv[c] = active ? act_load(q, qb + (ulong)i * q_row + c) : 0.0f;
    acc[c] = 0.0f;
  }
  float top = -INFINITY, total = 0.0f;
  const uint end = active ? attn_key_end(i, sq, sk, causal) : 0;
  const uint last = min((uint)get_group_id(0) * FA_BQ + FA_BQ, sq) - 1;
  const uint group_end = attn_key_end(last, sq, sk, causal);
  const ulong element = ((ulong)bh * sq + i) * sk;
  for (uint j0 = 0; j0 < group_end; j0 += bk) {
    const uint tile = min(bk, group_end - j0);
    attn_stage(kt, k, kb, k_row, vt, v, vb, v_row, j0, tile, d, FA_BQ);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (j0 < end) {
      const uint count = min(tile, end - j0);
      float s[FA_MAX_BK];
      float new_top = top;
      for (uint jj = 0; jj < count; jj++) {
        s[jj] = scale * dot_local(qv, kt + jj * d, d);
        new_top = fmax(new_top, s[jj]);
      }
      /* Rescale what was summed under the old maximum. */
      const float correction = top == -INFINITY ? 0.0f : exp(top - new_top);
      total *= correction;
      for (uint c = 0; c < d; c++)
        acc[c] *= correction;
      for (uint jj = 0; jj < count; jj++) {
        const float p = exp(s[jj] - new_top);
        total += p;
        const float weight = p * attn_keep(use_dropout, threshold, drop_scale, seed, stream, element + j0 + jj);
        if (weight != 0.0f)
          for (uint c = 0; c < d; c++)
            acc[c] = mad(weight, vt[jj * d + c], acc[c]);
      }
      top = new_top;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!active)
    return;
  const ulong ob = VIEW_BASE(o, b, h) + (ulong)i * o_row;
  const float inverse = total > 0.0f ? 1.0f / total : 0.0f;
  for (uint c = 0; c < d; c++)
    act_store(o, ob + c, acc[c] * inverse);
  lse[(ulong)bh * sq + i] = total > 0.0f ? top + log(total) : -INFINITY;
}

/* delta[bh, i] = Σ_c dO·O: the row term of the softmax backward. */
__kernel void attn_bwd_delta(IN_VIEW(o), IN_VIEW(dout), __global float *delta, uint heads, uint sq, uint d) {
  const uint i = get_global_id(0), bh = get_global_id(1);
  if (i >= sq)
    return;
  const uint b = bh / heads, h = bh % heads;
  const ulong ob = VIEW_BASE(o, b, h) + (ulong)i * o_row, gb = VIEW_BASE(dout, b, h) + (ulong)i * dout_row;
  float sum = 0.0f;
  for (uint c = 0; c < d; c++)
    sum = mad(act_load(dout, gb + c), act_load(o, ob + c), sum);
  delta[(ulong)bh * sq + i] = sum;
}

/* dQ_i = scale · Σ_j P_ij (dP_ij − delta_i) K_j, dP_ij = keep_ij · dO_i·V_j. */
__kernel __attribute__((reqd_work_group_size(FA_BQ, 1, 1))) void
attn_bwd_dq(IN_VIEW(q), IN_VIEW(k), IN_VIEW(v), IN_VIEW(dout), OUT_VIEW(dq), __global const float *lse,
            __global const float *delta, ATTN_PARAMS, __local float *kt, __local float *vt, uint bk) {
  const uint i = get_global_id(0), bh = get_global_id(1);
  const uint b = bh / heads, h = bh % heads;
  const ulong qb = VIEW_BASE(q, b, h), kb = VIEW_BASE(k, b, h / group), vb = VIEW_BASE(v, b, h / group);
  const ulong gb = VIEW_BASE(dout, b, h);
  const bool active = i < sq;
  float qv[FA_MAX_D], gv[FA_MAX_D], acc[FA_MAX_D];
  for (uint c = 0; c < d; c++) {
    qv[c] = active ? act_load(q, qb + (ulong)i * q_row + c) : 0.0f;
    gv[c] = active ? act_load(dout, gb + (ulong)i * dout_row + c) : 0.0f;
    acc[c] = 0.0f;
  }
  const float row_lse = active ? lse[(ulong)bh * sq + i] : -INFINITY;
  const float row_delta = active ? delta[(ulong)bh * sq + i] : 0.0f;
  const uint end = active && row_lse != -INFINITY ? attn_key_end(i, sq, sk, causal) : 0;
  const uint last = min((uint)get_group_id(0) * FA_BQ + FA_BQ, sq) - 1;
  const uint group_end = attn_key_end(last, sq, sk, causal);
  const ulong element = ((ulong)bh * sq + i) * sk;
  for (uint j0 = 0; j0 < group_end; j0 += bk) {
    const uint tile = min(bk, group_end - j0);
    attn_stage(kt, k, kb, k_row, vt, v, vb, v_row, j0, tile, d, FA_BQ);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint count = j0 < end ? min(tile, end - j0) : 0;
    for (uint jj = 0; jj < count; jj++) {
      const float p = exp(scale * dot_local(qv, kt + jj * d, d) - row_lse);
      const float keep = attn_keep(use_dropout, threshold, drop_scale, seed, stream, element + j0 + jj);
      const float ds = p * (keep * dot_local(gv, vt + jj * d, d) - row_delta);
      for (uint c = 0; c < d; c++)
        acc[c] = mad(ds, kt[jj * d + c], acc[c]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!active)
    return;
  const ulong out = VIEW_BASE(dq, b, h) + (ulong)i * dq_row;
  for (uint c = 0; c < d; c++)
    act_store(dq, out + c, scale * acc[c]);
}

/* dV_j = Σ_i keep_ij P_ij dO_i and dK_j = scale · Σ_i P_ij (dP_ij − delta_i) Q_i,
 * over the queries of every head sharing K/V head (b, kvh), heads in order. */
__kernel __attribute__((reqd_work_group_size(FA_BQ, 1, 1))) void
attn_bwd_dkv(IN_VIEW(q), IN_VIEW(k), IN_VIEW(v), IN_VIEW(dout), OUT_VIEW(dk), OUT_VIEW(dv),
             __global const float *lse, __global const float *delta, ATTN_PARAMS, __local float *qt,
             __local float *gt, uint bq) {
  __local float lse_t[FA_MAX_BK], delta_t[FA_MAX_BK];
  const uint j = get_global_id(0), bkv = get_global_id(1);
  const uint kv_heads = heads / group, b = bkv / kv_heads, kvh = bkv % kv_heads;
  const bool active = j < sk;
  const ulong kb = VIEW_BASE(k, b, kvh), vb = VIEW_BASE(v, b, kvh);
  float kv[FA_MAX_D], vv[FA_MAX_D], dkv[FA_MAX_D], dvv[FA_MAX_D];
  for (uint c = 0; c < d; c++) {
    kv[c] = active ? act_load(k, kb + (ulong)j * k_row + c) : 0.0f;
    vv[c] = active ? act_load(v, vb + (ulong)j * v_row + c) : 0.0f;
    dkv[c] = 0.0f;
    dvv[c] = 0.0f;
  }
  const uint begin = active ? attn_query_begin(j, sq, sk, causal) : sq;
  const uint group_begin = attn_query_begin(min((uint)get_group_id(0) * FA_BQ, sk - 1), sq, sk, causal);
  for (uint hh = 0; hh < group; hh++) {
    const uint h = kvh * group + hh, bh = b * heads + h;
    const ulong qb = VIEW_BASE(q, b, h), gb = VIEW_BASE(dout, b, h);
    for (uint i0 = group_begin; i0 < sq; i0 += bq) {
      const uint tile = min(bq, sq - i0);
      attn_stage(qt, q, qb, q_row, gt, dout, gb, dout_row, i0, tile, d, FA_BQ);
      for (uint l = get_local_id(0); l < tile; l += FA_BQ) {
        lse_t[l] = lse[(ulong)bh * sq + i0 + l];
        delta_t[l] = delta[(ulong)bh * sq + i0 + l];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint ii = 0; ii < tile; ii++) {
        const uint i = i0 + ii;
        if (i < begin || lse_t[ii] == -INFINITY)
          continue;
        const float p = exp(scale * dot_local(kv, qt + ii * d, d) - lse_t[ii]);
        const float keep = attn_keep(use_dropout, threshold, drop_scale, seed, stream, ((ulong)bh * sq + i) * sk + j);
        const float ds = p * (keep * dot_local(vv, gt + ii * d, d) - delta_t[ii]);
        const float pv = p * keep;
        for (uint c = 0; c < d; c++) {
          dvv[c] = mad(pv, gt[ii * d + c], dvv[c]);
          dkv[c] = mad(ds, qt[ii * d + c], dkv[c]);
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  if (!active)
    return;
  const ulong kout = VIEW_BASE(dk, b, kvh) + (ulong)j * dk_row, vout = VIEW_BASE(dv, b, kvh) + (ulong)j * dv_row;
  for (uint c = 0; c < d; c++) {
    act_store(dk, kout + c, scale * dkv[c]);
    act_store(dv, vout + c, dvv[c]);
  }
}
