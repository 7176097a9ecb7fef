/* A strict JSON scanner (RFC 8259) over text json-c has already accepted:
 * see json-text.h for why it exists. It never allocates per value, only
 * per object key when checking for duplicates. */
#include "json-text.h"

#include <math.h>
#include <string.h>

/* As json_tokener_new_ex(64): at most 64 levels of values, the top-level
 * value being level 1 (64 nested empty arrays, or 63 around a number). */
#define MAX_DEPTH 64

typedef struct {
  const char *text;
  gsize length;
  gsize pos;
  gboolean check;  /* full check: duplicate keys and number ranges too */
  gsize values;     /* values scanned so far */
  gsize max_values; /* 0: no limit */
  GPtrArray *keys; /* check: per depth, the keys seen in the open object */
  GString *key;    /* the current key, unescaped */
  RokJsonTextStatus status;
  gsize error_at;
  char *message;
} Scanner;

static char peek(const Scanner *sc) {
  return sc->pos < sc->length ? sc->text[sc->pos] : '\0';
}

static gboolean fail(Scanner *sc, RokJsonTextStatus status, gsize at, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

static gboolean fail(Scanner *sc, RokJsonTextStatus status, gsize at, const char *format, ...) {
  if (sc->status == ROK_JSON_TEXT_OK) {
    va_list args;
    va_start(args, format);
    sc->message = g_strdup_vprintf(format, args);
    va_end(args);
    sc->status = status;
    sc->error_at = at;
  }
  return FALSE;
}

static void skip_ws(Scanner *sc) {
  while (sc->pos < sc->length) {
    char c = sc->text[sc->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      break;
    sc->pos++;
  }
}

static gboolean expect(Scanner *sc, char c) {
  skip_ws(sc);
  if (peek(sc) != c)
    return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos, "expected '%c'", c);
  sc->pos++;
  skip_ws(sc);
  return TRUE;
}

static gboolean scan_value(Scanner *sc, int depth);

/* ---- strings ---- */

static int hex_digit(char c) {
  return g_ascii_isxdigit(c) ? g_ascii_xdigit_value(c) : -1;
}

/* Four hex digits at `at`, or -1. */
static gint32 hex4(const Scanner *sc, gsize at) {
  if (at + 4 > sc->length)
    return -1;
  gint32 value = 0;
  for (int i = 0; i < 4; i++) {
    int d = hex_digit(sc->text[at + i]);
    if (d < 0)
      return -1;
    value = value * 16 + d;
  }
  return value;
}

/* After "\u": one code point, joining a surrogate pair; a lone surrogate
 * becomes U+FFFD as json-c makes it. */
static gboolean scan_unicode_escape(Scanner *sc, GString *decoded) {
  gint32 unit = hex4(sc, sc->pos);
  if (unit < 0)
    return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos, "\\u must be followed by four hex digits");
  sc->pos += 4;
  gunichar c = (gunichar)unit;
  if (unit >= 0xD800 && unit <= 0xDBFF && sc->pos + 1 < sc->length && sc->text[sc->pos] == '\\' &&
      sc->text[sc->pos + 1] == 'u') {
    gint32 low = hex4(sc, sc->pos + 2);
    if (low >= 0xDC00 && low <= 0xDFFF) {
      c = 0x10000 + (((gunichar)unit - 0xD800) << 10) + ((gunichar)low - 0xDC00);
      sc->pos += 6;
    }
  }
  /* json-c would make it U+FFFD: a name silently changed. RFC 7493 (I-JSON)
   * forbids lone surrogates. */
  if (c >= 0xD800 && c <= 0xDFFF)
    return fail(sc, ROK_JSON_TEXT_RANGE, sc->pos - 6, "\\u%04X is a lone surrogate, not a character", (unsigned)c);
  if (decoded != NULL) {
    char utf8[6];
    g_string_append_len(decoded, utf8, g_unichar_to_utf8(c, utf8));
  }
  return TRUE;
}

static gboolean scan_escape(Scanner *sc, GString *decoded) {
  static const char from[] = "\"\\/bfnrt";
  static const char to[] = "\"\\/\b\f\n\r\t";
  char c = peek(sc);
  const char *at = c != '\0' ? strchr(from, c) : NULL;
  sc->pos++;
  if (c == 'u')
    return scan_unicode_escape(sc, decoded);
  if (at == NULL)
    return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos - 2, "invalid escape in a string");
  if (decoded != NULL)
    g_string_append_c(decoded, to[at - from]);
  return TRUE;
}

