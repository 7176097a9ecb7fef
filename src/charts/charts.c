/* What the chart-drawing commands share. */
#include <dlfcn.h>

#include <cairo.h>

#include "rok/charts.h"

void rok_charts_release(void) {
  cairo_debug_reset_static_data();
  /* cairo loads fontconfig; rok does not link it, so it is called by name. */
  void (*fc_fini)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "FcFini");
  if (fc_fini != NULL)
    fc_fini();
}

static struct {
  double width, height, font_size;
  char *title;
  gboolean has_title;
} style;

gboolean rok_charts_set_style(RokChartStyle *s, GError **error) {
  const char *bad = s->width != 0 && !(s->width >= 300 && s->width <= 10000)     ? "--width must be 300 to 10000 points"
                    : s->height != 0 && !(s->height >= 200 && s->height <= 10000) ? "--height must be 200 to 10000 points"
                    : s->font_size != 0 && !(s->font_size >= 6 && s->font_size <= 36)
                        ? "--font-size must be 6 to 36 points"
                        : NULL;
  if (bad != NULL) {
    g_set_error_literal(error, ROK_ERROR, ROK_ERROR_USAGE, bad);
    return FALSE;
  }
  style.width = s->width;
  style.height = s->height;
  style.font_size = s->font_size;
  style.has_title = s->title != NULL;
  g_free(style.title);
  style.title = g_steal_pointer(&s->title);
  return TRUE;
}

/* The style's size, each side defaulting to the chart's own; FALSE when the
 * style sets neither. */
static gboolean style_size(double width, double height, double *w, double *h) {
  *w = style.width > 0 ? style.width : width;
  *h = style.height > 0 ? style.height : height;
  return style.width > 0 || style.height > 0;
}

RokChart *rok_charts_chart_new(const char *title) {
  RokChart *chart = rok_chart_new(style.has_title ? style.title : title);
  double w, h;
  if (style_size(600.0, 380.0, &w, &h))
    rok_chart_set_size(chart, w, h);
  if (style.font_size > 0)
    rok_chart_set_font_size(chart, style.font_size);
  return chart;
}

RokTimeline *rok_charts_timeline_new(const char *title) {
  RokTimeline *timeline = rok_timeline_new(style.has_title ? style.title : title);
  double w, h;
  if (style_size(720.0, 440.0, &w, &h))
    rok_timeline_set_size(timeline, w, h);
  if (style.font_size > 0)
    rok_timeline_set_font_size(timeline, style.font_size);
  return timeline;
}
