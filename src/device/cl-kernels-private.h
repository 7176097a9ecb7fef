/* Shared by the launcher files: the kernel table, argument setting and the
 * checks every launcher makes. Not part of the executor's contract. */
#pragma once

#ifdef ROK_WITH_OPENCL

#include "rok/device.h"

typedef enum {
  K_GEMM_ACT,
  K_GEMM_F32,
  K_LAYERNORM_FWD,
  K_LAYERNORM_BWD,
  K_LAYERNORM_PARAMS_BWD,
  K_RMSNORM_FWD,
  K_RMSNORM_BWD,
  K_RMSNORM_PARAMS_BWD,
  K_COLUMN_SUM_BWD,
  K_SOFTMAX_FWD,
  K_SOFTMAX_BWD,
  K_GELU_FWD,
  K_GELU_BWD,
  K_RELU_FWD,
  K_RELU_BWD,
  K_SWIGLU_FWD,
  K_SWIGLU_BWD,
  K_ADD_FWD,
  K_DROPOUT_FWD,
  K_DROPOUT_MASK,
  K_DROPOUT_BWD,
  K_EMBEDDING_FWD,
  K_EMBEDDING_COUNT,
  K_EMBEDDING_SCAN,
  K_EMBEDDING_PLACE,
  K_EMBEDDING_REDUCE,
  K_EMBEDDING_POSITIONS_BWD,
  K_CROSS_ENTROPY_FWD,
  K_CROSS_ENTROPY_BWD,
  K_ROTARY,
  K_ATTN_FWD,
  K_ATTN_BWD_DELTA,
  K_ATTN_BWD_DQ,
  K_ATTN_BWD_DKV,
  K_CHECKSUM_PARTIAL,
  K_CHECKSUM_FINAL,
  K_FILL_UNIFORM_ACT,
  K_FILL_UNIFORM_F32,
  K_FILL_TOKENS,
  K_MOE_ROUTE_FWD,
  K_MOE_ROUTE_BWD,
  K_MOE_COUNT,
  K_MOE_PLACE,
  K_MOE_INVERT,
  K_MOE_GATHER,
  K_MOE_COMBINE,
  K_MOE_ROW_DOT,
  K_MOE_UNPERMUTE,
  K_MOE_GATE_FWD,
  K_MOE_GATE_BWD,
  K_COUNT
} RokClKernelId;

/* Sizes baked into the program for this device (see choose_tuning()). */
typedef struct {
  guint gemm_tm, gemm_tn, gemm_tk, gemm_wm, gemm_wn;
  guint wg;          /* row kernels (a power of two) */
  guint attn_bq;     /* query (or key) rows per attention work-group */
  guint attn_max_bk; /* keys staged per tile, at most */
  guint64 local_memory;
} RokClTuning;

/* Work-groups of checksum_partial: the scratch of partial sums. */
#define ROK_CL_CHECKSUM_GROUPS 256

struct _RokClKernels {
  RokClDevice *device;
  RokDtype act;
  RokClTuning tuning;
  char *options;
  cl_program program;
  cl_kernel kernels[K_COUNT];
  RokClBuffer *checksum_partial; /* ROK_CL_CHECKSUM_GROUPS × u64 */
  RokClBuffer *checksum_result;  /* one u64 for rok_cl_checksum_buffer() */
  const gint *cancel;            /* rok_cl_kernels_set_cancel(); NULL: none */
  guint64 chunk_fixed;           /* rok_cl_kernels_set_chunk_flops(); 0: chunks follow the measured rate */
  double chunk_rate;             /* FLOP/s of the last chunk measured; 0: none yet */
};

const char *device_cl_kernel_name(RokClKernelId id);

/* Setting a launch's arguments in order, then enqueueing it. A failure to
 * set an argument is remembered and reported by device_cl_launch_run(). */
typedef struct {
  RokClKernels *kernels;
  RokClKernelId id;
  cl_uint next;
  cl_int status;
  cl_uint failed_at;
} RokClLaunch;

RokClLaunch device_cl_launch(RokClKernels *kernels, RokClKernelId id);
void device_cl_arg_buffer(RokClLaunch *launch, const RokClBuffer *buffer); /* NULL: a null pointer */
void device_cl_arg_u64(RokClLaunch *launch, guint64 value);
void device_cl_arg_u32(RokClLaunch *launch, guint32 value);
void device_cl_arg_f32(RokClLaunch *launch, float value);
void device_cl_arg_seed(RokClLaunch *launch, guint64 seed); /* uint2: low word, high word */
void device_cl_arg_local(RokClLaunch *launch, gsize bytes);
/* Enqueue over `global` items (rounded up to whole work-groups; none when a
 * dimension is 0). local NULL: the implementation chooses. */
gboolean device_cl_launch_run(RokClLaunch *launch, guint dims, const size_t *global, const size_t *local,
                           GError **error);
/* The same over items offset + [0, global) (offset NULL: 0), with the
 * launch's event in *event when event is not NULL. */
gboolean device_cl_launch_run_at(RokClLaunch *launch, guint dims, const size_t *offset, const size_t *global,
                                 const size_t *local, cl_event *event, GError **error);

/* Long launches in chunks (rok_cl_kernels_set_cancel()): each of about
 * device_cl_chunk_budget() FLOPs, ROK_KERNEL_CHUNK_SECONDS of the rate the
 * device last showed (ROK_CL_CHUNK_FLOPS before any), at most two queued.
 * After queueing a chunk (its event and FLOPs), device_cl_chunk_next()
 * waits for the one before, measures the rate, and fails with
 * ROK_ERROR_CANCELLED when the flag is set; device_cl_chunks_end() lets the
 * last one run on, as a single launch would. */
typedef struct {
  cl_event event; /* the newest chunk's */
  double flops;   /* its FLOPs */
  gint64 mark;    /* when the chunk before it ended (or the first was queued) */
} RokClChunks;

double device_cl_chunk_budget(const RokClKernels *kernels);
gboolean device_cl_chunk_next(RokClKernels *kernels, RokClChunks *chunks, cl_event newest, double flops,
                              const char *name, GError **error);
void device_cl_chunks_end(RokClChunks *chunks);
/* device_cl_launch_run() of `work` FLOPs (spread evenly over the outermost
 * dimension, dims − 1) as launches over ranges of that dimension (at least
 * one index, at most 65535). The kernel must index that dimension by
 * get_global_id() only: an offset does not move get_group_id(). */
gboolean device_cl_launch_chunked(RokClLaunch *launch, guint dims, const size_t *global, const size_t *local,
                                  double work, GError **error);

/* The checks launchers make; `op` names the launcher in messages. */
gboolean device_cl_check_buffer(const RokClBuffer *buffer, RokDtype dtype, guint64 elements, const char *op,
                             const char *role, GError **error);
gboolean device_cl_check_act(const RokClKernels *kernels, const RokClBuffer *buffer, guint64 elements, const char *op,
                          const char *role, GError **error);
/* value < 2³² (the kernels index rows and columns with 32-bit integers). */
gboolean device_cl_check_u32(guint64 value, const char *op, const char *what, GError **error);
/* *product = a·b, or an error when it does not fit 64 bits. */
gboolean device_cl_mul(guint64 a, guint64 b, guint64 *product, const char *op, GError **error);
/* n rounded up to a multiple of `multiple`. */
size_t device_cl_round_up(guint64 n, guint64 multiple);

#endif /* ROK_WITH_OPENCL */
