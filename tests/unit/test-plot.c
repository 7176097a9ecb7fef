/* Tests of the chart layer: tick values and units, layout (text inside the
 * canvas, no overlaps, legend off the data), deterministic PNG/SVG/PDF
 * output, and errors. */
#include <cairo.h>
#include <dlfcn.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "plot/plot-private.h"
#include "rok/core.h"
#include "rok/plot.h"

#define GIB 1073741824.0

/* ---- ticks ---- */

static void assert_ticks(const RokTicks *ticks, const char *unit, const char *const *labels,
                         double min, double max) {
  g_assert_cmpstr(ticks->unit, ==, unit);
  guint n = g_strv_length((char **)labels);
  g_assert_cmpuint(ticks->count, ==, n);
  for (guint i = 0; i < n; i++)
    g_assert_cmpstr(ticks->labels[i], ==, labels[i]);
  g_assert_cmpfloat_with_epsilon(ticks->min, min, 1e-12 * MAX(1.0, fabs(min)));
  g_assert_cmpfloat_with_epsilon(ticks->max, max, 1e-12 * MAX(1.0, fabs(max)));
}

static void test_ticks_examples(void) {
  RokTicks t;
  plot_ticks_compute(0.0, 1.0, ROK_UNIT_NONE, NULL, ROK_SCALE_LINEAR, 8, &t);
  assert_ticks(&t, "", (const char *[]){"0.0", "0.2", "0.4", "0.6", "0.8", "1.0", NULL}, 0.0, 1.0);

  plot_ticks_compute(0.013, 0.0171, ROK_UNIT_NONE, NULL, ROK_SCALE_LINEAR, 8, &t);
  assert_ticks(&t, "", (const char *[]){"0.013", "0.014", "0.015", "0.016", "0.017", "0.018", NULL},
               0.013, 0.018);

  plot_ticks_compute(1.0, 64.0, ROK_UNIT_NONE, NULL, ROK_SCALE_LINEAR, 8, &t);
  assert_ticks(&t, "", (const char *[]){"0", "10", "20", "30", "40", "50", "60", "70", NULL}, 0.0,
               70.0);

  plot_ticks_compute(3.2e9, 4.1e10, ROK_UNIT_BYTES, NULL, ROK_SCALE_LINEAR, 8, &t);
  assert_ticks(&t, "GiB", (const char *[]){"0", "10", "20", "30", "40", NULL}, 0.0, 40.0);
  g_assert_cmpfloat(t.scale, ==, GIB);

  /* The same range in seconds reads in s; milliseconds stay up to 10 s. */
  plot_ticks_compute(0.0, 2.5, ROK_UNIT_SECONDS, NULL, ROK_SCALE_LINEAR, 8, &t);
  assert_ticks(&t, "ms", (const char *[]){"0", "500", "1000", "1500", "2000", "2500", NULL}, 0.0,
               2500.0);

  plot_ticks_compute(-3.7, -0.2, ROK_UNIT_NONE, NULL, ROK_SCALE_LINEAR, 8, &t);
  assert_ticks(&t, "", (const char *[]){"−4", "−3", "−2", "−1", "0", NULL}, -4.0, 0.0);

  plot_ticks_compute(-1e-3, 2e-3, ROK_UNIT_SECONDS, NULL, ROK_SCALE_LINEAR, 8, &t);
  assert_ticks(&t, "ms", (const char *[]){"−1.0", "−0.5", "0.0", "0.5", "1.0", "1.5", "2.0", NULL},
               -1.0, 2.0);

  plot_ticks_compute(0.0, 41000.0, ROK_UNIT_RATE, "tokens/s", ROK_SCALE_LINEAR, 8, &t);
  assert_ticks(&t, "k tokens/s", (const char *[]){"0", "10", "20", "30", "40", "50", NULL}, 0.0,
               50.0);
}

static void test_ticks_degenerate(void) {
  RokTicks t;
  /* Zero width at zero: a unit range. */
  plot_ticks_compute(0.0, 0.0, ROK_UNIT_NONE, NULL, ROK_SCALE_LINEAR, 8, &t);
  g_assert_cmpfloat(t.min, ==, 0.0);
  g_assert_cmpfloat(t.max, ==, 1.0);
  /* A single value lies strictly inside its axis. */
  const double singles[] = {5.0, -5.0, 1e-7, 123456.0, 40.0 * GIB};
  for (gsize i = 0; i < G_N_ELEMENTS(singles); i++) {
    plot_ticks_compute(singles[i], singles[i], ROK_UNIT_BYTES, NULL, ROK_SCALE_LINEAR, 8, &t);
    double shown = singles[i] / t.scale;
    g_assert_cmpfloat(t.min, <, shown);
    g_assert_cmpfloat(t.max, >, shown);
    g_assert_cmpuint(t.count, >=, 3);
    g_assert_cmpuint(t.count, <=, 8);
  }
  /* Nearly zero width relative to the value counts as zero width. */
  plot_ticks_compute(1e9, 1e9 + 1e-3, ROK_UNIT_NONE, NULL, ROK_SCALE_LINEAR, 8, &t);
  g_assert_cmpuint(t.count, >=, 3);
  g_assert_cmpstr(t.unit, ==, "×10⁹");
  /* Single value on a log axis. */
  plot_ticks_compute(16.0, 16.0, ROK_UNIT_NONE, NULL, ROK_SCALE_LOG2, 8, &t);
  g_assert_cmpuint(t.count, >=, 2);
  g_assert_cmpfloat(t.min, <, 16.0);
  g_assert_cmpfloat(t.max, >, 16.0);
}

/* Any range: ticks ascend in one 1-2-5 step, cover the range, 4..8 of them,
 * and the labels read back as the values. */
