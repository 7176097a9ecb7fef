/* Charts of a sweep: throughput or peak memory against one axis, one
 * series per strategy. Everything drawn comes from the rows (as the CSV
 * holds them), so a chart re-drawn from sweep.csv is the same file. */
#include <string.h>

#include "rok/charts.h"
#include "rok/core.h"
#include "rok/plot.h"

#define GIB 1073741824.0

/* Okabe–Ito has two near pairs (blue/sky, orange/vermillion); only
 * offload/tba use one; recompute (reddish purple) has no near neighbour. */
guint rok_strategy_color(RokStrategy strategy) {
  static const guint colors[] = {
      [ROK_STRATEGY_KEEP] = ROK_COLOR_BLACK,  [ROK_STRATEGY_RECOMPUTE] = ROK_COLOR_PURPLE,
      [ROK_STRATEGY_SELECTIVE] = ROK_COLOR_GREEN, [ROK_STRATEGY_OFFLOAD] = ROK_COLOR_SKY,
      [ROK_STRATEGY_TBA] = ROK_COLOR_BLUE,
  };
  return (guint)strategy < G_N_ELEMENTS(colors) ? colors[strategy] : ROK_COLOR_VERMILLION;
}

void rok_sweep_view_init(const RokSweep *sweep, RokSweepView *view) {
  static const RokSweepAxis preferred[] = {ROK_SWEEP_MICRO_BATCH,     ROK_SWEEP_SEQ_LEN,
                                           ROK_SWEEP_NVME_DEVICES,    ROK_SWEEP_BUDGET,
                                           ROK_SWEEP_PIPELINE_PARALLEL, ROK_SWEEP_TENSOR_PARALLEL,
                                           ROK_SWEEP_VIRTUAL_STAGES};
  view->x = ROK_SWEEP_MICRO_BATCH;
  for (guint i = 0; i < G_N_ELEMENTS(preferred); i++)
    if (sweep->values[preferred[i]]->len > 1) {
      view->x = preferred[i];
      break;
    }
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    view->at[a] = sweep->values[a]->len > 0 ? g_array_index(sweep->values[a], guint64, 0) : 0;
}

gboolean rok_sweep_view_set(const RokSweep *sweep, RokSweepView *view, RokSweepAxis axis, guint64 value,
                            GError **error) {
  const GArray *values = sweep->values[axis];
  GString *known = g_string_new(NULL);
  for (guint i = 0; i < values->len; i++) {
    guint64 v = g_array_index(values, guint64, i);
    if (v == value) {
      view->at[axis] = value;
      g_string_free(known, TRUE);
      return TRUE;
    }
    g_string_append_printf(known, "%s%" G_GUINT64_FORMAT, i ? ", " : "", v);
  }
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "%s %" G_GUINT64_FORMAT " is not in the sweep (it has %s)",
              rok_sweep_axis_name(axis), value, known->str);
  g_string_free(known, TRUE);
  return FALSE;
}

static gboolean in_view(const RokSweepRow *row, const RokSweepView *view) {
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++)
    if (a != view->x && rok_sweep_row_value(row, a) != view->at[a])
      return FALSE;
  return TRUE;
}

static double chart_value(const RokSweepRow *row, RokSweepChartKind kind) {
  return kind == ROK_SWEEP_CHART_THROUGHPUT ? row->tokens_per_s : (double)row->peak_bytes;
}

/* The rows of one strategy in the view, by x. */
static GArray *strategy_rows(const RokSweep *sweep, const RokSweepView *view, RokStrategy strategy) {
  GArray *rows = g_array_new(FALSE, FALSE, sizeof(RokSweepRow));
  for (guint i = 0; i < sweep->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    if (row->strategy == strategy && in_view(row, view))
      g_array_append_vals(rows, row, 1);
  }
  return rows;
}

static gint compare_x(gconstpointer a, gconstpointer b, gpointer data) {
  RokSweepAxis x = *(const RokSweepAxis *)data;
  guint64 u = rok_sweep_row_value(a, x), v = rok_sweep_row_value(b, x);
  return u < v ? -1 : u > v;
}

static gboolean same_points(const GArray *a, const GArray *b, RokSweepAxis x, RokSweepChartKind kind) {
  if (a->len != b->len)
    return FALSE;
  for (guint i = 0; i < a->len; i++) {
    const RokSweepRow *p = &g_array_index(a, RokSweepRow, i), *q = &g_array_index(b, RokSweepRow, i);
    if (rok_sweep_row_value(p, x) != rok_sweep_row_value(q, x) || chart_value(p, kind) != chart_value(q, kind) ||
        p->fits != q->fits)
      return FALSE;
  }
  return TRUE;
}

