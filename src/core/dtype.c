/* Element types: names and sizes. */
#include "rok/core.h"

static const char *const dtype_names[] = {"bf16", "fp16", "fp32", "u8", "u16", "u32", "i64", "e4m3", NULL};

const char *rok_dtype_name(RokDtype dtype) {
  return dtype_names[dtype];
}

const char *const *rok_dtype_names(void) {
  return dtype_names;
}

guint rok_dtype_bytes(RokDtype dtype) {
  static const guint bytes[] = {[ROK_DTYPE_BF16] = 2, [ROK_DTYPE_FP16] = 2, [ROK_DTYPE_FP32] = 4,
                                [ROK_DTYPE_U8] = 1,   [ROK_DTYPE_U16] = 2,  [ROK_DTYPE_U32] = 4,
                                [ROK_DTYPE_I64] = 8,  [ROK_DTYPE_E4M3] = 1};
  return bytes[dtype];
}
