/* The copy streams predicted again at the speed the copies ran at while
 * the rows ran. On a CPU device a copy leg is the host's memory at work
 * (the copy, the host's check of it) on the processors that run the
 * kernels, and a virtual machine's host moves that memory's speed within
 * minutes (the development VM, 2026-12-07: the copies timed 0-45% slower
 * than a calibration minutes old): validate times the copies before each
 * round (rok_calib_copy_speed) and predicts each copy stream at their
 * median speed beside the profile's own prediction, which it leaves as it
 * is.
 *
 * Why the host's checks with the copies: they read the bytes a copy just
 * moved, through the same memory. Re-predicting kept runs of the
 * development VM (2026-12-07, 18 runs of validate-gpt and the LLaMA-shaped
 * model, 70 and 80 copy streams each way; tests/bench/repredict.py
 * --at-copy-speed) with the pcie figures alone at the copies' speed took
 * the streams within 15% of their prediction from 47 and 29 (d2h) and 35
 * and 44 (h2d) to 54, 44, 41 and 50; with the checks too, to 55, 56, 47
 * and 55. In the eight
 * runs taken after it that day, 54 of 80 against 45, though two came out
 * worse: the probe had the h2d copies 23-39% slow where the streams ran
 * as predicted. A prediction beside the profile's, not in its place. */
#include <math.h>

#include "validate-private.h"
#include "rok/sim.h"

RokHw *validate_hw_at_copy_speed(const RokHw *hw, double d2h, double h2d) {
  RokHw *at = rok_hw_copy(hw);
  double both = (d2h + h2d) / 2;
  at->pcie.d2h_bandwidth /= d2h;
  at->pcie.h2d_bandwidth /= h2d;
  /* One latency both ways: each ratio is its way's copies of 256 KiB to
   * 1 MiB over latency plus bytes at the rate, mostly bytes. */
  at->pcie.latency = (gint64)llround((double)at->pcie.latency * both);
  at->host.checksum_bandwidth /= both;
  for (guint i = 0; i < at->host.checksum_rates_len; i++)
    at->host.checksum_rates[i].rate /= both;
  return at;
}

gboolean validate_copies_at_speed(RokValidation *v, const RokTrace *trace, const RokHw *hw, const GPtrArray *planned,
                                  GError **error) {
  g_return_val_if_fail(planned->len == v->rows->len, FALSE);
  double d2h = v->copy_speed[0].median, h2d = v->copy_speed[1].median;
  if (v->copy_speed[0].n == 0 || !(d2h > 0) || !(h2d > 0))
    return TRUE;
  g_autoptr(RokHw) at = validate_hw_at_copy_speed(hw, d2h, h2d);
  for (guint i = 0; i < v->rows->len; i++) {
    RokValidateRow *row = g_ptr_array_index(v->rows, i);
    const RokValidatePlanned *p = g_ptr_array_index(planned, i);
    g_autoptr(RokSchedule) schedule = NULL; /* simulated for a row that copies */
    for (guint k = 0; row->parts != NULL && k < row->parts->len; k++) {
      RokValidatePart *part = &g_array_index(row->parts, RokValidatePart, k);
      if (!validate_part_copy_measured(part))
        continue;
      if (schedule == NULL)
        schedule = rok_sim_schedule_new(trace, at, p->plan, rok_strategy_name(p->strategy), p->budget, error);
      if (schedule == NULL)
        return FALSE;
      part->predicted_at_copy_speed_s = validate_schedule_copy_s(schedule, validate_part_stream(part));
    }
  }
  return TRUE;
}
