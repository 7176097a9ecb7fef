/* A sweep's results: building them from rows, and writing them as JSON and
 * CSV. */
#include <stddef.h>
#include <string.h>

#include "sweep-private.h"
#include "rok/core.h"

#define COLUMN(kind, field) {#field, ROK_SWEEP_FIELD_##kind, offsetof(RokSweepRow, field)}

const RokSweepColumn sweep_columns[ROK_SWEEP_COLUMNS] = {
    {"strategy", ROK_SWEEP_FIELD_STRATEGY, 0},
    {"model", ROK_SWEEP_FIELD_MODEL, 0},
    {"hw", ROK_SWEEP_FIELD_HW, 0},
    COLUMN(UINT, micro_batch),
    COLUMN(UINT, seq_len),
    COLUMN(UINT, nvme_devices),
    COLUMN(UINT, budget_bytes),
    COLUMN(UINT, gpu_memory_bytes),
    COLUMN(UINT, fixed_bytes),
    COLUMN(DOUBLE, step_time_s),
    COLUMN(DOUBLE, tokens_per_s),
    COLUMN(DOUBLE, tokens_per_gpu_s),
    COLUMN(DOUBLE, model_flops_per_gpu_s),
    COLUMN(DOUBLE, mfu),
    COLUMN(UINT, peak_bytes),
    COLUMN(UINT, activation_peak_bytes),
    COLUMN(DOUBLE, required_write_bandwidth),
    COLUMN(UINT, nvme_write_bytes),
    COLUMN(DOUBLE, recompute_s),
    COLUMN(DOUBLE, stall_s),
    COLUMN(BOOL, fits),
};

void rok_sweep_free(RokSweep *sweep) {
  if (sweep == NULL)
    return;
  g_free(sweep->model_name);
  g_free(sweep->hw_name);
  g_array_unref(sweep->rows);
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    g_array_unref(sweep->values[a]);
  g_array_unref(sweep->strategies);
  g_free(sweep);
}

static gint compare_u64(gconstpointer a, gconstpointer b) {
  guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
  return x < y ? -1 : x > y;
}

/* The distinct values of `axis` in the rows, rising. */
static GArray *axis_values(const GArray *rows, RokSweepAxis axis) {
  GArray *values = g_array_new(FALSE, FALSE, sizeof(guint64));
  for (guint i = 0; i < rows->len; i++) {
    guint64 v = rok_sweep_row_value(&g_array_index(rows, RokSweepRow, i), axis);
    g_array_append_val(values, v);
  }
  g_array_sort(values, compare_u64);
  guint kept = 0;
  for (guint i = 0; i < values->len; i++)
    if (kept == 0 || g_array_index(values, guint64, i) != g_array_index(values, guint64, kept - 1))
      g_array_index(values, guint64, kept++) = g_array_index(values, guint64, i);
  g_array_set_size(values, kept);
  return values;
}

RokSweep *sweep_new_from_rows(const char *model_name, const char *hw_name, GArray *rows) {
  RokSweep *sweep = g_new0(RokSweep, 1);
  sweep->model_name = g_strdup(model_name ? model_name : "");
  sweep->hw_name = g_strdup(hw_name ? hw_name : "");
  sweep->rows = rows;
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    sweep->values[a] = axis_values(rows, a);
  sweep->strategies = g_array_new(FALSE, FALSE, sizeof(RokStrategy));
  gboolean seen[ROK_STRATEGY_COUNT] = {FALSE};
  for (guint i = 0; i < rows->len; i++) {
    RokStrategy s = g_array_index(rows, RokSweepRow, i).strategy;
    if (!seen[s])
      g_array_append_val(sweep->strategies, s);
    seen[s] = TRUE;
  }
  return sweep;
}

/* ---- JSON ---- */

static json_object *field_json(const RokSweepRow *row, const RokSweepColumn *c) {
  const char *at = (const char *)row + c->offset;
  switch (c->kind) {
  case ROK_SWEEP_FIELD_UINT:
    return json_object_new_uint64(*(const guint64 *)at);
  case ROK_SWEEP_FIELD_DOUBLE:
    return rok_json_new_double(*(const double *)at);
  case ROK_SWEEP_FIELD_BOOL:
    return json_object_new_boolean(*(const gboolean *)at);
  default:
    return json_object_new_string(rok_strategy_name(row->strategy));
  }
}

