/* What every subcommand shares: the command table entry, option parsing,
 * finding bundled configs by name, loading inputs, printing, exit codes.
 *
 * A subcommand lives in its own cmd-NAME.c, exports one
 * `int rok_cmd_NAME(int argc, char **argv)` and is listed in main.c. It
 * returns an exit code (docs/cli.md: 0 ok, 1 runtime failure, 2 bad input,
 * 3 no plan fits), usually through cli_fail(). */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/hw.h"
#include "rok/sim.h"
#include "rok/storage.h"
#include "rok/trace.h"

typedef struct {
  const char *name;
  const char *args;    /* "MODEL [--hw HW]" for help */
  const char *summary; /* one line */
  int (*run)(int argc, char **argv);
} RokCommand;

/* The command table (main.c). */
const RokCommand *cli_commands(void);
const RokCommand *cli_find(const char *name);

/* Options every model-reading command takes: --json, --set (model-config
 * fields) and --hw-set (hardware-profile fields). */
typedef struct {
  gboolean json;
  char **sets;    /* NULL-terminated key=value list */
  char **hw_sets; /* likewise, for the profile given with --hw */
} RokCliCommon;

/* Frees the lists of `common`. */
void cli_common_clear(RokCliCommon *common);

/* A context for `rok NAME`, with the command's entries and the common ones
 * (when `common` is not NULL). */
GOptionContext *cli_context(const RokCommand *command, const GOptionEntry *entries, RokCliCommon *common);
/* Parse; a bad option is ROK_ERROR_USAGE, a mistyped long option answered
 * with the closest one ("--budjet": did you mean "--budget"?). Leaves the
 * positional arguments in argv[1..]. */
gboolean cli_parse(GOptionContext *context, int *argc, char ***argv, GError **error);
/* Exactly `count` positional arguments after parsing (argv[1..count]),
 * `what` naming them in the message when some are missing. */
gboolean cli_positionals(int argc, char **argv, int count, const char *what, GError **error);

/* A path as given, or a bundled config by name ("gpt3-13b" ->
 * configs/models/gpt3-13b.json) when no such file exists. `kind` is "models"
 * or "hw". */
char *cli_resolve(const char *arg, const char *kind, GError **error);
/* A model config (with --set applied) turned into a trace, or a rok-trace/1
 * file as it is (then --set is an error). */
RokTrace *cli_load_trace(const char *arg, char **sets, GError **error);
/* A hardware profile with `hw_sets` (may be NULL) applied; its plausibility
 * warnings are printed on stderr. */
RokHw *cli_load_hw(const char *arg, char **hw_sets, GError **error);
/* A hardware-profile key given to --set is a usage error naming the
 * --hw-set to use instead (cli_load_trace checks this itself). */
gboolean cli_check_model_sets(char **sets, GError **error);
/* --hw-set without a profile to change is a usage error. */
gboolean cli_check_hw_sets(const char *hw_arg, char **hw_sets, GError **error);

/* A size given to --OPTION, forgiving as rok_units_parse_size_lenient is
 * (printing how it was read when that differs from the text); 0 bytes is
 * refused unless zero_ok. */
gboolean cli_parse_size(const char *option, const char *text, gboolean zero_ok, guint64 *bytes, GError **error);

/* What tokens/s and the per-GPU figures are counted over, for table
 * headers: "per copy of the model (2 GPUs: TP 2)", "per GPU". */
char *cli_replica_text(const RokTrace *trace);
/* How a step is made: "16 micro-batches of 1 sequence per step on each of 64
 * data-parallel copies (global batch 1024)". */
char *cli_batch_text(const RokTrace *trace);
/* The model FLOPs basis, one sentence for tables' footnotes. */
#define CLI_MFU_BASIS                                                                                               \
  "MFU: model FLOPs (3 x the forward FLOPs of the matrix multiplies, as Megatron-LM and PaLM count them; no "     \
  "recompute) per second per GPU, over the profile's gpu.peak_flops"
/* "143 T" FLOP/s and "45.8%". */
char *cli_flops_text(double flops_per_s);
char *cli_percent_text(double fraction);

/* The options of commands that draw charts, in their entries before
 * G_OPTION_ENTRY_NULL; `style` is a RokChartStyle (rok/charts.h), given to
 * rok_charts_set_style() after parsing. */
