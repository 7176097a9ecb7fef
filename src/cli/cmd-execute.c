/* rok execute: run a schedule for real on an OpenCL device and real disks,
 * and compare what it measured with what the schedule predicted. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "rok/storage.h"
#include "rok/core.h"
#include "rok/exec.h"
#ifdef ROK_WITH_OPENCL
#include "rok/device.h"
#endif

typedef struct {
  char **dirs;
  char *output, *io, *slot, *timeline;
  gint device, repeat;
  gint64 seed;
  gboolean list, json;
} Options;

static void options_clear(Options *o) {
  g_strfreev(o->dirs);
  g_free(o->output);
  g_free(o->io);
  g_free(o->slot);
  g_free(o->timeline);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

static int list_devices(gboolean json) {
#ifdef ROK_WITH_OPENCL
  GError *error = NULL;
  g_autoptr(GPtrArray) infos = rok_cl_device_list(&error);
  if (infos == NULL)
    return cli_fail("execute", error);
  if (json)
    return cli_print_json(rok_cl_device_list_to_json(infos), &error) ? ROK_EXIT_OK : cli_fail("execute", error);
  g_autofree char *table = rok_cl_device_list_format(infos);
  fputs(table, stdout);
  return ROK_EXIT_OK;
#else
  (void)json;
  return cli_fail("execute", g_error_new_literal(ROK_ERROR, ROK_ERROR_DEVICE,
                                                     "this rok was built without OpenCL: no devices to list"));
#endif
}

/* ---- progress and signals ---- */

static void progress(const RokExecProgress *p, gpointer user_data) {
  (void)user_data;
  if (p->step == 0)
    printf("\rwarm-up step: %u of %u actions\033[K", p->done, p->total);
  else
    printf("\rstep %u of %u: %u of %u actions\033[K", p->step, p->steps - 1, p->done, p->total);
  fflush(stdout);
}

static void on_signal(int signo, gpointer user_data) {
  rok_exec_cancel_trigger(user_data, signo);
  cli_stop_within_a_second("execute", signo);
}

/* ---- the summary ---- */

static char *error_text(double measured, double predicted) {
  if (predicted == 0)
    return g_strdup(measured == 0 ? "" : "n/a");
  return g_strdup_printf("%+.1f%%", 100.0 * (measured - predicted) / predicted);
}

static void row(const char *label, char *measured, char *predicted, char *error, const char *note) {
  printf("  %-20s %12s %12s %8s  %s\n", label, measured, predicted, error, note != NULL ? note : "");
  g_free(measured);
  g_free(predicted);
  g_free(error);
}

static void time_row(const char *label, double m, double p, const char *note) {
  row(label, rok_units_format_time(m), rok_units_format_time(p), error_text(m, p), note);
}

static void size_row(const char *label, guint64 m, guint64 p, const char *note) {
  row(label, rok_units_format_size(m), rok_units_format_size(p), error_text((double)m, (double)p), note);
}

static void traffic_row(const char *label, guint64 mb, double mr, guint64 pb, double pr) {
  g_autofree char *mrate = rok_units_format_rate(mr), *prate = rok_units_format_rate(pr);
  g_autofree char *note = g_strdup_printf("at %s (predicted %s)", mrate, prate);
  size_row(label, mb, pb, mb > 0 || pb > 0 ? note : NULL);
}

static void print_header(const RokExecReport *r) {
  printf("%s, strategy %s, on %s (%s, %s): %u micro-batch%s, %u actions, %u step%s after a warm-up\n", r->model,
         r->strategy, r->device, r->device_type, r->platform, r->micro_batches, r->micro_batches == 1 ? "" : "es",
         r->actions, r->repeat, r->repeat == 1 ? "" : "s");
  if (r->backend != NULL) {
    printf("Storage: %s%s, in", r->backend, r->direct ? " with O_DIRECT" : " (buffered)");
    for (guint i = 0; i < r->dirs->len; i++)
      printf(" %s", (const char *)g_ptr_array_index(r->dirs, i));
    printf(" (removed)\n");
  }
  printf("Stream threads: %s\n", rok_host_wake_name(r->stream_wake));
  printf("\n  %-20s %12s %12s %8s\n", "", "measured", "predicted", "error");
}

