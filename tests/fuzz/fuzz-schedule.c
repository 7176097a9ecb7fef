/* rok-schedule/2 files: rok_schedule_parse(). A schedule carries its trace
 * and hardware profile; an accepted one must write back
 * (rok_schedule_to_string) to a file that reads back to the same bytes,
 * and its full form (every action written out) to the same program. */
#include "fuzz.h"

#include <string.h>

#include "rok/schedule.h"

/* Errors in the embedded trace or profile read "fuzz.json (embedded trace):...". */
static const char *const prefixes[] = {ROK_FUZZ_NAME ":", ROK_FUZZ_NAME " (embedded ", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSchedule) schedule = rok_schedule_parse(ROK_FUZZ_NAME, (const char *)data, size, &error);
  rok_fuzz_check_result(schedule != NULL, error, prefixes, data, size);
  if (schedule == NULL)
    return 0;
  g_autofree char *text = rok_schedule_to_string(schedule);
  g_autoptr(RokSchedule) again = rok_schedule_parse(ROK_FUZZ_NAME, text, strlen(text), &error);
  if (again == NULL)
    rok_fuzz_fail("a schedule written by rok_schedule_to_string() does not read back: %s", error->message);
  g_autofree char *text_again = rok_schedule_to_string(again);
  rok_fuzz_check_same("schedule read back", text, text_again);
  /* The full form is the same program: written compact, the same bytes. */
  g_autofree char *full = rok_schedule_to_string_full(schedule);
  g_autoptr(RokSchedule) expanded = rok_schedule_parse(ROK_FUZZ_NAME, full, strlen(full), &error);
  if (expanded == NULL)
    rok_fuzz_fail("a schedule's full form does not read back: %s", error->message);
  g_autofree char *compact_again = rok_schedule_to_string(expanded);
  rok_fuzz_check_same("full form read back", text, compact_again);
  return 0;
}
