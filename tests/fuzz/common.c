/* The checks every fuzz target applies to what a reader gives back. */
#define _GNU_SOURCE /* memmem */
#include "fuzz.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rok/core.h"
#include "rok/model.h"
#include "rok/trace.h"

const char *const rok_fuzz_doc_prefixes[] = {ROK_FUZZ_NAME ":", NULL};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  setlocale(LC_ALL, "C.UTF-8"); /* as rok's main() */
  /* A g_return_if_fail() reached from input is a bug like any other. */
  g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
  return 0;
}

void rok_fuzz_fail(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "fuzz check failed: ");
  vfprintf(stderr, format, args);
  fprintf(stderr, "\n");
  va_end(args);
  abort();
}

static gboolean has_prefix(const char *message, const char *const *prefixes) {
  for (gsize i = 0; prefixes[i] != NULL; i++)
    if (g_str_has_prefix(message, prefixes[i]))
      return TRUE;
  return FALSE;
}

void rok_fuzz_check_result(gboolean ok, const GError *error, const char *const *prefixes, const uint8_t *data,
                           size_t size) {
  if (ok) {
    if (error != NULL)
      rok_fuzz_fail("succeeded but set an error: %s", error->message);
    return;
  }
  if (error == NULL)
    rok_fuzz_fail("failed without an error");
  if (error->domain != ROK_ERROR || rok_error_exit_code(error) != ROK_EXIT_INVALID)
    rok_fuzz_fail("bad input gave an error of domain %s, code %d (not exit 2): %s",
                  g_quark_to_string(error->domain), error->code, error->message);
  if (!g_utf8_validate(error->message, -1, NULL))
    rok_fuzz_fail("message is not UTF-8: %s", error->message);
  if (strstr(error->message, "(null)") != NULL && memmem(data, size, "(null)", 6) == NULL)
    rok_fuzz_fail("message prints a NULL string: %s", error->message);
  if (!has_prefix(error->message, prefixes))
    rok_fuzz_fail("message does not say where (expected it to start with \"%s\"): %s", prefixes[0],
                  error->message);
}

void rok_fuzz_check_same(const char *what, const char *expected, const char *found) {
  if (strcmp(expected, found) == 0)
    return;
  gsize at = 0;
  while (expected[at] == found[at])
    at++;
  gsize from = at > 80 ? at - 80 : 0;
  rok_fuzz_fail("%s: differs at byte %" G_GSIZE_FORMAT ":\n--- expected ...%.160s\n--- found    ...%.160s", what,
                at, expected + from, found + from);
}

char **rok_fuzz_split(const uint8_t *data, size_t size, guint max) {
  GPtrArray *parts = g_ptr_array_new();
  const char *p = (const char *)data, *end = p + size;
  for (;;) {
    const char *nul = memchr(p, '\0', (gsize)(end - p));
    g_autofree char *part = g_strndup(p, (gsize)((nul != NULL ? nul : end) - p));
    g_ptr_array_add(parts, parts->len == 0 ? g_steal_pointer(&part) : g_utf8_make_valid(part, -1));
    if (nul == NULL || parts->len > max)
      break;
    p = nul + 1;
  }
  g_ptr_array_add(parts, NULL);
  return (char **)g_ptr_array_free(parts, FALSE);
}

/* Traces up to this many ops are also written and read back. */
#define ROUND_TRIP_OPS 4000

static void check_model_round_trip(const RokModel *model) {
  json_object *json = rok_model_to_json(model);
  g_autofree char *text = rok_json_to_string(json);
  json_object_put(json);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokModel) again = rok_model_parse(ROK_FUZZ_NAME, text, strlen(text), NULL, &error);
  if (again == NULL)
    rok_fuzz_fail("a config written by rok_model_to_json() does not read back: %s\n%s", error->message, text);
  json = rok_model_to_json(again);
  g_autofree char *text_again = rok_json_to_string(json);
  json_object_put(json);
  rok_fuzz_check_same("config read back", text, text_again);
}

static void check_model_trace(const RokModel *model) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
  if (trace == NULL)
    rok_fuzz_fail("an accepted config makes no trace: %s", error->message);
  if (trace->ops->len > ROUND_TRIP_OPS)
    return;
  json_object *json = rok_trace_to_json(trace);
  g_autofree char *text = rok_json_to_string(json);
  json_object_put(json);
  g_autoptr(RokTrace) again = rok_trace_parse(ROK_FUZZ_NAME, text, strlen(text), &error);
  if (again == NULL)
    rok_fuzz_fail("a generated trace does not read back: %s", error->message);
  json = rok_trace_to_json(again);
  g_autofree char *text_again = rok_json_to_string(json);
  json_object_put(json);
  rok_fuzz_check_same("generated trace read back", text, text_again);
}

void rok_fuzz_check_model(const RokModel *model) {
  check_model_round_trip(model);
  check_model_trace(model);
}
