/* Integrity checksum of a buffer's bytes, the same value as
 * rok_cl_checksum_host() computes (cl-checksum.c).
 *
 * The bytes are read as little-endian 64-bit words (the last one padded with
 * zeros); word w contributes fmix64(word ^ (w·GOLDEN + SALT)), and the
 * contributions are summed modulo 2⁶⁴. fmix64 is a bijection, so changing
 * any single word (any flipped bit, any changed byte) always changes the
 * sum; the sum does not depend on the order of addition, so any split into
 * work-groups gives the same value. The result is fmix64(sum + bytes·GOLDEN),
 * which also tells lengths apart. */

#define CHECKSUM_GOLDEN 0x9E3779B97F4A7C15UL
#define CHECKSUM_SALT 0x632BE59BD9B4E019UL

inline ulong fmix64(ulong k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDUL;
  k ^= k >> 33;
  k *= 0xC4CEB9FE1A85EC53UL;
  k ^= k >> 33;
  return k;
}

/* Word w of the range, zero-padded past `bytes`. */
inline ulong checksum_word(__global const uchar *data, ulong w, ulong bytes) {
  if ((w + 1) * 8 <= bytes)
    return ((__global const ulong *)data)[w];
  ulong word = 0;
  for (uint b = 0; b < 8 && w * 8 + b < bytes; b++)
    word |= (ulong)data[w * 8 + b] << (8 * b);
  return word;
}

/* Pass 1: each work-group sums a strided share of the words into
 * partial[group] (a tree in local memory; integer sums are exact). */
__kernel __attribute__((reqd_work_group_size(ROK_WG, 1, 1))) void
checksum_partial(__global const uchar *buffer, ulong offset, ulong bytes, __global ulong *partial) {
  __local ulong scratch[ROK_WG];
  __global const uchar *data = buffer + offset;
  const ulong words = (bytes + 7) / 8;
  const uint lid = get_local_id(0);
  ulong sum = 0;
  for (ulong w = get_global_id(0); w < words; w += get_global_size(0))
    sum += fmix64(checksum_word(data, w, bytes) ^ (w * CHECKSUM_GOLDEN + CHECKSUM_SALT));
  scratch[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint half_size = ROK_WG / 2; half_size > 0; half_size >>= 1) {
    if (lid < half_size)
      scratch[lid] += scratch[lid + half_size];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    partial[get_group_id(0)] = scratch[0];
}

/* Pass 2 (one item): the final mix into result[slot]. */
__kernel void checksum_final(__global const ulong *partial, uint groups, ulong bytes, __global ulong *result,
                             uint slot) {
  if (get_global_id(0) != 0)
    return;
  ulong sum = 0;
  for (uint g = 0; g < groups; g++)
    sum += partial[g];
  result[slot] = fmix64(sum + bytes * CHECKSUM_GOLDEN);
}
