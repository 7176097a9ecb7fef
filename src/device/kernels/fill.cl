/* Deterministic initial values: weights, inputs, token ids. Element e of
 * stream `stream` draws word e of the Philox stream, so the contents are a
 * pure function of (seed, stream, e), identical on every device. */

__kernel void fill_uniform_act(__global act_t *out, ulong n, uint2 seed, ulong stream, float low, float high) {
  const ulong i = get_global_id(0);
  if (i < n)
    act_store(out, i, low + (high - low) * rok_uniform(rok_random(seed, stream, i)));
}

__kernel void fill_uniform_f32(__global float *out, ulong n, uint2 seed, ulong stream, float low, float high) {
  const ulong i = get_global_id(0);
  if (i < n)
    out[i] = low + (high - low) * rok_uniform(rok_random(seed, stream, i));
}

/* Ids in [0, vocab): 64 random bits (words 2i and 2i+1) modulo vocab. */
__kernel void fill_tokens(__global long *out, ulong n, uint2 seed, ulong stream, ulong vocab) {
  const ulong i = get_global_id(0);
  if (i >= n)
    return;
  const ulong bits = (ulong)rok_random(seed, stream, 2 * i) | ((ulong)rok_random(seed, stream, 2 * i + 1) << 32);
  out[i] = (long)(bits % vocab);
}
