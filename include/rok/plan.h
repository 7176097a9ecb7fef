/* Plans: what happens to every activation tensor of a step.
 *
 * The baseline strategies (docs/simulator.md, "Strategies") turn a trace into a
 * RokStepPlan, one decision per tensor, with default simulator options.
 * Tensors outside the layers (layer -1: embedding, loss head) are kept by
 * every baseline; transient tensors get "keep" (the simulator ignores their
 * decision).
 *
 *   keep       every saved tensor stays in GPU memory.
 *   recompute  Megatron's full recompute, one layer per checkpoint: a
 *              layer's input (a tensor of layer L made by an op outside L)
 *              is kept, every other saved tensor of the layer recomputed,
 *              and the rebuild re-runs the layer's whole forward
 *              (options.rebuild_whole_layers), as Megatron does.
 *   selective  Megatron's selective recompute: the attention core (the
 *              outputs of attention scores, softmax and the dropout right
 *              after the softmax) is recomputed, the rest kept. With flash
 *              attention there is nothing to recompute: it equals keep.
 *   offload    every saved tensor of the layers with at least
 *              offload_min_elements elements goes to NVMe; smaller ones are
 *              kept (SSDTrain: "tensors under 8 Mi elements are not
 *              offloaded").
 *   tba        SSDTrain's adaptive keep, per module as SSDTrain decides
 *              (a layer's attention block, with the layer's input, and
 *              its MLP block): walking modules in forward order, module i
 *              is offloaded (its tensors that `offload` would move) while
 *              (B_before + 2·B_i) / (3·T − 2·T_before) <= W (SSDTrain's
 *              rule: B a module's offloadable bytes, T the forward time of
 *              the micro-batch, T_before the forward time before module i,
 *              W the write path: min of PCIe d2h and the array's write
 *              rate). From the first module that fails, everything is
 *              kept; the last module is always kept (its backward follows
 *              at once). Its prefetcher reads a chunk of two modules
 *              ahead: prefetch_unit module, prefetch_window 2.
 *
 * The planner (`rok`) extends this header later. */
#pragma once

#include <glib.h>

#include "rok/hw.h"
#include "rok/sim.h"
#include "rok/trace.h"

G_BEGIN_DECLS

typedef enum {
  ROK_STRATEGY_KEEP,
  ROK_STRATEGY_RECOMPUTE,
  ROK_STRATEGY_SELECTIVE,
  ROK_STRATEGY_OFFLOAD,
  ROK_STRATEGY_TBA,
  ROK_STRATEGY_BASELINE_COUNT,
  /* The planner, named beside the baselines. */
  ROK_STRATEGY_ROK = ROK_STRATEGY_BASELINE_COUNT,
  ROK_STRATEGY_COUNT
} RokStrategy;

/* SSDTrain's floor: smaller tensors are not worth a transfer. */
#define ROK_OFFLOAD_MIN_ELEMENTS ((guint64)8 << 20)

typedef struct {
  guint64 offload_min_elements; /* default ROK_OFFLOAD_MIN_ELEMENTS */
} RokStrategyOptions;

void rok_strategy_options_init(RokStrategyOptions *options);

/* "keep", "recompute", ..., "rok". */
const char *rok_strategy_name(RokStrategy strategy);
/* Any of the six names; an unknown name is ROK_ERROR_USAGE listing them. */
gboolean rok_strategy_from_name(const char *name, RokStrategy *strategy, GError **error);

/* The plan of a baseline strategy; `options` may be NULL (defaults).
 * offload and tba need NVMe devices in `hw` (ROK_ERROR_INPUT otherwise). */
RokStepPlan *rok_strategy_plan(RokStrategy strategy, const RokTrace *trace, const RokHw *hw,
                              const RokStrategyOptions *options, GError **error);

/* Modules that tba offloads (the first `n`, in forward order, of `total`;
 * n < total), for reports; fails like rok_strategy_plan. */
gboolean rok_strategy_tba_modules(const RokTrace *trace, const RokHw *hw, const RokStrategyOptions *options,
                                  guint *n, guint *total, GError **error);

G_END_DECLS

/* ======================================================================
 * The planner, the ROK curve, SSD figures and plan files (`rok plan`).
 * ====================================================================== */

G_BEGIN_DECLS

