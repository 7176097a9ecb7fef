/* Reading rok-trace/1 files: every field checked, every reference resolved,
 * errors located in the file. */
#include "rok/model.h"
#include "rok/core.h"
#include "rok/trace.h"

#define TRACE_FORMAT "rok-trace/1"

static const char *const op_keys[] = {"id", "name", "layer", "kind", "dims", "dropout", "fwd_flops",
                                      "bwd_flops", "fwd_bytes", "bwd_bytes", "fwd_time_s", "bwd_time_s",
                                      "inputs", "outputs", NULL};
static const char *const tensor_keys[] = {"id", "name", "layer", "dtype", "shape", "bytes", "producer",
                                          "needed_by", "recomputable", "recompute_from", NULL};
static const char *const fixed_keys[] = {"params_total", "params_per_gpu", "weight_bytes", "gradient_bytes",
                                         "optimizer_bytes", "optimizer_step_bytes",
                                         "optimizer_step_flops", NULL};
static const char *const trace_keys[] = {"format", "model_name", "model", "layers", "tokens_per_micro_batch",
                                         "micro_batches_per_step", "fixed", "ops", "tensors", "pipeline_stage",
                                         NULL};

/* Ops and tensors are numbered by position; an id that says otherwise is a
 * file someone edited wrongly. */
static gboolean read_id(const RokJsonObj *o, guint expected, GError **error) {
  guint64 id = expected;
  if (!rok_json_get_uint(o, "id", TRUE, 0, G_MAXUINT, &id, error))
    return FALSE;
  if (id != expected) {
    g_autofree char *path = g_strconcat(o->path, ".id", NULL);
    rok_json_error(error, o->doc, path, "must be %u, the position in the array", expected);
    return FALSE;
  }
  return TRUE;
}

/* What the element readers share: the trace being read, and how many tensors
 * the file lists (ops, read first, may name any of them). */
typedef struct {
  RokTrace *trace;
  guint n_tensors;
  guint64 tensor_bytes; /* of the tensors read so far */
} Reading;

static gboolean read_op(Reading *r, const RokJsonObj *o, guint id, GError **error) {
  RokTrace *trace = r->trace;
  guint n_tensors = r->n_tensors;
  g_autofree char *name = NULL;
  gint64 layer = -1;
  int kind = 0;
  guint64 dims[4] = {0};
  gsize n_dims = 0;
  if (!rok_json_only_keys(o, op_keys, error) || !read_id(o, id, error) ||
      !rok_json_get_string(o, "name", TRUE, &name, error) ||
      !rok_json_get_int(o, "layer", TRUE, -1, (gint64)trace->layers - 1, &layer, error) ||
      !rok_json_get_enum(o, "kind", TRUE, rok_op_kind_names(), &kind, error) ||
      !rok_json_get_uint_array(o, "dims", TRUE, G_MAXUINT64 - 1, dims, 4, &n_dims, error))
    return FALSE;
  if (n_dims != 4) {
    g_autofree char *path = g_strconcat(o->path, ".dims", NULL);
    rok_json_error(error, o->doc, path, "must hold 4 numbers: batch, m, n, k");
    return FALSE;
  }
  guint op_id = rok_trace_add_op(trace, name, (gint)layer, kind, dims[0], dims[1], dims[2], dims[3]);
  RokOp *op = rok_trace_op(trace, op_id);
  const guint64 max = ROK_MAX_TRACE_COUNT;
  return rok_json_get_double(o, "dropout", FALSE, 0.0, 0.99, &op->dropout, error) &&
         rok_json_get_uint(o, "fwd_flops", TRUE, 0, max, &op->fwd_flops, error) &&
         rok_json_get_uint(o, "bwd_flops", TRUE, 0, max, &op->bwd_flops, error) &&
         rok_json_get_uint(o, "fwd_bytes", TRUE, 0, max, &op->fwd_bytes, error) &&
         rok_json_get_uint(o, "bwd_bytes", TRUE, 0, max, &op->bwd_bytes, error) &&
         rok_json_get_double(o, "fwd_time_s", FALSE, 0.0, 1e6, &op->fwd_time_s, error) &&
         rok_json_get_double(o, "bwd_time_s", FALSE, 0.0, 1e6, &op->bwd_time_s, error) &&
         rok_json_get_index_array(o, "inputs", TRUE, n_tensors - 1, op->inputs, error);
}

