/* Private to src/trace: the blocks of transformer.c that some families
 * have (transformer-moe.c, transformer-mla.c). Shapes are per GPU, as in
 * builder.h; `tokens` is every token of the micro-batch. */
#pragma once

#include "builder.h"

/* A mixture-of-experts block on normalised input `x` (router, dispatch,
 * experts, combine, shared experts); returns its output [seq_tokens, h]. */
guint trace_moe_block(RokBuilder *b, guint x, guint64 tokens);
/* Routed rows one rank's experts process in a micro-batch of `tokens`. */
guint64 trace_moe_routed_rows(const RokModel *m, guint64 tokens);
/* Latent attention over `heads` local heads on normalised input `x`, with
 * a sliding window (0: none); returns the output projection's [seq_tokens, h]. */
guint trace_mla_attention(RokBuilder *b, guint x, guint64 tokens, guint64 heads, guint64 window);