static void check_linear_ticks(double lo, double hi, RokUnitKind unit) {
  RokTicks t;
  plot_ticks_compute(lo, hi, unit, "B/s", ROK_SCALE_LINEAR, 8, &t);
  g_assert_cmpuint(t.count, >=, 4);
  g_assert_cmpuint(t.count, <=, 8);
  double step = t.values[1] - t.values[0];
  double mantissa = step / pow(10.0, floor(log10(step) + 1e-9));
  g_assert_true(fabs(mantissa - 1) < 1e-6 || fabs(mantissa - 2) < 1e-6 ||
                fabs(mantissa - 5) < 1e-6);
  for (guint i = 1; i < t.count; i++)
    g_assert_cmpfloat(fabs(t.values[i] - t.values[i - 1] - step), <, step * 1e-6);
  double span = t.max - t.min;
  g_assert_cmpfloat(t.min, <=, lo / t.scale + span * 1e-9);
  g_assert_cmpfloat(t.max, >=, hi / t.scale - span * 1e-9);
  g_assert_cmpfloat(t.min, ==, t.values[0]);
  g_assert_cmpfloat(t.max, ==, t.values[t.count - 1]);
  for (guint i = 0; i < t.count; i++) {
    g_autoptr(GString) ascii = g_string_new(t.labels[i]);
    g_string_replace(ascii, "−", "-", 0);
    double back = g_ascii_strtod(ascii->str, NULL);
    g_assert_cmpfloat(fabs(back - t.values[i]), <=, step * 1e-6);
    if (i > 0)
      g_assert_cmpstr(t.labels[i], !=, t.labels[i - 1]);
  }
}

static void test_ticks_random(void) {
  g_autoptr(GRand) rand = g_rand_new_with_seed(42);
  const RokUnitKind units[] = {ROK_UNIT_NONE, ROK_UNIT_BYTES, ROK_UNIT_SECONDS, ROK_UNIT_RATE};
  for (int i = 0; i < 4000; i++) {
    double scale = pow(10.0, g_rand_double_range(rand, -8.0, 14.0));
    double a = g_rand_double_range(rand, -1.0, 1.0) * scale;
    double b = a + g_rand_double_range(rand, 1e-4, 3.0) * scale;
    if (i % 3 == 0)
      a = 0.0, b = fabs(b) + scale * 1e-3;
    check_linear_ticks(a, b, units[i % G_N_ELEMENTS(units)]);
  }
  const double fixed[][2] = {{0, 1},       {0.013, 0.0171}, {1, 64}, {3.2e9, 4.1e10},
                             {-3.7, -0.2}, {-1e-3, 2e-3},   {0, 15}, {0.1, 0.3},
                             {99, 101},    {-1e6, 1e6}};
  for (gsize i = 0; i < G_N_ELEMENTS(fixed); i++)
    check_linear_ticks(fixed[i][0], fixed[i][1], ROK_UNIT_NONE);
}

static void test_ticks_units(void) {
  static const struct {
    double value;
    RokUnitKind unit;
    const char *name;
    const char *shown;
  } cases[] = {
      {512, ROK_UNIT_BYTES, NULL, "B"},
      {2048, ROK_UNIT_BYTES, NULL, "KiB"},
      {300 * 1048576.0, ROK_UNIT_BYTES, NULL, "MiB"},
      {1.5 * GIB, ROK_UNIT_BYTES, NULL, "GiB"},
      {3 * 1024 * GIB, ROK_UNIT_BYTES, NULL, "TiB"},
      {5e-6, ROK_UNIT_SECONDS, NULL, "µs"},
      {4e-8, ROK_UNIT_SECONDS, NULL, "ns"},
      {0.25, ROK_UNIT_SECONDS, NULL, "ms"},
      {9.0, ROK_UNIT_SECONDS, NULL, "ms"},
      {20.0, ROK_UNIT_SECONDS, NULL, "s"},
      {800, ROK_UNIT_RATE, "tokens/s", "tokens/s"},
      {2.4e10, ROK_UNIT_RATE, "B/s", "GB/s"},
      {3.1e14, ROK_UNIT_RATE, "FLOP/s", "TFLOP/s"},
      {5e6, ROK_UNIT_RATE, "samples/s", "M samples/s"},
      {64, ROK_UNIT_NONE, NULL, ""},
      {50000, ROK_UNIT_NONE, NULL, ""},
      {2e6, ROK_UNIT_NONE, NULL, "×10⁶"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    RokTicks t;
    plot_ticks_compute(0.0, cases[i].value, cases[i].unit, cases[i].name, ROK_SCALE_LINEAR, 8, &t);
    g_assert_cmpstr(t.unit, ==, cases[i].shown);
  }
  RokTicks t;
  plot_ticks_compute(0.0, 40 * GIB, ROK_UNIT_BYTES, NULL, ROK_SCALE_LINEAR, 8, &t);
  g_autofree char *title = plot_ticks_axis_title(&t, "Peak memory");
  g_assert_cmpstr(title, ==, "Peak memory (GiB)");
  g_autofree char *bare = plot_ticks_axis_title(&t, NULL);
  g_assert_cmpstr(bare, ==, "GiB");
  plot_ticks_compute(0.0, 64, ROK_UNIT_NONE, NULL, ROK_SCALE_LINEAR, 8, &t);
  g_autofree char *plain = plot_ticks_axis_title(&t, "Micro-batch size");
  g_assert_cmpstr(plain, ==, "Micro-batch size");
}

static void test_ticks_log(void) {
  RokTicks t;
  plot_ticks_compute(1.0, 64.0, ROK_UNIT_NONE, NULL, ROK_SCALE_LOG2, 8, &t);
  assert_ticks(&t, "", (const char *[]){"1", "2", "4", "8", "16", "32", "64", NULL}, 1.0, 64.0);
  g_assert_cmpfloat_with_epsilon(plot_ticks_fraction(&t, 8.0), 0.5, 1e-12);

  /* Too many powers: every third one (powers of 8). */
  plot_ticks_compute(1.0, 65536.0, ROK_UNIT_NONE, NULL, ROK_SCALE_LOG2, 8, &t);
  g_assert_cmpuint(t.count, <=, 8);
  g_assert_cmpstr(t.labels[0], ==, "1");
  g_assert_cmpstr(t.labels[1], ==, "8");

  plot_ticks_compute(1.0, 1e6, ROK_UNIT_NONE, NULL, ROK_SCALE_LOG10, 8, &t);
  assert_ticks(&t, "", (const char *[]){"1", "10", "100", "1000", "10000", "100000", "10⁶", NULL},
               1.0, 1e6);

  plot_ticks_compute(1.5, 40.0, ROK_UNIT_NONE, NULL, ROK_SCALE_LOG10, 8, &t);
  assert_ticks(&t, "", (const char *[]){"2", "5", "10", "20", NULL}, 1.5, 40.0);

  plot_ticks_compute(1e-9, 1e3, ROK_UNIT_NONE, NULL, ROK_SCALE_LOG10, 8, &t);
  g_assert_cmpuint(t.count, <=, 8);
  g_assert_cmpuint(t.count, >=, 4);

  /* Within a decade a log axis gets linear ticks, all positive. */
  plot_ticks_compute(0.013, 0.0171, ROK_UNIT_NONE, NULL, ROK_SCALE_LOG10, 8, &t);
  g_assert_cmpuint(t.count, >=, 3);
  for (guint i = 0; i < t.count; i++)
    g_assert_cmpfloat(t.values[i], >, 0.0);
  g_assert_cmpfloat(t.min, >, 0.0);

  /* Bytes on a log2 axis: powers of two in the chosen unit. */
  plot_ticks_compute(GIB, 64 * GIB, ROK_UNIT_BYTES, NULL, ROK_SCALE_LOG2, 8, &t);
  assert_ticks(&t, "GiB", (const char *[]){"1", "2", "4", "8", "16", "32", "64", NULL}, 1.0, 64.0);
}

/* ---- palette ---- */

static void test_palette(void) {
  RokRgb blue = plot_palette_color(ROK_COLOR_BLUE);
  g_assert_cmpfloat_with_epsilon(blue.b, 0xB2 / 255.0, 1e-9);
  RokRgb vermillion = plot_palette_color(ROK_COLOR_VERMILLION + ROK_PLOT_COLORS);
  g_assert_cmpfloat_with_epsilon(vermillion.r, 0xD5 / 255.0, 1e-9);
  for (guint i = 0; i < ROK_PLOT_COLORS; i++)
    for (guint j = i + 1; j < ROK_PLOT_COLORS; j++) {
      RokRgb a = plot_palette_color(i), b = plot_palette_color(j);
      g_assert_cmpfloat(fabs(a.r - b.r) + fabs(a.g - b.g) + fabs(a.b - b.b), >, 0.2);
    }
  /* Every shape inks a different set of pixels. */
  g_autoptr(GPtrArray) shapes = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < ROK_PLOT_COLORS; i++) {
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 20, 20);
    cairo_t *cr = cairo_create(s);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    plot_palette_marker(cr, i, 10, 10, 12, (RokRgb){0, 0, 0}, FALSE);
    cairo_destroy(cr);
    cairo_surface_flush(s);
    gsize size = (gsize)cairo_image_surface_get_stride(s) * 20;
    char *copy = g_memdup2(cairo_image_surface_get_data(s), size);
    for (guint j = 0; j < shapes->len; j++)
      g_assert_true(memcmp(copy, g_ptr_array_index(shapes, j), size) != 0);
    g_ptr_array_add(shapes, copy);
    cairo_surface_destroy(s);
  }
}

