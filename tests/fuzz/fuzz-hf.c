/* Hugging Face config.json: rok_model_hf_to_config(), then the rok config
 * it makes read with command-line overrides, then the trace generator.
 *
 * Input: the config.json text, then optionally NUL-separated "key=value"
 * overrides as --set gives them. A config.json that maps must make a rok
 * config that either reads (and then writes back to itself and makes a
 * trace) or is refused at the mapped document or the override; a config
 * that does not map is refused at its own text. */
#include "fuzz.h"

#include <string.h>

#include "rok/core.h"
#include "rok/model.h"
#include "rok/trace.h"

#define MAX_OVERRIDES 8
#define CONVERTED ROK_FUZZ_NAME " (as `rok import hf` prints it):"

static const char *const mapped_prefixes[] = {CONVERTED, "--set ", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_auto(GStrv) parts = rok_fuzz_split(data, size, MAX_OVERRIDES);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse(ROK_FUZZ_NAME, parts[0], strlen(parts[0]), &error);
  if (doc == NULL || !rok_model_doc_is_hf(doc))
    return 0; /* the json and model targets read these */
  g_auto(GStrv) notes = NULL;
  json_object *config = rok_model_hf_to_config(doc, &notes, &error);
  rok_fuzz_check_result(config != NULL, error, rok_fuzz_doc_prefixes, data, size);
  if (config == NULL)
    return 0;
  /* Through the reader every command uses: the same mapping, then --set. */
  g_autoptr(RokModel) model = rok_model_from_doc(doc, (const char *const *)parts + 1, &error);
  rok_fuzz_check_result(model != NULL, error, mapped_prefixes, data, size);
  json_object_put(config);
  if (model != NULL)
    rok_fuzz_check_model(model);
  return 0;
}
