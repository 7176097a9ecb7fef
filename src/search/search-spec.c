/* The search's specification and its layouts. */
#include <math.h>

#include "search-private.h"
#include "rok/core.h"
#include "rok/model.h"

RokSearchSpec *rok_search_spec_new(const char *name, const char *text, gsize length, const char *const *sets,
                                   const RokHw *hw, GError **error) {
  g_autoptr(RokModel) model = NULL;
  g_autoptr(RokModelSource) source = rok_model_source_new(name, text, length, sets, &model, error);
  if (source == NULL)
    return NULL;
  RokSearchSpec *spec = g_new0(RokSearchSpec, 1);
  spec->model = g_steal_pointer(&source);
  spec->hw = rok_hw_copy(hw);
  spec->model_name = g_strdup(model->name);
  spec->layers = model->layers + model->decoder_layers;
  spec->global_batch = model->global_batch;
  spec->gpus_per_node = 8;
  spec->modes[0] = spec->modes[1] = TRUE;
  spec->top = 5;
  spec->prune = TRUE;
  return spec;
}

void rok_search_spec_free(RokSearchSpec *spec) {
  if (spec == NULL)
    return;
  rok_model_source_free(spec->model);
  rok_hw_free(spec->hw);
  g_free(spec->model_name);
  for (guint a = 0; a < ROK_SEARCH_AXIS_COUNT; a++)
    if (spec->values[a] != NULL)
      g_array_unref(spec->values[a]);
  g_free(spec);
}

gboolean rok_search_spec_set_range(RokSearchSpec *spec, RokSearchAxis axis, const char *range, GError **error) {
  g_return_val_if_fail((guint)axis < ROK_SEARCH_AXIS_COUNT, FALSE);
  GArray *values = rok_sweep_parse_range(range, FALSE, axis == ROK_SEARCH_ZERO ? 0 : 1, error);
  if (values == NULL)
    return FALSE;
  guint64 top = g_array_index(values, guint64, values->len - 1);
  if (axis == ROK_SEARCH_ZERO && top > 3) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "ZeRO stages are 0 to 3");
  } else {
    if (spec->values[axis] != NULL)
      g_array_unref(spec->values[axis]);
    spec->values[axis] = values;
    return TRUE;
  }
  g_array_unref(values);
  return FALSE;
}

gboolean rok_search_spec_set_gpus_per_node(RokSearchSpec *spec, guint64 gpus, GError **error) {
  if (gpus < 1 || gpus > 4096) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "GPUs per node must be 1 to 4096");
    return FALSE;
  }
  spec->gpus_per_node = gpus;
  return TRUE;
}

gboolean rok_search_spec_set_offload(RokSearchSpec *spec, const char *modes, GError **error) {
  static const char *const names[] = {"no", "yes", "both"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    if (g_strcmp0(modes, names[i]) == 0) {
      spec->modes[0] = i != 1;
      spec->modes[1] = i != 0;
      return TRUE;
    }
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "offload must be no, yes or both, not \"%s\"", modes);
  return FALSE;
}

void rok_search_spec_set_min_ssd_lifetime(RokSearchSpec *spec, double years) {
  spec->min_lifetime_years = years;
}

void rok_search_spec_set_top(RokSearchSpec *spec, guint top, gboolean prune) {
  spec->top = MAX(top, 1);
  spec->prune = prune;
}

/* The model at a layout: the user's config and --set, then the layout's. */
static RokModel *layout_model(const RokSearchSpec *spec, const RokLayout *l, GError **error) {
  static const char *const keys[] = {"tensor_parallel", "pipeline_parallel", "virtual_stages", "data_parallel",
                                     "micro_batch",     "global_batch",      "zero_stage"};
  const guint64 values[] = {l->tensor, l->pipeline, l->virtual_stages, l->data, l->micro_batch, l->global_batch,
                            l->zero_stage};
  g_auto(GStrv) more = g_new0(char *, G_N_ELEMENTS(keys) + 1);
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
    more[i] = g_strdup_printf("%s=%" G_GUINT64_FORMAT, keys[i], values[i]);
  return rok_model_source_load(spec->model, (const char *const *)more, error);
}

GPtrArray *search_layout_traces(const RokSearchSpec *spec, const RokLayout *layout, GError **error) {
  g_autoptr(RokModel) model = layout_model(spec, layout, error);
  return model == NULL ? NULL : rok_trace_new_stages(model, error);
}

/* The values of an axis: as set, or by default every divisor-like value
 * (pipeline degrees and virtual stages up to the layers: those that do not
 * divide them are skipped where layouts are made). */
