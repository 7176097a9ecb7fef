/* The schedule: a training step as a program for the executor.
 *
 * A schedule is the simulator's action log of one plan, every
 * micro-batch of the step simulated in detail: an ordered list of actions,
 * each on a stream (compute, d2h, h2d, nvme-write, nvme-read; comm and p2p
 * for communication between GPUs), of a kind (forward, backward,
 * recompute, optimizer, offload, prefetch, free, comm), touching an op
 * (compute) or a tensor and its bytes (copies and frees), or naming a
 * collective, its group and its bytes (comm), with the earlier actions it
 * must wait for and the predicted start and end. The executor honours the
 * dependencies, not the times; the times are what its measurements are
 * compared with. Alongside: the decision of every saved tensor, the
 * simulator's settings, the predicted totals, the hardware profile, and
 * the trace itself (embedded, with its SHA-256), so that the file is all
 * an executor needs.
 *
 * File format `rok-schedule/2` (JSON): format, strategy, model,
 * budget_bytes, micro_batches, options {memory_budget, prefetch_window,
 * detail_micro_batches, rebuild_whole_layers}, predicted (the simulate
 * fields), plan [{id, name, decision} per saved tensor], hw (a hardware
 * profile), trace_sha256, trace (rok-trace/1), then actions, one per line:
 *   {"id": 7, "stream": "nvme-write", "kind": "offload", "micro_batch": 0,
 *    "tensor": 12, "bytes": 100663296, "gpudirect": true, "deps": [3, 6],
 *    "start_s": 0.001234000, "end_s": 0.017345000}
 * `op` for compute actions (none for the optimizer step), `tensor` and
 * `bytes` for copies and frees, `gpudirect` for copies, `collective`,
 * `group` and `bytes` for comm actions; times are seconds with nine
 * decimals (whole nanoseconds). An action's id is its index and its
 * dependencies are earlier actions, so the program has no cycles. A block
 * of actions the next ones repeat exactly (micro-batch, dependencies and
 * times shifted) is written once, its copies as one line:
 *   {"id": 9650, "repeat_from": 4825, "times": 30, "micro_batch_step": 1,
 *    "shift_s": 13.723627462}
 * which the reader expands, so that every user sees the whole program.
 * `rok-schedule/1` (no repeats, no comm actions) is read too. Reading
 * checks all of it (located errors, ROK_ERROR_INPUT; another format,
 * ROK_ERROR_FORMAT); a schedule written and read back writes identical
 * bytes. docs/formats.md describes every member. */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/core.h"
#include "rok/hw.h"
#include "rok/trace.h"

G_BEGIN_DECLS

/* ---- The vocabulary: what the simulator predicts and the executor runs ---- */

/* No op, no tensor: the op of a transfer, the tensor of a compute action. */
#define ROK_NO_ID G_MAXUINT

/* What happens to a saved tensor between forward and backward. Transient
 * tensors (empty needed_by) ignore their decision. */
typedef enum {
  ROK_DECISION_KEEP,
  ROK_DECISION_OFFLOAD_NVME,
  ROK_DECISION_OFFLOAD_HOST,
  ROK_DECISION_RECOMPUTE,
  ROK_DECISION_COUNT
} RokDecision;

typedef enum {
  ROK_STREAM_COMPUTE,
  ROK_STREAM_D2H,
  ROK_STREAM_H2D,
  ROK_STREAM_NVME_WRITE,
  ROK_STREAM_NVME_READ,
  ROK_STREAM_COUNT, /* the streams the simulator's engine runs: all but comm */
  /* Communication between GPUs: in schedules only, as placeholders (the
   * simulator folds it into op times; one device cannot perform it). */
  ROK_STREAM_COMM = ROK_STREAM_COUNT, /* collectives, on the critical path of an op or the optimizer step */
  ROK_STREAM_P2P,                     /* pipeline sends, overlapping the next block */
  ROK_STREAM_ALL_COUNT
} RokStream;

