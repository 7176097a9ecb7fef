/* RokJsonDoc: a parsed JSON text that can still say where each value is
 * written, plus the command-line overrides applied to it. */
#include "json-private.h"
#include "json-text.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 64
/* Far above any file rok writes (a trace of the most layers a config may
 * have is about 40 MB), and what keeps a hostile file from taking
 * gigabytes: json-c's tree costs ~80 bytes per number and ~700 per object,
 * so the value limit bounds it to about 350 MB. */
#define MAX_BYTES ((gsize)128 << 20)
#define MAX_VALUES ((gsize)4 << 20)

typedef struct {
  char *path;    /* "gpu.memory" */
  char *origin;  /* "--set gpu.memory=40GiB" */
  char *literal; /* the value's text when JSON read it as a non-string scalar */
} Override;

struct _RokJsonDoc {
  char *name;
  char *text; /* NUL-terminated copy of the parsed text */
  gsize length;
  json_object *root;
  GPtrArray *overrides; /* Override*, in the order applied */
};

static void override_free(gpointer data) {
  Override *o = data;
  g_free(o->path);
  g_free(o->origin);
  g_free(o->literal);
  g_free(o);
}

void rok_json_doc_free(RokJsonDoc *doc) {
  if (doc == NULL)
    return;
  json_object_put(doc->root);
  g_ptr_array_unref(doc->overrides);
  g_free(doc->text);
  g_free(doc->name);
  g_free(doc);
}

const char *rok_json_doc_name(const RokJsonDoc *doc) {
  return doc->name;
}

json_object *rok_json_doc_root(const RokJsonDoc *doc) {
  return doc->root;
}

/* "name:line:col: message" for a byte offset of the text. */
static void set_error_at(GError **error, const char *name, const char *text, gsize length, gsize offset,
                         const char *message) {
  gsize line, column;
  core_json_text_position(text, length, offset, &line, &column);
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s:%" G_GSIZE_FORMAT ":%" G_GSIZE_FORMAT ": %s", name, line,
              column, message);
}

static gboolean too_large(GError **error, const char *name, const char *format, ...) G_GNUC_PRINTF(3, 4);

static gboolean too_large(GError **error, const char *name, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *size = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
              "%s: too large for a JSON document (rok reads at most %" G_GSIZE_FORMAT " MiB; %s)", name,
              MAX_BYTES >> 20, size);
  return FALSE;
}

/* json-c in strict mode; on failure the place and reason. A NULL *value
 * with TRUE is the literal null. */
static gboolean parse_strict(const char *text, gsize length, json_object **value, gsize *error_at,
                             const char **reason) {
  struct json_tokener *tok = json_tokener_new_ex(MAX_DEPTH);
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  /* The length includes the final NUL: it tells json-c that a number at the
   * very end ("42") is complete, and truncated text ends in an error. */
  *value = json_tokener_parse_ex(tok, text, (int)length + 1);
  enum json_tokener_error status = json_tokener_get_error(tok);
  if (status != json_tokener_success) {
    json_object_put(*value);
    *value = NULL;
    *error_at = json_tokener_get_parse_end(tok);
    *reason = json_tokener_error_desc(status);
  }
  json_tokener_free(tok);
  return status == json_tokener_success;
}

