/* The batched GEMM launcher and the stand-in GEMM for unknown op kinds. */
#ifdef ROK_WITH_OPENCL

#include <math.h>

#include "cl-kernels-private.h"
#include "rok/core.h"

RokClMatrix rok_cl_matrix(RokClBuffer *buffer, guint64 ld, gboolean trans) {
  return (RokClMatrix){.buffer = buffer, .ld = ld, .trans = trans, .group = 1};
}

/* One past the last element an operand of logical size rows × cols touches
 * over the batch; FALSE when that overflows, or when rows of the output
 * overlap (inputs may overlap: reading is harmless). */
static gboolean operand_extent(const RokClMatrix *x, const char *role, gboolean output, guint64 rows,
                               guint64 cols, guint64 outers, guint64 inner, guint64 *extent, GError **error) {
  guint64 stored_rows = x->trans ? cols : rows, stored_cols = x->trans ? rows : cols;
  guint64 group = MAX(x->group, 1);
  if (output && stored_rows > 1 && x->ld < stored_cols) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "gemm: %s has rows of %" G_GUINT64_FORMAT " elements but ld = %" G_GUINT64_FORMAT, role,
                stored_cols, x->ld);
    return FALSE;
  }
  guint64 last = x->offset, term;
  gboolean ok = g_uint64_checked_mul(&term, outers - 1, x->stride) && g_uint64_checked_add(&last, last, term) &&
                g_uint64_checked_mul(&term, (inner - 1) / group, x->head_stride) &&
                g_uint64_checked_add(&last, last, term) &&
                g_uint64_checked_mul(&term, stored_rows - 1, x->ld) && g_uint64_checked_add(&last, last, term) &&
                g_uint64_checked_add(&last, last, stored_cols);
  if (!ok) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "gemm: the extent of %s does not fit 64 bits", role);
    return FALSE;
  }
  *extent = last;
  return TRUE;
}

static gboolean check_gemm(const RokClKernels *kernels, const RokClGemm *g, guint64 inner, GError **error) {
  if (g->batch % inner != 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "gemm: batch %" G_GUINT64_FORMAT " is not a multiple of inner %" G_GUINT64_FORMAT, g->batch, inner);
    return FALSE;
  }
  if (!device_cl_check_u32(g->m, "gemm", "m", error) || !device_cl_check_u32(g->n, "gemm", "n", error) ||
      !device_cl_check_u32(g->k, "gemm", "k", error) || !device_cl_check_u32(g->batch, "gemm", "batch", error) ||
      !device_cl_check_u32(MAX(g->a.group, 1), "gemm", "A's group", error) ||
      !device_cl_check_u32(MAX(g->b.group, 1), "gemm", "B's group", error))
    return FALSE;
  guint64 outers = g->batch / inner, extent = 0;
  if (g->k > 0) {
    if (!operand_extent(&g->a, "A", FALSE, g->m, g->k, outers, inner, &extent, error) ||
        !device_cl_check_act(kernels, g->a.buffer, extent, "gemm", "A", error) ||
        !operand_extent(&g->b, "B", FALSE, g->k, g->n, outers, inner, &extent, error) ||
        !device_cl_check_act(kernels, g->b.buffer, extent, "gemm", "B", error))
      return FALSE;
  }
  RokClMatrix c = g->c;
  c.trans = FALSE;
  c.group = 1;
  if (!operand_extent(&c, "C", TRUE, g->m, g->n, outers, inner, &extent, error))
    return FALSE;
  RokDtype c_dtype = g->c.buffer != NULL && g->c.buffer->dtype == ROK_DTYPE_FP32 ? ROK_DTYPE_FP32 : kernels->act;
  if (!device_cl_check_buffer(g->c.buffer, c_dtype, extent, "gemm", "C", error))
    return FALSE;
  return g->bias == NULL || device_cl_check_act(kernels, g->bias, g->n, "gemm", "bias", error);
}

static void arg_operand(RokClLaunch *launch, const RokClMatrix *x) {
  device_cl_arg_buffer(launch, x->buffer);
  device_cl_arg_u64(launch, x->offset);
  device_cl_arg_u64(launch, x->ld);
  device_cl_arg_u64(launch, x->stride);
  device_cl_arg_u64(launch, x->head_stride);
  device_cl_arg_u32(launch, (guint32)MAX(x->group, 1));
  device_cl_arg_u32(launch, x->trans ? 1 : 0);
}

/* ---- Chunks ------------------------------------------------------------- */

