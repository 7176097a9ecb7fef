/* Private to src/plan: what the baseline strategies share. */
#pragma once

#include "rok/plan.h"

/* A saved tensor of the layers that offload would move to NVMe. */
gboolean plan_strategy_offloadable(const RokTensor *tensor, const RokStrategyOptions *options);
/* Offload every offloadable tensor of `layer`. */
void plan_strategy_offload_layer(RokStepPlan *plan, const RokTrace *trace, gint layer,
                                const RokStrategyOptions *options);
/* ROK_ERROR_INPUT unless `hw` has SSDs. */
gboolean plan_strategy_check_nvme(RokStrategy strategy, const RokHw *hw, GError **error);
/* tba's plan (strategy-tba.c): its decisions and its prefetch window. */
gboolean plan_strategy_tba(RokStepPlan *plan, const RokTrace *trace, const RokHw *hw,
                           const RokStrategyOptions *options, GError **error);
/* The block of a layer's op or tensor, "attn" of "layer3.attn.qkv" (its
 * length in *len); NULL for a name without one ("layer3.input"). */
const char *plan_name_block(const char *name, gsize *len);
