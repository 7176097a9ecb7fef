/* rok-plan/1 files: rok_plan_file_parse() against the trace they were made
 * for. An accepted plan must write back (rok_plan_file_to_json) to a file
 * that reads back to the same bytes.
 *
 * The trace is that of corpus/model/small-wide.json (two layers, wide
 * enough that plans offload and recompute), built here for every input;
 * the seeds in corpus/plan/ are plans `rok plan` made for it
 * (make-seeds.sh), so that they pass the trace's SHA-256. */
#include "fuzz.h"

#include <string.h>

#include "rok/core.h"
#include "rok/model.h"
#include "rok/plan.h"
#include "rok/trace.h"

/* corpus/model/small-wide.json, byte for byte. */
static const char small_wide[] = "{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 4096, \"heads\": 32, \"seq_len\": "
                                 "2048, \"micro_batch\": 1, \"vocab\": 1000}\n";

static RokTrace *small_trace(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokModel) model = rok_model_parse("small-wide.json", small_wide, strlen(small_wide), NULL, &error);
  RokTrace *trace = model != NULL ? rok_trace_new_from_model(model, &error) : NULL;
  if (trace == NULL)
    rok_fuzz_fail("the plan target's trace: %s", error->message);
  return trace;
}

static char *plan_text(const RokPlanFile *file, const RokTrace *trace) {
  json_object *json = rok_plan_file_to_json(file, trace);
  char *text = rok_json_to_string(json);
  json_object_put(json);
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_autoptr(RokTrace) trace = small_trace();
  g_autoptr(GError) error = NULL;
  g_autoptr(RokPlanFile) file = rok_plan_file_parse(ROK_FUZZ_NAME, (const char *)data, size, trace, &error);
  rok_fuzz_check_result(file != NULL, error, rok_fuzz_doc_prefixes, data, size);
  if (file == NULL)
    return 0;
  g_autofree char *text = plan_text(file, trace);
  g_autoptr(RokPlanFile) again = rok_plan_file_parse(ROK_FUZZ_NAME, text, strlen(text), trace, &error);
  if (again == NULL)
    rok_fuzz_fail("a plan written by rok_plan_file_to_json() does not read back: %s", error->message);
  g_autofree char *text_again = plan_text(again, trace);
  rok_fuzz_check_same("plan read back", text, text_again);
  return 0;
}
