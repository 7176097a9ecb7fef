/* Shared command-line plumbing. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rok/core.h"
#include "rok/model.h"
#include "rok/storage.h"

/* Append `item` to the NULL-terminated list common->sets. */
static void append_set(RokCliCommon *common, char *item) {
  guint n = common->sets == NULL ? 0 : g_strv_length(common->sets);
  common->sets = g_renew(char *, common->sets, n + 2);
  common->sets[n] = item;
  common->sets[n + 1] = NULL;
}

/* What the main group's callbacks and error hook see. */
typedef struct {
  RokCliCommon *common; /* NULL for a command without the common options */
  char **names;         /* every long option, for "did you mean" */
} GroupData;

static void group_data_free(gpointer data) {
  GroupData *g = data;
  g_strfreev(g->names);
  g_free(g);
}

static gboolean on_set(const char *name, const char *value, gpointer data, GError **error) {
  (void)name;
  (void)error;
  append_set(((GroupData *)data)->common, g_strdup(value));
  return TRUE;
}

/* --overlay FILE: each member of the file's object, as --set KEY=JSON, in
 * order with the --set options around it. */
static gboolean on_overlay(const char *name, const char *value, gpointer data, GError **error) {
  (void)name;
  GError *local = NULL;
  g_autoptr(RokJsonDoc) doc = rok_json_doc_load(value, &local);
  g_auto(RokJsonObj) root = {0};
  if (doc == NULL || !rok_json_root(doc, &root, &local)) {
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--overlay %s", local->message);
    g_error_free(local);
    return FALSE;
  }
  json_object_object_foreach(root.obj, key, member) {
    g_autofree char *text = rok_json_to_string(member);
    append_set(((GroupData *)data)->common, g_strdup_printf("%s=%s", key, g_strstrip(text)));
  }
  return TRUE;
}

/* The long option closest to the one GLib refused ("Unknown option
 * --budjet" or "--budjet=30GiB"), added to the message. */
static void suggest_option(GOptionContext *context, GOptionGroup *group, gpointer data, GError **error) {
  (void)context;
  (void)group;
  if (error == NULL || *error == NULL || !g_error_matches(*error, G_OPTION_ERROR, G_OPTION_ERROR_UNKNOWN_OPTION))
    return;
  const char *dashes = g_strrstr((*error)->message, " --");
  if (dashes == NULL)
    return;
  g_autofree char *word = g_strndup(dashes + 3, strcspn(dashes + 3, "= "));
  const char *close = rok_closest_name(word, (const char *const *)((GroupData *)data)->names);
  if (close == NULL)
    return;
  g_autofree char *message = g_strdup_printf("%s; did you mean \"--%s\"?", (*error)->message, close);
  g_free((*error)->message);
  (*error)->message = g_steal_pointer(&message);
}

static void add_names(GStrvBuilder *names, const GOptionEntry *entries) {
  for (const GOptionEntry *e = entries; e != NULL && e->long_name != NULL; e++)
    g_strv_builder_add(names, e->long_name);
}

GOptionContext *cli_context(const RokCommand *command, const GOptionEntry *entries, RokCliCommon *common) {
  g_autofree char *usage = g_strdup_printf("%s — %s", command->args, command->summary);
  GOptionContext *context = g_option_context_new(usage);
  g_autofree char *prog = g_strdup_printf("rok %s", command->name);
  g_set_prgname(prog);
  g_autoptr(GStrvBuilder) names = g_strv_builder_new();
  g_strv_builder_add(names, "help");
  add_names(names, entries);
  const GOptionEntry shared[] = {
      {"json", 0, 0, G_OPTION_ARG_NONE, common ? &common->json : NULL, "Print one JSON object instead of the table",
       NULL},
      {"set", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)on_set,
       "Override a model-config field (repeatable), e.g. --set micro_batch=8", "KEY=VALUE"},
      {"overlay", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)on_overlay,
       "Override model-config fields from a JSON object (the training side of a Hugging Face config: "
       "seq_len, micro_batch, parallelism), as --set does",
       "FILE"},
      {"hw-set", 0, 0, G_OPTION_ARG_STRING_ARRAY, common ? &common->hw_sets : NULL,
       "Override a hardware-profile field (repeatable), e.g. --hw-set nvme.devices=2", "KEY=VALUE"},
      G_OPTION_ENTRY_NULL};
  if (common != NULL)
    add_names(names, shared);
  /* One main group whose callbacks see `common` and whose error hook sees
   * the names. */
  GroupData *data = g_new0(GroupData, 1);
  data->common = common;
  data->names = g_strv_builder_end(names);
  GOptionGroup *group = g_option_group_new(command->name, command->summary, "Options", data, group_data_free);
  g_option_group_set_error_hook(group, suggest_option);
  if (entries != NULL)
    g_option_group_add_entries(group, entries);
  if (common != NULL)
    g_option_group_add_entries(group, shared);
  g_option_context_set_main_group(context, group);
  g_option_context_set_description(context, "Exit codes: 0 success, 1 runtime failure, 2 invalid usage or "
                                            "input, 3 no plan fits the budget.");
  return context;
}

