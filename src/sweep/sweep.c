/* The sweep: its specification, its axes, and running its points on a
 * thread pool with results stored by index. */
#include <string.h>

#include "sweep-private.h"
#include "rok/core.h"
#include "rok/model.h"

static const char *const axis_names[ROK_SWEEP_AXIS_COUNT] = {
    [ROK_SWEEP_TENSOR_PARALLEL] = "tensor_parallel",
    [ROK_SWEEP_PIPELINE_PARALLEL] = "pipeline_parallel",
    [ROK_SWEEP_VIRTUAL_STAGES] = "virtual_stages",
    [ROK_SWEEP_BUDGET] = "budget_bytes",
    [ROK_SWEEP_NVME_DEVICES] = "nvme_devices",
    [ROK_SWEEP_SEQ_LEN] = "seq_len",
    [ROK_SWEEP_MICRO_BATCH] = "micro_batch",
};
/* The command-line options' spelling. */
static const char *const axis_options[ROK_SWEEP_AXIS_COUNT] = {
    [ROK_SWEEP_TENSOR_PARALLEL] = "tensor-parallel",
    [ROK_SWEEP_PIPELINE_PARALLEL] = "pipeline-parallel",
    [ROK_SWEEP_VIRTUAL_STAGES] = "virtual-stages",
    [ROK_SWEEP_BUDGET] = "budget",
    [ROK_SWEEP_NVME_DEVICES] = "nvme-devices",
    [ROK_SWEEP_SEQ_LEN] = "seq-len",
    [ROK_SWEEP_MICRO_BATCH] = "micro-batch",
};

const char *rok_sweep_axis_name(RokSweepAxis axis) {
  g_return_val_if_fail((guint)axis < ROK_SWEEP_AXIS_COUNT, "?");
  return axis_names[axis];
}

gboolean rok_sweep_axis_from_name(const char *name, RokSweepAxis *axis, GError **error) {
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    if (g_strcmp0(name, axis_names[a]) == 0 || g_strcmp0(name, axis_options[a]) == 0) {
      *axis = a;
      return TRUE;
    }
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
              "unknown axis \"%s\" (known: micro_batch, seq_len, nvme_devices, budget_bytes, tensor_parallel, "
              "pipeline_parallel, virtual_stages)", name ? name : "");
  return FALSE;
}

guint64 rok_sweep_row_value(const RokSweepRow *row, RokSweepAxis axis) {
  switch (axis) {
  case ROK_SWEEP_TENSOR_PARALLEL:
    return row->tensor_parallel;
  case ROK_SWEEP_PIPELINE_PARALLEL:
    return row->pipeline_parallel;
  case ROK_SWEEP_VIRTUAL_STAGES:
    return row->virtual_stages;
  case ROK_SWEEP_BUDGET:
    return row->budget_bytes;
  case ROK_SWEEP_NVME_DEVICES:
    return row->nvme_devices;
  case ROK_SWEEP_SEQ_LEN:
    return row->seq_len;
  case ROK_SWEEP_MICRO_BATCH:
    return row->micro_batch;
  default:
    g_return_val_if_reached(0);
  }
}

/* ---- The specification ---- */

static GArray *one_value(guint64 value) {
  GArray *values = g_array_new(FALSE, FALSE, sizeof(guint64));
  g_array_append_val(values, value);
  return values;
}

RokSweepSpec *rok_sweep_spec_new(const char *name, const char *text, gsize length, const char *const *sets,
                                 const RokHw *hw, GError **error) {
  g_autoptr(RokModel) model = NULL;
  g_autoptr(RokModelSource) source = rok_model_source_new(name, text, length, sets, &model, error);
  if (source == NULL)
    return NULL;
  RokSweepSpec *spec = g_new0(RokSweepSpec, 1);
  spec->model = g_steal_pointer(&source);
  spec->hw = rok_hw_copy(hw);
  spec->model_name = g_strdup(model->name);
  spec->accumulation = rok_model_micro_batches_per_step(model);
  spec->data_parallel = model->data_parallel;
  spec->global_batch = model->global_batch;
  spec->values[ROK_SWEEP_TENSOR_PARALLEL] = one_value(model->tensor_parallel);
  spec->values[ROK_SWEEP_PIPELINE_PARALLEL] = one_value(model->pipeline_parallel);
  spec->values[ROK_SWEEP_VIRTUAL_STAGES] = one_value(model->virtual_stages);
  spec->values[ROK_SWEEP_BUDGET] = one_value(hw->gpu.memory);
  spec->values[ROK_SWEEP_NVME_DEVICES] = one_value(hw->nvme.devices);
  spec->values[ROK_SWEEP_SEQ_LEN] = one_value(model->seq_len);
  spec->values[ROK_SWEEP_MICRO_BATCH] = one_value(model->micro_batch);
  spec->strategies = g_array_new(FALSE, FALSE, sizeof(RokStrategy));
  for (RokStrategy s = 0; s < ROK_STRATEGY_COUNT; s++)
    g_array_append_val(spec->strategies, s);
  return spec;
}

