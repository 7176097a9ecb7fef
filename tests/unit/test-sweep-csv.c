/* A sweep's files: the CSV read back gives the same numbers, its errors say
 * where, and charts re-drawn from it are the same bytes; SVG is XML, PDF
 * has no date. */
#include <dlfcn.h>
#include <glib/gstdio.h>
#include <cairo.h>
#include <string.h>

#include "rok/charts.h"
#include "rok/core.h"
#include "rok/sweep.h"

static RokSweep *small_sweep(const char *range) {
  const char *root = g_getenv("ROK_SOURCE_DIR");
  g_autofree char *model = g_build_filename(root ? root : ROK_SOURCE_DIR, "configs", "models", "ssdtrain-bert.json", NULL);
  g_autofree char *hw_path = g_build_filename(root ? root : ROK_SOURCE_DIR, "configs", "hw", "a100-40g-pcie4-4xp5800x.json", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;
  gsize length = 0;
  g_assert_true(g_file_get_contents(model, &text, &length, NULL));
  g_autoptr(RokHw) hw = rok_hw_load(hw_path, &error);
  g_assert_no_error(error);
  g_autoptr(RokSweepSpec) spec = rok_sweep_spec_new(model, text, length, NULL, hw, &error);
  g_assert_no_error(error);
  g_assert_true(rok_sweep_spec_set_axis(spec, ROK_SWEEP_MICRO_BATCH, range, &error));
  RokSweep *sweep = rok_sweep_run(spec, 2, NULL, NULL, &error);
  g_assert_no_error(error);
  return sweep;
}

static RokSweep *parse(const char *text) {
  g_autoptr(GError) error = NULL;
  RokSweep *sweep = rok_sweep_parse_csv("sweep.csv", text, strlen(text), &error);
  g_assert_no_error(error);
  return sweep;
}

static void assert_same_double(double a, double b) {
  g_assert_cmpmem(&a, sizeof a, &b, sizeof b);
}

static void assert_same_row(const RokSweepRow *a, const RokSweepRow *b) {
  g_assert_cmpint(a->strategy, ==, b->strategy);
  const guint64 ua[] = {a->micro_batch, a->seq_len, a->nvme_devices, a->budget_bytes, a->gpu_memory_bytes,
                        a->fixed_bytes, a->peak_bytes, a->activation_peak_bytes, a->nvme_write_bytes};
  const guint64 ub[] = {b->micro_batch, b->seq_len, b->nvme_devices, b->budget_bytes, b->gpu_memory_bytes,
                        b->fixed_bytes, b->peak_bytes, b->activation_peak_bytes, b->nvme_write_bytes};
  g_assert_cmpmem(ua, sizeof ua, ub, sizeof ub);
  assert_same_double(a->step_time_s, b->step_time_s);
  assert_same_double(a->tokens_per_s, b->tokens_per_s);
  assert_same_double(a->tokens_per_gpu_s, b->tokens_per_gpu_s);
  assert_same_double(a->model_flops_per_gpu_s, b->model_flops_per_gpu_s);
  assert_same_double(a->mfu, b->mfu);
  assert_same_double(a->required_write_bandwidth, b->required_write_bandwidth);
  assert_same_double(a->recompute_s, b->recompute_s);
  assert_same_double(a->stall_s, b->stall_s);
  assert_same_double(a->bubble_s, b->bubble_s);
  assert_same_double(a->exposed_comm_s, b->exposed_comm_s);
  g_assert_cmpuint(a->tensor_parallel, ==, b->tensor_parallel);
  g_assert_cmpuint(a->pipeline_parallel, ==, b->pipeline_parallel);
  g_assert_cmpuint(a->data_parallel, ==, b->data_parallel);
  g_assert_cmpuint(a->virtual_stages, ==, b->virtual_stages);
  g_assert_cmpint(a->fits, ==, b->fits);
}

static void test_round_trip(void) {
  g_autoptr(RokSweep) sweep = small_sweep("1:40:*3");
  g_autofree char *csv = rok_sweep_to_csv(sweep);
  g_assert_true(g_str_has_prefix(csv, "strategy,model,hw,tensor_parallel,pipeline_parallel,data_parallel,"
                                      "virtual_stages,micro_batch,seq_len,nvme_devices,budget_bytes,"
                                      "gpu_memory_bytes,fixed_bytes,step_time_s,tokens_per_s,tokens_per_gpu_s,"
                                      "model_flops_per_gpu_s,mfu,peak_bytes,"
                                      "activation_peak_bytes,required_write_bandwidth,nvme_write_bytes,"
                                      "recompute_s,stall_s,bubble_s,exposed_comm_s,fits\n"));
  g_autoptr(RokSweep) back = parse(csv);
  g_autofree char *again = rok_sweep_to_csv(back);
  g_assert_cmpstr(csv, ==, again);
  /* Every field, doubles bit for bit. */
  g_assert_cmpuint(back->rows->len, ==, sweep->rows->len);
  for (guint i = 0; i < sweep->rows->len; i++)
    assert_same_row(&g_array_index(back->rows, RokSweepRow, i), &g_array_index(sweep->rows, RokSweepRow, i));
  g_assert_cmpstr(back->model_name, ==, "ssdtrain-bert");
  g_assert_cmpstr(back->hw_name, ==, "a100-40g-pcie4-4xp5800x");
  g_assert_cmpuint(back->values[ROK_SWEEP_MICRO_BATCH]->len, ==, 4);
  g_assert_cmpuint(back->strategies->len, ==, sweep->strategies->len);
}

/* Names with commas and quotes are quoted; CRLF line ends are read. */
static void test_quoting(void) {
  g_autoptr(RokSweep) sweep = small_sweep("2");
  g_free(sweep->model_name);
  sweep->model_name = g_strdup("bert, \"big\"");
  g_autofree char *csv = rok_sweep_to_csv(sweep);
  g_assert_nonnull(strstr(csv, ",\"bert, \"\"big\"\"\","));
  g_autoptr(RokSweep) back = parse(csv);
  g_assert_cmpstr(back->model_name, ==, "bert, \"big\"");
  g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
  g_autofree char *crlf = g_strjoinv("\r\n", lines);
  g_autoptr(RokSweep) from_crlf = parse(crlf);
  g_assert_cmpuint(from_crlf->rows->len, ==, sweep->rows->len);
}

static void expect_error(const char *text, const char *needle) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSweep) sweep = rok_sweep_parse_csv("s.csv", text, strlen(text), &error);
  g_assert_null(sweep);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  if (strstr(error->message, needle) == NULL)
    g_error("expected \"%s\" in: %s", needle, error->message);
}

