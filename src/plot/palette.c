/* Okabe–Ito colours and one marker shape per colour.
 *
 * The order puts the colours that contrast best with white first; yellow is
 * last because thin yellow lines are hard to see. Shapes are all closed so
 * that each can be drawn filled or hollow; their sizes are tuned so that
 * they look about equally heavy. */
#include <math.h>

#include "plot-private.h"

static const RokRgb okabe_ito[ROK_PLOT_COLORS] = {
    {0x00 / 255.0, 0x72 / 255.0, 0xB2 / 255.0}, /* blue */
    {0xD5 / 255.0, 0x5E / 255.0, 0x00 / 255.0}, /* vermillion */
    {0x00 / 255.0, 0x9E / 255.0, 0x73 / 255.0}, /* bluish green */
    {0xCC / 255.0, 0x79 / 255.0, 0xA7 / 255.0}, /* reddish purple */
    {0xE6 / 255.0, 0x9F / 255.0, 0x00 / 255.0}, /* orange */
    {0x56 / 255.0, 0xB4 / 255.0, 0xE9 / 255.0}, /* sky blue */
    {0x00 / 255.0, 0x00 / 255.0, 0x00 / 255.0}, /* black */
    {0xF0 / 255.0, 0xE4 / 255.0, 0x42 / 255.0}, /* yellow */
};

RokRgb plot_palette_color(guint index) {
  return okabe_ito[index % ROK_PLOT_COLORS];
}

/* A regular polygon with `sides` corners, the first at angle `start`. */
static void polygon(cairo_t *cr, double x, double y, double radius, int sides, double start) {
  for (int i = 0; i < sides; i++) {
    double angle = start + 2.0 * G_PI * i / sides;
    double px = x + radius * cos(angle), py = y + radius * sin(angle);
    if (i == 0)
      cairo_move_to(cr, px, py);
    else
      cairo_line_to(cr, px, py);
  }
  cairo_close_path(cr);
}

static void star(cairo_t *cr, double x, double y, double radius) {
  for (int i = 0; i < 10; i++) {
    double angle = -G_PI / 2.0 + G_PI * i / 5.0;
    double r = i % 2 == 0 ? radius : radius * 0.45;
    if (i == 0)
      cairo_move_to(cr, x + r * cos(angle), y + r * sin(angle));
    else
      cairo_line_to(cr, x + r * cos(angle), y + r * sin(angle));
  }
  cairo_close_path(cr);
}

static void marker_path(cairo_t *cr, guint shape, double x, double y, double size) {
  double r = size / 2.0;
  switch (shape % ROK_PLOT_COLORS) {
  case 0:
    cairo_new_sub_path(cr);
    cairo_arc(cr, x, y, r, 0.0, 2.0 * G_PI);
    cairo_close_path(cr);
    break;
  case 1:
    cairo_rectangle(cr, x - r * 0.88, y - r * 0.88, r * 1.76, r * 1.76);
    break;
  case 2:
    polygon(cr, x, y + r * 0.2, r * 1.25, 3, -G_PI / 2.0);
    break;
  case 3:
    polygon(cr, x, y, r * 1.2, 4, -G_PI / 2.0);
    break;
  case 4:
    polygon(cr, x, y - r * 0.2, r * 1.25, 3, G_PI / 2.0);
    break;
  case 5:
    polygon(cr, x, y, r * 1.1, 5, -G_PI / 2.0);
    break;
  case 6:
    polygon(cr, x, y, r * 1.05, 6, 0.0);
    break;
  default:
    star(cr, x, y, r * 1.35);
    break;
  }
}

void plot_palette_marker(cairo_t *cr, guint index, double x, double y, double size, RokRgb color,
                        gboolean hollow) {
  cairo_save(cr);
  cairo_new_path(cr);
  marker_path(cr, index, x, y, size);
  if (hollow)
    cairo_set_source_rgb(cr, 1.0, 1.0, 1.0);
  else
    cairo_set_source_rgb(cr, color.r, color.g, color.b);
  cairo_fill_preserve(cr);
  /* A filled marker gets a thin white rim so that overlapping markers stay
   * apart; a hollow one a coloured outline. */
  if (hollow) {
    cairo_set_source_rgb(cr, color.r, color.g, color.b);
    cairo_set_line_width(cr, 1.5);
  } else {
    cairo_set_source_rgb(cr, 1.0, 1.0, 1.0);
    cairo_set_line_width(cr, 0.6);
  }
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_MITER);
  cairo_stroke(cr);
  cairo_restore(cr);
}
