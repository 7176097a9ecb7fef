/* Writing JSON: canonical text, byte-identical across runs and locales. */
#include "json-private.h"

#include <math.h>
#include <string.h>

json_object *rok_json_new_double(double value) {
  if (!isfinite(value))
    return NULL; /* json-c's null */
  json_object *number = json_object_new_double(value);
  /* Pin the format on the value itself: json-c's default is "%.17g" too,
   * but a process-wide json_c_set_serialization_double_format() would change
   * it. json-c adds ".0" to whole numbers and writes '.' in any locale. */
  json_object_set_serializer(number, json_object_double_to_json_string, (void *)"%.17g", NULL);
  return number;
}

char *rok_json_to_string(json_object *value) {
  const char *text = json_object_to_json_string_ext(
      value, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
  return g_strconcat(text, "\n", NULL);
}

gboolean rok_json_write_file(json_object *value, const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, FALSE);
  g_autofree char *text = rok_json_to_string(value);
  return rok_file_write(path, text, strlen(text), error);
}
