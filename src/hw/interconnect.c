/* The interconnect section of a hardware profile, and collectives costed
 * on it (alpha-beta, as NCCL's ring and tree algorithms move data). */
#include <math.h>

#include "hw-private.h"
#include "rok/core.h"

static const char *const interconnect_keys[] = {"gpus_per_node",        "intra_node_bandwidth",
                                                "intra_node_latency",   "inter_node_bandwidth",
                                                "inter_node_latency",   "intra_node_pcie",
                                                NULL};

gboolean hw_interconnect_read(const RokJsonObj *root, RokHw *hw, GError **error) {
  g_auto(RokJsonObj) o = {0};
  if (!rok_json_child(root, "interconnect", FALSE, &o, error))
    return FALSE;
  if (o.obj == NULL)
    return TRUE;
  return rok_json_only_keys(&o, interconnect_keys, error) &&
         rok_json_get_uint(&o, "gpus_per_node", TRUE, 1, 1024, &hw->interconnect.gpus_per_node, error) &&
         rok_json_get_rate(&o, "intra_node_bandwidth", TRUE, &hw->interconnect.intra_node_bandwidth, error) &&
         hw_read_latency(&o, "intra_node_latency", &hw->interconnect.intra_node_latency, error) &&
         rok_json_get_rate(&o, "inter_node_bandwidth", TRUE, &hw->interconnect.inter_node_bandwidth, error) &&
         hw_read_latency(&o, "inter_node_latency", &hw->interconnect.inter_node_latency, error) &&
         rok_json_get_bool(&o, "intra_node_pcie", FALSE, &hw->interconnect.intra_node_pcie, error);
}

void hw_interconnect_to_json(const RokHw *hw, json_object *o) {
  if (hw->interconnect.gpus_per_node == 0)
    return;
  json_object *ic = json_object_new_object();
  json_object_object_add(ic, "gpus_per_node", json_object_new_uint64(hw->interconnect.gpus_per_node));
  json_object_object_add(ic, "intra_node_bandwidth", rok_json_new_double(hw->interconnect.intra_node_bandwidth));
  json_object_object_add(ic, "intra_node_latency",
                         rok_json_new_double((double)hw->interconnect.intra_node_latency / 1e9));
  json_object_object_add(ic, "inter_node_bandwidth", rok_json_new_double(hw->interconnect.inter_node_bandwidth));
  json_object_object_add(ic, "inter_node_latency",
                         rok_json_new_double((double)hw->interconnect.inter_node_latency / 1e9));
  json_object_object_add(ic, "intra_node_pcie", json_object_new_boolean(hw->interconnect.intra_node_pcie));
  json_object_object_add(o, "interconnect", ic);
}

double rok_hw_collective_s(const RokHw *hw, RokCollective collective, double bytes, guint64 ranks,
                           gboolean inter_node) {
  if (hw->interconnect.gpus_per_node == 0 || (ranks < 2 && collective != ROK_COLLECTIVE_SEND) || bytes <= 0)
    return 0;
  double alpha = (double)(inter_node ? hw->interconnect.inter_node_latency : hw->interconnect.intra_node_latency) / 1e9;
  double beta = inter_node ? hw->interconnect.inter_node_bandwidth : hw->interconnect.intra_node_bandwidth;
  double n = (double)ranks, share = (n - 1) / n;
  switch (collective) {
  case ROK_COLLECTIVE_SEND:
    return alpha + bytes / beta;
  case ROK_COLLECTIVE_ALL_GATHER:
  case ROK_COLLECTIVE_REDUCE_SCATTER:
    return (n - 1) * alpha + share * bytes / beta;
  case ROK_COLLECTIVE_ALL_REDUCE: {
    double ring = 2 * (n - 1) * alpha + 2 * share * bytes / beta;
    double tree = 2 * ceil(log2(n)) * alpha + 2 * bytes / beta;
    return MIN(ring, tree);
  }
  }
  g_return_val_if_reached(0);
}
