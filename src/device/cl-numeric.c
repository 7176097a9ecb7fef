/* Host mirrors of the kernels' conversions and random numbers. */
#include <math.h>
#include <string.h>

#include "rok/device.h"

static guint32 float_bits(float value) {
  guint32 bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static float bits_float(guint32 bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

float rok_cl_bf16_to_float(guint16 bits) {
  return bits_float((guint32)bits << 16);
}

guint16 rok_cl_float_to_bf16(float value) {
  guint32 bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return (guint16)((bits >> 16) | 0x0040u); /* quiet NaN */
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (guint16)(bits >> 16);
}

float rok_cl_fp16_to_float(guint16 bits) {
  guint32 sign = (guint32)(bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0x1f)
    return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) /* zero or subnormal: mantissa · 2⁻²⁴ */
    return bits_float(sign) + (sign ? -1.0f : 1.0f) * ldexpf((float)mantissa, -24);
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

guint16 rok_cl_float_to_fp16(float value) {
  guint32 bits = float_bits(value);
  guint16 sign = (guint16)((bits >> 16) & 0x8000u);
  guint32 magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return sign | 0x7e00u; /* NaN */
  if (magnitude >= 0x477ff000u) /* rounds to at least 65520: infinity */
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) { /* below the smallest normal: a multiple of 2⁻²⁴ */
    float scaled = bits_float(magnitude) * 16777216.0f;
    return sign | (guint16)lrintf(scaled); /* the current (nearest-even) rounding mode */
  }
  /* Normal: drop 13 mantissa bits with round to nearest even. */
  guint32 rebased = magnitude - (112u << 23);
  rebased += 0x0fffu + ((rebased >> 13) & 1u);
  return sign | (guint16)(rebased >> 13);
}

gboolean rok_cl_dtype_from_float(RokDtype dtype, const float *src, void *dst, gsize n) {
  switch (dtype) {
  case ROK_DTYPE_BF16:
    for (gsize i = 0; i < n; i++)
      ((guint16 *)dst)[i] = rok_cl_float_to_bf16(src[i]);
    return TRUE;
  case ROK_DTYPE_FP16:
    for (gsize i = 0; i < n; i++)
      ((guint16 *)dst)[i] = rok_cl_float_to_fp16(src[i]);
    return TRUE;
  case ROK_DTYPE_FP32:
    memcpy(dst, src, n * sizeof(float));
    return TRUE;
  default:
    return FALSE;
  }
}

gboolean rok_cl_dtype_to_float(RokDtype dtype, const void *src, float *dst, gsize n) {
  switch (dtype) {
  case ROK_DTYPE_BF16:
    for (gsize i = 0; i < n; i++)
      dst[i] = rok_cl_bf16_to_float(((const guint16 *)src)[i]);
    return TRUE;
  case ROK_DTYPE_FP16:
    for (gsize i = 0; i < n; i++)
      dst[i] = rok_cl_fp16_to_float(((const guint16 *)src)[i]);
    return TRUE;
  case ROK_DTYPE_FP32:
    memcpy(dst, src, n * sizeof(float));
    return TRUE;
  default:
    return FALSE;
  }
}

void rok_cl_philox4x32_10(const guint32 counter[4], const guint32 key[2], guint32 out[4]) {
  guint32 c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  guint32 k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    guint64 p0 = (guint64)0xD2511F53u * c0, p1 = (guint64)0xCD9E8D57u * c2;
    guint32 n0 = (guint32)(p1 >> 32) ^ c1 ^ k0, n2 = (guint32)(p0 >> 32) ^ c3 ^ k1;
    c1 = (guint32)p1;
    c3 = (guint32)p0;
    c0 = n0;
    c2 = n2;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

guint32 rok_cl_random_word(guint64 seed, guint64 stream, guint64 element) {
  guint64 block = element >> 2;
  guint32 counter[4] = {(guint32)block, (guint32)(block >> 32), (guint32)stream, (guint32)(stream >> 32)};
  guint32 key[2] = {(guint32)seed, (guint32)(seed >> 32)}, out[4];
  rok_cl_philox4x32_10(counter, key, out);
  return out[element & 3];
}

guint32 rok_cl_dropout_threshold(double p) {
  if (!(p > 0.0))
    return 0;
  double scaled = nearbyint(p * 4294967296.0);
  return scaled >= 4294967295.0 ? G_MAXUINT32 : (guint32)scaled;
}