static void print_summary(const RokExecReport *r) {
  const RokExecFigures *m = &r->measured, *p = &r->predicted;
  print_header(r);
  g_autofree char *lo = rok_units_format_time(r->step_time_min_s), *hi = rok_units_format_time(r->step_time_max_s);
  g_autofree char *spread = g_strdup_printf("median of %u, from %s to %s", r->repeat, lo, hi);
  time_row("step time", m->step_time_s, p->step_time_s, spread);
  g_autofree char *fixed = rok_units_format_size(r->fixed_device_bytes);
  g_autofree char *pfixed = rok_units_format_size(r->predicted_fixed_bytes);
  g_autofree char *fixed_note = g_strdup_printf("fixed %s here, %s predicted (with optimizer states)", fixed, pfixed);
  size_row("peak device memory", m->peak_device_bytes, p->peak_device_bytes, fixed_note);
  size_row("activation peak", m->activation_peak_bytes, p->activation_peak_bytes, "the peak less fixed memory");
  time_row("compute", m->compute_s, p->compute_s, NULL);
  time_row("recompute", m->recompute_s, p->recompute_s, NULL);
  GString *causes = g_string_new(NULL);
  for (guint c = 0; c < ROK_STALL_COUNT; c++) {
    g_autofree char *t = rok_units_format_time(m->stall_s_by_cause[c]);
    g_string_append_printf(causes, "%s%s %s", c ? ", " : "", rok_stall_cause_name(c), t);
  }
  time_row("stalls", m->stall_s, p->stall_s, causes->str);
  g_string_free(causes, TRUE);
  traffic_row("d2h", m->d2h_bytes, m->d2h_bandwidth, p->d2h_bytes, p->d2h_bandwidth);
  traffic_row("h2d", m->h2d_bytes, m->h2d_bandwidth, p->h2d_bytes, p->h2d_bandwidth);
  traffic_row("SSD write", m->nvme_write_bytes, m->nvme_write_bandwidth, p->nvme_write_bytes, p->nvme_write_bandwidth);
  traffic_row("SSD read", m->nvme_read_bytes, m->nvme_read_bandwidth, p->nvme_read_bytes, p->nvme_read_bandwidth);
  printf("\nIntegrity: %" G_GUINT64_FORMAT " copies checked on their way back per step, %" G_GUINT64_FORMAT
         " failures. Gradient checksum %016" G_GINT64_MODIFIER "x",
         r->tensors_verified, r->integrity_failures, r->gradient_checksum);
  if (isfinite(r->loss))
    printf(", loss %.6g", r->loss);
  printf(".\n");
  for (guint i = 0; i < r->notes->len; i++)
    printf("%s%s\n", i == 0 ? "Notes:\n  - " : "  - ", (const char *)g_ptr_array_index(r->notes, i));
}

/* ---- running ---- */

static gboolean fill_options(const Options *o, RokExecOptions *eo, GError **error) {
  rok_exec_options_init(eo);
  if (!cli_check_range("repeat", o->repeat, 1, ROK_EXEC_MAX_REPEAT, error) ||
      !cli_check_range("device", o->device, 0, G_MAXINT, error))
    return FALSE;
  if (o->seed < 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--seed must be 0 or more");
    return FALSE;
  }
  if (o->slot != NULL && !rok_units_parse_size(o->slot, &eo->slot_bytes, error)) {
    g_prefix_error(error, "--slot: ");
    return FALSE;
  }
  eo->dirs = (const char *const *)o->dirs;
  eo->device = o->device == CLI_UNSET ? -1 : o->device;
  eo->repeat = (guint)o->repeat;
  eo->seed = (guint64)o->seed;
  eo->backend = o->io;
  if (isatty(STDOUT_FILENO))
    eo->progress = progress;
  return TRUE;
}

