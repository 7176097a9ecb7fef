/* Units: parsing sizes, rates, times and numbers; the human forms. */
#include "rok/core.h"

#include <locale.h>
#include <math.h>

static guint64 size_ok(const char *text) {
  g_autoptr(GError) error = NULL;
  guint64 bytes = 0;
  gboolean ok = rok_units_parse_size(text, &bytes, &error);
  if (!ok)
    g_test_message("%s: %s", text, error->message);
  g_assert_no_error(error);
  g_assert_true(ok);
  return bytes;
}

/* Asserts that parsing fails with ROK_ERROR_INPUT, a message naming the
 * text, and containing `reason`. */
static void assert_message(GError *error, const char *text, const char *reason) {
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_autofree char *quoted = g_strdup_printf("\"%s\"", text);
  if (strstr(error->message, quoted) == NULL || strstr(error->message, reason) == NULL)
    g_error("message for %s lacks %s: %s", quoted, reason, error->message);
}

static void size_bad(const char *text, const char *reason) {
  g_autoptr(GError) error = NULL;
  guint64 bytes = 12345;
  g_assert_false(rok_units_parse_size(text, &bytes, &error));
  g_assert_cmpuint(bytes, ==, 12345);
  assert_message(error, text, reason);
}

/* Sizes as typed on a command line: rounded to the byte, any case, and a
 * note saying how the text was read; what is exact gets no note. */
