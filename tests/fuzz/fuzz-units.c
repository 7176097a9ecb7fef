/* The units parser: sizes, rates, times and plain numbers from one text,
 * the human forms of whatever they read and of raw 64-bit values, and the
 * sweep ranges (rok sweep --micro-batch 1:64:*2, --budget 24GiB:40GiB:4GiB).
 *
 * Input: the text (up to a NUL; made valid UTF-8, as JSON strings are).
 * Checks beyond "no crash": failures are located messages naming the text;
 * the same text padded with whitespace reads the same; a size and a rate
 * read from one unitless text agree; every human form is short UTF-8; a
 * range is at most ROK_SWEEP_MAX_VALUES values, rising, none below its
 * minimum. */
#include "fuzz.h"

#include <math.h>
#include <string.h>

#include "rok/sweep.h"
#include "rok/core.h"

static const char *const size_prefixes[] = {"invalid size \"", NULL};
static const char *const rate_prefixes[] = {"invalid rate \"", NULL};
static const char *const time_prefixes[] = {"invalid time \"", NULL};
static const char *const number_prefixes[] = {"invalid number \"", NULL};
static const char *const range_prefixes[] = {"invalid range \"", NULL};

static void check_human(const char *what, char *text) {
  if (text == NULL || text[0] == '\0' || strlen(text) > 32 || !g_utf8_validate(text, -1, NULL))
    rok_fuzz_fail("%s: bad human form \"%s\"", what, text != NULL ? text : "(none)");
  g_free(text);
}

typedef struct {
  gboolean size_ok, rate_ok, time_ok, number_ok;
  guint64 bytes;
  double rate, number;
  gint64 ns;
} Parsed;

static Parsed parse_all(const char *text) {
  Parsed p = {0};
  GError *error = NULL;
  p.size_ok = rok_units_parse_size(text, &p.bytes, &error);
  rok_fuzz_check_result(p.size_ok, error, size_prefixes, (const uint8_t *)text, strlen(text));
  g_clear_error(&error);
  p.rate_ok = rok_units_parse_rate(text, &p.rate, &error);
  rok_fuzz_check_result(p.rate_ok, error, rate_prefixes, (const uint8_t *)text, strlen(text));
  g_clear_error(&error);
  p.time_ok = rok_units_parse_time(text, &p.ns, &error);
  rok_fuzz_check_result(p.time_ok, error, time_prefixes, (const uint8_t *)text, strlen(text));
  g_clear_error(&error);
  p.number_ok = rok_units_parse_number(text, &p.number, &error);
  rok_fuzz_check_result(p.number_ok, error, number_prefixes, (const uint8_t *)text, strlen(text));
  g_clear_error(&error);
  /* The forgiving reader accepts all the strict one does, the same, with
   * no note; a note only when it read something the strict one refused. */
  guint64 lenient = 0;
  char *note = NULL;
  gboolean lenient_ok = rok_units_parse_size_lenient(text, &lenient, &note, &error);
  rok_fuzz_check_result(lenient_ok, error, size_prefixes, (const uint8_t *)text, strlen(text));
  g_clear_error(&error);
  if (p.size_ok && (!lenient_ok || lenient != p.bytes || note != NULL))
    rok_fuzz_fail("size \"%s\": strict %" G_GUINT64_FORMAT ", lenient %s %" G_GUINT64_FORMAT " (%s)", text,
                  p.bytes, lenient_ok ? "ok" : "refused", lenient, note ? note : "no note");
  if (!p.size_ok && lenient_ok && note == NULL)
    rok_fuzz_fail("size \"%s\": read leniently without a note", text);
  g_free(note);
  if (p.rate_ok && !(isfinite(p.rate) && p.rate >= 0))
    rok_fuzz_fail("rate \"%s\" read as %g", text, p.rate);
  if (p.time_ok && p.ns < 0)
    rok_fuzz_fail("time \"%s\" read as %" G_GINT64_FORMAT " ns", text, p.ns);
  if (p.number_ok && !isfinite(p.number))
    rok_fuzz_fail("number \"%s\" read as %g", text, p.number);
  return p;
}

static void check_consistent(const char *text, const Parsed *p) {
  g_autofree char *padded = g_strdup_printf(" \t%s\n ", text);
  Parsed q = parse_all(padded);
  if (p->size_ok != q.size_ok || p->rate_ok != q.rate_ok || p->time_ok != q.time_ok ||
      p->number_ok != q.number_ok || (p->size_ok && p->bytes != q.bytes) || (p->time_ok && p->ns != q.ns) ||
      (p->rate_ok && p->rate != q.rate) || (p->number_ok && p->number != q.number))
    rok_fuzz_fail("\"%s\" reads differently with whitespace around it", text);
  /* A bare number is bytes to one parser and per second to the other. */
  if (p->size_ok && p->rate_ok && p->number_ok &&
      fabs((double)p->bytes - p->rate) > 1e-9 * MAX(p->rate, 1.0))
    rok_fuzz_fail("\"%s\": size %" G_GUINT64_FORMAT " but rate %.17g", text, p->bytes, p->rate);
  if (p->rate_ok && p->number_ok && p->rate != p->number)
    rok_fuzz_fail("\"%s\": rate %.17g but number %.17g", text, p->rate, p->number);
}

static void check_range(const char *text, gboolean sizes, guint64 min) {
  GError *error = NULL;
  GArray *values = rok_sweep_parse_range(text, sizes, min, &error);
  rok_fuzz_check_result(values != NULL, error, range_prefixes, (const uint8_t *)text, strlen(text));
  g_clear_error(&error);
  if (values == NULL)
    return;
  if (values->len == 0 || values->len > ROK_SWEEP_MAX_VALUES)
    rok_fuzz_fail("range \"%s\" has %u values", text, values->len);
  for (guint i = 0; i < values->len; i++) {
    guint64 v = g_array_index(values, guint64, i);
    if (v < min || (i > 0 && v <= g_array_index(values, guint64, i - 1)))
      rok_fuzz_fail("range \"%s\": value %u is %" G_GUINT64_FORMAT, text, i, v);
  }
  g_array_unref(values);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_auto(GStrv) parts = rok_fuzz_split(data, size, 0);
  g_autofree char *text = g_utf8_make_valid(parts[0], -1);
  Parsed p = parse_all(text);
  check_consistent(text, &p);
  check_range(text, FALSE, 1);
  check_range(text, TRUE, 0);
  if (p.size_ok)
    check_human("size", rok_units_format_size(p.bytes));
  if (p.rate_ok)
    check_human("rate", rok_units_format_rate(p.rate));
  if (p.time_ok)
    check_human("time", rok_units_format_time((double)p.ns * 1e-9));
  if (p.number_ok)
    check_human("count", rok_units_format_count(p.number));
  /* The human forms of any 64 bits: huge, tiny, negative, NaN. */
  if (size >= 8) {
    guint64 bits;
    double value;
    memcpy(&bits, data, 8);
    memcpy(&value, data, 8);
    check_human("size", rok_units_format_size(bits));
    check_human("rate", rok_units_format_rate(value));
    check_human("time", rok_units_format_time(value));
    check_human("count", rok_units_format_count(value));
  }
  return 0;
}
