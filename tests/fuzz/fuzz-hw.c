/* Hardware profiles: rok_hw_parse(). An accepted profile must write back
 * (rok_hw_to_json) to a profile that reads back to the same text. */
#include "fuzz.h"

#include <string.h>

#include "rok/hw.h"
#include "rok/core.h"

static char *hw_text(const RokHw *hw) {
  json_object *json = rok_hw_to_json(hw);
  char *text = rok_json_to_string(json);
  json_object_put(json);
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokHw) hw = rok_hw_parse(ROK_FUZZ_NAME, (const char *)data, size, &error);
  rok_fuzz_check_result(hw != NULL, error, rok_fuzz_doc_prefixes, data, size);
  if (hw == NULL)
    return 0;
  g_autofree char *text = hw_text(hw);
  g_autoptr(RokHw) again = rok_hw_parse(ROK_FUZZ_NAME, text, strlen(text), &error);
  if (again == NULL)
    rok_fuzz_fail("a profile written by rok_hw_to_json() does not read back: %s\n%s", error->message, text);
  g_autofree char *text_again = hw_text(again);
  rok_fuzz_check_same("profile read back", text, text_again);
  return 0;
}
