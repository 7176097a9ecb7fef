/* Design-space search (`rok search`): parallel layouts × micro-batch ×
 * ZeRO stage × plans, for a number of GPUs of one kind, on threads or
 * across MPI ranks.
 *
 * A layout splits N GPUs into tensor-parallel groups (TP dividing the
 * heads, at most a node's GPUs), pipeline stages (PP dividing the layers,
 * with v virtual stages each: PP·v dividing the layers) and data-parallel
 * replicas (DP = N / (TP·PP), dividing the global batch); with a
 * micro-batch size dividing global_batch / DP and a ZeRO stage. At each
 * layout the planner plans every pipeline stage's step within the GPU's
 * memory (each stage on its own GPU: the first stage, with the most
 * micro-batches in flight, is the memory-critical one), once with keep
 * and recompute only ("offload" 0) and, when asked, once with offloads to
 * host memory and SSDs allowed ("offload" 1), the SSDs only while their
 * predicted lifetime is at least the user's floor (a stage whose SSDs
 * would wear out sooner under the composed step is planned again without
 * them). A stage whose keep plan fits is kept whole: nothing is faster.
 * The stages are composed (rok_pipeline_simulate): the step is the
 * pipeline's, the slowest stage's blocks with the bubble and the sends.
 * Communication is in the step time as the simulator costs it on the
 * profile's interconnect (tensor-parallel collectives, ZeRO-3 gathers,
 * the exposed data-parallel reduction, the sends between stages).
 * Throughput is the cluster's: tokens/s of one replica times DP.
 *
 * Pruning, deterministic: a point's step time is at least that of keeping
 * everything with unbounded memory (compute alone, as the simulator times
 * it, every stage composed); its memory at least its fixed memory (the
 * largest of its stages'). A point whose fixed memory
 * exceeds the GPU's is not planned. The others are planned in order of
 * falling bound; once `top` fitting points of its group (GPU count and
 * offload mode) are planned whose throughput all beat a point's bound, it
 * is pruned, and so is every later point of the group.
 * Points run in parallel speculatively, but the set of points planned is
 * that of the serial order, so results are byte-identical on any number of
 * threads or ranks. */
#pragma once

#include <glib.h>

#include "rok/hw.h"
#include "rok/plan.h"
#include "rok/sweep.h"

G_BEGIN_DECLS

/* Most layouts one search may enumerate. */
#define ROK_SEARCH_MAX_LAYOUTS 65536

typedef struct {
  guint64 gpus, gpus_per_node;
  guint64 tensor, pipeline, virtual_stages, data;
  guint64 micro_batch, global_batch, zero_stage;
} RokLayout;

typedef enum {
  ROK_SEARCH_PLANNED,        /* the planner ran */
  ROK_SEARCH_PRUNED_MEMORY,  /* fixed memory alone exceeds the GPU's */
  ROK_SEARCH_PRUNED_BOUND,   /* its compute-only bound is beaten `top` times */
  ROK_SEARCH_STATUS_COUNT
} RokSearchStatus;

/* "planned", "pruned-memory", "pruned-bound". */
const char *rok_search_status_name(RokSearchStatus status);

/* One layout in one offload mode. */
typedef struct {
  RokLayout layout;
  gboolean offload; /* plans may offload to host memory and SSDs */
  RokSearchStatus status;
  guint64 fixed_bytes;      /* the largest of its stages' */
  double bound_step_time_s; /* compute alone, stages composed: a lower bound on step_time_s */
  double bound_tokens_per_s;
  /* Planned points only (0 otherwise). Memory and decisions are those of
   * the stage with the highest peak: */
  double step_time_s, tokens_per_s; /* the pipeline's step; tokens/s of the whole cluster */
  guint64 peak_bytes;
  gboolean fits;            /* every stage's peak within the GPU's memory */
  guint64 decision_bytes[ROK_DECISION_COUNT]; /* saved bytes of one micro-batch */
  guint64 nvme_write_bytes; /* per step, of the stage writing most */
  double ssd_lifetime_years; /* the shortest of any stage; INFINITY when nothing goes to the SSDs */
  gboolean ssd_limited;     /* SSD offload refused by the lifetime floor */
  gboolean pareto;          /* on the front of throughput against peak memory (fitting points) */
} RokSearchRow;

typedef struct {
  char *model_name, *hw_name;
  guint64 gpu_memory_bytes;
  GArray *rows;         /* RokSearchRow, in enumeration order */
  GPtrArray *summaries; /* char *: the plan in a sentence (a pipeline's: its stage with the highest
                         * peak), per row ("" when not planned) */
  guint top;
} RokSearch;

void rok_search_free(RokSearch *search);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSearch, rok_search_free)

typedef struct _RokSearchSpec RokSearchSpec;
/* A model config's text (`name` for messages, normally its path), --set
 * overrides and a GPU's hardware profile (copied). */
RokSearchSpec *rok_search_spec_new(const char *name, const char *text, gsize length, const char *const *sets,
                                   const RokHw *hw, GError **error);
void rok_search_spec_free(RokSearchSpec *spec);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSearchSpec, rok_search_spec_free)