typedef struct {
  char *name;
  RokStrategy first; /* its colour */
  GArray *rows;
} Series;

static void series_clear(gpointer data) {
  Series *s = data;
  g_free(s->name);
  g_array_unref(s->rows);
}

/* One series per strategy; strategies whose points coincide share one,
 * named "keep = selective", so that no line hides another. */
static GArray *build_series(const RokSweep *sweep, const RokSweepView *view, RokSweepChartKind kind) {
  GArray *series = g_array_new(FALSE, FALSE, sizeof(Series));
  g_array_set_clear_func(series, series_clear);
  RokSweepAxis x = view->x;
  for (guint i = 0; i < sweep->strategies->len; i++) {
    RokStrategy s = g_array_index(sweep->strategies, RokStrategy, i);
    GArray *rows = strategy_rows(sweep, view, s);
    g_array_sort_with_data(rows, compare_x, &x);
    guint j = 0;
    while (j < series->len && !same_points(g_array_index(series, Series, j).rows, rows, x, kind))
      j++;
    if (rows->len == 0 || j < series->len) {
      if (rows->len > 0) {
        Series *same = &g_array_index(series, Series, j);
        char *name = g_strdup_printf("%s = %s", same->name, rok_strategy_name(s));
        g_free(same->name);
        same->name = name;
      }
      g_array_unref(rows);
      continue;
    }
    Series added = {g_strdup(rok_strategy_name(s)), s, rows};
    g_array_append_val(series, added);
  }
  return series;
}

/* Values that grow by a factor (1, 2, 4, ...) read best on a log2 axis,
 * evenly spaced ones (1, 2, 3, ...) on a linear one. */
static gboolean geometric(const GArray *values) {
  for (guint i = 1; i < values->len; i++)
    if (g_array_index(values, guint64, i) < g_array_index(values, guint64, i - 1) * 3 / 2)
      return FALSE;
  return TRUE;
}

static void set_x_axis(RokChart *chart, const RokSweep *sweep, RokSweepAxis x) {
  static const char *const titles[ROK_SWEEP_AXIS_COUNT] = {
      [ROK_SWEEP_TENSOR_PARALLEL] = "Tensor-parallel degree",
      [ROK_SWEEP_PIPELINE_PARALLEL] = "Pipeline stages",
      [ROK_SWEEP_VIRTUAL_STAGES] = "Virtual stages per pipeline stage",
      [ROK_SWEEP_BUDGET] = "Memory budget",
      [ROK_SWEEP_NVME_DEVICES] = "NVMe SSDs",
      [ROK_SWEEP_SEQ_LEN] = "Sequence length (tokens)",
      [ROK_SWEEP_MICRO_BATCH] = "Micro-batch size (sequences)",
  };
  const GArray *values = sweep->values[x];
  guint64 low = g_array_index(values, guint64, 0), high = g_array_index(values, guint64, values->len - 1);
  rok_chart_set_axis(chart, ROK_AXIS_X, titles[x], x == ROK_SWEEP_BUDGET ? ROK_UNIT_BYTES : ROK_UNIT_NONE, NULL);
  if ((x == ROK_SWEEP_MICRO_BATCH || x == ROK_SWEEP_SEQ_LEN) && low > 0 && high / low >= 4 && geometric(values))
    rok_chart_set_axis_scale(chart, ROK_AXIS_X, ROK_SCALE_LOG2);
  else if (x == ROK_SWEEP_NVME_DEVICES)
    rok_chart_axis_include(chart, ROK_AXIS_X, 0.0);
}

