/* Reading sweep.csv back, with errors located at name:line:column. Fields
 * follow RFC 4180 (quoted fields may hold commas, doubled quotes and line
 * breaks); lines may end in CRLF. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sweep-private.h"
#include "rok/core.h"

typedef struct {
  const char *name, *text, *end, *p;
  const char *record_end; /* where the last record read ends, before its line break */
  const guint *columns;   /* the file's columns: indexes into sweep_columns */
  guint n_columns;
} Reader;

/* Every column, and those of the sweep.csv files written before: before
 * layouts were axes (their layout columns then read as 0, "not recorded",
 * bubble and communication as 0), and before that also before the per-GPU
 * columns (tokens_per_gpu_s, model_flops_per_gpu_s and mfu read as 0, "not
 * recorded"). */
static const guint all_columns[ROK_SWEEP_COLUMNS] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                                                     14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26};
static const guint no_layout_columns[] = {0,  1,  2,  7,  8,  9,  10, 11, 12, 13, 14,
                                          15, 16, 17, 18, 19, 20, 21, 22, 23, 26};
static const guint first_columns[] = {0, 1, 2, 7, 8, 9, 10, 11, 12, 13, 14, 18, 19, 20, 21, 22, 23, 26};
static const struct {
  const guint *columns;
  guint n;
} older_headers[] = {{no_layout_columns, G_N_ELEMENTS(no_layout_columns)},
                     {first_columns, G_N_ELEMENTS(first_columns)}};

typedef struct {
  char *value;
  const char *start; /* in the text, for messages */
} Field;

static void field_clear(gpointer data) {
  g_free(((Field *)data)->value);
}

static void locate(const Reader *r, const char *at, guint *line, glong *column) {
  const char *line_start = r->text;
  *line = 1;
  for (const char *p = r->text; p < at; p++)
    if (*p == '\n') {
      (*line)++;
      line_start = p + 1;
    }
  *column = g_utf8_pointer_to_offset(line_start, at) + 1;
}

static void fail_at(GError **error, const Reader *r, const char *at, const char *format, ...) G_GNUC_PRINTF(4, 5);
static void fail_at(GError **error, const Reader *r, const char *at, const char *format, ...) {
  guint line;
  glong column;
  locate(r, at, &line, &column);
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s:%u:%ld: %s", r->name, line, column, message);
}

static gboolean at_record_end(const Reader *r) {
  return r->p >= r->end || *r->p == '\n' || (*r->p == '\r' && r->p + 1 < r->end && r->p[1] == '\n');
}

static gboolean read_quoted(Reader *r, GString *value, GError **error) {
  const char *open = r->p++;
  for (;;) {
    if (r->p >= r->end) {
      fail_at(error, r, open, "a quoted field is not closed");
      return FALSE;
    }
    if (*r->p == '"' && (r->p + 1 >= r->end || r->p[1] != '"'))
      break;
    if (*r->p == '"')
      r->p++;
    g_string_append_c(value, *r->p++);
  }
  r->p++;
  if (!at_record_end(r) && *r->p != ',') {
    fail_at(error, r, r->p, "text after the closing quote of a field");
    return FALSE;
  }
  return TRUE;
}

/* One record: its fields, and r->p past its line break. */
static gboolean read_record(Reader *r, GArray *fields, GError **error) {
  g_array_set_size(fields, 0);
  for (;;) {
    Field field = {.start = r->p};
    GString *value = g_string_new(NULL);
    if (r->p < r->end && *r->p == '"') {
      if (!read_quoted(r, value, error)) {
        g_string_free(value, TRUE);
        return FALSE;
      }
    } else {
      while (!at_record_end(r) && *r->p != ',')
        g_string_append_c(value, *r->p++);
    }
    field.value = g_string_free(value, FALSE);
    g_array_append_val(fields, field);
    if (at_record_end(r))
      break;
    r->p++; /* the comma */
  }
  r->record_end = r->p;
  if (r->p < r->end)
    r->p += *r->p == '\r' ? 2 : 1;
  return TRUE;
}

static gboolean header_is(const GArray *fields, const guint *columns, guint n) {
  if (fields->len != n)
    return FALSE;
  for (guint c = 0; c < n; c++)
    if (!g_str_equal(g_array_index(fields, Field, c).value, sweep_columns[columns[c]].name))
      return FALSE;
  return TRUE;
}

static gboolean check_header(Reader *r, const GArray *fields, GError **error) {
  r->columns = all_columns;
  r->n_columns = ROK_SWEEP_COLUMNS;
  for (guint h = 0; h < G_N_ELEMENTS(older_headers); h++)
    if (header_is(fields, older_headers[h].columns, older_headers[h].n)) {
      r->columns = older_headers[h].columns;
      r->n_columns = older_headers[h].n;
      return TRUE;
    }
  for (guint c = 0; c < ROK_SWEEP_COLUMNS; c++) {
    const Field *f = c < fields->len ? &g_array_index(fields, Field, c) : NULL;
    if (f == NULL || !g_str_equal(f->value, sweep_columns[c].name)) {
      fail_at(error, r, f ? f->start : r->record_end,
              "expected column %u of the header to be \"%s\", found %s%s%s", c + 1, sweep_columns[c].name,
              f ? "\"" : "", f ? f->value : "the end of the line", f ? "\"" : "");
      return FALSE;
    }
  }
  if (fields->len > ROK_SWEEP_COLUMNS) {
    fail_at(error, r, g_array_index(fields, Field, ROK_SWEEP_COLUMNS).start, "unexpected column \"%s\" in the header",
            g_array_index(fields, Field, ROK_SWEEP_COLUMNS).value);
    return FALSE;
  }
  return TRUE;
}