static void lenient_ok(const char *text, guint64 want, const char *note_part) {
  g_autoptr(GError) error = NULL;
  g_autofree char *note = NULL;
  guint64 bytes = 0;
  g_assert_true(rok_units_parse_size_lenient(text, &bytes, &note, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(bytes, ==, want);
  if (note_part == NULL)
    g_assert_null(note);
  else if (note == NULL || strstr(note, note_part) == NULL)
    g_error("note for %s lacks %s: %s", text, note_part, note ? note : "(none)");
}

static void test_size_lenient(void) {
  /* 26.8 × 2^30 = 28776280883.2 */
  lenient_ok("26.8GiB", G_GUINT64_CONSTANT(28776280883), "28776280883.2 bytes: rounded to 28776280883 B");
  lenient_ok("0.1KiB", 102, "rounded to 102 B");
  lenient_ok("26.5GiB", G_GUINT64_CONSTANT(53) << 29, NULL);
  lenient_ok("40GiB", G_GUINT64_CONSTANT(40) << 30, NULL);
  lenient_ok("30gb", G_GUINT64_CONSTANT(30000000000), "as \"30GB\"");
  lenient_ok("30gib", G_GUINT64_CONSTANT(30) << 30, "as \"30GiB\"");
  lenient_ok("30GIB", G_GUINT64_CONSTANT(30) << 30, "as \"30GiB\"");
  lenient_ok("30Gb", G_GUINT64_CONSTANT(30000000000), "as \"30GB\"");
  lenient_ok("4kib", 4096, "as \"4KiB\"");
  lenient_ok("2.5gib", G_GUINT64_CONSTANT(5) << 29, "as \"2.5GiB\"");
  /* A plain number of bytes is not rounded: "1.5" is a typo, not a size. */
  g_autoptr(GError) error = NULL;
  guint64 bytes = 7;
  g_assert_false(rok_units_parse_size_lenient("1.5", &bytes, NULL, &error));
  assert_message(error, "1.5", "not a whole number of bytes");
  g_clear_error(&error);
  /* Rounding near the top of the range: what does not fit is refused. */
  lenient_ok("15.9999999999EiB", G_GUINT64_CONSTANT(18446744073594259456), "rounded to");
  g_assert_false(rok_units_parse_size_lenient("16.00000000001EiB", &bytes, NULL, &error));
  assert_message(error, "16.00000000001EiB", "too large");
  g_clear_error(&error);
  g_assert_false(rok_units_parse_size_lenient("30gx", &bytes, NULL, &error));
  g_assert_cmpuint(bytes, ==, 7);
  /* The strict parser refuses the same texts, saying what would do. */
  size_bad("30gb", "did you mean \"GB\" (powers of 1000) or \"GiB\"?");
  size_bad("30gib", "did you mean \"GiB\" (powers of 1024) or \"GB\"?");
}

static void test_size_suffixes(void) {
  g_assert_cmpuint(size_ok("4096"), ==, 4096);
  g_assert_cmpuint(size_ok("4096B"), ==, 4096);
  g_assert_cmpuint(size_ok("0"), ==, 0);
  g_assert_cmpuint(size_ok("1kB"), ==, 1000);
  g_assert_cmpuint(size_ok("1KB"), ==, 1000);
  g_assert_cmpuint(size_ok("1MB"), ==, 1000000);
  g_assert_cmpuint(size_ok("1GB"), ==, G_GUINT64_CONSTANT(1000000000));
  g_assert_cmpuint(size_ok("1TB"), ==, G_GUINT64_CONSTANT(1000000000000));
  g_assert_cmpuint(size_ok("1PB"), ==, G_GUINT64_CONSTANT(1000000000000000));
  g_assert_cmpuint(size_ok("1EB"), ==, G_GUINT64_CONSTANT(1000000000000000000));
  g_assert_cmpuint(size_ok("1KiB"), ==, 1024);
  g_assert_cmpuint(size_ok("1MiB"), ==, 1 << 20);
  g_assert_cmpuint(size_ok("1GiB"), ==, G_GUINT64_CONSTANT(1) << 30);
  g_assert_cmpuint(size_ok("1TiB"), ==, G_GUINT64_CONSTANT(1) << 40);
  g_assert_cmpuint(size_ok("1PiB"), ==, G_GUINT64_CONSTANT(1) << 50);
  g_assert_cmpuint(size_ok("1EiB"), ==, G_GUINT64_CONSTANT(1) << 60);
  g_assert_cmpuint(size_ok("40GiB"), ==, G_GUINT64_CONSTANT(40) << 30);
  g_assert_cmpuint(size_ok("4 KiB"), ==, 4096);
  g_assert_cmpuint(size_ok("  4  KiB "), ==, 4096);
  g_assert_cmpuint(size_ok("+4KiB"), ==, 4096);
}

static void test_size_fractions(void) {
  g_assert_cmpuint(size_ok("1.6TB"), ==, G_GUINT64_CONSTANT(1600000000000));
  g_assert_cmpuint(size_ok("1.5KiB"), ==, 1536);
  g_assert_cmpuint(size_ok("1.1kB"), ==, 1100); /* 1.1 * 1000 is not 1100 in doubles */
  g_assert_cmpuint(size_ok("0.5KiB"), ==, 512);
  g_assert_cmpuint(size_ok("0.0009765625KiB"), ==, 1);
  g_assert_cmpuint(size_ok("2.000B"), ==, 2);
  g_assert_cmpuint(size_ok("1e3"), ==, 1000);
  g_assert_cmpuint(size_ok("1.5e3KiB"), ==, 1536000);
  g_assert_cmpuint(size_ok("4e9"), ==, G_GUINT64_CONSTANT(4000000000));
  g_assert_cmpuint(size_ok(".5KiB"), ==, 512);
  g_assert_cmpuint(size_ok("0e999999999999"), ==, 0);
  size_bad("1.5B", "not a whole number of bytes");
  size_bad("1.5", "not a whole number of bytes");
  size_bad("0.1KiB", "not a whole number of bytes");
  size_bad("1.0001kB", "not a whole number of bytes");
  size_bad("1e-3", "not a whole number of bytes");
  size_bad("1e-40KiB", "not a whole number of bytes");
}

static void test_size_limits(void) {
  g_assert_cmpuint(size_ok("18446744073709551615"), ==, G_MAXUINT64);
  g_assert_cmpuint(size_ok("15EiB"), ==, G_GUINT64_CONSTANT(15) << 60);
  g_assert_cmpuint(size_ok("18EB"), ==, G_GUINT64_CONSTANT(18000000000000000000));
  g_assert_cmpuint(size_ok("15.9990234375EiB"), ==, G_GUINT64_CONSTANT(16383) << 50);
  size_bad("0.00000000000000088817841970012523233890533447265625PiB", "too many significant digits");
  size_bad("18446744073709551616", "too large");
  size_bad("16EiB", "too large");
  size_bad("19EB", "too large");
  size_bad("1e400", "too large");
  size_bad("1e20", "too large");
  size_bad("100000000000000000000000000000.5", "too large");
}

static void test_size_junk(void) {
  size_bad("-1", "must not be negative");
  size_bad("-0", "must not be negative");
  size_bad("", "expected a number of bytes");
  size_bad("   ", "expected a number of bytes");
  size_bad("abc", "expected a number of bytes");
  size_bad("GiB", "expected a number of bytes");
  size_bad("nan", "not a finite number");
  size_bad("inf", "not a finite number");
  size_bad("0x10", "unknown unit \"x10\"");
  size_bad("40Gx", "unknown unit \"Gx\"");
  size_bad("40G", "did you mean \"GB\" or \"GiB\"?");
  size_bad("40k", "did you mean \"kB\" or \"KiB\"?");
  size_bad("40Gb", "unknown unit \"Gb\"");
  size_bad("40b", "bits");
  size_bad("40kiB", "unknown unit \"kiB\"");
  size_bad("40GiB/s", "unknown unit");
  size_bad("4 KiB x", "unknown unit \"KiB x\"");
  size_bad("1.2.3", "unknown unit \".3\"");
}

static double rate_ok(const char *text) {
  g_autoptr(GError) error = NULL;
  double rate = -1;
  g_assert_true(rok_units_parse_rate(text, &rate, &error));
  g_assert_no_error(error);
  return rate;
}

static void rate_bad(const char *text, const char *reason) {
  g_autoptr(GError) error = NULL;
  double rate = -1;
  g_assert_false(rok_units_parse_rate(text, &rate, &error));
  g_assert_cmpfloat(rate, ==, -1);
  assert_message(error, text, reason);
}

static void test_rates(void) {
  g_assert_cmpfloat(rate_ok("25GB/s"), ==, 25e9);
  g_assert_cmpfloat(rate_ok("12 GB/s"), ==, 12e9);
  g_assert_cmpfloat(rate_ok(" 12   GB/s "), ==, 12e9);
  g_assert_cmpfloat(rate_ok("24 GiB/s"), ==, 24.0 * 1073741824.0);
  g_assert_cmpfloat(rate_ok("312e12"), ==, 312e12);
  g_assert_cmpfloat(rate_ok("312 TFLOP/s"), ==, 312e12);
  g_assert_cmpfloat(rate_ok("312TFLOPS"), ==, 312e12);
  g_assert_cmpfloat(rate_ok("312 Tflops"), ==, 312e12);
  g_assert_cmpfloat(rate_ok("1.5kB/s"), ==, 1500);
  g_assert_cmpfloat(rate_ok("7.2GB/s"), ==, 7.2e9);
  g_assert_cmpfloat(rate_ok("1B/s"), ==, 1);
  g_assert_cmpfloat(rate_ok("1FLOPS"), ==, 1);
  g_assert_cmpfloat(rate_ok("0"), ==, 0);
  rate_bad("25GB", "unknown unit \"GB\"");
  rate_bad("25 /s", "unknown unit \"/s\"");
  rate_bad("25Gx/s", "unknown unit \"Gx/s\"");
  rate_bad("-1GB/s", "must not be negative");
  rate_bad("1e400", "too large");
  rate_bad("1e300PB/s", "too large");
  rate_bad("NaN", "not a finite number");
  rate_bad("", "expected a number per second");
  rate_bad("fast", "expected a number per second");
}

static gint64 time_ok(const char *text) {
  g_autoptr(GError) error = NULL;
  gint64 ns = -1;
  g_assert_true(rok_units_parse_time(text, &ns, &error));
  g_assert_no_error(error);
  return ns;
}

static void time_bad(const char *text, const char *reason) {
  g_autoptr(GError) error = NULL;
  gint64 ns = -1;
  g_assert_false(rok_units_parse_time(text, &ns, &error));
  g_assert_cmpint(ns, ==, -1);
  assert_message(error, text, reason);
}

static void test_times(void) {
  g_assert_cmpint(time_ok("4us"), ==, 4000);
  g_assert_cmpint(time_ok("4\u00b5s"), ==, 4000); /* MICRO SIGN */
  g_assert_cmpint(time_ok("4\u03bcs"), ==, 4000); /* GREEK SMALL LETTER MU */
  g_assert_cmpint(time_ok("4 \u00b5s"), ==, 4000);
  g_assert_cmpint(time_ok("10ms"), ==, 10000000);
  g_assert_cmpint(time_ok("1.5s"), ==, 1500000000);
  g_assert_cmpint(time_ok("0.3s"), ==, 300000000);
  g_assert_cmpint(time_ok("100ns"), ==, 100);
  g_assert_cmpint(time_ok("1.4ns"), ==, 1);
  g_assert_cmpint(time_ok("1.5ns"), ==, 2);
  g_assert_cmpint(time_ok("2"), ==, 2000000000);
  g_assert_cmpint(time_ok("2min"), ==, G_GINT64_CONSTANT(120000000000));
  g_assert_cmpint(time_ok("1h"), ==, G_GINT64_CONSTANT(3600000000000));
  g_assert_cmpint(time_ok("9223372036s"), ==, G_GINT64_CONSTANT(9223372036000000000));
  time_bad("9223372037s", "too long");
  time_bad("1e400", "too long");
  time_bad("-1ms", "must not be negative");
  time_bad("4 parsecs", "unknown unit \"parsecs\"");
  time_bad("4m", "unknown unit \"m\"");
  time_bad("", "expected a number of seconds");
}

static void test_numbers(void) {
  g_autoptr(GError) error = NULL;
  double v = 0;
  g_assert_true(rok_units_parse_number("0.55", &v, &error));
  g_assert_cmpfloat(v, ==, 0.55);
  g_assert_true(rok_units_parse_number(" 312e12 ", &v, &error));
  g_assert_cmpfloat(v, ==, 312e12);
  g_assert_true(rok_units_parse_number("-2.5", &v, &error));
  g_assert_cmpfloat(v, ==, -2.5);
  g_assert_no_error(error);

  static const struct {
    const char *text, *reason;
  } bad[] = {
      {"1.5x", "unexpected \"x\""}, {"abc", "expected a number"}, {"", "expected a number"},
      {"nan", "not a finite number"}, {"-inf", "not a finite number"}, {"1e400", "too large"},
      {"0x10", "unexpected \"x10\""}, {"1,5", "unexpected \",5\""},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(GError) e = NULL;
    v = 7;
    g_assert_false(rok_units_parse_number(bad[i].text, &v, &e));
    g_assert_cmpfloat(v, ==, 7);
    assert_message(e, bad[i].text, bad[i].reason);
  }
}

/* A decimal-comma locale must not change parsing or printing. */
static void test_locale_independent(void) {
  const char *locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "C.UTF-8"};
  const char *set = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(locales) && set == NULL; i++)
    set = setlocale(LC_NUMERIC, locales[i]);
  g_test_message("LC_NUMERIC: %s", set != NULL ? set : "(unchanged)");
  g_autoptr(GError) error = NULL;
  double v = 0;
  g_assert_true(rok_units_parse_number("0.55", &v, &error));
  g_assert_cmpfloat(v, ==, 0.55);
  g_autofree char *text = rok_units_format_rate(24e9);
  g_assert_cmpstr(text, ==, "24.0 GB/s");
  setlocale(LC_NUMERIC, "C");
}