static RokExecReport *execute(const Options *o, const char *path, RokExecCancel *cancel, GError **error) {
  RokExecOptions eo;
  if (!fill_options(o, &eo, error))
    return NULL;
  g_autoptr(RokSchedule) schedule = rok_schedule_load(path, error);
  if (schedule == NULL)
    return NULL;
  eo.cancel = cancel;
  cli_signals_to(on_signal, cancel);
  RokExecReport *report = rok_exec_run(schedule, &eo, error);
  cli_signals_to(NULL, NULL); /* from here a signal discards the outputs */
  if (report != NULL && ((o->output != NULL && !rok_exec_report_save(report, o->output, error)) ||
                         (o->timeline != NULL && !rok_exec_report_timeline_save(report, o->timeline, error))))
    g_clear_pointer(&report, rok_exec_report_free);
  return report;
}

/* A run that failed or was stopped has removed what it wrote: say so. */
static GError *after_stop(GError *error, const Options *o) {
  gboolean stopped = error->domain == ROK_ERROR && (error->code == ROK_ERROR_IO || error->code == ROK_ERROR_INTEGRITY ||
                                                    error->code == ROK_ERROR_CANCELLED);
  if (!stopped || o->dirs == NULL)
    return error;
  GError *out =
      g_error_new(error->domain, error->code, "%s (the run stopped; its work folders are removed)", error->message);
  g_error_free(error);
  return out;
}

int cli_cmd_execute(int argc, char **argv) {
  const RokCommand *self = cli_find("execute");
  g_auto(Options) o = {.device = CLI_UNSET, .repeat = ROK_EXEC_DEFAULT_REPEAT, .seed = ROK_EXEC_DEFAULT_SEED};
  const GOptionEntry entries[] = {
      {"dir", 'd', 0, G_OPTION_ARG_FILENAME_ARRAY, &o.dirs,
       "Directory to offload tensors into, one per disk (repeatable; a rok-XXXXXX folder is made and removed)", "DIR"},
      {"device", 0, 0, G_OPTION_ARG_INT, &o.device, "OpenCL device (see --list-devices; default: the first GPU)", "N"},
      {"repeat", 'r', 0, G_OPTION_ARG_INT, &o.repeat, "Measured steps after one warm-up (default 3)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o.output, "Write the rok-report/1 JSON to FILE", "FILE"},
      {"json", 0, 0, G_OPTION_ARG_NONE, &o.json, "Print the report as JSON instead of the table", NULL},
      {"timeline", 't', 0, G_OPTION_ARG_FILENAME, &o.timeline,
       "Write the median step, measured beside predicted, as a Chrome/Perfetto timeline to FILE", "FILE"},
      {"list-devices", 0, 0, G_OPTION_ARG_NONE, &o.list, "List the OpenCL devices and exit", NULL},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &o.seed, "Seed of parameters, data and dropout (default 1234)", "N"},
      {"io", 0, 0, G_OPTION_ARG_STRING, &o.io, "I/O backend: auto (default), io_uring or psync", "NAME"},
      {"slot", 0, 0, G_OPTION_ARG_STRING, &o.slot, "Staging slot and stripe unit (default 1MiB)", "SIZE"},
      G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) context = cli_context(self, entries, NULL);
  GError *error = NULL;
  if (!cli_parse(context, &argc, &argv, &error))
    return cli_fail(self->name, error);
  if (o.list)
    return argc == 1 ? list_devices(o.json)
                     : cli_fail(self->name, g_error_new_literal(ROK_ERROR, ROK_ERROR_USAGE,
                                                                    "--list-devices takes no SCHEDULE"));
  if (!cli_positionals(argc, argv, 1, "SCHEDULE", &error))
    return cli_fail(self->name, error);
  g_autoptr(RokExecCancel) cancel = rok_exec_cancel_new();
  g_autoptr(RokExecReport) report = execute(&o, argv[1], cancel, &error);
  if (isatty(STDOUT_FILENO)) /* the progress line goes */
    printf("\r\033[K");
  if (report == NULL)
    return cli_fail(self->name, after_stop(error, &o));
  if (o.json)
    return cli_print_json(rok_exec_report_to_json(report), &error) ? ROK_EXIT_OK : cli_fail(self->name, error);
  print_summary(report);
  return ROK_EXIT_OK;
}