/* Rejects what json-c cannot parse and what it parses too kindly. */
static gboolean parse_text(const char *name, const char *text, gsize length, json_object **root,
                           GError **error) {
  const char *nul = memchr(text, '\0', length);
  if (nul != NULL) {
    set_error_at(error, name, text, length, (gsize)(nul - text), "NUL byte in the text");
    return FALSE;
  }
  if (length >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
    set_error_at(error, name, text, length, 0, "a byte order mark (U+FEFF) starts the text; JSON has none "
                                                "(save the file as UTF-8 without BOM)");
    return FALSE;
  }
  if (strspn(text, " \t\r\n") == length) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: empty document (expected a JSON value)", name);
    return FALSE;
  }
  gsize at = 0;
  const char *reason = NULL;
  g_autofree char *too_many = NULL;
  if (!core_json_text_within(text, length, MAX_VALUES, &at, &too_many)) {
    set_error_at(error, name, text, length, at, too_many);
    return FALSE;
  }
  if (!parse_strict(text, length, root, &at, &reason)) {
    set_error_at(error, name, text, length, at, reason);
    return FALSE;
  }
  /* json-c's UTF-8 check lets through lead bytes F5-F7 (code points past
   * U+10FFFF) and encoded surrogates; messages quote keys and strings, so
   * they must be valid UTF-8 too. */
  const char *bad = NULL;
  if (!g_utf8_validate_len(text, length, &bad)) {
    set_error_at(error, name, text, length, (gsize)(bad - text), "invalid utf-8 string");
    g_clear_pointer(root, json_object_put);
    return FALSE;
  }
  g_autofree char *message = NULL;
  if (core_json_text_check(text, length, &at, &message) != ROK_JSON_TEXT_OK) {
    set_error_at(error, name, text, length, at, message);
    g_clear_pointer(root, json_object_put);
    return FALSE;
  }
  return TRUE;
}

/* A document from `text` (NUL-terminated at `length`), which it takes. */
static RokJsonDoc *doc_take_text(const char *name, char *text, gsize length, GError **error) {
  g_autofree char *owned = text;
  if (length > MAX_BYTES) {
    too_large(error, name, "%" G_GSIZE_FORMAT " bytes", length);
    return NULL;
  }
  json_object *root = NULL;
  if (!parse_text(name, owned, length, &root, error))
    return NULL;
  RokJsonDoc *doc = g_new0(RokJsonDoc, 1);
  doc->name = g_strdup(name);
  doc->text = g_steal_pointer(&owned);
  doc->length = length;
  doc->root = root;
  doc->overrides = g_ptr_array_new_with_free_func(override_free);
  return doc;
}

RokJsonDoc *rok_json_doc_parse(const char *name, const char *text, gsize length, GError **error) {
  g_return_val_if_fail(name != NULL && (text != NULL || length == 0), NULL);
  g_return_val_if_fail(length < G_MAXSIZE, NULL);
  if (length > MAX_BYTES) {
    too_large(error, name, "%" G_GSIZE_FORMAT " bytes", length);
    return NULL;
  }
  char *copy = g_malloc(length + 1);
  if (length > 0)
    memcpy(copy, text, length);
  copy[length] = '\0';
  return doc_take_text(name, copy, length, error);
}

/* A file that is not there or not readable is bad input, like a typo in an
 * option; only a failing read is a runtime failure. */
static gboolean file_error(GError **error, const char *path, const char *doing, int code) {
  GFileError kind = g_file_error_from_errno(code);
  gboolean runtime = kind == G_FILE_ERROR_IO || kind == G_FILE_ERROR_NOMEM || kind == G_FILE_ERROR_FAILED;
  g_set_error(error, ROK_ERROR, runtime ? ROK_ERROR_IO : ROK_ERROR_INPUT, "%s: %s: %s", path, doing,
              g_strerror(code));
  return FALSE;
}

/* The file's bytes, NUL-terminated: /dev/zero or a pipe that never ends
 * must not fill the memory, nor a huge file be read only to be refused. */
gboolean rok_json_read_file(const char *path, char **contents, gsize *length, GError **error) {
  int fd = g_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0)
    return file_error(error, path, "cannot open", errno);
  struct stat st;
  gsize expected = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
    expected = MIN((gsize)st.st_size, MAX_BYTES + 1);
  if (expected > MAX_BYTES) {
    close(fd);
    return too_large(error, path, "%" G_GINT64_FORMAT " bytes", (gint64)st.st_size);
  }
  GByteArray *bytes = g_byte_array_sized_new((guint)expected + 1);
  guint8 chunk[65536];
  for (;;) {
    gsize want = MIN(sizeof chunk, MAX_BYTES + 1 - bytes->len);
    ssize_t n = want == 0 ? 0 : read(fd, chunk, want);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int code = errno;
      close(fd);
      g_byte_array_unref(bytes);
      return file_error(error, path, "cannot read", code);
    }
    if (n == 0)
      break;
    g_byte_array_append(bytes, chunk, (guint)n);
  }
  close(fd);
  if (bytes->len > MAX_BYTES) {
    g_byte_array_unref(bytes);
    return too_large(error, path, "more than that");
  }
  *length = bytes->len;
  g_byte_array_append(bytes, (const guint8 *)"", 1);
  *contents = (char *)g_byte_array_free(bytes, FALSE);
  return TRUE;
}

