/* GEMMs by shape: the GEMM model's time of an op (rok_hw_gemm_op_seconds),
 * and the warning for shapes far from those a profile was calibrated on. */
#include "sim-private.h"

#include "rok/core.h"

double sim_gemm_seconds(const RokHw *hw, const RokOp *op, gboolean backward, double flops, double bytes) {
  RokHwGemmShape shape = op->kind == ROK_OP_FLASH_ATTENTION ? ROK_HW_GEMM_FLASH : ROK_HW_GEMM_PLAIN;
  return rok_hw_gemm_op_seconds(hw, shape, op->dims, backward, flops, bytes);
}

/* GEMM ops whose times the simulator takes from the GEMM model (no
 * measured time, no measured rate for the kind, its shape not timed). */
static gboolean modelled_gemm(const RokHw *hw, const RokOp *op) {
  if (!rok_op_kind_is_gemm(op->kind) || op->fwd_time_s >= 0 ||
      rok_hw_gemm_op_measured(hw, rok_op_kind_name(op->kind), op->dims, FALSE) >= 0)
    return FALSE;
  const RokHwOpRates *rates = rok_hw_op_rates(hw, rok_op_kind_name(op->kind));
  return rates == NULL || rates->len[ROK_HW_FORWARD] == 0;
}

char *rok_sim_far_shapes(const RokTrace *trace, const RokHw *hw) {
  guint far = 0, first = 0;
  for (guint i = 0; i < trace->ops->len; i++) {
    const RokOp *op = rok_trace_op(trace, i);
    if (modelled_gemm(hw, op) && rok_hw_gemm_far(hw, op->dims) && far++ == 0)
      first = i;
  }
  if (far == 0)
    return NULL;
  const RokOp *op = rok_trace_op(trace, first);
  g_autofree char *range = rok_hw_gemm_range_text(hw);
  return g_strdup_printf("%u GEMM op%s of %s (first %s: batch %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
                         "x%" G_GUINT64_FORMAT ") %s more than %gx outside the shapes hardware profile %s was "
                         "calibrated on (%s): their times are extrapolated by its GEMM model (`rok calibrate "
                         "--model` measures a model's own shapes)",
                         far, far == 1 ? "" : "s", trace->model_name ? trace->model_name : "this model", op->name,
                         op->dims[0], op->dims[1], op->dims[2], op->dims[3], far == 1 ? "lies" : "lie", ROK_HW_FAR_FACTOR,
                         hw->name ? hw->name : "(unnamed)", range);
}
