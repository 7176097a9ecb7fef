/* The node section of a hardware profile: GPUs sharing a node's host
 * memory, pinned buffer and SSDs, and one GPU's share of them. */
#include "hw-private.h"
#include "rok/core.h"

static const char *const node_keys[] = {"gpus", "nvme_devices", "gpu", NULL};

static gboolean read_arrays(const RokJsonObj *o, RokHw *hw, GError **error) {
  json_object *list = NULL;
  if (!rok_json_get_array(o, "nvme_devices", FALSE, &list, error))
    return FALSE;
  if (list == NULL)
    return TRUE;
  guint n = (guint)json_object_array_length(list);
  g_autofree char *path = g_strconcat(o->path, ".nvme_devices", NULL);
  if (n != hw->node.gpus) {
    rok_json_error(error, o->doc, path, "must list the drives of each of the node's %" G_GUINT64_FORMAT " GPUs",
                   hw->node.gpus);
    return FALSE;
  }
  guint64 total = 0;
  for (guint g = 0; g < n; g++) {
    json_object *item = json_object_array_get_idx(list, g);
    gint64 value = json_object_is_type(item, json_type_int) ? json_object_get_int64(item) : -1;
    if (value < 0 || value > 1024) {
      rok_json_error(error, o->doc, path, "entry %u must be a count of drives (0 to 1024)", g);
      return FALSE;
    }
    hw->node.nvme_devices[g] = (guint64)value;
    total += (guint64)value;
  }
  hw->node.nvme_devices_len = n;
  if (total != hw->nvme.devices) {
    rok_json_error(error, o->doc, path, "adds up to %" G_GUINT64_FORMAT " drives, but nvme.devices is %" G_GUINT64_FORMAT,
                   total, hw->nvme.devices);
    return FALSE;
  }
  return TRUE;
}

gboolean hw_node_read(const RokJsonObj *root, RokHw *hw, GError **error) {
  g_auto(RokJsonObj) o = {0};
  hw->node.gpus = 1;
  if (!rok_json_child(root, "node", FALSE, &o, error))
    return FALSE;
  if (o.obj == NULL)
    return TRUE;
  guint64 gpu = G_MAXUINT64;
  if (!rok_json_only_keys(&o, node_keys, error) ||
      !rok_json_get_uint(&o, "gpus", TRUE, 1, ROK_HW_MAX_NODE_GPUS, &hw->node.gpus, error) ||
      !rok_json_get_uint(&o, "gpu", FALSE, 0, hw->node.gpus - 1, &gpu, error))
    return FALSE;
  hw->node.is_share = gpu != G_MAXUINT64;
  hw->node.gpu = hw->node.is_share ? gpu : 0;
  if (hw->node.is_share) /* a GPU's share: its figures are already its own */
    return rok_json_only_keys(&o, (const char *const[]){"gpus", "gpu", NULL}, error);
  if (!read_arrays(&o, hw, error))
    return FALSE;
  if (hw->node.nvme_devices_len == 0 && hw->nvme.devices % hw->node.gpus != 0) {
    g_autofree char *path = g_strconcat(o.path, ".gpus", NULL);
    rok_json_error(error, o.doc, path,
                   "does not divide nvme.devices (%" G_GUINT64_FORMAT "): list each GPU's drives in \"nvme_devices\"",
                   hw->nvme.devices);
    return FALSE;
  }
  return TRUE;
}

void hw_node_to_json(const RokHw *hw, json_object *o) {
  if (hw->node.gpus <= 1)
    return;
  json_object *node = json_object_new_object();
  json_object_object_add(node, "gpus", json_object_new_uint64(hw->node.gpus));
  if (hw->node.is_share) {
    json_object_object_add(node, "gpu", json_object_new_uint64(hw->node.gpu));
  } else if (hw->node.nvme_devices_len > 0) {
    json_object *list = json_object_new_array();
    for (guint g = 0; g < hw->node.nvme_devices_len; g++)
      json_object_array_add(list, json_object_new_uint64(hw->node.nvme_devices[g]));
    json_object_object_add(node, "nvme_devices", list);
  }
  json_object_object_add(o, "node", node);
}

static guint64 drives_of(const RokHw *hw, guint64 gpu) {
  return hw->node.nvme_devices_len > 0 ? hw->node.nvme_devices[gpu] : hw->nvme.devices / hw->node.gpus;
}

guint64 rok_hw_node_weakest_gpu(const RokHw *hw) {
  guint64 best = 0;
  for (guint64 g = 1; !hw->node.is_share && g < hw->node.gpus; g++)
    if (drives_of(hw, g) < drives_of(hw, best))
      best = g;
  return best;
}

RokHw *rok_hw_gpu_share(const RokHw *hw, guint64 gpu, GError **error) {
  if (hw->node.gpus <= 1 || hw->node.is_share)
    return rok_hw_copy(hw);
  if (gpu >= hw->node.gpus) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "hardware profile %s: GPU %" G_GUINT64_FORMAT
                " of a node of %" G_GUINT64_FORMAT " GPUs (0 to %" G_GUINT64_FORMAT ")",
                hw->name, gpu, hw->node.gpus, hw->node.gpus - 1);
    return NULL;
  }
  RokHw *share = rok_hw_copy(hw);
  guint64 n = hw->node.gpus;
  share->host.memory = hw->host.memory / n;
  share->host.pinned_buffer = hw->host.pinned_buffer / n;
  share->nvme.devices = drives_of(hw, gpu);
  share->node.gpu = gpu;
  share->node.is_share = TRUE;
  share->node.nvme_devices_len = 0;
  return share;
}