static gboolean parse_number(const Reader *r, const Field *f, const RokSweepColumn *c, RokSweepRow *row,
                             GError **error) {
  char *at = (char *)row + c->offset;
  guint64 u = 0;
  if (c->kind == ROK_SWEEP_FIELD_UINT) {
    if (g_ascii_string_to_unsigned(f->value, 10, 0, G_MAXUINT64, &u, NULL)) {
      *(guint64 *)at = u;
      return TRUE;
    }
    fail_at(error, r, f->start, "\"%s\": expected a whole number, found \"%s\"", c->name, f->value);
    return FALSE;
  }
  if (c->kind == ROK_SWEEP_FIELD_BOOL) {
    if (g_str_equal(f->value, "0") || g_str_equal(f->value, "1")) {
      *(gboolean *)at = f->value[0] == '1';
      return TRUE;
    }
    fail_at(error, r, f->start, "\"%s\": expected 0 or 1, found \"%s\"", c->name, f->value);
    return FALSE;
  }
  char *end = NULL;
  errno = 0;
  double d = g_ascii_strtod(f->value, &end);
  if (f->value[0] != '\0' && !g_ascii_isspace(f->value[0]) && *end == '\0' && errno == 0 && isfinite(d)) {
    *(double *)at = d;
    return TRUE;
  }
  fail_at(error, r, f->start, "\"%s\": expected a finite number, found \"%s\"", c->name, f->value);
  return FALSE;
}

/* The model or hw name of a row: the first row's, which every row repeats. */
static gboolean check_name(const Reader *r, const Field *f, const char *column, char **name, GError **error) {
  if (*name == NULL)
    *name = g_strdup(f->value);
  else if (!g_str_equal(*name, f->value)) {
    fail_at(error, r, f->start, "\"%s\": \"%s\" differs from the first row's \"%s\"", column, f->value, *name);
    return FALSE;
  }
  return TRUE;
}

typedef struct {
  char *model, *hw;
} Names;

static gboolean parse_row(const Reader *r, const GArray *fields, Names *names, RokSweepRow *row, GError **error) {
  guint n = r->n_columns;
  if (fields->len != n) {
    const char *at = fields->len > n ? g_array_index(fields, Field, n).start : r->record_end;
    fail_at(error, r, at, "expected %u fields, found %u", n, fields->len);
    return FALSE;
  }
  for (guint c = 0; c < n; c++) {
    const Field *f = &g_array_index(fields, Field, c);
    const RokSweepColumn *column = &sweep_columns[r->columns[c]];
    g_autoptr(GError) local = NULL;
    gboolean ok = TRUE;
    if (column->kind == ROK_SWEEP_FIELD_STRATEGY) {
      if (!rok_strategy_from_name(f->value, &row->strategy, &local)) {
        fail_at(error, r, f->start, "%s", local->message);
        return FALSE;
      }
    } else if (column->kind == ROK_SWEEP_FIELD_MODEL || column->kind == ROK_SWEEP_FIELD_HW) {
      ok = check_name(r, f, column->name, column->kind == ROK_SWEEP_FIELD_MODEL ? &names->model : &names->hw, error);
    } else {
      ok = parse_number(r, f, column, row, error);
    }
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

static gboolean read_rows(Reader *r, GArray *rows, Names *names, GError **error) {
  g_autoptr(GArray) fields = g_array_new(FALSE, FALSE, sizeof(Field));
  g_array_set_clear_func(fields, field_clear);
  if (!read_record(r, fields, error) || !check_header(r, fields, error))
    return FALSE;
  while (r->p < r->end) {
    if (!read_record(r, fields, error))
      return FALSE;
    /* A blank last line is the file's final line break. */
    if (r->p >= r->end && fields->len == 1 && *g_array_index(fields, Field, 0).value == '\0')
      break;
    RokSweepRow row = {0};
    if (!parse_row(r, fields, names, &row, error))
      return FALSE;
    g_array_append_val(rows, row);
  }
  if (rows->len == 0) {
    fail_at(error, r, r->end, "no rows after the header");
    return FALSE;
  }
  return TRUE;
}

RokSweep *rok_sweep_parse_csv(const char *name, const char *text, gsize length, GError **error) {
  Reader r = {.name = name, .text = text, .end = text + length, .p = text};
  const char *bad = NULL;
  if (!g_utf8_validate_len(text, length, &bad)) {
    fail_at(error, &r, bad, "%s", *bad == '\0' ? "a NUL byte" : "invalid UTF-8");
    return NULL;
  }
  if (length == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: empty file, expected a sweep CSV (rok sweep -o DIR)", name);
    return NULL;
  }
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(RokSweepRow));
  Names names = {0};
  gboolean ok = read_rows(&r, rows, &names, error);
  RokSweep *sweep = ok ? sweep_new_from_rows(names.model, names.hw, g_steal_pointer(&rows)) : NULL;
  g_free(names.model);
  g_free(names.hw);
  return sweep;
}

RokSweep *rok_sweep_load_csv(const char *path, GError **error) {
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!rok_json_read_file(path, &text, &length, error))
    return NULL;
  return rok_sweep_parse_csv(path, text, length, error);
}
