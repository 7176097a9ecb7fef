/* The GEMMs an op runs, by shape, for the tile and wave quantisation of
 * rok_hw_gemm_utilisation(). Op dims are [batch, m, n, k] (trace.h). */
#include "sim-private.h"

/* Two GEMMs of equal FLOPs: the utilisation of both together is the
 * harmonic mean (their times add). */
static double both(double a, double b) {
  return 2.0 / (1.0 / a + 1.0 / b);
}

double sim_gemm_utilisation(const RokHw *hw, const RokOp *op, gboolean backward) {
  if (hw->gpu.sm_count == 0)
    return 1.0;
  guint64 b = op->dims[0], m = op->dims[1], n = op->dims[2], k = op->dims[3];
  switch (op->kind) {
  case ROK_OP_LINEAR:
  case ROK_OP_ATTN_SCORES:
  case ROK_OP_ATTN_CONTEXT:
    /* Backward: dX = dY·Wᵀ is [m×k] over n, dW = Xᵀ·dY is [k×n] over m. */
    if (!backward)
      return rok_hw_gemm_utilisation(hw, b, m, n, k);
    return both(rok_hw_gemm_utilisation(hw, b, m, k, n), rok_hw_gemm_utilisation(hw, b, k, n, m));
  case ROK_OP_FLASH_ATTENTION: {
    /* FlashAttention-2 gives each thread block a block of query rows
     * (forward) or of key rows (backward) of one head: one tile column. */
    guint64 rows = backward ? n : m, tn = hw->gpu.gemm_tile[1];
    return rok_hw_gemm_utilisation(hw, b, rows, tn, k);
  }
  default:
    return 1.0;
  }
}
