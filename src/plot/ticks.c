/* Axis units and nice tick values.
 *
 * The unit is chosen once per axis and goes into the axis title; tick labels
 * are plain numbers in that unit. Linear ticks are k · m · 10^e with m in
 * {1, 2, 5}: values and labels are computed from the integers k · m so that
 * no 0.30000000000000004 reaches a label. */
#include <math.h>
#include <string.h>

#include "plot-private.h"

typedef struct {
  const char *name;
  double factor;
  double from; /* the smallest magnitude shown in this unit */
} RokUnitStep;

static const RokUnitStep bytes_units[] = {
    {"B", 1.0, 0.0},
    {"KiB", 1024.0, 1024.0},
    {"MiB", 1048576.0, 1048576.0},
    {"GiB", 1073741824.0, 1073741824.0},
    {"TiB", 1099511627776.0, 1099511627776.0},
    {"PiB", 1125899906842624.0, 1125899906842624.0},
};

static const RokUnitStep seconds_units[] = {
    {"ns", 1e-9, 0.0},
    {"µs", 1e-6, 1e-6},
    {"ms", 1e-3, 1e-3},
    /* Step times read better as 2500 ms than as 2.5 s. */
    {"s", 1.0, 10.0},
};

static const char *const si_prefixes[] = {"", "k", "M", "G", "T", "P", "E"};

static const char *const superscripts[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};

/* "10⁶", "2⁻³": a power written the way a paper would. */
static void format_power(char *out, gsize size, int base, int exponent) {
  GString *text = g_string_new(NULL);
  g_string_append_printf(text, "%d", base);
  if (exponent < 0)
    g_string_append(text, "⁻");
  char digits[16];
  g_snprintf(digits, sizeof digits, "%d", ABS(exponent));
  for (const char *d = digits; *d != '\0'; d++)
    g_string_append(text, superscripts[*d - '0']);
  g_strlcpy(out, text->str, size);
  g_string_free(text, TRUE);
}

/* The largest unit that the biggest magnitude reaches (the smallest if none). */
static const RokUnitStep *pick_step(const RokUnitStep *steps, gsize n, double magnitude) {
  const RokUnitStep *best = &steps[0];
  for (gsize i = 0; i < n; i++)
    if (magnitude >= steps[i].from * (1.0 - 1e-12))
      best = &steps[i];
  return best;
}

static void pick_rate_unit(double magnitude, const char *unit_name, RokTicks *ticks) {
  const char *name = unit_name != NULL && unit_name[0] != '\0' ? unit_name : "/s";
  guint p = 0;
  while (p + 1 < G_N_ELEMENTS(si_prefixes) && magnitude >= pow(1000.0, p + 1) * (1.0 - 1e-12))
    p++;
  ticks->scale = pow(1000.0, p);
  /* A unit symbol takes its prefix glued on (GB/s); a word gets a space
   * (k tokens/s). */
  gboolean word = g_ascii_islower(name[0]);
  g_snprintf(ticks->unit, sizeof ticks->unit, "%s%s%s", si_prefixes[p], p > 0 && word ? " " : "",
             name);
}

/* Plain numbers stay as they are unless their labels would get long. */
static void pick_plain_unit(double magnitude, RokTicks *ticks) {
  int exponent = 0;
  if (magnitude >= 1e5)
    exponent = 3 * (int)floor(log10(magnitude) / 3.0);
  else if (magnitude > 0.0 && magnitude < 1e-3)
    exponent = 3 * (int)floor(log10(magnitude) / 3.0);
  ticks->scale = pow(10.0, exponent);
  ticks->unit[0] = '\0';
  if (exponent != 0) {
    char power[24];
    format_power(power, sizeof power, 10, exponent);
    g_snprintf(ticks->unit, sizeof ticks->unit, "×%s", power);
  }
}

static void pick_unit(double magnitude, RokUnitKind unit, const char *unit_name, RokTicks *ticks) {
  const RokUnitStep *step = NULL;
  switch (unit) {
  case ROK_UNIT_BYTES:
    step = pick_step(bytes_units, G_N_ELEMENTS(bytes_units), magnitude);
    break;
  case ROK_UNIT_SECONDS:
    step = pick_step(seconds_units, G_N_ELEMENTS(seconds_units), magnitude);
    break;
  case ROK_UNIT_RATE:
    pick_rate_unit(magnitude, unit_name, ticks);
    return;
  case ROK_UNIT_NONE:
  default:
    pick_plain_unit(magnitude, ticks);
    return;
  }
  ticks->scale = step->factor;
  g_strlcpy(ticks->unit, step->name, sizeof ticks->unit);
}