/* An error about element `index` of the array member `key` of `o`. */
static gboolean element_error(const RokJsonObj *o, const char *key, guint index, GError **error, const char *format,
                              ...) G_GNUC_PRINTF(5, 6);

static gboolean element_error(const RokJsonObj *o, const char *key, guint index, GError **error, const char *format,
                              ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_autofree char *path = g_strdup_printf("%s.%s[%u]", o->path, key, index);
  rok_json_error(error, o->doc, path, "%s", message);
  return FALSE;
}

/* Tensors come in the order they are made; backward needs a tensor after
 * it is made; a tensor is recomputed from tensors made before it. Checked
 * here, where a mistake can be located in the file. */
static gboolean check_tensor_references(const RokTrace *trace, const RokJsonObj *o, const RokTensor *tensor,
                                        GError **error) {
  guint previous = tensor->id > 0 ? rok_trace_tensor(trace, tensor->id - 1)->producer : 0;
  if (tensor->producer < previous) {
    g_autofree char *path = g_strconcat(o->path, ".producer", NULL);
    rok_json_error(error, o->doc, path, "must be at least %u, the producer of tensor %u: tensors are listed in "
                   "the order they are made", previous, tensor->id - 1);
    return FALSE;
  }
  for (guint i = 0; i < tensor->needed_by->len; i++)
    if (g_array_index(tensor->needed_by, guint, i) < tensor->producer)
      return element_error(o, "needed_by", i, error, "must be an op at or after the tensor's producer, op %u",
                           tensor->producer);
  for (guint i = 0; i < tensor->recompute_from->len; i++) {
    guint source = g_array_index(tensor->recompute_from, guint, i);
    if (source >= tensor->id || rok_trace_tensor(trace, source)->producer >= tensor->producer)
      return element_error(o, "recompute_from", i, error,
                           "must be a tensor made before this tensor's producer, op %u", tensor->producer);
  }
  return TRUE;
}

static gboolean read_tensor(Reading *r, const RokJsonObj *o, guint id, GError **error) {
  RokTrace *trace = r->trace;
  g_autofree char *name = NULL;
  gint64 layer = -1;
  int dtype = 0;
  guint64 shape[4] = {0}, bytes = 0, producer = 0;
  gsize rank = 0;
  guint n_ops = trace->ops->len;
  if (!rok_json_only_keys(o, tensor_keys, error) || !read_id(o, id, error) ||
      !rok_json_get_string(o, "name", TRUE, &name, error) ||
      !rok_json_get_int(o, "layer", TRUE, -1, (gint64)trace->layers - 1, &layer, error) ||
      !rok_json_get_enum(o, "dtype", TRUE, rok_dtype_names(), &dtype, error) ||
      !rok_json_get_uint_array(o, "shape", TRUE, G_MAXUINT64 - 1, shape, 4, &rank, error) ||
      !rok_json_get_uint(o, "bytes", TRUE, 0, G_MAXUINT64 - 1, &bytes, error) ||
      !rok_json_get_uint(o, "producer", TRUE, 0, n_ops - 1, &producer, error))
    return FALSE;
  g_autofree char *shape_path = g_strconcat(o->path, ".shape", NULL);
  if (rank == 0) {
    rok_json_error(error, o->doc, shape_path, "must hold 1 to 4 dimensions");
    return FALSE;
  }
  guint t = rok_trace_add_tensor(trace, name, (gint)layer, dtype, rank, shape, producer);
  RokTensor *tensor = rok_trace_tensor(trace, t);
  if (tensor->bytes == G_MAXUINT64) { /* the product saturated */
    rok_json_error(error, o->doc, shape_path, "is too large: its bytes do not fit 64 bits");
    return FALSE;
  }
  if (tensor->bytes != bytes) {
    g_autofree char *path = g_strconcat(o->path, ".bytes", NULL);
    rok_json_error(error, o->doc, path, "must be %" G_GUINT64_FORMAT ", the shape times the dtype's size",
                   tensor->bytes);
    return FALSE;
  }
  if (bytes > ROK_MAX_TRACE_COUNT - r->tensor_bytes) {
    g_autofree char *path = g_strconcat(o->path, ".bytes", NULL);
    rok_json_error(error, o->doc, path, "brings the bytes of all tensors past 2^62 (%" G_GUINT64_FORMAT
                   "): the sizes are absurd", ROK_MAX_TRACE_COUNT);
    return FALSE;
  }
  r->tensor_bytes += bytes;
  return rok_json_get_index_array(o, "needed_by", TRUE, n_ops - 1, tensor->needed_by, error) &&
         rok_json_get_bool(o, "recomputable", TRUE, &tensor->recomputable, error) &&
         rok_json_get_index_array(o, "recompute_from", TRUE, G_MAXUINT - 1, tensor->recompute_from, error) &&
         check_tensor_references(trace, o, tensor, error);
}

