/* Plans: what happens to every activation tensor of a step.
 *
 * The baseline strategies (DESIGN.md, "Strategies") turn a trace into a
 * RokSimPlan, one decision per tensor, with default simulator options.
 * Tensors outside the layers (layer -1: embedding, loss head) are kept by
 * every baseline; transient tensors get "keep" (the simulator ignores their
 * decision).
 *
 *   keep       every saved tensor stays in GPU memory.
 *   recompute  Megatron's full recompute, one layer per checkpoint: a
 *              layer's input (a tensor of layer L made by an op outside L)
 *              is kept, every other saved tensor of the layer recomputed,
 *              and the rebuild re-runs the layer's whole forward
 *              (options.rebuild_whole_layers), as Megatron does.
 *   selective  Megatron's selective recompute: the attention core (the
 *              outputs of attention scores, softmax and the dropout right
 *              after the softmax) is recomputed, the rest kept. With flash
 *              attention there is nothing to recompute: it equals keep.
 *   offload    every saved tensor of the layers with at least
 *              offload_min_elements elements goes to NVMe; smaller ones are
 *              kept (SSDTrain: "tensors under 8 Mi elements are not
 *              offloaded").
 *   tba        SSDTrain's adaptive keep: walking layers in forward order,
 *              layer i is offloaded (as `offload` would) while the writes
 *              and the reads stay hidden:
 *              (B_before + 2·B_i) / (3·T − 2·T_before) <= W (SSDTrain's
 *              rule: B a layer's offloadable bytes, T the forward time of
 *              the micro-batch, T_before the forward time before layer i,
 *              W the write path: min of PCIe d2h and the array's write
 *              rate) and B_i / (backward time of the layers the prefetcher
 *              looks ahead over) <= R (the read path: min of PCIe h2d and
 *              the array's read rate). From the first layer that fails,
 *              everything is kept; the last layer is always kept (its
 *              backward follows at once).
 *
 * The planner (`rok`) extends this header later. */
#pragma once

#include <glib.h>

#include "rok/hw.h"
#include "rok/sim.h"
#include "rok/trace.h"

G_BEGIN_DECLS

typedef enum {
  ROK_STRATEGY_KEEP,
  ROK_STRATEGY_RECOMPUTE,
  ROK_STRATEGY_SELECTIVE,
  ROK_STRATEGY_OFFLOAD,
  ROK_STRATEGY_TBA,
  ROK_STRATEGY_BASELINE_COUNT
} RokStrategy;

/* SSDTrain's floor: smaller tensors are not worth a transfer. */
#define ROK_OFFLOAD_MIN_ELEMENTS ((guint64)8 << 20)

typedef struct {
  guint64 offload_min_elements; /* default ROK_OFFLOAD_MIN_ELEMENTS */
} RokStrategyOptions;

void rok_strategy_options_init(RokStrategyOptions *options);

const char *rok_strategy_name(RokStrategy strategy);
/* "keep", "recompute", ...; an unknown name is ROK_ERROR_USAGE listing the
 * known ones. */
gboolean rok_strategy_from_name(const char *name, RokStrategy *strategy, GError **error);

/* The plan of a baseline strategy; `options` may be NULL (defaults).
 * offload and tba need NVMe devices in `hw` (ROK_ERROR_INPUT otherwise). */
RokSimPlan *rok_strategy_plan(RokStrategy strategy, const RokTrace *trace, const RokHw *hw,
                              const RokStrategyOptions *options, GError **error);

/* Layers that tba offloads (the first `n` layers, 0 <= n < trace->layers),
 * for reports; fails like rok_strategy_plan. */
gboolean rok_strategy_tba_layers(const RokTrace *trace, const RokHw *hw, const RokStrategyOptions *options,
                                 guint *n, GError **error);

G_END_DECLS