static GArray *axis_values(const RokSearchSpec *spec, RokSearchAxis axis) {
  if (spec->values[axis] != NULL)
    return g_array_ref(spec->values[axis]);
  GArray *v = g_array_new(FALSE, FALSE, sizeof(guint64));
  guint64 from = axis == ROK_SEARCH_ZERO ? 0 : 1;
  guint64 to = axis == ROK_SEARCH_ZERO                                          ? 3
               : axis == ROK_SEARCH_TENSOR                                      ? spec->gpus_per_node
               : axis == ROK_SEARCH_MICRO_BATCH                                 ? 64
               : axis == ROK_SEARCH_PIPELINE || axis == ROK_SEARCH_VIRTUAL ? spec->layers
                                                                                : 1;
  for (guint64 x = from; x <= to; x = axis == ROK_SEARCH_MICRO_BATCH ? x * 2 : x + 1)
    g_array_append_val(v, x);
  return v;
}

#define VALUE(array, i) g_array_index(array, guint64, i)

/* Micro-batch sizes and ZeRO stages at one parallel layout. */
static void add_batches(const RokSearchSpec *spec, RokLayout l, GArray *mbs, GArray *zeros, GArray *out) {
  guint64 per_replica = spec->global_batch / l.data;
  for (guint b = 0; b < mbs->len; b++) {
    l.micro_batch = VALUE(mbs, b);
    if (per_replica % l.micro_batch != 0)
      continue;
    for (guint z = 0; z < zeros->len; z++) {
      l.zero_stage = VALUE(zeros, z);
      g_autoptr(RokModel) model = layout_model(spec, &l, NULL);
      if (model != NULL) /* the config's own rules (kv_heads, ffn_hidden, ...) */
        g_array_append_val(out, l);
    }
  }
}

/* Every virtual-stage count of one parallel layout (1 without pipelining). */
static gboolean add_stages(const RokSearchSpec *spec, RokLayout l, GArray *vs, GArray *mbs, GArray *zeros, GArray *out,
                           GError **error) {
  for (guint v = 0; v < vs->len; v++) {
    l.virtual_stages = VALUE(vs, v);
    if ((l.pipeline == 1 && l.virtual_stages > 1) || spec->layers % (l.pipeline * l.virtual_stages) != 0)
      continue;
    add_batches(spec, l, mbs, zeros, out);
    if (out->len > ROK_SEARCH_MAX_LAYOUTS) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "more than %d layouts: narrow the ranges",
                  ROK_SEARCH_MAX_LAYOUTS);
      return FALSE;
    }
  }
  return TRUE;
}

GArray *rok_search_spec_layouts(const RokSearchSpec *spec, GError **error) {
  if (spec->values[ROK_SEARCH_GPUS] == NULL) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "no GPU count given (--gpus)");
    return NULL;
  }
  g_autoptr(GArray) gpus = axis_values(spec, ROK_SEARCH_GPUS), tps = axis_values(spec, ROK_SEARCH_TENSOR);
  g_autoptr(GArray) pps = axis_values(spec, ROK_SEARCH_PIPELINE), mbs = axis_values(spec, ROK_SEARCH_MICRO_BATCH);
  g_autoptr(GArray) vs = axis_values(spec, ROK_SEARCH_VIRTUAL), zeros = axis_values(spec, ROK_SEARCH_ZERO);
  g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(RokLayout));
  for (guint g = 0; g < gpus->len; g++)
    for (guint t = 0; t < tps->len; t++)
      for (guint p = 0; p < pps->len; p++) {
        RokLayout l = {.gpus = VALUE(gpus, g), .gpus_per_node = spec->gpus_per_node, .tensor = VALUE(tps, t),
                       .pipeline = VALUE(pps, p), .virtual_stages = 1, .global_batch = spec->global_batch};
        guint64 model_parallel = l.tensor * l.pipeline;
        if (l.tensor > spec->gpus_per_node || spec->layers % l.pipeline != 0 || l.gpus % model_parallel != 0)
          continue;
        l.data = l.gpus / model_parallel;
        if (spec->global_batch % l.data != 0)
          continue;
        if (!add_stages(spec, l, vs, mbs, zeros, out, error))
          return NULL;
      }
  if (out->len == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "no layout of %s fits these GPU counts (tensor parallelism must divide the heads and stay within "
                "a node of %" G_GUINT64_FORMAT ", data parallelism divide the global batch of %" G_GUINT64_FORMAT
                ")", spec->model_name, spec->gpus_per_node, spec->global_batch);
    return NULL;
  }
  return g_steal_pointer(&out);
}
