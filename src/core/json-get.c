/* Typed getters: one member of an object, checked, with a located message
 * saying what was expected and what was found. Each is a hash lookup plus
 * a type check; paths and positions are only worked out for an error. */
#include "json-private.h"
#include "rok/core.h"

#include <math.h>
#include <string.h>

gboolean core_json_lookup(const RokJsonObj *obj, const char *key, gboolean required, json_object **value,
                       gboolean *present, GError **error) {
  *value = NULL;
  *present = obj->obj != NULL && json_object_object_get_ex(obj->obj, key, value);
  if (!*present && required) {
    rok_json_error(error, obj->doc, obj->path, "required member \"%s\" is missing", key);
    return FALSE;
  }
  return TRUE;
}

gboolean core_json_member_error(const RokJsonObj *obj, const char *key, GError **error, const char *format, ...) {
  if (error == NULL)
    return FALSE;
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_autofree char *path = core_json_path_join(obj->path, key);
  rok_json_error(error, obj->doc, path, "%s", message);
  return FALSE;
}

gboolean core_json_wrong_value(const RokJsonObj *obj, const char *key, json_object *value, const char *expected,
                            GError **error) {
  if (error == NULL)
    return FALSE;
  g_autofree char *found = core_json_describe(value);
  return core_json_member_error(obj, key, error, "must be %s, not %s", expected, found);
}

static char *uint_expectation(guint64 min, guint64 max) {
  if (max == G_MAXUINT64 && min <= 1)
    return g_strdup(min == 0 ? "a non-negative integer" : "a positive integer");
  if (max == G_MAXUINT64)
    return g_strdup_printf("an integer of at least %" G_GUINT64_FORMAT, min);
  return g_strdup_printf("an integer from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT, min, max);
}

static char *int_expectation(gint64 min, gint64 max) {
  if (max == G_MAXINT64 && (min == 0 || min == 1))
    return uint_expectation((guint64)min, G_MAXUINT64);
  if (max == G_MAXINT64 && min == G_MININT64)
    return g_strdup("an integer");
  if (max == G_MAXINT64)
    return g_strdup_printf("an integer of at least %" G_GINT64_FORMAT, min);
  if (min == G_MININT64)
    return g_strdup_printf("an integer of at most %" G_GINT64_FORMAT, max);
  return g_strdup_printf("an integer from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT, min, max);
}

static char *double_expectation(double min, double max) {
  char low[G_ASCII_DTOSTR_BUF_SIZE], high[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(low, sizeof low, "%g", min);
  g_ascii_formatd(high, sizeof high, "%g", max);
  gboolean bounded_below = min > -G_MAXDOUBLE, bounded_above = max < G_MAXDOUBLE;
  if (bounded_below && bounded_above)
    return g_strdup_printf("a number from %s to %s", low, high);
  if (bounded_below)
    return g_strdup_printf("a number of at least %s", low);
  if (bounded_above)
    return g_strdup_printf("a number of at most %s", high);
  return g_strdup("a finite number");
}

gboolean rok_json_get_uint(const RokJsonObj *obj, const char *key, gboolean required, guint64 min, guint64 max,
                           guint64 *out, GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present)
    return TRUE;
  /* get_int64 tells the sign; get_uint64 the value, up to 2^64-1. */
  if (json_object_is_type(value, json_type_int) && json_object_get_int64(value) >= 0) {
    guint64 u = json_object_get_uint64(value);
    if (u >= min && u <= max) {
      *out = u;
      return TRUE;
    }
  }
  g_autofree char *expected = uint_expectation(min, max);
  return core_json_wrong_value(obj, key, value, expected, error);
}

gboolean rok_json_get_int(const RokJsonObj *obj, const char *key, gboolean required, gint64 min, gint64 max,
                          gint64 *out, GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present)
    return TRUE;
  if (json_object_is_type(value, json_type_int)) {
    gint64 v = json_object_get_int64(value);
    /* json-c clamps unsigned values above G_MAXINT64 to G_MAXINT64. */
    gboolean clamped = v == G_MAXINT64 && json_object_get_uint64(value) > (guint64)G_MAXINT64;
    if (!clamped && v >= min && v <= max) {
      *out = v;
      return TRUE;
    }
  }
  g_autofree char *expected = int_expectation(min, max);
  return core_json_wrong_value(obj, key, value, expected, error);
}

static gboolean is_number(json_object *value) {
  return json_object_is_type(value, json_type_int) || json_object_is_type(value, json_type_double);
}

gboolean rok_json_get_double(const RokJsonObj *obj, const char *key, gboolean required, double min, double max,
                             double *out, GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present)
    return TRUE;
  if (is_number(value)) {
    double v = json_object_get_double(value);
    if (isfinite(v) && v >= min && v <= max) {
      *out = v;
      return TRUE;
    }
  }
  g_autofree char *expected = double_expectation(min, max);
  return core_json_wrong_value(obj, key, value, expected, error);
}

gboolean rok_json_get_bool(const RokJsonObj *obj, const char *key, gboolean required, gboolean *out,
                           GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present)
    return TRUE;
  if (!json_object_is_type(value, json_type_boolean))
    return core_json_wrong_value(obj, key, value, "true or false", error);
  *out = json_object_get_boolean(value) ? TRUE : FALSE;
  return TRUE;
}

