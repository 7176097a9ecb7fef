/* rok-trace/1 files: rok_trace_parse(). An accepted trace must pass
 * rok_trace_check() and write back to the same bytes it reads back as. */
#include "fuzz.h"

#include <string.h>

#include "rok/core.h"
#include "rok/trace.h"

static char *trace_text(const RokTrace *trace) {
  json_object *json = rok_trace_to_json(trace);
  char *text = rok_json_to_string(json);
  json_object_put(json);
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_parse(ROK_FUZZ_NAME, (const char *)data, size, &error);
  rok_fuzz_check_result(trace != NULL, error, rok_fuzz_doc_prefixes, data, size);
  if (trace == NULL)
    return 0;
  if (!rok_trace_check(trace, &error))
    rok_fuzz_fail("an accepted trace fails rok_trace_check(): %s", error->message);
  (void)rok_trace_total_saved_bytes(trace);
  g_autofree char *text = trace_text(trace);
  g_autoptr(RokTrace) again = rok_trace_parse(ROK_FUZZ_NAME, text, strlen(text), &error);
  if (again == NULL)
    rok_fuzz_fail("a trace written by rok_trace_to_json() does not read back: %s", error->message);
  g_autofree char *text_again = trace_text(again);
  rok_fuzz_check_same("trace read back", text, text_again);
  return 0;
}