/* Legs of one SSD stream in progress at most at once: rok's executor runs
 * each SSD stream on this many threads (each leg's requests in flight
 * together), and the simulator on as many lanes; every other stream runs
 * one leg at a time. An SSD leg that does not depend on the leg before it
 * on its stream may run beside it: the simulator schedules so small legs
 * that together leave the array's rate unused, and a module's gathered
 * small writes (docs/simulator.md, NVMe array). */
#define ROK_SSD_LANES 8

/* Why the compute stream waited. */
typedef enum {
  ROK_STALL_READ,    /* a read from the SSDs */
  ROK_STALL_PCIE,    /* a copy over PCIe */
  ROK_STALL_STAGING, /* space in the pinned staging buffer */
  ROK_STALL_MEMORY,  /* GPU memory under the budget */
  ROK_STALL_COUNT
} RokStallCause;

typedef enum {
  ROK_ACTION_FORWARD,
  ROK_ACTION_BACKWARD,
  ROK_ACTION_RECOMPUTE,
  ROK_ACTION_OPTIMIZER,
  ROK_ACTION_OFFLOAD,  /* one leg of a copy out of the GPU: d2h, nvme-write */
  ROK_ACTION_PREFETCH, /* one leg of a read back: nvme-read, h2d */
  ROK_ACTION_FREE,     /* a tensor's GPU memory released */
  ROK_ACTION_COMM,     /* a collective (comm stream) or a pipeline send (p2p stream): schedules only */
  ROK_ACTION_KIND_COUNT
} RokActionKind;

/* Whose communication a comm action is: the tensor-parallel group's
 * collectives around an op, the data-parallel gradient reduction (and the
 * distributed optimizer's parameter gather) before the optimizer step,
 * ZeRO-3's per-layer parameter gathers and gradient reduce-scatters, or a
 * pipeline send to a neighbouring stage. */
typedef enum {
  ROK_COMM_TENSOR_PARALLEL,
  ROK_COMM_DATA_PARALLEL,
  ROK_COMM_ZERO3,
  ROK_COMM_PIPELINE,
  ROK_COMM_GROUP_COUNT
} RokCommGroup;

/* The unit of the prefetch window (rok/sim.h, "Prefetch"): a layer, a
 * module (a layer's attention or MLP block) or a leaf op of backward. */
typedef enum {
  ROK_PREFETCH_LAYER,
  ROK_PREFETCH_MODULE,
  ROK_PREFETCH_OP,
  ROK_PREFETCH_UNIT_COUNT
} RokPrefetchUnit;

/* "layer", "module", "op"; an unknown name is ROK_ERROR_USAGE. */
const char *rok_prefetch_unit_name(RokPrefetchUnit unit);
gboolean rok_prefetch_unit_from_name(const char *name, RokPrefetchUnit *unit, GError **error);

/* How a step runs a plan, as the simulator ran it. */
typedef struct {
  guint64 memory_budget;      /* bytes; 0: gpu.memory */
  guint prefetch_window;      /* look-ahead in chunks of prefetch_unit; 0: only on demand */
  RokPrefetchUnit prefetch_unit;
  guint detail_micro_batches; /* >= 1 */
  /* A layer's rebuild re-runs every op of the layer, as Megatron's
   * activation checkpointing does, not only the ops its tensors need. */
  gboolean rebuild_whole_layers;
} RokStepOptions;

/* SSDTrain prefetches "a chunk (two modules) ahead"; with a layer's
 * attention and MLP blocks as its modules, that is one layer. */
#define ROK_STEP_DEFAULT_PREFETCH_WINDOW 1
#define ROK_STEP_DEFAULT_PREFETCH_UNIT ROK_PREFETCH_LAYER
#define ROK_STEP_DEFAULT_DETAIL_MICRO_BATCHES 3
/* The latest start_s / end_s of an action in a rok-schedule/2 (31 years):
 * nanoseconds of such times and their sums stay inside 64 bits. */
#define ROK_SCHEDULE_MAX_SECONDS 1e9

/* A plan for one step: a decision per tensor id and how the step runs
 * them. */
typedef struct {
  guint n_tensors;
  RokDecision *decisions;
  RokStepOptions options;
} RokStepPlan;

