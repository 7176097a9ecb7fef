/* The JSON core behind every reader: rok_json_doc_parse(), overrides
 * (rok_json_doc_set), every typed getter on every member, and the located
 * messages of rok_json_error().
 *
 * Input: a JSON text, then optionally NUL-separated "key=value" overrides.
 * Checks beyond "no crash": every failure is a located exit-2 message, and
 * a message that gives a line and column points at the value it names. */
#include "fuzz.h"

#include <stdio.h>
#include <string.h>

#include "rok/core.h"

#define MAX_OVERRIDES 8
#define MAX_LOCATED 64 /* values whose position is checked: each check scans the text */
#define MAX_MEMBERS 16 /* members of an object tried with every getter */

static const char *const prefixes[] = {ROK_FUZZ_NAME ":", "--set ", NULL};
static const char *const names[] = {"gpt", "bert", "t5", "llama", "x", NULL};

/* The input, for the checks of messages. */
typedef struct {
  const uint8_t *data;
  size_t size;
} Input;

static void check(const Input *in, gboolean ok, GError **error) {
  rok_fuzz_check_result(ok, *error, prefixes, in->data, in->size);
  g_clear_error(error);
}

/* Every getter on member `key` of `obj`, required or not by turns. */
static void get_everything(const Input *in, const RokJsonObj *obj, const char *key, gboolean required) {
  GError *error = NULL;
  guint64 u = 0, array[4];
  gint64 i = 0;
  double d = 0;
  gboolean b = FALSE;
  int e = 0;
  gsize n = 0;
  g_autofree char *s = NULL;
  json_object *a = NULL;
  g_autoptr(GArray) indices = g_array_new(FALSE, FALSE, sizeof(guint));
  g_auto(RokJsonObj) child = {0};
  check(in, rok_json_get_uint(obj, key, required, 1, 1000, &u, &error), &error);
  check(in, rok_json_get_uint(obj, key, required, 0, G_MAXUINT64, &u, &error), &error);
  check(in, rok_json_get_int(obj, key, required, -5, G_MAXINT64, &i, &error), &error);
  check(in, rok_json_get_int(obj, key, required, G_MININT64, G_MAXINT64, &i, &error), &error);
  check(in, rok_json_get_double(obj, key, required, 0.0, 0.99, &d, &error), &error);
  check(in, rok_json_get_double(obj, key, required, -G_MAXDOUBLE, G_MAXDOUBLE, &d, &error), &error);
  check(in, rok_json_get_bool(obj, key, required, &b, &error), &error);
  check(in, rok_json_get_string(obj, key, required, &s, &error), &error);
  check(in, rok_json_get_enum(obj, key, required, names, &e, &error), &error);
  check(in, rok_json_get_size(obj, key, required, &u, &error), &error);
  check(in, rok_json_get_rate(obj, key, required, &d, &error), &error);
  check(in, rok_json_get_time(obj, key, required, &i, &error), &error);
  check(in, rok_json_get_array(obj, key, required, &a, &error), &error);
  check(in, rok_json_get_index_array(obj, key, required, 100, indices, &error), &error);
  check(in, rok_json_get_uint_array(obj, key, required, G_MAXUINT64 - 1, array, 4, &n, &error), &error);
  check(in, rok_json_child(obj, key, required, &child, &error), &error);
  for (gsize k = 0; a != NULL && k < MIN(json_object_array_length(a), 4); k++) {
    g_auto(RokJsonObj) element = {0};
    check(in, rok_json_element(obj, key, a, k, &element, &error), &error);
  }
}

static void get_members(const Input *in, const RokJsonObj *obj) {
  static const char *const known[] = {"name", "layers", "memory", "format", NULL};
  GError *error = NULL;
  check(in, rok_json_only_keys(obj, known, &error), &error);
  check(in, rok_json_check_format(obj, "rok-fuzz/1", &error), &error);
  get_everything(in, obj, "absent", FALSE);
  get_everything(in, obj, "absent", TRUE);
  guint count = 0;
  json_object_object_foreach(obj->obj, key, value) {
    (void)value;
    if (count++ == MAX_MEMBERS)
      break;
    get_everything(in, obj, key, count % 2 == 0);
  }
}

/* The byte offset of line:column (columns count UTF-8 characters). */
static gsize offset_of(const char *text, gsize line, gsize column) {
  const char *p = text;
  for (gsize l = 1; l < line; l++) {
    p = strchr(p, '\n');
    if (p == NULL)
      rok_fuzz_fail("line %" G_GSIZE_FORMAT " is past the end", line);
    p++;
  }
  for (gsize c = 1; c < column; c++) {
    if (*p == '\0')
      rok_fuzz_fail("column %" G_GSIZE_FORMAT " is past the end", column);
    p = g_utf8_next_char(p);
  }
  return (gsize)(p - text);
}

