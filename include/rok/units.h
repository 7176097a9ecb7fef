/* Sizes, rates and times as people write them and as rok prints them.
 *
 * Base units: bytes (guint64), bytes or operations per second (double),
 * seconds. Parsers accept a plain number in the base unit or a number with a
 * unit, with or without a space between: "40GiB", "1.6TB", "512", "25GB/s",
 * "312e12", "4us", "1.5ms". Decimal prefixes (k or K, M, G, T, P, E) are
 * powers of 1000, binary ones (Ki Mi Gi Ti Pi Ei) powers of 1024. Numbers are
 * read in the C locale whatever the process locale. Parsers reject negative
 * values, NaN, infinities, hex, junk after the unit and values that do not
 * fit the result type; the GError (ROK_ERROR_INPUT) reads
 *   invalid size "40Gx": unknown unit "Gx" (expected B, kB, ...)
 * naming the text and saying why. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A byte count: "40GiB", "1.6TB", "4096", "4096B", "4 KiB". A prefix needs
 * the "B" ("40G" is refused: GB or GiB?). The value is computed exactly
 * from the decimal text, never rounded: fractions are allowed when the
 * product is a whole number of bytes ("1.5KiB", "1.1kB"), otherwise the text
 * is rejected ("1.5B", "0.1KiB"). Up to 2^64-1 bytes ("16EiB" is too much). */
gboolean rok_units_parse_size(const char *text, guint64 *bytes, GError **error);

/* A rate per second: "25GB/s", "24 GiB/s", "312e12", "312 TFLOP/s",
 * "312TFLOPS". A unit, if any, is a prefix and B or FLOP (any case) ending
 * in "/s", or a prefix and FLOPS. Zero is accepted. */
gboolean rok_units_parse_rate(const char *text, double *per_second, GError **error);

/* A duration, returned in nanoseconds rounded to the nearest (half away
 * from zero): "4us", "4µs", "10ms", "1.5s", "100ns", "2min", "1h"; a plain
 * number is seconds; "3d", "3y" (days, Julian years of 365.25 days). At most
 * 2^63-1 ns (about 292 years). */
gboolean rok_units_parse_time(const char *text, gint64 *ns, GError **error);

/* A plain finite number, C locale, nothing after it: "0.55", "312e12",
 * "-2" (the sign is the caller's business here). */
gboolean rok_units_parse_number(const char *text, double *value, GError **error);

/* Human forms for tables, all with three significant digits, the same
 * bytes in any locale (newly allocated):
 * - sizes in IEC units: "40.0 GiB", "1.50 KiB"; below 1 KiB the exact count
 *   ("512 B"); just under a unit, "0.977 GiB" rather than "1000 MiB";
 * - rates in SI units: "24.0 GB/s", "2.04 TB/s";
 * - times: "812 ns", "4.00 us" (ASCII "us", so columns line up), "1.23 ms",
 *   "2.50 s", "1.50 min", "1.50 h", "3.00 d", "2.50 y" (Julian years);
 * - counts (parameters, FLOPs): "24" (whole counts below 1000 exactly),
 *   "1.20 k", "340 M", "13.0 B" (billions), "2.00 T".
 * Negative values get a "-", NaN and infinities print as "nan", "inf". */
char *rok_units_format_size(guint64 bytes);
char *rok_units_format_rate(double bytes_per_second);
char *rok_units_format_time(double seconds);
char *rok_units_format_count(double count);

G_END_DECLS