void rok_step_options_init(RokStepOptions *options);
/* Every tensor kept, default options. */
RokStepPlan *rok_step_plan_new(const RokTrace *trace);
RokStepPlan *rok_step_plan_copy(const RokStepPlan *plan);
void rok_step_plan_free(RokStepPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokStepPlan, rok_step_plan_free)

/* The simulator-options object of plan and schedule files:
 * {memory_budget, prefetch_window, prefetch_unit, detail_micro_batches,
 * rebuild_whole_layers}; prefetch_unit may be absent (layer), and
 * "prefetch_layers", the window's old name, is read as a window of layers. */
json_object *rok_step_options_to_json(const RokStepOptions *options);
/* Reads `obj`'s member "options"; located errors (ROK_ERROR_INPUT). */
gboolean rok_step_options_read(const RokJsonObj *obj, RokStepOptions *options, GError **error);

/* One action of the program: a compute op, one leg of a transfer, or a
 * free, with the earlier actions it waits for (deps[deps_first ..
 * deps_first + deps_count)): the previous action of its stream, the
 * transfer that brought an input back, the producer of a tensor it copies,
 * the leg before it, the free that made room in memory or in the staging
 * buffer, the compute whose end opened the prefetch window. A gpudirect leg
 * runs on the nvme-write / nvme-read stream and also uses the PCIe link. */
typedef struct {
  RokActionKind kind;
  RokStream stream;
  guint micro_batch;
  guint op;      /* compute actions; ROK_NO_ID otherwise */
  guint tensor;  /* transfers and frees; ROK_NO_ID otherwise */
  guint64 bytes; /* transfers and frees; comm: the message (rok_hw_collective_s) */
  gboolean gpudirect;
  /* Comm actions: the collective (or send) and its group; the modelled
   * duration is end_ns - start_ns. */
  RokCollective collective;
  RokCommGroup group;
  gint64 start_ns, end_ns;
  guint deps_first, deps_count;
} RokAction;

const char *rok_decision_name(RokDecision decision);
const char *rok_stream_name(RokStream stream);
const char *rok_stall_cause_name(RokStallCause cause);
const char *rok_action_kind_name(RokActionKind kind);
/* "all-reduce", "all-gather", "reduce-scatter", "send". */
const char *rok_collective_name(RokCollective collective);
/* "tensor-parallel", "data-parallel", "zero3", "pipeline". */
const char *rok_comm_group_name(RokCommGroup group);

/* ---- The schedule ---- */

typedef struct {
  char *strategy;  /* "rok", "keep", ... */
  const RokTrace *trace;
  const RokHw *hw;
  char *trace_sha256;
  guint64 budget_bytes;
  RokStepPlan *plan; /* decisions and the options the program was made with */
  json_object *predicted; /* the simulator's summary of the step */
  /* The program: RokAction (times in ns, deps into `deps`), guint. */
  GArray *actions, *deps;
  /* private */
  RokTrace *owned_trace;
  RokHw *owned_hw;
  char *source_name; /* the file it was read from, and its text: */
  GBytes *source;    /* for rok_schedule_locate_action() */
  GArray *elements;  /* where each element of "actions" starts (compact form), or NULL */
} RokSchedule;

/* A schedule of the program `actions` (RokAction) with its dependencies
 * `deps` (guint) and the predicted summary `predicted`, all three taken;
 * `plan` is copied. Borrows `trace` and `hw`, which must outlive it. The
 * simulator makes schedules (rok_sim_schedule_new in rok/sim.h). */
RokSchedule *rok_schedule_new(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const char *strategy,
                              guint64 budget_bytes, json_object *predicted, GArray *actions, GArray *deps);
void rok_schedule_free(RokSchedule *schedule);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSchedule, rok_schedule_free)

/* The action's dependencies: schedule->deps[first .. first + count). */
static inline const RokAction *rok_schedule_action(const RokSchedule *schedule, guint id) {
  return &g_array_index(schedule->actions, RokAction, id);
}

/* The file's text in the compact form (repeated blocks written once);
 * writing is atomic (temporary file, then rename). */
char *rok_schedule_to_string(const RokSchedule *schedule);
/* The same program with every action written out (no repeats). */
char *rok_schedule_to_string_full(const RokSchedule *schedule);
gboolean rok_schedule_save(const RokSchedule *schedule, const char *path, GError **error);

