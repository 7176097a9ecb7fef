/* Results: the engine's figures, extended over the whole step, and their
 * JSON summary. */
#include "sim-private.h"

#include "rok/core.h"

static void counters_add(SimCounters *total, const SimCounters *a, const SimCounters *b, gint64 times) {
  total->compute_ns += times * (a->compute_ns - b->compute_ns);
  total->recompute_ns += times * (a->recompute_ns - b->recompute_ns);
  for (guint i = 0; i < ROK_STALL_COUNT; i++)
    total->stall_ns[i] += times * (a->stall_ns[i] - b->stall_ns[i]);
  for (guint i = 0; i < ROK_STREAM_COUNT; i++)
    total->busy_ns[i] += times * (a->busy_ns[i] - b->busy_ns[i]);
  total->d2h_bytes += times * (a->d2h_bytes - b->d2h_bytes);
  total->h2d_bytes += times * (a->h2d_bytes - b->h2d_bytes);
  total->nvme_write_bytes += times * (a->nvme_write_bytes - b->nvme_write_bytes);
  total->nvme_read_bytes += times * (a->nvme_read_bytes - b->nvme_read_bytes);
  total->forwarded += times * (a->forwarded - b->forwarded);
}

/* The micro-batches not simulated in detail repeat the last detailed
 * period (see sim.h). */
static gint64 extrapolate(const SimEngine *e, guint64 micro_batches, SimCounters *total) {
  *total = e->counters;
  gint64 step = e->end_time;
  if (micro_batches <= e->n_mb)
    return step;
  gint64 times = (gint64)(micro_batches - e->n_mb);
  guint d = e->n_mb;
  if (d >= 2) {
    counters_add(total, &e->snapshots[d - 1], &e->snapshots[d - 2], times);
    return step + times * (e->mb_start[d - 1] - e->mb_start[d - 2]);
  }
  counters_add(total, &e->snapshots[d], &e->snapshots[0], times);
  return step + times * e->bwd0_end;
}

static void fill_counters(RokSimResult *r, const SimCounters *c) {
  r->compute_ns = c->compute_ns;
  r->recompute_ns = c->recompute_ns;
  r->stall_total_ns = 0;
  for (guint i = 0; i < ROK_STALL_COUNT; i++) {
    r->stall_ns[i] = c->stall_ns[i];
    r->stall_total_ns += c->stall_ns[i];
  }
  memcpy(r->busy_ns, c->busy_ns, sizeof r->busy_ns);
  r->pcie_d2h_bytes = c->d2h_bytes;
  r->pcie_h2d_bytes = c->h2d_bytes;
  r->nvme_write_bytes = c->nvme_write_bytes;
  r->nvme_read_bytes = c->nvme_read_bytes;
  r->forwarded_tensors = c->forwarded;
}

/* The saved activations the plan keeps in GPU memory, per model chunk. */
static void kept_per_chunk(const RokSim *sim, guint64 *kept) {
  const RokTrace *trace = sim->trace;
  guint v = sim->order.chunks, per_chunk = MAX(trace->layers / v, 1);
  for (guint t = 0; t < sim->n_tensors; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (sim->prog.eff[t] != ROK_DECISION_KEEP)
      continue;
    guint c = tensor->layer >= 0 ? MIN((guint)tensor->layer / per_chunk, v - 1)
                                 : sim->order.op_chunk[tensor->producer];
    kept[c] += tensor->bytes;
  }
}

/* Pipeline figures of the stage: its chunks' block times, and the
 * chunk-micro-batches its order holds at once with their kept bytes. */
static void fill_stage(RokSimResult *r, const RokSim *sim) {
  const SimOrder *order = &sim->order;
  guint v = order->chunks;
  r->stage = sim->trace->stage;
  r->stages = MAX(sim->trace->stages, 1);
  r->chunks = v;
  r->chunk_fwd_ns = g_new0(gint64, v);
  r->chunk_bwd_ns = g_new0(gint64, v);
  for (guint c = 0; c < v; c++) {
    r->chunk_fwd_ns[c] = order->block_ns[c] / MAX(order->block_count[c], 1);
    r->chunk_bwd_ns[c] = order->block_ns[v + c] / MAX(order->block_count[v + c], 1);
  }
  r->optimizer_ns = sim->optimizer_ns;
  r->stage_ns = r->step_ns;
  g_autofree guint64 *kept = g_new0(guint64, v);
  kept_per_chunk(sim, kept);
  guint64 held = 0, count = 0;
  for (guint i = 0; i < order->blocks->len; i++) {
    const SimBlock *b = &g_array_index(order->blocks, SimBlock, i);
    held = b->backward ? held - kept[b->vstage] : held + kept[b->vstage];
    count = b->backward ? count - 1 : count + 1;
    r->held_activation_bytes = MAX(r->held_activation_bytes, held);
    r->in_flight = MAX(r->in_flight, count);
  }
}