/* "micro_batch 8, 4 SSDs" for the axes the sweep varied besides x. */
static char *fixed_axes(const RokSweep *sweep, const RokSweepView *view) {
  GString *text = g_string_new(NULL);
  for (guint a = 0; a < ROK_SWEEP_AXIS_COUNT; a++) {
    if (a == view->x || sweep->values[a]->len < 2)
      continue;
    g_string_append(text, text->len ? ", " : "");
    if (a == ROK_SWEEP_BUDGET) {
      g_autofree char *size = rok_units_format_size(view->at[a]);
      g_string_append_printf(text, "budget %s", size);
    } else if (a == ROK_SWEEP_NVME_DEVICES) {
      g_string_append_printf(text, "%" G_GUINT64_FORMAT " SSD%s", view->at[a], view->at[a] == 1 ? "" : "s");
    } else {
      static const char *const words[ROK_SWEEP_AXIS_COUNT] = {
          [ROK_SWEEP_TENSOR_PARALLEL] = "TP", [ROK_SWEEP_PIPELINE_PARALLEL] = "PP",
          [ROK_SWEEP_VIRTUAL_STAGES] = "virtual stages", [ROK_SWEEP_SEQ_LEN] = "sequence length",
          [ROK_SWEEP_MICRO_BATCH] = "micro-batch"};
      g_string_append_printf(text, "%s %" G_GUINT64_FORMAT, words[a], view->at[a]);
    }
  }
  return g_string_free(text, FALSE);
}

static char *chart_title(const RokSweep *sweep, const RokSweepView *view, RokSweepChartKind kind) {
  g_autofree char *fixed = fixed_axes(sweep, view);
  return g_strdup_printf("%s of %s on %s%s%s%s", kind == ROK_SWEEP_CHART_THROUGHPUT ? "Throughput" : "Peak memory",
                         sweep->model_name, sweep->hw_name, *fixed ? " (" : "", fixed, *fixed ? ")" : "");
}

/* What a hollow marker means, and the lines of the memory chart. */
static gboolean any_hollow(const GArray *series) {
  for (guint i = 0; i < series->len; i++) {
    const GArray *rows = g_array_index(series, Series, i).rows;
    for (guint j = 0; j < rows->len; j++)
      if (!g_array_index(rows, RokSweepRow, j).fits)
        return TRUE;
  }
  return FALSE;
}

/* Whether every row charted has the fixed memory of the first. */
static gboolean same_fixed(const GArray *series, guint64 fixed) {
  for (guint i = 0; i < series->len; i++) {
    const GArray *rows = g_array_index(series, Series, i).rows;
    for (guint j = 0; j < rows->len; j++)
      if (g_array_index(rows, RokSweepRow, j).fixed_bytes != fixed)
        return FALSE;
  }
  return TRUE;
}

/* `scale` converts bytes to the memory axis's unit. */
static void add_limits(RokChart *chart, const GArray *series, gboolean budget_on_x, RokSweepChartKind kind,
                       double scale) {
  const RokSweepRow *first = &g_array_index(g_array_index(series, Series, 0).rows, RokSweepRow, 0);
  g_autofree char *gpu = rok_units_format_size(first->gpu_memory_bytes);
  g_autofree char *budget = rok_units_format_size(first->budget_bytes);
  gboolean own_budget = !budget_on_x && first->budget_bytes != first->gpu_memory_bytes;
  g_autofree char *meaning = own_budget ? g_strdup_printf("over the %s budget", budget)
                                        : budget_on_x ? g_strdup("over the budget")
                                                      : g_strdup_printf("does not fit in %s", gpu);
  if (any_hollow(series))
    rok_chart_set_hollow_meaning(chart, meaning);
  if (kind != ROK_SWEEP_CHART_MEMORY)
    return;
  g_autofree char *gpu_label = g_strdup_printf("GPU memory %s", gpu);
  rok_chart_add_reference(chart, ROK_AXIS_Y, (double)first->gpu_memory_bytes * scale, gpu_label);
  if (same_fixed(series, first->fixed_bytes)) {
    g_autofree char *fixed = rok_units_format_size(first->fixed_bytes);
    g_autofree char *fixed_label = g_strdup_printf("weights, gradients, optimizer states %s", fixed);
    rok_chart_add_reference(chart, ROK_AXIS_Y, (double)first->fixed_bytes * scale, fixed_label);
  }
  if (own_budget) {
    g_autofree char *budget_label = g_strdup_printf("budget %s", budget);
    rok_chart_add_reference(chart, ROK_AXIS_Y, (double)first->budget_bytes * scale, budget_label);
  }
}

/* The series' name in the legend, saying how far it fits when it stops
 * fitting within the sweep: where memory runs out, which a line hidden
 * under another strategy's equal one would not show. Memory grows with
 * micro-batch size and sequence length and the budget is a limit, so a
 * strategy fits up to a size, or from a budget. */
