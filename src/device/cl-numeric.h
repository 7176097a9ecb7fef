/* Host mirrors of the kernels' number handling, so the host can produce and
 * read device data bit for bit: 16-bit float conversions (round to nearest
 * even, as the kernels store), the Philox4x32-10 generator and the dropout
 * threshold. Plain C: available with or without OpenCL. */
#pragma once

#include <glib.h>

#include "rok/model.h"

G_BEGIN_DECLS

float rok_cl_bf16_to_float(guint16 bits);
guint16 rok_cl_float_to_bf16(float value);
float rok_cl_fp16_to_float(guint16 bits);
guint16 rok_cl_float_to_fp16(float value);

/* Convert n elements between float and a float dtype (bf16, fp16, fp32) as
 * stored on the device; FALSE for other dtypes. */
gboolean rok_cl_dtype_from_float(RokDtype dtype, const float *src, void *dst, gsize n);
gboolean rok_cl_dtype_to_float(RokDtype dtype, const void *src, float *dst, gsize n);

/* Philox4x32-10 of Random123: out = philox(counter, key). */
void rok_cl_philox4x32_10(const guint32 counter[4], const guint32 key[2], guint32 out[4]);
/* Word `element` of stream `stream` under `seed`: what the kernels draw
 * (word element % 4 of the block with counter (element / 4, stream) and
 * key seed). */
guint32 rok_cl_random_word(guint64 seed, guint64 stream, guint64 element);
/* Elements whose word is at least this are kept: round(p·2³²), p in [0, 1). */
guint32 rok_cl_dropout_threshold(double p);

G_END_DECLS