#define HEADER                                                                                                    \
  "strategy,model,hw,micro_batch,seq_len,nvme_devices,budget_bytes,gpu_memory_bytes,fixed_bytes,step_time_s,"     \
  "tokens_per_s,tokens_per_gpu_s,model_flops_per_gpu_s,mfu,peak_bytes,activation_peak_bytes,required_write_bandwidth,nvme_write_bytes,recompute_s,stall_s,"  \
  "fits\n"
#define ROW "keep,m,h,1,1024,4,100,100,10,0.5,2000,250,1e12,0.5,50,40,0,0,0,0,1\n"

static void test_errors(void) {
  g_autoptr(RokSweep) ok = parse(HEADER ROW ROW);
  g_assert_cmpuint(ok->rows->len, ==, 2);
  g_autoptr(RokSweep) no_final_newline = parse(HEADER "keep,m,h,1,1024,4,100,100,10,0.5,2000,250,1e12,0.5,50,40,0,0,0,0,1");
  g_assert_cmpuint(no_final_newline->rows->len, ==, 1);
  expect_error("", "s.csv: empty file");
  expect_error(HEADER, "s.csv:2:1: no rows after the header");
  expect_error("strategy,model,hw,micro\n" ROW, "s.csv:1:19: expected column 4 of the header to be \"tensor_parallel\", "
                                                "found \"micro\"");
  expect_error("strategy,model\n" ROW, "s.csv:1:15: expected column 3 of the header to be \"hw\", found the end");
  expect_error(HEADER ROW "keep,m,h,1,1024\n", "s.csv:3:16: expected 21 fields, found 5");
  expect_error(HEADER "keep,m,h,x,1024,4,100,100,10,0.5,2000,250,1e12,0.5,50,40,0,0,0,0,1\n",
               "s.csv:2:10: \"micro_batch\": expected a whole number, found \"x\"");
  expect_error(HEADER "keep,m,h,1,1024,4,100,100,10,0.5,2e3x,250,1e12,0.5,50,40,0,0,0,0,1\n",
               "s.csv:2:34: \"tokens_per_s\": expected a finite number, found \"2e3x\"");
  expect_error(HEADER "keep,m,h,1,1024,4,100,100,10,nan,2000,250,1e12,0.5,50,40,0,0,0,0,1\n", "\"step_time_s\": expected a finite");
  expect_error(HEADER "keep,m,h,1,1024,4,100,100,10,0.5,2000,250,1e12,0.5,50,40,0,0,0,0,yes\n",
               "s.csv:2:66: \"fits\": expected 0 or 1, found \"yes\"");
  expect_error(HEADER "kep,m,h,1,1024,4,100,100,10,0.5,2000,250,1e12,0.5,50,40,0,0,0,0,1\n", "s.csv:2:1: unknown strategy \"kep\"");
  expect_error(HEADER ROW "keep,other,h,1,1024,4,100,100,10,0.5,2000,250,1e12,0.5,50,40,0,0,0,0,1\n",
               "s.csv:3:6: \"model\": \"other\" differs from the first row's \"m\"");
  expect_error(HEADER "keep,\"m,h,1\n", "s.csv:2:6: a quoted field is not closed");
  expect_error(HEADER "keep,\"m\"x,h,1\n", "s.csv:2:9: text after the closing quote");
  expect_error(HEADER "keep,m\xff,h\n", "s.csv:2:7: invalid UTF-8");
  expect_error(HEADER ROW "\n" ROW, "s.csv:3:1: expected 21 fields, found 1");
}

