/* Model configs: rok_model_parse() with command-line overrides, then the
 * trace generator on every config it accepts.
 *
 * Input: the config's JSON text, then optionally NUL-separated "key=value"
 * overrides as --set gives them. An accepted config must write back to
 * itself, and must make a trace: accepting a config whose trace cannot be
 * built (or would take absurd memory) is the bug this target looks for. */
#include "fuzz.h"

#include <string.h>

#include "rok/core.h"
#include "rok/model.h"
#include "rok/trace.h"

#define MAX_OVERRIDES 8
/* Traces up to this many ops are also written and read back. */
#define ROUND_TRIP_OPS 4000

static const char *const prefixes[] = {ROK_FUZZ_NAME ":", "--set ", NULL};

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

static void check_trace(const RokModel *model) {
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_auto(GStrv) parts = rok_fuzz_split(data, size, MAX_OVERRIDES);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokModel) model =
      rok_model_parse(ROK_FUZZ_NAME, parts[0], strlen(parts[0]), (const char *const *)parts + 1, &error);
  rok_fuzz_check_result(model != NULL, error, prefixes, data, size);
  if (model == NULL)
    return 0;
  check_model_round_trip(model);
  check_trace(model);
  return 0;
}
