/* Helpers shared by the OpenCL test binaries (included by each; every
 * function is static). A binary opens the default device and builds the
 * kernels once (PoCL compiles slowly), then hands the fixture to its tests. */
#pragma once

#ifdef ROK_WITH_OPENCL

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rok/device.h"
#include "rok/core.h"

/* PoCL keeps its LLVM compiler state until exit: LeakSanitizer would report
 * it whenever kernels are compiled (a fresh kernel cache). Not our leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libpocl.so\nleak:libLLVM\n";
}

/* One activation dtype's kernels on the shared device, with the tolerances
 * its outputs are held to: bf16 rounding (2⁻⁹ relative) for bf16, float
 * arithmetic for fp32 — the fp32 variant is what catches subtle formula
 * errors that bf16 rounding would hide. */
typedef struct {
  RokClDevice *device;
  RokClKernels *kernels;
  RokDtype act;
  double rtol, atol; /* atol as a fraction of the largest expected value */
  gboolean owns_device;
} Fixture;

G_GNUC_UNUSED static Fixture *fixture_variant(RokClDevice *device, RokDtype act, gboolean owns_device) {
  g_autoptr(GError) error = NULL;
  Fixture *f = g_new0(Fixture, 1);
  f->device = device;
  f->act = act;
  f->owns_device = owns_device;
  f->rtol = act == ROK_DTYPE_FP32 ? 2e-5 : 0.008;
  f->atol = act == ROK_DTYPE_FP32 ? 2e-6 : 0.004;
  f->kernels = rok_cl_kernels_new(device, act, &error);
  g_assert_no_error(error);
  return f;
}

/* Open the default device and build the bf16 kernels; exits 77 (skip) when
 * no OpenCL device exists here. */
G_GNUC_UNUSED static Fixture *fixture_open(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) devices = rok_cl_device_list(&error);
  if (devices == NULL || devices->len == 0) {
    g_printerr("no OpenCL device: %s\n", error != NULL ? error->message : "empty list");
    exit(77);
  }
  RokClDevice *device = rok_cl_device_open(-1, &error);
  g_assert_no_error(error);
  return fixture_variant(device, ROK_DTYPE_BF16, TRUE);
}

/* Close variants first, the device's owner last. */
G_GNUC_UNUSED static void fixture_close(Fixture *f) {
  rok_cl_kernels_free(f->kernels);
  if (f->owns_device) {
    g_assert_cmpuint(rok_cl_device_buffer_count(f->device), ==, 0); /* every test freed its buffers */
    rok_cl_device_free(f->device);
  }
  g_free(f);
}

/* Register `test` as /opencl/GROUP/bf16/NAME and /opencl/GROUP/fp32/NAME. */
G_GNUC_UNUSED static void add_both(Fixture *bf16, Fixture *fp32, const char *group, const char *name,
                                   GTestDataFunc test) {
  g_autofree char *a = g_strdup_printf("/opencl/%s/bf16/%s", group, name);
  g_autofree char *b = g_strdup_printf("/opencl/%s/fp32/%s", group, name);
  g_test_add_data_func(a, bf16, test);
  g_test_add_data_func(b, fp32, test);
}

/* n uniform values in [low, high) from a seeded generator. */
G_GNUC_UNUSED static float *random_floats(guint32 seed, gsize n, double low, double high) {
  g_autoptr(GRand) rand = g_rand_new_with_seed(seed);
  float *values = g_new(float, MAX(n, 1));
  for (gsize i = 0; i < n; i++)
    values[i] = (float)g_rand_double_range(rand, low, high);
  return values;
}

/* Round values in place to what the activation dtype can hold, so CPU
 * references start from exactly what the device sees. */
G_GNUC_UNUSED static void round_to_act(Fixture *f, float *values, gsize n) {
  g_autofree guint8 *raw = g_malloc(n * 4 + 8);
  g_assert_true(rok_cl_dtype_from_float(f->act, values, raw, n));
  g_assert_true(rok_cl_dtype_to_float(f->act, raw, values, n));
}

/* A device buffer of `dtype` holding values (converted; i64 and u8 callers
 * pass raw data through upload_raw instead). */