/* ---- text and boxes ---- */

static void test_boxes(void) {
  RokBox a = {0, 0, 10, 10}, b = {10, 0, 5, 5}, c = {5, 5, 10, 10};
  g_assert_false(plot_box_overlaps(&a, &b)); /* touching is not overlapping */
  g_assert_true(plot_box_overlaps(&a, &c));
  g_assert_true(plot_box_contains(&a, &(RokBox){1, 1, 2, 2}));
  g_assert_false(plot_box_contains(&a, &c));
  g_assert_true(plot_box_hits_segment(&a, -5, 5, 15, 5));
  g_assert_true(plot_box_hits_segment(&a, 2, 2, 3, 3)); /* inside */
  g_assert_false(plot_box_hits_segment(&a, -5, -5, 20, -1));
  g_assert_false(plot_box_hits_segment(&a, 11, -5, 20, 30));
  g_assert_true(plot_box_hits_segment(&a, -2, 5, 5, -2)); /* cuts a corner */
}

static void test_text_wrap(void) {
  cairo_t *cr = plot_text_context_new();
  const char *text = "A rather long title that cannot possibly fit into a narrow chart";
  double size;
  g_auto(GStrv) lines = plot_text_fit(cr, text, TRUE, 15.0, 11.0, 200.0, 0, &size);
  g_assert_cmpfloat(size, ==, 11.0);
  g_assert_cmpuint(g_strv_length(lines), >, 1);
  g_autofree char *joined = g_strjoinv(" ", lines);
  g_assert_cmpstr(joined, ==, text);
  for (char **line = lines; *line != NULL; line++)
    g_assert_cmpfloat(plot_text_width(cr, *line, size, TRUE), <=, 200.0);
  /* Fits when shrunk a little: one line, smaller font. */
  double full = plot_text_width(cr, "Throughput by micro-batch", 15.0, TRUE);
  g_auto(GStrv) one =
      plot_text_fit(cr, "Throughput by micro-batch", TRUE, 15.0, 11.0, full * 0.9, 1, &size);
  g_assert_cmpuint(g_strv_length(one), ==, 1);
  g_assert_cmpfloat(size, <, 15.0);
  g_assert_cmpfloat(size, >=, 11.0);
  /* At most two lines, the rest cut short with an ellipsis. */
  g_auto(GStrv) two = plot_text_wrap_lines(cr, text, 11.0, FALSE, 150.0, 2);
  g_assert_cmpuint(g_strv_length(two), ==, 2);
  g_assert_true(g_str_has_suffix(two[1], "…"));
  g_assert_true(g_str_has_prefix(text, two[0]));
  for (char **line = two; *line != NULL; line++)
    g_assert_cmpfloat(plot_text_width(cr, *line, 11.0, FALSE), <=, 150.0);
  /* A word wider than the room is cut too. */
  g_auto(GStrv) word = plot_text_wrap_lines(cr, "Incomprehensibilities", 11.0, FALSE, 60.0, 1);
  g_assert_cmpuint(g_strv_length(word), ==, 1);
  g_assert_true(g_str_has_suffix(word[0], "…"));
  g_assert_cmpfloat(plot_text_width(cr, word[0], 11.0, FALSE), <=, 60.0);
  g_auto(GStrv) fits = plot_text_wrap_lines(cr, "short", 11.0, FALSE, 150.0, 1);
  g_assert_cmpstr(fits[0], ==, "short");
  cairo_destroy(cr);
}

/* ---- charts used below ---- */