/* The planner chooses, for every saved tensor, keep, offload to NVMe,
 * offload to host memory or recompute, so that the simulated step is as
 * fast as possible while the simulated peak GPU memory (fixed memory
 * included) stays within an absolute budget. The simulator judges every
 * candidate; closed forms only order the search.
 *
 * Structure. Tensors of alike layers with the same local name form a
 * class ("attn.softmax_out" of layers 0-95); a class is cut into at most 16
 * units of consecutive layers. Decisions are made per unit, refined per
 * tensor.
 *
 * Work shared by all budgets (once per planner):
 *   - the baselines, each run unbounded;
 *   - a greedy descent from keeping everything: each step changes the one
 *     unit (offloaded, from the first layers; recomputed, from the first
 *     or the last) that frees peak memory at the least step time per byte,
 *     as the simulator measures it; prices are re-measured lazily;
 *   - the least-memory plan: a few recipes (recompute all but the layer
 *     inputs and offload those; recompute all; offload all) run with a one
 *     byte budget, so that the simulator waits for every copy;
 *   - a greedy ascent from it, giving memory back where it saves the most
 *     time per byte (it finds what the descent's early choices block).
 * For a budget: if keeping everything fits, that is the plan (nothing is
 * faster). Else the candidates are every baseline run under the budget,
 * the least-memory plan, the fastest descent and ascent steps that fit,
 * the step that crossed the budget made on part of its unit, the steps
 * before it run under the budget (the simulator then waits for copies to
 * finish rather than exceed it), and a descent under the budget from the
 * last step that does not fit. The three best are refined by local search
 * (change a unit, then a tensor, to each other decision; on small traces
 * also pairs of tensors, ruin-and-recreate, every combination of a layer's
 * tensors) and iterated local search (seeded random shakes), the simulator
 * runs shared among them. The finalists and every baseline are run again
 * with the default detail; the fastest that fits wins. So the plan is never
 * slower than a baseline that fits the same budget.
 *
 * Host memory used by offloads is bounded (host_memory). On equal step
 * times the plan moving fewer bytes over PCIe wins (keep rather than
 * offload for nothing), then the one using less host memory (it serves the
 * rest of the job; the SSDs' wear is reported), then the smaller peak.
 * Deterministic: no hash-table order, seeded randomness; a curve's points
 * are shared out among threads, but each is planned on its own. */
/* On step times within this fraction of the fastest, the plan that writes
 * less to the SSDs wins, then the one moving fewer bytes over PCIe: keep
 * (or recompute) beats host memory beats NVMe when they are as fast. 1%:
 * below the simulator's own error against measured steps (README,
 * `rok validate`), so the planner does not wear the drives for a gain it
 * cannot promise. */
#define ROK_PLAN_WEAR_TOLERANCE 0.01

/* What one planner decision covers. tensor: each saved tensor on its own.
 * module: all the saved tensors of a layer's attention block (with the
 * layer's input) or of its MLP block share one decision, as Megatron's
 * recompute modules and SSDTrain's module-level keep decide; layer: all the
 * saved tensors of a layer, as Megatron's --recompute-num-layers and
 * Transformer Engine's CPU offloading of N layers. In a module or layer, a
 * tensor that cannot take the decision (too small to offload, not
 * recomputable, or the block's input when it is recomputed: the checkpoint
 * the rebuild starts from) is kept, as the frameworks do; tensors outside
 * the layers are kept. */
typedef enum {
  ROK_GRANULARITY_TENSOR,
  ROK_GRANULARITY_MODULE,
  ROK_GRANULARITY_LAYER,
  ROK_GRANULARITY_COUNT
} RokGranularity;

const char *rok_granularity_name(RokGranularity granularity);
/* "tensor", "module" or "layer"; else ROK_ERROR_USAGE listing them. */
gboolean rok_granularity_from_name(const char *name, RokGranularity *granularity, GError **error);