G_GNUC_UNUSED static RokClBuffer *upload(Fixture *f, RokDtype dtype, const float *values, gsize n, const char *label) {
  g_autoptr(GError) error = NULL;
  RokClBuffer *buffer = rok_cl_buffer_new(f->device, dtype, n, label, FALSE, &error);
  g_assert_no_error(error);
  g_autofree guint8 *raw = g_malloc(n * 4 + 8);
  g_assert_true(rok_cl_dtype_from_float(dtype, values, raw, n));
  rok_cl_buffer_write(buffer, ROK_CL_QUEUE_COMPUTE, 0, buffer->bytes, raw, TRUE, 0, NULL, NULL, &error);
  g_assert_no_error(error);
  return buffer;
}

G_GNUC_UNUSED static RokClBuffer *upload_raw(Fixture *f, RokDtype dtype, const void *data, gsize n, const char *label) {
  g_autoptr(GError) error = NULL;
  RokClBuffer *buffer = rok_cl_buffer_new(f->device, dtype, n, label, FALSE, &error);
  g_assert_no_error(error);
  rok_cl_buffer_write(buffer, ROK_CL_QUEUE_COMPUTE, 0, buffer->bytes, data, TRUE, 0, NULL, NULL, &error);
  g_assert_no_error(error);
  return buffer;
}

/* A buffer filled with zero bytes. */
G_GNUC_UNUSED static RokClBuffer *zeros(Fixture *f, RokDtype dtype, gsize n, const char *label) {
  g_autoptr(GError) error = NULL;
  RokClBuffer *buffer = rok_cl_buffer_new(f->device, dtype, n, label, FALSE, &error);
  g_assert_no_error(error);
  rok_cl_buffer_zero(buffer, &error);
  g_assert_no_error(error);
  return buffer;
}

/* The buffer's bytes (after everything queued so far). */
G_GNUC_UNUSED static guint8 *download_raw(RokClBuffer *buffer) {
  g_autoptr(GError) error = NULL;
  guint8 *raw = g_malloc(buffer->bytes + 8);
  rok_cl_device_finish(buffer->device, ROK_CL_QUEUE_COMPUTE, &error);
  g_assert_no_error(error);
  rok_cl_buffer_read(buffer, ROK_CL_QUEUE_COMPUTE, 0, buffer->bytes, raw, TRUE, 0, NULL, NULL, &error);
  g_assert_no_error(error);
  return raw;
}

/* Its contents as floats (bf16, fp16 or fp32 buffers). */
G_GNUC_UNUSED static float *download(RokClBuffer *buffer) {
  g_autofree guint8 *raw = download_raw(buffer);
  float *values = g_new(float, MAX(buffer->elements, 1));
  g_assert_true(rok_cl_dtype_to_float(buffer->dtype, raw, values, buffer->elements));
  return values;
}

/* |got − want| <= atol + rtol·|want| everywhere, atol = atol_frac·max|want|;
 * reports the worst element on failure. */
G_GNUC_UNUSED static void assert_close(const float *got, const double *want, gsize n, double rtol, double atol_frac,
                         const char *what) {
  double scale = 0.0;
  for (gsize i = 0; i < n; i++)
    scale = MAX(scale, fabs(want[i]));
  double atol = atol_frac * MAX(scale, 1e-30);
  for (gsize i = 0; i < n; i++) {
    double err = fabs((double)got[i] - want[i]);
    if (!(err <= atol + rtol * fabs(want[i]))) {
      g_test_message("%s: element %" G_GSIZE_FORMAT " is %.9g, expected %.9g (scale %.3g)", what, i, got[i],
                     want[i], scale);
      g_assert_cmpfloat(err, <=, atol + rtol * fabs(want[i]));
    }
  }
}

/* The buffer's bytes equal `expected` (a run's result compared with a rerun). */
G_GNUC_UNUSED static void assert_same_bytes(RokClBuffer *buffer, const guint8 *expected, const char *what) {
  g_autofree guint8 *raw = download_raw(buffer);
  if (memcmp(raw, expected, buffer->bytes) != 0) {
    g_test_message("%s: a rerun gave different bytes", what);
    g_assert_not_reached();
  }
}

/* The bytes of `buffer` now, to compare with a rerun. */
#define SNAPSHOT(buffer) g_autofree guint8 *snapshot_##buffer = download_raw(buffer)
#define ASSERT_RERUN_SAME(buffer, what) assert_same_bytes(buffer, snapshot_##buffer, what)


#endif /* ROK_WITH_OPENCL */