void cli_common_clear(RokCliCommon *common) {
  g_clear_pointer(&common->sets, g_strfreev);
  g_clear_pointer(&common->hw_sets, g_strfreev);
}

gboolean cli_parse(GOptionContext *context, int *argc, char ***argv, GError **error) {
  GError *local = NULL;
  if (g_option_context_parse(context, argc, argv, &local))
    return TRUE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "%s (see --help)", local->message);
  g_error_free(local);
  return FALSE;
}

gboolean cli_parse_size(const char *option, const char *text, gboolean zero_ok, guint64 *bytes, GError **error) {
  g_autofree char *note = NULL;
  if (!rok_units_parse_size_lenient(text, bytes, &note, error)) {
    g_prefix_error(error, "--%s: ", option);
    return FALSE;
  }
  if (*bytes == 0 && !zero_ok) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--%s must be more than 0 bytes", option);
    return FALSE;
  }
  if (note != NULL) {
    fflush(stdout);
    fprintf(stderr, "%s: --%s: %s\n", g_get_prgname(), option, note);
  }
  return TRUE;
}

gboolean cli_positionals(int argc, char **argv, int count, const char *what, GError **error) {
  if (argc - 1 == count)
    return TRUE;
  if (argc - 1 < count)
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "missing %s (see --help)", what);
  else
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "unexpected argument \"%s\" (see --help)", argv[count + 1]);
  return FALSE;
}

/* Where bundled configs live: $ROK_DATA_DIR, the installed share folder,
 * then the source tree this binary was built from. */
static char *bundled_path(const char *kind, const char *name) {
  const char *roots[] = {g_getenv("ROK_DATA_DIR"), ROK_DATA_DIR, ROK_SOURCE_DIR};
  for (guint i = 0; i < G_N_ELEMENTS(roots); i++) {
    if (roots[i] == NULL)
      continue;
    g_autofree char *file = g_strconcat(name, ".json", NULL);
    char *path = g_build_filename(roots[i], "configs", kind, file, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
      return path;
    g_free(path);
  }
  return NULL;
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *bundled_names(const char *kind) {
  const char *roots[] = {g_getenv("ROK_DATA_DIR"), ROK_DATA_DIR, ROK_SOURCE_DIR};
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < G_N_ELEMENTS(roots) && names->len == 0; i++) {
    if (roots[i] == NULL)
      continue;
    g_autofree char *folder = g_build_filename(roots[i], "configs", kind, NULL);
    g_autoptr(GDir) dir = g_dir_open(folder, 0, NULL);
    for (const char *entry; dir != NULL && (entry = g_dir_read_name(dir)) != NULL;)
      if (g_str_has_suffix(entry, ".json"))
        g_ptr_array_add(names, g_strndup(entry, strlen(entry) - 5));
  }
  g_ptr_array_sort(names, compare_names);
  g_ptr_array_add(names, NULL);
  return g_strjoinv(", ", (char **)names->pdata);
}

char *cli_resolve(const char *arg, const char *kind, GError **error) {
  if (g_file_test(arg, G_FILE_TEST_EXISTS))
    return g_strdup(arg);
  char *path = strchr(arg, '/') == NULL ? bundled_path(kind, arg) : NULL;
  if (path != NULL)
    return path;
  g_autofree char *names = bundled_names(kind);
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: no such file, nor a bundled %s config (bundled: %s)", arg,
              g_str_equal(kind, "hw") ? "hardware" : "model", names);
  return NULL;
}

/* The first assignment of `sets` whose key is a hardware-profile field
 * (`profile` FALSE) or is not one (`profile` TRUE), or NULL. */