void rok_sweep_spec_free(RokSweepSpec *spec) {
  if (spec == NULL)
    return;
  rok_model_source_free(spec->model);
  rok_hw_free(spec->hw);
  g_free(spec->model_name);
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    g_array_unref(spec->values[a]);
  g_array_unref(spec->strategies);
  g_free(spec);
}

static guint64 points_with(const RokSweepSpec *spec, RokSweepAxis axis, guint64 count) {
  guint64 points = 1;
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    points *= a == axis ? count : spec->values[a]->len; /* each at most ROK_SWEEP_MAX_VALUES: no overflow */
  return points;
}

gboolean rok_sweep_spec_set_axis(RokSweepSpec *spec, RokSweepAxis axis, const char *range, GError **error) {
  g_return_val_if_fail((guint)axis < ROK_SWEEP_AXIS_COUNT, FALSE);
  gboolean budget = axis == ROK_SWEEP_BUDGET;
  GArray *values = rok_sweep_parse_range(range, budget, axis == ROK_SWEEP_NVME_DEVICES ? 0 : 1, error);
  if (values == NULL)
    return FALSE;
  guint64 top = g_array_index(values, guint64, values->len - 1);
  if (budget && top > spec->hw->gpu.memory) {
    g_autofree char *asked = rok_units_format_size(top), *has = rok_units_format_size(spec->hw->gpu.memory);
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "a budget of %s is more than the GPU memory of %s (%s)", asked,
                spec->hw->name, has);
  } else if (points_with(spec, axis, values->len) > ROK_SWEEP_MAX_POINTS) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "the sweep would have %" G_GUINT64_FORMAT " points, more than %d",
                points_with(spec, axis, values->len), ROK_SWEEP_MAX_POINTS);
  } else {
    g_array_unref(spec->values[axis]);
    spec->values[axis] = values;
    spec->swept[axis] = TRUE;
    return TRUE;
  }
  g_array_unref(values);
  return FALSE;
}

gboolean rok_sweep_spec_set_strategies(RokSweepSpec *spec, const char *list, GError **error) {
  g_auto(GStrv) names = g_strsplit(list, ",", -1);
  g_autoptr(GArray) strategies = g_array_new(FALSE, FALSE, sizeof(RokStrategy));
  for (guint i = 0; names[i] != NULL; i++) {
    RokStrategy s;
    if (!rok_strategy_from_name(g_strstrip(names[i]), &s, error))
      return FALSE;
    for (guint j = 0; j < strategies->len; j++)
      if (g_array_index(strategies, RokStrategy, j) == s) {
        g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "strategy %s is listed twice", names[i]);
        return FALSE;
      }
    g_array_append_val(strategies, s);
  }
  if (strategies->len == 0) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "no strategy given");
    return FALSE;
  }
  g_array_unref(spec->strategies);
  spec->strategies = g_steal_pointer(&strategies);
  return TRUE;
}

gboolean rok_sweep_spec_set_gpus(RokSweepSpec *spec, guint64 gpus, GError **error) {
  if (gpus == 0 || gpus > G_MAXUINT32) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "a job has 1 to 4294967295 GPUs, not %" G_GUINT64_FORMAT, gpus);
    return FALSE;
  }
  spec->gpus = gpus;
  return TRUE;
}

guint rok_sweep_spec_points(const RokSweepSpec *spec) {
  return (guint)points_with(spec, ROK_SWEEP_AXIS_COUNT, 0);
}

/* Mixed radix, the last axis fastest. */
void sweep_spec_point(const RokSweepSpec *spec, guint index, guint64 *at) {
  for (gint a = ROK_SWEEP_AXIS_COUNT - 1; a >= 0; a--) {
    const GArray *values = spec->values[a];
    at[a] = g_array_index(values, guint64, index % values->len);
    index /= values->len;
  }
}