static void fill_comm(RokSimResult *r, const RokSim *sim) {
  gint64 m = (gint64)r->micro_batches, on_stream = sim->comm_mb_ns * m;
  r->tp_comm_ns = (sim->comm_mb_ns - sim->zero3_exposed_ns) * m;
  r->compute_ns = MAX(r->compute_ns - on_stream - sim->dp_exposed_ns, 0); /* the engine ran them as compute */
  r->dp_comm_ns = sim->dp_ns;
  r->dp_exposed_ns = sim->dp_exposed_ns;
  r->zero3_comm_ns = sim->zero3_ns * m;
  r->zero3_exposed_ns = sim->zero3_exposed_ns * m;
  r->exposed_comm_ns = on_stream + r->dp_exposed_ns;
}

RokSimResult *sim_result_new(RokSim *sim) {
  SimEngine *e = &sim->engine;
  const RokTrace *trace = sim->trace;
  RokSimResult *r = g_new0(RokSimResult, 1);
  r->micro_batches = MAX(trace->micro_batches_per_step, 1);
  r->detailed_micro_batches = e->n_mb;
  SimCounters total;
  r->step_ns = extrapolate(e, r->micro_batches, &total);
  fill_counters(r, &total);
  r->events = e->counters.events;
  r->step_time_s = (double)r->step_ns / 1e9;
  r->tokens_per_s = r->step_ns > 0 ? (double)trace->tokens_per_micro_batch * (double)r->micro_batches / r->step_time_s : 0;
  r->tokens_per_gpu_s = r->tokens_per_s / (double)rok_trace_replica_gpus(trace);
  r->model_flops_per_gpu_s =
      r->step_ns > 0 ? rok_trace_model_flops(trace) * (double)r->micro_batches / r->step_time_s : 0;
  r->mfu = sim->hw->gpu.peak_flops > 0 ? r->model_flops_per_gpu_s / sim->hw->gpu.peak_flops : 0;
  r->fixed_bytes = rok_fixed_memory_bytes(&trace->fixed);
  r->budget_bytes = e->budget;
  r->gpu_memory_bytes = sim->hw->gpu.memory;
  r->peak_bytes = e->peak;
  r->activation_peak_bytes = e->peak - r->fixed_bytes;
  r->fits = e->peak <= sim->hw->gpu.memory;
  r->within_budget = e->peak <= e->budget;
  r->budget_bound = e->budget_bound;
  r->same_budget_lo = e->budget_lo;
  r->same_budget_hi = e->budget_hi;
  r->same_window_lo = e->window_lo;
  r->same_window_hi = e->window_hi;
  r->peak_kind = e->peak_kind;
  r->peak_op = e->peak_op;
  r->peak_micro_batch = e->peak_mb;
  r->peak_time_ns = e->peak_time;
  r->staging_peak_bytes = e->staging_peak;
  r->host_peak_bytes = e->host_peak;
  r->actions = g_steal_pointer(&e->actions);
  r->deps = g_steal_pointer(&e->deps);
  r->samples = g_steal_pointer(&e->samples);
  fill_stage(r, sim);
  fill_comm(r, sim);
  return r;
}

void rok_sim_result_free(RokSimResult *result) {
  if (result == NULL)
    return;
  g_clear_pointer(&result->actions, g_array_unref);
  g_clear_pointer(&result->deps, g_array_unref);
  g_clear_pointer(&result->samples, g_array_unref);
  g_free(result->chunk_fwd_ns);
  g_free(result->chunk_bwd_ns);
  g_free(result);
}

static json_object *seconds(gint64 ns) {
  return rok_json_new_double((double)ns / 1e9);
}

static json_object *peak_json(const RokSimResult *r, const RokTrace *trace) {
  json_object *peak = json_object_new_object();
  json_object_object_add(peak, "kind", json_object_new_string(rok_action_kind_name(r->peak_kind)));
  gboolean has_op = r->peak_op != ROK_NO_ID && trace && r->peak_op < trace->ops->len;
  json_object_object_add(peak, "op", has_op ? json_object_new_string(rok_trace_op(trace, r->peak_op)->name) : NULL);
  json_object_object_add(peak, "micro_batch", json_object_new_uint64(r->peak_micro_batch));
  json_object_object_add(peak, "time_s", seconds(r->peak_time_ns));
  return peak;
}