typedef struct {
  RokGranularity granularity; /* ROK_GRANULARITY_TENSOR by default */
  /* Host memory offloads may fill; G_MAXUINT64 (the default): host.memory
   * less the pinned staging buffer; 0: no offload to host memory. */
  guint64 host_memory;
  gboolean use_nvme;          /* offload to the SSDs when there are some (TRUE) */
  /* Decisions a saved tensor may take: bits (1 << RokDecision); 0 (the
   * default): all four. A tensor none of them applies to is kept. */
  guint tiers;
  /* Tensors with fewer elements are never offloaded (0, the default: any). */
  guint64 offload_min_elements;
  /* Most bytes per second a plan may write to the SSDs on average over
   * the step; 0 (the default): no limit. rok_ssd_max_write_rate() turns a
   * lifetime into one. */
  double max_nvme_write_rate;
  /* Budgets of the ROK curve (>= 2; 0: the default, 32). A plan for a
   * budget is never slower than these budgets' plans at or below it, so
   * that the curve's points are what rok_planner_plan() returns there.
   * Set ROK_PLANNER_NO_GRID to plan each budget on its own (sweeps). */
  guint curve_points;
  /* The wear tolerance (default ROK_PLAN_WEAR_TOLERANCE; 0: speed alone). */
  double wear_tolerance;
  guint search_detail;        /* detail_micro_batches while searching (1) */
  guint polish_runs;          /* simulator runs for refining one plan; 0: by trace size */
  guint curve_polish_runs;    /* the same for each point of a curve; 0: by trace size */
  gboolean quick;             /* refine every plan as little as a curve's point (sweeps) */
  guint threads;              /* for the curve's points; 0: one per processor */
  RokStrategyOptions strategy; /* for the baselines */
} RokPlannerOptions;

#define ROK_PLANNER_DEFAULT_CURVE_POINTS 32
#define ROK_PLANNER_NO_GRID G_MAXUINT

void rok_planner_options_init(RokPlannerOptions *options);

typedef struct _RokPlanner RokPlanner;
/* Borrows `trace` and `hw`, which must outlive it. */
RokPlanner *rok_planner_new(const RokTrace *trace, const RokHw *hw, const RokPlannerOptions *options,
                            GError **error);
void rok_planner_free(RokPlanner *planner);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokPlanner, rok_planner_free)

/* The smallest budget any plan fits (recomputing or offloading all it
 * can, the simulator waiting for copies rather than exceeding it), with a
 * phrase saying how ("recompute every layer but its input, offload the
 * inputs to host memory"; owned by the planner). */
guint64 rok_planner_min_budget(RokPlanner *planner, const char **how);

/* The plan for `budget` (bytes, fixed memory included), simulated with the
 * default detail (RokStepPlan.options.memory_budget is the limit the
 * simulator honoured, at most `budget`). ROK_ERROR_NO_FIT when no plan
 * fits, saying the smallest budget that does. */
RokStepPlan *rok_planner_plan(RokPlanner *planner, guint64 budget, RokSimResult **result, GError **error);
/* The same, but where no plan fits `budget`, the plan for the least budget
 * (a sweep's or a search's point that does not fit is still drawn and
 * reported: its peak says by how much); *fits_nowhere (may be NULL) says
 * which. */
RokStepPlan *rok_planner_plan_or_least(RokPlanner *planner, guint64 budget, gboolean *fits_nowhere, GError **error);
/* The least-memory plan among the whole-model recipes of
 * rok_planner_min_budget(), keeping everything and `also` (a plan for a
 * trace of the same tensors, NULL: none), the winner and `also` also run
 * under a budget of the least peak found (the smallest peak, then the
 * fastest), the winner then refined under it with a curve point's runs;
 * without the planner's search: for a point known to fit nowhere (a
 * sweep's micro-batch above one that fits nowhere). */
RokStepPlan *rok_planner_least_memory(RokPlanner *planner, const RokStepPlan *also);
/* A baseline at `budget`: its plan run under the budget. NULL and
 * ROK_ERROR_INPUT when it does not apply (no SSDs). The result says
 * whether it fits (peak_bytes <= budget). */
RokStepPlan *rok_planner_baseline(RokPlanner *planner, RokStrategy strategy, guint64 budget,
                                 RokSimResult **result, GError **error);
/* Simulator runs made so far (for benchmarks). */
guint64 rok_planner_runs(const RokPlanner *planner);

/* The exact optimum by enumeration of every decision of every saved tensor
 * (of each group's representative at a coarser granularity; for tests and
 * small traces): at most `max_plans` decision vectors, ROK_ERROR_USAGE
 * when there would be more. Each is run under `budget` with the default
 * detail, and with every prefetch window the planner tries when it reads
 * anything back; the best that fits by the planner's own order (faster,
 * then fewer bytes moved, less host memory, smaller peak; then first in
 * enumeration order). ROK_ERROR_NO_FIT when none fits. */
RokStepPlan *rok_planner_exhaustive(RokPlanner *planner, guint64 budget, guint64 max_plans,
                                   RokSimResult **result, GError **error);

/* ---- The ROK curve: step time against the memory budget ---- */

