/* Sweeps: every strategy at every point of a grid of micro-batch sizes,
 * sequence lengths, SSD counts and memory budgets (`rok sweep`).
 *
 * A point changes the model config (micro_batch, seq_len, through the same
 * overrides as --set), the hardware profile (nvme.devices) and the memory
 * budget, then simulates each strategy there. Gradient accumulation stays as
 * in the config: global_batch follows as micro_batch · data_parallel ·
 * (micro-batches per step of the config), so tokens/s compare across
 * micro-batch sizes. A baseline runs under the budget (the simulator's
 * memory_budget: prefetching and waiting respect it); it fits when its peak
 * (fixed memory included) is within the budget, which is at most the GPU's
 * memory and by default equal to it. Strategies that need SSDs (offload,
 * tba) are left out at points with 0 of them.
 *
 * Layouts: tensor_parallel, pipeline_parallel and virtual_stages are axes
 * too; with a GPU count (rok_sweep_spec_set_gpus) data_parallel is the
 * GPUs over tensor_parallel · pipeline_parallel at each point. Once a
 * layout axis or the GPU count is set, the global batch stays the
 * config's (the micro-batches per step follow), so that layouts train on
 * the same tokens per step, and tokens_per_s is the whole job's (every
 * data-parallel replica's); otherwise it is one replica's. A pipelined point simulates every
 * stage and composes them (rok_pipeline_simulate); its row has the
 * pipeline's step, and the memory figures of the stage with the highest
 * peak; it fits when every stage does.
 *
 * Points are ordered as nested loops, the first axis outermost:
 * tensor_parallel, pipeline_parallel, virtual_stages, budget,
 * nvme_devices, seq_len, micro_batch; each axis's values rising; at each
 * point, the strategies in the order asked for. Sweeping runs the points on
 * a GLib thread pool, each worker with its own trace and simulator, and
 * stores results by index: the same sweep gives the same rows, bit for bit,
 * on any number of threads.
 *
 * Ranges (rok_sweep_parse_range):
 *   8           one value
 *   1,2,4,8     a list (spaces allowed around the values)
 *   a:b         every whole number from a to b (1:64 is 64 points)
 *   a:b:s       a, a+s, a+2s, ... up to b
 *   a:b:*k      a, a·k, a·k², ... up to b (1:64:*2 is 1, 2, 4, ..., 64)
 * Budgets take sizes with units in each place ("20GiB:40GiB:4GiB",
 * "24GiB,32GiB"); a:b on sizes steps by one byte, so give a step. Values
 * are swept rising; a value given twice is an error.
 *
 * Files: sweep.csv (rok_sweep_to_csv), one row per point and strategy,
 * doubles with 17 significant digits so that reading it back gives the same
 * numbers, and charts drawn from the rows alone, so that a chart re-drawn
 * from the CSV is byte-identical to the one the sweep wrote. */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/hw.h"
#include "rok/plan.h"

G_BEGIN_DECLS

typedef enum {
  ROK_SWEEP_TENSOR_PARALLEL,
  ROK_SWEEP_PIPELINE_PARALLEL,
  ROK_SWEEP_VIRTUAL_STAGES,
  ROK_SWEEP_BUDGET,
  ROK_SWEEP_NVME_DEVICES,
  ROK_SWEEP_SEQ_LEN,
  ROK_SWEEP_MICRO_BATCH,
  ROK_SWEEP_AXIS_COUNT
} RokSweepAxis;

/* Most values one axis may take, and most points in a sweep. */
#define ROK_SWEEP_MAX_VALUES 4096
#define ROK_SWEEP_MAX_POINTS 65536

/* The CSV column: "tensor_parallel", "pipeline_parallel", "virtual_stages",
 * "budget_bytes", "nvme_devices", "seq_len", "micro_batch". */
const char *rok_sweep_axis_name(RokSweepAxis axis);
/* The column name or the option's ("micro-batch", "budget"); ROK_ERROR_USAGE
 * listing the axes otherwise. */
gboolean rok_sweep_axis_from_name(const char *name, RokSweepAxis *axis, GError **error);

/* Parse a range (see above) into rising guint64 values, each at least
 * `min`; `sizes` reads the values with units (rok_units_parse_size).
 * ROK_ERROR_USAGE saying what is wrong with the text. */
GArray *rok_sweep_parse_range(const char *text, gboolean sizes, guint64 min, GError **error);

/* One strategy at one point. */
typedef struct {
  RokStrategy strategy;
  /* The layout; data_parallel follows from --gpus (or is the config's). */
  guint64 tensor_parallel, pipeline_parallel, data_parallel, virtual_stages;
  guint64 micro_batch, seq_len, nvme_devices, budget_bytes;
  guint64 gpu_memory_bytes, fixed_bytes;
  double step_time_s, tokens_per_s; /* tokens/s per copy of the model */
  double tokens_per_gpu_s, model_flops_per_gpu_s, mfu; /* per GPU, as RokSimResult's */
  guint64 peak_bytes, activation_peak_bytes;
  /* SSDTrain's figure: bytes offloaded to NVMe per micro-batch / (1.5 ·
   * forward time of a micro-batch); 0 when nothing goes to the SSDs. */
  double required_write_bandwidth;
  guint64 nvme_write_bytes; /* simulated, over the whole step */
  double recompute_s, stall_s;
  double bubble_s, exposed_comm_s; /* pipeline bubble (of the stage with the highest peak), communication */
  gboolean fits; /* peak_bytes <= budget_bytes (every stage's) */
} RokSweepRow;