/* Outputs are rebuilt from the tensors' producers; the file's list must
 * agree. Inputs must have been made by earlier ops. */
static gboolean check_outputs(Reading *r, const RokJsonObj *o, guint id, GError **error) {
  const RokTrace *trace = r->trace;
  const GArray *inputs = rok_trace_op(trace, id)->inputs;
  for (guint i = 0; i < inputs->len; i++) {
    const RokTensor *input = rok_trace_tensor(trace, g_array_index(inputs, guint, i));
    if (input->producer >= id)
      return element_error(o, "inputs", i, error, "tensor %u is made by op %u, not by an op before this one",
                           input->id, input->producer);
  }
  g_autoptr(GArray) listed = g_array_new(FALSE, FALSE, sizeof(guint));
  if (!rok_json_get_index_array(o, "outputs", TRUE, trace->tensors->len - 1, listed, error))
    return FALSE;
  const GArray *built = rok_trace_op(trace, id)->outputs;
  gboolean same = listed->len == built->len &&
                  (built->len == 0 || memcmp(listed->data, built->data, built->len * sizeof(guint)) == 0);
  if (!same) {
    g_autofree char *path = g_strconcat(o->path, ".outputs", NULL);
    rok_json_error(error, o->doc, path, "must list exactly the tensors whose producer is op %u, in order", id);
    return FALSE;
  }
  return TRUE;
}

typedef gboolean (*ElementReader)(Reading *r, const RokJsonObj *element, guint index, GError **error);

