/* rok-trace/1: the trace as a JSON file.
 *
 * { "format": "rok-trace/1", "model_name", "model" (optional config),
 *   "layers", "tokens_per_micro_batch", "micro_batches_per_step",
 *   "fixed": { params_total, params_per_gpu, weight_bytes, gradient_bytes,
 *              optimizer_bytes, optimizer_step_bytes },
 *   "ops": [ { id, name, layer, kind, dims[4], dropout, fwd_flops, bwd_flops,
 *              fwd_bytes, bwd_bytes, fwd_time_s?, bwd_time_s?, inputs[], outputs[] } ],
 *   "tensors": [ { id, name, layer, dtype, shape[], bytes, producer, needed_by[],
 *                  recomputable, recompute_from[] } ] }
 * Ids are array positions, written out so that a person can follow them. */
#include "rok/core.h"
#include "rok/trace.h"

#define TRACE_FORMAT "rok-trace/1"

static json_object *id_array(const GArray *ids) {
  json_object *array = json_object_new_array_ext(ids->len);
  for (guint i = 0; i < ids->len; i++)
    json_object_array_add(array, json_object_new_uint64(g_array_index(ids, guint, i)));
  return array;
}

static json_object *u64_array(const guint64 *values, guint n) {
  json_object *array = json_object_new_array_ext(n);
  for (guint i = 0; i < n; i++)
    json_object_array_add(array, json_object_new_uint64(values[i]));
  return array;
}

static json_object *op_to_json(const RokOp *op) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_uint64(op->id));
  json_object_object_add(o, "name", json_object_new_string(op->name));
  json_object_object_add(o, "layer", json_object_new_int(op->layer));
  json_object_object_add(o, "kind", json_object_new_string(rok_op_kind_name(op->kind)));
  json_object_object_add(o, "dims", u64_array(op->dims, 4));
  if (op->dropout > 0)
    json_object_object_add(o, "dropout", rok_json_new_double(op->dropout));
  json_object_object_add(o, "fwd_flops", json_object_new_uint64(op->fwd_flops));
  json_object_object_add(o, "bwd_flops", json_object_new_uint64(op->bwd_flops));
  json_object_object_add(o, "fwd_bytes", json_object_new_uint64(op->fwd_bytes));
  json_object_object_add(o, "bwd_bytes", json_object_new_uint64(op->bwd_bytes));
  if (op->fwd_time_s >= 0)
    json_object_object_add(o, "fwd_time_s", rok_json_new_double(op->fwd_time_s));
  if (op->bwd_time_s >= 0)
    json_object_object_add(o, "bwd_time_s", rok_json_new_double(op->bwd_time_s));
  json_object_object_add(o, "inputs", id_array(op->inputs));
  json_object_object_add(o, "outputs", id_array(op->outputs));
  return o;
}

static json_object *tensor_to_json(const RokTensor *t) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_uint64(t->id));
  json_object_object_add(o, "name", json_object_new_string(t->name));
  json_object_object_add(o, "layer", json_object_new_int(t->layer));
  json_object_object_add(o, "dtype", json_object_new_string(rok_dtype_name(t->dtype)));
  json_object_object_add(o, "shape", u64_array(t->shape, t->rank));
  json_object_object_add(o, "bytes", json_object_new_uint64(t->bytes));
  json_object_object_add(o, "producer", json_object_new_uint64(t->producer));
  json_object_object_add(o, "needed_by", id_array(t->needed_by));
  json_object_object_add(o, "recomputable", json_object_new_boolean(t->recomputable));
  json_object_object_add(o, "recompute_from", id_array(t->recompute_from));
  return o;
}

static json_object *fixed_to_json(const RokFixedMemory *f) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "params_total", json_object_new_uint64(f->params_total));
  json_object_object_add(o, "params_per_gpu", json_object_new_uint64(f->params_per_gpu));
  json_object_object_add(o, "weight_bytes", json_object_new_uint64(f->weight_bytes));
  json_object_object_add(o, "gradient_bytes", json_object_new_uint64(f->gradient_bytes));
  json_object_object_add(o, "optimizer_bytes", json_object_new_uint64(f->optimizer_bytes));
  json_object_object_add(o, "optimizer_step_bytes", json_object_new_uint64(f->optimizer_step_bytes));
  if (f->optimizer_step_flops > 0) /* traces of element-wise optimizers read as before */
    json_object_object_add(o, "optimizer_step_flops", json_object_new_uint64(f->optimizer_step_flops));
  return o;
}

json_object *rok_trace_to_json(const RokTrace *trace) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "format", json_object_new_string(TRACE_FORMAT));
  json_object_object_add(o, "model_name", json_object_new_string(trace->model_name));
  if (trace->model != NULL)
    json_object_object_add(o, "model", rok_model_to_json(trace->model));
  json_object_object_add(o, "layers", json_object_new_uint64(trace->layers));
  json_object_object_add(o, "tokens_per_micro_batch", json_object_new_uint64(trace->tokens_per_micro_batch));
  json_object_object_add(o, "micro_batches_per_step", json_object_new_uint64(trace->micro_batches_per_step));
  json_object_object_add(o, "fixed", fixed_to_json(&trace->fixed));
  json_object *ops = json_object_new_array_ext(trace->ops->len);
  for (guint i = 0; i < trace->ops->len; i++)
    json_object_array_add(ops, op_to_json(rok_trace_op(trace, i)));
  json_object_object_add(o, "ops", ops);
  json_object *tensors = json_object_new_array_ext(trace->tensors->len);
  for (guint i = 0; i < trace->tensors->len; i++)
    json_object_array_add(tensors, tensor_to_json(rok_trace_tensor(trace, i)));
  json_object_object_add(o, "tensors", tensors);
  return o;
}

gboolean rok_trace_save(const RokTrace *trace, const char *path, GError **error) {
  json_object *o = rok_trace_to_json(trace);
  gboolean ok = rok_json_write_file(o, path, error);
  json_object_put(o);
  return ok;
}

char *rok_trace_sha256(const RokTrace *trace, char **text) {
  json_object *doc = rok_trace_to_json(trace);
  char *canonical = rok_json_to_string(doc);
  json_object_put(doc);
  char *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, canonical, -1);
  if (text != NULL)
    *text = canonical;
  else
    g_free(canonical);
  return hash;
}
