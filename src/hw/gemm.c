/* GEMM time by shape: tile and wave quantisation over the GPU's SMs.
 *
 * A GEMM C[m×n] = A[m×k]·B[k×n] runs as ceil(m/tm)·ceil(n/tn) output tiles
 * (times the batch), one thread block each, in waves of one tile per SM:
 * the last wave and the ragged edge tiles keep SMs idle, so the math takes
 * waves · (the time of one full tile) rather than flops / rate (NVIDIA,
 * "Matrix Multiplication Background User's Guide", DU-09799-001,
 * sections 3.1 "Tile Quantization" and 3.2 "Wave Quantization"). The
 * fraction of the machine's math that does useful work is what this file
 * computes; the simulator divides the profile's matmul_efficiency by it. */
#include "hw-private.h"

#include <math.h>

#include "rok/core.h"

#define MAX_SMS 65536
#define MAX_TILE 4096

gboolean hw_read_gemm_tiling(const RokJsonObj *gpu, RokHw *hw, GError **error) {
  guint64 tile[2];
  gsize len = 0;
  if (!rok_json_get_uint(gpu, "sm_count", FALSE, 1, MAX_SMS, &hw->gpu.sm_count, error) ||
      !rok_json_get_uint_array(gpu, "gemm_tile", FALSE, MAX_TILE, tile, 2, &len, error))
    return FALSE;
  gboolean has_tile = json_object_object_get_ex(gpu->obj, "gemm_tile", NULL);
  const char *key = NULL, *why = NULL;
  if (has_tile && (len != 2 || tile[0] == 0 || tile[1] == 0))
    key = "gemm_tile", why = "must be two positive integers: the rows and columns of cuBLAS's output tile";
  else if (has_tile != (hw->gpu.sm_count > 0))
    key = has_tile ? "gemm_tile" : "sm_count", why = "needs \"sm_count\" and \"gemm_tile\" together";
  if (key != NULL) {
    g_autofree char *path = g_strconcat(gpu->path, ".", key, NULL);
    rok_json_error(error, gpu->doc, path, "%s", why);
    return FALSE;
  }
  hw->gpu.gemm_tile[0] = has_tile ? tile[0] : 0;
  hw->gpu.gemm_tile[1] = has_tile ? tile[1] : 0;
  return TRUE;
}

void hw_gemm_tiling_to_json(const RokHw *hw, json_object *gpu) {
  if (hw->gpu.sm_count == 0)
    return;
  json_object_object_add(gpu, "sm_count", json_object_new_uint64(hw->gpu.sm_count));
  json_object *tile = json_object_new_array();
  json_object_array_add(tile, json_object_new_uint64(hw->gpu.gemm_tile[0]));
  json_object_array_add(tile, json_object_new_uint64(hw->gpu.gemm_tile[1]));
  json_object_object_add(gpu, "gemm_tile", tile);
}

guint64 rok_hw_gemm_tiles(const RokHw *hw, guint64 batch, guint64 m, guint64 n) {
  guint64 tm = hw->gpu.gemm_tile[0], tn = hw->gpu.gemm_tile[1];
  if (tm == 0 || tn == 0)
    return 0;
  return batch * ((m + tm - 1) / tm) * ((n + tn - 1) / tn);
}

double rok_hw_gemm_utilisation(const RokHw *hw, guint64 batch, guint64 m, guint64 n, guint64 k) {
  if (hw->gpu.sm_count == 0 || batch == 0 || m == 0 || n == 0 || k == 0)
    return 1.0;
  double tm = (double)hw->gpu.gemm_tile[0], tn = (double)hw->gpu.gemm_tile[1];
  double tiles = (double)rok_hw_gemm_tiles(hw, batch, m, n), sms = (double)hw->gpu.sm_count;
  double waves = ceil(tiles / sms);
  return (double)batch * (double)m * (double)n / (waves * sms * tm * tn);
}

/* Two GEMMs of equal FLOPs: the utilisation of both together is the
 * harmonic mean (their times add). */
static double both(double a, double b) {
  return 2.0 / (1.0 / a + 1.0 / b);
}

double rok_hw_gemm_op_utilisation(const RokHw *hw, RokHwGemmShape shape, const guint64 dims[4], gboolean backward) {
  if (hw->gpu.sm_count == 0)
    return 1.0;
  guint64 b = dims[0], m = dims[1], n = dims[2], k = dims[3];
  if (shape == ROK_HW_GEMM_FLASH) /* a block of query rows (forward) or key rows (backward) of one head */
    return rok_hw_gemm_utilisation(hw, b, backward ? n : m, hw->gpu.gemm_tile[1], k);
  /* Backward: dX = dY·Wᵀ is [m×k] over n, dW = Xᵀ·dY is [k×n] over m. */
  if (!backward)
    return rok_hw_gemm_utilisation(hw, b, m, n, k);
  return both(rok_hw_gemm_utilisation(hw, b, m, k, n), rok_hw_gemm_utilisation(hw, b, k, n, m));
}

double rok_hw_gemm_op_seconds(const RokHw *hw, RokHwGemmShape shape, const guint64 dims[4], gboolean backward,
                              double flops, double bytes) {
  double rate = hw->gpu.peak_flops * hw->gpu.matmul_efficiency * rok_hw_gemm_op_utilisation(hw, shape, dims, backward);
  return MAX(flops / rate, bytes / hw->gpu.hbm_bandwidth);
}
