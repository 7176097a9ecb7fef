/* Building the kernel program for a device and launching its kernels. */
#ifdef ROK_WITH_OPENCL

#include "cl-kernels-private.h"
#include "cl-program.h"
#include "rok/core.h"

static const char *const kernel_names[K_COUNT] = {
    [K_GEMM_ACT] = "gemm_act",
    [K_GEMM_F32] = "gemm_f32",
    [K_LAYERNORM_FWD] = "layernorm_fwd",
    [K_LAYERNORM_BWD] = "layernorm_bwd",
    [K_LAYERNORM_PARAMS_BWD] = "layernorm_params_bwd",
    [K_RMSNORM_FWD] = "rmsnorm_fwd",
    [K_RMSNORM_BWD] = "rmsnorm_bwd",
    [K_RMSNORM_PARAMS_BWD] = "rmsnorm_params_bwd",
    [K_COLUMN_SUM_BWD] = "column_sum_bwd",
    [K_SOFTMAX_FWD] = "softmax_fwd",
    [K_SOFTMAX_BWD] = "softmax_bwd",
    [K_GELU_FWD] = "gelu_fwd",
    [K_GELU_BWD] = "gelu_bwd",
    [K_RELU_FWD] = "relu_fwd",
    [K_RELU_BWD] = "relu_bwd",
    [K_SWIGLU_FWD] = "swiglu_fwd",
    [K_SWIGLU_BWD] = "swiglu_bwd",
    [K_ADD_FWD] = "add_fwd",
    [K_DROPOUT_FWD] = "dropout_fwd",
    [K_DROPOUT_MASK] = "dropout_mask",
    [K_DROPOUT_BWD] = "dropout_bwd",
    [K_EMBEDDING_FWD] = "embedding_fwd",
    [K_EMBEDDING_COUNT] = "embedding_count",
    [K_EMBEDDING_SCAN] = "embedding_scan",
    [K_EMBEDDING_PLACE] = "embedding_place",
    [K_EMBEDDING_REDUCE] = "embedding_reduce",
    [K_EMBEDDING_POSITIONS_BWD] = "embedding_positions_bwd",
    [K_CROSS_ENTROPY_FWD] = "cross_entropy_fwd",
    [K_CROSS_ENTROPY_BWD] = "cross_entropy_bwd",
    [K_ROTARY] = "rotary",
    [K_ATTN_FWD] = "attn_fwd",
    [K_ATTN_BWD_DELTA] = "attn_bwd_delta",
    [K_ATTN_BWD_DQ] = "attn_bwd_dq",
    [K_ATTN_BWD_DKV] = "attn_bwd_dkv",
    [K_CHECKSUM_PARTIAL] = "checksum_partial",
    [K_CHECKSUM_FINAL] = "checksum_final",
    [K_FILL_UNIFORM_ACT] = "fill_uniform_act",
    [K_FILL_UNIFORM_F32] = "fill_uniform_f32",
    [K_FILL_TOKENS] = "fill_tokens",
    [K_MOE_ROUTE_FWD] = "moe_route_fwd",
    [K_MOE_ROUTE_BWD] = "moe_route_bwd",
    [K_MOE_COUNT] = "moe_count",
    [K_MOE_PLACE] = "moe_place",
    [K_MOE_INVERT] = "moe_invert",
    [K_MOE_GATHER] = "moe_gather",
    [K_MOE_COMBINE] = "moe_combine",
    [K_MOE_ROW_DOT] = "moe_row_dot",
    [K_MOE_UNPERMUTE] = "moe_unpermute",
    [K_MOE_GATE_FWD] = "moe_gate_fwd",
    [K_MOE_GATE_BWD] = "moe_gate_bwd",
};

const char *device_cl_kernel_name(RokClKernelId id) {
  return id < K_COUNT ? kernel_names[id] : "?";
}

/* Tile and work-group sizes. A GPU wants 256 items per GEMM group, each with
 * a 4×4 block. PoCL's CPU device runs a group's items one after another and
 * gains from each item's wide vectors (an 8×16 block: float16 rows) and a
 * large tile; measured with tests/bench/bench-opencl. Sizes shrink to fit
 * the device's work-group limit. */
