/* Private to src/hw: what hw.c shares with hw-check.c (plausibility) and
 * gemm.c (the GEMM tiling fields). */
#pragma once

#include "rok/core.h"
#include "rok/hw.h"

/* Appends to `warnings` (char *) a sentence per value of `hw` that parses
 * but is implausible as written in `doc`. */
void hw_check_plausible(const RokHw *hw, const RokJsonDoc *doc, GPtrArray *warnings);

/* gpu.sm_count and gpu.gemm_tile: both or neither. */
gboolean hw_read_gemm_tiling(const RokJsonObj *gpu, RokHw *hw, GError **error);
void hw_gemm_tiling_to_json(const RokHw *hw, json_object *gpu);
