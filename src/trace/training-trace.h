/* Private to src/model: training choices in the trace (training-trace.c). */
#pragma once

#include "builder.h"

/* The linear op just built: a frozen weight has no weight gradient; a LoRA
 * target gains its adapters' work and their saved rank-r activations. */
void trace_linear_training(RokBuilder *b, guint op, const char *name, guint64 rows, guint64 in, guint64 out);
/* Before rok_trace_finish: the layers below the first trained one, and a
 * frozen embedding, run no backward and save nothing. */
void trace_apply_training(RokTrace *trace, const RokModel *m);
/* The trace's fixed memory: the terms of rok_model_fixed_terms summed by
 * kind, and the optimizer step's traffic. */
void trace_fill_fixed_memory(const RokModel *m, RokFixedMemory *fixed);