static const char *const strategies[] = {"keep", "recompute", "selective", "offload", "tba", "rok"};

static RokChart *throughput_chart(const char *title, const char *suffix) {
  RokChart *chart = rok_chart_new(title);
  rok_chart_set_axis(chart, ROK_AXIS_X, "Micro-batch size", ROK_UNIT_NONE, NULL);
  rok_chart_set_axis_scale(chart, ROK_AXIS_X, ROK_SCALE_LOG2);
  rok_chart_set_axis(chart, ROK_AXIS_Y, "Throughput", ROK_UNIT_RATE, "tokens/s");
  rok_chart_axis_include(chart, ROK_AXIS_Y, 0.0);
  for (guint s = 0; s < G_N_ELEMENTS(strategies); s++) {
    g_autofree char *name = g_strdup_printf("%s%s", strategies[s], suffix);
    guint id = rok_chart_add_series(chart, name, ROK_SERIES_LINE | ROK_SERIES_MARKERS, s);
    for (int mb = 1; mb <= 64; mb *= 2) {
      double tput = 2048.0 * mb / (0.09 + 0.21 * mb) * (1.0 - 0.05 * s);
      gboolean fits = (14.0 + (2.0 - 0.3 * s) * mb) <= 40.0;
      rok_chart_add_point(chart, id, mb, tput, fits ? ROK_POINT_FILLED : ROK_POINT_HOLLOW, NULL);
    }
  }
  rok_chart_set_hollow_meaning(chart, "does not fit in GPU memory (40 GiB)");
  return chart;
}

static RokChart *rok_curve_chart(void) {
  RokChart *chart = rok_chart_new("ROK curve: activation memory against throughput");
  rok_chart_set_axis(chart, ROK_AXIS_X, "Activation peak memory", ROK_UNIT_BYTES, NULL);
  rok_chart_set_axis(chart, ROK_AXIS_Y, "Throughput", ROK_UNIT_RATE, "tokens/s");
  guint curve = rok_chart_add_series(chart, "rok planner", ROK_SERIES_LINE | ROK_SERIES_MARKERS,
                                     ROK_COLOR_BLACK);
  for (int i = 0; i < 32; i++) {
    double gib = 4.0 + i * 26.0 / 31.0;
    rok_chart_add_point(chart, curve, gib * GIB, 9800.0 - 2600.0 * exp(-(gib - 4.0) / 4.0),
                        ROK_POINT_FILLED, NULL);
  }
  const double x[] = {30.4, 4.1, 12.5, 9.0, 18.2}, y[] = {9800, 7150, 9300, 9510, 9760};
  for (guint s = 0; s < 5; s++) {
    guint id =
        rok_chart_add_series(chart, strategies[s], ROK_SERIES_MARKERS | ROK_SERIES_NO_LEGEND, s);
    rok_chart_add_point(chart, id, x[s] * GIB, y[s], ROK_POINT_FILLED, strategies[s]);
  }
  rok_chart_add_reference(chart, ROK_AXIS_X, 20 * GIB, "budget 20 GiB");
  return chart;
}

static RokTimeline *step_timeline(const char *title) {
  RokTimeline *timeline = rok_timeline_new(title);
  const char *tracks[] = {"compute", "PCIe d2h", "PCIe h2d", "NVMe write", "NVMe read"};
  const char *kinds[] = {"forward", "backward", "recompute", "offload", "prefetch"};
  for (gsize i = 0; i < 5; i++) {
    rok_timeline_add_track(timeline, tracks[i]);
    rok_timeline_add_kind(timeline, kinds[i], (guint)i);
  }
  double now = 0.0, memory = 14 * GIB;
  for (int layer = 0; layer < 24; layer++) {
    rok_timeline_add_bar(timeline, 0, 0, now, now + 0.004);
    rok_timeline_add_bar(timeline, 1, 3, now + 0.004, now + 0.009);
    rok_timeline_add_bar(timeline, 3, 3, now + 0.009, now + 0.015);
    now += 0.004;
    memory += 0.5 * GIB;
    rok_timeline_add_memory(timeline, now, memory);
  }
  for (int layer = 23; layer >= 0; layer--) {
    rok_timeline_add_bar(timeline, 4, 4, now - 0.006, now - 0.002);
    rok_timeline_add_bar(timeline, 2, 4, now - 0.002, now);
    if (layer % 4 == 0) {
      rok_timeline_add_bar(timeline, 0, 2, now, now + 0.003);
      now += 0.003;
    }
    rok_timeline_add_bar(timeline, 0, 1, now, now + 0.008);
    now += 0.008;
    memory -= 0.5 * GIB;
    rok_timeline_add_memory(timeline, now, memory);
  }
  rok_timeline_add_memory_limit(timeline, 40 * GIB, "GPU capacity 40 GiB");
  rok_timeline_add_memory_limit(timeline, 30 * GIB, "budget 30 GiB");
  return timeline;
}

/* ---- layout ---- */

static void assert_texts_apart(const GArray *texts, double width, double height) {
  RokBox canvas = {0, 0, width, height};
  for (guint i = 0; i < texts->len; i++) {
    const RokText *a = &g_array_index(texts, RokText, i);
    if (!plot_box_contains(&canvas, &a->box))
      g_error("text \"%s\" at (%g, %g) %g×%g runs off the %g×%g canvas", a->text, a->box.x,
              a->box.y, a->box.w, a->box.h, width, height);
    g_assert_cmpfloat(a->size, >=, 7.0); /* readable even when shrunk to fit */
    for (guint j = i + 1; j < texts->len; j++) {
      const RokText *b = &g_array_index(texts, RokText, j);
      if (plot_box_overlaps(&a->box, &b->box))
        g_error("text \"%s\" overlaps \"%s\"", a->text, b->text);
    }
  }
}

/* Legend texts lie inside the legend; no other text touches it. */
static void assert_legend_clear(const RokChartLayout *layout) {
  if (!layout->has_legend)
    return;
  RokBox canvas = {0, 0, layout->width, layout->height};
  g_assert_true(plot_box_contains(&canvas, &layout->legend));
  for (guint i = 0; i < layout->texts->len; i++) {
    const RokText *text = &g_array_index(layout->texts, RokText, i);
    if (plot_box_contains(&layout->legend, &text->box))
      continue;
    g_assert_false(plot_box_overlaps(&layout->legend, &text->box));
  }
}

