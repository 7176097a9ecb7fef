/* Tests: the bundled configs by name (configs/hw, configs/models under
 * ROK_SOURCE_DIR), loaded or the test fails. */
#pragma once

#include "rok/core.h"
#include "rok/hw.h"
#include "rok/model.h"

static inline char *test_bundled_path(const char *kind, const char *name) {
  g_autofree char *file = g_strconcat(name, ".json", NULL);
  return g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", kind, file, NULL);
}

static inline RokHw *test_bundled_hw(const char *name) {
  g_autofree char *path = test_bundled_path("hw", name);
  GError *error = NULL;
  RokHw *hw = rok_hw_load(path, &error);
  g_assert_no_error(error);
  return hw;
}

static inline RokModel *test_bundled_model(const char *name, const char *const *sets) {
  g_autofree char *path = test_bundled_path("models", name);
  GError *error = NULL;
  RokModel *model = rok_model_load(path, sets, &error);
  g_assert_no_error(error);
  return model;
}

/* The same with the settings of `base` then those of `extra` (both
 * NULL-terminated; later ones win). */
static inline RokModel *test_bundled_model2(const char *name, const char *const *base, const char *const *extra) {
  g_autoptr(GPtrArray) sets = g_ptr_array_new();
  for (guint i = 0; base[i] != NULL; i++)
    g_ptr_array_add(sets, (gpointer)base[i]);
  for (guint i = 0; extra[i] != NULL; i++)
    g_ptr_array_add(sets, (gpointer)extra[i]);
  g_ptr_array_add(sets, NULL);
  return test_bundled_model(name, (const char *const *)sets->pdata);
}
