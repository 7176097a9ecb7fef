/* tba: SSDTrain's adaptive keep (Wu et al., arXiv 2408.10013), with the
 * transformer layers as modules (see plan.h). */
#include "strategy-private.h"

#include "rok/core.h"

typedef struct {
  double bytes;  /* offloadable */
  double before; /* forward seconds before the layer's first op */
  double bwd;    /* backward seconds of the layer's ops */
  gboolean seen;
} Layer;

static void measure(const RokTrace *trace, const RokSim *sim, const RokStrategyOptions *options, Layer *layers,
                    double *forward) {
  guint n = trace->layers;
  *forward = 0;
  for (guint o = 0; o < trace->ops->len; o++) {
    gint layer = rok_trace_op(trace, o)->layer;
    if (layer >= 0 && (guint)layer < n) {
      if (!layers[layer].seen)
        layers[layer].before = *forward;
      layers[layer].seen = TRUE;
      layers[layer].bwd += (double)rok_sim_op_ns(sim, o, TRUE) / 1e9;
    }
    *forward += (double)rok_sim_op_ns(sim, o, FALSE) / 1e9;
  }
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (plan_strategy_offloadable(tensor, options) && (guint)tensor->layer < n)
      layers[tensor->layer].bytes += (double)tensor->bytes;
  }
}

/* Layer i goes to the SSDs when both hold:
 * - SSDTrain's rule: everything written before it, plus its own write and
 *   read, fit through the write path before its backward ends:
 *   (B_before + 2·B_i) / (3·T − 2·T_before) <= write bandwidth;
 * - its read hides under the backward of the layers the prefetcher looks
 *   ahead over: B_i / bwd(i+1 .. i+look-ahead) <= read bandwidth. */
static gboolean fits(const Layer *layers, guint n, guint i, double written, double forward, double write_bw,
                     double read_bw) {
  double window = 3 * forward - 2 * layers[i].before, behind = 0;
  for (guint j = i + 1; j < n && j <= i + ROK_STEP_DEFAULT_PREFETCH_WINDOW; j++)
    behind += layers[j].bwd;
  return layers[i].seen && window > 0 && (written + 2 * layers[i].bytes) / window <= write_bw &&
         (layers[i].bytes == 0 || (behind > 0 && layers[i].bytes / behind <= read_bw));
}

gboolean rok_strategy_tba_layers(const RokTrace *trace, const RokHw *hw, const RokStrategyOptions *options,
                                 guint *n, GError **error) {
  RokStrategyOptions defaults;
  if (options == NULL) {
    rok_strategy_options_init(&defaults);
    options = &defaults;
  }
  *n = 0;
  if (!plan_strategy_check_nvme(ROK_STRATEGY_TBA, hw, error))
    return FALSE;
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, error);
  if (sim == NULL)
    return FALSE;
  guint count = trace->layers;
  g_autofree Layer *layers = g_new0(Layer, MAX(count, 1));
  double forward;
  measure(trace, sim, options, layers, &forward);
  double write_bw = MIN(hw->pcie.d2h_bandwidth, rok_hw_nvme_write_bandwidth(hw));
  double read_bw = MIN(hw->pcie.h2d_bandwidth, rok_hw_nvme_read_bandwidth(hw));
  double written = 0;
  /* The last layer is always kept: its backward follows at once. */
  for (guint i = 0; i + 1 < count && fits(layers, count, i, written, forward, write_bw, read_bw); i++) {
    written += layers[i].bytes;
    *n = i + 1;
  }
  return TRUE;
}