/* Ranges as rok_sweep_parse_range reads them. GPUs (required): "1024",
 * "64:1024:*2"; micro-batch sizes (default 1:64:*2); tensor-parallel
 * degrees (default: every one allowed); pipeline degrees (default: every
 * one dividing the layers); virtual stages per pipeline stage (default:
 * every one dividing the layers of a stage; 1 without pipelining); ZeRO
 * stages (default 0:3). Values that no layout can use are dropped. */
typedef enum {
  ROK_SEARCH_GPUS,
  ROK_SEARCH_MICRO_BATCH,
  ROK_SEARCH_TENSOR,
  ROK_SEARCH_PIPELINE,
  ROK_SEARCH_VIRTUAL,
  ROK_SEARCH_ZERO,
  ROK_SEARCH_AXIS_COUNT
} RokSearchAxis;
gboolean rok_search_spec_set_range(RokSearchSpec *spec, RokSearchAxis axis, const char *range, GError **error);
/* GPUs per node (default 8): tensor parallelism stays within one. */
gboolean rok_search_spec_set_gpus_per_node(RokSearchSpec *spec, guint64 gpus, GError **error);
/* Offload modes: "no", "yes" or "both" (default). */
gboolean rok_search_spec_set_offload(RokSearchSpec *spec, const char *modes, GError **error);
/* The least predicted SSD lifetime in years for a plan that writes to the
 * SSDs (default 0: no floor). */
void rok_search_spec_set_min_ssd_lifetime(RokSearchSpec *spec, double years);
/* How many best points to keep exact (default 5); prune FALSE plans every
 * point that fits in memory. */
void rok_search_spec_set_top(RokSearchSpec *spec, guint top, gboolean prune);
/* The layouts, in enumeration order: gpus, tensor, pipeline, virtual
 * stages, micro_batch, zero stage, each rising. ROK_ERROR_USAGE when there
 * are none or more than ROK_SEARCH_MAX_LAYOUTS. */
GArray *rok_search_spec_layouts(const RokSearchSpec *spec, GError **error);

/* Called after each finished task (on the process that gathers), `done`
 * of `total`. */
typedef void (*RokSearchProgressFunc)(const char *phase, guint done, guint total, gpointer user_data);

/* Where a search or sweep runs. Threads: workers on each process (0: one
 * per core). With `mpi` (rok_search_mpi_init said TRUE), tasks are handed
 * out one at a time by rank 0 to whichever rank asks (its own threads
 * included), results gathered on rank 0; a rank that sends nothing, not
 * even its heartbeat (every second while it works), for `timeout_s`
 * seconds is given up and its task handed to another. */
typedef struct {
  guint threads;
  gboolean mpi;
  double timeout_s;
  RokSearchProgressFunc progress;
  gpointer user_data;
} RokSearchRunner;

void rok_search_runner_init(RokSearchRunner *runner);

/* Run the search. On rank 0 (or without MPI) the result; on other ranks
 * NULL with no error and *root FALSE. */
RokSearch *rok_search_run(const RokSearchSpec *spec, const RokSearchRunner *runner, gboolean *root, GError **error);

/* The best `n` fitting planned rows (cluster tokens/s falling; ties:
 * enumeration order): guint row indexes. */
GArray *rok_search_best(const RokSearch *search, guint n);

/* CSV: header, then one line per row in enumeration order; doubles with 17
 * significant digits. Columns: model, hw, gpus, gpus_per_node,
 * tensor_parallel, pipeline_parallel, virtual_stages, data_parallel,
 * micro_batch, global_batch, zero_stage, offload, status, fixed_bytes,
 * bound_step_time_s, bound_tokens_per_s, step_time_s, tokens_per_s,
 * peak_bytes, fits, keep_bytes, nvme_bytes, host_bytes, recompute_bytes,
 * nvme_write_bytes, ssd_lifetime_years (empty when nothing is written),
 * ssd_limited, pareto. */
char *rok_search_to_csv(const RokSearch *search);
gboolean rok_search_save_csv(const RokSearch *search, const char *path, GError **error);
/* Cluster throughput against peak memory of every fitting planned point,
 * one series per offload mode, the Pareto front as a line, the GPU's
 * memory as a reference line. PNG, SVG or PDF by extension. */
gboolean rok_search_save_chart(const RokSearch *search, const char *path, GError **error);

/* ---- MPI ---- */

/* TRUE when rok was built with MPI (ROK_WITH_MPI) and started by mpirun:
 * MPI is then initialised (rok_search_mpi_finish ends it). */
gboolean rok_search_mpi_init(int *argc, char ***argv, GError **error);
/* This process's rank and the number of ranks (0 and 1 without MPI). */
void rok_search_mpi_rank(guint *rank, guint *size);
/* End MPI and return `code`. When a rank was given up, or `code` is not 0
 * with other ranks, MPI_Finalize could wait forever: the job is ended with
 * MPI_Abort(code) instead (mpirun then reports it). */
int rok_search_mpi_finish(int code);

/* A sweep run as a search runs (threads or MPI ranks): the same rows, the
 * same errors, as rok_sweep_run. NULL with no error on ranks other than 0. */
RokSweep *rok_search_sweep_run(const RokSweepSpec *spec, const RokSearchRunner *runner, gboolean *root,
                               GError **error);

G_END_DECLS
