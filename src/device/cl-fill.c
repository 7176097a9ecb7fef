/* Deterministic initial values: weights, inputs and token ids. */
#ifdef ROK_WITH_OPENCL

#include "cl-kernels-private.h"
#include "rok/core.h"

gboolean rok_cl_fill_uniform(RokClKernels *kernels, RokClBuffer *buffer, guint64 seed, guint64 stream, float low,
                             float high, GError **error) {
  RokClKernelId id;
  if (buffer->dtype == kernels->act)
    id = K_FILL_UNIFORM_ACT;
  else if (buffer->dtype == ROK_DTYPE_FP32)
    id = K_FILL_UNIFORM_F32;
  else {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "fill_uniform: '%s' holds %s, not %s or fp32", buffer->label,
                rok_dtype_name(buffer->dtype), rok_dtype_name(kernels->act));
    return FALSE;
  }
  RokClLaunch launch = device_cl_launch(kernels, id);
  device_cl_arg_buffer(&launch, buffer);
  device_cl_arg_u64(&launch, buffer->elements);
  device_cl_arg_seed(&launch, seed);
  device_cl_arg_u64(&launch, stream);
  device_cl_arg_f32(&launch, low);
  device_cl_arg_f32(&launch, high);
  size_t wg = kernels->tuning.wg, global = (size_t)buffer->elements;
  return device_cl_launch_run(&launch, 1, &global, &wg, error);
}

gboolean rok_cl_fill_tokens(RokClKernels *kernels, RokClBuffer *ids, guint64 seed, guint64 stream, guint64 vocab,
                            GError **error) {
  if (vocab == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE, "fill_tokens: vocab must be positive");
    return FALSE;
  }
  if (!device_cl_check_buffer(ids, ROK_DTYPE_I64, ids->elements, "fill_tokens", "ids", error))
    return FALSE;
  RokClLaunch launch = device_cl_launch(kernels, K_FILL_TOKENS);
  device_cl_arg_buffer(&launch, ids);
  device_cl_arg_u64(&launch, ids->elements);
  device_cl_arg_seed(&launch, seed);
  device_cl_arg_u64(&launch, stream);
  device_cl_arg_u64(&launch, vocab);
  size_t wg = kernels->tuning.wg, global = (size_t)ids->elements;
  return device_cl_launch_run(&launch, 1, &global, &wg, error);
}

#endif /* ROK_WITH_OPENCL */