/* A number with a fixed count of decimals, C locale, and a typographic minus. */
static void format_fixed(char *out, gsize size, double value, int decimals) {
  char format[16], number[G_ASCII_DTOSTR_BUF_SIZE];
  g_snprintf(format, sizeof format, "%%.%df", MAX(decimals, 0));
  g_ascii_formatd(number, sizeof number, format, value);
  if (number[0] == '-')
    g_snprintf(out, size, "−%s", number + 1);
  else
    g_strlcpy(out, number, size);
}

static double power_of_ten(int e) {
  /* Powers of ten up to 1e22 are exact doubles; dividing by one rounds once. */
  return e >= 0 ? pow(10.0, e) : 1.0 / pow(10.0, -e);
}

static double tick_value(gint64 multiple, int e) {
  return e >= 0 ? (double)multiple * pow(10.0, e) : (double)multiple / pow(10.0, -e);
}

/* Linear ticks on [lo, hi] (shown units, lo < hi): the smallest 1-2-5 step
 * that needs at most max_ticks ticks, range rounded out to whole steps. */
static void linear_ticks(double lo, double hi, guint max_ticks, RokTicks *ticks) {
  static const int mantissas[] = {1, 2, 5};
  int e = (int)floor(log10((hi - lo) / max_ticks)) - 1;
  for (;; e++) {
    for (gsize i = 0; i < G_N_ELEMENTS(mantissas); i++) {
      int m = mantissas[i];
      double step = m * power_of_ten(e);
      gint64 first = (gint64)floor(lo / step + 1e-9);
      gint64 last = (gint64)ceil(hi / step - 1e-9);
      if (last - first + 1 > (gint64)max_ticks)
        continue;
      ticks->count = (guint)(last - first + 1);
      for (guint k = 0; k < ticks->count; k++) {
        ticks->values[k] = tick_value((first + k) * m, e);
        format_fixed(ticks->labels[k], sizeof ticks->labels[k], ticks->values[k], -e);
      }
      ticks->min = ticks->values[0];
      ticks->max = ticks->values[ticks->count - 1];
      return;
    }
  }
}

static void format_log_label(char *out, gsize size, double value, int base, int exponent) {
  if (value >= 1e-4 && value < 1e6) {
    /* The fewest decimals that show the value exactly (0.125, 0.05, 64). */
    for (int decimals = 0; decimals < 12; decimals++) {
      char format[16];
      g_snprintf(format, sizeof format, "%%.%df", decimals);
      g_ascii_formatd(out, size, format, value);
      if (fabs(g_ascii_strtod(out, NULL) - value) <= value * 1e-9)
        return;
    }
  }
  format_power(out, size, base, exponent);
}

/* Ticks at powers of `base` (every `stride`-th one). A log axis ends where
 * the data end; only when fewer than two powers lie inside is the range
 * rounded out to powers. */
static void power_ticks(double lo, double hi, int base, guint max_ticks, RokTicks *ticks) {
  double log_base = log((double)base);
  int first = (int)ceil(log(lo) / log_base - 1e-9);
  int last = (int)floor(log(hi) / log_base + 1e-9);
  ticks->min = lo;
  ticks->max = hi;
  if (last <= first) {
    first = (int)floor(log(lo) / log_base + 1e-9);
    last = MAX((int)ceil(log(hi) / log_base - 1e-9), first + 1);
    ticks->min = pow((double)base, first);
    ticks->max = pow((double)base, last);
  }
  int stride = 1;
  while ((last - first) / stride + 1 > (int)max_ticks)
    stride++;
  /* Multiples of the stride, so that 1 = base^0 stays a tick when shown. */
  first = (int)(ceil((double)first / stride) * stride);
  ticks->count = 0;
  for (int p = first; p <= last; p += stride) {
    guint k = ticks->count++;
    ticks->values[k] = pow((double)base, p);
    format_log_label(ticks->labels[k], sizeof ticks->labels[k], ticks->values[k], base, p);
  }
}

/* On a log10 axis spanning about two decades or less, the 1-2-5 values
 * inside the range; FALSE when there would be too many or fewer than 3. */