static void check_format(char *text, const char *expected) {
  g_assert_cmpstr(text, ==, expected);
  g_free(text);
}

static void test_format_size(void) {
  check_format(rok_units_format_size(0), "0 B");
  check_format(rok_units_format_size(1023), "1023 B");
  check_format(rok_units_format_size(1024), "1.00 KiB");
  check_format(rok_units_format_size(1536), "1.50 KiB");
  check_format(rok_units_format_size(G_GUINT64_CONSTANT(40) << 30), "40.0 GiB");
  check_format(rok_units_format_size(123456789), "118 MiB");
  check_format(rok_units_format_size(1000 << 20), "0.977 GiB");
  check_format(rok_units_format_size((1 << 30) - 1), "1.00 GiB");
  check_format(rok_units_format_size(G_GUINT64_CONSTANT(1600000000000)), "1.46 TiB");
  check_format(rok_units_format_size(G_MAXUINT64), "16.0 EiB");
}

static void test_format_rate_time_count(void) {
  check_format(rok_units_format_rate(24e9), "24.0 GB/s");
  check_format(rok_units_format_rate(2039e9), "2.04 TB/s");
  check_format(rok_units_format_rate(999.96e6), "1.00 GB/s");
  check_format(rok_units_format_rate(999.4e6), "999 MB/s");
  check_format(rok_units_format_rate(0), "0 B/s");
  check_format(rok_units_format_rate(0.5), "0.500 B/s");
  check_format(rok_units_format_rate(-2e9), "-2.00 GB/s");
  check_format(rok_units_format_rate(NAN), "nan B/s");
  check_format(rok_units_format_time(812e-9), "812 ns");
  check_format(rok_units_format_time(1.23e-3), "1.23 ms");
  check_format(rok_units_format_time(4e-6), "4.00 us");
  check_format(rok_units_format_time(2.5), "2.50 s");
  check_format(rok_units_format_time(59.9), "59.9 s");
  check_format(rok_units_format_time(90), "1.50 min");
  check_format(rok_units_format_time(5400), "1.50 h");
  check_format(rok_units_format_time(3 * 86400), "3.00 d");
  check_format(rok_units_format_time(2.5 * 31557600), "2.50 y");
  check_format(rok_units_format_time(0), "0 s");
  check_format(rok_units_format_time(0.9996e-3), "1.00 ms");
  check_format(rok_units_format_count(13e9), "13.0 B");
  check_format(rok_units_format_count(340e6), "340 M");
  check_format(rok_units_format_count(1200), "1.20 k");
  check_format(rok_units_format_count(24), "24");
  check_format(rok_units_format_count(0), "0");
  check_format(rok_units_format_count(1.5), "1.50");
  check_format(rok_units_format_count(175e9), "175 B");
  check_format(rok_units_format_count(2.5e15), "2500 T");
}

