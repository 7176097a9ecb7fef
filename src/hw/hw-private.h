/* Private to src/hw: what hw.c and interconnect.c share. */
#pragma once

#include "rok/core.h"
#include "rok/hw.h"

/* A latency in seconds as nanoseconds (hw.c). */
gboolean hw_read_latency(const RokJsonObj *o, const char *key, gint64 *ns, GError **error);
/* The optional "interconnect" section (interconnect.c). */
gboolean hw_interconnect_read(const RokJsonObj *root, RokHw *hw, GError **error);
void hw_interconnect_to_json(const RokHw *hw, json_object *o);
/* The optional "node" section (node.c); after the nvme section. */
gboolean hw_node_read(const RokJsonObj *root, RokHw *hw, GError **error);
void hw_node_to_json(const RokHw *hw, json_object *o);
