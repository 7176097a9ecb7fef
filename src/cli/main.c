/* rok: the command table and what happens around every command. */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "cli.h"
#include "rok/core.h"
#include "rok/storage.h"

int cli_cmd_plan(int argc, char **argv);
int cli_cmd_sweep(int argc, char **argv);
int cli_cmd_search(int argc, char **argv);
int cli_cmd_calibrate(int argc, char **argv);
int cli_cmd_trace(int argc, char **argv);
int cli_cmd_simulate(int argc, char **argv);
int cli_cmd_export(int argc, char **argv);
int cli_cmd_plot(int argc, char **argv);
int cli_cmd_execute(int argc, char **argv);
int cli_cmd_validate(int argc, char **argv);
int cli_cmd_import(int argc, char **argv);

/* The user's journeys first (README, "Commands"), then the building blocks. */
static const RokCommand commands[] = {
    {"plan", "MODEL --hw HW [--budget B] [-o DIR]", "Recommend a plan within a memory budget, with the ROK curve",
     cli_cmd_plan},
    {"sweep", "MODEL --hw HW [--micro-batch RANGE] [-o DIR]",
     "Every strategy over micro-batch sizes, sequence lengths, SSDs, budgets", cli_cmd_sweep},
    {"search", "MODEL --hw HW --gpus N [-o DIR]",
     "The best parallel layouts and plans for N GPUs (threads, or MPI ranks under mpirun)", cli_cmd_search},
    {"calibrate", "--dir DIR [--dir DIR2] [-o hw.json]", "Measure this machine into a hardware profile",
     cli_cmd_calibrate},
    {"execute", "SCHEDULE --dir DIR [--device N] [--repeat N]", "Run a schedule for real and compare with its prediction",
     cli_cmd_execute},
    {"validate", "[MODEL] --hw HW --dir DIR", "Plan, run and compare: how close the predictions come here",
     cli_cmd_validate},
    {"trace", "MODEL [--hw HW]", "List every activation tensor of a training step, per layer", cli_cmd_trace},
    {"simulate", "MODEL --hw HW [--strategy S]", "Simulate one training step under a strategy", cli_cmd_simulate},
    {"import", "hf CONFIG.json | megatron ARGS... [-o FILE]",
     "A model config from a Hugging Face config.json or Megatron-LM's arguments", cli_cmd_import},
    {"export", "PLAN --to megatron|deepspeed|torch", "A plan as Megatron-LM arguments, a DeepSpeed config or a PyTorch policy",
     cli_cmd_export},
    {"plot", "FILE -o CHART", "Draw a chart from a sweep's CSV, a plan's ROK curve or a step's timeline",
     cli_cmd_plot},
    {NULL, NULL, NULL, NULL},
};

const RokCommand *cli_commands(void) {
  return commands;
}

const RokCommand *cli_find(const char *name) {
  for (const RokCommand *c = commands; c->name != NULL; c++)
    if (g_str_equal(c->name, name))
      return c;
  return NULL;
}

static void print_usage(FILE *out) {
  fprintf(out, "Usage: rok COMMAND [OPTIONS] ARGS\n\n"
               "rok decides, per activation tensor of an LLM training step, whether to recompute it,\n"
               "offload it to host memory or NVMe SSDs, or keep it in GPU memory.\n\nCommands:\n");
  for (const RokCommand *c = commands; c->name != NULL; c++)
    fprintf(out, "  %-10s %s\n", c->name, c->summary);
  fprintf(out, "\nMODEL is a config file, a Hugging Face config.json or a bundled model's name (gpt3-13b); HW likewise\n"
               "(a100-40g-pcie4-4xp5800x). `rok help COMMAND` or `rok COMMAND --help` for more.\n");
}

/* A full disk behind `rok ... > out.json` must be an error, not silence:
 * flushed, checked and closed as git does (a closed standard output is
 * left alone). */
