/* Batched GEMM: C = alpha·op(A)·op(B) + beta·C (+ bias per column), with
 * op(X) = X or Xᵀ as stored, tiled through local memory.
 *
 * A work-group computes a GEMM_TM × GEMM_TN tile of C, staging GEMM_TK-deep
 * slices of A and B in local memory; each of its (GEMM_TN/GEMM_WN) ×
 * (GEMM_TM/GEMM_WM) items keeps a GEMM_WM × GEMM_WN block of accumulators
 * in registers, one float vector per row. Every element of C adds its k
 * products in increasing k with a fixed multiply-add: results are
 * reproducible bit for bit.
 *
 * Batch entry z (global dimension 2) is outer = z / inner, head = z % inner;
 * an operand starts at offset + outer·stride + (head / group)·head_stride,
 * which covers plain strided batches (inner = 1), heads inside a token-major
 * tensor, and grouped-query attention (K and V shared by `group` heads).
 *
 * A big GEMM is launched in chunks (cl-gemm.c) over ranges of batch entries,
 * tile rows and tile columns: global offsets in dimensions 2, 1 and 0, which
 * get_global_id() includes and get_group_id() does not (hence row0, col0). */

#ifndef GEMM_TM
#define GEMM_TM 64
#endif
#ifndef GEMM_TN
#define GEMM_TN 64
#endif
#ifndef GEMM_TK
#define GEMM_TK 16
#endif
#ifndef GEMM_WM
#define GEMM_WM 4
#endif
#ifndef GEMM_WN
#define GEMM_WN 4
#endif
#if GEMM_WN != 2 && GEMM_WN != 4 && GEMM_WN != 8 && GEMM_WN != 16
#error "GEMM_WN must be an OpenCL vector width: 2, 4, 8 or 16"
#endif
#define GEMM_LX (GEMM_TN / GEMM_WN)
#define GEMM_LY (GEMM_TM / GEMM_WM)
#define GEMM_ITEMS (GEMM_LX * GEMM_LY)

inline ulong gemm_base(ulong offset, ulong stride, ulong head_stride, uint group, uint inner, uint z) {
  return offset + (ulong)(z / inner) * stride + (ulong)((z % inner) / group) * head_stride;
}

/* Vector types of GEMM_WN floats: each item's columns are contiguous, so a
 * row of its block is one vector and the compiler emits SIMD multiply-adds
 * (CPU devices do not vectorise across work-items inside loops). */
#define GEMM_CAT2(a, b) a##b
#define GEMM_CAT(a, b) GEMM_CAT2(a, b)
#define floatW GEMM_CAT(float, GEMM_WN)
#define vloadW GEMM_CAT(vload, GEMM_WN)
#define vstoreW GEMM_CAT(vstore, GEMM_WN)

/* Accumulate the tile at (row0, col0) into acc. As holds A's tile k-major
 * (As[kk·TM + row]) and Bs B's (Bs[kk·TN + col]); out-of-range elements
 * load as zero on both sides, so they add exact zeros. Item (tx, ty) owns
 * rows ty·WM .. +WM and columns tx·WN .. +WN of the tile. */