guint64 rok_sweep_row_value(const RokSweepRow *row, RokSweepAxis axis);

typedef struct {
  char *model_name, *hw_name;
  GArray *rows;                         /* RokSweepRow, in sweep order */
  GArray *values[ROK_SWEEP_AXIS_COUNT]; /* guint64: each axis's distinct values in the rows, rising */
  GArray *strategies;                   /* RokStrategy: as they first appear in the rows */
} RokSweep;

void rok_sweep_free(RokSweep *sweep);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSweep, rok_sweep_free)

/* What to sweep: a model config (its text; `name` is how messages call it
 * and the model's default name, normally its path), --set overrides, a
 * hardware profile (copied). Fails on a config that does not load. */
typedef struct _RokSweepSpec RokSweepSpec;
RokSweepSpec *rok_sweep_spec_new(const char *name, const char *text, gsize length, const char *const *sets,
                                 const RokHw *hw, GError **error);
void rok_sweep_spec_free(RokSweepSpec *spec);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokSweepSpec, rok_sweep_spec_free)

/* The values of an axis, from a range (see above): micro_batch and seq_len
 * at least 1, nvme_devices at least 0, budgets from 1 byte to the GPU's
 * memory. An axis never set keeps the config's or profile's value (the
 * budget: the GPU's memory). ROK_ERROR_USAGE on a bad range, or when the
 * sweep would have more than ROK_SWEEP_MAX_POINTS points. */
gboolean rok_sweep_spec_set_axis(RokSweepSpec *spec, RokSweepAxis axis, const char *range, GError **error);
/* Which strategies, comma-separated ("keep,offload"); all by default. */
gboolean rok_sweep_spec_set_strategies(RokSweepSpec *spec, const char *list, GError **error);
guint rok_sweep_spec_points(const RokSweepSpec *spec);
/* Sweep layouts of `gpus` GPUs: data_parallel = gpus / (tensor_parallel ·
 * pipeline_parallel) at each point (which must divide). */
gboolean rok_sweep_spec_set_gpus(RokSweepSpec *spec, guint64 gpus, GError **error);

/* Called in the calling thread after each point: done of total. */
typedef void (*RokSweepProgressFunc)(guint done, guint total, gpointer user_data);

/* Run the sweep on `threads` threads (0: one per core; 1: in the calling
 * thread). On failure the error is that of the first failing point in
 * sweep order, naming the point. */
RokSweep *rok_sweep_run(const RokSweepSpec *spec, guint threads, RokSweepProgressFunc progress, gpointer user_data,
                        GError **error);

/* For running a sweep elsewhere (rok/search.h: across MPI ranks), in
 * tasks that rok_sweep_run runs the same way, so that the rows are the
 * same bytes: a task is a run of consecutive points taken in order by one
 * worker (with the planner among the strategies, the micro-batches of one
 * value of the other axes, each learning from the one before; else one
 * point). rok_sweep_run_task appends task `task`'s rows (RokSweepRow) to
 * `rows`, stopping at its first failing point with rok_sweep_run's error
 * there. rok_sweep_run_point plans point `index` alone, as no sweep does
 * past a micro-batch that fits nowhere (for comparing with the chain).
 * rok_sweep_new_from_rows: the sweep of all points' rows (taken), in
 * sweep order. */
guint rok_sweep_spec_tasks(const RokSweepSpec *spec);
gboolean rok_sweep_run_task(const RokSweepSpec *spec, guint task, GArray *rows, GError **error);
gboolean rok_sweep_run_point(const RokSweepSpec *spec, guint index, GArray *rows, GError **error);
RokSweep *rok_sweep_new_from_rows(const RokSweepSpec *spec, GArray *rows);

/* {model, hw, axes: {micro_batch: [...], ...}, strategies: [...], rows:
 * [{the CSV columns; fits as a boolean}, ...]} */
json_object *rok_sweep_to_json(const RokSweep *sweep);

/* CSV: the header line, then one line per row. Columns: strategy, model,
 * hw, tensor_parallel, pipeline_parallel, data_parallel, virtual_stages,
 * micro_batch, seq_len, nvme_devices, budget_bytes, gpu_memory_bytes,
 * fixed_bytes, step_time_s, tokens_per_s, tokens_per_gpu_s,
 * model_flops_per_gpu_s, mfu, peak_bytes,
 * activation_peak_bytes, required_write_bandwidth, nvme_write_bytes,
 * recompute_s, stall_s, bubble_s, exposed_comm_s, fits (0 or 1). Base units: bytes, seconds, bytes/s,
 * tokens/s. Names holding a comma or a quote are quoted (RFC 4180). */
char *rok_sweep_to_csv(const RokSweep *sweep);
/* Written atomically (temporary file and rename). */
gboolean rok_sweep_save_csv(const RokSweep *sweep, const char *path, GError **error);
/* Read a CSV written by rok_sweep_to_csv. Errors (ROK_ERROR_INPUT) are
 * located as name:line:column: a header that is not the one above, a row
 * of the wrong length, a field that is not a number of its column's kind, an
 * unknown strategy, rows of another model or machine than the first. */
RokSweep *rok_sweep_parse_csv(const char *name, const char *text, gsize length, GError **error);
RokSweep *rok_sweep_load_csv(const char *path, GError **error);

G_END_DECLS
