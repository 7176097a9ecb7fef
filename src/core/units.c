/* Parsing and printing sizes, rates, times and counts.
 *
 * Sizes are computed exactly from the decimal text (never through a double),
 * so "1.1kB" is 1100 bytes and "1.5KiB" is 1536; a text whose value is not a
 * whole number of bytes ("1.5B", "0.1KiB") is rejected rather than rounded,
 * because a silently rounded size hides a typo. Rates and times go through
 * g_ascii_strtod (C locale); times are rounded to the nearest nanosecond. */
#include "rok/core.h"


#include <math.h>
#include <string.h>

/* A decimal number as written: [+-] digits [. digits] [e [+-] digits], where
 * either digit run may be empty but not both ("4." and ".5" are fine). */
typedef struct {
  gboolean negative;
  const char *int_digits;
  gsize n_int;
  const char *frac_digits;
  gsize n_frac;
  long exponent; /* saturated at +-EXPONENT_CAP: beyond that all values overflow or vanish */
  gsize length;  /* bytes of text the number takes */
} Decimal;

#define EXPONENT_CAP 100000L

static gsize count_digits(const char *s) {
  gsize n = 0;
  while (g_ascii_isdigit(s[n]))
    n++;
  return n;
}

/* Reads the number at the start of `s`; FALSE if there is none. */
static gboolean lex_decimal(const char *s, Decimal *d) {
  const char *p = s;
  memset(d, 0, sizeof *d);
  if (*p == '+' || *p == '-')
    d->negative = *p++ == '-';
  d->int_digits = p;
  d->n_int = count_digits(p);
  p += d->n_int;
  if (*p == '.') {
    d->frac_digits = p + 1;
    d->n_frac = count_digits(p + 1);
    p += 1 + d->n_frac;
  }
  if (d->n_int + d->n_frac == 0)
    return FALSE;
  /* An 'e' is an exponent only when digits follow: "1EB" is one exabyte. */
  const char *e = p;
  if (*e == 'e' || *e == 'E') {
    e++;
    gboolean negative_exponent = FALSE;
    if (*e == '+' || *e == '-')
      negative_exponent = *e++ == '-';
    if (g_ascii_isdigit(*e)) {
      long value = 0;
      for (; g_ascii_isdigit(*e); e++)
        value = MIN(value * 10 + (*e - '0'), EXPONENT_CAP);
      d->exponent = negative_exponent ? -value : value;
      p = e;
    }
  }
  d->length = (gsize)(p - s);
  return TRUE;
}

static gboolean fail(GError **error, const char *what, const char *text, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

/* Every parser error reads: invalid WHAT "TEXT": REASON. */
static gboolean fail(GError **error, const char *what, const char *text, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *reason = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "invalid %s \"%s\": %s", what, text, reason);
  return FALSE;
}

/* Splits the (whitespace-trimmed) text into its number and its unit, and
 * rejects what no parser accepts: no number, not finite, negative. */
static gboolean split_number(const char *what, const char *text, const char *example, char **trimmed,
                             Decimal *number, const char **unit, GError **error) {
  *trimmed = g_strstrip(g_strdup(text));
  if (!lex_decimal(*trimmed, number)) {
    char *end = NULL;
    double value = g_ascii_strtod(*trimmed, &end);
    if (end != *trimmed && !isfinite(value))
      return fail(error, what, text, "not a finite number");
    return fail(error, what, text, "expected %s", example);
  }
  if (number->negative)
    return fail(error, what, text, "must not be negative");
  *unit = *trimmed + number->length;
  while (**unit == ' ')
    (*unit)++;
  return TRUE;
}

/* The value of the number's text as a double (C locale). */
static double decimal_value(const char *trimmed, const Decimal *number) {
  g_autofree char *copy = g_strndup(trimmed, number->length);
  return g_ascii_strtod(copy, NULL);
}

/* Unit prefixes: "" k K M G T P E (powers of 1000) and Ki Mi Gi Ti Pi Ei
 * (powers of 1024). Advances *p past the prefix; FALSE when there is none. */
static gboolean lex_prefix(const char **p, int *power, gboolean *binary) {
  static const char letters[] = "kMGTPE";
  char c = **p == 'K' ? 'k' : **p;
  const char *at = c != '\0' ? strchr(letters, c) : NULL;
  if (at == NULL) {
    *power = 0;
    *binary = FALSE;
    return FALSE;
  }
  *power = (int)(at - letters) + 1;
  *binary = (*p)[1] == 'i' && **p != 'k'; /* "Ki", never "ki" */
  *p += *binary ? 2 : 1;
  return TRUE;
}

/* ---- sizes ---- */

static const char size_units[] = "B, kB, MB, GB, TB, PB, EB, KiB, MiB, GiB, TiB, PiB, EiB";

