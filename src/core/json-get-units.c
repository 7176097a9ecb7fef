/* Getters for sizes, rates and times: a number in base units or a string
 * with units, read by the parsers of units.h. */
#include "json-private.h"
#include "rok/core.h"

#include <math.h>

/* A string the units parser rejected: its message says what and why. */
static gboolean units_error(const RokJsonObj *obj, const char *key, GError *parse_error, GError **error) {
  core_json_member_error(obj, key, error, "%s", parse_error->message);
  g_error_free(parse_error);
  return FALSE;
}

#define SIZE_EXPECTED "a size such as \"40GiB\" or a positive whole number of bytes"
#define RATE_EXPECTED "a rate such as \"25GB/s\" or a positive number per second"
#define TIME_EXPECTED "a time such as \"10ms\" or a non-negative number of seconds"

gboolean rok_json_get_size(const RokJsonObj *obj, const char *key, gboolean required, guint64 *bytes,
                           GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present)
    return TRUE;
  guint64 result = 0;
  if (json_object_is_type(value, json_type_string)) {
    GError *parse_error = NULL;
    if (!rok_units_parse_size(json_object_get_string(value), &result, &parse_error))
      return units_error(obj, key, parse_error, error);
  } else if (json_object_is_type(value, json_type_int)) {
    result = json_object_get_int64(value) > 0 ? json_object_get_uint64(value) : 0;
  } else if (json_object_is_type(value, json_type_double)) {
    /* 4e9 is a whole number of bytes even though JSON calls it a double. */
    double d = json_object_get_double(value);
    if (d == floor(d) && d > 0 && d < 18446744073709551616.0)
      result = (guint64)d;
  }
  if (result == 0)
    return core_json_wrong_value(obj, key, value, SIZE_EXPECTED, error);
  *bytes = result;
  return TRUE;
}

gboolean rok_json_get_rate(const RokJsonObj *obj, const char *key, gboolean required, double *per_second,
                           GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present)
    return TRUE;
  double result = 0;
  if (json_object_is_type(value, json_type_string)) {
    GError *parse_error = NULL;
    if (!rok_units_parse_rate(json_object_get_string(value), &result, &parse_error))
      return units_error(obj, key, parse_error, error);
  } else if (json_object_is_type(value, json_type_int) || json_object_is_type(value, json_type_double)) {
    result = json_object_get_double(value);
  }
  if (!(isfinite(result) && result > 0))
    return core_json_wrong_value(obj, key, value, RATE_EXPECTED, error);
  *per_second = result;
  return TRUE;
}

/* Seconds as a number -> nanoseconds, FALSE when negative or too long. */
static gboolean seconds_to_ns(json_object *value, gint64 *ns, gboolean *too_long) {
  *too_long = FALSE;
  if (json_object_is_type(value, json_type_int)) {
    gint64 s = json_object_get_int64(value); /* clamped to G_MAXINT64 */
    if (s < 0)
      return FALSE;
    if (s > G_MAXINT64 / G_GINT64_CONSTANT(1000000000)) {
      *too_long = TRUE;
      return FALSE;
    }
    *ns = s * G_GINT64_CONSTANT(1000000000);
    return TRUE;
  }
  if (!json_object_is_type(value, json_type_double))
    return FALSE;
  double x = json_object_get_double(value) * 1e9;
  if (!(x >= 0))
    return FALSE;
  /* 2^63 is exact in a double; every double below it rounds into gint64. */
  if (!(x < 9223372036854775808.0)) {
    *too_long = TRUE;
    return FALSE;
  }
  *ns = (gint64)llround(x);
  return TRUE;
}

gboolean rok_json_get_time(const RokJsonObj *obj, const char *key, gboolean required, gint64 *ns,
                           GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present)
    return TRUE;
  gint64 result = 0;
  if (json_object_is_type(value, json_type_string)) {
    GError *parse_error = NULL;
    if (!rok_units_parse_time(json_object_get_string(value), &result, &parse_error))
      return units_error(obj, key, parse_error, error);
  } else {
    gboolean too_long;
    if (!seconds_to_ns(value, &result, &too_long)) {
      if (too_long)
        return core_json_member_error(obj, key, error, "too long (more than 2^63-1 ns, about 292 years)");
      return core_json_wrong_value(obj, key, value, TIME_EXPECTED, error);
    }
  }
  *ns = result;
  return TRUE;
}
