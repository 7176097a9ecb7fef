/* Walking a document: objects with their paths, unknown keys, the format
 * field, and the wording shared by all messages. */
#include "json-private.h"

#include <string.h>

char *core_json_path_join(const char *parent, const char *key) {
  return parent[0] == '\0' ? g_strdup(key) : g_strconcat(parent, ".", key, NULL);
}

char *core_json_describe(json_object *value) {
  switch (json_object_get_type(value)) {
  case json_type_null:
    return g_strdup("null");
  case json_type_object:
    return g_strdup("an object");
  case json_type_array:
    return g_strdup("an array");
  case json_type_boolean:
  case json_type_int:
  case json_type_double:
    return g_strdup(json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN));
  case json_type_string:
    break;
  }
  const char *text = json_object_to_json_string_ext(value, JSON_C_TO_STRING_NOSLASHESCAPE);
  if (g_utf8_strlen(text, -1) <= 60)
    return g_strdup(text);
  g_autofree char *head = g_utf8_substring(text, 0, 50);
  return g_strconcat(head, "...\"", NULL);
}

char *core_json_quote_list(const char *const *names) {
  GString *out = g_string_new(NULL);
  for (gsize i = 0; names[i] != NULL; i++)
    g_string_append_printf(out, "%s\"%s\"", i > 0 ? ", " : "", names[i]);
  return g_string_free(out, FALSE);
}

/* Edit distance counting a swap of two neighbours as one edit (optimal
 * string alignment), on bytes: keys and names are ASCII. */