RokSchedule *rok_schedule_load(const char *path, GError **error);
RokSchedule *rok_schedule_parse(const char *name, const char *text, gsize length, GError **error);

/* Puts where action ID is in the file the schedule was read from in front
 * of ERROR's message ("plan/schedule.json:1234:5: "), as the reader does
 * for its own errors: for the faults only running finds (a tensor freed
 * before use, offloaded twice, read before it is written, ...). A schedule
 * not read from a file leaves the message as it is. */
void rok_schedule_locate_action(const RokSchedule *schedule, guint id, GError *error);

/* ---- Timelines ---- */

/* The timeline file of a step, written for `rok simulate --timeline` and
 * `rok execute --timeline` alike: Chrome/Perfetto trace-event JSON (the
 * object form, {"displayTimeUnit": "ns", "traceEvents": [...]}), with
 * metadata naming processes and threads (a thread per stream), complete
 * events ("X") for compute and copy legs, instants ("i") for frees and
 * counters ("C") for memory. Timestamps are microseconds written with
 * exactly three decimals (whole nanoseconds), so that the same step gives
 * the same bytes. Events appear in the order they are added. docs/formats.md
 * lists every field; rok/charts.h draws such a file. */
typedef struct _RokTimelineJson RokTimelineJson;

typedef struct {
  const char *name; /* the op or the tensor */
  RokActionKind kind;
  guint action, micro_batch;
  gint64 start_ns, end_ns;
  gboolean show_bytes; /* write args.bytes */
  guint64 bytes;
  gboolean gpudirect;
} RokTimelineAction;

RokTimelineJson *rok_timeline_json_new(void);
void rok_timeline_json_free(RokTimelineJson *timeline);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokTimelineJson, rok_timeline_json_free)
/* A process's name; with sort_index >= 0 its place among processes too. */
void rok_timeline_json_name_process(RokTimelineJson *timeline, int pid, const char *name, int sort_index);
void rok_timeline_json_name_thread(RokTimelineJson *timeline, int pid, int tid, const char *name, int sort_index);
void rok_timeline_json_add_action(RokTimelineJson *timeline, int pid, int tid, const RokTimelineAction *action);
void rok_timeline_json_add_counter(RokTimelineJson *timeline, int pid, const char *name, gint64 ns, guint64 bytes);
/* The document (new reference); frees `timeline`. */
json_object *rok_timeline_json_finish(RokTimelineJson *timeline);

/* A timeline file read back (any trace-event JSON of this shape): the
 * threads as tracks, the complete events whose category is an action kind,
 * the "gpu memory" counter, and from "otherData" (optional) the model,
 * the strategy, the machine, the GPU's memory, the budget and the
 * micro-batches (all, and those simulated in detail). Located errors
 * (ROK_ERROR_INPUT) for members of the wrong type. */
typedef struct {
  gint64 tid;
  gint64 order; /* thread_sort_index, else the tid */
  char *name;
} RokTimelineTrack;

typedef struct {
  gint64 tid;
  RokActionKind kind;
  double start_s, end_s;
} RokTimelineSpan;

typedef struct {
  double time_s;
  guint64 bytes;
} RokTimelineSample;

typedef struct {
  GArray *tracks; /* RokTimelineTrack, in order of first appearance */
  GArray *spans;  /* RokTimelineSpan, in file order */
  GArray *memory; /* RokTimelineSample of the "gpu memory" counter */
  char *model;    /* from a process named "rok simulate: MODEL", else NULL */
  char *strategy, *hw;        /* from otherData, NULL when absent */
  guint64 gpu_memory, budget; /* from otherData, 0 when absent */
  /* Micro-batches of the step and those simulated event by event, from
   * otherData, 0 when absent. */
  guint64 micro_batches, detailed_micro_batches;
} RokTimelineFile;

RokTimelineFile *rok_timeline_file_read(const RokJsonDoc *doc, GError **error);
void rok_timeline_file_free(RokTimelineFile *file);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokTimelineFile, rok_timeline_file_free)

G_END_DECLS
