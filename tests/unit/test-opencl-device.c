/* The OpenCL device layer: listing, opening, buffers and the ledger,
 * transfers and events, build errors, checksums, host number mirrors. */
#include <glib.h>

#ifndef ROK_WITH_OPENCL
int main(void) {
  return 77; /* built without OpenCL */
}
#else

#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "device/cl-program.h"
#include "test-opencl-common.h"

static void test_list(gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) infos = rok_cl_device_list(&error);
  g_assert_no_error(error);
  g_assert_cmpuint(infos->len, >, 0);
  gint chosen = rok_cl_device_default_index(infos);
  g_assert_cmpint(chosen, >=, 0);
  const RokClDeviceInfo *info = g_ptr_array_index(infos, chosen);
  g_assert_cmpuint(info->global_memory, >, 0);
  g_assert_cmpuint(info->compute_units, >, 0);
  g_autofree char *table = rok_cl_device_list_format(infos);
  g_assert_nonnull(strstr(table, info->name));
  g_assert_nonnull(strstr(table, "* "));
  json_object *json = rok_cl_device_list_to_json(infos);
  g_assert_cmpuint(json_object_array_length(json), ==, infos->len);
  json_object *first = json_object_array_get_idx(json, 0);
  g_assert_nonnull(json_object_object_get(first, "global_memory"));
  json_object_put(json);
}

static void test_bad_index(gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokClDevice) device = rok_cl_device_open(1000, &error);
  g_assert_null(device);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "--device 1000"));
}

