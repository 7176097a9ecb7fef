/* The bundled configs for unit tests: by name, from $ROK_SOURCE_DIR (set by
 * ctest) or the source tree the test was built from. */
#pragma once

#include <glib.h>

#include "rok/hw.h"
#include "rok/model.h"
#include "rok/trace.h"

static inline char *config_path(const char *kind, const char *name) {
  const char *root = g_getenv("ROK_SOURCE_DIR");
  g_autofree char *file = g_strconcat(name, ".json", NULL);
  return g_build_filename(root ? root : ROK_SOURCE_DIR, "configs", kind, file, NULL);
}

/* The trace of bundled model NAME with `overrides` (may be NULL). */
static inline RokTrace *config_trace(const char *name, const char *const *overrides) {
  g_autoptr(GError) error = NULL;
  g_autofree char *path = config_path("models", name);
  g_autoptr(RokModel) model = rok_model_load(path, overrides, &error);
  g_assert_no_error(error);
  RokTrace *trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  return trace;
}

static inline RokHw *config_hw(const char *name) {
  g_autoptr(GError) error = NULL;
  g_autofree char *path = config_path("hw", name);
  RokHw *hw = rok_hw_load(path, &error);
  g_assert_no_error(error);
  return hw;
}