static int check_stdout(int code) {
  struct stat st;
  if (fstat(STDOUT_FILENO, &st) != 0)
    return code;
  errno = 0;
  gboolean ok = fflush(stdout) == 0 && !ferror(stdout);
  int saved = errno;
  if (fclose(stdout) != 0 && ok) {
    ok = FALSE;
    saved = errno;
  }
  if (ok)
    return code;
  fprintf(stderr, "rok: cannot write standard output: %s\n", saved ? g_strerror(saved) : "write error");
  return code == ROK_EXIT_OK ? ROK_EXIT_FAILURE : code;
}

/* Signals stop rok at once, leaving no temporary output file or folder and
 * nothing half written, unless a command's work stops in order for the
 * while it runs (execute, validate, calibrate: cli_signals_to). */
static void stop_now(int signo, gpointer user_data) {
  rok_output_discard_all();
  fprintf(stderr, "rok %s: interrupted by signal %d (%s)\n", (const char *)user_data, signo,
          g_strsignal(signo));
  _exit(ROK_EXIT_FAILURE);
}

/* One watch for the whole run, made before any thread starts (storage.h)
 * and kept until rok exits: freeing it would restore the signal mask, and a
 * signal between that and the exit would take its default action (exit
 * 143, after or while the outputs were written). */
static RokSignalWatch *watch;
static const char *running;

RokSignalWatch *cli_signal_watch(void) {
  return watch;
}

void cli_signals_to(RokSignalFunc func, gpointer user_data) {
  if (watch == NULL) /* `rok help COMMAND` runs a command's option parsing only */
    return;
  if (func == NULL)
    rok_signal_watch_retarget(watch, stop_now, (gpointer)running, NULL, NULL);
  else
    rok_signal_watch_retarget(watch, func, user_data, NULL, NULL);
}

static int run(const RokCommand *command, int argc, char **argv) {
  g_autoptr(GError) error = NULL;
  running = command->name;
  watch = rok_signal_watch_new(stop_now, (gpointer)command->name, &error);
  if (watch == NULL) {
    fprintf(stderr, "rok %s: %s\n", command->name, error->message);
    return ROK_EXIT_FAILURE;
  }
  return command->run(argc, argv);
}

static int unknown_command(const char *name) {
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
  for (const RokCommand *c = commands; c->name != NULL; c++)
    g_strv_builder_add(builder, c->name);
  g_auto(GStrv) names = g_strv_builder_end(builder);
  const char *close = rok_closest_name(name, (const char *const *)names);
  g_autofree char *shown = cli_printable(name);
  if (close != NULL)
    fprintf(stderr, "rok: unknown command \"%s\"; did you mean \"%s\"?\n\n", shown, close);
  else
    fprintf(stderr, "rok: unknown command \"%s\"\n\n", shown);
  print_usage(stderr);
  return ROK_EXIT_INVALID;
}

static int help(int argc, char **argv) {
  if (argc < 3) {
    print_usage(stdout);
    return ROK_EXIT_OK;
  }
  const RokCommand *command = cli_find(argv[2]);
  if (command == NULL)
    return unknown_command(argv[2]);
  char *help_argv[] = {argv[2], "--help", NULL};
  return command->run(2, help_argv);
}

int main(int argc, char **argv) {
  setlocale(LC_ALL, "C.UTF-8");
  gsl_set_error_handler_off();
  if (argc < 2) {
    print_usage(stderr);
    return ROK_EXIT_INVALID;
  }
  const char *name = argv[1];
  if (g_str_equal(name, "help") || g_str_equal(name, "--help") || g_str_equal(name, "-h"))
    return check_stdout(help(argc, argv));
  if (g_str_equal(name, "--version")) {
    printf("rok %s\n", ROK_VERSION);
    return check_stdout(ROK_EXIT_OK);
  }
  const RokCommand *command = cli_find(name);
  if (command == NULL)
    return unknown_command(name);
  return check_stdout(run(command, argc - 1, argv + 1));
}
