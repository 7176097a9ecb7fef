/* Human forms of sizes, rates, times and counts, three significant digits.
 *
 * GLib's g_format_size_full() always prints one decimal ("117.7 MiB", four
 * digits) and "bytes" below 1 KiB, so it does not give the uniform
 * three-digit columns rok's tables want; this is the small generalisation.
 * Numbers go through g_ascii_formatd so that the locale never changes them. */
#include "rok/core.h"

#include <math.h>

typedef struct {
  const char *name;
  double factor; /* in base units */
} Unit;

/* `value` (>= 0, finite) with three significant digits: "812", "1.23",
 * "0.500"; values of 1000 and more keep all their integer digits up to a
 * million ("2500"). Beyond that, or below a millionth (only past the ends
 * of the unit scale), the digits would run on for hundreds of characters
 * ("1e300 B/s"), so the exponent form keeps three: "6.83e+37". */
static void append_3sig(GString *out, double value) {
  char buffer[G_ASCII_DTOSTR_BUF_SIZE];
  if (value >= 999999.5 || value < 0.9995e-6) {
    g_string_append(out, g_ascii_formatd(buffer, sizeof buffer, "%.2e", value));
    return;
  }
  int decimals = 0;
  for (double limit = 99.95; decimals < 9 && value < limit; limit /= 10)
    decimals++;
  char format[8];
  g_snprintf(format, sizeof format, "%%.%df", decimals);
  g_string_append(out, g_ascii_formatd(buffer, sizeof buffer, format, value));
}

/* Picks the largest unit in which the value shows as at least "1.00" (or,
 * for a step of 1024, at least "0.977", so that no unit shows "1000" to
 * "1023"), and prints the value in it. */
static char *format_scaled(double value, const Unit *units, gsize n_units) {
  GString *out = g_string_new(NULL);
  if (isnan(value) || isinf(value)) {
    g_string_append(out, isnan(value) ? "nan" : value < 0 ? "-inf" : "inf");
    if (units[0].name[0] != '\0')
      g_string_append_printf(out, " %s", units[0].name);
    return g_string_free(out, FALSE);
  }
  if (value < 0) {
    g_string_append_c(out, '-');
    value = -value;
  }
  if (value == 0) {
    g_string_truncate(out, 0); /* no "-0" */
    g_string_append_c(out, '0');
    if (units[0].name[0] != '\0')
      g_string_append_printf(out, " %s", units[0].name);
    return g_string_free(out, FALSE);
  }
  gsize chosen = 0;
  for (gsize i = n_units - 1; i > 0; i--) {
    double step = units[i].factor / units[i - 1].factor;
    if (value / units[i].factor >= MIN(0.9995, 999.5 / step)) {
      chosen = i;
      break;
    }
  }
  append_3sig(out, value / units[chosen].factor);
  if (units[chosen].name[0] != '\0')
    g_string_append_printf(out, " %s", units[chosen].name);
  return g_string_free(out, FALSE);
}

char *rok_units_format_size(guint64 bytes) {
  static const Unit units[] = {
      {"B", 1},
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},
      {"PiB", 1125899906842624.0},
      {"EiB", 1152921504606846976.0},
  };
  /* Below 1 KiB the exact count is as short and says more. */
  if (bytes < 1024)
    return g_strdup_printf("%" G_GUINT64_FORMAT " B", bytes);
  return format_scaled((double)bytes, units, G_N_ELEMENTS(units));
}

char *rok_units_format_rate(double bytes_per_second) {
  static const Unit units[] = {
      {"B/s", 1}, {"kB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12}, {"PB/s", 1e15}, {"EB/s", 1e18},
  };
  return format_scaled(bytes_per_second, units, G_N_ELEMENTS(units));
}

/* "us", not "µs": tables pad columns by bytes, and plain ASCII keeps them
 * aligned (the parser accepts both). Years are Julian, 365.25 days. */
char *rok_units_format_time(double seconds) {
  static const Unit units[] = {
      {"ns", 1e-9}, {"us", 1e-6},    {"ms", 1e-3},     {"s", 1},
      {"min", 60},  {"h", 3600},     {"d", 86400},     {"y", 31557600},
  };
  if (seconds == 0)
    return g_strdup("0 s");
  return format_scaled(seconds, units, G_N_ELEMENTS(units));
}

/* Counts (parameters, FLOPs): k, M, B (billion), T. Whole counts below 1000
 * print exactly ("24", not "24.0"). */
char *rok_units_format_count(double count) {
  static const Unit units[] = {
      {"", 1}, {"k", 1e3}, {"M", 1e6}, {"B", 1e9}, {"T", 1e12},
  };
  if (isfinite(count) && fabs(count) < 999.5 && count == nearbyint(count))
    return g_strdup_printf("%.0f", count == 0 ? 0.0 : count); /* no "-0" */
  return format_scaled(count, units, G_N_ELEMENTS(units));
}
