/* GEMM throughput of the OpenCL kernels on a device, for a few shapes.
 *
 *   bench-opencl [--device N] [--dtype bf16|fp16|fp32] [--repeats R] [--quick]
 *
 * Each shape runs once to warm up (PoCL compiles kernels on first launch),
 * then R times; the line shows the median time and GFLOP/s (2·m·n·k per
 * run). A fused-attention line follows for scale. Exit 77 when there is no
 * OpenCL device (or the build has none). */
#include <glib.h>
#include <stdio.h>

#ifndef ROK_WITH_OPENCL
int main(void) {
  fprintf(stderr, "bench-opencl: built without OpenCL\n");
  return 77;
}
#else

#include "rok/device.h"
#include "rok/device.h"

typedef struct {
  const char *name;
  guint64 batch, m, n, k;
  gboolean ta, tb;
  gboolean fp32_out; /* weight-gradient style accumulation */
} Shape;

static int compare_double(gconstpointer a, gconstpointer b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Best and median seconds of `repeats` runs of `run` after one warm-up
 * (the best is the steadier figure on a shared machine). */
static double median_seconds(RokClDevice *device, int repeats, gboolean (*run)(gpointer, GError **), gpointer data,
                             double *best, GError **error) {
  g_autofree double *times = g_new(double, repeats);
  if (!run(data, error) || !rok_cl_device_finish(device, ROK_CL_QUEUE_COMPUTE, error))
    return -1.0;
  for (int r = 0; r < repeats; r++) {
    gint64 start = g_get_monotonic_time();
    if (!run(data, error) || !rok_cl_device_finish(device, ROK_CL_QUEUE_COMPUTE, error))
      return -1.0;
    times[r] = (double)(g_get_monotonic_time() - start) / 1e6;
  }
  qsort(times, repeats, sizeof *times, compare_double);
  *best = times[0];
  return times[repeats / 2];
}

typedef struct {
  RokClKernels *kernels;
  RokClGemm gemm;
  RokClAttention attention;
  RokClBuffer *lse;
} Job;

static gboolean run_gemm(gpointer data, GError **error) {
  Job *job = data;
  return rok_cl_gemm(job->kernels, &job->gemm, error);
}

static gboolean run_attention(gpointer data, GError **error) {
  Job *job = data;
  return rok_cl_attention_forward(job->kernels, &job->attention, job->lse, error);
}

static gboolean bench_gemm(RokClKernels *kernels, const Shape *s, int repeats, GError **error) {
  RokClDevice *device = rok_cl_kernels_device(kernels);
  RokDtype act = rok_cl_kernels_act_dtype(kernels);
  g_autoptr(RokClBuffer) a = rok_cl_buffer_new(device, act, s->batch * s->m * s->k, "A", TRUE, error);
  g_autoptr(RokClBuffer) b = a ? rok_cl_buffer_new(device, act, s->batch * s->k * s->n, "B", TRUE, error) : NULL;
  g_autoptr(RokClBuffer) c =
      b ? rok_cl_buffer_new(device, s->fp32_out ? ROK_DTYPE_FP32 : act, s->batch * s->m * s->n, "C", TRUE, error)
        : NULL;
  if (c == NULL || !rok_cl_fill_uniform(kernels, a, 1, 1, -1, 1, error) ||
      !rok_cl_fill_uniform(kernels, b, 1, 2, -1, 1, error) || !rok_cl_buffer_zero(c, error))
    return FALSE;
  Job job = {.kernels = kernels};
  job.gemm = (RokClGemm){.batch = s->batch, .m = s->m, .n = s->n, .k = s->k, .alpha = 1.0f,
                         .beta = s->fp32_out ? 1.0f : 0.0f};
  job.gemm.a = (RokClMatrix){.buffer = a, .ld = s->ta ? s->m : s->k, .stride = s->m * s->k, .trans = s->ta};
  job.gemm.b = (RokClMatrix){.buffer = b, .ld = s->tb ? s->k : s->n, .stride = s->k * s->n, .trans = s->tb};
  job.gemm.c = (RokClMatrix){.buffer = c, .ld = s->n, .stride = s->m * s->n};
  double best = 0.0, seconds = median_seconds(device, repeats, run_gemm, &job, &best, error);
  if (seconds < 0)
    return FALSE;
  double flops = 2.0 * s->batch * s->m * s->n * s->k;
  printf("gemm %-22s %3" G_GUINT64_FORMAT " x %5" G_GUINT64_FORMAT " x %5" G_GUINT64_FORMAT " x %5" G_GUINT64_FORMAT
         " %s%s -> %-4s  median %9.3f ms %8.2f GFLOP/s  best %8.2f GFLOP/s\n",
         s->name, s->batch, s->m, s->n, s->k, s->ta ? "T" : "N", s->tb ? "T" : "N", s->fp32_out ? "fp32" : "act",
         seconds * 1e3, flops / seconds / 1e9, flops / best / 1e9);
  return TRUE;
}

static gboolean bench_attention(RokClKernels *kernels, guint64 seq, int repeats, GError **error) {
  RokClDevice *device = rok_cl_kernels_device(kernels);
  RokDtype act = rok_cl_kernels_act_dtype(kernels);
  const guint64 heads = 8, d = 64, n = seq * heads * d;
  g_autoptr(RokClBuffer) x = rok_cl_buffer_new(device, act, n, "qkv", TRUE, error);
  g_autoptr(RokClBuffer) o = x ? rok_cl_buffer_new(device, act, n, "o", TRUE, error) : NULL;
  g_autoptr(RokClBuffer) lse = o ? rok_cl_buffer_new(device, ROK_DTYPE_FP32, heads * seq, "lse", TRUE, error) : NULL;
  if (lse == NULL || !rok_cl_fill_uniform(kernels, x, 1, 3, -1, 1, error))
    return FALSE;
  RokClHeads view = {.buffer = x, .row_stride = heads * d, .batch_stride = n, .head_stride = d};
  Job job = {.kernels = kernels, .lse = lse};
  job.attention = (RokClAttention){.batch = 1, .heads = heads, .kv_heads = heads, .queries = seq, .keys = seq,
                                   .head_dim = d, .causal = TRUE, .scale = 0.125f, .q = view, .k = view, .v = view,
                                   .o = view};
  job.attention.o.buffer = o;
  double best = 0.0, seconds = median_seconds(device, repeats, run_attention, &job, &best, error);
  if (seconds < 0)
    return FALSE;
  double flops = 2.0 * 2.0 * heads * seq * seq * d / 2.0; /* QKᵀ and PV, causal half */
  printf("attention fwd causal %3" G_GUINT64_FORMAT " heads x %5" G_GUINT64_FORMAT " seq x %3" G_GUINT64_FORMAT
         " dim          median %9.3f ms %8.2f GFLOP/s  best %8.2f GFLOP/s\n",
         heads, seq, d, seconds * 1e3, flops / seconds / 1e9, flops / best / 1e9);
  return TRUE;
}

static const Shape full_shapes[] = {
    {"square", 1, 256, 256, 256},
    {"square", 1, 512, 512, 512},
    {"square", 1, 1024, 1024, 1024},
    {"odd", 1, 1000, 1000, 1000},
    {"linear fwd x.W", 1, 2048, 1024, 1024},
    {"linear dgrad dy.W^T", 1, 2048, 1024, 1024, FALSE, TRUE},
    {"linear wgrad x^T.dy", 1, 1024, 1024, 2048, TRUE, FALSE, TRUE},
    {"attn scores Q.K^T", 16, 512, 512, 64, FALSE, TRUE},
};

static const Shape quick_shapes[] = {
    {"square", 1, 256, 256, 256},
    {"square", 1, 512, 512, 512},
    {"linear wgrad x^T.dy", 1, 512, 512, 1024, TRUE, FALSE, TRUE},
};

int main(int argc, char **argv) {
  gint device_index = -1, repeats = 5;
  gboolean quick = FALSE;
  g_autofree char *dtype_name = NULL;
  GOptionEntry entries[] = {
      {"device", 0, 0, G_OPTION_ARG_INT, &device_index, "OpenCL device index (default: first GPU, else CPU)", "N"},
      {"dtype", 0, 0, G_OPTION_ARG_STRING, &dtype_name, "activation dtype: bf16 (default), fp16 or fp32", "T"},
      {"repeats", 0, 0, G_OPTION_ARG_INT, &repeats, "timed runs per shape (default 5)", "R"},
      {"quick", 0, 0, G_OPTION_ARG_NONE, &quick, "small shapes only", NULL},
      {NULL}};
  g_autoptr(GOptionContext) context = g_option_context_new("- GEMM throughput of rok's OpenCL kernels");
  g_option_context_add_main_entries(context, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error) || repeats < 1) {
    fprintf(stderr, "bench-opencl: %s\n", error != NULL ? error->message : "--repeats must be positive");
    return 2;
  }
  RokDtype act = ROK_DTYPE_BF16;
  if (dtype_name != NULL && g_strcmp0(dtype_name, "fp32") == 0)
    act = ROK_DTYPE_FP32;
  else if (dtype_name != NULL && g_strcmp0(dtype_name, "fp16") == 0)
    act = ROK_DTYPE_FP16;
  g_autoptr(GPtrArray) devices = rok_cl_device_list(&error);
  if (devices == NULL || devices->len == 0) {
    fprintf(stderr, "bench-opencl: %s\n", error != NULL ? error->message : "no OpenCL device");
    return 77;
  }
  g_autoptr(RokClDevice) device = rok_cl_device_open(device_index, &error);
  g_autoptr(RokClKernels) kernels = device ? rok_cl_kernels_new(device, act, &error) : NULL;
  if (kernels == NULL) {
    fprintf(stderr, "bench-opencl: %s\n", error->message);
    return 1;
  }
  const RokClDeviceInfo *info = rok_cl_device_info(device);
  printf("device %u: %s (%s, %s, %u compute units), activations %s\n", info->index, info->name, info->type,
         info->version, info->compute_units, dtype_name != NULL ? dtype_name : "bf16");
  printf("build options: %s\n", rok_cl_kernels_build_options(kernels));
  const Shape *shapes = quick ? quick_shapes : full_shapes;
  gsize count = quick ? G_N_ELEMENTS(quick_shapes) : G_N_ELEMENTS(full_shapes);
  for (gsize i = 0; i < count; i++)
    if (!bench_gemm(kernels, &shapes[i], repeats, &error)) {
      fprintf(stderr, "bench-opencl: %s\n", error->message);
      return 1;
    }
  if (!bench_attention(kernels, quick ? 256 : 1024, repeats, &error)) {
    fprintf(stderr, "bench-opencl: %s\n", error->message);
    return 1;
  }
  return 0;
}

#endif /* ROK_WITH_OPENCL */
