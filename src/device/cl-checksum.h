/* Integrity checksums of tensor bytes, computed on the device before a
 * tensor leaves it and on the host (or the device again) after it returns.
 *
 * The value is a 64-bit function of the bytes and their count: the bytes are
 * read as little-endian 64-bit words (the last padded with zeros), word w
 * contributes fmix64(word ^ (w·0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019)),
 * contributions add modulo 2⁶⁴ and the sum is mixed with the length. As the
 * per-word mix is a bijection, any change confined to one 64-bit word — in
 * particular any single flipped bit or changed byte — always changes the
 * value; other corruptions go unnoticed with probability about 2⁻⁶⁴. The sum
 * is order-free, so the host can stream the bytes in pieces and the device
 * can split them among work-groups, and both get the same value.
 *
 * The host functions are plain C (available without OpenCL). */
#pragma once

#include <glib.h>

#ifdef ROK_WITH_OPENCL
#include "rok/device.h"
#endif

G_BEGIN_DECLS

/* The checksum of `bytes` bytes at `data`. */
guint64 rok_cl_checksum_bytes(const void *data, guint64 bytes);

/* The same over bytes that arrive in pieces, in order. */
typedef struct {
  guint64 sum;
  guint64 bytes;        /* seen so far */
  guint8 pending[8];    /* the current partial word */
} RokClChecksum;

void rok_cl_checksum_init(RokClChecksum *state);
void rok_cl_checksum_update(RokClChecksum *state, const void *data, gsize bytes);
guint64 rok_cl_checksum_finish(const RokClChecksum *state);

/* Combine per-tensor checksums into one value (the gradients' checksum at
 * the end of a run): order-sensitive, so list them in a fixed order. */
guint64 rok_cl_checksum_combine(const guint64 *values, gsize n);

#ifdef ROK_WITH_OPENCL
/* Enqueue the checksum of `bytes` bytes at byte `offset` (a multiple of 8)
 * of `buffer` on the compute queue; the value lands in element `slot` of
 * `results` (an i64 buffer) when the queue gets there. Read it back with
 * rok_cl_buffer_read(). */
gboolean rok_cl_checksum_enqueue(RokClKernels *kernels, RokClBuffer *buffer, guint64 offset, guint64 bytes,
                                 RokClBuffer *results, guint64 slot, GError **error);
/* The same, waited for: the checksum of the whole buffer. */
gboolean rok_cl_checksum_buffer(RokClKernels *kernels, RokClBuffer *buffer, guint64 *value, GError **error);
#endif

G_END_DECLS