/* A string at sc->pos; its unescaped text goes to `decoded` when given. */
static gboolean scan_string(Scanner *sc, GString *decoded) {
  gsize start = sc->pos++;
  if (decoded != NULL)
    g_string_truncate(decoded, 0);
  for (;;) {
    gsize run = sc->pos;
    while (sc->pos < sc->length) {
      guchar c = (guchar)sc->text[sc->pos];
      if (c == '"' || c == '\\' || c < 0x20)
        break;
      sc->pos++;
    }
    if (decoded != NULL)
      g_string_append_len(decoded, sc->text + run, (gssize)(sc->pos - run));
    if (sc->pos >= sc->length)
      return fail(sc, ROK_JSON_TEXT_SYNTAX, start, "unterminated string");
    char c = sc->text[sc->pos++];
    if (c == '"')
      return TRUE;
    if (c != '\\')
      return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos - 1,
                  "control character in a string (write it as an escape such as \\n or \\t)");
    if (!scan_escape(sc, decoded))
      return FALSE;
  }
}

/* ---- numbers ---- */

static gsize skip_digits(Scanner *sc) {
  gsize start = sc->pos;
  while (g_ascii_isdigit(peek(sc)))
    sc->pos++;
  return sc->pos - start;
}

/* An integer literal must fit gint64 (negative) or guint64, or json-c
 * would silently saturate it. */
static gboolean check_integer(Scanner *sc, gsize start) {
  gboolean negative = sc->text[start] == '-';
  const char *digits = sc->text + start + (negative ? 1 : 0);
  gsize n = sc->text + sc->pos - digits;
  guint64 limit = negative ? (guint64)G_MAXINT64 + 1 : G_MAXUINT64;
  guint64 value = 0;
  for (gsize i = 0; i < n && n >= 19; i++) {
    guint d = (guint)(digits[i] - '0');
    if (value > (limit - d) / 10)
      return fail(sc, ROK_JSON_TEXT_RANGE, start, "integer %s%.*s does not fit in 64 bits",
                  negative ? "-" : "", (int)MIN(n, 40), digits);
    value = value * 10 + d;
  }
  return TRUE;
}

/* A number beyond the double range would read as infinity. Only numbers
 * whose exponent or length puts them near the limit are converted. */
static gboolean check_double(Scanner *sc, gsize start, gsize n_int, long exponent) {
  if ((long)n_int + exponent < 300)
    return TRUE;
  g_autofree char *copy = g_strndup(sc->text + start, sc->pos - start);
  if (isinf(g_ascii_strtod(copy, NULL)))
    return fail(sc, ROK_JSON_TEXT_RANGE, start, "number %.40s is too large", copy);
  return TRUE;
}

static long read_exponent(Scanner *sc) {
  gboolean negative = FALSE;
  if (peek(sc) == '+' || peek(sc) == '-')
    negative = sc->text[sc->pos++] == '-';
  long value = 0;
  for (; g_ascii_isdigit(peek(sc)); sc->pos++)
    value = MIN(value * 10 + (sc->text[sc->pos] - '0'), 1000000L);
  return negative ? -value : value;
}

static gboolean scan_number(Scanner *sc) {
  gsize start = sc->pos;
  if (peek(sc) == '-')
    sc->pos++;
  if (peek(sc) == 'I')
    return fail(sc, ROK_JSON_TEXT_SYNTAX, start, "-Infinity is not a JSON number");
  gsize n_int = peek(sc) == '0' ? (sc->pos++, 1) : skip_digits(sc);
  if (n_int == 0)
    return fail(sc, ROK_JSON_TEXT_SYNTAX, start, "invalid number");
  gboolean integer = TRUE;
  long exponent = 0;
  if (peek(sc) == '.') {
    sc->pos++;
    integer = FALSE;
    if (skip_digits(sc) == 0)
      return fail(sc, ROK_JSON_TEXT_SYNTAX, start, "digits must follow the decimal point");
  }
  if (peek(sc) == 'e' || peek(sc) == 'E') {
    sc->pos++;
    integer = FALSE;
    gsize at = sc->pos + ((peek(sc) == '+' || peek(sc) == '-') ? 1 : 0);
    exponent = read_exponent(sc);
    if (sc->pos == at)
      return fail(sc, ROK_JSON_TEXT_SYNTAX, start, "digits must follow the exponent");
  }
  if (!sc->check)
    return TRUE;
  return integer ? check_integer(sc, start) : check_double(sc, start, n_int, exponent);
}