inline void gemm_accumulate(floatW acc[GEMM_WM], __global const act_t *a, ulong a_base, ulong lda,
                            uint trans_a, __global const act_t *b, ulong b_base, ulong ldb, uint trans_b, uint m,
                            uint n, uint k, uint row0, uint col0, __local float *As, __local float *Bs) {
  const uint tx = get_local_id(0), ty = get_local_id(1);
  const uint tid = ty * GEMM_LX + tx;
  for (uint k0 = 0; k0 < k; k0 += GEMM_TK) {
    for (uint l = tid; l < GEMM_TM * GEMM_TK; l += GEMM_ITEMS) {
      /* Walk the stored layout's contiguous dimension with neighbouring items. */
      const uint mm = trans_a ? l % GEMM_TM : l / GEMM_TK;
      const uint kk = trans_a ? l / GEMM_TM : l % GEMM_TK;
      const uint gm = row0 + mm, gk = k0 + kk;
      float v = 0.0f;
      if (gm < m && gk < k)
        v = act_load(a, a_base + (trans_a ? (ulong)gk * lda + gm : (ulong)gm * lda + gk));
      As[kk * GEMM_TM + mm] = v;
    }
    for (uint l = tid; l < GEMM_TK * GEMM_TN; l += GEMM_ITEMS) {
      const uint nn = trans_b ? l / GEMM_TK : l % GEMM_TN;
      const uint kk = trans_b ? l % GEMM_TK : l / GEMM_TN;
      const uint gn = col0 + nn, gk = k0 + kk;
      float v = 0.0f;
      if (gn < n && gk < k)
        v = act_load(b, b_base + (trans_b ? (ulong)gn * ldb + gk : (ulong)gk * ldb + gn));
      Bs[kk * GEMM_TN + nn] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint kk = 0; kk < GEMM_TK; kk++) {
      const floatW bv = vloadW(0, Bs + kk * GEMM_TN + tx * GEMM_WN);
      for (uint i = 0; i < GEMM_WM; i++)
        acc[i] = mad((floatW)(As[kk * GEMM_TM + ty * GEMM_WM + i]), bv, acc[i]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

/* The arguments both variants take, in order. */
#define GEMM_ARGS                                                                                                 \
  __global const act_t *a, ulong a_offset, ulong lda, ulong a_stride, ulong a_head_stride, uint a_group,         \
      uint trans_a, __global const act_t *b, ulong b_offset, ulong ldb, ulong b_stride, ulong b_head_stride,     \
      uint b_group, uint trans_b

#define GEMM_PROLOGUE                                                                                             \
  __local float As[GEMM_TK * GEMM_TM];                                                                            \
  __local float Bs[GEMM_TK * GEMM_TN];                                                                            \
  const uint z = get_global_id(2);                                                                                \
  const uint row0 = (get_group_id(1) + get_global_offset(1) / GEMM_LY) * GEMM_TM;                                 \
  const uint col0 = (get_group_id(0) + get_global_offset(0) / GEMM_LX) * GEMM_TN;                                 \
  const uint tx = get_local_id(0), ty = get_local_id(1);                                                          \
  floatW acc[GEMM_WM];                                                                                            \
  for (uint i = 0; i < GEMM_WM; i++)                                                                              \
    acc[i] = (floatW)(0.0f);                                                                                      \
  gemm_accumulate(acc, a, gemm_base(a_offset, a_stride, a_head_stride, a_group, inner, z), lda, trans_a, b,      \
                  gemm_base(b_offset, b_stride, b_head_stride, b_group, inner, z), ldb, trans_b, m, n, k, row0,  \
                  col0, As, Bs);                                                                                  \
  const ulong c_base = gemm_base(c_offset, c_stride, c_head_stride, 1, inner, z)

/* C stored as activations (forward outputs, activation gradients). */
__kernel __attribute__((reqd_work_group_size(GEMM_LX, GEMM_LY, 1))) void
gemm_act(GEMM_ARGS, __global act_t *c, ulong c_offset, ulong ldc, ulong c_stride, ulong c_head_stride,
         __global const act_t *bias, uint has_bias, uint inner, uint m, uint n, uint k, float alpha, float beta) {
  GEMM_PROLOGUE;
  for (uint i = 0; i < GEMM_WM; i++) {
    const uint row = row0 + ty * GEMM_WM + i;
    float values[GEMM_WN];
    vstoreW(acc[i], 0, values);
    for (uint j = 0; j < GEMM_WN; j++) {
      const uint col = col0 + tx * GEMM_WN + j;
      if (row >= m || col >= n)
        continue;
      const ulong at = c_base + (ulong)row * ldc + col;
      float v = alpha * values[j];
      if (beta != 0.0f)
        v += beta * act_load(c, at);
      if (has_bias)
        v += act_load(bias, col);
      act_store(c, at, v);
    }
  }
}

/* C stored as fp32 (weight gradients, accumulated with beta = 1). */
__kernel __attribute__((reqd_work_group_size(GEMM_LX, GEMM_LY, 1))) void
gemm_f32(GEMM_ARGS, __global float *c, ulong c_offset, ulong ldc, ulong c_stride, ulong c_head_stride,
         __global const act_t *bias, uint has_bias, uint inner, uint m, uint n, uint k, float alpha, float beta) {
  GEMM_PROLOGUE;
  for (uint i = 0; i < GEMM_WM; i++) {
    const uint row = row0 + ty * GEMM_WM + i;
    float values[GEMM_WN];
    vstoreW(acc[i], 0, values);
    for (uint j = 0; j < GEMM_WN; j++) {
      const uint col = col0 + tx * GEMM_WN + j;
      if (row >= m || col >= n)
        continue;
      const ulong at = c_base + (ulong)row * ldc + col;
      float v = alpha * values[j];
      if (beta != 0.0f)
        v += beta * c[at];
      if (has_bias)
        v += act_load(bias, col);
      c[at] = v;
    }
  }
}
