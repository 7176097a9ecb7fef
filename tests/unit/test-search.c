/* rok search's layouts against a brute force over every (TP, PP, virtual
 * stages, micro-batch, ZeRO) for the bundled models and random GPU counts; the farm's
 * pruning against planning every point; the compute-only bound against
 * the planned step time. */
#include <string.h>

#include "rok/core.h"
#include "rok/model.h"
#include "rok/search.h"

static char *config_path(const char *kind, const char *name) {
  const char *root = g_getenv("ROK_SOURCE_DIR");
  g_autofree char *file = g_strconcat(name, ".json", NULL);
  return g_build_filename(root ? root : ROK_SOURCE_DIR, "configs", kind, file, NULL);
}

static RokSearchSpec *spec_for(const char *model, char **text_out, gsize *length_out) {
  g_autoptr(GError) error = NULL;
  g_autofree char *model_path = config_path("models", model), *hw_path = config_path("hw", "a100-80g-sxm-4x980pro");
  char *text = NULL;
  gsize length = 0;
  g_assert_true(g_file_get_contents(model_path, &text, &length, NULL));
  g_autoptr(RokHw) hw = rok_hw_load(hw_path, &error);
  g_assert_no_error(error);
  RokSearchSpec *spec = rok_search_spec_new(model_path, text, length, NULL, hw, &error);
  g_assert_no_error(error);
  *text_out = text;
  *length_out = length;
  return spec;
}

/* A layout the brute force accepts: the config loads with it. */
static gboolean loads(const char *text, gsize length, guint64 t, guint64 p, guint64 v, guint64 d, guint64 b, guint64 z,
                      guint64 global) {
  g_autofree char *ts = g_strdup_printf("tensor_parallel=%" G_GUINT64_FORMAT, t);
  g_autofree char *ps = g_strdup_printf("pipeline_parallel=%" G_GUINT64_FORMAT, p);
  g_autofree char *vs = g_strdup_printf("virtual_stages=%" G_GUINT64_FORMAT, v);
  g_autofree char *ds = g_strdup_printf("data_parallel=%" G_GUINT64_FORMAT, d);
  g_autofree char *bs = g_strdup_printf("micro_batch=%" G_GUINT64_FORMAT, b);
  g_autofree char *zs = g_strdup_printf("zero_stage=%" G_GUINT64_FORMAT, z);
  g_autofree char *gs = g_strdup_printf("global_batch=%" G_GUINT64_FORMAT, global);
  const char *sets[] = {ts, ps, vs, ds, bs, zs, gs, NULL};
  g_autoptr(RokModel) m = rok_model_parse("brute", text, length, sets, NULL);
  return m != NULL;
}

