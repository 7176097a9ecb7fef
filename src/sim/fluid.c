/* Weighted max-min fair rates by progressive filling (see fluid.h). With a
 * handful of flows (one per transfer stream) the quadratic loop is cheap. */
#include "fluid.h"

double sim_fluid_solo_rate(const RokFlow *flow, gint *limit) {
  double solo = flow->cap > 0 ? flow->cap : G_MAXDOUBLE;
  gint by = -1;
  for (gint r = 0; r < ROK_LINK_COUNT; r++)
    if (flow->speed[r] > 0 && flow->speed[r] < solo) {
      solo = flow->speed[r];
      by = r;
    }
  if (limit != NULL)
    *limit = by;
  return solo;
}

void sim_fluid_share(RokFlow *flows, guint n_flows) {
  sim_fluid_share_taken(flows, n_flows, NULL);
}

/* The active flows are listed once and the list shrinks as they freeze:
 * the simulator calls this at every change of its transfers. Sums run in
 * flow order, as they always have (the rates are bit for bit the same). */
void sim_fluid_share_taken(RokFlow *flows, guint n_flows, const double *taken) {
  guint n = n_flows ? n_flows : 1, left = 0;
  guint act[n];
  double solo[n];
  gint limit[n];
  for (guint f = 0; f < n_flows; f++)
    if (flows[f].active) {
      act[left] = f;
      solo[left] = sim_fluid_solo_rate(&flows[f], &limit[left]);
      left++;
    }
  if (left == 0)
    return;
  double used[ROK_LINK_COUNT] = {0};
  for (gint r = 0; taken != NULL && r < ROK_LINK_COUNT; r++)
    used[r] = CLAMP(taken[r], 0.0, 1.0);
  while (left > 0) {
    /* The level at which each resource would saturate; the first minimal
     * one wins ties (the array before PCIe). */
    double level = 1.0;
    gint saturated = -1;
    for (gint r = 0; r < ROK_LINK_COUNT; r++) {
      double demand = 0;
      for (guint i = 0; i < left; i++)
        if (flows[act[i]].speed[r] > 0)
          demand += solo[i] / flows[act[i]].speed[r];
      if (demand > 0 && (1.0 - used[r]) / demand < level) {
        level = MAX(0.0, (1.0 - used[r]) / demand);
        saturated = r;
      }
    }
    guint kept = 0;
    for (guint i = 0; i < left; i++) {
      RokFlow *flow = &flows[act[i]];
      if (saturated >= 0 && flow->speed[saturated] <= 0) { /* still rising */
        act[kept] = act[i];
        solo[kept] = solo[i];
        limit[kept] = limit[i];
        kept++;
        continue;
      }
      flow->rate = level * solo[i];
      flow->bottleneck = saturated >= 0 ? saturated : limit[i];
      for (gint r = 0; r < ROK_LINK_COUNT; r++)
        if (flow->speed[r] > 0)
          used[r] += flow->rate / flow->speed[r];
    }
    left = kept;
  }
}