static void test_ledger(gconstpointer data) {
  const Fixture *f = data;
  g_autoptr(GError) error = NULL;
  guint64 before = rok_cl_device_allocated(f->device);
  rok_cl_device_reset_peak(f->device);
  RokClBuffer *a = rok_cl_buffer_new(f->device, ROK_DTYPE_BF16, 1000, "a", TRUE, &error);
  g_assert_no_error(error);
  RokClBuffer *b = rok_cl_buffer_new(f->device, ROK_DTYPE_I64, 10, "b", FALSE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(a->bytes, ==, 2000);
  g_assert_cmpuint(rok_cl_device_allocated(f->device), ==, before + 2080);
  rok_cl_buffer_free(a);
  g_assert_cmpuint(rok_cl_device_allocated(f->device), ==, before + 80);
  g_assert_cmpuint(rok_cl_device_peak(f->device), ==, before + 2080);
  rok_cl_buffer_free(b);
  g_assert_cmpuint(rok_cl_device_allocated(f->device), ==, before);
}

/* A recycled buffer's memory backs the next buffer of its size, once the
 * compute commands it was recycled after have run; the ledger counts it
 * free meanwhile and the peak is the tensors', not the idle memory's. */
static void test_recycle(gconstpointer data) {
  const Fixture *f = data;
  g_autoptr(GError) error = NULL;
  guint64 before = rok_cl_device_allocated(f->device), idle = rok_cl_device_idle_bytes(f->device);
  rok_cl_device_reset_peak(f->device);
  RokClBuffer *a = rok_cl_buffer_new(f->device, ROK_DTYPE_FP32, 1001, "a", TRUE, &error);
  g_assert_no_error(error);
  cl_mem mem = a->mem;
  rok_cl_buffer_recycle(a, FALSE);
  g_assert_cmpuint(rok_cl_device_allocated(f->device), ==, before);
  g_assert_cmpuint(rok_cl_device_idle_bytes(f->device), ==, idle + 4004);
  /* Another size gets memory of its own; the same size (any dtype) that one. */
  RokClBuffer *b = rok_cl_buffer_new(f->device, ROK_DTYPE_FP32, 1000, "b", FALSE, &error);
  g_assert_no_error(error);
  g_assert_true(b->mem != mem);
  RokClBuffer *c = rok_cl_buffer_new(f->device, ROK_DTYPE_U8, 4004, "c", FALSE, &error);
  g_assert_no_error(error);
  g_assert_true(c->mem == mem);
  g_assert_cmpuint(rok_cl_device_idle_bytes(f->device), ==, idle);
  g_assert_cmpuint(rok_cl_device_allocated(f->device), ==, before + 8004);
  g_assert_cmpuint(rok_cl_device_peak(f->device), ==, before + 8004);
  /* After a kernel on it: taken again only once the compute queue has
   * been finished, or marked and the marker has completed, since. */
  g_assert_true(rok_cl_buffer_zero(c, &error));
  rok_cl_buffer_recycle(c, TRUE);
  RokClBuffer *e = rok_cl_buffer_new(f->device, ROK_DTYPE_FP32, 1001, "e", FALSE, &error);
  g_assert_no_error(error);
  g_assert_true(e->mem != mem);
  rok_cl_buffer_free(e);
  g_assert_true(rok_cl_device_finish(f->device, ROK_CL_QUEUE_COMPUTE, &error));
  RokClBuffer *d = rok_cl_buffer_new(f->device, ROK_DTYPE_FP32, 1001, "d", FALSE, &error);
  g_assert_no_error(error);
  g_assert_true(d->mem == mem);
  g_assert_true(rok_cl_buffer_zero(d, &error));
  rok_cl_buffer_recycle(d, TRUE);
  cl_event marked = NULL;
  g_assert_true(rok_cl_device_marker(f->device, ROK_CL_QUEUE_COMPUTE, &marked, &error));
  g_assert_true(rok_cl_events_wait(1, &marked, &error));
  clReleaseEvent(marked);
  d = rok_cl_buffer_new(f->device, ROK_DTYPE_FP32, 1001, "d", FALSE, &error);
  g_assert_no_error(error);
  g_assert_true(d->mem == mem);
  rok_cl_buffer_free(b);
  rok_cl_buffer_free(d);
  g_assert_cmpuint(rok_cl_device_allocated(f->device), ==, before);
  g_assert_cmpuint(rok_cl_device_idle_bytes(f->device), ==, idle);
}

/* A thread that reports its id, then waits to be told to end. */
typedef struct {
  GAsyncQueue *id, *end;
} Reporter;

static gpointer report_and_wait(gpointer data) {
  Reporter *r = data;
  g_async_queue_push(r->id, GINT_TO_POINTER((int)syscall(SYS_gettid)));
  g_async_queue_pop(r->end);
  return NULL;
}

/* Threads of this process at `nice`. */
static guint threads_at(int nice) {
  g_autoptr(GDir) dir = g_dir_open("/proc/self/task", 0, NULL);
  g_assert_nonnull(dir);
  guint n = 0;
  for (const char *name; (name = g_dir_read_name(dir)) != NULL;) {
    errno = 0;
    int t = getpriority(PRIO_PROCESS, (id_t)atoi(name));
    n += errno == 0 && t == nice; /* errno: ended meanwhile */
  }
  return n;
}

/* On a CPU device the runtime's worker threads run 5 nice levels below
 * the process's own (cl-device.c: a stream's thread woken beside a kernel
 * must not wait for it). Opening the device again, as validate does for
 * each row, lowers them no further and leaves rok's own threads, here one
 * alive across the open, as they were. Linux keeps nice per thread. */
static void test_cpu_workers_lowered(gconstpointer data) {
  const Fixture *f = data;
  if (strcmp(rok_cl_device_info(f->device)->type, "cpu") != 0 || !g_file_test("/proc/self/task", G_FILE_TEST_IS_DIR)) {
    g_test_skip("not a CPU device, or no /proc");
    return;
  }
  errno = 0;
  int own = getpriority(PRIO_PROCESS, 0);
  g_assert_cmpint(errno, ==, 0);
  g_assert_cmpint(own, <=, 9); /* room for two steps of 5 to tell apart */
  guint lowered = threads_at(own + 5);
  g_assert_cmpuint(lowered, >=, 1);

  Reporter r = {g_async_queue_new(), g_async_queue_new()};
  GThread *thread = g_thread_new("rok-test", report_and_wait, &r);
  int tid = GPOINTER_TO_INT(g_async_queue_pop(r.id));
  g_autoptr(GError) error = NULL;
  RokClDevice *again = rok_cl_device_open(-1, &error);
  g_assert_no_error(error);
  errno = 0;
  g_assert_cmpint(getpriority(PRIO_PROCESS, (id_t)tid), ==, own);
  g_assert_cmpint(errno, ==, 0);
  g_assert_cmpuint(threads_at(own + 10), ==, 0);
  g_assert_cmpuint(threads_at(own + 5), >=, lowered);
  rok_cl_device_free(again);
  g_async_queue_push(r.end, GINT_TO_POINTER(1));
  g_thread_join(thread);
  g_async_queue_unref(r.id);
  g_async_queue_unref(r.end);
}

static void test_out_of_memory(gconstpointer data) {
  const Fixture *f = data;
  g_autoptr(GError) error = NULL;
  guint64 before = rok_cl_device_allocated(f->device);
  RokClBuffer *huge = rok_cl_buffer_new(f->device, ROK_DTYPE_FP32, G_GUINT64_CONSTANT(1) << 48, "layer9.huge", TRUE,
                                        &error);
  g_assert_null(huge);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
  g_assert_nonnull(strstr(error->message, "out of device memory"));
  g_assert_nonnull(strstr(error->message, "layer9.huge"));
  g_assert_cmpuint(rok_cl_device_allocated(f->device), ==, before);
  g_clear_error(&error);
  /* Elements × size beyond 64 bits. */
  huge = rok_cl_buffer_new(f->device, ROK_DTYPE_I64, G_MAXUINT64 / 4, "overflow", FALSE, &error);
  g_assert_null(huge);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
}

/* Data written on the h2d queue, doubled by a kernel on the compute queue
 * after a cross-queue wait, read back on the d2h queue. */
static void test_transfers_and_events(gconstpointer data) {
  const Fixture *f = data;
  g_autoptr(GError) error = NULL;
  float values[301];
  for (int i = 0; i < 301; i++)
    values[i] = (float)i - 150.0f;
  g_autoptr(RokClBuffer) x = rok_cl_buffer_new(f->device, ROK_DTYPE_FP32, 301, "x", FALSE, &error);
  g_autoptr(RokClBuffer) bf = rok_cl_buffer_new(f->device, ROK_DTYPE_BF16, 301, "bf", FALSE, &error);
  g_assert_no_error(error);
  cl_event written = NULL, done = NULL, read = NULL;
  rok_cl_buffer_write(x, ROK_CL_QUEUE_H2D, 0, x->bytes, values, FALSE, 0, NULL, &written, &error);
  g_assert_no_error(error);
  rok_cl_device_flush(f->device, ROK_CL_QUEUE_H2D, &error);
  rok_cl_device_wait_events(f->device, ROK_CL_QUEUE_COMPUTE, 1, &written, &error);
  g_assert_no_error(error);
  /* bf = round(x) + round(x): the compute queue saw the write. */
  g_autofree guint16 *raw = g_new(guint16, 301);
  g_assert_true(rok_cl_dtype_from_float(ROK_DTYPE_BF16, values, raw, 301));
  rok_cl_buffer_write(bf, ROK_CL_QUEUE_COMPUTE, 0, bf->bytes, raw, TRUE, 0, NULL, NULL, &error);
  rok_cl_add(f->kernels, bf, bf, bf, 301, &error);
  g_assert_no_error(error);
  rok_cl_device_marker(f->device, ROK_CL_QUEUE_COMPUTE, &done, &error);
  g_assert_no_error(error);
  guint16 back[301];
  rok_cl_buffer_read(bf, ROK_CL_QUEUE_D2H, 0, bf->bytes, back, FALSE, 1, &done, &read, &error);
  g_assert_no_error(error);
  rok_cl_events_wait(1, &read, &error);
  g_assert_no_error(error);
  for (int i = 0; i < 301; i++)
    g_assert_cmpfloat(rok_cl_bf16_to_float(back[i]), ==, 2.0f * rok_cl_bf16_to_float(raw[i]));
  guint64 start = 0, end = 0;
  rok_cl_event_times(read, &start, &end, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(end, >=, start);
  g_assert_cmpuint(start, >, 0);
  clReleaseEvent(written);
  clReleaseEvent(done);
  clReleaseEvent(read);
  /* Out-of-range transfers are refused with the buffer's name. */
  g_assert_false(rok_cl_buffer_read(x, ROK_CL_QUEUE_D2H, 1200, 8, back, TRUE, 0, NULL, NULL, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
  g_assert_nonnull(strstr(error->message, "'x'"));
}

static void test_copy_and_pinned(gconstpointer data) {
  const Fixture *f = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(RokClHostBuffer) host = rok_cl_host_buffer_new(f->device, 8192, 4096, &error);
  g_assert_no_error(error);
  g_assert_cmpuint((guintptr)host->ptr % 4096, ==, 0);
  for (int i = 0; i < 8192; i++)
    ((guint8 *)host->ptr)[i] = (guint8)(i * 7);
  g_autoptr(RokClBuffer) a = rok_cl_buffer_new(f->device, ROK_DTYPE_U8, 8192, "a", FALSE, &error);
  g_autoptr(RokClBuffer) b = rok_cl_buffer_new(f->device, ROK_DTYPE_U8, 8192, "b", FALSE, &error);
  g_assert_no_error(error);
  rok_cl_buffer_write(a, ROK_CL_QUEUE_COMPUTE, 0, 8192, host->ptr, TRUE, 0, NULL, NULL, &error);
  rok_cl_buffer_zero(b, &error);
  rok_cl_buffer_copy(a, 4096, b, 0, 4096, &error);
  g_assert_no_error(error);
  g_autofree guint8 *back = download_raw(b);
  g_assert_cmpmem(back, 4096, (guint8 *)host->ptr + 4096, 4096);
  for (int i = 4096; i < 8192; i++)
    g_assert_cmpuint(back[i], ==, 0);
}

static void test_build_failure(gconstpointer data) {
  const Fixture *f = data;
  g_autoptr(GError) error = NULL;
  static const char broken_text[] = "__kernel void broken(__global float *x) {\n  x[0] = undeclared_thing;\n}\n";
  RokClSource broken = {"broken.cl", broken_text, sizeof broken_text - 1};
  cl_program program = device_cl_program_build(f->device, &broken, 1, "-cl-std=CL1.2", &error);
  g_assert_null(program);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
  g_assert_nonnull(strstr(error->message, "build log"));
  g_assert_nonnull(strstr(error->message, "undeclared_thing"));
  g_assert_nonnull(strstr(error->message, "broken.cl"));
  g_assert_nonnull(strstr(error->message, "CL_BUILD_PROGRAM_FAILURE"));
}

/* The checksum as checksum.cl defines it, a word at a time: what the
 * host's vectorised loop must equal from any start and at any length. */
static guint64 mix(guint64 k) {
  k = (k ^ (k >> 33)) * 0xFF51AFD7ED558CCDull;
  k = (k ^ (k >> 33)) * 0xC4CEB9FE1A85EC53ull;
  return k ^ (k >> 33);
}

static guint64 checksum_by_words(const guint8 *bytes, guint64 n) {
  guint64 sum = 0;
  for (guint64 w = 0; w * 8 < n; w++) {
    guint64 word = 0;
    for (guint64 b = 0; b < 8 && w * 8 + b < n; b++)
      word |= (guint64)bytes[w * 8 + b] << (8 * b);
    sum += mix(word ^ (w * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull));
  }
  return mix(sum + n * 0x9E3779B97F4A7C15ull);
}

static void test_checksum_host(gconstpointer data) {
  (void)data;
  guint8 block[96];
  for (int i = 0; i < 96; i++)
    block[i] = (guint8)(i * 131 + 7);
  for (guint start = 0; start < 8; start++)
    for (guint64 n = 0; n + start <= 96; n++)
      g_assert_cmpuint(rok_cl_checksum_bytes(block + start, n), ==, checksum_by_words(block + start, n));
  guint8 bytes[67];
  for (int i = 0; i < 67; i++)
    bytes[i] = (guint8)(i * 37 + 11);
  guint64 reference = rok_cl_checksum_bytes(bytes, sizeof bytes);
  /* Any single flipped bit, anywhere, changes the value. */
  for (int i = 0; i < 67; i++)
    for (int bit = 0; bit < 8; bit++) {
      bytes[i] ^= (guint8)(1u << bit);
      g_assert_cmpuint(rok_cl_checksum_bytes(bytes, sizeof bytes), !=, reference);
      bytes[i] ^= (guint8)(1u << bit);
    }
  g_assert_cmpuint(rok_cl_checksum_bytes(bytes, sizeof bytes), ==, reference);
  /* Length counts: a trailing zero byte is a different tensor. */
  guint8 longer[68] = {0};
  memcpy(longer, bytes, 67);
  g_assert_cmpuint(rok_cl_checksum_bytes(longer, 68), !=, reference);
  /* Streaming in uneven pieces gives the one-shot value. */
  RokClChecksum state;
  rok_cl_checksum_init(&state);
  gsize pieces[] = {3, 0, 9, 1, 16, 30, 8};
  gsize at = 0;
  for (gsize p = 0; p < G_N_ELEMENTS(pieces); p++) {
    rok_cl_checksum_update(&state, bytes + at, pieces[p]);
    at += pieces[p];
  }
  g_assert_cmpuint(at, ==, 67);
  g_assert_cmpuint(rok_cl_checksum_finish(&state), ==, reference);
  /* Combining is order-sensitive. */
  guint64 values[2] = {1, 2}, swapped[2] = {2, 1};
  g_assert_cmpuint(rok_cl_checksum_combine(values, 2), !=, rok_cl_checksum_combine(swapped, 2));
}

static void test_checksum_device(gconstpointer data) {
  const Fixture *f = data;
  g_autoptr(GError) error = NULL;
  gsize sizes[] = {1, 7, 8, 1000, 100003};
  for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
    gsize n = sizes[s];
    g_autofree guint8 *bytes = g_malloc(n);
    for (gsize i = 0; i < n; i++)
      bytes[i] = (guint8)((i * 2654435761u) >> 13);
    g_autoptr(RokClBuffer) buffer = upload_raw((Fixture *)f, ROK_DTYPE_U8, bytes, n, "tensor");
    guint64 device_value = 0;
    rok_cl_checksum_buffer(f->kernels, buffer, &device_value, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(device_value, ==, rok_cl_checksum_bytes(bytes, n));
    /* A flipped bit in the device copy shows in the device checksum. */
    guint8 flipped = bytes[n / 2] ^ 0x10;
    rok_cl_buffer_write(buffer, ROK_CL_QUEUE_COMPUTE, n / 2, 1, &flipped, TRUE, 0, NULL, NULL, &error);
    guint64 after = 0;
    rok_cl_checksum_buffer(f->kernels, buffer, &after, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(after, !=, device_value);
  }
  /* A sub-range into a result slot matches the host on the same bytes. */
  guint8 bytes[256];
  for (int i = 0; i < 256; i++)
    bytes[i] = (guint8)i;
  g_autoptr(RokClBuffer) buffer = upload_raw((Fixture *)f, ROK_DTYPE_U8, bytes, 256, "range");
  g_autoptr(RokClBuffer) results = zeros((Fixture *)f, ROK_DTYPE_I64, 4, "results");
  rok_cl_checksum_enqueue(f->kernels, buffer, 16, 101, results, 3, &error);
  g_assert_no_error(error);
  g_autofree guint64 *values = (guint64 *)download_raw(results);
  g_assert_cmpuint(values[3], ==, rok_cl_checksum_bytes(bytes + 16, 101));
  g_assert_false(rok_cl_checksum_enqueue(f->kernels, buffer, 3, 8, results, 0, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_DEVICE);
}

static void test_numeric(gconstpointer data) {
  (void)data;
  /* bf16: ties go to even, NaN stays NaN. */
  g_assert_cmphex(rok_cl_float_to_bf16(1.0f), ==, 0x3f80);
  g_assert_cmphex(rok_cl_float_to_bf16(1.00390625f), ==, 0x3f80);  /* 1 + 2⁻⁸: tie, down to even */
  g_assert_cmphex(rok_cl_float_to_bf16(1.01171875f), ==, 0x3f82);  /* 1 + 3·2⁻⁸: tie, up to even */
  g_assert_cmphex(rok_cl_float_to_bf16(1.0f + 1.0f / 256 + 1.0f / 8388608), ==, 0x3f81); /* above the tie */
  g_assert_true(isnan(rok_cl_bf16_to_float(rok_cl_float_to_bf16(NAN))));
  /* fp16: every non-NaN value survives a round trip; rounding is to even. */
  for (guint32 bits = 0; bits < 0x10000; bits++) {
    float value = rok_cl_fp16_to_float((guint16)bits);
    if (!isnan(value))
      g_assert_cmphex(rok_cl_float_to_fp16(value), ==, bits);
  }
  g_assert_cmphex(rok_cl_float_to_fp16(65520.0f), ==, 0x7c00);
  g_assert_cmphex(rok_cl_float_to_fp16(1.0f + 1.0f / 2048.0f), ==, 0x3c00);
  /* Philox4x32-10 known answers (Random123, tests/kat_vectors). */
  const guint32 kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
       0x24126ea1},
  };
  for (int v = 0; v < 3; v++) {
    guint32 out[4];
    rok_cl_philox4x32_10(kat[v], kat[v] + 4, out);
    for (int w = 0; w < 4; w++)
      g_assert_cmphex(out[w], ==, kat[v][6 + w]);
  }
  g_assert_cmpuint(rok_cl_dropout_threshold(0.0), ==, 0);
  g_assert_cmpuint(rok_cl_dropout_threshold(0.5), ==, 0x80000000u);
}

/* The device draws the same words as the host mirror. */
static void test_device_random(gconstpointer data) {
  const Fixture *f = data;
  g_autoptr(GError) error = NULL;
  const guint64 seed = 0x1234567890abcdefull, stream = 77, vocab = 50257;
  g_autoptr(RokClBuffer) ids = rok_cl_buffer_new(f->device, ROK_DTYPE_I64, 1001, "ids", FALSE, &error);
  g_autoptr(RokClBuffer) u = rok_cl_buffer_new(f->device, ROK_DTYPE_FP32, 1001, "u", FALSE, &error);
  g_assert_no_error(error);
  rok_cl_fill_tokens(f->kernels, ids, seed, stream, vocab, &error);
  rok_cl_fill_uniform(f->kernels, u, seed, stream, -2.0f, 2.0f, &error);
  g_assert_no_error(error);
  g_autofree gint64 *got = (gint64 *)download_raw(ids);
  g_autofree float *values = download(u);
  for (guint64 i = 0; i < 1001; i++) {
    guint64 bits = rok_cl_random_word(seed, stream, 2 * i) | ((guint64)rok_cl_random_word(seed, stream, 2 * i + 1) << 32);
    g_assert_cmpint(got[i], ==, (gint64)(bits % vocab));
    double expected = -2.0 + 4.0 * (double)(rok_cl_random_word(seed, stream, i) >> 8) / 16777216.0;
    g_assert_cmpfloat_with_epsilon(values[i], expected, 1e-6);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  Fixture *f = fixture_open();
  g_test_add_data_func("/opencl/device/list", f, test_list);
  g_test_add_data_func("/opencl/device/bad-index", f, test_bad_index);
  g_test_add_data_func("/opencl/device/ledger", f, test_ledger);
  g_test_add_data_func("/opencl/device/recycle", f, test_recycle);
  g_test_add_data_func("/opencl/device/cpu-workers-lowered", f, test_cpu_workers_lowered);
  g_test_add_data_func("/opencl/device/out-of-memory", f, test_out_of_memory);
  g_test_add_data_func("/opencl/device/transfers-and-events", f, test_transfers_and_events);
  g_test_add_data_func("/opencl/device/copy-and-pinned", f, test_copy_and_pinned);
  g_test_add_data_func("/opencl/device/build-failure", f, test_build_failure);
  g_test_add_data_func("/opencl/checksum/host", f, test_checksum_host);
  g_test_add_data_func("/opencl/checksum/device", f, test_checksum_device);
  g_test_add_data_func("/opencl/numeric/conversions-and-philox", f, test_numeric);
  g_test_add_data_func("/opencl/numeric/device-random", f, test_device_random);
  int status = g_test_run();
  fixture_close(f);
  return status;
}

#endif /* ROK_WITH_OPENCL */