RokJsonDoc *rok_json_doc_load(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  char *contents = NULL;
  gsize length = 0;
  if (!rok_json_read_file(path, &contents, &length, error))
    return NULL;
  return doc_take_text(path, contents, length, error);
}

/* ---- errors ---- */

/* The override that set the value at `path` or one of its ancestors. */
static const Override *find_override(const RokJsonDoc *doc, const char *path) {
  for (guint i = doc->overrides->len; i-- > 0;) {
    const Override *o = g_ptr_array_index(doc->overrides, i);
    gsize n = strlen(o->path);
    if (strncmp(path, o->path, n) == 0 && (path[n] == '\0' || path[n] == '.' || path[n] == '['))
      return o;
  }
  return NULL;
}

/* An override that created the value at `path` as an intermediate object. */
static const Override *find_descendant_override(const RokJsonDoc *doc, const char *path) {
  gsize n = strlen(path);
  for (guint i = doc->overrides->len; i-- > 0;) {
    const Override *o = g_ptr_array_index(doc->overrides, i);
    if (strncmp(o->path, path, n) == 0 && o->path[n] == '.')
      return o;
  }
  return NULL;
}

const char *core_json_doc_override_literal(const RokJsonDoc *doc, const char *path) {
  const Override *o = find_override(doc, path);
  return o != NULL && strcmp(o->path, path) == 0 ? o->literal : NULL;
}

/* Where messages about `path` point: "file:12:7: ", "--set x=1: ", "file: ". */
static char *error_prefix(const RokJsonDoc *doc, const char *path, gboolean at_key) {
  const Override *o = find_override(doc, path);
  if (o != NULL)
    return g_strdup_printf("%s: ", o->origin);
  gsize value_at, key_at;
  if (core_json_text_locate(doc->text, doc->length, path, &value_at, &key_at)) {
    gsize line, column;
    core_json_text_position(doc->text, doc->length, at_key ? key_at : value_at, &line, &column);
    return g_strdup_printf("%s:%" G_GSIZE_FORMAT ":%" G_GSIZE_FORMAT ": ", doc->name, line, column);
  }
  o = find_descendant_override(doc, path);
  return g_strdup_printf("%s: ", o != NULL ? o->origin : doc->name);
}

static void doc_error_valist(GError **error, RokErrorCode code, const RokJsonDoc *doc, const char *path,
                             gboolean at_key, const char *format, va_list args) {
  if (error == NULL)
    return;
  g_autofree char *message = g_strdup_vprintf(format, args);
  if (doc == NULL) {
    g_set_error(error, ROK_ERROR, code, "\"%s\": %s", path, message);
    return;
  }
  if (path[0] == '\0') {
    g_set_error(error, ROK_ERROR, code, "%s: %s", doc->name, message);
    return;
  }
  g_autofree char *prefix = error_prefix(doc, path, at_key);
  g_set_error(error, ROK_ERROR, code, "%s\"%s\": %s", prefix, path, message);
}

void core_json_doc_error(GError **error, RokErrorCode code, const RokJsonDoc *doc, const char *path,
                        gboolean at_key, const char *format, ...) {
  va_list args;
  va_start(args, format);
  doc_error_valist(error, code, doc, path, at_key, format, args);
  va_end(args);
}

void rok_json_error(GError **error, const RokJsonDoc *doc, const char *path, const char *format, ...) {
  va_list args;
  va_start(args, format);
  doc_error_valist(error, ROK_ERROR_INPUT, doc, path != NULL ? path : "", FALSE, format, args);
  va_end(args);
}

/* ---- overrides ---- */

