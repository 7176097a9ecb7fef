/* Private to src/model: training choices in the trace (training-trace.c). */
#pragma once

#include "model/builder.h"

/* The linear op just built: a frozen weight has no weight gradient; a LoRA
 * target gains its adapters' work and their saved rank-r activations. */
void model_linear_training(RokBuilder *b, guint op, const char *name, guint64 rows, guint64 in, guint64 out);
/* Before rok_trace_finish: the layers below the first trained one, and a
 * frozen embedding, run no backward and save nothing. */
void model_trace_training(RokTrace *trace, const RokModel *m);