/* The files written before: without the layout, bubble and communication
 * columns (HEADER above), and also without the per-GPU ones; what they lack
 * reads as 0. The current header with a row of all 27 columns. */
static void test_older_headers(void) {
  g_autoptr(RokSweep) first = parse(
      "strategy,model,hw,micro_batch,seq_len,nvme_devices,budget_bytes,gpu_memory_bytes,fixed_bytes,step_time_s,"
      "tokens_per_s,peak_bytes,activation_peak_bytes,required_write_bandwidth,nvme_write_bytes,recompute_s,stall_s,"
      "fits\n"
      "keep,m,h,1,1024,4,100,100,10,0.5,2000,50,40,0,0,0,0,1\n");
  const RokSweepRow *row = &g_array_index(first->rows, RokSweepRow, 0);
  g_assert_cmpfloat(row->tokens_per_s, ==, 2000);
  g_assert_cmpfloat(row->mfu, ==, 0);
  g_assert_cmpuint(row->peak_bytes, ==, 50);
  g_assert_cmpuint(row->pipeline_parallel, ==, 0);
  g_autoptr(RokSweep) no_layout = parse(HEADER ROW);
  row = &g_array_index(no_layout->rows, RokSweepRow, 0);
  g_assert_cmpfloat(row->mfu, ==, 0.5);
  g_assert_cmpuint(row->peak_bytes, ==, 50);
  g_assert_cmpuint(row->tensor_parallel, ==, 0);
  g_autoptr(RokSweep) now = parse(
      "strategy,model,hw,tensor_parallel,pipeline_parallel,data_parallel,virtual_stages,micro_batch,seq_len,"
      "nvme_devices,budget_bytes,gpu_memory_bytes,fixed_bytes,step_time_s,tokens_per_s,tokens_per_gpu_s,"
      "model_flops_per_gpu_s,mfu,peak_bytes,activation_peak_bytes,required_write_bandwidth,nvme_write_bytes,"
      "recompute_s,stall_s,bubble_s,exposed_comm_s,fits\n"
      "keep,m,h,2,4,8,1,1,1024,4,100,100,10,0.5,2000,31.25,1e12,0.5,50,40,0,0,0,0,0.125,0.0625,1\n");
  row = &g_array_index(now->rows, RokSweepRow, 0);
  g_assert_cmpuint(row->pipeline_parallel, ==, 4);
  g_assert_cmpuint(row->data_parallel, ==, 8);
  g_assert_cmpfloat(row->tokens_per_gpu_s, ==, 31.25);
  g_assert_cmpfloat(row->bubble_s, ==, 0.125);
  g_assert_cmpfloat(row->exposed_comm_s, ==, 0.0625);
}

static void test_load(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSweep) none = rok_sweep_load_csv("/no/such/sweep.csv", &error);
  g_assert_null(none);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  g_clear_error(&error);
  g_autoptr(RokSweep) sweep = small_sweep("4,8");
  g_autofree char *dir = g_dir_make_tmp("rok-sweep-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "sweep.csv", NULL);
  g_assert_true(rok_sweep_save_csv(sweep, path, &error));
  g_autoptr(RokSweep) back = rok_sweep_load_csv(path, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->rows->len, ==, sweep->rows->len);
  g_assert_false(rok_sweep_save_csv(sweep, "/no/such/dir/sweep.csv", &error));
  g_assert_nonnull(error);
  g_remove(path);
  g_rmdir(dir);
}

static GBytes *read_bytes(const char *path) {
  g_autofree char *data = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(path, &data, &n, NULL));
  return g_bytes_new_take(g_steal_pointer(&data), n);
}

static gboolean bytes_contain(GBytes *bytes, const char *needle) {
  gsize n = 0;
  const char *data = g_bytes_get_data(bytes, &n);
  gsize k = strlen(needle);
  for (gsize i = 0; i + k <= n; i++)
    if (memcmp(data + i, needle, k) == 0)
      return TRUE;
  return FALSE;
}