static RokChart *crowded_chart(void) {
  RokChart *chart = throughput_chart(
      "An exceptionally long chart title that goes on and on about throughput, micro-batch sizes, "
      "strategies and hardware until it cannot fit on one line",
      " (with a rather long descriptive series name)");
  rok_chart_set_axis(chart, ROK_AXIS_X,
                     "Micro-batch size per data-parallel rank and pipeline stage, in sequences",
                     ROK_UNIT_NONE, NULL);
  rok_chart_set_axis(chart, ROK_AXIS_Y,
                     "Model throughput measured as algorithmic tokens per second of wall time",
                     ROK_UNIT_RATE, "tokens/s");
  rok_chart_add_reference(chart, ROK_AXIS_Y, 9000.0, "a horizontal reference with a long label");
  rok_chart_add_reference(chart, ROK_AXIS_Y, 8800.0, "and a second one just below it");
  rok_chart_add_reference(chart, ROK_AXIS_X, 16.0, "micro-batch 16");
  guint labelled = rok_chart_add_series(chart, "", ROK_SERIES_MARKERS, ROK_COLOR_BLACK);
  rok_chart_add_point(chart, labelled, 4.0, 5000.0, ROK_POINT_FILLED, "a labelled point");
  rok_chart_add_point(chart, labelled, 4.4, 5050.0, ROK_POINT_FILLED, "its close neighbour");
  rok_chart_add_point(chart, labelled, 4.0, 5200.0, ROK_POINT_FILLED, "a third one nearby");
  return chart;
}

static void test_layout_no_overlaps(void) {
  const double sizes[][2] = {{600, 380}, {420, 300}, {1000, 320}, {320, 260}};
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    g_autoptr(RokChart) chart = crowded_chart();
    rok_chart_set_size(chart, sizes[i][0], sizes[i][1]);
    g_autoptr(RokChartLayout) layout = plot_chart_layout_new(chart);
    assert_texts_apart(layout->texts, sizes[i][0], sizes[i][1]);
    assert_legend_clear(layout);
    RokBox canvas = {0, 0, sizes[i][0], sizes[i][1]};
    g_assert_true(plot_box_contains(&canvas, &layout->plot));
    g_assert_cmpfloat(layout->plot.w, >, 50.0);
    g_assert_cmpfloat(layout->plot.h, >, 50.0);
    /* The title was shrunk or wrapped: its first text is the title. */
    const RokText *title = &g_array_index(layout->texts, RokText, 0);
    g_assert_true(title->bold);
    g_assert_true(g_str_has_prefix(chart->title, title->text));
    g_assert_true(strcmp(title->text, chart->title) != 0 || title->size < 15.0);
  }
  g_autoptr(RokChart) curve = rok_curve_chart();
  g_autoptr(RokChartLayout) layout = plot_chart_layout_new(curve);
  assert_texts_apart(layout->texts, curve->width, curve->height);
  assert_legend_clear(layout);
  /* All five point labels were placed. */
  guint labels = 0;
  for (guint i = 0; i < layout->texts->len; i++)
    for (guint s = 0; s < 5; s++)
      labels += strcmp(g_array_index(layout->texts, RokText, i).text, strategies[s]) == 0;
  g_assert_cmpuint(labels, ==, 5);
}

/* Any canvas from the smallest allowed up: all text on it, none overlapping. */
static void test_layout_random_sizes(void) {
  g_autoptr(GRand) rand = g_rand_new_with_seed(7);
  for (int i = 0; i < 120; i++) {
    double w = g_rand_double_range(rand, 240, 1200), h = g_rand_double_range(rand, 180, 900);
    g_autoptr(RokChart) chart = i % 3 == 0   ? crowded_chart()
                                : i % 3 == 1 ? throughput_chart("Throughput by micro-batch", "")
                                             : rok_curve_chart();
    rok_chart_set_size(chart, w, h);
    g_autoptr(RokChartLayout) layout = plot_chart_layout_new(chart);
    assert_texts_apart(layout->texts, w, h);
    assert_legend_clear(layout);
    /* Ordinary charts need no compromise at any of these sizes. */
    if (i % 3 != 0)
      g_assert_cmpuint(layout->compromises, ==, 0);
  }
  for (int i = 0; i < 40; i++) {
    double w = g_rand_double_range(rand, 300, 1200), h = g_rand_double_range(rand, 200, 900);
    g_autoptr(RokTimeline) timeline = step_timeline("A timeline with a rather long title");
    rok_timeline_set_size(timeline, w, h);
    g_autoptr(RokTimelineLayout) layout = plot_timeline_layout_new(timeline);
    assert_texts_apart(layout->texts, w, h);
  }
}

/* Data only at the top left: the legend goes elsewhere and covers no marker. */
static void test_layout_legend_avoids_data(void) {
  g_autoptr(RokChart) chart = rok_chart_new("Legend placement");
  for (guint s = 0; s < 3; s++) {
    guint id = rok_chart_add_series(chart, strategies[s], ROK_SERIES_MARKERS, s);
    for (int i = 0; i < 10; i++)
      rok_chart_add_point(chart, id, i * 0.1, 10.0 - i * 0.05 - s * 0.2, 0, NULL);
  }
  rok_chart_axis_include(chart, ROK_AXIS_X, 10.0);
  rok_chart_axis_include(chart, ROK_AXIS_Y, 0.0);
  g_autoptr(RokChartLayout) layout = plot_chart_layout_new(chart);
  g_assert_true(layout->has_legend);
  g_assert_true(plot_box_contains(&layout->plot, &layout->legend));
  for (guint s = 0; s < chart->series->len; s++) {
    const RokSeries *series = g_ptr_array_index(chart->series, s);
    for (guint p = 0; p < series->points->len; p++) {
      const RokPoint *point = &g_array_index(series->points, RokPoint, p);
      double x, y;
      plot_chart_layout_map(layout, point->x, point->y, &x, &y);
      RokBox marker = {x - 4, y - 4, 8, 8};
      g_assert_false(plot_box_overlaps(&marker, &layout->legend));
    }
  }
  /* The first corner tried is the top left, taken by data here. */
  g_assert_cmpfloat(layout->legend.x, >, layout->plot.x + layout->plot.w / 2.0);
}

