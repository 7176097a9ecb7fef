/* Sizes, rates and times as people write them and as rok prints them.
 *
 * Base units: bytes (guint64), bytes or operations per second (double),
 * seconds. Parsers accept a plain number in the base unit or a number with a
 * unit: "40GiB", "1.6TB", "512", "25GB/s", "312e12", "4us", "1.5ms".
 * Decimal prefixes (k M G T P) are powers of 1000, binary ones (Ki Mi Gi Ti
 * Pi) powers of 1024. Parsers reject negative values, NaN, infinities, junk
 * after the unit and values that do not fit the result type; the GError
 * message names the text and says why (ROK_ERROR_INPUT). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A byte count: "40GiB", "1.6TB", "4096", "4 KiB". Fractions are allowed when
 * the product is a whole number of bytes ("1.5KiB"). */
gboolean rok_units_parse_size(const char *text, guint64 *bytes, GError **error);

/* A rate per second: "25GB/s", "24 GiB/s", "312e12", "312 TFLOP/s". A unit, if
 * any, must end in "/s" (or "PS" for FLOPS). */
gboolean rok_units_parse_rate(const char *text, double *per_second, GError **error);

/* A duration, returned in nanoseconds (rounded): "4us", "4µs", "10ms",
 * "1.5s", "100ns"; a plain number is seconds. */
gboolean rok_units_parse_time(const char *text, gint64 *ns, GError **error);

/* A plain finite number, C locale, nothing after it: "0.55", "312e12". */
gboolean rok_units_parse_number(const char *text, double *value, GError **error);

/* Human forms for tables, all with three significant digits:
 * "40.0 GiB", "24.0 GB/s", "1.23 ms", "13.0 B" (counts, for parameters). */
char *rok_units_format_size(guint64 bytes);
char *rok_units_format_rate(double bytes_per_second);
char *rok_units_format_time(double seconds);
char *rok_units_format_count(double count);

G_END_DECLS