/* A chunk is a range of tiles of one tile row, a range of tile rows of one
 * batch entry, or whole batch entries (at most 65535, a GPU's third grid
 * dimension): as many tiles as the chunk budget holds, counted whole with
 * k at least 1. A tile (its k products) is never split. */
typedef struct {
  guint64 col_tiles, row_tiles, batch;
  double tile; /* FLOPs of one tile */
  size_t lx, ly;
} GemmGrid;

static GemmGrid gemm_grid(const RokClKernels *kernels, const RokClGemm *g) {
  const RokClTuning *t = &kernels->tuning;
  return (GemmGrid){
      .col_tiles = (g->n + t->gemm_tn - 1) / t->gemm_tn,
      .row_tiles = (g->m + t->gemm_tm - 1) / t->gemm_tm,
      .batch = g->batch,
      .tile = 2.0 * (double)t->gemm_tm * (double)t->gemm_tn * (double)MAX(g->k, 1),
      .lx = t->gemm_tn / t->gemm_wn,
      .ly = t->gemm_tm / t->gemm_wm,
  };
}

/* Where the next chunk starts: batch entry, tile row, tile column. */
typedef struct {
  guint64 z, r, c;
} GemmAt;

/* Queue the chunk at `at`, and move past it. */
static gboolean gemm_chunk(RokClLaunch *launch, const GemmGrid *grid, GemmAt *at, RokClChunks *chunks,
                           GError **error) {
  double fit = MAX(floor(device_cl_chunk_budget(launch->kernels) / grid->tile), 1.0);
  double per_row = (double)grid->col_tiles, per_entry = per_row * (double)grid->row_tiles;
  guint64 cols = grid->col_tiles - at->c, rows = 1, entries = 1;
  if (at->c == 0 && at->r == 0 && fit >= per_entry)
    rows = grid->row_tiles, entries = (guint64)MIN(MIN(fit / per_entry, 65535.0), (double)(grid->batch - at->z));
  else if (at->c == 0 && fit >= per_row)
    rows = (guint64)MIN(fit / per_row, (double)(grid->row_tiles - at->r));
  else
    cols = (guint64)MIN(fit, (double)cols);
  size_t local[3] = {grid->lx, grid->ly, 1};
  size_t offset[3] = {at->c * grid->lx, at->r * grid->ly, at->z};
  size_t global[3] = {cols * grid->lx, rows * grid->ly, entries};
  cl_event event = NULL;
  gboolean ok = device_cl_launch_run_at(launch, 3, offset, global, local, &event, error) &&
                device_cl_chunk_next(launch->kernels, chunks, event, grid->tile * (double)(cols * rows * entries),
                                     "gemm", error);
  at->c += cols;
  if (at->c == grid->col_tiles)
    at->c = 0, at->r += rows;
  if (at->r == grid->row_tiles)
    at->r = 0, at->z += entries;
  return ok;
}

/* Enqueue the GEMM whose arguments are set: one launch when it fits a
 * chunk, else chunk after chunk. */
static gboolean launch_chunks(RokClLaunch *launch, const RokClGemm *g, GError **error) {
  GemmGrid grid = gemm_grid(launch->kernels, g);
  double work = grid.tile * (double)grid.col_tiles * (double)grid.row_tiles * (double)grid.batch;
  if (work <= device_cl_chunk_budget(launch->kernels) && grid.batch <= 65535) {
    size_t local[3] = {grid.lx, grid.ly, 1};
    size_t global[3] = {grid.col_tiles * grid.lx, grid.row_tiles * grid.ly, (size_t)grid.batch};
    return device_cl_launch_run(launch, 3, global, local, error);
  }
  RokClChunks chunks = {0};
  GemmAt at = {0};
  gboolean ok = TRUE;
  while (ok && at.z < grid.batch)
    ok = gemm_chunk(launch, &grid, &at, &chunks, error);
  device_cl_chunks_end(&chunks);
  return ok;
}