static void test_layouts_brute_force(void) {
  static const char *const models[] = {"gpt3-1.3b", "gpt3-13b", "gpt3-175b", "llama2-70b", "bert-large", "t5-3b"};
  GRand *rand = g_rand_new_with_seed(18);
  for (guint m = 0; m < G_N_ELEMENTS(models); m++)
    for (guint trial = 0; trial < 3; trial++) {
      g_autofree char *text = NULL;
      gsize length = 0;
      g_autoptr(RokSearchSpec) spec = spec_for(models[m], &text, &length);
      g_autoptr(RokModel) model = rok_model_parse("m", text, length, NULL, NULL);
      guint64 gpus = (guint64)g_rand_int_range(rand, 1, 65) * (trial == 0 ? 8 : 1);
      g_autofree char *range = g_strdup_printf("%" G_GUINT64_FORMAT, gpus);
      g_autoptr(GError) error = NULL;
      g_assert_true(rok_search_spec_set_range(spec, ROK_SEARCH_GPUS, range, &error));
      g_autoptr(GArray) layouts = rok_search_spec_layouts(spec, &error);
      guint expected = 0;
      guint64 layers = model->layers + model->decoder_layers;
      for (guint64 t = 1; t <= 8; t++)
        for (guint64 p = 1; p <= layers; p++)
          for (guint64 v = 1; v <= layers; v++)
            for (guint64 b = 1; b <= 64; b *= 2)
              for (guint64 z = 0; z <= 3; z++) {
                guint64 mp = t * p, d = gpus / mp;
                if (layers % (p * v) != 0 || (p == 1 && v > 1) || gpus % mp != 0 || model->global_batch % d != 0 ||
                    (model->global_batch / d) % b != 0 || !loads(text, length, t, p, v, d, b, z, model->global_batch))
                  continue;
                g_assert_nonnull(layouts);
                const RokLayout *l = &g_array_index(layouts, RokLayout, expected);
                g_assert_cmpuint(l->tensor, ==, t);
                g_assert_cmpuint(l->pipeline, ==, p);
                g_assert_cmpuint(l->virtual_stages, ==, v);
                g_assert_cmpuint(l->micro_batch, ==, b);
                g_assert_cmpuint(l->zero_stage, ==, z);
                g_assert_cmpuint(l->data * l->tensor * l->pipeline, ==, gpus);
                expected++;
              }
      if (expected == 0)
        g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
      else
        g_assert_cmpuint(layouts->len, ==, expected);
    }
  g_rand_free(rand);
}

static RokSearch *search(RokSearchSpec *spec, guint threads, gboolean prune) {
  rok_search_spec_set_top(spec, 2, prune);
  RokSearchRunner runner;
  rok_search_runner_init(&runner);
  runner.threads = threads;
  gboolean root = FALSE;
  g_autoptr(GError) error = NULL;
  RokSearch *s = rok_search_run(spec, &runner, &root, &error);
  g_assert_no_error(error);
  g_assert_true(root);
  return s;
}

/* Pruning keeps the best `top` exact, on any number of threads, and every
 * planned step is at least its bound. */
static void test_pruning(void) {
  g_autofree char *text = NULL;
  gsize length = 0;
  g_autoptr(RokSearchSpec) spec = spec_for("gpt3-1.3b", &text, &length);
  g_autoptr(GError) error = NULL;
  g_assert_true(rok_search_spec_set_range(spec, ROK_SEARCH_GPUS, "8", &error));
  g_assert_true(rok_search_spec_set_range(spec, ROK_SEARCH_MICRO_BATCH, "1,2,4", &error));
  g_assert_true(rok_search_spec_set_range(spec, ROK_SEARCH_ZERO, "0,2", &error));
  g_assert_true(rok_search_spec_set_range(spec, ROK_SEARCH_TENSOR, "1,2", &error));
  g_assert_true(rok_search_spec_set_offload(spec, "no", &error));
  g_autoptr(RokSearch) pruned = search(spec, 1, TRUE), threaded = search(spec, 3, TRUE);
  g_autoptr(RokSearch) all = search(spec, 2, FALSE);
  g_autofree char *a = rok_search_to_csv(pruned), *b = rok_search_to_csv(threaded);
  g_assert_cmpstr(a, ==, b);
  g_autoptr(GArray) best_pruned = rok_search_best(pruned, 2), best_all = rok_search_best(all, 2);
  g_assert_cmpuint(best_pruned->len, ==, best_all->len);
  for (guint i = 0; i < best_all->len; i++)
    g_assert_cmpuint(g_array_index(best_pruned, guint, i), ==, g_array_index(best_all, guint, i));
  for (guint i = 0; i < all->rows->len; i++) {
    const RokSearchRow *r = &g_array_index(all->rows, RokSearchRow, i);
    if (r->status == ROK_SEARCH_PLANNED)
      g_assert_cmpfloat(r->step_time_s, >=, r->bound_step_time_s * (1 - 1e-12));
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/search/layouts-brute-force", test_layouts_brute_force);
  g_test_add_func("/search/pruning", test_pruning);
  return g_test_run();
}
