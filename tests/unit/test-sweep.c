/* Sweeps: ranges, the order of points, serial against parallel runs, and
 * SSDTrain's BERT, where offloading must fit clearly larger micro-batches
 * than keeping everything. */
#include <string.h>

#include "rok/core.h"
#include "rok/sweep.h"

static char *config_path(const char *kind, const char *name) {
  const char *root = g_getenv("ROK_SOURCE_DIR");
  g_autofree char *file = g_strconcat(name, ".json", NULL);
  return g_build_filename(root ? root : ROK_SOURCE_DIR, "configs", kind, file, NULL);
}

static RokSweepSpec *spec_for(const char *model, const char *hw_name, const char *const *sets) {
  g_autoptr(GError) error = NULL;
  g_autofree char *model_path = config_path("models", model), *hw_path = config_path("hw", hw_name);
  g_autofree char *text = NULL;
  gsize length = 0;
  g_assert_true(g_file_get_contents(model_path, &text, &length, NULL));
  g_autoptr(RokHw) hw = rok_hw_load(hw_path, &error);
  g_assert_no_error(error);
  RokSweepSpec *spec = rok_sweep_spec_new(model_path, text, length, sets, hw, &error);
  g_assert_no_error(error);
  return spec;
}

static void set_axis(RokSweepSpec *spec, RokSweepAxis axis, const char *range) {
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_sweep_spec_set_axis(spec, axis, range, &error));
  g_assert_no_error(error);
}

static RokSweep *run(const RokSweepSpec *spec, guint threads) {
  g_autoptr(GError) error = NULL;
  RokSweep *sweep = rok_sweep_run(spec, threads, NULL, NULL, &error);
  g_assert_no_error(error);
  return sweep;
}

/* ---- Ranges ---- */

static void expect_range(const char *text, gboolean sizes, const guint64 *expected, guint n) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) values = rok_sweep_parse_range(text, sizes, 0, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(values->len, ==, n);
  for (guint i = 0; i < n; i++)
    g_assert_cmpuint(g_array_index(values, guint64, i), ==, expected[i]);
}

static void test_range_good(void) {
  expect_range("8", FALSE, (guint64[]){8}, 1);
  expect_range("1,2,4,8", FALSE, (guint64[]){1, 2, 4, 8}, 4);
  expect_range(" 8, 2 ,4 ", FALSE, (guint64[]){2, 4, 8}, 3); /* spaces, and swept rising */
  expect_range("5:5", FALSE, (guint64[]){5}, 1);
  expect_range("8:64:8", FALSE, (guint64[]){8, 16, 24, 32, 40, 48, 56, 64}, 8);
  expect_range("1:10:4", FALSE, (guint64[]){1, 5, 9}, 3);
  expect_range("1:64:*2", FALSE, (guint64[]){1, 2, 4, 8, 16, 32, 64}, 7);
  expect_range("3:30:*3", FALSE, (guint64[]){3, 9, 27}, 3);
  expect_range("24GiB,32GiB", TRUE, (guint64[]){24ULL << 30, 32ULL << 30}, 2);
  expect_range("20GiB:40GiB:10GiB", TRUE, (guint64[]){20ULL << 30, 30ULL << 30, 40ULL << 30}, 3);
  /* Steps that would pass the largest value stop without wrapping around. */
  expect_range("18446744073709551614:18446744073709551615:7", FALSE, (guint64[]){G_MAXUINT64 - 1}, 1);
  expect_range("18446744073709551614:18446744073709551615", FALSE, (guint64[]){G_MAXUINT64 - 1, G_MAXUINT64}, 2);
  g_autoptr(GArray) powers = rok_sweep_parse_range("1:18446744073709551615:*2", FALSE, 0, NULL);
  g_assert_cmpuint(powers->len, ==, 64);
  g_assert_cmpuint(g_array_index(powers, guint64, 63), ==, 1ULL << 63);
  /* 1:64 is every whole number: 64 points. */
  g_autoptr(GArray) all = rok_sweep_parse_range("1:64", FALSE, 1, NULL);
  g_assert_cmpuint(all->len, ==, 64);
  g_assert_cmpuint(g_array_index(all, guint64, 63), ==, 64);
}

