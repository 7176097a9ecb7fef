/* The JSON text scanner behind RokJsonDoc (private to src/core).
 *
 * json-c builds the tree but forgets the text: it keeps the last of two
 * duplicate keys, saturates integers that do not fit 64 bits, and even in
 * strict mode accepts NaN, Infinity, 'single quotes', "1." and raw control
 * characters in strings. This scanner walks the text itself, in one linear
 * pass, to reject those, and later walks it again along a path to say where
 * a value is written. */
#pragma once

#include <glib.h>

typedef enum {
  ROK_JSON_TEXT_OK,
  ROK_JSON_TEXT_SYNTAX, /* not strict JSON: NaN, 'x', 1., a raw tab in a string, ... */
  ROK_JSON_TEXT_RANGE,  /* well formed, but a duplicate key or a number no C type holds */
} RokJsonTextStatus;

/* Checks the whole text (one JSON value, optional whitespace around it).
 * Otherwise returns the problem, sets *offset to the byte where it is and
 * *message to a new string describing it. */
RokJsonTextStatus core_json_text_check(const char *text, gsize length, gsize *offset, char **message);

/* What an object costs, counted in values: json-c gives each a hash table
 * (about 700 bytes) where a number takes about 80. */
#define ROK_JSON_OBJECT_COST 8

/* Counts the values of the text (objects at ROK_JSON_OBJECT_COST), without
 * the checks above, to refuse before json-c builds a tree of them. FALSE
 * when they come to more than `max_values`, with *offset at the value past
 * the limit and *message saying so; TRUE otherwise, also when the text is
 * not JSON (the parser says why). */
gboolean core_json_text_within(const char *text, gsize length, gsize max_values, gsize *offset, char **message);

/* Finds the value at `path` ("gpu.memory", "ops[3].inputs[0]", "" for the
 * whole text): *value_offset is where it starts, *key_offset where the key
 * naming it starts (the value itself for array elements and the root).
 * FALSE when the text has no such value. Keys containing '.' or '[' cannot
 * be named by a path. */
gboolean core_json_text_locate(const char *text, gsize length, const char *path, gsize *value_offset,
                              gsize *key_offset);

/* The 1-based line and column of a byte offset; columns count characters
 * (UTF-8), not bytes. */
void core_json_text_position(const char *text, gsize length, gsize offset, gsize *line, gsize *column);
