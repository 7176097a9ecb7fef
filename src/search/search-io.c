/* A search's results: the Pareto front, the best points, the CSV and the
 * chart. */
#include <math.h>
#include <string.h>

#include "search-private.h"
#include "rok/core.h"
#include "rok/plot.h"

static gboolean counts(const RokSearchRow *row) {
  return row->status == ROK_SEARCH_PLANNED && row->fits;
}

/* A fitting planned point is on the front when no other is at least as
 * fast with no more memory, and better in one. */
void search_mark_pareto(RokSearch *search) {
  for (guint i = 0; i < search->rows->len; i++) {
    RokSearchRow *a = &g_array_index(search->rows, RokSearchRow, i);
    a->pareto = counts(a);
    for (guint j = 0; j < search->rows->len && a->pareto; j++) {
      const RokSearchRow *b = &g_array_index(search->rows, RokSearchRow, j);
      if (j != i && counts(b) && b->tokens_per_s >= a->tokens_per_s && b->peak_bytes <= a->peak_bytes &&
          (b->tokens_per_s > a->tokens_per_s || b->peak_bytes < a->peak_bytes))
        a->pareto = FALSE;
    }
  }
}

static gint by_throughput(gconstpointer a, gconstpointer b, gpointer data) {
  const RokSearch *s = data;
  guint x = *(const guint *)a, y = *(const guint *)b;
  double tx = g_array_index(s->rows, RokSearchRow, x).tokens_per_s;
  double ty = g_array_index(s->rows, RokSearchRow, y).tokens_per_s;
  return tx > ty ? -1 : tx < ty ? 1 : (x > y) - (x < y);
}

GArray *rok_search_best(const RokSearch *search, guint n) {
  GArray *best = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < search->rows->len; i++)
    if (counts(&g_array_index(search->rows, RokSearchRow, i)))
      g_array_append_val(best, i);
  g_array_sort_with_data(best, by_throughput, (gpointer)search);
  if (best->len > n)
    g_array_set_size(best, n);
  return best;
}

/* ---- CSV ---- */

static void put_double(GString *out, double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append(out, g_ascii_formatd(buf, sizeof buf, "%.17g", v));
}

static void put_name(GString *out, const char *name) {
  if (strpbrk(name, ",\"\n\r") == NULL) {
    g_string_append(out, name);
    return;
  }
  g_string_append_c(out, '"');
  for (const char *c = name; *c; c++) {
    if (*c == '"')
      g_string_append_c(out, '"');
    g_string_append_c(out, *c);
  }
  g_string_append_c(out, '"');
}

static void put_row(GString *out, const RokSearch *s, const RokSearchRow *r) {
  const RokLayout *l = &r->layout;
  put_name(out, s->model_name);
  g_string_append_c(out, ',');
  put_name(out, s->hw_name);
  g_string_append_printf(out,
                         ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                         ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                         ",%" G_GUINT64_FORMAT ",%d,%s,%" G_GUINT64_FORMAT ",",
                         l->gpus, l->gpus_per_node, l->tensor, l->pipeline, l->virtual_stages, l->data,
                         l->micro_batch, l->global_batch, l->zero_stage, r->offload ? 1 : 0,
                         rok_search_status_name(r->status), r->fixed_bytes);
  put_double(out, r->bound_step_time_s);
  g_string_append_c(out, ',');
  put_double(out, r->bound_tokens_per_s);
  g_string_append_c(out, ',');
  put_double(out, r->step_time_s);
  g_string_append_c(out, ',');
  put_double(out, r->tokens_per_s);
  g_string_append_printf(out, ",%" G_GUINT64_FORMAT ",%d", r->peak_bytes, r->fits ? 1 : 0);
  static const RokDecision order[] = {ROK_DECISION_KEEP, ROK_DECISION_OFFLOAD_NVME, ROK_DECISION_OFFLOAD_HOST,
                                      ROK_DECISION_RECOMPUTE};
  for (guint d = 0; d < G_N_ELEMENTS(order); d++)
    g_string_append_printf(out, ",%" G_GUINT64_FORMAT, r->decision_bytes[order[d]]);
  g_string_append_printf(out, ",%" G_GUINT64_FORMAT ",", r->nvme_write_bytes);
  if (r->status == ROK_SEARCH_PLANNED && isfinite(r->ssd_lifetime_years))
    put_double(out, r->ssd_lifetime_years);
  g_string_append_printf(out, ",%d,%d\n", r->ssd_limited ? 1 : 0, r->pareto ? 1 : 0);
}