static const char *misplaced(char **sets, gboolean profile) {
  for (char **set = sets; set != NULL && *set != NULL; set++) {
    g_autofree char *key = g_strndup(*set, strcspn(*set, "="));
    gboolean is_profile = rok_hw_is_key(key) || g_str_equal(key, "name") || g_str_equal(key, "source");
    if (profile ? !is_profile : rok_hw_is_key(key))
      return *set;
  }
  return NULL;
}

/* --set names model-config fields; a hardware key there is --hw-set's. */
gboolean cli_check_model_sets(char **sets, GError **error) {
  const char *set = misplaced(sets, FALSE);
  if (set == NULL)
    return TRUE;
  g_autofree char *key = g_strndup(set, strcspn(set, "="));
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
              "--set %s: --set overrides model-config fields; \"%s\" is a hardware-profile field: use --hw-set %s",
              set, key, set);
  return FALSE;
}

/* Read once (a pipe can be read only once): a rok-trace/1 file says so in
 * its "format"; a model config has none. */
RokTrace *cli_load_trace(const char *arg, char **sets, GError **error) {
  if (!cli_check_model_sets(sets, error))
    return NULL;
  g_autofree char *path = cli_resolve(arg, "models", error);
  g_autoptr(RokJsonDoc) doc = path == NULL ? NULL : rok_json_doc_load(path, error);
  if (doc == NULL)
    return NULL;
  json_object *root = rok_json_doc_root(doc);
  if (json_object_is_type(root, json_type_object) && json_object_object_get_ex(root, "format", NULL)) {
    if (sets != NULL && sets[0] != NULL) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--set %s: a trace file has no model config to override",
                  sets[0]);
      return NULL;
    }
    return rok_trace_from_doc(doc, error);
  }
  g_auto(GStrv) notes = NULL;
  if (rok_model_doc_is_hf(doc)) { /* what the import approximates; errors come from reading it below */
    json_object *config = rok_model_hf_to_config(doc, &notes, NULL);
    json_object_put(config);
  }
  g_autoptr(RokModel) model = rok_model_from_doc(doc, (const char *const *)sets, error);
  if (model == NULL)
    return NULL;
  cli_print_notes("note", notes);
  cli_print_model_notes(model);
  return rok_trace_new_from_model(model, error);
}

void cli_print_model_notes(const RokModel *model) {
  g_auto(GStrv) unmodelled = rok_model_unmodelled(model);
  g_auto(GStrv) assumed = rok_model_assumptions(model);
  cli_print_notes("warning", unmodelled);
  cli_print_notes("note", assumed);
}

void cli_print_notes(const char *kind, char **notes) {
  for (char **n = notes; n != NULL && *n != NULL; n++)
    fprintf(stderr, "%s: %s: %s\n", g_get_prgname(), kind, *n);
}

/* --hw-set names profile fields: gpu.*, pcie.*, host.*, nvme.*, name, source. */
static gboolean check_hw_sets(char **hw_sets, GError **error) {
  const char *set = misplaced(hw_sets, TRUE);
  if (set == NULL)
    return TRUE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
              "--hw-set %s: --hw-set overrides hardware-profile fields (gpu.*, pcie.*, host.*, nvme.*); for a "
              "model-config field use --set %s",
              set, set);
  return FALSE;
}

RokHw *cli_load_hw(const char *arg, char **hw_sets, GError **error) {
  if (!check_hw_sets(hw_sets, error))
    return NULL;
  g_autofree char *path = cli_resolve(arg, "hw", error);
  g_autoptr(RokJsonDoc) doc = path == NULL ? NULL : rok_json_doc_load(path, error);
  if (doc == NULL)
    return NULL;
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  RokHw *hw = rok_hw_from_doc(doc, (const char *const *)hw_sets, warnings, error);
  g_ptr_array_add(warnings, NULL);
  if (hw != NULL)
    cli_print_notes("warning", (char **)warnings->pdata);
  return hw;
}

gboolean cli_check_hw_sets(const char *hw_arg, char **hw_sets, GError **error) {
  if (hw_arg != NULL || hw_sets == NULL || hw_sets[0] == NULL)
    return TRUE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--hw-set %s: no hardware profile to change (--hw-set changes the one given with --hw)", hw_sets[0]);
  return FALSE;
}