/* Past the ends of the unit scales the digits would run on ("1e300 B/s"
 * printed 283 of them): the exponent form keeps three. */
static void test_format_extremes(void) {
  check_format(rok_units_format_count(999999e12), "999999 T");
  check_format(rok_units_format_count(1e18), "1.00e+06 T");
  check_format(rok_units_format_rate(6.8301e55), "6.83e+37 EB/s");
  check_format(rok_units_format_rate(-1.7976931348623157e308), "-1.80e+290 EB/s");
  check_format(rok_units_format_time(1e300), "3.17e+292 y");
  check_format(rok_units_format_time(4.9e-324), "4.94e-315 ns");
  check_format(rok_units_format_time(1e-15), "0.00000100 ns");
  check_format(rok_units_format_time(1e-16), "1.00e-07 ns");
  check_format(rok_units_format_time(0.5e-9), "0.500 ns");
  check_format(rok_units_format_rate(1e-300), "1.00e-300 B/s");
  check_format(rok_units_format_rate(0.001), "0.00100 B/s");
}

/* Significant digits of the number a formatted text starts with. */
static int significant(const char *text) {
  int digits = 0;
  gboolean leading = TRUE;
  for (const char *p = text; g_ascii_isdigit(*p) || *p == '.'; p++) {
    if (*p == '.' || (leading && *p == '0'))
      continue;
    leading = FALSE;
    digits++;
  }
  return digits;
}