static char *legend_name(const Series *s, RokSweepAxis x) {
  guint first = G_MAXUINT, last = G_MAXUINT, fitting = 0;
  for (guint i = 0; i < s->rows->len; i++)
    if (g_array_index(s->rows, RokSweepRow, i).fits) {
      first = MIN(first, i);
      last = i;
      fitting++;
    }
  if (fitting == 0)
    return g_strdup_printf("%s (does not fit)", s->name);
  if (fitting == s->rows->len || x == ROK_SWEEP_NVME_DEVICES)
    return g_strdup(s->name);
  const RokSweepRow *edge = &g_array_index(s->rows, RokSweepRow, x == ROK_SWEEP_BUDGET ? first : last);
  guint64 limit = rok_sweep_row_value(edge, x);
  g_autofree char *value = x == ROK_SWEEP_BUDGET ? rok_units_format_size(limit)
                                                 : g_strdup_printf("%" G_GUINT64_FORMAT, limit);
  return g_strdup_printf("%s (fits %s %s)", s->name, x == ROK_SWEEP_BUDGET ? "\u2265" : "\u2264", value);
}

static void add_series(RokChart *chart, const Series *s, RokSweepAxis x, RokSweepChartKind kind, double scale) {
  g_autofree char *name = legend_name(s, x);
  guint id = rok_chart_add_series(chart, name, ROK_SERIES_LINE | ROK_SERIES_MARKERS, rok_strategy_color(s->first));
  for (guint i = 0; i < s->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(s->rows, RokSweepRow, i);
    rok_chart_add_point(chart, id, (double)rok_sweep_row_value(row, x), chart_value(row, kind) * scale,
                        row->fits ? ROK_POINT_FILLED : ROK_POINT_HOLLOW, NULL);
  }
}

static gboolean wide_range(const GArray *series) {
  guint64 low = G_MAXUINT64, high = 0;
  for (guint i = 0; i < series->len; i++) {
    const GArray *rows = g_array_index(series, Series, i).rows;
    for (guint j = 0; j < rows->len; j++) {
      low = MIN(low, g_array_index(rows, RokSweepRow, j).peak_bytes);
      high = MAX(high, g_array_index(rows, RokSweepRow, j).peak_bytes);
    }
  }
  return low > 0 && high / low >= 8;
}

static RokChart *build_chart(const RokSweep *sweep, const RokSweepView *view, RokSweepChartKind kind,
                             GError **error) {
  g_autoptr(GArray) series = build_series(sweep, view, kind);
  if (series->len == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "no rows of the sweep to chart against %s",
                rok_sweep_axis_name(view->x));
    return NULL;
  }
  g_autofree char *title = chart_title(sweep, view, kind);
  RokChart *chart = rok_charts_chart_new(title);
  /* Peaks far apart (keep at a large micro-batch against the GPU's
   * memory) would squash the rest to the bottom of a linear axis. */
  gboolean log_memory = kind == ROK_SWEEP_CHART_MEMORY && wide_range(series);
  double scale = log_memory ? 1.0 / GIB : 1.0;
  set_x_axis(chart, sweep, view->x);
  if (kind == ROK_SWEEP_CHART_THROUGHPUT)
    rok_chart_set_axis(chart, ROK_AXIS_Y, "Throughput per copy of the model", ROK_UNIT_RATE, "tokens/s");
  else if (!log_memory)
    rok_chart_set_axis(chart, ROK_AXIS_Y, "Peak GPU memory", ROK_UNIT_BYTES, NULL);
  else {
    /* In GiB throughout: one byte unit for the whole of a log axis would
     * give ticks such as 0.03125 TiB. */
    rok_chart_set_axis(chart, ROK_AXIS_Y, "Peak GPU memory (GiB, log scale)", ROK_UNIT_NONE, NULL);
    rok_chart_set_axis_scale(chart, ROK_AXIS_Y, ROK_SCALE_LOG2);
  }
  if (!log_memory)
    rok_chart_axis_include(chart, ROK_AXIS_Y, 0.0);
  for (guint i = 0; i < series->len; i++)
    add_series(chart, &g_array_index(series, Series, i), view->x, kind, scale);
  add_limits(chart, series, view->x == ROK_SWEEP_BUDGET, kind, scale);
  return chart;
}

gboolean rok_sweep_save_chart(const RokSweep *sweep, RokSweepChartKind kind, const RokSweepView *view,
                              const char *path, GError **error) {
  RokSweepView defaults;
  if (view == NULL) {
    rok_sweep_view_init(sweep, &defaults);
    view = &defaults;
  }
  g_autoptr(RokChart) chart = build_chart(sweep, view, kind, error);
  return chart != NULL && rok_chart_save(chart, path, error);
}
