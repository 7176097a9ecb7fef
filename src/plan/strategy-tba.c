/* tba: SSDTrain's adaptive keep (Wu et al., arXiv 2408.10013), decided per
 * module as SSDTrain does: a layer's attention block and its MLP block (the
 * second component of an op's name, "attn" of "layer3.attn.qkv"; the
 * layer's input goes with the block that reads it first). See plan.h. */
#include "strategy-private.h"

#include <string.h>

#include "rok/core.h"

typedef struct {
  gint layer;
  const char *block; /* in an op's name, `len` bytes */
  gsize len;
  double bytes;  /* offloadable */
  double before; /* forward seconds before the module's first op */
} Module;

const char *plan_name_block(const char *name, gsize *len) {
  const char *a = strchr(name, '.');
  const char *b = a != NULL ? strchr(a + 1, '.') : NULL;
  if (b == NULL)
    return NULL;
  *len = (gsize)(b - a - 1);
  return a + 1;
}

/* The module of layer `layer` named `block` (NULL: the layer's first). */
static Module *find(GArray *modules, gint layer, const char *block, gsize len) {
  for (guint i = 0; i < modules->len; i++) {
    Module *m = &g_array_index(modules, Module, i);
    if (m->layer == layer && (block == NULL || (m->len == len && strncmp(m->block, block, len) == 0)))
      return m;
  }
  return NULL;
}

/* The modules in forward order, with their forward start and bytes. */
static GArray *measure(const RokTrace *trace, const RokSim *sim, const RokStrategyOptions *options,
                       double *forward) {
  GArray *modules = g_array_new(FALSE, FALSE, sizeof(Module));
  *forward = 0;
  for (guint o = 0; o < trace->ops->len; o++) {
    const RokOp *op = rok_trace_op(trace, o);
    gsize len = 0;
    const char *block = plan_name_block(op->name, &len);
    if (op->layer >= 0 && (guint)op->layer < trace->layers && block != NULL &&
        find(modules, op->layer, block, len) == NULL) {
      Module m = {.layer = op->layer, .block = block, .len = len, .before = *forward};
      g_array_append_val(modules, m);
    }
    *forward += (double)rok_sim_op_ns(sim, o, FALSE) / 1e9;
  }
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    gsize len = 0;
    const char *block = plan_name_block(tensor->name, &len);
    Module *m = plan_strategy_offloadable(tensor, options) ? find(modules, tensor->layer, block, len) : NULL;
    if (m != NULL)
      m->bytes += (double)tensor->bytes;
  }
  return modules;
}

/* SSDTrain's rule: everything written before module i, plus its own write
 * and read, go through the write path before its backward ends:
 * (B_before + 2·B_i) / (3·T − 2·T_before) <= write bandwidth. */
static gboolean fits(const Module *m, double written, double forward, double write_bw) {
  double window = 3 * forward - 2 * m->before;
  return window > 0 && (written + 2 * m->bytes) / window <= write_bw;
}

/* The first `n` modules (forward order) that tba offloads, of `total`. */
static GArray *tba_modules(const RokTrace *trace, const RokHw *hw, const RokStrategyOptions *options, guint *n,
                           GError **error) {
  *n = 0;
  if (!plan_strategy_check_nvme(ROK_STRATEGY_TBA, hw, error))
    return NULL;
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, error);
  if (sim == NULL)
    return NULL;
  double forward;
  GArray *modules = measure(trace, sim, options, &forward);
  double write_bw = MIN(hw->pcie.d2h_bandwidth, rok_hw_nvme_write_bandwidth(hw));
  double written = 0;
  /* The last module is always kept: its backward follows at once. */
  for (guint i = 0; i + 1 < modules->len; i++) {
    const Module *m = &g_array_index(modules, Module, i);
    if (!fits(m, written, forward, write_bw))
      break;
    written += m->bytes;
    *n = i + 1;
  }
  return modules;
}

gboolean rok_strategy_tba_modules(const RokTrace *trace, const RokHw *hw, const RokStrategyOptions *options,
                                  guint *n, guint *total, GError **error) {
  RokStrategyOptions defaults;
  if (options == NULL) {
    rok_strategy_options_init(&defaults);
    options = &defaults;
  }
  g_autoptr(GArray) modules = tba_modules(trace, hw, options, n, error);
  if (total != NULL)
    *total = modules != NULL ? modules->len : 0;
  return modules != NULL;
}

gboolean plan_strategy_tba(RokStepPlan *plan, const RokTrace *trace, const RokHw *hw,
                           const RokStrategyOptions *options, GError **error) {
  guint n = 0;
  g_autoptr(GArray) modules = tba_modules(trace, hw, options, &n, error);
  if (modules == NULL)
    return FALSE;
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    gsize len = 0;
    const char *block = plan_name_block(tensor->name, &len);
    Module *m = plan_strategy_offloadable(tensor, options) ? find(modules, tensor->layer, block, len) : NULL;
    if (m != NULL && (guint)(m - &g_array_index(modules, Module, 0)) < n)
      plan->decisions[t] = ROK_DECISION_OFFLOAD_NVME;
  }
  /* SSDTrain's prefetcher reads a chunk (two modules) ahead, issued at a
   * chunk's end: two of rok's modules. Two ops (the literal "leaf
   * modules") stall SSDTrain's BERT by 8% where the paper measures keep's
   * speed. */
  plan->options.prefetch_unit = ROK_PREFETCH_MODULE;
  plan->options.prefetch_window = 2;
  return TRUE;
}
