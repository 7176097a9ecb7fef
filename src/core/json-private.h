/* What the files of the JSON reader share (private to src/core). */
#pragma once

#include "rok/core.h"

/* rok_json_error() with a chosen error code; `at_key` points the position at
 * the key naming the value instead of the value (for unknown keys). */
void core_json_doc_error(GError **error, RokErrorCode code, const RokJsonDoc *doc, const char *path,
                        gboolean at_key, const char *format, ...) G_GNUC_PRINTF(6, 7);

/* When the value at exactly `path` was set by an override whose value JSON
 * read as a number, true, false or null, the text of that value ("8",
 * "true"): a string option such as --set name=7 still means the string. */
const char *core_json_doc_override_literal(const RokJsonDoc *doc, const char *path);

/* "gpu" + "memory" -> "gpu.memory"; "" + "gpu" -> "gpu". */
char *core_json_path_join(const char *parent, const char *key);

/* A value as messages show it: "true", "1.5", "\"abc\"", "an object". */
char *core_json_describe(json_object *value);

/* `names` as "\"a\", \"b\", \"c\"". */
char *core_json_quote_list(const char *const *names);

/* Member `key` of `obj` (an absent object has no members). FALSE only for a
 * missing required member; *present says whether it is there (a JSON null
 * is there, as NULL). */
gboolean core_json_lookup(const RokJsonObj *obj, const char *key, gboolean required, json_object **value,
                         gboolean *present, GError **error);

/* An error about member `key` of `obj`; returns FALSE. */
gboolean core_json_member_error(const RokJsonObj *obj, const char *key, GError **error, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

/* "must be EXPECTED, not FOUND" about member `key`; returns FALSE. */
gboolean core_json_wrong_value(const RokJsonObj *obj, const char *key, json_object *value, const char *expected,
                              GError **error);
