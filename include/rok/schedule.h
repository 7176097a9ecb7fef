/* The schedule: a training step as a program for the executor.
 *
 * A schedule is the simulator's action log of one plan, every
 * micro-batch of the step simulated in detail: an ordered list of actions,
 * each on a stream (compute, d2h, h2d, nvme-write, nvme-read), of a kind
 * (forward, backward, recompute, optimizer, offload, prefetch, free),
 * touching an op (compute) or a tensor and its bytes (copies and frees),
 * with the earlier actions it must wait for and the predicted start and
 * end. The executor honours the dependencies, not the times; the times are
 * what its measurements are compared with. Alongside: the decision of
 * every saved tensor, the simulator's settings, the predicted totals, the
 * hardware profile, and the trace itself (embedded, with its SHA-256), so
 * that the file is all an executor needs.
 *
 * File format `rok-schedule/1` (JSON): format, strategy, model,
 * budget_bytes, micro_batches, options {memory_budget, prefetch_layers,
 * detail_micro_batches, rebuild_whole_layers}, predicted (the simulate
 * fields), plan [{id, name, decision} per saved tensor], hw (a hardware
 * profile), trace_sha256, trace (rok-trace/1), then actions, one per line:
 *   {"id": 7, "stream": "nvme-write", "kind": "offload", "micro_batch": 0,
 *    "tensor": 12, "bytes": 100663296, "gpudirect": true, "deps": [3, 6],
 *    "start_s": 0.001234000, "end_s": 0.017345000}
 * `op` for compute actions (none for the optimizer step), `tensor` and
 * `bytes` for copies and frees, `gpudirect` for copies; times are seconds
 * with nine decimals (whole nanoseconds). An action's id is its index and
 * its dependencies are earlier actions, so the program has no cycles.
 * Reading checks all of it (located errors, ROK_ERROR_INPUT; another
 * format, ROK_ERROR_FORMAT); a schedule written and read back writes
 * identical bytes. */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/hw.h"
#include "rok/sim.h"
#include "rok/trace.h"

G_BEGIN_DECLS

typedef struct {
  char *strategy;  /* "rok", "keep", ... */
  const RokTrace *trace;
  const RokHw *hw;
  char *trace_sha256;
  guint64 budget_bytes;
  RokStepPlan *plan; /* decisions and the options the log was made with */
  json_object *predicted; /* the simulate fields (rok_sim_result_to_json) */
  /* The program: RokAction (times in ns, deps into `deps`), guint. */
  GArray *actions, *deps;
  /* private */
  RokTrace *owned_trace;
  RokHw *owned_hw;
} RokSchedule;

/* Simulate `plan` with every micro-batch in detail and the action log on
 * (its other options kept) and make the schedule. Borrows `trace` and
 * `hw`, which must outlive it. */
RokSchedule *rok_schedule_new(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const char *strategy,
                              guint64 budget_bytes, GError **error);
void rok_schedule_free(RokSchedule *schedule);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSchedule, rok_schedule_free)

/* The action's dependencies: schedule->deps[first .. first + count). */
static inline const RokAction *rok_schedule_action(const RokSchedule *schedule, guint id) {
  return &g_array_index(schedule->actions, RokAction, id);
}

/* The file's text; writing is atomic (temporary file, then rename). */
char *rok_schedule_to_string(const RokSchedule *schedule);
gboolean rok_schedule_save(const RokSchedule *schedule, const char *path, GError **error);

RokSchedule *rok_schedule_load(const char *path, GError **error);
RokSchedule *rok_schedule_parse(const char *name, const char *text, gsize length, GError **error);

G_END_DECLS