/* true, false, null; a helpful word about NaN and Infinity. */
static gboolean scan_word(Scanner *sc) {
  gsize start = sc->pos;
  while (g_ascii_isalpha(peek(sc)))
    sc->pos++;
  gsize n = sc->pos - start;
  const char *word = sc->text + start;
  if ((n == 4 && memcmp(word, "true", 4) == 0) || (n == 5 && memcmp(word, "false", 5) == 0) ||
      (n == 4 && memcmp(word, "null", 4) == 0))
    return TRUE;
  if ((n == 3 && memcmp(word, "NaN", 3) == 0) || (n == 8 && memcmp(word, "Infinity", 8) == 0))
    return fail(sc, ROK_JSON_TEXT_SYNTAX, start, "%.*s is not a JSON number", (int)n, word);
  return fail(sc, ROK_JSON_TEXT_SYNTAX, start, "unexpected word \"%.*s\"", (int)MIN(n, 40), word);
}

/* ---- containers ---- */

/* The set of keys of the object open at `depth`, emptied. */
static GHashTable *key_set(Scanner *sc, int depth) {
  while (sc->keys->len <= (guint)depth)
    g_ptr_array_add(sc->keys, g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL));
  GHashTable *set = g_ptr_array_index(sc->keys, depth);
  g_hash_table_remove_all(set);
  return set;
}

static gboolean scan_key(Scanner *sc, GHashTable *seen) {
  if (peek(sc) != '"')
    return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos,
                peek(sc) == '\'' ? "keys must be in double quotes" : "expected a key in double quotes");
  gsize at = sc->pos;
  if (!scan_string(sc, seen != NULL ? sc->key : NULL))
    return FALSE;
  if (seen == NULL)
    return TRUE;
  /* json-c keys are C strings: "hid\u0000den" would silently become "hid". */
  if (strlen(sc->key->str) != sc->key->len)
    return fail(sc, ROK_JSON_TEXT_RANGE, at, "a key must not contain \\u0000");
  if (g_hash_table_contains(seen, sc->key->str))
    return fail(sc, ROK_JSON_TEXT_RANGE, at, "duplicate key \"%s\"", sc->key->str);
  g_hash_table_add(seen, g_strdup(sc->key->str));
  return TRUE;
}

static gboolean scan_object(Scanner *sc, int depth) {
  GHashTable *seen = sc->check ? key_set(sc, depth) : NULL;
  sc->pos++;
  skip_ws(sc);
  if (peek(sc) == '}') {
    sc->pos++;
    return TRUE;
  }
  for (;;) {
    if (!scan_key(sc, seen) || !expect(sc, ':') || !scan_value(sc, depth + 1))
      return FALSE;
    skip_ws(sc);
    char c = peek(sc);
    sc->pos++;
    if (c == '}')
      return TRUE;
    if (c != ',')
      return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos - 1, "expected ',' or '}'");
    skip_ws(sc);
  }
}

static gboolean scan_array(Scanner *sc, int depth) {
  sc->pos++;
  skip_ws(sc);
  if (peek(sc) == ']') {
    sc->pos++;
    return TRUE;
  }
  for (;;) {
    if (!scan_value(sc, depth + 1))
      return FALSE;
    skip_ws(sc);
    char c = peek(sc);
    sc->pos++;
    if (c == ']')
      return TRUE;
    if (c != ',')
      return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos - 1, "expected ',' or ']'");
    skip_ws(sc);
  }
}

/* One value at sc->pos (no leading whitespace) inside `depth` containers. */
static gboolean scan_value(Scanner *sc, int depth) {
  char c = peek(sc);
  if (depth >= MAX_DEPTH)
    return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos, "nesting too deep");
  /* json-c gives every object a hash table of 16 entries: ~8 values' worth. */
  sc->values += c == '{' ? ROK_JSON_OBJECT_COST : 1;
  if (sc->max_values > 0 && sc->values > sc->max_values)
    return fail(sc, ROK_JSON_TEXT_RANGE, sc->pos,
                "too many values (more than %" G_GSIZE_FORMAT ", an object counting as %d)", sc->max_values,
                ROK_JSON_OBJECT_COST);
  if (c == '{')
    return scan_object(sc, depth);
  if (c == '[')
    return scan_array(sc, depth);
  if (c == '"')
    return scan_string(sc, NULL);
  if (c == '-' || g_ascii_isdigit(c))
    return scan_number(sc);
  if (g_ascii_isalpha(c))
    return scan_word(sc);
  if (c == '\'')
    return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos, "strings must be in double quotes");
  if (sc->pos >= sc->length)
    return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos, "unexpected end of data");
  return fail(sc, ROK_JSON_TEXT_SYNTAX, sc->pos, "unexpected character");
}