/* "one of \"gpt\", \"bert\"" for enums, else "a string". */
static char *string_expectation(const char *const *names) {
  if (names == NULL)
    return g_strdup("a string");
  g_autofree char *choices = core_json_quote_list(names);
  return g_strdup_printf("one of %s", choices);
}

/* The text of a string member; a number given as an override (--set
 * name=7) counts as its text. NULL, with the error set, otherwise. */
static const char *string_of(const RokJsonObj *obj, const char *key, json_object *value, const char *const *names,
                             GError **error) {
  if (json_object_is_type(value, json_type_string)) {
    const char *text = json_object_get_string(value);
    if (strlen(text) != (gsize)json_object_get_string_len(value)) {
      core_json_member_error(obj, key, error, "must not contain a NUL character (\\u0000)");
      return NULL;
    }
    /* Names reach terminals: an escape sequence in one would drive it. */
    for (const char *p = text; *p != '\0'; p = g_utf8_next_char(p))
      if (g_unichar_iscntrl(g_utf8_get_char(p))) {
        core_json_member_error(obj, key, error, "must not contain control characters (U+%04X)",
                               (unsigned)g_utf8_get_char(p));
        return NULL;
      }
    return text;
  }
  if (obj->doc != NULL) {
    g_autofree char *path = core_json_path_join(obj->path, key);
    const char *literal = core_json_doc_override_literal(obj->doc, path);
    if (literal != NULL)
      return literal;
  }
  g_autofree char *expected = string_expectation(names);
  core_json_wrong_value(obj, key, value, expected, error);
  return NULL;
}

gboolean rok_json_get_string(const RokJsonObj *obj, const char *key, gboolean required, char **out,
                             GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present)
    return TRUE;
  const char *text = string_of(obj, key, value, NULL, error);
  if (text == NULL)
    return FALSE;
  g_free(*out);
  *out = g_strdup(text);
  return TRUE;
}

gboolean rok_json_get_enum(const RokJsonObj *obj, const char *key, gboolean required, const char *const *names,
                           int *out, GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present)
    return TRUE;
  const char *text = string_of(obj, key, value, names, error);
  if (text == NULL)
    return FALSE;
  for (int i = 0; names[i] != NULL; i++) {
    if (strcmp(text, names[i]) == 0) {
      *out = i;
      return TRUE;
    }
  }
  g_autofree char *expected = string_expectation(names);
  const char *close = rok_closest_name(text, names);
  g_autofree char *found = core_json_describe(value);
  if (close != NULL)
    return core_json_member_error(obj, key, error, "must be %s, not %s; did you mean \"%s\"?", expected, found, close);
  return core_json_member_error(obj, key, error, "must be %s, not %s", expected, found);
}

gboolean rok_json_get_array(const RokJsonObj *obj, const char *key, gboolean required, json_object **out,
                            GError **error) {
  json_object *value;
  gboolean present;
  if (!core_json_lookup(obj, key, required, &value, &present, error))
    return FALSE;
  if (!present) {
    *out = NULL;
    return TRUE;
  }
  if (!json_object_is_type(value, json_type_array))
    return core_json_wrong_value(obj, key, value, "an array", error);
  *out = value;
  return TRUE;
}

/* Element i of the array member `key`: an integer in [0, max]. */
static gboolean element_uint(const RokJsonObj *obj, const char *key, json_object *array, gsize i, guint64 max,
                             guint64 *out, GError **error) {
  json_object *element = json_object_array_get_idx(array, i);
  gboolean integer = json_object_is_type(element, json_type_int) && json_object_get_int64(element) >= 0;
  guint64 v = integer ? json_object_get_uint64(element) : 0;
  if (!integer || v > max) {
    g_autofree char *element_key = g_strdup_printf("%s[%" G_GSIZE_FORMAT "]", key, i);
    g_autofree char *expected = uint_expectation(0, max);
    return core_json_wrong_value(obj, element_key, element, expected, error);
  }
  *out = v;
  return TRUE;
}

gboolean rok_json_get_index_array(const RokJsonObj *obj, const char *key, gboolean required, guint max,
                                  GArray *out, GError **error) {
  g_return_val_if_fail(out != NULL && g_array_get_element_size(out) == sizeof(guint), FALSE);
  json_object *array = NULL;
  if (!rok_json_get_array(obj, key, required, &array, error))
    return FALSE;
  guint old_length = out->len;
  for (gsize i = 0; array != NULL && i < json_object_array_length(array); i++) {
    guint64 v = 0;
    if (!element_uint(obj, key, array, i, max, &v, error)) {
      g_array_set_size(out, old_length);
      return FALSE;
    }
    guint index = (guint)v;
    g_array_append_val(out, index);
  }
  return TRUE;
}

gboolean rok_json_get_uint_array(const RokJsonObj *obj, const char *key, gboolean required, guint64 max,
                                 guint64 *out, gsize capacity, gsize *length, GError **error) {
  json_object *array = NULL;
  *length = 0;
  if (!rok_json_get_array(obj, key, required, &array, error))
    return FALSE;
  if (array == NULL)
    return TRUE;
  gsize n = json_object_array_length(array);
  if (n > capacity)
    return core_json_member_error(obj, key, error, "must hold at most %" G_GSIZE_FORMAT " numbers", capacity);
  for (gsize i = 0; i < n; i++)
    if (!element_uint(obj, key, array, i, max, &out[i], error))
      return FALSE;
  *length = n;
  return TRUE;
}