/* Lines through every corner and edge: the legend moves out to the right. */
static void test_layout_legend_outside(void) {
  g_autoptr(RokChart) chart = rok_chart_new("Dense");
  for (guint s = 0; s < 4; s++) {
    guint id = rok_chart_add_series(chart, strategies[s], ROK_SERIES_LINE, s);
    for (int i = 0; i <= 48; i++)
      rok_chart_add_point(chart, id, i, (i * (7 + s * 3)) % 49, 0, NULL);
  }
  g_autoptr(RokChartLayout) layout = plot_chart_layout_new(chart);
  g_assert_true(layout->has_legend);
  g_assert_cmpfloat(layout->legend.x, >=, layout->plot.x + layout->plot.w);
  assert_texts_apart(layout->texts, chart->width, chart->height);
  assert_legend_clear(layout);
}

/* Without memory samples the Gantt chart takes the room; rows stay a
 * sensible height. */
static void test_layout_timeline_no_memory(void) {
  g_autoptr(RokTimeline) timeline = rok_timeline_new("Bars only");
  rok_timeline_add_track(timeline, "compute");
  rok_timeline_add_track(timeline, "PCIe d2h");
  rok_timeline_add_kind(timeline, "forward", 0);
  rok_timeline_add_bar(timeline, 0, 0, 0.0, 2e-3);
  rok_timeline_add_bar(timeline, 1, 0, 1e-3, 4e-3);
  g_autoptr(RokTimelineLayout) layout = plot_timeline_layout_new(timeline);
  g_assert_false(layout->has_memory);
  assert_texts_apart(layout->texts, layout->width, layout->height);
  g_assert_cmpfloat(layout->row_h, >, 20.0);
  g_assert_cmpfloat(layout->row_h, <, 60.0);
  g_assert_cmpstr(layout->time_ticks.unit, ==, "ms");
  g_assert_cmpfloat(plot_timeline_layout_x(layout, 0.0), ==, layout->gantt.x);
}

static void test_layout_timeline(void) {
  const double sizes[][2] = {{720, 440}, {400, 300}, {1200, 500}};
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    g_autoptr(RokTimeline) timeline = step_timeline(
        "A timeline with a long title describing the model, the hardware and the plan in detail");
    rok_timeline_set_size(timeline, sizes[i][0], sizes[i][1]);
    g_autoptr(RokTimelineLayout) layout = plot_timeline_layout_new(timeline);
    assert_texts_apart(layout->texts, sizes[i][0], sizes[i][1]);
    g_assert_true(layout->has_memory);
    g_assert_cmpfloat(layout->memory.y, >, layout->gantt.y + layout->gantt.h);
    g_assert_cmpfloat(layout->memory.y + layout->memory.h, <, sizes[i][1]);
    g_assert_cmpfloat(layout->gantt.x + layout->gantt.w, <=, sizes[i][0]);
    g_assert_cmpuint(layout->legend_entries->len, ==, 5);
    g_assert_cmpstr(layout->time_ticks.unit, ==, "ms");
    g_assert_cmpstr(layout->memory_ticks.unit, ==, "GiB");
    /* The memory axis reaches the capacity line. */
    g_assert_cmpfloat(layout->memory_ticks.max, >=, 40.0);
  }
}

/* ---- files ---- */

typedef struct {
  char *dir;
} Fixture;

static void fixture_set_up(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  f->dir = g_dir_make_tmp("rok-plot-XXXXXX", &error);
  g_assert_no_error(error);
}

static void remove_tree(const char *path) {
  if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    const char *name;
    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
      g_autofree char *child = g_build_filename(path, name, NULL);
      remove_tree(child);
    }
    g_rmdir(path);
  } else {
    g_unlink(path);
  }
}

static void fixture_tear_down(Fixture *f, gconstpointer data) {
  (void)data;
  /* ROK_KEEP_PLOTS=1 keeps the example charts for a look. */
  if (g_getenv("ROK_KEEP_PLOTS") != NULL)
    g_printerr("charts kept in %s\n", f->dir);
  else
    remove_tree(f->dir);
  g_free(f->dir);
}

static GBytes *read_bytes(const char *path) {
  g_autoptr(GError) error = NULL;
  char *contents;
  gsize length;
  g_assert_true(g_file_get_contents(path, &contents, &length, &error));
  g_assert_no_error(error);
  return g_bytes_new_take(contents, length);
}

static gboolean bytes_contain(GBytes *bytes, const char *needle) {
  gsize n;
  const char *data = g_bytes_get_data(bytes, &n);
  return g_strstr_len(data, (gssize)n, needle) != NULL;
}

static guint count_files(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  guint n = 0;
  while (d != NULL && g_dir_read_name(d) != NULL)
    n++;
  return n;
}