typedef struct {
  guint64 budget_bytes;
  double step_time_s, tokens_per_s;
  guint64 peak_bytes, activation_peak_bytes;
  /* Saved bytes of one micro-batch by decision. */
  guint64 decision_bytes[ROK_DECISION_COUNT];
  RokStrategy source; /* who made the plan: ROK_STRATEGY_ROK or the baseline that won */
} RokCurvePoint;

typedef struct {
  char *model_name, *hw_name;
  guint64 fixed_bytes, gpu_memory_bytes;
  guint64 min_budget, keep_budget;
  /* For the per-GPU figures of each point (0 in a curve read back from a
   * plan file): GPUs per copy of the model, model FLOPs of a step on one
   * GPU (rok_trace_model_flops × micro-batches), the GPU's peak FLOP/s. */
  guint64 replica_gpus;
  double model_flops_per_step, peak_flops;
  GArray *points; /* RokCurvePoint, budgets rising; step times never rising */
  /* Each baseline on its own, under the GPU's memory: a labelled point. */
  gboolean has_baseline[ROK_STRATEGY_BASELINE_COUNT];
  RokCurvePoint baselines[ROK_STRATEGY_BASELINE_COUNT];
} RokCurve;

/* Called after each point, done of total, from the thread that made it
 * (one at a time). */
typedef void (*RokProgressFunc)(guint done, guint total, gpointer user_data);

/* Budgets on one ROK curve: each is a planner run (~10 ms for GPT-3 13B,
 * more for bigger models) and a chart a few hundred points wide shows no
 * more; --points 100000 ran for hours. */
#define ROK_CURVE_MAX_POINTS 512

/* `points` (2 to ROK_CURVE_MAX_POINTS) budgets evenly from the smallest feasible to the peak of
 * keeping everything (one when they are equal). A plan that fits a budget
 * fits every larger one: each point is the best found at or below it, so
 * the curve is monotone. */
RokCurve *rok_planner_curve(RokPlanner *planner, guint points, RokProgressFunc progress, gpointer user_data,
                            GError **error);
void rok_curve_free(RokCurve *curve);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokCurve, rok_curve_free)

/* [{budget_bytes, step_time_s, tokens_per_s, peak_bytes,
 * activation_peak_bytes, decision_bytes {decision: bytes}, source}, ...] */
json_object *rok_curve_to_json(const RokCurve *curve);
/* The baselines' own points (curve->baselines), alike; source is the
 * strategy, budget_bytes its peak. */
json_object *rok_curve_baselines_to_json(const RokCurve *curve);
/* CSV: a header, then one row per point (series "rok") and one per
 * baseline (series = its name); the save writes atomically. */
char *rok_curve_to_csv(const RokCurve *curve);
gboolean rok_curve_save_csv(const RokCurve *curve, const char *path, GError **error);

/* ---- SSD figures ---- */

typedef struct {
  guint64 write_bytes_per_step;   /* simulated NVMe writes of the step */
  double write_bytes_per_day;     /* at the predicted step time, 24/7 */
  guint64 offload_bytes_per_micro_batch; /* saved bytes sent to NVMe */
  double forward_time_s;          /* forward of one micro-batch */
  /* SSDTrain's figure: offload bytes per micro-batch / (1.5 · forward time). */
  double required_write_bandwidth;
  double average_write_bandwidth; /* simulated: written bytes / step time */
  double array_write_bandwidth;   /* devices · write_bandwidth */
  double path_write_bandwidth;    /* the least of the array and PCIe d2h */
  double write_amplification;     /* the activation workload's, assumed */
  double rated_write_amplification; /* the workload the endurance rating assumes */
  double retention_factor;        /* endurance gained by relaxed retention */
  double endurance_bytes;         /* devices · endurance_pbw · 1e15 (as rated) */
  double lifetime_years;          /* INFINITY when nothing is written; NaN when the endurance is unknown */
  guint64 capacity_bytes;         /* devices · capacity */
  /* The drives this GPU stripes over, and the GPUs of its node (1 for a
   * profile of one GPU): per drive, writes and the required bandwidth are
   * divided by `drives`; the node writes node_gpus times as much. */
  guint64 drives, node_gpus;
} RokSsdFigures;

