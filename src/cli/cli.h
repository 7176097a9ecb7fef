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

/* Options every model-reading command takes: --json and --set. */
typedef struct {
  gboolean json;
  char **sets; /* NULL-terminated key=value list */
} RokCliCommon;

/* A context for `rok NAME`, with the command's entries and the common ones
 * (when `common` is not NULL). */
GOptionContext *cli_context(const RokCommand *command, const GOptionEntry *entries, RokCliCommon *common);
/* Parse; a bad option is ROK_ERROR_USAGE. Leaves the positional arguments
 * in argv[1..]. */
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
/* What rok approximates or does not model, one "rok CMD: KIND: ..." line
 * each on standard error (notes may be NULL). */
void cli_print_notes(const char *kind, char **notes);
/* What `model` leaves unmodelled (warnings) and assumes (notes). */
void cli_print_model_notes(const RokModel *model);
RokHw *cli_load_hw(const char *arg, GError **error);
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
/* The table of a composed pipeline: one row per stage. */
void cli_print_stages(RokSimResult *const *results, RokTrace *const *traces, guint n);

/* Print `value` (consumed) as canonical JSON on stdout. */
gboolean cli_print_json(json_object *value, GError **error);

/* Report `error` (consumed) as "rok NAME: message" and return its exit code. */
int cli_fail(const char *command, GError *error);