static RokClTuning choose_tuning(const RokClDeviceInfo *info) {
  gboolean gpu = g_strcmp0(info->type, "gpu") == 0;
  RokClTuning t = {
      .gemm_tm = 64, .gemm_tn = 64, .gemm_tk = 16, .gemm_wm = 4, .gemm_wn = 4,
      .wg = 256, .attn_bq = 64, .attn_max_bk = 32, .local_memory = info->local_memory,
  };
  if (!gpu) {
    t.gemm_tm = 128, t.gemm_tn = 128, t.gemm_tk = 16, t.gemm_wm = 8, t.gemm_wn = 16;
    t.wg = 64, t.attn_bq = 16;
  }
  while (t.wg > 1 && t.wg > info->max_work_group)
    t.wg /= 2;
  while (t.attn_bq > 1 && t.attn_bq > info->max_work_group)
    t.attn_bq /= 2;
  while ((t.gemm_tm / t.gemm_wm) * (t.gemm_tn / t.gemm_wn) > info->max_work_group && t.gemm_wm < t.gemm_tm)
    t.gemm_wm *= 2;
  while (2 * t.gemm_tk * (t.gemm_tm + t.gemm_tn) * sizeof(float) > t.local_memory && t.gemm_tk > 1)
    t.gemm_tk /= 2;
  return t;
}

static const char *act_define(RokDtype act) {
  switch (act) {
  case ROK_DTYPE_BF16:
    return "ROK_ACT_BF16";
  case ROK_DTYPE_FP16:
    return "ROK_ACT_FP16";
  case ROK_DTYPE_FP32:
    return "ROK_ACT_FP32";
  default:
    return NULL;
  }
}

static char *build_options(RokDtype act, const RokClTuning *t) {
  return g_strdup_printf("-cl-std=CL1.2 -D%s -DROK_WG=%u -DGEMM_TM=%u -DGEMM_TN=%u -DGEMM_TK=%u -DGEMM_WM=%u "
                         "-DGEMM_WN=%u -DFA_BQ=%u -DFA_MAX_BK=%u -DFA_MAX_D=%u",
                         act_define(act), t->wg, t->gemm_tm, t->gemm_tn, t->gemm_tk, t->gemm_wm, t->gemm_wn,
                         t->attn_bq, t->attn_max_bk, ROK_CL_ATTENTION_MAX_HEAD_DIM);
}

static gboolean create_kernels(RokClKernels *kernels, GError **error) {
  for (int id = 0; id < K_COUNT; id++) {
    cl_int status = CL_SUCCESS;
    kernels->kernels[id] = clCreateKernel(kernels->program, kernel_names[id], &status);
    if (status != CL_SUCCESS)
      return rok_cl_fail(error, status, "creating OpenCL kernel %s", kernel_names[id]);
  }
  return TRUE;
}

RokClKernels *rok_cl_kernels_new(RokClDevice *device, RokDtype act_dtype, GError **error) {
  if (act_define(act_dtype) == NULL) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "activations must be bf16, fp16 or fp32, not %s",
                rok_dtype_name(act_dtype));
    return NULL;
  }
  g_autoptr(RokClKernels) kernels = g_new0(RokClKernels, 1);
  kernels->device = device;
  kernels->act = act_dtype;
  kernels->tuning = choose_tuning(rok_cl_device_info(device));
  kernels->options = build_options(act_dtype, &kernels->tuning);
  kernels->program = device_cl_program_build_embedded(device, kernels->options, error);
  if (kernels->program == NULL || !create_kernels(kernels, error))
    return NULL;
  kernels->checksum_partial =
      rok_cl_buffer_new(device, ROK_DTYPE_I64, ROK_CL_CHECKSUM_GROUPS, "checksum scratch", FALSE, error);
  if (kernels->checksum_partial == NULL)
    return NULL;
  kernels->checksum_result = rok_cl_buffer_new(device, ROK_DTYPE_I64, 1, "checksum result", FALSE, error);
  if (kernels->checksum_result == NULL)
    return NULL;
  return g_steal_pointer(&kernels);
}

void rok_cl_kernels_free(RokClKernels *kernels) {
  if (kernels == NULL)
    return;
  for (int id = 0; id < K_COUNT; id++)
    if (kernels->kernels[id] != NULL)
      clReleaseKernel(kernels->kernels[id]);
  if (kernels->program != NULL)
    clReleaseProgram(kernels->program);
  rok_cl_buffer_free(kernels->checksum_partial);
  rok_cl_buffer_free(kernels->checksum_result);
  g_free(kernels->options);
  g_free(kernels);
}

RokClDevice *rok_cl_kernels_device(const RokClKernels *kernels) {
  return kernels->device;
}

RokDtype rok_cl_kernels_act_dtype(const RokClKernels *kernels) {
  return kernels->act;
}

const char *rok_cl_kernels_build_options(const RokClKernels *kernels) {
  return kernels->options;
}

void rok_cl_kernels_set_cancel(RokClKernels *kernels, const gint *flag) {
  kernels->cancel = flag;
}

void rok_cl_kernels_set_chunk_flops(RokClKernels *kernels, guint64 flops) {
  kernels->chunk_fixed = flops;
}

#endif /* ROK_WITH_OPENCL */