static void assert_xml(GBytes *bytes) {
  static const GMarkupParser parser = {0};
  g_autoptr(GError) error = NULL;
  gsize n = 0;
  const char *data = g_bytes_get_data(bytes, &n);
  g_autoptr(GMarkupParseContext) context = g_markup_parse_context_new(&parser, 0, NULL, NULL);
  g_assert_true(g_markup_parse_context_parse(context, data, (gssize)n, &error) &&
                g_markup_parse_context_end_parse(context, &error));
  g_assert_no_error(error);
}

static char *chart(const RokSweep *sweep, RokSweepChartKind kind, const RokSweepView *view, const char *dir,
                   const char *name) {
  g_autoptr(GError) error = NULL;
  char *path = g_build_filename(dir, name, NULL);
  g_assert_true(rok_sweep_save_chart(sweep, kind, view, path, &error));
  g_assert_no_error(error);
  return path;
}

/* Charts drawn from the sweep and from its CSV are the same files. */
static void test_charts_redraw(void) {
  g_autoptr(RokSweep) sweep = small_sweep("1:64:*2");
  g_autofree char *csv = rok_sweep_to_csv(sweep);
  g_autoptr(RokSweep) back = parse(csv);
  g_autofree char *dir = g_dir_make_tmp("rok-sweep-XXXXXX", NULL);
  static const char *const extensions[] = {"png", "svg", "pdf"};
  for (guint kind = ROK_SWEEP_CHART_THROUGHPUT; kind <= ROK_SWEEP_CHART_MEMORY; kind++)
    for (guint e = 0; e < G_N_ELEMENTS(extensions); e++) {
      g_autofree char *a_name = g_strdup_printf("a%u.%s", kind, extensions[e]);
      g_autofree char *b_name = g_strdup_printf("b%u.%s", kind, extensions[e]);
      g_autofree char *a_path = chart(sweep, kind, NULL, dir, a_name), *b_path = chart(back, kind, NULL, dir, b_name);
      g_autoptr(GBytes) a = read_bytes(a_path), b = read_bytes(b_path);
      g_assert_true(g_bytes_equal(a, b));
      g_assert_cmpuint(g_bytes_get_size(a), >, 1000);
      if (e == 1)
        assert_xml(a);
      if (e == 2) {
        g_assert_true(g_str_has_prefix(g_bytes_get_data(a, NULL), "%PDF-"));
        g_assert_false(bytes_contain(a, "CreationDate"));
        g_assert_false(bytes_contain(a, "ModDate"));
      }
      g_remove(a_path);
      g_remove(b_path);
    }
  g_rmdir(dir);
}

static void test_views(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSweep) sweep = small_sweep("4,8");
  RokSweepView view;
  rok_sweep_view_init(sweep, &view);
  g_assert_cmpint(view.x, ==, ROK_SWEEP_MICRO_BATCH);
  g_assert_cmpuint(view.at[ROK_SWEEP_NVME_DEVICES], ==, 4);
  g_assert_false(rok_sweep_view_set(sweep, &view, ROK_SWEEP_NVME_DEVICES, 3, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_assert_cmpstr(error->message, ==, "nvme_devices 3 is not in the sweep (it has 4)");
  g_clear_error(&error);
  g_assert_true(rok_sweep_view_set(sweep, &view, ROK_SWEEP_MICRO_BATCH, 8, &error));
  /* Across the SSD count, at micro-batch 8: one point per strategy. */
  view.x = ROK_SWEEP_NVME_DEVICES;
  g_autofree char *dir = g_dir_make_tmp("rok-sweep-XXXXXX", NULL);
  g_autofree char *path = chart(sweep, ROK_SWEEP_CHART_MEMORY, &view, dir, "nvme.svg");
  g_remove(path);
  /* A bad extension is a usage error. */
  g_autofree char *bad = g_build_filename(dir, "chart.jpg", NULL);
  g_assert_false(rok_sweep_save_chart(sweep, ROK_SWEEP_CHART_THROUGHPUT, NULL, bad, &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sweep-csv/round-trip", test_round_trip);
  g_test_add_func("/sweep-csv/quoting", test_quoting);
  g_test_add_func("/sweep-csv/errors", test_errors);
  g_test_add_func("/sweep-csv/older-headers", test_older_headers);
  g_test_add_func("/sweep-csv/load", test_load);
  g_test_add_func("/sweep-chart/redraw", test_charts_redraw);
  g_test_add_func("/sweep-chart/views", test_views);
  int status = g_test_run();
  /* Leave no caches for the leak checker of sanitizer builds (as
   * test-plot does): cairo's, and fontconfig's, called by name. */
  cairo_debug_reset_static_data();
  void (*fc_fini)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "FcFini");
  if (fc_fini != NULL)
    fc_fini();
  return status;
}