/* The multiplier of a size unit as (power of ten, power of two). */
static gboolean size_unit(const char *unit, int *ten, int *two) {
  int power = 0;
  gboolean binary = FALSE;
  const char *p = unit;
  if (*p == '\0') {
    *ten = *two = 0;
    return TRUE;
  }
  lex_prefix(&p, &power, &binary);
  if (strcmp(p, "B") != 0)
    return FALSE;
  *ten = binary ? 0 : 3 * power;
  *two = binary ? 10 * power : 0;
  return TRUE;
}

static char *size_unit_any_case(const char *unit);

static gboolean unknown_size_unit(GError **error, const char *text, const char *unit) {
  const char *p = unit;
  int power;
  gboolean binary;
  if (lex_prefix(&p, &power, &binary) && *p == '\0') {
    char letter = unit[0] == 'k' ? 'k' : unit[0];
    return fail(error, "size", text, "unknown unit \"%s\"; did you mean \"%cB\" or \"%ciB\"?", unit, letter,
                letter == 'k' ? 'K' : letter);
  }
  if (p[0] == 'b' && p[1] == '\0')
    return fail(error, "size", text, "unknown unit \"%s\" (\"b\" would be bits; sizes are in bytes, \"B\")",
                unit);
  g_autofree char *spelled = size_unit_any_case(unit);
  if (spelled != NULL) {
    gboolean is_binary = strlen(spelled) == 3;
    g_autofree char *other = g_strdup_printf("%c%s", spelled[0] == 'k' ? 'K' : spelled[0] == 'K' ? 'k' : spelled[0],
                                             is_binary ? "B" : "iB");
    return fail(error, "size", text, "unknown unit \"%s\"; did you mean \"%s\" (powers of %s) or \"%s\"?", unit,
                spelled, is_binary ? "1024" : "1000", other);
  }
  return fail(error, "size", text, "unknown unit \"%s\" (expected %s)", unit, size_units);
}

/* v * 10^n, FALSE on overflow. */
static gboolean times_ten(guint64 *v, long n) {
  for (long i = 0; i < n; i++) {
    if (*v > G_MAXUINT64 / 10)
      return FALSE;
    *v *= 10;
  }
  return TRUE;
}

typedef enum { EXACT_OK, EXACT_OVERFLOW, EXACT_FRACTION, EXACT_TOO_PRECISE } ExactResult;

/* bytes = digits * 10^ten * 2^two exactly, where the digits carry no leading
 * or trailing zeros. */
static ExactResult exact_product(const char *digits, gsize n, long ten, int two, guint64 *bytes) {
  if ((long)n + ten > 20) /* at least 10^20 > 2^64 */
    return EXACT_OVERFLOW;
  if (n > 20)
    return EXACT_TOO_PRECISE;
  guint64 mantissa = 0;
  for (gsize i = 0; i < n; i++) {
    guint d = (guint)(digits[i] - '0');
    if (mantissa > (G_MAXUINT64 - d) / 10)
      return ten >= 0 ? EXACT_OVERFLOW : EXACT_TOO_PRECISE;
    mantissa = mantissa * 10 + d;
  }
  if (ten >= 0) {
    if (!times_ten(&mantissa, ten) || (two > 0 && mantissa > (G_MAXUINT64 >> two)))
      return EXACT_OVERFLOW;
    *bytes = mantissa << two;
    return EXACT_OK;
  }
  /* Dividing by 10^m = 5^m * 2^m: the digits must hold 5^m, the 2^two factor
   * (and the digits) 2^m. No trailing zeros means 10 never divides them. */
  long m = -ten;
  if (two == 0 || m > 27) /* 5^28 > 2^64 */
    return EXACT_FRACTION;
  guint64 five = 1;
  for (long i = 0; i < m; i++)
    five *= 5;
  if (mantissa % five != 0)
    return EXACT_FRACTION;
  mantissa /= five;
  int twos = two;
  for (guint64 rest = mantissa; rest != 0 && rest % 2 == 0; rest /= 2)
    twos++;
  if (twos < m)
    return EXACT_FRACTION;
  int shift = two - (int)m;
  if (shift < 0) {
    *bytes = mantissa >> -shift;
    return EXACT_OK;
  }
  if (mantissa > (G_MAXUINT64 >> shift))
    return EXACT_OVERFLOW;
  *bytes = mantissa << shift;
  return EXACT_OK;
}

/* The number's significant digits (leading and trailing zeros dropped) and
 * the power of ten they are scaled by. */