/* Over the whole range every form shows exactly three digits. */
static void test_format_three_digits(void) {
  for (guint64 bytes = 1024; bytes < G_MAXUINT64 / 3; bytes = bytes * 3 + 7) {
    g_autofree char *size = rok_units_format_size(bytes);
    g_autofree char *rate = rok_units_format_rate((double)bytes);
    g_autofree char *time = rok_units_format_time((double)bytes * 1e-12);
    g_assert_cmpint(significant(size), ==, 3);
    g_assert_cmpint(significant(rate), ==, 3);
    g_assert_cmpint(significant(time), ==, 3);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/units/size/suffixes", test_size_suffixes);
  g_test_add_func("/units/size/fractions", test_size_fractions);
  g_test_add_func("/units/size/limits", test_size_limits);
  g_test_add_func("/units/size/junk", test_size_junk);
  g_test_add_func("/units/size/lenient", test_size_lenient);
  g_test_add_func("/units/rate", test_rates);
  g_test_add_func("/units/time", test_times);
  g_test_add_func("/units/number", test_numbers);
  g_test_add_func("/units/locale", test_locale_independent);
  g_test_add_func("/units/format/size", test_format_size);
  g_test_add_func("/units/format/other", test_format_rate_time_count);
  g_test_add_func("/units/format/three-digits", test_format_three_digits);
  g_test_add_func("/units/format/extremes", test_format_extremes);
  return g_test_run();
}