gboolean rok_cl_gemm(RokClKernels *kernels, const RokClGemm *g, GError **error) {
  guint64 inner = MAX(g->inner, 1);
  if (g->batch == 0 || g->m == 0 || g->n == 0)
    return TRUE;
  if (!check_gemm(kernels, g, inner, error))
    return FALSE;
  RokClLaunch launch =
      device_cl_launch(kernels, g->c.buffer->dtype == ROK_DTYPE_FP32 ? K_GEMM_F32 : K_GEMM_ACT);
  /* With k = 0 the kernel reads neither operand (C = beta·C + bias). */
  RokClMatrix a = g->a, b = g->b;
  if (g->k == 0)
    a.buffer = b.buffer = NULL;
  arg_operand(&launch, &a);
  arg_operand(&launch, &b);
  device_cl_arg_buffer(&launch, g->c.buffer);
  device_cl_arg_u64(&launch, g->c.offset);
  device_cl_arg_u64(&launch, g->c.ld);
  device_cl_arg_u64(&launch, g->c.stride);
  device_cl_arg_u64(&launch, g->c.head_stride);
  device_cl_arg_buffer(&launch, g->bias);
  device_cl_arg_u32(&launch, g->bias != NULL);
  device_cl_arg_u32(&launch, (guint32)inner);
  device_cl_arg_u32(&launch, (guint32)g->m);
  device_cl_arg_u32(&launch, (guint32)g->n);
  device_cl_arg_u32(&launch, (guint32)g->k);
  device_cl_arg_f32(&launch, g->alpha);
  device_cl_arg_f32(&launch, g->beta);
  return launch_chunks(&launch, g, error);
}

/* ---- Stand-in ------------------------------------------------------------ */

gboolean rok_cl_standin_shape(guint64 flops, guint64 in_elements, guint64 out_elements, RokClStandin *shape,
                              GError **error) {
  if (in_elements < 2 || out_elements == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "stand-in GEMM: needs an input of at least 2 elements and an output of at least 1 (got %" G_GUINT64_FORMAT
                " and %" G_GUINT64_FORMAT ")",
                in_elements, out_elements);
    return FALSE;
  }
  /* C covers the output as a near-square m × n. A and B read the input as
   * sliding windows (row i starts at element i: ld = 1), so m + k and
   * k + n must fit it; that leaves k free to carry the FLOPs. */
  guint64 half = in_elements / 2;
  guint64 side = MAX((guint64)floor(sqrt((double)out_elements)), 1);
  guint64 m = MIN(MIN(side, half), G_MAXUINT32), n = MIN(MIN(out_elements / m, half), G_MAXUINT32);
  guint64 k_max = MIN(in_elements - MAX(m, n), (guint64)ROK_CL_STANDIN_MAX_K);
  double per_k = 2.0 * (double)m * (double)n; /* FLOPs per unit of k */
  double wanted_k = MAX((double)flops / per_k, 1.0);
  guint64 batch = (guint64)ceil(wanted_k / (double)k_max);
  guint64 k = (guint64)llround(wanted_k / (double)batch);
  /* Few FLOPs over a big output: shrink C instead of going below k = 1. */
  if (flops < per_k) {
    n = MAX(MIN(n, flops / 2), 1);
    m = MAX((guint64)llround((double)flops / (2.0 * (double)n)), 1);
    k = 1;
    batch = 1;
  }
  /* The batch is launched in chunks; past 2^32 − 1 entries, fewer FLOPs
   * than asked (only when the buffers are tiny for the work). */
  *shape = (RokClStandin){.batch = MIN(batch, G_MAXUINT32), .m = m, .n = n, .k = MAX(MIN(k, k_max), 1)};
  return TRUE;
}

gboolean rok_cl_standin_run(RokClKernels *kernels, const RokClStandin *shape, RokClBuffer *in, RokClBuffer *out,
                            GError **error) {
  /* Every repetition reads the same A and B and overwrites the same C:
   * the work of the unknown op, not its arithmetic. */
  RokClGemm g = {
      .batch = shape->batch, .inner = 1, .m = shape->m, .n = shape->n, .k = shape->k,
      .a = rok_cl_matrix(in, 1, FALSE), .b = rok_cl_matrix(in, 1, FALSE),
      .c = rok_cl_matrix(out, shape->n, FALSE), .alpha = 1.0f, .beta = 0.0f,
  };
  return rok_cl_gemm(kernels, &g, error);
}

char *rok_cl_standin_describe(const char *op_name, const char *kind, const RokClStandin *shape) {
  double flops = 2.0 * (double)shape->batch * (double)shape->m * (double)shape->n * (double)shape->k;
  return g_strdup_printf("op '%s' (kind %s) has no kernel: running a stand-in GEMM of %.3g FLOPs "
                         "(%" G_GUINT64_FORMAT " x [%" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                         "]) on buffers of its size",
                         op_name, kind, flops, shape->batch, shape->m, shape->n, shape->k);
}

#endif /* ROK_WITH_OPENCL */