static char *significant_digits(const Decimal *d, long *ten) {
  GString *digits = g_string_sized_new(d->n_int + d->n_frac);
  g_string_append_len(digits, d->int_digits, (gssize)d->n_int);
  if (d->n_frac > 0)
    g_string_append_len(digits, d->frac_digits, (gssize)d->n_frac);
  *ten = d->exponent - (long)d->n_frac;
  gsize lead = 0;
  while (lead < digits->len && digits->str[lead] == '0')
    lead++;
  g_string_erase(digits, 0, (gssize)lead);
  while (digits->len > 0 && digits->str[digits->len - 1] == '0') {
    g_string_truncate(digits, digits->len - 1);
    (*ten)++;
  }
  return g_string_free(digits, FALSE);
}

/* The size unit `unit` spells in any case ("gb" -> "GB", "gib" -> "GiB",
 * "Gb" -> "GB"), or NULL when it spells none. */
static char *size_unit_any_case(const char *unit) {
  g_autofree char *lower = g_ascii_strdown(unit, -1);
  gsize n = strlen(lower);
  if (n == 0 || n > 3 || lower[n - 1] != 'b')
    return NULL;
  if (n == 1)
    return g_strdup("B");
  const char *at = strchr("kmgtpe", lower[0]);
  if (at == NULL || (n == 3 && lower[1] != 'i'))
    return NULL;
  char letter = n == 2 && lower[0] == 'k' ? 'k' : g_ascii_toupper(lower[0]);
  return g_strdup_printf("%c%s", letter, n == 3 ? "iB" : "B");
}

/* The number times the unit, rounded to the nearest byte; FALSE when that
 * is more than 2^64-1. Above 2^53 a double holds only whole numbers, so
 * rounding is then the conversion itself. */
static gboolean rounded_bytes(const char *trimmed, const Decimal *number, int ten, int two, guint64 *bytes) {
  double value = ldexp(decimal_value(trimmed, number) * pow(10.0, ten), two);
  if (!(value < 18446744073709551616.0))
    return FALSE;
  *bytes = value < 9007199254740992.0 ? (guint64)llround(value) : (guint64)value;
  return TRUE;
}

