/* Reading JSON files people write by hand, with errors that say where.
 *
 * A RokJsonDoc is a parsed file (json-c, strict mode) plus its text, so that
 * any value can be located again as file:line:col when it turns out to be
 * wrong. Parsing rejects syntax errors (file:line:col), duplicate keys
 * (file:line:col of the second one) and nesting deeper than 64.
 *
 * Typed getters read one member of an object. An absent member is an error
 * when `required`, otherwise the output keeps the default the caller put
 * there. Every wrong value is an error of kind ROK_ERROR_INPUT worded as
 *   configs/models/x.json:12:7: "gpu.memory": must be a size such as "40GiB"
 * Integers that do not fit 64 bits, NaN and infinities are always rejected.
 *
 * Command-line overrides (`--set key=value`) are written into the document
 * with rok_json_doc_set(); an error in an overridden value names the option
 * instead of a file position.
 *
 * Writing: rok_json_write_file() writes atomically (temporary file + rename),
 * rok_json_to_string() gives the canonical pretty text rok prints. Doubles
 * are written with 17 significant digits, so output is byte-identical
 * across runs. */
#pragma once

#include <glib.h>
#include <json-c/json.h>

G_BEGIN_DECLS

typedef struct _RokJsonDoc RokJsonDoc;

RokJsonDoc *rok_json_doc_load(const char *path, GError **error);
/* `name` is what messages call the text (a path, or "<stdin>"). */
RokJsonDoc *rok_json_doc_parse(const char *name, const char *text, gsize length, GError **error);
void rok_json_doc_free(RokJsonDoc *doc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokJsonDoc, rok_json_doc_free)

const char *rok_json_doc_name(const RokJsonDoc *doc);
json_object *rok_json_doc_root(const RokJsonDoc *doc);

/* Apply "key=value" to the root object (key may be dotted: "gpu.memory").
 * The value is read as a JSON literal when it is one (8, true, 0.5, "x") and
 * as a string otherwise (flash, 40GiB). `origin` is how messages name it,
 * e.g. "--set micro_batch=8". Fails on a malformed assignment. */
gboolean rok_json_doc_set(RokJsonDoc *doc, const char *assignment, const char *origin, GError **error);

/* Set `error` (ROK_ERROR_INPUT) to a message about the value at `path`
 * ("gpu.memory", "ops[3].inputs[0]"; "" for the whole document), prefixed
 * with file:line:col when the value can be found in the text. */
void rok_json_error(GError **error, const RokJsonDoc *doc, const char *path, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

/* One object inside a document, with its path for messages. */
typedef struct {
  const RokJsonDoc *doc;
  json_object *obj;
  char *path; /* "" for the root, "gpu", "ops[3]"; owned */
} RokJsonObj;

void rok_json_obj_clear(RokJsonObj *obj);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RokJsonObj, rok_json_obj_clear)

/* The root, which must be an object. */
gboolean rok_json_root(const RokJsonDoc *doc, RokJsonObj *out, GError **error);
/* Member `key` of `parent`, which must be an object. Returns FALSE on error;
 * when absent and not required returns TRUE with out->obj == NULL. */
gboolean rok_json_child(const RokJsonObj *parent, const char *key, gboolean required, RokJsonObj *out,
                        GError **error);
/* Element `index` of the array member `key` (which the caller got with
 * rok_json_get_array), which must be an object. */
gboolean rok_json_element(const RokJsonObj *parent, const char *key, json_object *array, gsize index,
                          RokJsonObj *out, GError **error);

/* Reject members not in the NULL-terminated list `keys`: a typo must not be
 * silently ignored. The message names the unknown key and, when one is
 * close, suggests it. */
gboolean rok_json_only_keys(const RokJsonObj *obj, const char *const *keys, GError **error);

/* Typed getters. Each returns FALSE and sets `error` when the member is
 * present but wrong, or absent and `required`. */
gboolean rok_json_get_string(const RokJsonObj *obj, const char *key, gboolean required, char **out,
                             GError **error); /* *out is replaced by a new string */
gboolean rok_json_get_enum(const RokJsonObj *obj, const char *key, gboolean required,
                           const char *const *names, int *out, GError **error); /* index in names */
gboolean rok_json_get_bool(const RokJsonObj *obj, const char *key, gboolean required, gboolean *out,
                           GError **error);
gboolean rok_json_get_uint(const RokJsonObj *obj, const char *key, gboolean required, guint64 min,
                           guint64 max, guint64 *out, GError **error); /* integer literal */
gboolean rok_json_get_int(const RokJsonObj *obj, const char *key, gboolean required, gint64 min,
                          gint64 max, gint64 *out, GError **error);
gboolean rok_json_get_double(const RokJsonObj *obj, const char *key, gboolean required, double min,
                             double max, double *out, GError **error); /* finite, min <= x <= max */
/* Sizes, rates and times: a number in base units or a string with units
 * (see units.h). Sizes and rates must be positive; times non-negative. */
gboolean rok_json_get_size(const RokJsonObj *obj, const char *key, gboolean required, guint64 *bytes,
                           GError **error);
gboolean rok_json_get_rate(const RokJsonObj *obj, const char *key, gboolean required, double *per_second,
                           GError **error);
gboolean rok_json_get_time(const RokJsonObj *obj, const char *key, gboolean required, gint64 *ns,
                           GError **error);
/* An array member; *out is borrowed from the document (NULL when absent). */
gboolean rok_json_get_array(const RokJsonObj *obj, const char *key, gboolean required, json_object **out,
                            GError **error);
/* An array of integers each in [0, max], appended to `out` (GArray of guint). */
gboolean rok_json_get_index_array(const RokJsonObj *obj, const char *key, gboolean required, guint max,
                                  GArray *out, GError **error);

/* An array of at most `capacity` integers each in [0, max], into `out`;
 * *length is how many there were. */
gboolean rok_json_get_uint_array(const RokJsonObj *obj, const char *key, gboolean required, guint64 max,
                                 guint64 *out, gsize capacity, gsize *length, GError **error);

/* Check a file's "format" member: it must equal `expected` ("rok-trace/1").
 * Anything else, newer versions included, is ROK_ERROR_FORMAT. */
gboolean rok_json_check_format(const RokJsonObj *root, const char *expected, GError **error);

/* Writing. Doubles keep 17 significant digits; non-finite doubles are
 * written as null (json-c would write NaN, which is not JSON). */
json_object *rok_json_new_double(double value);
/* Canonical text: two-space pretty print, no escaped slashes, final newline. */
char *rok_json_to_string(json_object *value);
/* Write the canonical text to `path` atomically; on failure nothing is left. */
gboolean rok_json_write_file(json_object *value, const char *path, GError **error);

G_END_DECLS
