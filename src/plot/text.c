/* Text: one fixed font, measured before anything is placed, and boxes to keep
 * labels apart.
 *
 * Hinting is off for both glyph shapes and metrics, so a string measures the
 * same on the image, SVG and PDF surfaces and a layout made once serves all
 * three. */
#include <math.h>
#include <string.h>

#include "plot-private.h"

#define ROK_FONT_FAMILY "DejaVu Sans"

gboolean plot_box_overlaps(const RokBox *a, const RokBox *b) {
  return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

gboolean plot_box_contains(const RokBox *outer, const RokBox *inner) {
  const double slack = 1e-6;
  return inner->x >= outer->x - slack && inner->y >= outer->y - slack &&
         inner->x + inner->w <= outer->x + outer->w + slack &&
         inner->y + inner->h <= outer->y + outer->h + slack;
}

RokBox plot_box_grow(RokBox box, double margin) {
  return (RokBox){box.x - margin, box.y - margin, box.w + 2 * margin, box.h + 2 * margin};
}

/* Liang–Barsky: clip the segment's parameter range against each side. */
gboolean plot_box_hits_segment(const RokBox *box, double x0, double y0, double x1, double y1) {
  double dx = x1 - x0, dy = y1 - y0;
  double p[4] = {-dx, dx, -dy, dy};
  double q[4] = {x0 - box->x, box->x + box->w - x0, y0 - box->y, box->y + box->h - y0};
  double t0 = 0.0, t1 = 1.0;
  for (int i = 0; i < 4; i++) {
    if (p[i] == 0.0) {
      if (q[i] < 0.0)
        return FALSE;
      continue;
    }
    double t = q[i] / p[i];
    if (p[i] < 0.0)
      t0 = MAX(t0, t);
    else
      t1 = MIN(t1, t);
    if (t0 > t1)
      return FALSE;
  }
  return TRUE;
}

void plot_text_font(cairo_t *cr, double size, gboolean bold) {
  cairo_select_font_face(cr, ROK_FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
  cairo_font_options_t *options = cairo_font_options_create();
  cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE);
  cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_antialias(options, CAIRO_ANTIALIAS_GRAY);
  cairo_set_font_options(cr, options);
  cairo_font_options_destroy(options);
}

cairo_t *plot_text_context_new(void) {
  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *cr = cairo_create(surface);
  cairo_surface_destroy(surface);
  return cr;
}

double plot_text_width(cairo_t *cr, const char *text, double size, gboolean bold) {
  cairo_text_extents_t extents;
  plot_text_font(cr, size, bold);
  cairo_text_extents(cr, text, &extents);
  /* The advance or the ink, whichever reaches further (italics, overhangs). */
  return MAX(extents.x_advance, extents.x_bearing + extents.width);
}

double plot_text_height(cairo_t *cr, double size) {
  cairo_font_extents_t extents;
  plot_text_font(cr, size, FALSE);
  cairo_font_extents(cr, &extents);
  return extents.ascent + extents.descent;
}

GStrv plot_text_wrap(cairo_t *cr, const char *text, double size, gboolean bold, double max_width) {
  g_auto(GStrv) words = g_strsplit(text, " ", -1);
  g_autoptr(GStrvBuilder) lines = g_strv_builder_new();
  g_autoptr(GString) line = g_string_new(NULL);
  for (char **word = words; *word != NULL; word++) {
    if ((*word)[0] == '\0')
      continue;
    if (line->len > 0) {
      g_autofree char *longer = g_strdup_printf("%s %s", line->str, *word);
      if (plot_text_width(cr, longer, size, bold) <= max_width) {
        g_string_assign(line, longer);
        continue;
      }
      g_strv_builder_add(lines, line->str);
      g_string_truncate(line, 0);
    }
    g_string_assign(line, *word);
  }
  if (line->len > 0)
    g_strv_builder_add(lines, line->str);
  return g_strv_builder_end(lines);
}

char *plot_text_ellipsize(cairo_t *cr, const char *text, double size, gboolean bold,
                         double max_width) {
  if (plot_text_width(cr, text, size, bold) <= max_width)
    return g_strdup(text);
  glong chars = g_utf8_strlen(text, -1);
  for (glong keep = chars - 1; keep > 0; keep--) {
    g_autofree char *prefix = g_utf8_substring(text, 0, keep);
    g_strchomp(prefix);
    char *candidate = g_strconcat(prefix, "…", NULL);
    if (plot_text_width(cr, candidate, size, bold) <= max_width)
      return candidate;
    g_free(candidate);
  }
  return g_strdup("…");
}

GStrv plot_text_wrap_lines(cairo_t *cr, const char *text, double size, gboolean bold,
                          double max_width, guint max_lines) {
  g_auto(GStrv) lines = plot_text_wrap(cr, text, size, bold, max_width);
  guint n = g_strv_length(lines);
  guint keep = max_lines == 0 ? n : MIN(n, max_lines);
  g_autoptr(GStrvBuilder) kept = g_strv_builder_new();
  for (guint i = 0; i < keep; i++) {
    /* The last line kept takes the rest of the text, cut short. */
    g_autofree char *line = i + 1 == keep ? g_strjoinv(" ", lines + i) : g_strdup(lines[i]);
    g_autofree char *fitted = plot_text_ellipsize(cr, line, size, bold, max_width);
    g_strv_builder_add(kept, fitted);
  }
  return g_strv_builder_end(kept);
}

GStrv plot_text_fit(cairo_t *cr, const char *text, gboolean bold, double size, double min_size,
                   double max_width, guint max_lines, double *size_used) {
  for (double s = size; s >= min_size - 1e-9; s -= 0.5) {
    if (plot_text_width(cr, text, s, bold) <= max_width) {
      *size_used = s;
      const char *one[] = {text, NULL};
      return g_strdupv((char **)one);
    }
  }
  *size_used = min_size;
  return plot_text_wrap_lines(cr, text, min_size, bold, max_width, max_lines);
}

static void text_clear(gpointer data) {
  g_free(((RokText *)data)->text);
}

GArray *plot_text_array_new(void) {
  GArray *texts = g_array_new(FALSE, TRUE, sizeof(RokText));
  g_array_set_clear_func(texts, text_clear);
  return texts;
}

RokText *plot_text_add(GArray *texts, cairo_t *cr, const char *text, double size, gboolean bold,
                      double x, double y) {
  RokText item = {
      .box = {x, y, plot_text_width(cr, text, size, bold), plot_text_height(cr, size)},
      .text = g_strdup(text),
      .size = size,
      .bold = bold,
      .color = {0.13, 0.13, 0.13},
  };
  g_array_append_val(texts, item);
  return &g_array_index(texts, RokText, texts->len - 1);
}

/* SVG text as text: cairo's SVG surface writes every glyph as an outline
 * (cairo 1.16 has no option for <text>; cairo_svg_surface_set_document_unit
 * only changes the unit of width and height), which a paper's figure cannot
 * search or edit. So on an SVG surface text is not drawn by cairo: each
 * string becomes a <text> element, collected on the surface and written
 * into the document by surface.c, on top of the drawing. */
static const cairo_user_data_key_t svg_text_key;

void plot_text_collect_svg(cairo_surface_t *surface, GString *elements) {
  cairo_surface_set_user_data(surface, &svg_text_key, elements, NULL);
}

static void rgb_hex(char out[8], RokRgb c) {
  g_snprintf(out, 8, "#%02x%02x%02x", (guint)lround(CLAMP(c.r, 0.0, 1.0) * 255),
             (guint)lround(CLAMP(c.g, 0.0, 1.0) * 255), (guint)lround(CLAMP(c.b, 0.0, 1.0) * 255));
}

/* The element for text whose baseline starts at user (x, y). */
static void svg_text(cairo_t *cr, GString *elements, const RokText *text, double x, double y) {
  double dx = x, dy = y, ux = 1.0, uy = 0.0;
  cairo_user_to_device(cr, &dx, &dy);
  cairo_user_to_device_distance(cr, &ux, &uy);
  double angle = atan2(uy, ux) * 180.0 / G_PI;
  char fill[8], number[4][G_ASCII_DTOSTR_BUF_SIZE];
  rgb_hex(fill, text->color);
  g_autofree char *escaped = g_markup_escape_text(text->text, -1);
  g_string_append_printf(elements, "<text x=\"%s\" y=\"%s\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"%s\"",
                         g_ascii_formatd(number[0], sizeof number[0], "%.2f", dx),
                         g_ascii_formatd(number[1], sizeof number[1], "%.2f", dy),
                         g_ascii_formatd(number[2], sizeof number[2], "%.2f", text->size));
  if (text->bold)
    g_string_append(elements, " font-weight=\"bold\"");
  if (fabs(angle) > 1e-9)
    g_string_append_printf(elements, " transform=\"rotate(%s %s %s)\"",
                           g_ascii_formatd(number[3], sizeof number[3], "%.2f", angle), number[0], number[1]);
  if (text->halo)
    g_string_append(elements, " stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"");
  g_string_append_printf(elements, " fill=\"%s\" xml:space=\"preserve\">%s</text>\n", fill, escaped);
}

void plot_text_draw(cairo_t *cr, const RokText *text) {
  cairo_font_extents_t extents;
  cairo_save(cr);
  plot_text_font(cr, text->size, text->bold);
  cairo_font_extents(cr, &extents);
  if (text->backdrop) {
    RokBox back = plot_box_grow(text->box, 1.0);
    cairo_rectangle(cr, back.x, back.y, back.w, back.h);
    cairo_set_source_rgb(cr, 1.0, 1.0, 1.0);
    cairo_fill(cr);
  }
  double x = text->box.x, y = text->box.y + extents.ascent;
  if (text->vertical) {
    cairo_translate(cr, text->box.x + extents.ascent, text->box.y + text->box.h);
    cairo_rotate(cr, -G_PI / 2.0);
    x = y = 0.0;
  }
  GString *svg = cairo_surface_get_user_data(cairo_get_target(cr), &svg_text_key);
  if (svg != NULL) {
    svg_text(cr, svg, text, x, y);
    cairo_restore(cr);
    return;
  }
  if (text->halo) {
    cairo_move_to(cr, x, y);
    cairo_text_path(cr, text->text);
    cairo_set_source_rgb(cr, 1.0, 1.0, 1.0);
    cairo_set_line_width(cr, 3.0);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_stroke(cr);
  }
  cairo_set_source_rgb(cr, text->color.r, text->color.g, text->color.b);
  cairo_move_to(cr, x, y);
  cairo_show_text(cr, text->text);
  cairo_restore(cr);
}