static gboolean parse_size(const char *text, gboolean lenient, guint64 *bytes, char **note, GError **error) {
  g_autofree char *trimmed = NULL, *spelled = NULL;
  Decimal number;
  const char *unit;
  int ten, two;
  if (!split_number("size", text, "a number of bytes or a size such as \"40GiB\"", &trimmed, &number, &unit,
                    error))
    return FALSE;
  if (!size_unit(unit, &ten, &two)) {
    spelled = lenient ? size_unit_any_case(unit) : NULL;
    if (spelled == NULL || !size_unit(spelled, &ten, &two))
      return unknown_size_unit(error, text, unit);
  }
  long scale;
  g_autofree char *digits = significant_digits(&number, &scale);
  guint64 result = 0;
  ExactResult exact = digits[0] == '\0' ? EXACT_OK : exact_product(digits, strlen(digits), scale + ten, two, &result);
  if (exact == EXACT_FRACTION && lenient && ten + two > 0) {
    if (!rounded_bytes(trimmed, &number, ten, two, &result))
      return fail(error, "size", text, "too large (more than 2^64-1 bytes)");
    char exact_text[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(exact_text, sizeof exact_text, "%.1f", ldexp(decimal_value(trimmed, &number) * pow(10.0, ten), two));
    *note = g_strdup_printf("\"%s\" is %s bytes: rounded to %" G_GUINT64_FORMAT " B%s%s%s", text, exact_text,
                            result, spelled ? " (read as " : "", spelled ? spelled : "", spelled ? ")" : "");
    *bytes = result;
    return TRUE;
  }
  switch (exact) {
  case EXACT_OK:
    if (spelled != NULL) {
      g_autofree char *number_text = g_strndup(trimmed, number.length);
      *note = g_strdup_printf("read \"%s\" as \"%s%s\" (%s; sizes are bytes: B, kB, MB, GB or KiB, MiB, GiB)",
                              text, number_text, spelled, two > 0 ? "binary, powers of 1024" : "decimal, powers of 1000");
    }
    *bytes = result;
    return TRUE;
  case EXACT_OVERFLOW:
    return fail(error, "size", text, "too large (more than 2^64-1 bytes)");
  case EXACT_FRACTION:
    return fail(error, "size", text, "not a whole number of bytes");
  case EXACT_TOO_PRECISE:
    break;
  }
  return fail(error, "size", text, "too many significant digits");
}

gboolean rok_units_parse_size(const char *text, guint64 *bytes, GError **error) {
  g_return_val_if_fail(text != NULL && bytes != NULL, FALSE);
  return parse_size(text, FALSE, bytes, NULL, error);
}

gboolean rok_units_parse_size_lenient(const char *text, guint64 *bytes, char **note, GError **error) {
  g_return_val_if_fail(text != NULL && bytes != NULL, FALSE);
  g_autofree char *said = NULL;
  if (!parse_size(text, TRUE, bytes, &said, error))
    return FALSE;
  if (note != NULL)
    *note = g_steal_pointer(&said);
  return TRUE;
}

/* ---- rates ---- */

/* The multiplier of a rate unit: [prefix](B|FLOP)/s or [prefix]FLOPS. */
static gboolean rate_unit(const char *unit, double *factor) {
  gsize n = strlen(unit);
  if (n == 0) {
    *factor = 1;
    return TRUE;
  }
  g_autofree char *base = NULL;
  if (n > 2 && g_str_has_suffix(unit, "/s"))
    base = g_strndup(unit, n - 2);
  else if (n >= 5 && g_ascii_strcasecmp(unit + n - 5, "FLOPS") == 0)
    base = g_strndup(unit, n - 1); /* "TFLOPS" -> "TFLOP" */
  else
    return FALSE;
  const char *p = base;
  int power;
  gboolean binary;
  lex_prefix(&p, &power, &binary);
  if (strcmp(p, "B") != 0 && g_ascii_strcasecmp(p, "FLOP") != 0)
    return FALSE;
  *factor = 1;
  for (int i = 0; i < power; i++)
    *factor *= binary ? 1024.0 : 1000.0;
  return TRUE;
}

gboolean rok_units_parse_rate(const char *text, double *per_second, GError **error) {
  g_return_val_if_fail(text != NULL && per_second != NULL, FALSE);
  g_autofree char *trimmed = NULL;
  Decimal number;
  const char *unit;
  double factor;
  if (!split_number("rate", text, "a number per second or a rate such as \"25GB/s\"", &trimmed, &number,
                    &unit, error))
    return FALSE;
  if (!rate_unit(unit, &factor))
    return fail(error, "rate", text,
                "unknown unit \"%s\" (expected bytes or FLOP per second with an optional prefix, such as "
                "\"25GB/s\", \"24GiB/s\", \"312TFLOP/s\" or \"312TFLOPS\")",
                unit);
  double value = decimal_value(trimmed, &number) * factor;
  if (!isfinite(value))
    return fail(error, "rate", text, "too large");
  *per_second = value;
  return TRUE;
}

/* ---- times ---- */

static gboolean time_unit(const char *unit, double *ns) {
  static const struct {
    const char *name;
    double ns;
  } units[] = {
      {"", 1e9},     {"ns", 1},   {"us", 1e3}, {"\u00b5s", 1e3}, {"\u03bcs", 1e3},
      {"ms", 1e6},   {"s", 1e9},  {"min", 60e9}, {"h", 3600e9}, {"d", 86400e9},
      {"y", 365.25 * 86400e9}, /* a Julian year, as the SSD lifetimes count them */
  };
  for (gsize i = 0; i < G_N_ELEMENTS(units); i++) {
    if (strcmp(unit, units[i].name) == 0) {
      *ns = units[i].ns;
      return TRUE;
    }
  }
  return FALSE;
}

gboolean rok_units_parse_time(const char *text, gint64 *ns, GError **error) {
  g_return_val_if_fail(text != NULL && ns != NULL, FALSE);
  g_autofree char *trimmed = NULL;
  Decimal number;
  const char *unit;
  double factor;
  if (!split_number("time", text, "a number of seconds or a time such as \"10ms\"", &trimmed, &number, &unit,
                    error))
    return FALSE;
  if (!time_unit(unit, &factor))
    return fail(error, "time", text, "unknown unit \"%s\" (expected ns, us, \u00b5s, ms, s, min, h, d or y)", unit);
  double value = decimal_value(trimmed, &number) * factor;
  /* 2^63 is exact in a double; every double below it rounds into gint64. */
  if (!(value < 9223372036854775808.0))
    return fail(error, "time", text, "too long (more than 2^63-1 ns, about 292 years)");
  *ns = (gint64)llround(value);
  return TRUE;
}

/* ---- plain numbers ---- */

gboolean rok_units_parse_number(const char *text, double *value, GError **error) {
  g_return_val_if_fail(text != NULL && value != NULL, FALSE);
  g_autofree char *trimmed = g_strstrip(g_strdup(text));
  Decimal number;
  char *end = NULL;
  double result = g_ascii_strtod(trimmed, &end);
  if (!lex_decimal(trimmed, &number)) {
    if (end != trimmed && !isfinite(result))
      return fail(error, "number", text, "not a finite number");
    return fail(error, "number", text, "expected a number such as \"0.55\" or \"312e12\"");
  }
  if (trimmed[number.length] != '\0')
    return fail(error, "number", text, "unexpected \"%s\" after the number", trimmed + number.length);
  result = decimal_value(trimmed, &number);
  if (!isfinite(result))
    return fail(error, "number", text, "too large");
  *value = result;
  return TRUE;
}
