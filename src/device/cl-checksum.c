/* Integrity checksums on the host and on the device (checksum.cl). */
#include <string.h>

#include "rok/device.h"
#include "rok/core.h"

#define GOLDEN 0x9E3779B97F4A7C15ull
#define SALT 0x632BE59BD9B4E019ull

/* MurmurHash3's 64-bit finaliser, of a word or (sum_words) of a vector of
 * them, lane by lane. */
#define FMIX64(k) ((k) ^= (k) >> 33, (k) *= 0xFF51AFD7ED558CCDull, (k) ^= (k) >> 33, (k) *= 0xC4CEB9FE1A85EC53ull, \
                   (k) ^= (k) >> 33, (k))

static guint64 fmix64(guint64 k) {
  return FMIX64(k);
}

static guint64 word_term(guint64 word, guint64 index) {
  return fmix64(word ^ (index * GOLDEN + SALT));
}

static guint64 load_le64(const guint8 *p) {
  guint64 word = 0;
  for (int b = 7; b >= 0; b--)
    word = (word << 8) | p[b];
  return word;
}

#if G_BYTE_ORDER == G_LITTLE_ENDIAN && (defined(__GNUC__) || defined(__clang__))
/* Two words at a time in a 128-bit vector (GCC's and Clang's vector
 * extensions; SSE2 on x86-64): GCC's -O2 leaves the word loop scalar,
 * where each word's two 64-bit multiplies ran one thread at 2.0 GB/s on
 * the development VM (2.8 with the sum kept in a local); two lanes ran it
 * at 7.3-7.6 GB/s (2026-12-02, 32 MiB at an odd address; rok calibrate's
 * host checksum 7.60 against 2.72 minutes before). Every copy that
 * crosses PCIe is checked at this rate on its leg's thread. The words'
 * terms add, so their order in the sum does not matter. */
typedef guint64 WordPair __attribute__((vector_size(16)));

static WordPair fmix64_pair(WordPair k) {
  return FMIX64(k);
}

#define PAIRS 1
#else
#define PAIRS 0
#endif

/* The sum of the terms of WORDS whole words at P, the first of which is
 * word FIRST of the bytes checked. */
static guint64 sum_words(const guint8 *p, gsize words, guint64 first) {
  guint64 sum = 0;
  gsize w = 0;
#if PAIRS
  WordPair acc = {0, 0};
  WordPair key = {first * GOLDEN + SALT, (first + 1) * GOLDEN + SALT};
  for (; w + 2 <= words; w += 2) {
    WordPair x;
    memcpy(&x, p + 8 * w, sizeof x); /* little-endian: the words as load_le64 reads them */
    acc += fmix64_pair(x ^ key);
    key += 2 * GOLDEN;
  }
  sum = acc[0] + acc[1];
#endif
  for (; w < words; w++)
    sum += word_term(load_le64(p + 8 * w), first + w);
  return sum;
}

void rok_cl_checksum_init(RokClChecksum *state) {
  memset(state, 0, sizeof *state);
}

void rok_cl_checksum_update(RokClChecksum *state, const void *data, gsize bytes) {
  const guint8 *p = data;
  /* Finish the partial word first, then whole words, then keep the rest. */
  while (bytes > 0 && state->bytes % 8 != 0) {
    state->pending[state->bytes % 8] = *p++;
    state->bytes++;
    bytes--;
    if (state->bytes % 8 == 0)
      state->sum += word_term(load_le64(state->pending), state->bytes / 8 - 1);
  }
  gsize words = bytes / 8;
  state->sum += sum_words(p, words, state->bytes / 8);
  state->bytes += 8 * words;
  p += 8 * words;
  bytes -= 8 * words;
  for (gsize i = 0; i < bytes; i++)
    state->pending[i] = p[i];
  state->bytes += bytes;
}

guint64 rok_cl_checksum_finish(const RokClChecksum *state) {
  guint64 sum = state->sum;
  guint rest = state->bytes % 8;
  if (rest != 0) {
    guint8 word[8] = {0};
    memcpy(word, state->pending, rest);
    sum += word_term(load_le64(word), state->bytes / 8);
  }
  return fmix64(sum + state->bytes * GOLDEN);
}

guint64 rok_cl_checksum_bytes(const void *data, guint64 bytes) {
  RokClChecksum state;
  rok_cl_checksum_init(&state);
  rok_cl_checksum_update(&state, data, bytes);
  return rok_cl_checksum_finish(&state);
}

guint64 rok_cl_checksum_combine(const guint64 *values, gsize n) {
  guint64 hash = fmix64(n + SALT);
  for (gsize i = 0; i < n; i++)
    hash = fmix64(hash ^ values[i]) + (guint64)(i + 1) * GOLDEN;
  return fmix64(hash);
}

#ifdef ROK_WITH_OPENCL

#include "cl-kernels-private.h"

gboolean rok_cl_checksum_enqueue(RokClKernels *kernels, RokClBuffer *buffer, guint64 offset, guint64 bytes,
                                 RokClBuffer *results, guint64 slot, GError **error) {
  const char *op = "checksum";
  if (offset % 8 != 0 || offset > buffer->bytes || bytes > buffer->bytes - offset) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "%s: bytes %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT " of '%s' (%" G_GUINT64_FORMAT
                " bytes) are not an 8-aligned range inside it",
                op, offset, offset + bytes, buffer->label, buffer->bytes);
    return FALSE;
  }
  if (!device_cl_check_buffer(results, ROK_DTYPE_I64, slot + 1, op, "results", error) ||
      !device_cl_check_u32(slot, op, "slot", error))
    return FALSE;
  size_t wg = kernels->tuning.wg;
  RokClLaunch launch = device_cl_launch(kernels, K_CHECKSUM_PARTIAL);
  device_cl_arg_buffer(&launch, buffer);
  device_cl_arg_u64(&launch, offset);
  device_cl_arg_u64(&launch, bytes);
  device_cl_arg_buffer(&launch, kernels->checksum_partial);
  size_t global = ROK_CL_CHECKSUM_GROUPS * wg;
  if (!device_cl_launch_run(&launch, 1, &global, &wg, error))
    return FALSE;
  launch = device_cl_launch(kernels, K_CHECKSUM_FINAL);
  device_cl_arg_buffer(&launch, kernels->checksum_partial);
  device_cl_arg_u32(&launch, ROK_CL_CHECKSUM_GROUPS);
  device_cl_arg_u64(&launch, bytes);
  device_cl_arg_buffer(&launch, results);
  device_cl_arg_u32(&launch, (guint32)slot);
  size_t one = 1;
  return device_cl_launch_run(&launch, 1, &one, &one, error);
}

gboolean rok_cl_checksum_buffer(RokClKernels *kernels, RokClBuffer *buffer, guint64 *value, GError **error) {
  return rok_cl_checksum_enqueue(kernels, buffer, 0, buffer->bytes, kernels->checksum_result, 0, error) &&
         rok_cl_buffer_read(kernels->checksum_result, ROK_CL_QUEUE_COMPUTE, 0, sizeof *value, value, TRUE, 0, NULL,
                            NULL, error);
}

#endif /* ROK_WITH_OPENCL */