RokJsonTextStatus core_json_text_check(const char *text, gsize length, gsize *offset, char **message) {
  Scanner sc = {.text = text, .length = length, .check = TRUE};
  sc.keys = g_ptr_array_new_with_free_func((GDestroyNotify)g_hash_table_unref);
  sc.key = g_string_new(NULL);
  skip_ws(&sc);
  if (scan_value(&sc, 0)) {
    skip_ws(&sc);
    if (sc.pos < length)
      fail(&sc, ROK_JSON_TEXT_SYNTAX, sc.pos, "unexpected text after the JSON value");
  }
  g_ptr_array_unref(sc.keys);
  g_string_free(sc.key, TRUE);
  if (sc.status != ROK_JSON_TEXT_OK) {
    *offset = sc.error_at;
    *message = sc.message;
  }
  return sc.status;
}

gboolean core_json_text_within(const char *text, gsize length, gsize max_values, gsize *offset, char **message) {
  Scanner sc = {.text = text, .length = length, .max_values = max_values};
  skip_ws(&sc);
  scan_value(&sc, 0);
  if (sc.status != ROK_JSON_TEXT_RANGE) {
    g_free(sc.message);
    return TRUE;
  }
  *offset = sc.error_at;
  *message = sc.message;
  return FALSE;
}

/* ---- locating ---- */

/* Moves into the object at sc->pos to the value of member `name`. */
static gboolean enter_member(Scanner *sc, const char *name, gsize n, gsize *key_at, GString *key) {
  if (peek(sc) != '{')
    return FALSE;
  sc->pos++;
  skip_ws(sc);
  while (peek(sc) == '"') {
    *key_at = sc->pos;
    if (!scan_string(sc, key) || !expect(sc, ':'))
      return FALSE;
    if (key->len == n && memcmp(key->str, name, n) == 0)
      return TRUE;
    if (!scan_value(sc, 0))
      return FALSE;
    skip_ws(sc);
    if (peek(sc) != ',')
      return FALSE;
    sc->pos++;
    skip_ws(sc);
  }
  return FALSE;
}

/* Moves into the array at sc->pos to element `index`. */
static gboolean enter_element(Scanner *sc, guint64 index) {
  if (peek(sc) != '[')
    return FALSE;
  sc->pos++;
  skip_ws(sc);
  if (peek(sc) == ']')
    return FALSE;
  for (guint64 i = 0; i < index; i++) {
    if (!scan_value(sc, 0))
      return FALSE;
    skip_ws(sc);
    if (peek(sc) != ',')
      return FALSE;
    sc->pos++;
    skip_ws(sc);
  }
  return TRUE;
}

/* One step of a path: ".name", "name" (first) or "[index]". */
static gboolean follow_step(Scanner *sc, const char **path, gboolean first, gsize *key_at, GString *key) {
  const char *p = *path;
  if (*p == '[') {
    char *end = NULL;
    guint64 index = g_ascii_strtoull(p + 1, &end, 10);
    if (end == p + 1 || !g_ascii_isdigit(p[1]) || *end != ']')
      return FALSE;
    *path = end + 1;
    *key_at = sc->pos;
    return enter_element(sc, index);
  }
  if (!first && *p++ != '.')
    return FALSE;
  gsize n = strcspn(p, ".[");
  *path = p + n;
  return n > 0 && enter_member(sc, p, n, key_at, key);
}

gboolean core_json_text_locate(const char *text, gsize length, const char *path, gsize *value_offset,
                              gsize *key_offset) {
  Scanner sc = {.text = text, .length = length};
  g_autoptr(GString) key = g_string_new(NULL);
  skip_ws(&sc);
  gsize key_at = sc.pos;
  for (const char *p = path; *p != '\0';) {
    if (!follow_step(&sc, &p, p == path, &key_at, key)) {
      g_free(sc.message);
      return FALSE;
    }
  }
  g_free(sc.message);
  *value_offset = sc.pos;
  *key_offset = key_at;
  return TRUE;
}

void core_json_text_position(const char *text, gsize length, gsize offset, gsize *line, gsize *column) {
  offset = MIN(offset, length);
  gsize line_start = 0;
  *line = 1;
  for (const char *p = text; (p = memchr(p, '\n', offset - (gsize)(p - text))) != NULL; p++) {
    (*line)++;
    line_start = (gsize)(p - text) + 1;
  }
  /* Count characters, not bytes: skip UTF-8 continuation bytes. */
  *column = 1;
  for (gsize i = line_start; i < offset; i++)
    if (((guchar)text[i] & 0xC0) != 0x80)
      (*column)++;
}
