/* Weighted max-min fair rates by progressive filling (see fluid.h). With a
 * handful of flows (one per transfer stream) the quadratic loop is cheap. */
#include "fluid.h"

/* The rate a flow gets alone, and which resource (or its cap) sets it. */
static double solo_rate(const RokFlow *flow, gint *limit) {
  double solo = flow->cap > 0 ? flow->cap : G_MAXDOUBLE;
  *limit = -1;
  for (gint r = 0; r < ROK_LINK_COUNT; r++)
    if (flow->speed[r] > 0 && flow->speed[r] < solo) {
      solo = flow->speed[r];
      *limit = r;
    }
  return solo;
}

void sim_fluid_share(RokFlow *flows, guint n_flows) {
  sim_fluid_share_taken(flows, n_flows, NULL);
}

void sim_fluid_share_taken(RokFlow *flows, guint n_flows, const double *taken) {
  double solo[n_flows ? n_flows : 1], used[ROK_LINK_COUNT] = {0};
  for (gint r = 0; taken != NULL && r < ROK_LINK_COUNT; r++)
    used[r] = CLAMP(taken[r], 0.0, 1.0);
  gint limit[n_flows ? n_flows : 1];
  gboolean frozen[n_flows ? n_flows : 1];
  guint left = 0;
  for (guint f = 0; f < n_flows; f++) {
    frozen[f] = !flows[f].active;
    if (flows[f].active) {
      solo[f] = solo_rate(&flows[f], &limit[f]);
      left++;
    }
  }
  while (left > 0) {
    /* The level at which each resource would saturate; the first minimal
     * one wins ties (the array before PCIe). */
    double level = 1.0;
    gint saturated = -1;
    for (gint r = 0; r < ROK_LINK_COUNT; r++) {
      double demand = 0;
      for (guint f = 0; f < n_flows; f++)
        if (!frozen[f] && flows[f].speed[r] > 0)
          demand += solo[f] / flows[f].speed[r];
      if (demand > 0 && (1.0 - used[r]) / demand < level) {
        level = MAX(0.0, (1.0 - used[r]) / demand);
        saturated = r;
      }
    }
    for (guint f = 0; f < n_flows; f++) {
      if (frozen[f] || (saturated >= 0 && flows[f].speed[saturated] <= 0))
        continue;
      flows[f].rate = level * solo[f];
      flows[f].bottleneck = saturated >= 0 ? saturated : limit[f];
      for (gint r = 0; r < ROK_LINK_COUNT; r++)
        if (flows[f].speed[r] > 0)
          used[r] += flows[f].rate / flows[f].speed[r];
      frozen[f] = TRUE;
      left--;
    }
  }
}