static gboolean log_125_ticks(double lo, double hi, guint max_ticks, RokTicks *ticks) {
  static const int mantissas[] = {1, 2, 5};
  int e = (int)floor(log10(lo) + 1e-9);
  guint count = 0;
  for (int d = 0; d < 4; d++)
    for (gsize i = 0; i < G_N_ELEMENTS(mantissas); i++) {
      double v = tick_value(mantissas[i], e + d);
      if (v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9))
        continue;
      if (count == max_ticks || count == ROK_TICKS_MAX)
        return FALSE;
      ticks->values[count] = v;
      format_log_label(ticks->labels[count], sizeof ticks->labels[count], v, 10, e + d);
      count++;
    }
  if (count < 3 || hi > tick_value(1, e + 4))
    return FALSE;
  ticks->count = count;
  ticks->min = lo;
  ticks->max = hi;
  return TRUE;
}

/* Within one decade a log axis is nearly linear: linear ticks, without any
 * at or below zero; the axis then starts at the data. */
static void positive_linear_ticks(double lo, double hi, guint max_ticks, RokTicks *ticks) {
  linear_ticks(lo, hi, max_ticks, ticks);
  guint drop = 0;
  while (drop < ticks->count && ticks->values[drop] <= 0.0)
    drop++;
  memmove(ticks->values, ticks->values + drop, (ticks->count - drop) * sizeof ticks->values[0]);
  memmove(ticks->labels, ticks->labels + drop, (ticks->count - drop) * sizeof ticks->labels[0]);
  ticks->count -= drop;
  ticks->min = drop > 0 ? lo : ticks->values[0];
}

/* A range too narrow to divide is widened around its value. */
static void widen(RokScale scale, double *lo, double *hi) {
  double mid = (*lo + *hi) / 2.0;
  if (scale != ROK_SCALE_LINEAR) {
    *lo = mid / 2.0;
    *hi = mid * 2.0;
  } else if (mid == 0.0) {
    *lo = 0.0;
    *hi = 1.0;
  } else {
    *lo = mid - fabs(mid) * 0.1;
    *hi = mid + fabs(mid) * 0.1;
  }
}

void plot_ticks_compute(double lo, double hi, RokUnitKind unit, const char *unit_name,
                       RokScale scale, guint max_ticks, RokTicks *ticks) {
  g_return_if_fail(isfinite(lo) && isfinite(hi) && lo <= hi);
  g_return_if_fail(scale == ROK_SCALE_LINEAR || lo > 0.0);
  max_ticks = CLAMP(max_ticks, 2, ROK_TICKS_MAX);
  memset(ticks, 0, sizeof *ticks);
  ticks->kind = scale;
  if (hi - lo <= 1e-9 * MAX(fabs(lo), fabs(hi)))
    widen(scale, &lo, &hi);
  /* Log axes print large and small plain numbers as powers instead. */
  if (unit == ROK_UNIT_NONE && scale != ROK_SCALE_LINEAR)
    ticks->scale = 1.0;
  else
    pick_unit(MAX(fabs(lo), fabs(hi)), unit, unit_name, ticks);
  lo /= ticks->scale;
  hi /= ticks->scale;
  switch (scale) {
  case ROK_SCALE_LOG2:
    power_ticks(lo, hi, 2, max_ticks, ticks);
    break;
  case ROK_SCALE_LOG10:
    if (log_125_ticks(lo, hi, max_ticks, ticks))
      break;
    if (hi / lo < 10.0)
      positive_linear_ticks(lo, hi, max_ticks, ticks);
    else
      power_ticks(lo, hi, 10, max_ticks, ticks);
    break;
  case ROK_SCALE_LINEAR:
  default:
    linear_ticks(lo, hi, max_ticks, ticks);
    break;
  }
}

double plot_ticks_fraction(const RokTicks *ticks, double value) {
  double shown = value / ticks->scale;
  if (ticks->kind == ROK_SCALE_LINEAR)
    return (shown - ticks->min) / (ticks->max - ticks->min);
  return log(shown / ticks->min) / log(ticks->max / ticks->min);
}

char *plot_ticks_axis_title(const RokTicks *ticks, const char *title) {
  const char *text = title != NULL ? title : "";
  if (ticks->unit[0] == '\0')
    return g_strdup(text);
  if (text[0] == '\0')
    return g_strdup(ticks->unit);
  return g_strdup_printf("%s (%s)", text, ticks->unit);
}
