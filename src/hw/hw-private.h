/* Private to src/hw: what hw.c shares with hw-check.c (plausibility), gemm.c
 * (the GEMM tiling fields), interconnect.c and node.c. */
#pragma once

#include "rok/core.h"
#include "rok/hw.h"

/* Appends to `warnings` (char *) a sentence per value of `hw` that parses
 * but is implausible as written in `doc`. */
void hw_check_plausible(const RokHw *hw, const RokJsonDoc *doc, GPtrArray *warnings);

/* gpu.sm_count and gpu.gemm_tile: both or neither. */
gboolean hw_read_gemm_tiling(const RokJsonObj *gpu, RokHw *hw, GError **error);
void hw_gemm_tiling_to_json(const RokHw *hw, json_object *gpu);

/* A latency in seconds as nanoseconds (hw.c). */
gboolean hw_read_latency(const RokJsonObj *o, const char *key, gint64 *ns, GError **error);
/* The optional "interconnect" section (interconnect.c). */
gboolean hw_interconnect_read(const RokJsonObj *root, RokHw *hw, GError **error);
void hw_interconnect_to_json(const RokHw *hw, json_object *o);
/* The optional "node" section (node.c); after the nvme section. */
gboolean hw_node_read(const RokJsonObj *root, RokHw *hw, GError **error);
void hw_node_to_json(const RokHw *hw, json_object *o);
/* The optional "calibrated_shapes" section (shapes.c). */
gboolean hw_shapes_read(const RokJsonObj *root, RokHw *hw, GError **error);
void hw_shapes_to_json(const RokHw *hw, json_object *o);