static void assert_svg_well_formed(GBytes *svg) {
  static const GMarkupParser parser = {0};
  gsize n;
  const char *data = g_bytes_get_data(svg, &n);
  g_autoptr(GMarkupParseContext) context = g_markup_parse_context_new(&parser, 0, NULL, NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(g_markup_parse_context_parse(context, data, (gssize)n, &error) &&
                g_markup_parse_context_end_parse(context, &error));
  g_assert_no_error(error);
}

typedef gboolean (*SaveFunc)(gconstpointer what, const char *path, GError **error);

static gboolean save_chart(gconstpointer chart, const char *path, GError **error) {
  return rok_chart_save(chart, path, error);
}

static gboolean save_timeline(gconstpointer timeline, const char *path, GError **error) {
  return rok_timeline_save(timeline, path, error);
}

/* Two renderings of each format are byte-identical; each is sane. */
static void check_outputs(const char *dir, const char *stem, SaveFunc save, gconstpointer what,
                          int png_width, int png_height) {
  const char *extensions[] = {"png", "svg", "pdf"};
  for (gsize e = 0; e < G_N_ELEMENTS(extensions); e++) {
    g_autofree char *first = g_strdup_printf("%s/%s.%s", dir, stem, extensions[e]);
    g_autofree char *second = g_strdup_printf("%s/%s-again.%s", dir, stem, extensions[e]);
    g_autoptr(GError) error = NULL;
    g_assert_true(save(what, first, &error));
    g_assert_no_error(error);
    g_assert_true(save(what, second, &error));
    g_assert_no_error(error);
    g_autoptr(GBytes) a = read_bytes(first);
    g_autoptr(GBytes) b = read_bytes(second);
    g_assert_true(g_bytes_equal(a, b));
    /* SVG text is <text> elements, not glyph outlines: a smaller file. */
    g_assert_cmpuint(g_bytes_get_size(a), >, e == 1 ? 1000 : 2000);
    if (e == 0) {
      cairo_surface_t *png = cairo_image_surface_create_from_png(first);
      g_assert_cmpint(cairo_surface_status(png), ==, CAIRO_STATUS_SUCCESS);
      g_assert_cmpint(cairo_image_surface_get_width(png), ==, png_width);
      g_assert_cmpint(cairo_image_surface_get_height(png), ==, png_height);
      cairo_surface_destroy(png);
    } else if (e == 1) {
      assert_svg_well_formed(a);
      g_assert_true(bytes_contain(a, "<text "));
      g_assert_false(bytes_contain(a, "<symbol"));
    } else {
      g_assert_true(bytes_contain(a, "%PDF-"));
      g_assert_false(bytes_contain(a, "CreationDate"));
      g_assert_false(bytes_contain(a, "ModDate"));
    }
  }
}

static guint32 rgb24(RokRgb color) {
  return ((guint32)lround(color.r * 255) << 16) | ((guint32)lround(color.g * 255) << 8) |
         (guint32)lround(color.b * 255);
}

/* How many pixels of the PNG have exactly this colour. */
static guint count_color(const char *path, RokRgb color) {
  cairo_surface_t *png = cairo_image_surface_create_from_png(path);
  int w = cairo_image_surface_get_width(png), h = cairo_image_surface_get_height(png);
  int stride = cairo_image_surface_get_stride(png);
  const guint8 *data = cairo_image_surface_get_data(png);
  guint32 want = rgb24(color);
  guint n = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      n += (*(const guint32 *)(data + y * stride + 4 * x) & 0xFFFFFF) == want;
  cairo_surface_destroy(png);
  return n;
}

static void test_save_charts(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(RokChart) throughput = throughput_chart("Throughput by micro-batch size", "");
  check_outputs(f->dir, "throughput", save_chart, throughput, 1200, 760);
  g_autoptr(RokChart) curve = rok_curve_chart();
  check_outputs(f->dir, "rok-curve", save_chart, curve, 1200, 760);
  g_autoptr(RokChart) crowded = crowded_chart();
  check_outputs(f->dir, "crowded", save_chart, crowded, 1200, 760);
  g_autoptr(RokTimeline) timeline = step_timeline("One step");
  check_outputs(f->dir, "timeline", save_timeline, timeline, 1440, 880);
  g_autoptr(RokChart) empty = rok_chart_new(NULL);
  check_outputs(f->dir, "empty", save_chart, empty, 1200, 760);
  /* Without memory the canvas ends below the time axis. */
  g_autoptr(RokTimeline) bare = rok_timeline_new(NULL);
  g_autoptr(RokTimelineLayout) bare_layout = plot_timeline_layout_new(bare);
  g_assert_cmpfloat(bare_layout->height, <, 200.0);
  check_outputs(f->dir, "empty-timeline", save_timeline, bare, 1440,
                (int)(bare_layout->height * 2));

  /* The series colours really reach the pixels. */
  g_autofree char *png = g_build_filename(f->dir, "throughput.png", NULL);
  for (guint s = 0; s < 6; s++)
    g_assert_cmpuint(count_color(png, plot_palette_color(s)), >, 100);
  g_assert_cmpuint(count_color(png, plot_palette_color(ROK_COLOR_YELLOW)), ==, 0);
  g_autofree char *tl = g_build_filename(f->dir, "timeline.png", NULL);
  for (guint k = 0; k < 5; k++)
    g_assert_cmpuint(count_color(tl, plot_palette_color(k)), >, 100);

  /* Extensions are case-insensitive; the size is the one set. */
  g_autofree char *upper = g_build_filename(f->dir, "SMALL.PNG", NULL);
  rok_chart_set_size(throughput, 300, 200);
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_chart_save(throughput, upper, &error));
  g_assert_no_error(error);
  cairo_surface_t *small = cairo_image_surface_create_from_png(upper);
  g_assert_cmpint(cairo_image_surface_get_width(small), ==, 600);
  cairo_surface_destroy(small);
  /* Nothing but the charts themselves is left behind. */
  g_assert_cmpuint(count_files(f->dir), ==, 6 * 6 + 1);
}

/* The colour of the PNG pixel at canvas point (x, y). */
static guint32 pixel_at(const char *path, double x, double y) {
  cairo_surface_t *png = cairo_image_surface_create_from_png(path);
  int stride = cairo_image_surface_get_stride(png);
  const guint8 *data = cairo_image_surface_get_data(png);
  int px = (int)lround(x * 2.0), py = (int)lround(y * 2.0); /* 2 pixels per point */
  guint32 value = *(const guint32 *)(data + py * stride + 4 * px) & 0xFFFFFF;
  cairo_surface_destroy(png);
  return value;
}

/* A hollow point is white inside its coloured outline; a filled one is not. */
static void test_save_hollow(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(RokChart) chart = rok_chart_new("Hollow");
  guint s = rok_chart_add_series(chart, "offload", ROK_SERIES_MARKERS, ROK_COLOR_VERMILLION);
  rok_chart_add_point(chart, s, 1.0, 1.0, ROK_POINT_FILLED, NULL);
  rok_chart_add_point(chart, s, 2.0, 2.0, ROK_POINT_HOLLOW, NULL);
  g_autofree char *path = g_build_filename(f->dir, "hollow.png", NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_chart_save(chart, path, &error));
  g_assert_no_error(error);
  g_autoptr(RokChartLayout) layout = plot_chart_layout_new(chart);
  double x, y;
  guint32 vermillion = rgb24(plot_palette_color(ROK_COLOR_VERMILLION));
  plot_chart_layout_map(layout, 1.0, 1.0, &x, &y);
  g_assert_cmphex(pixel_at(path, x, y), ==, vermillion);
  plot_chart_layout_map(layout, 2.0, 2.0, &x, &y);
  g_assert_cmphex(pixel_at(path, x, y), ==, 0xFFFFFF);
  /* The outline (1.5 points wide) lies about 3.3 points right of the centre. */
  gboolean outline = FALSE;
  for (double dx = 2.5; dx <= 4.5; dx += 0.25)
    outline |= pixel_at(path, x + dx, y) == vermillion;
  g_assert_true(outline);
}