char *rok_search_to_csv(const RokSearch *search) {
  GString *out = g_string_new(
      "model,hw,gpus,gpus_per_node,tensor_parallel,pipeline_parallel,virtual_stages,data_parallel,micro_batch,"
      "global_batch,zero_stage,offload,status,fixed_bytes,bound_step_time_s,bound_tokens_per_s,step_time_s,"
      "tokens_per_s,peak_bytes,fits,keep_bytes,nvme_bytes,host_bytes,recompute_bytes,nvme_write_bytes,"
      "ssd_lifetime_years,ssd_limited,pareto\n");
  for (guint i = 0; i < search->rows->len; i++)
    put_row(out, search, &g_array_index(search->rows, RokSearchRow, i));
  return g_string_free(out, FALSE);
}

gboolean rok_search_save_csv(const RokSearch *search, const char *path, GError **error) {
  g_autofree char *text = rok_search_to_csv(search);
  return rok_file_write(path, text, strlen(text), error);
}

/* ---- Chart ---- */

static char *point_label(const RokSearchRow *r) {
  return g_strdup_printf("TP%" G_GUINT64_FORMAT " PP%" G_GUINT64_FORMAT " DP%" G_GUINT64_FORMAT " b%" G_GUINT64_FORMAT
                         " Z%" G_GUINT64_FORMAT,
                         r->layout.tensor, r->layout.pipeline, r->layout.data, r->layout.micro_batch,
                         r->layout.zero_stage);
}

static gint by_memory(gconstpointer a, gconstpointer b) {
  const RokSearchRow *x = *(const RokSearchRow *const *)a, *y = *(const RokSearchRow *const *)b;
  return x->peak_bytes < y->peak_bytes ? -1 : x->peak_bytes > y->peak_bytes;
}

gboolean rok_search_save_chart(const RokSearch *search, const char *path, GError **error) {
  g_autofree char *title = g_strdup_printf("%s on %s: layouts within GPU memory", search->model_name, search->hw_name);
  g_autoptr(RokChart) chart = rok_chart_new(title);
  rok_chart_set_axis(chart, ROK_AXIS_X, "Peak memory per GPU", ROK_UNIT_BYTES, NULL);
  rok_chart_set_axis(chart, ROK_AXIS_Y, "Cluster throughput", ROK_UNIT_RATE, "tokens/s");
  rok_chart_axis_include(chart, ROK_AXIS_Y, 0);
  guint series[2] = {rok_chart_add_series(chart, "keep and recompute", ROK_SERIES_MARKERS, ROK_COLOR_BLACK),
                     rok_chart_add_series(chart, "offload allowed", ROK_SERIES_MARKERS, ROK_COLOR_VERMILLION)};
  guint front = rok_chart_add_series(chart, "Pareto front", ROK_SERIES_LINE, ROK_COLOR_BLUE);
  g_autoptr(GPtrArray) on_front = g_ptr_array_new();
  guint shown = 0;
  for (guint i = 0; i < search->rows->len; i++) {
    const RokSearchRow *r = &g_array_index(search->rows, RokSearchRow, i);
    if (!counts(r))
      continue;
    rok_chart_add_point(chart, series[r->offload], (double)r->peak_bytes, r->tokens_per_s, 0, NULL);
    shown++;
    if (r->pareto)
      g_ptr_array_add(on_front, (gpointer)r);
  }
  if (shown == 0) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "%s: no layout fits in GPU memory: nothing to draw", path);
    return FALSE;
  }
  g_ptr_array_sort(on_front, by_memory);
  for (guint i = 0; i < on_front->len; i++) {
    const RokSearchRow *r = on_front->pdata[i];
    g_autofree char *label = i + 1 == on_front->len ? point_label(r) : NULL;
    rok_chart_add_point(chart, front, (double)r->peak_bytes, r->tokens_per_s, 0, label);
  }
  rok_chart_add_reference(chart, ROK_AXIS_X, (double)search->gpu_memory_bytes, "GPU memory");
  return rok_chart_save(chart, path, error);
}