/* "gpu.memory=40GiB" -> "gpu.memory", "40GiB"; keys are dotted names. */
static gboolean split_assignment(const char *assignment, const char *origin, char **key, const char **value,
                                 GError **error) {
  const char *eq = strchr(assignment, '=');
  if (eq == NULL || eq == assignment) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "%s: expected KEY=VALUE, such as micro_batch=8", origin);
    return FALSE;
  }
  *key = g_strndup(assignment, (gsize)(eq - assignment));
  *value = eq + 1;
  g_auto(GStrv) parts = g_strsplit(*key, ".", -1);
  for (char **part = parts; *part != NULL; part++) {
    if ((*part)[0] == '\0' || strpbrk(*part, "[] \t\"") != NULL) {
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                  "%s: invalid key \"%s\" (expected names separated by dots, such as gpu.memory)", origin, *key);
      g_clear_pointer(key, g_free);
      return FALSE;
    }
  }
  return TRUE;
}

/* The value as a JSON literal when the whole text is one, else as a string.
 * A literal that is valid JSON but does not fit (an integer beyond 64 bits)
 * is an error rather than a surprising string. */
static gboolean override_value(const char *text, const char *origin, json_object **value, char **literal,
                               GError **error) {
  gsize length = strlen(text), at = 0;
  const char *reason = NULL;
  g_autofree char *message = NULL;
  *literal = NULL;
  if (strspn(text, " \t\r\n") == length || !parse_strict(text, length, value, &at, &reason)) {
    *value = json_object_new_string(text);
    return TRUE;
  }
  switch (core_json_text_check(text, length, &at, &message)) {
  case ROK_JSON_TEXT_OK:
    break;
  case ROK_JSON_TEXT_SYNTAX: /* NaN, 'x', 1.: not JSON, so a string */
    json_object_put(*value);
    *value = json_object_new_string(text);
    return TRUE;
  case ROK_JSON_TEXT_RANGE:
    json_object_put(*value);
    *value = NULL;
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: %s", origin, message);
    return FALSE;
  }
  json_type type = json_object_get_type(*value);
  if (type != json_type_string && type != json_type_object && type != json_type_array)
    *literal = g_strstrip(g_strdup(text));
  return TRUE;
}

/* The object that will hold the last part of `key`, creating missing
 * intermediate objects; NULL (and an error) when a part is not an object. */
static json_object *override_parent(RokJsonDoc *doc, char **parts, const char *origin, GError **error) {
  json_object *parent = doc->root;
  if (!json_object_is_type(parent, json_type_object)) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "%s: %s does not hold a JSON object", origin, doc->name);
    return NULL;
  }
  for (gsize i = 0; parts[i + 1] != NULL; i++) {
    json_object *child = NULL;
    if (!json_object_object_get_ex(parent, parts[i], &child) || child == NULL) {
      child = json_object_new_object();
      json_object_object_add(parent, parts[i], child);
    } else if (!json_object_is_type(child, json_type_object)) {
      g_autoptr(GString) prefix = g_string_new(parts[0]);
      for (gsize j = 1; j <= i; j++)
        g_string_append_printf(prefix, ".%s", parts[j]);
      g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "%s: \"%s\" is not an object", origin, prefix->str);
      return NULL;
    }
    parent = child;
  }
  return parent;
}

gboolean rok_json_doc_set(RokJsonDoc *doc, const char *assignment, const char *origin, GError **error) {
  g_return_val_if_fail(doc != NULL && assignment != NULL, FALSE);
  if (origin == NULL)
    origin = assignment;
  g_autofree char *key = NULL;
  const char *text = NULL;
  if (!split_assignment(assignment, origin, &key, &text, error))
    return FALSE;
  json_object *value = NULL;
  g_autofree char *literal = NULL;
  if (!override_value(text, origin, &value, &literal, error))
    return FALSE;
  g_auto(GStrv) parts = g_strsplit(key, ".", -1);
  json_object *parent = override_parent(doc, parts, origin, error);
  if (parent == NULL) {
    json_object_put(value);
    return FALSE;
  }
  json_object_object_add(parent, parts[g_strv_length(parts) - 1], value);
  Override *o = g_new0(Override, 1);
  o->path = g_steal_pointer(&key);
  o->origin = g_strdup(origin);
  o->literal = g_steal_pointer(&literal);
  g_ptr_array_add(doc->overrides, o);
  return TRUE;
}