static gboolean for_each_element(Reading *r, const RokJsonObj *root, const char *key, json_object *array,
                                 ElementReader reader, GError **error) {
  for (gsize i = 0; i < json_object_array_length(array); i++) {
    g_auto(RokJsonObj) element = {0};
    if (!rok_json_element(root, key, array, i, &element, error) ||
        !reader(r, &element, (guint)i, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean read_fixed_members(const RokJsonObj *o, RokFixedMemory *f, guint64 max, GError **error) {
  return rok_json_get_uint(o, "params_total", TRUE, 0, max, &f->params_total, error) &&
         rok_json_get_uint(o, "params_per_gpu", TRUE, 0, max, &f->params_per_gpu, error) &&
         rok_json_get_uint(o, "weight_bytes", TRUE, 0, max, &f->weight_bytes, error) &&
         rok_json_get_uint(o, "gradient_bytes", TRUE, 0, max, &f->gradient_bytes, error) &&
         rok_json_get_uint(o, "optimizer_bytes", TRUE, 0, max, &f->optimizer_bytes, error) &&
         rok_json_get_uint(o, "optimizer_step_bytes", TRUE, 0, max, &f->optimizer_step_bytes, error) &&
         rok_json_get_uint(o, "optimizer_step_flops", FALSE, 0, max, &f->optimizer_step_flops, error);
}

static gboolean read_fixed(RokTrace *trace, const RokJsonObj *root, GError **error) {
  g_auto(RokJsonObj) o = {0};
  RokFixedMemory *f = &trace->fixed;
  const guint64 max = ROK_MAX_TRACE_COUNT;
  if (!rok_json_child(root, "fixed", TRUE, &o, error) || !rok_json_only_keys(&o, fixed_keys, error) ||
      !read_fixed_members(&o, f, max, error))
    return FALSE;
  if (rok_fixed_memory_bytes(f) > max) { /* three terms below 2^62 each */
    rok_json_error(error, o.doc, o.path, "weight_bytes + gradient_bytes + optimizer_bytes must be at most 2^62 "
                   "(%" G_GUINT64_FORMAT "): the sizes are absurd", max);
    return FALSE;
  }
  return TRUE;
}

/* A pipeline stage's trace names its stage; the model says how many. */
static gboolean read_stage(RokTrace *trace, const RokJsonObj *root, GError **error) {
  guint64 stages = trace->model ? trace->model->pipeline_parallel : 1, stage = 0;
  if (!rok_json_get_uint(root, "pipeline_stage", stages > 1, 0, stages - 1, &stage, error))
    return FALSE;
  trace->stage = (guint)stage;
  trace->stages = (guint)stages;
  trace->chunks = trace->model ? (guint)trace->model->virtual_stages : 1;
  return TRUE;
}

/* A trace that carries its model config agrees with it: the layers of its
 * pipeline stage, the micro-batches of a step (a captured or edited trace
 * may say otherwise). */
static gboolean check_model(const RokTrace *trace, const RokJsonObj *root, GError **error) {
  guint64 first = 0, layers = 0, micro_batches = rok_model_micro_batches_per_step(trace->model);
  rok_model_stage_layers(trace->model, trace->stage, &first, &layers);
  if (trace->layers != layers) {
    rok_json_error(error, root->doc, "layers", "must be %" G_GUINT64_FORMAT ", the layers of pipeline stage %u of "
                   "the trace's model", layers, trace->stage);
    return FALSE;
  }
  if (trace->micro_batches_per_step != micro_batches) {
    rok_json_error(error, root->doc, "micro_batches_per_step", "must be %" G_GUINT64_FORMAT ", global_batch / "
                   "(micro_batch × data_parallel) of the trace's model", micro_batches);
    return FALSE;
  }
  return TRUE;
}

static gboolean read_header(RokTrace *trace, const RokJsonObj *root, GError **error) {
  g_auto(RokJsonObj) model = {0};
  guint64 layers = 0;
  /* Ops and tensors are checked against the layers, which come first. */
  if (!rok_json_check_format(root, TRACE_FORMAT, error) || !rok_json_only_keys(root, trace_keys, error) ||
      !rok_json_get_string(root, "model_name", TRUE, &trace->model_name, error) ||
      !rok_json_child(root, "model", FALSE, &model, error) ||
      !rok_json_get_uint(root, "layers", TRUE, 0, ROK_MAX_LAYERS, &layers, error) ||
      !rok_json_get_uint(root, "tokens_per_micro_batch", TRUE, 1, ROK_MAX_TRACE_TOKENS,
                         &trace->tokens_per_micro_batch, error) ||
      !rok_json_get_uint(root, "micro_batches_per_step", TRUE, 1, ROK_MAX_MICRO_BATCHES_PER_STEP,
                         &trace->micro_batches_per_step, error) ||
      !read_fixed(trace, root, error))
    return FALSE;
  trace->layers = (guint)layers;
  if (model.obj != NULL && (trace->model = rok_model_from_json(&model, error)) == NULL)
    return FALSE;
  return read_stage(trace, root, error) && (trace->model == NULL || check_model(trace, root, error));
}

RokTrace *rok_trace_from_doc(const RokJsonDoc *doc, GError **error) {
  g_auto(RokJsonObj) root = {0};
  g_autoptr(RokTrace) trace = rok_trace_new(NULL);
  json_object *ops = NULL, *tensors = NULL;
  if (!rok_json_root(doc, &root, error) || !read_header(trace, &root, error) ||
      !rok_json_get_array(&root, "ops", TRUE, &ops, error) ||
      !rok_json_get_array(&root, "tensors", TRUE, &tensors, error))
    return NULL;
  guint n_tensors = json_object_array_length(tensors);
  if (json_object_array_length(ops) == 0 || n_tensors == 0) {
    rok_json_error(error, doc, json_object_array_length(ops) == 0 ? "ops" : "tensors", "must not be empty");
    return NULL;
  }
  Reading r = {.trace = trace, .n_tensors = n_tensors};
  if (!for_each_element(&r, &root, "ops", ops, read_op, error) ||
      !for_each_element(&r, &root, "tensors", tensors, read_tensor, error) ||
      !for_each_element(&r, &root, "ops", ops, check_outputs, error))
    return NULL;
  GError *check = NULL;
  if (!rok_trace_check(trace, &check)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: %s", rok_json_doc_name(doc), check->message);
    g_error_free(check);
    return NULL;
  }
  return g_steal_pointer(&trace);
}

RokTrace *rok_trace_parse(const char *name, const char *text, gsize length, GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse(name, text, length, error);
  return doc == NULL ? NULL : rok_trace_from_doc(doc, error);
}

RokTrace *rok_trace_load(const char *path, GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_load(path, error);
  return doc == NULL ? NULL : rok_trace_from_doc(doc, error);
}
