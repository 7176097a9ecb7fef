/* Ranges of swept values: "8", "1,2,4,8", "1:64", "8:64:8", "1:64:*2",
 * sizes with units for budgets. */
#include <string.h>

#include "rok/core.h"
#include "rok/sweep.h"

static gboolean parse_value(const char *range, const char *item, gboolean sizes, guint64 *value, GError **error) {
  g_autofree char *text = g_strstrip(g_strdup(item));
  if (*text == '\0') {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": a value is missing", range);
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  gboolean ok = sizes ? rok_units_parse_size(text, value, &local)
                      : g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, value, &local);
  if (!ok)
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": \"%s\" is not %s", range, text,
                sizes ? "a size (such as 24GiB)" : "a whole number");
  return ok;
}

static gboolean add_value(GArray *values, const char *range, guint64 value, GError **error) {
  if (values->len >= ROK_SWEEP_MAX_VALUES) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": more than %d values", range,
                ROK_SWEEP_MAX_VALUES);
    return FALSE;
  }
  g_array_append_val(values, value);
  return TRUE;
}

/* "*k": a whole factor of at least 2. */
static gboolean parse_factor(const char *range, const char *text, guint64 *factor, GError **error) {
  g_autofree char *stripped = g_strstrip(g_strdup(text + 1));
  if (g_ascii_string_to_unsigned(stripped, 10, 2, G_MAXUINT32, factor, NULL))
    return TRUE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": the factor after \"*\" must be a whole "
              "number of at least 2, not \"%s\"", range, stripped);
  return FALSE;
}

/* a:b, a:b:step, a:b:*factor. */
static gboolean parse_span(const char *range, char **parts, gboolean sizes, GArray *values, GError **error) {
  guint n = g_strv_length(parts);
  guint64 first, last, step = 1, factor = 0;
  if (n > 3) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": expected a:b, a:b:step or a:b:*factor",
                range);
    return FALSE;
  }
  if (!parse_value(range, parts[0], sizes, &first, error) || !parse_value(range, parts[1], sizes, &last, error))
    return FALSE;
  if (n == 3) {
    const char *third = parts[2] + strspn(parts[2], " ");
    if (*third == '*' ? !parse_factor(range, third, &factor, error)
                      : !parse_value(range, parts[2], sizes, &step, error))
      return FALSE;
    if (*third != '*' && step == 0) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": the step must be more than 0", range);
      return FALSE;
    }
  }
  if (last < first || (factor > 0 && first == 0)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": %s", range,
                last < first ? "it ends before it starts" : "a geometric range cannot start at 0");
    return FALSE;
  }
  for (guint64 v = first;;) {
    if (!add_value(values, range, v, error))
      return FALSE;
    /* Stop when the next value would pass the end (tested so that it
     * cannot wrap around). */
    if (factor > 0 ? v > last / factor : last - v < step)
      return TRUE;
    v = factor > 0 ? v * factor : v + step;
  }
}

static gint compare_u64(gconstpointer a, gconstpointer b) {
  guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
  return x < y ? -1 : x > y;
}

static gboolean check_values(GArray *values, const char *range, guint64 min, GError **error) {
  g_array_sort(values, compare_u64);
  for (guint i = 0; i < values->len; i++) {
    guint64 v = g_array_index(values, guint64, i);
    if (v < min) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": values must be at least %" G_GUINT64_FORMAT
                  ", not %" G_GUINT64_FORMAT, range, min, v);
      return FALSE;
    }
    if (i > 0 && v == g_array_index(values, guint64, i - 1)) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": %" G_GUINT64_FORMAT " is given twice",
                  range, v);
      return FALSE;
    }
  }
  return TRUE;
}

GArray *rok_sweep_parse_range(const char *text, gboolean sizes, guint64 min, GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  g_autoptr(GArray) values = g_array_new(FALSE, FALSE, sizeof(guint64));
  gboolean ok;
  if (text[strspn(text, " \t")] == '\0') {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"\": no values");
    return NULL;
  }
  if (strchr(text, ':') != NULL) {
    if (strchr(text, ',') != NULL) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "invalid range \"%s\": give a list (1,2,4) or a range "
                  "(1:64), not both", text);
      return NULL;
    }
    g_auto(GStrv) parts = g_strsplit(text, ":", -1);
    ok = parse_span(text, parts, sizes, values, error);
  } else {
    g_auto(GStrv) items = g_strsplit(text, ",", -1);
    ok = TRUE;
    for (guint i = 0; ok && items[i] != NULL; i++) {
      guint64 v;
      ok = parse_value(text, items[i], sizes, &v, error) && add_value(values, text, v, error);
    }
  }
  if (!ok || !check_values(values, text, min, error))
    return NULL;
  return g_steal_pointer(&values);
}