static gboolean starts_like(json_object *value, char c) {
  switch (json_object_get_type(value)) {
  case json_type_null:
    return c == 'n';
  case json_type_boolean:
    return c == 't' || c == 'f';
  case json_type_int:
  case json_type_double:
    return c == '-' || g_ascii_isdigit(c);
  case json_type_object:
    return c == '{';
  case json_type_array:
    return c == '[';
  case json_type_string:
    return c == '"';
  }
  return FALSE;
}

/* rok_json_error() about `path` must point at the start of `value`. */
static void check_located(const Input *in, const RokJsonDoc *doc, const char *text, const char *path,
                          json_object *value) {
  GError *error = NULL;
  rok_json_error(&error, doc, path, "x");
  rok_fuzz_check_result(FALSE, error, prefixes, in->data, in->size);
  gsize line = 0, column = 0;
  int end = 0;
  g_autofree char *expected_tail = g_strdup_printf(" \"%s\": x", path);
  if (sscanf(error->message, ROK_FUZZ_NAME ":%" G_GSIZE_FORMAT ":%" G_GSIZE_FORMAT ":%n", &line, &column, &end) ==
          2 &&
      end > 0) {
    if (strcmp(error->message + end, expected_tail) != 0)
      rok_fuzz_fail("message about \"%s\" reads: %s", path, error->message);
    char c = text[offset_of(text, line, column)];
    if (!starts_like(value, c))
      rok_fuzz_fail("message about \"%s\" points at '%c': %s", path, c, error->message);
  } else {
    rok_fuzz_fail("message about \"%s\" has no line and column: %s", path, error->message);
  }
  g_error_free(error);
}

/* A key a path can name: not empty, no '.', '[' or ']'. */
static gboolean nameable(const char *key) {
  return key[0] != '\0' && strpbrk(key, ".[]") == NULL;
}

/* Breadth-first over the first MAX_LOCATED values below the root. */
static void check_positions(const Input *in, const RokJsonDoc *doc, const char *text) {
  GQueue paths = G_QUEUE_INIT, values = G_QUEUE_INIT;
  g_queue_push_tail(&paths, g_strdup(""));
  g_queue_push_tail(&values, rok_json_doc_root(doc));
  for (guint visited = 0; !g_queue_is_empty(&paths);) {
    g_autofree char *path = g_queue_pop_head(&paths);
    json_object *value = g_queue_pop_head(&values);
    if (path[0] != '\0') {
      if (visited++ == MAX_LOCATED)
        break;
      check_located(in, doc, text, path, value);
    }
    if (json_object_is_type(value, json_type_object)) {
      json_object_object_foreach(value, key, member) {
        if (!nameable(key))
          continue;
        g_queue_push_tail(&paths, path[0] ? g_strconcat(path, ".", key, NULL) : g_strdup(key));
        g_queue_push_tail(&values, member);
      }
    } else if (json_object_is_type(value, json_type_array)) {
      for (gsize i = 0; i < MIN(json_object_array_length(value), 8); i++) {
        g_queue_push_tail(&paths, g_strdup_printf("%s[%" G_GSIZE_FORMAT "]", path, i));
        g_queue_push_tail(&values, json_object_array_get_idx(value, i));
      }
    }
  }
  g_queue_clear_full(&paths, g_free);
  g_queue_clear(&values);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_auto(GStrv) parts = rok_fuzz_split(data, size, MAX_OVERRIDES);
  gsize length = strlen(parts[0]);
  const Input in = {data, size};
  GError *error = NULL;
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse(ROK_FUZZ_NAME, parts[0], length, &error);
  check(&in, doc != NULL, &error);
  if (doc == NULL)
    return 0;
  check_positions(&in, doc, parts[0]);
  for (char **set = parts + 1; *set != NULL; set++) {
    g_autofree char *origin = g_strdup_printf("--set %s", *set);
    check(&in, rok_json_doc_set(doc, *set, origin, &error), &error);
  }
  g_auto(RokJsonObj) root = {0};
  check(&in, rok_json_root(doc, &root, &error), &error);
  if (root.obj == NULL)
    return 0;
  get_members(&in, &root);
  json_object_object_foreach(root.obj, key, value) {
    g_auto(RokJsonObj) child = {0};
    if (json_object_is_type(value, json_type_object) && rok_json_child(&root, key, TRUE, &child, NULL))
      get_members(&in, &child);
  }
  return 0;
}