static void expect_bad(const char *text, gboolean sizes, guint64 min, const char *needle) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) values = rok_sweep_parse_range(text, sizes, min, &error);
  g_assert_null(values);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  if (strstr(error->message, needle) == NULL)
    g_error("range \"%s\": expected \"%s\" in: %s", text, needle, error->message);
}

static void test_range_bad(void) {
  expect_bad("", FALSE, 0, "no values");
  expect_bad("x", FALSE, 0, "\"x\" is not a whole number");
  expect_bad("1.5", FALSE, 0, "\"1.5\" is not a whole number");
  expect_bad("-1", FALSE, 0, "\"-1\" is not a whole number");
  expect_bad("1,,2", FALSE, 0, "a value is missing");
  expect_bad("1:", FALSE, 0, "a value is missing");
  expect_bad(":4", FALSE, 0, "a value is missing");
  expect_bad("4:1", FALSE, 0, "ends before it starts");
  expect_bad("1:4:0", FALSE, 0, "step must be more than 0");
  expect_bad("1:4:*1", FALSE, 0, "at least 2");
  expect_bad("1:4:*x", FALSE, 0, "at least 2");
  expect_bad("0:4:*2", FALSE, 0, "cannot start at 0");
  expect_bad("1:2:3:4", FALSE, 0, "expected a:b");
  expect_bad("1,2:4", FALSE, 0, "not both");
  expect_bad("2,4,2", FALSE, 0, "2 is given twice");
  expect_bad("0,1", FALSE, 1, "at least 1, not 0");
  expect_bad("1:5000", FALSE, 1, "more than 4096 values");
  expect_bad("40G", TRUE, 1, "\"40G\" is not a size");
  expect_bad("20GiB:40GiB", TRUE, 1, "more than 4096 values"); /* one byte at a time */
}

/* ---- The specification ---- */