static json_object *pipeline_json(const RokSimResult *r) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "stage", json_object_new_uint64(r->stage));
  json_object_object_add(o, "stages", json_object_new_uint64(r->stages));
  json_object_object_add(o, "virtual_stages", json_object_new_uint64(r->chunks));
  json_object_object_add(o, "in_flight", json_object_new_uint64(r->in_flight));
  json_object_object_add(o, "held_activation_bytes", json_object_new_uint64(r->held_activation_bytes));
  json_object_object_add(o, "stage_s", seconds(r->stage_ns));
  json_object_object_add(o, "bubble_s", seconds(r->bubble_ns));
  json_object_object_add(o, "bubble_fraction",
                         rok_json_new_double(r->step_ns > 0 ? (double)r->bubble_ns / (double)r->step_ns : 0));
  json_object_object_add(o, "send_s", seconds(r->send_ns));
  json_object *fwd = json_object_new_array(), *bwd = json_object_new_array();
  for (guint c = 0; c < r->chunks; c++) {
    json_object_array_add(fwd, seconds(r->chunk_fwd_ns[c]));
    json_object_array_add(bwd, seconds(r->chunk_bwd_ns[c]));
  }
  json_object_object_add(o, "chunk_forward_s", fwd);
  json_object_object_add(o, "chunk_backward_s", bwd);
  return o;
}

json_object *rok_sim_result_to_json(const RokSimResult *r, const RokTrace *trace) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "step_time_s", rok_json_new_double(r->step_time_s));
  json_object_object_add(o, "tokens_per_s", rok_json_new_double(r->tokens_per_s));
  json_object_object_add(o, "replica_gpus", json_object_new_uint64(rok_trace_replica_gpus(trace)));
  json_object_object_add(o, "tokens_per_gpu_s", rok_json_new_double(r->tokens_per_gpu_s));
  json_object_object_add(o, "model_flops_per_gpu_s", rok_json_new_double(r->model_flops_per_gpu_s));
  json_object_object_add(o, "mfu", rok_json_new_double(r->mfu));
  json_object_object_add(o, "peak_bytes", json_object_new_uint64(r->peak_bytes));
  json_object_object_add(o, "activation_peak_bytes", json_object_new_uint64(r->activation_peak_bytes));
  json_object_object_add(o, "compute_s", seconds(r->compute_ns));
  json_object_object_add(o, "recompute_s", seconds(r->recompute_ns));
  json_object_object_add(o, "stall_s", seconds(r->stall_total_ns));
  json_object_object_add(o, "pcie_d2h_bytes", json_object_new_uint64(r->pcie_d2h_bytes));
  json_object_object_add(o, "pcie_h2d_bytes", json_object_new_uint64(r->pcie_h2d_bytes));
  json_object_object_add(o, "nvme_write_bytes", json_object_new_uint64(r->nvme_write_bytes));
  json_object_object_add(o, "nvme_read_bytes", json_object_new_uint64(r->nvme_read_bytes));
  json_object_object_add(o, "fits", json_object_new_boolean(r->fits));
  json_object_object_add(o, "fixed_bytes", json_object_new_uint64(r->fixed_bytes));
  json_object_object_add(o, "gpu_memory_bytes", json_object_new_uint64(r->gpu_memory_bytes));
  json_object_object_add(o, "budget_bytes", json_object_new_uint64(r->budget_bytes));
  json_object_object_add(o, "within_budget", json_object_new_boolean(r->within_budget));
  json_object_object_add(o, "peak_at", peak_json(r, trace));
  json_object *stalls = json_object_new_object();
  for (guint i = 0; i < ROK_STALL_COUNT; i++)
    json_object_object_add(stalls, rok_stall_cause_name(i), seconds(r->stall_ns[i]));
  json_object_object_add(o, "stall_s_by_cause", stalls);
  json_object *busy = json_object_new_object();
  for (guint i = 0; i < ROK_STREAM_COUNT; i++)
    json_object_object_add(busy, rok_stream_name(i), seconds(r->busy_ns[i]));
  json_object_object_add(o, "busy_s", busy);
  json_object_object_add(o, "staging_peak_bytes", json_object_new_uint64(r->staging_peak_bytes));
  json_object_object_add(o, "host_peak_bytes", json_object_new_uint64(r->host_peak_bytes));
  json_object_object_add(o, "forwarded_tensors", json_object_new_uint64(r->forwarded_tensors));
  json_object_object_add(o, "micro_batches", json_object_new_uint64(r->micro_batches));
  json_object_object_add(o, "detailed_micro_batches", json_object_new_uint64(r->detailed_micro_batches));
  json_object_object_add(o, "events", json_object_new_uint64(r->events));
  if (r->stages > 1)
    json_object_object_add(o, "pipeline", pipeline_json(r));
  json_object *comm = json_object_new_object();
  json_object_object_add(comm, "exposed_s", seconds(r->exposed_comm_ns));
  json_object_object_add(comm, "tensor_parallel_s", seconds(r->tp_comm_ns));
  json_object_object_add(comm, "data_parallel_s", seconds(r->dp_comm_ns));
  json_object_object_add(comm, "data_parallel_exposed_s", seconds(r->dp_exposed_ns));
  json_object_object_add(comm, "zero3_s", seconds(r->zero3_comm_ns));
  json_object_object_add(comm, "zero3_exposed_s", seconds(r->zero3_exposed_ns));
  json_object_object_add(comm, "pipeline_send_s", seconds(r->send_ns));
  json_object_object_add(o, "communication", comm);
  return o;
}
