/* Private to src/sim: fluid sharing of bandwidth between concurrent flows.
 *
 * A resource (a PCIe direction, the NVMe array) is shared by the flows
 * crossing it. `speed[r]` is the rate a flow would get with resource r to
 * itself (0: it does not use r); at rate x it uses x / speed[r] of r, and
 * the flows through r may use at most all of it. Each flow gets the same
 * fraction λ of its solo rate (min of its speeds and its own cap), λ raised
 * from 0 until a resource saturates; flows through it freeze there, the
 * others keep rising, up to λ = 1 (weighted max-min fairness). */
#pragma once

#include <glib.h>

typedef enum { ROK_LINK_NVME, ROK_LINK_D2H, ROK_LINK_H2D, ROK_LINK_COUNT } RokLink;

typedef struct {
  gboolean active;
  double speed[ROK_LINK_COUNT]; /* bytes/s; 0: not used */
  double cap;                   /* bytes/s of its own; 0: none */
  double rate;                  /* out: bytes/s */
  gint bottleneck;              /* out: the RokLink that limits it, or -1 (its own cap) */
} RokFlow;

/* The rate a flow gets alone: the least of its speeds and its cap; into
 * *limit (if not NULL) the RokLink that sets it, or -1 (its cap). */
double sim_fluid_solo_rate(const RokFlow *flow, gint *limit);
/* Set rate and bottleneck of every active flow. */
void sim_fluid_share(RokFlow *flows, guint n_flows);
/* The same with `taken[r]` of each resource in use by traffic outside the
 * flows (peer-to-peer collectives on a PCIe direction): the flows share
 * the rest. */
void sim_fluid_share_taken(RokFlow *flows, guint n_flows, const double *taken);