static void test_points_order(void) {
  g_autoptr(RokSweepSpec) spec = spec_for("ssdtrain-bert", "a100-40g-pcie4-4xp5800x", NULL);
  g_assert_cmpuint(rok_sweep_spec_points(spec), ==, 1);
  set_axis(spec, ROK_SWEEP_MICRO_BATCH, "1,2,4");
  set_axis(spec, ROK_SWEEP_NVME_DEVICES, "2,4");
  g_assert_cmpuint(rok_sweep_spec_points(spec), ==, 6);
  g_autoptr(GError) error = NULL;
  /* Budgets above the GPU's memory and oversized grids are refused. */
  g_assert_false(rok_sweep_spec_set_axis(spec, ROK_SWEEP_BUDGET, "30GiB,41GiB", &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_clear_error(&error);
  g_autoptr(RokSweepSpec) big = spec_for("ssdtrain-bert", "a100-40g-pcie4-4xp5800x", NULL);
  set_axis(big, ROK_SWEEP_SEQ_LEN, "1:4096");
  g_assert_false(rok_sweep_spec_set_axis(big, ROK_SWEEP_MICRO_BATCH, "1:17", &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "the sweep would have 69632 points, more than 65536"));
  g_clear_error(&error);
  g_assert_false(rok_sweep_spec_set_strategies(spec, "keep,keep", &error));
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_clear_error(&error);
  g_assert_false(rok_sweep_spec_set_strategies(spec, "keep,ofload", &error));
  g_assert_nonnull(strstr(error->message, "unknown strategy \"ofload\""));
  g_clear_error(&error);
  g_assert_true(rok_sweep_spec_set_strategies(spec, "offload,keep", &error));
  g_autoptr(RokSweep) sweep = run(spec, 1);
  /* Nested loops, the first axis (budget) outermost, micro_batch fastest;
   * strategies in the order asked for. */
  static const guint64 nvme[] = {2, 2, 2, 4, 4, 4}, mb[] = {1, 2, 4, 1, 2, 4};
  g_assert_cmpuint(sweep->rows->len, ==, 12);
  for (guint i = 0; i < sweep->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    g_assert_cmpuint(row->nvme_devices, ==, nvme[i / 2]);
    g_assert_cmpuint(row->micro_batch, ==, mb[i / 2]);
    g_assert_cmpint(row->strategy, ==, i % 2 == 0 ? ROK_STRATEGY_OFFLOAD : ROK_STRATEGY_KEEP);
    g_assert_cmpuint(row->budget_bytes, ==, 40ULL << 30);
    g_assert_cmpuint(row->seq_len, ==, 1024);
  }
  g_assert_cmpuint(sweep->values[ROK_SWEEP_MICRO_BATCH]->len, ==, 3);
  g_assert_cmpuint(sweep->strategies->len, ==, 2);
  g_assert_cmpstr(sweep->model_name, ==, "ssdtrain-bert");
}

/* Points with no SSDs leave out the strategies that need them; the
 * micro-batches per step stay as in the config. */
static void test_no_ssds(void) {
  g_autoptr(RokSweepSpec) spec = spec_for("gpt3-1.3b", "a100-80g-sxm-4x980pro", NULL);
  set_axis(spec, ROK_SWEEP_NVME_DEVICES, "0,4");
  set_axis(spec, ROK_SWEEP_MICRO_BATCH, "1,2");
  g_autoptr(RokSweep) sweep = run(spec, 2);
  guint with_ssds = 0;
  for (guint i = 0; i < sweep->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    gboolean needs = row->strategy == ROK_STRATEGY_OFFLOAD || row->strategy == ROK_STRATEGY_TBA;
    g_assert_true(!needs || row->nvme_devices > 0);
    with_ssds += row->nvme_devices > 0;
    if (row->strategy == ROK_STRATEGY_OFFLOAD)
      g_assert_cmpfloat(row->required_write_bandwidth, >, 0);
    if (row->strategy == ROK_STRATEGY_KEEP)
      g_assert_cmpfloat(row->required_write_bandwidth, ==, 0);
  }
  g_assert_cmpuint(sweep->rows->len, ==, 2 * 4 + 2 * 6);
  g_assert_cmpuint(with_ssds, ==, 2 * 6);
  /* gpt3-1.3b: 8 micro-batches per step at micro-batch 1, and at 2. */
  const RokSweepRow *first = &g_array_index(sweep->rows, RokSweepRow, 0);
  const RokSweepRow *doubled = &g_array_index(sweep->rows, RokSweepRow, 4);
  g_assert_cmpuint(doubled->micro_batch, ==, 2);
  g_assert_cmpfloat(doubled->step_time_s, >, 1.5 * first->step_time_s);
}

static void test_serial_equals_parallel(void) {
  g_autoptr(RokSweepSpec) spec = spec_for("ssdtrain-bert", "a100-40g-pcie4-4xp5800x", NULL);
  set_axis(spec, ROK_SWEEP_MICRO_BATCH, "8,16,24");
  set_axis(spec, ROK_SWEEP_NVME_DEVICES, "1,4");
  set_axis(spec, ROK_SWEEP_BUDGET, "30GiB,40GiB");
  g_autoptr(RokSweep) serial = run(spec, 1), parallel = run(spec, 3);
  g_autofree char *a = rok_sweep_to_csv(serial), *b = rok_sweep_to_csv(parallel);
  g_assert_cmpstr(a, ==, b);
  g_assert_cmpuint(serial->rows->len, ==, 3 * 2 * 2 * 6);
  json_object *ja = rok_sweep_to_json(serial), *jb = rok_sweep_to_json(parallel);
  g_assert_cmpstr(json_object_to_json_string(ja), ==, json_object_to_json_string(jb));
  json_object_put(ja);
  json_object_put(jb);
  /* A budget below the GPU's memory makes less fit. */
  guint fits[2] = {0, 0};
  for (guint i = 0; i < serial->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(serial->rows, RokSweepRow, i);
    g_assert_cmpuint(row->fits, ==, row->peak_bytes <= row->budget_bytes);
    fits[row->budget_bytes == 40ULL << 30] += row->fits;
  }
  g_assert_cmpuint(fits[0], <, fits[1]);
}

/* The first failing point in sweep order is the one reported, serial or
 * parallel, named by its swept values. */
static void test_point_error(void) {
  g_autoptr(RokSweepSpec) spec = spec_for("ssdtrain-bert", "a100-40g-pcie4-4xp5800x", NULL);
  set_axis(spec, ROK_SWEEP_MICRO_BATCH, "1,2,5000000000,6000000000");
  for (guint threads = 1; threads <= 4; threads += 3) {
    g_autoptr(GError) error = NULL;
    g_autoptr(RokSweep) sweep = rok_sweep_run(spec, threads, NULL, NULL, &error);
    g_assert_null(sweep);
    g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
    g_assert_true(g_str_has_prefix(error->message, "at micro_batch=5000000000: "));
  }
}

static void count_progress(guint done, guint total, gpointer data) {
  guint *calls = data;
  g_assert_cmpuint(done, ==, *calls + 1);
  g_assert_cmpuint(total, ==, 6);
  (*calls)++;
}

static void test_progress(void) {
  g_autoptr(RokSweepSpec) spec = spec_for("ssdtrain-bert", "a100-40g-pcie4-4xp5800x", NULL);
  set_axis(spec, ROK_SWEEP_MICRO_BATCH, "1:6");
  g_assert_true(rok_sweep_spec_set_strategies(spec, "keep", NULL));
  for (guint threads = 1; threads <= 2; threads++) {
    guint calls = 0;
    g_autoptr(RokSweep) sweep = rok_sweep_run(spec, threads, count_progress, &calls, NULL);
    g_assert_nonnull(sweep);
    g_assert_cmpuint(calls, ==, 6);
  }
}

/* SSDTrain's BERT on SSDTrain's machine (A100 PCIe 40 GB, 4 Optane SSDs):
 * offloading to the SSDs lets clearly larger micro-batches fit than keeping
 * every activation (the paper: twice the micro-batch at equal activation
 * memory), at the same throughput (the writes and reads hide under
 * compute), and rok's best throughput beats keep's: the paper's headline. */
static guint64 largest_fitting(const RokSweep *sweep, RokStrategy strategy, double *tokens_per_s) {
  guint64 largest = 0;
  for (guint i = 0; i < sweep->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    if (row->strategy == strategy && row->fits && row->micro_batch > largest) {
      largest = row->micro_batch;
      *tokens_per_s = row->tokens_per_s;
    }
  }
  return largest;
}

static double best_fitting_rate(const RokSweep *sweep, RokStrategy strategy) {
  double best = 0;
  for (guint i = 0; i < sweep->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    if (row->strategy == strategy && row->fits)
      best = MAX(best, row->tokens_per_s);
  }
  return best;
}

/* At every point (rows of one point are consecutive, rok last). */
static void assert_rok_never_worse(const RokSweep *sweep) {
  double fastest = 0;
  gboolean any = FALSE;
  for (guint i = 0; i < sweep->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    if (row->strategy != ROK_STRATEGY_ROK) {
      if (row->fits)
        fastest = MAX(fastest, row->tokens_per_s), any = TRUE;
      continue;
    }
    g_assert_true(row->fits || !any);
    if (any)
      g_assert_cmpfloat(row->tokens_per_s, >=, fastest / (1 + ROK_PLAN_WEAR_TOLERANCE) * (1 - 1e-9));
    fastest = 0;
    any = FALSE;
  }
}

static void test_ssdtrain_bert(void) {
  g_autoptr(RokSweepSpec) spec = spec_for("ssdtrain-bert", "a100-40g-pcie4-4xp5800x", NULL);
  set_axis(spec, ROK_SWEEP_MICRO_BATCH, "2:64:2");
  g_autoptr(RokSweep) sweep = run(spec, 0);
  double keep_rate = 0, offload_rate = 0, tba_rate = 0, rok_rate = 0, keep_at_offload_limit = 0;
  guint64 keep = largest_fitting(sweep, ROK_STRATEGY_KEEP, &keep_rate);
  guint64 offload = largest_fitting(sweep, ROK_STRATEGY_OFFLOAD, &offload_rate);
  guint64 tba = largest_fitting(sweep, ROK_STRATEGY_TBA, &tba_rate);
  g_test_message("largest fitting micro-batch: keep %" G_GUINT64_FORMAT ", offload %" G_GUINT64_FORMAT
                 ", tba %" G_GUINT64_FORMAT, keep, offload, tba);
  g_assert_cmpuint(keep, >=, 8);
  g_assert_cmpuint(keep, <, 64);
  g_assert_cmpuint(2 * offload, >=, 3 * keep);
  g_assert_cmpuint(2 * tba, >=, 3 * keep);
  /* Offloading costs no throughput: at offload's largest micro-batch it runs
   * as fast as keep would there (if keep fitted). */
  for (guint i = 0; i < sweep->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    if (row->strategy == ROK_STRATEGY_KEEP && row->micro_batch == offload)
      keep_at_offload_limit = row->tokens_per_s;
  }
  g_assert_cmpfloat(offload_rate, >=, 0.99 * keep_at_offload_limit);
  g_assert_cmpfloat(offload_rate, >=, keep_rate);
  /* rok fits wherever a baseline does, never slower than the fastest that
   * fits, and its best beats keep's best. */
  g_assert_cmpuint(largest_fitting(sweep, ROK_STRATEGY_ROK, &rok_rate), >=, offload);
  assert_rok_never_worse(sweep);
  double rok_best = best_fitting_rate(sweep, ROK_STRATEGY_ROK), keep_best = best_fitting_rate(sweep, ROK_STRATEGY_KEEP);
  g_test_message("best throughput that fits: keep %.1f, rok %.1f tokens/s", keep_best, rok_best);
  g_assert_cmpfloat(rok_best, >, keep_best);
}

/* Past the first micro-batch where the planner fits nowhere a sweep does
 * not search (activations grow with the micro-batch): every point run on
 * its own, with the full search, agrees on what fits; the rows that fit
 * are the same; those that do not are least-memory plans, their peaks
 * rising with the micro-batch. */
static void test_rok_chain(void) {
  g_autoptr(RokSweepSpec) spec = spec_for("ssdtrain-bert", "a100-40g-pcie4-4xp5800x", NULL);
  set_axis(spec, ROK_SWEEP_MICRO_BATCH, "24:64:8");
  set_axis(spec, ROK_SWEEP_BUDGET, "24GiB");
  g_assert_true(rok_sweep_spec_set_strategies(spec, "rok", NULL));
  g_autoptr(RokSweep) sweep = run(spec, 2);
  g_assert_cmpuint(sweep->rows->len, ==, 6);
  guint fits = 0;
  guint64 last_peak = 0;
  for (guint i = 0; i < sweep->rows->len; i++) {
    const RokSweepRow *row = &g_array_index(sweep->rows, RokSweepRow, i);
    g_autoptr(GArray) alone = g_array_new(FALSE, FALSE, sizeof(RokSweepRow));
    g_autoptr(GError) error = NULL;
    g_assert_true(rok_sweep_run_point(spec, i, alone, &error));
    g_assert_no_error(error);
    const RokSweepRow *own = &g_array_index(alone, RokSweepRow, 0);
    g_assert_cmpint(own->fits, ==, row->fits);
    if (row->fits) {
      g_assert_cmpfloat(own->step_time_s, ==, row->step_time_s);
      g_assert_cmpuint(own->peak_bytes, ==, row->peak_bytes);
      g_assert_cmpuint(own->nvme_write_bytes, ==, row->nvme_write_bytes);
      fits++;
      continue;
    }
    g_assert_cmpuint(row->peak_bytes, >, last_peak);
    last_peak = row->peak_bytes;
  }
  g_assert_cmpuint(fits, >=, 1);
  g_assert_cmpuint(fits, <=, 4);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sweep/range/good", test_range_good);
  g_test_add_func("/sweep/range/bad", test_range_bad);
  g_test_add_func("/sweep/points-order", test_points_order);
  g_test_add_func("/sweep/no-ssds", test_no_ssds);
  g_test_add_func("/sweep/serial-equals-parallel", test_serial_equals_parallel);
  g_test_add_func("/sweep/point-error", test_point_error);
  g_test_add_func("/sweep/progress", test_progress);
  g_test_add_func("/sweep/ssdtrain-bert", test_ssdtrain_bert);
  g_test_add_func("/sweep/rok-chain", test_rok_chain);
  return g_test_run();
}