#define CLI_CHART_ENTRIES(style)                                                                                     \
  {"width", 0, 0, G_OPTION_ARG_DOUBLE, &(style)->width, "Chart width in points (default 600; timelines 720)", "PT"}, \
      {"height", 0, 0, G_OPTION_ARG_DOUBLE, &(style)->height, "Chart height in points (default 380; timelines 440)", \
       "PT"},                                                                                                        \
      {"font-size", 0, 0, G_OPTION_ARG_DOUBLE, &(style)->font_size,                                                  \
       "Chart body text in points (default 11; titles scale with it)", "PT"},                                        \
      {"title", 0, 0, G_OPTION_ARG_STRING, &(style)->title, "Chart title instead of the default (\"\": none)", "TEXT"}

/* --timeline PATH and --timeline-chart CHART (either may be NULL) of a run
 * that recorded its actions (rok_simulate_recorded), the strategy named in
 * the file ("otherData") beside the model, the machine, the budget and the
 * micro-batches simulated in detail, which the chart's title states. */
gboolean cli_timeline_write(const RokSimResult *r, const RokTrace *trace, const RokHw *hw, const char *strategy,
                            const char *path, const char *chart_path, GError **error);

/* What rok approximates or does not model, one "rok CMD: KIND: ..." line
 * each on standard error (notes may be NULL). */
void cli_print_notes(const char *kind, char **notes);
/* What `model` leaves unmodelled (warnings) and assumes (notes). */
void cli_print_model_notes(const RokModel *model);
/* cli_load_trace, saying whether `arg` was a rok-trace/1 file. */
RokTrace *cli_load_trace_file_or_model(const char *arg, char **sets, gboolean *from_file, GError **error);

/* cli-pipeline.c: every pipeline stage of a model config (one trace
 * without pipelining, or for a trace file: that stage, with a warning);
 * RokTrace elements. */
GPtrArray *cli_load_stages(const char *arg, char **sets, GError **error);
/* --stage TEXT: "all" (-1; the default with several stages) or a stage. */
gboolean cli_parse_stage(const char *text, guint stages, gint *stage, GError **error);
/* Print a warning for each part of this layout rok does not model (no
 * interconnect to cost its communication, ZeRO-2/3 with pipelining,
 * PCIe peer-to-peer contention). */
void cli_warn_unmodelled(const RokModel *model, const RokHw *hw);
/* Print rok_sim_far_shapes()'s warning, when the trace's GEMMs are far from
 * the shapes the profile was calibrated on. */
void cli_warn_far_shapes(const RokTrace *trace, const RokHw *hw);
/* The table of a composed pipeline: one row per stage. */
void cli_print_stages(RokSimResult *const *results, RokTrace *const *traces, guint n);

/* Print `value` (consumed) as canonical JSON on stdout. */
gboolean cli_print_json(json_object *value, GError **error);

/* An int option left at this was not given (so that -1 is refused, not
 * taken for "the default"). */
#define CLI_UNSET G_MININT
/* VALUE of --OPTION within [MIN, MAX] (CLI_UNSET passes): else
 * ROK_ERROR_USAGE naming it and the range. */
gboolean cli_check_range(const char *option, gint64 value, gint64 min, gint64 max, GError **error);

/* The run's signal watch (storage.h), made in main before any thread. */
RokSignalWatch *cli_signal_watch(void);
/* SIGINT, SIGTERM and SIGHUP go to FUNC(signo, USER_DATA) from now on, for
 * work that stops in order; FUNC NULL: back to stopping at once, with the
 * temporary outputs removed (exit 1). A command sends them back before it
 * writes its outputs. */
void cli_signals_to(RokSignalFunc func, gpointer user_data);

/* After a signal asked a run to stop in order: if it has not exited within
 * a second (a device kernel cannot be interrupted), remove its work folders
 * and temporary outputs and exit 1 anyway. Call from the signal watch. */
void cli_stop_within_a_second(const char *command, int signo);

/* TEXT with control characters but newline and tab (and bytes that are not
 * UTF-8) escaped, so that a name or path cannot drive the terminal it is
 * printed on. */
char *cli_printable(const char *text);

/* Report `error` (consumed) as "rok NAME: message" and return its exit code. */
int cli_fail(const char *command, GError *error);
