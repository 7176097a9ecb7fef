/* Korthikanti et al. (2022)'s closed form of a layer's activation memory,
 * printed beside the trace's exact count so a reader can check one with the
 * other. */
#include "rok/model.h"

guint64 rok_model_reference_layer_bytes(const RokModel *m) {
  gboolean standard_shape = m->kv_heads == m->heads && m->heads * m->head_dim == m->hidden &&
                            m->ffn_hidden == 4 * m->hidden && rok_dtype_bytes(m->dtype) == 2;
  if ((m->arch != ROK_ARCH_GPT && m->arch != ROK_ARCH_BERT) || !standard_shape)
    return 0;
  double s = m->seq_len, b = m->micro_batch, h = m->hidden, a = m->heads, t = m->tensor_parallel;
  gboolean dropout = m->dropout > 0;
  double mask = m->mask_bytes;
  /* Per s·b·h: two LayerNorm inputs (4), the QKV and FC1 inputs (2 + 2) and
   * two dropout masks are replicated over tensor-parallel ranks; Q, K, V (6),
   * the projection input (2), the GeLU input and output (8 + 8) are split. */
  double replicated = 8 + (dropout ? 2 * mask : 0), split = 24;
  /* Per a·s²·b: the softmax output, and with dropout its mask and result. */
  double quadratic = m->attention == ROK_ATTENTION_FLASH ? 0 : 2 + (dropout ? mask + 2 : 0);
  double sp = m->sequence_parallel ? t : 1;
  return (guint64)(s * b * h * (replicated / sp + split / t) + a * s * s * b * quadratic / t + 0.5);
}
