/* A config kept as given, parsed again with more overrides at each point
 * of a sweep or a search (rok/model.h). */
#include "rok/model.h"

RokModelSource *rok_model_source_new(const char *name, const char *text, gsize length, const char *const *overrides,
                                     RokModel **model, GError **error) {
  RokModel *parsed = rok_model_parse(name, text, length, overrides, error);
  if (parsed == NULL)
    return NULL;
  if (model != NULL)
    *model = parsed;
  else
    rok_model_free(parsed);
  RokModelSource *source = g_new0(RokModelSource, 1);
  source->name = g_strdup(name);
  source->text = g_strndup(text, length);
  source->length = length;
  source->sets = overrides != NULL ? g_strdupv((char **)overrides) : g_new0(char *, 1);
  return source;
}

void rok_model_source_free(RokModelSource *source) {
  if (source == NULL)
    return;
  g_free(source->name);
  g_free(source->text);
  g_strfreev(source->sets);
  g_free(source);
}

RokModel *rok_model_source_load(const RokModelSource *source, const char *const *more, GError **error) {
  g_autoptr(GStrvBuilder) sets = g_strv_builder_new();
  g_strv_builder_addv(sets, (const char **)source->sets);
  if (more != NULL)
    g_strv_builder_addv(sets, (const char **)more);
  g_auto(GStrv) all = g_strv_builder_end(sets);
  return rok_model_parse(source->name, source->text, source->length, (const char *const *)all, error);
}
