/* Output files: the surface by the file's extension, written through
 * rok_output_open() (a temporary file renamed into place; a device or FIFO
 * written through), so that a reader never sees half a chart and a failure
 * leaves nothing behind.
 *
 * Deterministic bytes: PNG has no time chunk; PDF gets empty creation and
 * modification dates (cairo 1.16 then writes none) and fixed metadata; SVG
 * renumbers cairo's surfaces per document. SVG text is <text> elements (see
 * plot_text_collect_svg), searchable and editable. */
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "plot-private.h"
#include "rok/core.h"

/* Pixels per point in PNG output: sharp on screens and in slides. */
#define ROK_PNG_SCALE 2.0

typedef enum {
  ROK_FORMAT_PNG,
  ROK_FORMAT_SVG,
  ROK_FORMAT_PDF,
} RokFormat;

/* Where cairo's output goes: straight to the file, or (SVG) into memory
 * first. */
typedef struct {
  int fd;
  int saved_errno;
  GByteArray *buffer;
} RokSink;

static gboolean format_from_path(const char *path, RokFormat *format, GError **error) {
  g_autofree char *base = g_path_get_basename(path);
  const char *dot = strrchr(base, '.');
  if (dot == NULL || dot == base) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
                "%s: a chart file name must end in .png, .svg or .pdf", path);
    return FALSE;
  }
  static const struct {
    const char *extension;
    RokFormat format;
  } formats[] = {{".png", ROK_FORMAT_PNG}, {".svg", ROK_FORMAT_SVG}, {".pdf", ROK_FORMAT_PDF}};
  for (gsize i = 0; i < G_N_ELEMENTS(formats); i++)
    if (g_ascii_strcasecmp(dot, formats[i].extension) == 0) {
      *format = formats[i].format;
      return TRUE;
    }
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE,
              "%s: unknown chart format \"%s\" (use .png, .svg or .pdf)", path, dot);
  return FALSE;
}

gboolean plot_check_path(const char *path, GError **error) {
  RokFormat format;
  return format_from_path(path, &format, error);
}