/* The lifetime model's assumptions. The drives last
 *   endurance · rated_write_amplification · retention_factor
 *   / (bytes written per day · write_amplification)
 * days, training around the clock. A rated TBW/PBW is what the drive takes
 * under the JEDEC workload (JESD219), whose own write amplification is in
 * the rating: with rated_write_amplification = 2.5 and write_amplification
 * = 1 (large sequential writes), the drive takes 2.5 times its rating,
 * SSDTrain's arithmetic; retention_factor credits activations living
 * seconds rather than a year of retention (SSDTrain "relaxed retention"). The
 * defaults, 1, 1 and 1, take the rating at face value: nothing credited
 * that the drive's maker does not promise. Any of them may be below 1
 * (a write amplification under 1 stands for compression or
 * deduplication in the drive). */
typedef struct {
  double write_amplification, rated_write_amplification, retention_factor;
} RokSsdModel;

#define ROK_SSD_DEFAULT_WRITE_AMPLIFICATION 1.0
void rok_ssd_model_init(RokSsdModel *model);
/* The rated endurance the model credits: endurance · rated / workload ·
 * retention; 0 when the profile does not rate its drives. */
double rok_ssd_credited_endurance(const RokHw *hw, const RokSsdModel *model);
/* The most bytes per second the array may be written so that it lasts
 * `lifetime_s` (0 when the endurance is unknown). */
double rok_ssd_max_write_rate(const RokHw *hw, const RokSsdModel *model, double lifetime_s);

void rok_ssd_figures(const RokTrace *trace, const RokHw *hw, const RokStepPlan *plan, const RokSimResult *result,
                     const RokSsdModel *model, RokSsdFigures *out);
/* write_bytes_per_step, write_bytes_per_day, required_write_bandwidth,
 * average_write_bandwidth, array_write_bandwidth, path_write_bandwidth,
 * lifetime_years (null when nothing is written or the drives' endurance is
 * unknown, as in a calibrated profile), endurance_known, assumptions. */
json_object *rok_ssd_figures_to_json(const RokSsdFigures *ssd);

/* ---- Plan files: rok-plan/1 ---- */

/* The per-layer table: runs of consecutive layers that decide alike (name
 * for name), then the tensors outside the layers (first = last = -1):
 * [{first, last, bytes: {decision: bytes of the whole run, one
 * micro-batch}, tensors: {decision: [names, as in the run's first layer]}}]. */
json_object *rok_plan_layers_to_json(const RokTrace *trace, const RokStepPlan *plan);

/* A plan as `rok plan` writes it: which strategy made it, for what model
 * and machine and budget, the decision of every saved tensor, and the
 * report around it (summary, predicted figures, baselines at the budget,
 * curve, the baselines' own points on the curve's chart, SSD figures, the
 * per-layer table; kept as JSON, written back unchanged). */
typedef struct {
  char *strategy;     /* "rok", "keep", ... */
  char *model_name, *hw_name;
  char *trace_sha256; /* of the trace's rok-trace/1 text */
  guint64 budget_bytes;
  gboolean feasible;
  RokStepPlan *plan;   /* one decision per tensor of the trace, options */
  json_object *report; /* predicted, baselines, curve, ssd, layers */
} RokPlanFile;

void rok_plan_file_free(RokPlanFile *file);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokPlanFile, rok_plan_file_free)

/* The recommendation in one sentence ("Recommendation: offload to NVMe
 * 13.2 GiB in layers 0–95, recompute 6.47 GiB in layers 0–95, keep 12.4
 * GiB per micro-batch: 54.7 s per step, peak 19.9 GiB within 20.0 GiB; 1.7%
 * faster than selective, the fastest baseline that fits."); `baselines`
 * holds a result per baseline at the same budget, NULL where it does not
 * apply. Parts under a thousandth of the saved bytes are left out. */
char *rok_plan_summary(const RokTrace *trace, const RokStepPlan *plan, const RokSimResult *result,
                       RokStrategy strategy, guint64 budget, const RokSimResult *const *baselines);

/* The document: format, strategy, model, hw, trace_sha256, budget_bytes,
 * feasible, options, the report's members, then "tensors": one entry per
 * saved tensor {id, name, layer, bytes, decision}. */
json_object *rok_plan_file_to_json(const RokPlanFile *file, const RokTrace *trace);
gboolean rok_plan_file_save(const RokPlanFile *file, const RokTrace *trace, const char *path, GError **error);
/* Read and check a rok-plan/1 file against `trace` (its hash, every tensor
 * id and name); errors located in the file. */
RokPlanFile *rok_plan_file_load(const char *path, const RokTrace *trace, GError **error);
RokPlanFile *rok_plan_file_parse(const char *name, const char *text, gsize length, const RokTrace *trace,
                                 GError **error);

G_END_DECLS
