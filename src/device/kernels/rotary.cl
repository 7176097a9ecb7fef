/* Rotary position embedding (GPT-NeoX layout: dimension i pairs with
 * i + rot_dim/2 within each head), forward and backward (the inverse
 * rotation). Token t has position t % seq_len; pair i turns by
 * position · base^(−2i/rot_dim). Dimensions from rot_dim on pass through.
 *
 * Rows are tokens; a row holds `heads` heads of head_dim values, starting at
 * offset + t·ld. Each item owns one pair (or one pass-through value) and
 * reads before it writes, so y may be x (in place). */

__kernel void rotary(__global const act_t *x, ulong x_offset, ulong x_ld, __global act_t *y, ulong y_offset,
                     ulong y_ld, uint heads, uint head_dim, uint rot_dim, uint seq_len, float log2_base,
                     float sign, ulong rows) {
  const uint half_rot = rot_dim / 2, per_head = half_rot + (head_dim - rot_dim);
  /* 1-D over (token·heads + head, p): too many rows for a GPU's second grid
   * dimension. */
  const ulong item = get_global_id(0), row = item / per_head;
  const uint p = item % per_head;
  if (row >= rows)
    return;
  const ulong token = row / heads;
  const uint head = row % heads;
  const ulong xb = x_offset + token * x_ld + (ulong)head * head_dim;
  const ulong yb = y_offset + token * y_ld + (ulong)head * head_dim;
  if (p >= half_rot) {
    const uint i = p - half_rot + rot_dim;
    act_store(y, yb + i, act_load(x, xb + i));
    return;
  }
  const float inv_freq = exp2(-(float)(2 * p) / (float)rot_dim * log2_base);
  const float angle = (float)(token % seq_len) * inv_freq;
  const float c = cos(angle), s = sign * sin(angle);
  const float a = act_load(x, xb + p), b = act_load(x, xb + p + half_rot);
  act_store(y, yb + p, a * c - b * s);
  act_store(y, yb + p + half_rot, b * c + a * s);
}