static json_object *row_json(const RokSweepRow *row) {
  json_object *o = json_object_new_object();
  for (guint c = 0; c < ROK_SWEEP_COLUMNS; c++) {
    const RokSweepColumn *column = &sweep_columns[c];
    if (column->kind != ROK_SWEEP_FIELD_MODEL && column->kind != ROK_SWEEP_FIELD_HW)
      json_object_object_add(o, column->name, field_json(row, column));
  }
  return o;
}

json_object *rok_sweep_to_json(const RokSweep *sweep) {
  json_object *out = json_object_new_object();
  json_object_object_add(out, "model", json_object_new_string(sweep->model_name));
  json_object_object_add(out, "hw", json_object_new_string(sweep->hw_name));
  json_object *axes = json_object_new_object();
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++) {
    json_object *values = json_object_new_array();
    for (guint i = 0; i < sweep->values[a]->len; i++)
      json_object_array_add(values, json_object_new_uint64(g_array_index(sweep->values[a], guint64, i)));
    json_object_object_add(axes, rok_sweep_axis_name(a), values);
  }
  json_object_object_add(out, "axes", axes);
  json_object *strategies = json_object_new_array();
  for (guint i = 0; i < sweep->strategies->len; i++)
    json_object_array_add(strategies, json_object_new_string(rok_strategy_name(
                                          g_array_index(sweep->strategies, RokStrategy, i))));
  json_object_object_add(out, "strategies", strategies);
  json_object *rows = json_object_new_array();
  for (guint i = 0; i < sweep->rows->len; i++)
    json_object_array_add(rows, row_json(&g_array_index(sweep->rows, RokSweepRow, i)));
  json_object_object_add(out, "rows", rows);
  return out;
}

/* ---- CSV ---- */

/* RFC 4180: a field with a comma, quote or line break is quoted, its
 * quotes doubled. */
static void append_text(GString *out, const char *text) {
  if (strpbrk(text, ",\"\r\n") == NULL) {
    g_string_append(out, text);
    return;
  }
  g_string_append_c(out, '"');
  for (const char *p = text; *p != '\0'; p++) {
    if (*p == '"')
      g_string_append_c(out, '"');
    g_string_append_c(out, *p);
  }
  g_string_append_c(out, '"');
}

static void append_field(GString *out, const RokSweep *sweep, const RokSweepRow *row, const RokSweepColumn *c) {
  const char *at = (const char *)row + c->offset;
  char number[G_ASCII_DTOSTR_BUF_SIZE];
  switch (c->kind) {
  case ROK_SWEEP_FIELD_STRATEGY:
    g_string_append(out, rok_strategy_name(row->strategy));
    break;
  case ROK_SWEEP_FIELD_MODEL:
    append_text(out, sweep->model_name);
    break;
  case ROK_SWEEP_FIELD_HW:
    append_text(out, sweep->hw_name);
    break;
  case ROK_SWEEP_FIELD_UINT:
    g_string_append_printf(out, "%" G_GUINT64_FORMAT, *(const guint64 *)at);
    break;
  case ROK_SWEEP_FIELD_DOUBLE:
    g_string_append(out, g_ascii_formatd(number, sizeof number, "%.17g", *(const double *)at));
    break;
  case ROK_SWEEP_FIELD_BOOL:
    g_string_append_c(out, *(const gboolean *)at ? '1' : '0');
    break;
  }
}

char *rok_sweep_to_csv(const RokSweep *sweep) {
  GString *out = g_string_new(NULL);
  for (guint c = 0; c < ROK_SWEEP_COLUMNS; c++)
    g_string_append_printf(out, "%s%s", c ? "," : "", sweep_columns[c].name);
  g_string_append_c(out, '\n');
  for (guint i = 0; i < sweep->rows->len; i++) {
    for (guint c = 0; c < ROK_SWEEP_COLUMNS; c++) {
      if (c > 0)
        g_string_append_c(out, ',');
      append_field(out, sweep, &g_array_index(sweep->rows, RokSweepRow, i), &sweep_columns[c]);
    }
    g_string_append_c(out, '\n');
  }
  return g_string_free(out, FALSE);
}

gboolean rok_sweep_save_csv(const RokSweep *sweep, const char *path, GError **error) {
  g_autofree char *text = rok_sweep_to_csv(sweep);
  return rok_file_write(path, text, strlen(text), error);
}
