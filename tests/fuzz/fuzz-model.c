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

/* A Hugging Face config.json read as a model is refused at the rok config it
 * maps to (`rok import hf` prints it). */
static const char *const prefixes[] = {ROK_FUZZ_NAME ":", ROK_FUZZ_NAME " (as `rok import hf` prints it):", "--set ", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_auto(GStrv) parts = rok_fuzz_split(data, size, MAX_OVERRIDES);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokModel) model =
      rok_model_parse(ROK_FUZZ_NAME, parts[0], strlen(parts[0]), (const char *const *)parts + 1, &error);
  rok_fuzz_check_result(model != NULL, error, prefixes, data, size);
  if (model == NULL)
    return 0;
  rok_fuzz_check_model(model);
  return 0;
}