static gsize edit_distance(const char *a, const char *b) {
  gsize n = strlen(a), m = strlen(b);
  g_autofree gsize *rows = g_new(gsize, 3 * (m + 1));
  gsize *before = rows, *previous = rows + m + 1, *current = rows + 2 * (m + 1);
  for (gsize j = 0; j <= m; j++)
    previous[j] = j;
  for (gsize i = 1; i <= n; i++) {
    current[0] = i;
    for (gsize j = 1; j <= m; j++) {
      gsize cost = a[i - 1] == b[j - 1] ? 0 : 1;
      gsize best = MIN(MIN(previous[j] + 1, current[j - 1] + 1), previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        best = MIN(best, before[j - 2] + 1);
      current[j] = best;
    }
    gsize *spare = before;
    before = previous;
    previous = current;
    current = spare;
  }
  return previous[m];
}

/* Close enough: at most one edit per three characters (at least one). */
const char *rok_closest_name(const char *word, const char *const *names) {
  const char *best = NULL;
  gsize best_distance = G_MAXSIZE;
  for (gsize i = 0; names[i] != NULL; i++) {
    gsize d = edit_distance(word, names[i]);
    gsize allowed = MAX(1, MAX(strlen(word), strlen(names[i])) / 3);
    if (d <= allowed && d < best_distance) {
      best = names[i];
      best_distance = d;
    }
  }
  return best;
}

/* ---- objects ---- */

void rok_json_obj_clear(RokJsonObj *obj) {
  g_clear_pointer(&obj->path, g_free);
  obj->obj = NULL;
  obj->doc = NULL;
}

/* Fills `out`, which is not cleared first (it may be uninitialised) unless
 * it is the parent it was computed from. */
static void set_obj(RokJsonObj *out, const RokJsonObj *parent, json_object *value, char *path) {
  if (out == parent)
    g_free(out->path);
  out->doc = parent->doc;
  out->obj = value;
  out->path = path;
}

static gboolean must_be_object(const RokJsonDoc *doc, const char *path, json_object *value, GError **error) {
  if (json_object_is_type(value, json_type_object))
    return TRUE;
  g_autofree char *found = core_json_describe(value);
  rok_json_error(error, doc, path, "must be an object, not %s", found);
  return FALSE;
}

gboolean rok_json_root(const RokJsonDoc *doc, RokJsonObj *out, GError **error) {
  g_return_val_if_fail(doc != NULL && out != NULL, FALSE);
  json_object *root = rok_json_doc_root(doc);
  if (!json_object_is_type(root, json_type_object)) {
    g_autofree char *found = core_json_describe(root);
    rok_json_error(error, doc, "", "the document must be a JSON object, not %s", found);
    return FALSE;
  }
  out->doc = doc;
  out->obj = root;
  out->path = g_strdup("");
  return TRUE;
}

gboolean rok_json_child(const RokJsonObj *parent, const char *key, gboolean required, RokJsonObj *out,
                        GError **error) {
  g_return_val_if_fail(parent != NULL && key != NULL && out != NULL, FALSE);
  json_object *value = NULL;
  gboolean present = parent->obj != NULL && json_object_object_get_ex(parent->obj, key, &value);
  if (!present && required) {
    rok_json_error(error, parent->doc, parent->path, "required member \"%s\" is missing", key);
    return FALSE;
  }
  char *path = core_json_path_join(parent->path, key);
  if (present && !must_be_object(parent->doc, path, value, error)) {
    g_free(path);
    return FALSE;
  }
  set_obj(out, parent, value, path);
  return TRUE;
}

gboolean rok_json_element(const RokJsonObj *parent, const char *key, json_object *array, gsize index,
                          RokJsonObj *out, GError **error) {
  g_return_val_if_fail(parent != NULL && key != NULL && out != NULL, FALSE);
  g_return_val_if_fail(json_object_is_type(array, json_type_array), FALSE);
  char *path = g_strdup_printf("%s%s%s[%" G_GSIZE_FORMAT "]", parent->path, parent->path[0] ? "." : "", key,
                               index);
  if (index >= json_object_array_length(array)) {
    rok_json_error(error, parent->doc, path, "no such element (the array has %" G_GSIZE_FORMAT ")",
                   json_object_array_length(array));
    g_free(path);
    return FALSE;
  }
  json_object *value = json_object_array_get_idx(array, index);
  if (!must_be_object(parent->doc, path, value, error)) {
    g_free(path);
    return FALSE;
  }
  set_obj(out, parent, value, path);
  return TRUE;
}

static gboolean is_known(const char *key, const char *const *keys) {
  for (gsize i = 0; keys[i] != NULL; i++)
    if (strcmp(key, keys[i]) == 0)
      return TRUE;
  return FALSE;
}

gboolean rok_json_only_keys(const RokJsonObj *obj, const char *const *keys, GError **error) {
  g_return_val_if_fail(obj != NULL && keys != NULL, FALSE);
  if (obj->obj == NULL)
    return TRUE;
  /* json-c keeps members in the order of the text, so the first unknown key
   * reported is the first one written. */
  json_object_object_foreach(obj->obj, key, value) {
    (void)value;
    if (is_known(key, keys))
      continue;
    g_autofree char *path = core_json_path_join(obj->path, key);
    const char *close = rok_closest_name(key, keys);
    if (close != NULL) {
      core_json_doc_error(error, ROK_ERROR_INPUT, obj->doc, path, TRUE, "unknown key; did you mean \"%s\"?",
                         close);
    } else {
      g_autofree char *known = core_json_quote_list(keys);
      core_json_doc_error(error, ROK_ERROR_INPUT, obj->doc, path, TRUE, "unknown key (known keys: %s)", known);
    }
    return FALSE;
  }
  return TRUE;
}

/* "rok-trace/2" against "rok-trace/1": same family, higher version? */
static gboolean is_newer(const char *found, const char *expected) {
  const char *slash = strrchr(expected, '/');
  if (slash == NULL || strncmp(found, expected, (gsize)(slash - expected + 1)) != 0)
    return FALSE;
  const char *version = found + (slash - expected + 1);
  char *end = NULL;
  guint64 found_version = g_ascii_strtoull(version, &end, 10);
  guint64 expected_version = g_ascii_strtoull(slash + 1, NULL, 10);
  return end != version && *end == '\0' && g_ascii_isdigit(version[0]) && found_version > expected_version;
}

gboolean rok_json_check_format(const RokJsonObj *root, const char *expected, GError **error) {
  g_return_val_if_fail(root != NULL && expected != NULL, FALSE);
  json_object *value = NULL;
  if (root->obj == NULL || !json_object_object_get_ex(root->obj, "format", &value)) {
    core_json_doc_error(error, ROK_ERROR_FORMAT, root->doc, root->path, FALSE,
                       "no \"format\" member: not a %s file", expected);
    return FALSE;
  }
  g_autofree char *path = core_json_path_join(root->path, "format");
  const char *found = json_object_is_type(value, json_type_string) ? json_object_get_string(value) : NULL;
  if (found != NULL && strcmp(found, expected) == 0)
    return TRUE;
  g_autofree char *shown = core_json_describe(value);
  if (found != NULL && is_newer(found, expected))
    core_json_doc_error(error, ROK_ERROR_FORMAT, root->doc, path, FALSE,
                       "format %s is newer than this version of rok reads (expected \"%s\")", shown, expected);
  else
    core_json_doc_error(error, ROK_ERROR_FORMAT, root->doc, path, FALSE, "expected format \"%s\", found %s",
                       expected, shown);
  return FALSE;
}