static void test_save_errors(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(RokChart) chart = throughput_chart("Errors", "");
  g_autoptr(GError) error = NULL;
  g_autofree char *gif = g_build_filename(f->dir, "chart.gif", NULL);
  g_assert_false(rok_chart_save(chart, gif, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, ".gif"));
  g_clear_error(&error);
  g_autofree char *bare = g_build_filename(f->dir, "chart", NULL);
  g_assert_false(rok_chart_save(chart, bare, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_clear_error(&error);
  g_autoptr(RokTimeline) timeline = step_timeline("Errors");
  g_assert_false(rok_timeline_save(timeline, gif, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_clear_error(&error);

  /* A directory that does not exist, and a "directory" that is a file. */
  g_autofree char *missing = g_build_filename(f->dir, "no", "such", "chart.png", NULL);
  g_assert_false(rok_chart_save(chart, missing, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_assert_nonnull(strstr(error->message, missing));
  g_clear_error(&error);
  g_autofree char *file = g_build_filename(f->dir, "plain-file", NULL);
  g_assert_true(g_file_set_contents(file, "x", 1, NULL));
  g_autofree char *under_file = g_build_filename(file, "chart.svg", NULL);
  g_assert_false(rok_timeline_save(timeline, under_file, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_clear_error(&error);
  /* Writing over a directory fails at the rename; the temp file is gone. */
  g_autofree char *dir_target = g_build_filename(f->dir, "taken.pdf", NULL);
  g_assert_cmpint(g_mkdir(dir_target, 0755), ==, 0);
  g_assert_false(rok_chart_save(chart, dir_target, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_IO);
  g_clear_error(&error);
  g_assert_cmpuint(count_files(f->dir), ==, 2); /* plain-file and taken.pdf */
}

static void test_input_errors(Fixture *f, gconstpointer data) {
  (void)data;
  g_autofree char *path = g_build_filename(f->dir, "chart.svg", NULL);
  g_assert_true(g_file_set_contents(path, "old", 3, NULL));
  g_autoptr(GError) error = NULL;

  g_autoptr(RokChart) nan_chart = rok_chart_new("bad");
  guint s = rok_chart_add_series(nan_chart, "offload", ROK_SERIES_LINE, 0);
  rok_chart_add_point(nan_chart, s, 1.0, 2.0, 0, NULL);
  rok_chart_add_point(nan_chart, s, 2.0, NAN, 0, NULL);
  g_assert_false(rok_chart_save(nan_chart, path, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "\"offload\" point 2"));
  g_clear_error(&error);

  g_autoptr(RokChart) log_chart = rok_chart_new("log");
  rok_chart_set_axis_scale(log_chart, ROK_AXIS_X, ROK_SCALE_LOG2);
  s = rok_chart_add_series(log_chart, "keep", ROK_SERIES_MARKERS, 0);
  rok_chart_add_point(log_chart, s, 0.0, 1.0, 0, NULL);
  g_assert_false(rok_chart_save(log_chart, path, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "log axis"));
  g_clear_error(&error);

  g_autoptr(RokTimeline) backwards = rok_timeline_new("bad");
  rok_timeline_add_track(backwards, "compute");
  rok_timeline_add_kind(backwards, "forward", 0);
  rok_timeline_add_bar(backwards, 0, 0, 2.0, 1.0);
  g_assert_false(rok_timeline_save(backwards, path, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_assert_nonnull(strstr(error->message, "\"compute\""));
  g_clear_error(&error);

  g_autoptr(RokTimeline) unordered = rok_timeline_new("bad");
  rok_timeline_add_memory(unordered, 1.0, 10.0);
  rok_timeline_add_memory(unordered, 0.5, 10.0);
  g_assert_false(rok_timeline_save(unordered, path, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_clear_error(&error);

  /* The file that was there is untouched. */
  g_autofree char *contents = NULL;
  g_assert_true(g_file_get_contents(path, &contents, NULL, NULL));
  g_assert_cmpstr(contents, ==, "old");
  g_assert_cmpuint(count_files(f->dir), ==, 1);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/plot/ticks/examples", test_ticks_examples);
  g_test_add_func("/plot/ticks/degenerate", test_ticks_degenerate);
  g_test_add_func("/plot/ticks/random", test_ticks_random);
  g_test_add_func("/plot/ticks/units", test_ticks_units);
  g_test_add_func("/plot/ticks/log", test_ticks_log);
  g_test_add_func("/plot/palette", test_palette);
  g_test_add_func("/plot/text/boxes", test_boxes);
  g_test_add_func("/plot/text/wrap", test_text_wrap);
  g_test_add_func("/plot/layout/no-overlaps", test_layout_no_overlaps);
  g_test_add_func("/plot/layout/random-sizes", test_layout_random_sizes);
  g_test_add_func("/plot/layout/legend-avoids-data", test_layout_legend_avoids_data);
  g_test_add_func("/plot/layout/legend-outside", test_layout_legend_outside);
  g_test_add_func("/plot/layout/timeline", test_layout_timeline);
  g_test_add_func("/plot/layout/timeline-no-memory", test_layout_timeline_no_memory);
  g_test_add("/plot/save/charts", Fixture, NULL, fixture_set_up, test_save_charts,
             fixture_tear_down);
  g_test_add("/plot/save/hollow", Fixture, NULL, fixture_set_up, test_save_hollow,
             fixture_tear_down);
  g_test_add("/plot/save/errors", Fixture, NULL, fixture_set_up, test_save_errors,
             fixture_tear_down);
  g_test_add("/plot/save/input-errors", Fixture, NULL, fixture_set_up, test_input_errors,
             fixture_tear_down);
  int status = g_test_run();
  /* Leave no caches for the leak checker of sanitizer builds: cairo's own,
   * and fontconfig's (cairo loads it; called by name, as the test does not
   * link it directly). */
  cairo_debug_reset_static_data();
  void (*fc_fini)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "FcFini");
  if (fc_fini != NULL)
    fc_fini();
  return status;
}
