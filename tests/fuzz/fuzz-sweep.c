/* Sweep CSV files (what `rok plot` reads): rok_sweep_parse_csv(). An
 * accepted CSV must write back (rok_sweep_to_csv) to the same bytes it
 * reads back as. */
#include "fuzz.h"

#include <string.h>

#include "rok/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSweep) sweep = rok_sweep_parse_csv(ROK_FUZZ_NAME, (const char *)data, size, &error);
  rok_fuzz_check_result(sweep != NULL, error, rok_fuzz_doc_prefixes, data, size);
  if (sweep == NULL)
    return 0;
  g_autofree char *text = rok_sweep_to_csv(sweep);
  g_autoptr(RokSweep) again = rok_sweep_parse_csv(ROK_FUZZ_NAME, text, strlen(text), &error);
  if (again == NULL)
    rok_fuzz_fail("a CSV written by rok_sweep_to_csv() does not read back: %s", error->message);
  g_autofree char *text_again = rok_sweep_to_csv(again);
  rok_fuzz_check_same("sweep read back", text, text_again);
  return 0;
}
