/* Element-wise ops: GeLU (tanh approximation, as Megatron), ReLU, SwiGLU,
 * residual add and dropout, forward and backward. One item per element
 * (dropout: per four elements, one Philox block). */

#define GELU_C 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

__kernel void gelu_fwd(__global const act_t *x, __global act_t *y, ulong n) {
  const ulong i = get_global_id(0);
  if (i >= n)
    return;
  const float v = act_load(x, i);
  act_store(y, i, 0.5f * v * (1.0f + tanh(GELU_C * (v + GELU_A * v * v * v))));
}

__kernel void gelu_bwd(__global const act_t *x, __global const act_t *dy, __global act_t *dx, ulong n) {
  const ulong i = get_global_id(0);
  if (i >= n)
    return;
  const float v = act_load(x, i);
  const float t = tanh(GELU_C * (v + GELU_A * v * v * v));
  const float dt = GELU_C * (1.0f + 3.0f * GELU_A * v * v) * (1.0f - t * t);
  act_store(dx, i, act_load(dy, i) * (0.5f * (1.0f + t) + 0.5f * v * dt));
}

__kernel void relu_fwd(__global const act_t *x, __global act_t *y, ulong n) {
  const ulong i = get_global_id(0);
  if (i < n)
    act_store(y, i, fmax(act_load(x, i), 0.0f));
}

__kernel void relu_bwd(__global const act_t *x, __global const act_t *dy, __global act_t *dx, ulong n) {
  const ulong i = get_global_id(0);
  if (i < n)
    act_store(dx, i, act_load(x, i) > 0.0f ? act_load(dy, i) : 0.0f);
}

inline float sigmoid(float v) {
  return 1.0f / (1.0f + exp(-v));
}

/* x is [rows, 2·cols]: the gate in columns 0..cols-1, up in the rest;
 * y = silu(gate)·up is [rows, cols]. */
__kernel void swiglu_fwd(__global const act_t *x, __global act_t *y, ulong rows, uint cols) {
  const ulong i = get_global_id(0);
  if (i >= rows * cols)
    return;
  const ulong row = i / cols, col = i % cols, at = row * 2 * cols + col;
  const float gate = act_load(x, at), up = act_load(x, at + cols);
  act_store(y, i, gate * sigmoid(gate) * up);
}

__kernel void swiglu_bwd(__global const act_t *x, __global const act_t *dy, __global act_t *dx, ulong rows,
                         uint cols) {
  const ulong i = get_global_id(0);
  if (i >= rows * cols)
    return;
  const ulong row = i / cols, col = i % cols, at = row * 2 * cols + col;
  const float gate = act_load(x, at), up = act_load(x, at + cols), g = act_load(dy, i);
  const float s = sigmoid(gate);
  act_store(dx, at, g * up * s * (1.0f + gate * (1.0f - s)));
  act_store(dx, at + cols, g * gate * s);
}

/* out = a + b; out may be a or b (each item reads before it writes). */
__kernel void add_fwd(__global const act_t *a, __global const act_t *b, __global act_t *out, ulong n) {
  const ulong i = get_global_id(0);
  if (i < n)
    act_store(out, i, act_load(a, i) + act_load(b, i));
}

/* Element e is kept when its random word is at least `threshold`
 * (= round(p·2³²)): the mask is a pure function of (seed, stream, e).
 * Masks are 1, 2 or 4 bytes per element (the trace's mask width): element
 * e is the little-endian integer at bytes e·width.., 1 = kept. */
inline void mask_store(__global uchar *mask, uint width, ulong e, uchar keep) {
  mask[e * width] = keep;
  for (uint b = 1; b < width; b++)
    mask[e * width + b] = 0;
}

__kernel void dropout_fwd(__global const act_t *x, __global uchar *mask, uint width, __global act_t *y, ulong n,
                          uint2 seed, ulong stream, uint threshold, float scale) {
  const ulong block = get_global_id(0), first = block * 4;
  if (first >= n)
    return;
  const uint4 r = rok_random4(seed, stream, block);
  const uint words[4] = {r.x, r.y, r.z, r.w};
  for (uint l = 0; l < 4 && first + l < n; l++) {
    const uchar keep = words[l] >= threshold;
    mask_store(mask, width, first + l, keep);
    act_store(y, first + l, keep ? act_load(x, first + l) * scale : 0.0f);
  }
}

/* The mask alone: what dropout_fwd writes, regenerated. */
__kernel void dropout_mask(__global uchar *mask, uint width, ulong n, uint2 seed, ulong stream, uint threshold) {
  const ulong block = get_global_id(0), first = block * 4;
  if (first >= n)
    return;
  const uint4 r = rok_random4(seed, stream, block);
  const uint words[4] = {r.x, r.y, r.z, r.w};
  for (uint l = 0; l < 4 && first + l < n; l++)
    mask_store(mask, width, first + l, words[l] >= threshold);
}

/* Any nonzero byte of an element keeps it: the saved mask decides. */
__kernel void dropout_bwd(__global const uchar *mask, uint width, __global const act_t *dy, __global act_t *dx,
                          ulong n, float scale) {
  const ulong i = get_global_id(0);
  if (i >= n)
    return;
  uchar keep = 0;
  for (uint b = 0; b < width; b++)
    keep |= mask[i * width + b];
  act_store(dx, i, keep ? act_load(dy, i) * scale : 0.0f);
}
