/* SSD figures of a plan: what it writes, the bandwidth it needs against
 * what the array gives, and how long the drives last.
 *
 * Following SSDTrain (Wu et al., arXiv 2408.10013): the write bandwidth a
 * GPU needs is its offloaded bytes per micro-batch over 1.5 times the
 * forward time (writes may spill into backward); the drives last their
 * credited endurance over the bytes written per day (RokSsdModel in
 * rok/plan.h states the assumptions), training around the clock. */
#include <math.h>

#include "rok/core.h"
#include "rok/plan.h"

#define SECONDS_PER_DAY 86400.0
#define DAYS_PER_YEAR 365.25

static double forward_seconds(const RokTrace *trace, const RokHw *hw) {
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, NULL);
  if (sim == NULL)
    return 0;
  gint64 ns = 0;
  for (guint o = 0; o < trace->ops->len; o++)
    ns += rok_sim_op_ns(sim, o, FALSE);
  return (double)ns / 1e9;
}

void rok_ssd_model_init(RokSsdModel *model) {
  *model = (RokSsdModel){.write_amplification = ROK_SSD_DEFAULT_WRITE_AMPLIFICATION,
                         .rated_write_amplification = 1.0, .retention_factor = 1.0};
}

double rok_ssd_credited_endurance(const RokHw *hw, const RokSsdModel *m) {
  double rated = (double)hw->nvme.devices * hw->nvme.endurance_pbw * 1e15;
  return rated * m->rated_write_amplification * m->retention_factor / m->write_amplification;
}

double rok_ssd_max_write_rate(const RokHw *hw, const RokSsdModel *m, double lifetime_s) {
  return lifetime_s > 0 ? rok_ssd_credited_endurance(hw, m) / lifetime_s : 0;
}

void rok_ssd_figures(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const RokSimResult *result,
                     const RokSsdModel *model, RokSsdFigures *out) {
  RokSsdModel defaults;
  if (model == NULL) {
    rok_ssd_model_init(&defaults);
    model = &defaults;
  }
  *out = (RokSsdFigures){.write_amplification = model->write_amplification,
                         .rated_write_amplification = model->rated_write_amplification,
                         .retention_factor = model->retention_factor};
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (rok_tensor_is_saved(tensor) && plan->decisions[t] == ROK_DECISION_OFFLOAD_NVME)
      out->offload_bytes_per_micro_batch += tensor->bytes;
  }
  out->write_bytes_per_step = result->nvme_write_bytes;
  double steps_per_day = result->step_time_s > 0 ? SECONDS_PER_DAY / result->step_time_s : 0;
  out->write_bytes_per_day = (double)out->write_bytes_per_step * steps_per_day;
  out->forward_time_s = forward_seconds(trace, hw);
  out->required_write_bandwidth =
      out->forward_time_s > 0 ? (double)out->offload_bytes_per_micro_batch / (1.5 * out->forward_time_s) : 0;
  out->average_write_bandwidth =
      result->step_time_s > 0 ? (double)out->write_bytes_per_step / result->step_time_s : 0;
  out->array_write_bandwidth = rok_hw_nvme_write_bandwidth(hw);
  out->path_write_bandwidth = MIN(out->array_write_bandwidth, hw->pcie.d2h_bandwidth);
  out->endurance_bytes = (double)hw->nvme.devices * hw->nvme.endurance_pbw * 1e15;
  out->capacity_bytes = hw->nvme.devices * hw->nvme.capacity;
  out->drives = hw->nvme.devices;
  out->node_gpus = MAX(hw->node.gpus, 1);
  double per_day = out->write_bytes_per_day;
  /* A measured profile has no rated endurance: the lifetime is unknown (NaN,
   * written as null), not zero. */
  if (out->endurance_bytes <= 0)
    out->lifetime_years = per_day > 0 ? NAN : INFINITY;
  else
    out->lifetime_years =
        per_day > 0 ? rok_ssd_credited_endurance(hw, model) / per_day / DAYS_PER_YEAR : INFINITY;
}

json_object *rok_ssd_figures_to_json(const RokSsdFigures *s) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "write_bytes_per_step", json_object_new_uint64(s->write_bytes_per_step));
  json_object_object_add(o, "write_bytes_per_day", rok_json_new_double(s->write_bytes_per_day));
  json_object_object_add(o, "offload_bytes_per_micro_batch", json_object_new_uint64(s->offload_bytes_per_micro_batch));
  json_object_object_add(o, "forward_time_s", rok_json_new_double(s->forward_time_s));
  json_object_object_add(o, "required_write_bandwidth", rok_json_new_double(s->required_write_bandwidth));
  json_object_object_add(o, "average_write_bandwidth", rok_json_new_double(s->average_write_bandwidth));
  json_object_object_add(o, "array_write_bandwidth", rok_json_new_double(s->array_write_bandwidth));
  json_object_object_add(o, "path_write_bandwidth", rok_json_new_double(s->path_write_bandwidth));
  json_object_object_add(o, "endurance_bytes", rok_json_new_double(s->endurance_bytes));
  json_object_object_add(o, "capacity_bytes", json_object_new_uint64(s->capacity_bytes));
  /* Nothing written lasts for ever, and an unrated drive's life is
   * unknown: both null, as JSON has neither infinity nor NaN. */
  json_object_object_add(o, "lifetime_years", rok_json_new_double(s->lifetime_years));
  json_object_object_add(o, "endurance_known", json_object_new_boolean(s->endurance_bytes > 0));
  double drives = (double)MAX(s->drives, 1);
  json_object_object_add(o, "drives", json_object_new_uint64(s->drives));
  json_object_object_add(o, "per_drive_write_bytes_per_day", rok_json_new_double(s->write_bytes_per_day / drives));
  json_object_object_add(o, "per_drive_required_write_bandwidth",
                         rok_json_new_double(s->required_write_bandwidth / drives));
  json_object_object_add(o, "node_gpus", json_object_new_uint64(s->node_gpus));
  json_object_object_add(o, "node_write_bytes_per_day",
                         rok_json_new_double(s->write_bytes_per_day * (double)s->node_gpus));
  json_object *assume = json_object_new_object();
  json_object_object_add(assume, "write_amplification", rok_json_new_double(s->write_amplification));
  json_object_object_add(assume, "rated_write_amplification", rok_json_new_double(s->rated_write_amplification));
  json_object_object_add(assume, "retention_factor", rok_json_new_double(s->retention_factor));
  json_object_object_add(assume, "hours_per_day", rok_json_new_double(24));
  json_object_object_add(assume, "days_per_year", rok_json_new_double(DAYS_PER_YEAR));
  json_object_object_add(assume, "required_write_bandwidth",
                         json_object_new_string("offloaded bytes per micro-batch / (1.5 x forward time), as "
                                                "SSDTrain (writes may spill into backward)"));
  json_object_object_add(o, "assumptions", assume);
  return o;
}
