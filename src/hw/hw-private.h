/* Private to src/hw: the GEMM tiling fields' reader and writer (gemm.c). */
#pragma once

#include "rok/hw.h"
#include "rok/core.h"

/* gpu.sm_count and gpu.gemm_tile: both or neither. */
gboolean hw_read_gemm_tiling(const RokJsonObj *gpu, RokHw *hw, GError **error);
void hw_gemm_tiling_to_json(const RokHw *hw, json_object *gpu);