char *cli_replica_text(const RokTrace *trace) {
  guint64 gpus = rok_trace_replica_gpus(trace);
  if (trace->model == NULL)
    return g_strdup("per copy of the model (the trace's GPU)");
  if (gpus == 1)
    return g_strdup("per copy of the model (1 GPU)");
  const RokModel *m = trace->model;
  if (m->pipeline_parallel == 1)
    return g_strdup_printf("per copy of the model (%" G_GUINT64_FORMAT " GPUs: TP %" G_GUINT64_FORMAT ")", gpus,
                           m->tensor_parallel);
  return g_strdup_printf("per copy of the model (%" G_GUINT64_FORMAT " GPUs: TP %" G_GUINT64_FORMAT
                         " x PP %" G_GUINT64_FORMAT ")",
                         gpus, m->tensor_parallel, m->pipeline_parallel);
}

char *cli_batch_text(const RokTrace *trace) {
  guint64 n = trace->micro_batches_per_step;
  if (trace->model == NULL)
    return g_strdup_printf("%" G_GUINT64_FORMAT " micro-batch%s per step", n, n == 1 ? "" : "es");
  const RokModel *m = trace->model;
  g_autofree char *copies = m->data_parallel == 1 ? g_strdup("")
                                                  : g_strdup_printf(" on each of %" G_GUINT64_FORMAT
                                                                    " data-parallel copies", m->data_parallel);
  return g_strdup_printf("%" G_GUINT64_FORMAT " micro-batch%s of %" G_GUINT64_FORMAT " sequence%s per step%s "
                         "(global batch %" G_GUINT64_FORMAT ")",
                         n, n == 1 ? "" : "es", m->micro_batch, m->micro_batch == 1 ? "" : "s", copies,
                         m->global_batch);
}

char *cli_flops_text(double flops_per_s) {
  g_autofree char *count = rok_units_format_count(flops_per_s);
  gsize n = strlen(count);
  return g_strdup_printf("%s%sFLOP/s", count, n > 0 && g_ascii_isalpha(count[n - 1]) ? "" : " ");
}

char *cli_percent_text(double fraction) {
  return g_strdup_printf("%.1f%%", 100.0 * fraction);
}

gboolean cli_print_json(json_object *value, GError **error) {
  g_autofree char *text = rok_json_to_string(value);
  json_object_put(value);
  if (fputs(text, stdout) == EOF) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "writing standard output: %s", g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}

typedef struct {
  const char *command;
  int signo;
} Deadline;

static gpointer deadline(gpointer data) {
  Deadline *d = data;
  g_usleep(G_USEC_PER_SEC);
  rok_workdir_remove_all();
  rok_output_discard_all();
  fprintf(stderr, "rok %s: interrupted by signal %d (%s); stopped without waiting for the device (work folders "
                  "removed)\n",
          d->command, d->signo, g_strsignal(d->signo));
  _exit(ROK_EXIT_FAILURE);
}

void cli_stop_within_a_second(const char *command, int signo) {
  static Deadline d;
  static gint started;
  if (!g_atomic_int_compare_and_exchange(&started, 0, 1))
    return;
  d = (Deadline){command, signo};
  GThread *t = g_thread_try_new("rok-deadline", deadline, &d, NULL);
  if (t != NULL)
    g_thread_unref(t);
}

gboolean cli_check_range(const char *option, gint64 value, gint64 min, gint64 max, GError **error) {
  if (value == CLI_UNSET || (value >= min && value <= max))
    return TRUE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "--%s %" G_GINT64_FORMAT ": must be from %" G_GINT64_FORMAT
              " to %" G_GINT64_FORMAT, option, value, min, max);
  return FALSE;
}

char *cli_printable(const char *text) {
  GString *out = g_string_new(NULL);
  for (const char *p = text; *p != '\0';) {
    gunichar c = g_utf8_get_char_validated(p, -1);
    if (c == (gunichar)-1 || c == (gunichar)-2) { /* not UTF-8: the byte */
      g_string_append_printf(out, "\\x%02X", (guchar)*p++);
      continue;
    }
    if (g_unichar_iscntrl(c) && c != '\n' && c != '\t') /* rok's own messages may span lines */
      g_string_append_printf(out, "\\u%04X", (unsigned)c);
    else
      g_string_append_len(out, p, g_utf8_next_char(p) - p);
    p = g_utf8_next_char(p);
  }
  return g_string_free(out, FALSE);
}

int cli_fail(const char *command, GError *error) {
  int code = rok_error_exit_code(error);
  fflush(stdout);
  g_autofree char *message = cli_printable(error->message);
  fprintf(stderr, "rok %s: %s\n", command, message);
  g_error_free(error);
  return code;
}
