/* The model's parameters: values in the activation dtype, initialised on
 * the device from the seed (one Philox stream per parameter), and fp32
 * gradient accumulators; zeroing them and their checksum. */
#ifdef ROK_WITH_OPENCL

#include "rok/device.h"
#include "ops-private.h"
#include "rok/core.h"

void ops_param_free(gpointer data) {
  RokExecParam *param = data;
  rok_cl_buffer_free(param->value);
  rok_cl_buffer_free(param->grad);
  g_free((char *)param->name);
  g_free(param);
}

RokExecParam *ops_param_new(RokExecModel *model, const RokOp *op, const char *what, guint64 rows, guint64 cols,
                            float low, float high, GError **error) {
  g_autofree char *name = g_strdup_printf("%s.%s", op->name, what);
  g_autofree char *grad_name = g_strdup_printf("%s.grad", name);
  guint64 elements = 0;
  if (!g_uint64_checked_mul(&elements, rows, cols)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "parameter '%s': %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT " elements do not fit 64 bits", name, rows,
                cols);
    return NULL;
  }
  RokExecParam *param = g_new0(RokExecParam, 1);
  param->rows = rows;
  param->cols = cols;
  param->value = rok_cl_buffer_new(model->device, model->act, elements, name, FALSE, error);
  param->grad =
      param->value ? rok_cl_buffer_new(model->device, ROK_DTYPE_FP32, elements, grad_name, FALSE, error) : NULL;
  param->name = g_steal_pointer(&name);
  guint64 stream = ops_stream(STREAM_PARAM, model->params->len, 0);
  if (param->grad == NULL ||
      !rok_cl_fill_uniform(model->kernels, param->value, model->seed, stream, low, high, error) ||
      !rok_cl_buffer_zero(param->grad, error)) {
    ops_param_free(param);
    return NULL;
  }
  g_ptr_array_add(model->params, param);
  return param;
}

gboolean rok_exec_model_zero_gradients(RokExecModel *model, GError **error) {
  for (guint i = 0; i < model->params->len; i++) {
    RokExecParam *param = g_ptr_array_index(model->params, i);
    if (!rok_cl_buffer_zero(param->grad, error))
      return FALSE;
  }
  return TRUE;
}

gboolean rok_exec_model_gradient_checksum(RokExecModel *model, guint64 *checksum, GError **error) {
  guint n = model->params->len;
  g_autofree guint64 *values = g_new0(guint64, MAX(n, 1));
  for (guint i = 0; i < n; i++) {
    RokExecParam *param = g_ptr_array_index(model->params, i);
    if (!rok_cl_checksum_enqueue(model->kernels, param->grad, 0, param->grad->bytes, model->checksums, i, error))
      return FALSE;
  }
  /* The in-order compute queue reads back after the last checksum. */
  if (n > 0 && !rok_cl_buffer_read(model->checksums, ROK_CL_QUEUE_COMPUTE, 0, (guint64)n * sizeof(guint64), values,
                                   TRUE, 0, NULL, NULL, error))
    return FALSE;
  *checksum = rok_cl_checksum_combine(values, n);
  return TRUE;
}

guint rok_exec_model_param_count(const RokExecModel *model) { return model->params->len; }

const RokExecParam *rok_exec_model_param(const RokExecModel *model, guint index) {
  g_return_val_if_fail(index < model->params->len, NULL);
  return g_ptr_array_index(model->params, index);
}

guint64 rok_exec_model_param_bytes(const RokExecModel *model) {
  guint64 bytes = 0;
  for (guint i = 0; i < model->params->len; i++) {
    const RokExecParam *param = g_ptr_array_index(model->params, i);
    bytes += param->value->bytes + param->grad->bytes;
  }
  return bytes;
}

#endif /* ROK_WITH_OPENCL */