static gboolean write_all(RokSink *sink, const guint8 *data, gsize length) {
  while (length > 0) {
    ssize_t written = write(sink->fd, data, length);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      sink->saved_errno = written < 0 ? errno : EIO;
      return FALSE;
    }
    data += written;
    length -= (gsize)written;
  }
  return TRUE;
}

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int length) {
  RokSink *sink = closure;
  if (sink->buffer != NULL) {
    g_byte_array_append(sink->buffer, data, length);
    return CAIRO_STATUS_SUCCESS;
  }
  return write_all(sink, data, length) ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

/* cairo names an SVG's surfaces by a counter global to the process
 * ("surface136"), so a second rendering in the same process differs. The
 * names are renumbered in order of appearance. */
static gboolean renumber_surface(const GMatchInfo *match, GString *result, gpointer data) {
  GHashTable *numbers = data;
  g_autofree char *prefix = g_match_info_fetch(match, 1);
  g_autofree char *old = g_match_info_fetch(match, 2);
  gpointer number = g_hash_table_lookup(numbers, old);
  if (number == NULL) {
    number = GUINT_TO_POINTER(g_hash_table_size(numbers) + 1);
    g_hash_table_insert(numbers, g_strdup(old), number);
  }
  g_string_append_printf(result, "%ssurface%u", prefix, GPOINTER_TO_UINT(number));
  return FALSE;
}

/* The text elements go last, on top of the drawing, before "</svg>". */
static gboolean write_svg(RokSink *sink, const GString *texts) {
  g_autoptr(GRegex) regex = g_regex_new("(id=\"|\"#)surface([0-9]+)", G_REGEX_RAW, 0, NULL);
  g_autoptr(GHashTable) numbers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char *svg =
      g_regex_replace_eval(regex, (const char *)sink->buffer->data, (gssize)sink->buffer->len, 0, 0,
                           renumber_surface, numbers, NULL);
  char *end = svg == NULL ? NULL : g_strrstr(svg, "</svg>");
  if (end == NULL)
    return FALSE;
  return write_all(sink, (const guint8 *)svg, (gsize)(end - svg)) &&
         write_all(sink, (const guint8 *)texts->str, texts->len) &&
         write_all(sink, (const guint8 *)end, strlen(end));
}

static cairo_status_t draw_on(cairo_surface_t *surface, RokDrawFunc draw, gconstpointer data) {
  cairo_t *cr = cairo_create(surface);
  draw(cr, data);
  cairo_status_t status = cairo_status(cr);
  cairo_destroy(cr);
  return status;
}

static cairo_status_t render_png(RokSink *sink, double width, double height, RokDrawFunc draw,
                                 gconstpointer data) {
  cairo_surface_t *surface = cairo_image_surface_create(
      CAIRO_FORMAT_RGB24, (int)ceil(width * ROK_PNG_SCALE), (int)ceil(height * ROK_PNG_SCALE));
  cairo_surface_set_device_scale(surface, ROK_PNG_SCALE, ROK_PNG_SCALE);
  cairo_status_t status = draw_on(surface, draw, data);
  if (status == CAIRO_STATUS_SUCCESS)
    status = cairo_surface_write_to_png_stream(surface, sink_write, sink);
  cairo_surface_destroy(surface);
  return status;
}

static cairo_status_t render_vector(RokFormat format, RokSink *sink, double width, double height,
                                    const char *title, RokDrawFunc draw, gconstpointer data, GString *texts) {
  cairo_surface_t *surface;
  if (format == ROK_FORMAT_SVG) {
    surface = cairo_svg_surface_create_for_stream(sink_write, sink, width, height);
    plot_text_collect_svg(surface, texts);
  } else {
    surface = cairo_pdf_surface_create_for_stream(sink_write, sink, width, height);
    cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATE_DATE, "");
    cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_MOD_DATE, "");
    cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATOR, "rok");
    if (title != NULL && title[0] != '\0')
      cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_TITLE, title);
  }
  cairo_status_t status = draw_on(surface, draw, data);
  cairo_surface_finish(surface);
  if (status == CAIRO_STATUS_SUCCESS)
    status = cairo_surface_status(surface);
  cairo_surface_destroy(surface);
  return status;
}

static void set_write_error(GError **error, const char *path, int saved_errno,
                            cairo_status_t status) {
  const char *why = saved_errno != 0 ? g_strerror(saved_errno) : cairo_status_to_string(status);
  g_set_error(error, ROK_ERROR, ROK_ERROR_IO, "%s: cannot write chart: %s", path, why);
}

/* Fills the temporary file; FALSE with the error set when anything failed. */
static gboolean render(RokFormat format, int fd, const char *path, double width, double height,
                       const char *title, RokDrawFunc draw, gconstpointer data, GError **error) {
  g_autoptr(GByteArray) buffer = format == ROK_FORMAT_SVG ? g_byte_array_new() : NULL;
  g_autoptr(GString) texts = g_string_new(NULL);
  RokSink sink = {fd, 0, buffer};
  cairo_status_t status = format == ROK_FORMAT_PNG
                              ? render_png(&sink, width, height, draw, data)
                              : render_vector(format, &sink, width, height, title, draw, data, texts);
  if (status == CAIRO_STATUS_SUCCESS && buffer != NULL && !write_svg(&sink, texts))
    status = CAIRO_STATUS_WRITE_ERROR;
  if (status != CAIRO_STATUS_SUCCESS || sink.saved_errno != 0) {
    set_write_error(error, path, sink.saved_errno, status);
    return FALSE;
  }
  return TRUE;
}

gboolean plot_write(const char *path, double width, double height, const char *title,
                        RokDrawFunc draw, gconstpointer data, GError **error) {
  RokFormat format;
  if (!format_from_path(path, &format, error))
    return FALSE;
  RokOutput *out = rok_output_open(path, error);
  if (out == NULL)
    return FALSE;
  if (!render(format, rok_output_fd(out), path, width, height, title, draw, data, error)) {
    rok_output_discard(out);
    return FALSE;
  }
  return rok_output_commit(out, error);
}
