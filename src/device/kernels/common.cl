/* Shared by every kernel: the activation element type, 16-bit float
 * conversions, work-group reductions in a fixed order, and the Philox4x32-10
 * counter-based generator.
 *
 * Build options (set by cl-kernels.c):
 *   ROK_ACT_BF16 | ROK_ACT_FP16 | ROK_ACT_FP32  activation storage type
 *   ROK_WG       work-group size of the row kernels (a power of two)
 * Everything is computed in float; 16-bit values are converted on load and
 * rounded to nearest even on store. The host mirrors the conversions and the
 * generator in cl-numeric.c. */

#if defined(ROK_ACT_BF16)
typedef ushort act_t;
#elif defined(ROK_ACT_FP16)
typedef half act_t;
#elif defined(ROK_ACT_FP32)
typedef float act_t;
#else
#error "build with -DROK_ACT_BF16, -DROK_ACT_FP16 or -DROK_ACT_FP32"
#endif

#ifndef ROK_WG
#define ROK_WG 64
#endif

inline float bf16_to_float(ushort bits) {
  return as_float((uint)bits << 16);
}

/* Round to nearest, ties to even; NaN stays a (quiet) NaN. */
inline ushort float_to_bf16(float value) {
  uint bits = as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return (ushort)((bits >> 16) | 0x0040u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (ushort)(bits >> 16);
}

inline float act_load(__global const act_t *p, ulong i) {
#if defined(ROK_ACT_BF16)
  return bf16_to_float(p[i]);
#elif defined(ROK_ACT_FP16)
  return vload_half(i, p);
#else
  return p[i];
#endif
}

inline void act_store(__global act_t *p, ulong i, float value) {
#if defined(ROK_ACT_BF16)
  p[i] = float_to_bf16(value);
#elif defined(ROK_ACT_FP16)
  vstore_half_rte(value, i, p);
#else
  p[i] = value;
#endif
}

/* Sum and maximum over a work-group of ROK_WG items: a binary tree with
 * fixed pairs, so the result never depends on scheduling. Every item must
 * call them (they hold barriers). */
inline float wg_sum(float value, __local float *scratch) {
  const uint lid = get_local_id(0);
  scratch[lid] = value;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint half_size = ROK_WG / 2; half_size > 0; half_size >>= 1) {
    if (lid < half_size)
      scratch[lid] += scratch[lid + half_size];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float result = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return result;
}

inline float wg_max(float value, __local float *scratch) {
  const uint lid = get_local_id(0);
  scratch[lid] = value;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint half_size = ROK_WG / 2; half_size > 0; half_size >>= 1) {
    if (lid < half_size)
      scratch[lid] = fmax(scratch[lid], scratch[lid + half_size]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float result = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return result;
}

/* Philox4x32-10 (Salmon et al., SC'11): ten rounds, the key bumped by the
 * Weyl constants between rounds. */
inline uint4 philox4x32_10(uint4 ctr, uint2 key) {
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      key.x += 0x9E3779B9u;
      key.y += 0xBB67AE85u;
    }
    const uint hi0 = mul_hi(0xD2511F53u, ctr.x), lo0 = 0xD2511F53u * ctr.x;
    const uint hi1 = mul_hi(0xCD9E8D57u, ctr.z), lo1 = 0xCD9E8D57u * ctr.z;
    ctr = (uint4)(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
  }
  return ctr;
}

/* The four random words of block `block` of stream `stream`: element e of a
 * stream uses word e % 4 of block e / 4. A pure function of (seed, stream,
 * e): regenerating a dropout mask gives the same bits. */
inline uint4 rok_random4(uint2 seed, ulong stream, ulong block) {
  return philox4x32_10((uint4)((uint)block, (uint)(block >> 32), (uint)stream, (uint)(stream >> 32)), seed);
}

inline uint rok_random(uint2 seed, ulong stream, ulong element) {
  const uint4 r = rok_random4(seed, stream, element >> 2);
  switch ((uint)(element & 3)) {
  case 0:
    return r.x;
  case 1:
    return r.y;
  case 2:
    return r.z;
  default:
    return r.w;
  }
}

/* Uniform in [0, 1) from the top 24 bits: exact in float. */
inline float rok_uniform(uint bits) {
  return (float)(bits >> 8) * (1.0f / 16777216.0f);
}
