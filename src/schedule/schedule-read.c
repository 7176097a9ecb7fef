/* Reading rok-schedule/1 and /2, checking everything an executor relies on. */
#include <string.h>

#include "rok/core.h"
#include "schedule-private.h"

static const char *const top_keys[] = {"format", "strategy", "model", "budget_bytes", "micro_batches", "options",
                                       "predicted", "plan", "hw", "trace_sha256", "trace", "actions", NULL};

typedef struct {
  const RokJsonDoc *doc;
  RokSchedule *s;
  const char *decision_names[ROK_DECISION_COUNT + 1];
  gboolean compact; /* rok-schedule/2: repeats allowed */
} Reader;

static void reader_init(Reader *r, const RokJsonDoc *doc, RokSchedule *s) {
  *r = (Reader){.doc = doc, .s = s};
  for (guint i = 0; i < ROK_DECISION_COUNT; i++)
    r->decision_names[i] = rok_decision_name(i);
}

/* An embedded document, read by its own module; its messages name it as
 * "FILE (embedded KEY)" with places inside its canonical text. */
static json_object *embedded(const Reader *r, const RokJsonObj *root, const char *key, char **name, char **text,
                             GError **error) {
  json_object *value = NULL;
  if (!json_object_object_get_ex(root->obj, key, &value) || !json_object_is_type(value, json_type_object)) {
    rok_json_error(error, r->doc, key, "must be an object");
    return NULL;
  }
  *name = g_strdup_printf("%s (embedded %s)", rok_json_doc_name(r->doc), key);
  *text = rok_json_to_string(value);
  return value;
}

static gboolean read_trace(Reader *r, const RokJsonObj *root, GError **error) {
  g_autofree char *name = NULL, *text = NULL, *hash = NULL;
  if (embedded(r, root, "trace", &name, &text, error) == NULL ||
      !rok_json_get_string(root, "trace_sha256", TRUE, &hash, error))
    return FALSE;
  r->s->owned_trace = rok_trace_parse(name, text, strlen(text), error);
  if (r->s->owned_trace == NULL)
    return FALSE;
  r->s->trace = r->s->owned_trace;
  r->s->trace_sha256 = rok_trace_sha256(r->s->trace, NULL);
  if (!g_str_equal(hash, r->s->trace_sha256)) {
    rok_json_error(error, r->doc, "trace_sha256", "does not match the embedded trace (its SHA-256 is %s)",
                   r->s->trace_sha256);
    return FALSE;
  }
  return TRUE;
}

static gboolean label_ok(const char *label) {
  gsize n = strlen(label);
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_isalnum(label[i]) && label[i] != '-' && label[i] != '_')
      return FALSE;
  return n >= 1 && n <= 64;
}

static gboolean read_hw(Reader *r, const RokJsonObj *root, GError **error) {
  g_autofree char *name = NULL, *text = NULL;
  if (embedded(r, root, "hw", &name, &text, error) == NULL)
    return FALSE;
  r->s->owned_hw = rok_hw_parse(name, text, strlen(text), error);
  r->s->hw = r->s->owned_hw;
  return r->s->hw != NULL;
}

/* The step options, whose log must cover every micro-batch. */
static gboolean read_options(const RokJsonObj *root, RokStepOptions *o, guint64 micro_batches, GError **error) {
  if (!rok_step_options_read(root, o, error))
    return FALSE;
  if (o->detail_micro_batches != micro_batches) {
    rok_json_error(error, root->doc, "options.detail_micro_batches", "must equal micro_batches (%" G_GUINT64_FORMAT ")",
                   micro_batches);
    return FALSE;
  }
  return TRUE;
}

static guint next_saved(const RokTrace *trace, guint from) {
  while (from < trace->tensors->len && !rok_tensor_is_saved(rok_trace_tensor(trace, from)))
    from++;
  return from;
}

static gboolean read_decision(Reader *r, const RokJsonObj *e, guint expected, GError **error) {
  static const char *const keys[] = {"id", "name", "decision", NULL};
  const RokTensor *t = rok_trace_tensor(r->s->trace, expected);
  guint64 id = 0;
  g_autofree char *name = NULL;
  int d = 0;
  if (!rok_json_only_keys(e, keys, error) || !rok_json_get_uint(e, "id", TRUE, 0, G_MAXUINT, &id, error) ||
      !rok_json_get_string(e, "name", TRUE, &name, error) ||
      !rok_json_get_enum(e, "decision", TRUE, r->decision_names, &d, error))
    return FALSE;
  if (id != expected || !g_str_equal(name, t->name)) {
    rok_json_error(error, r->doc, e->path, "expected saved tensor %u (%s) of the trace", expected, t->name);
    return FALSE;
  }
  r->s->plan->decisions[expected] = d;
  return TRUE;
}

static gboolean read_plan(Reader *r, const RokJsonObj *root, GError **error) {
  json_object *list = NULL;
  if (!rok_json_get_array(root, "plan", TRUE, &list, error))
    return FALSE;
  const RokTrace *trace = r->s->trace;
  guint expected = next_saved(trace, 0);
  gsize n = json_object_array_length(list);
  for (gsize i = 0; i < n; i++, expected = next_saved(trace, expected + 1)) {
    g_auto(RokJsonObj) e = {0};
    if (!rok_json_element(root, "plan", list, i, &e, error))
      return FALSE;
    if (expected >= trace->tensors->len) {
      rok_json_error(error, r->doc, e.path, "the trace has only %zu saved tensors", i);
      return FALSE;
    }
    if (!read_decision(r, &e, expected, error))
      return FALSE;
  }
  if (expected < trace->tensors->len) {
    rok_json_error(error, r->doc, "plan", "saved tensor %u (%s) is missing", expected,
                   rok_trace_tensor(trace, expected)->name);
    return FALSE;
  }
  return TRUE;
}

/* The simulate fields: kept as they are, the main ones checked. */
static gboolean read_predicted(Reader *r, const RokJsonObj *root, GError **error) {
  g_auto(RokJsonObj) obj = {0};
  double step = 0;
  guint64 peak = 0;
  if (!rok_json_child(root, "predicted", TRUE, &obj, error) ||
      !rok_json_get_double(&obj, "step_time_s", TRUE, 0, G_MAXDOUBLE, &step, error) ||
      !rok_json_get_uint(&obj, "peak_bytes", TRUE, 0, G_MAXUINT64, &peak, error))
    return FALSE;
  r->s->predicted = json_object_get(obj.obj);
  return TRUE;
}

static gboolean read_head(Reader *r, const RokJsonObj *root, GError **error) {
  RokSchedule *s = r->s;
  g_autofree char *model = NULL;
  guint64 micro_batches = 0;
  /* rok-schedule/1 is the full form of /2: read with the same code. */
  json_object *format = NULL;
  r->compact = !json_object_object_get_ex(root->obj, "format", &format) ||
               !json_object_is_type(format, json_type_string) ||
               !g_str_equal(json_object_get_string(format), "rok-schedule/1");
  if (!rok_json_check_format(root, r->compact ? "rok-schedule/2" : "rok-schedule/1", error) ||
      !rok_json_only_keys(root, top_keys, error) ||
      !rok_json_get_string(root, "strategy", TRUE, &s->strategy, error) ||
      !rok_json_get_string(root, "model", TRUE, &model, error) ||
      !rok_json_get_uint(root, "budget_bytes", TRUE, 1, G_MAXUINT64, &s->budget_bytes, error) ||
      !rok_json_get_uint(root, "micro_batches", TRUE, 1, G_MAXUINT, &micro_batches, error))
    return FALSE;
  /* A label of who made the program ("rok", "keep", ...): the executor
   * runs any program, so any short plain name will do. */
  if (!label_ok(s->strategy)) {
    rok_json_error(error, r->doc, "strategy", "must be 1 to 64 letters, digits, '-' or '_'");
    return FALSE;
  }
  if (!read_trace(r, root, error) || !read_hw(r, root, error))
    return FALSE;
  if (!g_str_equal(model, s->trace->model_name ? s->trace->model_name : "")) {
    rok_json_error(error, r->doc, "model", "the embedded trace is of %s", s->trace->model_name);
    return FALSE;
  }
  /* A schedule runs every micro-batch of the trace's step, no more: the
   * executor's memory and time grow with this number. */
  if (micro_batches != MAX(s->trace->micro_batches_per_step, 1)) {
    rok_json_error(error, r->doc, "micro_batches", "must equal the trace's micro_batches_per_step (%" G_GUINT64_FORMAT
                   ")", MAX(s->trace->micro_batches_per_step, 1));
    return FALSE;
  }
  s->plan = rok_step_plan_new(s->trace);
  return read_options(root, &s->plan->options, micro_batches, error) && read_plan(r, root, error) &&
         read_predicted(r, root, error);
}

RokSchedule *rok_schedule_parse(const char *name, const char *text, gsize length, GError **error) {
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse(name, text, length, error);
  g_auto(RokJsonObj) root = {0};
  if (doc == NULL || !rok_json_root(doc, &root, error))
    return NULL;
  g_autoptr(RokSchedule) s = g_new0(RokSchedule, 1);
  Reader r;
  reader_init(&r, doc, s);
  s->actions = g_array_new(FALSE, FALSE, sizeof(RokAction));
  s->deps = g_array_new(FALSE, FALSE, sizeof(guint));
  if (!read_head(&r, &root, error) || !schedule_read_actions(doc, &root, s, r.compact, error))
    return NULL;
  s->source_name = g_strdup(name);
  s->source = g_bytes_new(text, length);
  return g_steal_pointer(&s);
}

/* The element of "actions" that gave action `id`; *copy: a repeat's copy. */
static guint element_of(const RokSchedule *s, guint id, gboolean *copy) {
  *copy = FALSE;
  if (s->elements == NULL)
    return id;
  guint lo = 0, hi = s->elements->len; /* the last element starting at or before id */
  while (hi - lo > 1) {
    guint mid = lo + (hi - lo) / 2;
    if (g_array_index(s->elements, ScheduleElement, mid).first <= id)
      lo = mid;
    else
      hi = mid;
  }
  *copy = g_array_index(s->elements, ScheduleElement, lo).repeat;
  return lo;
}

void rok_schedule_locate_action(const RokSchedule *s, guint id, GError *error) {
  if (s->source == NULL || error == NULL)
    return;
  gsize length = 0;
  const char *text = g_bytes_get_data(s->source, &length);
  /* Parsed again: only on this error path, never while running. */
  g_autoptr(RokJsonDoc) doc = rok_json_doc_parse(s->source_name, text, length, NULL);
  if (doc == NULL)
    return;
  gboolean copy = FALSE;
  guint element = element_of(s, id, &copy);
  g_autofree char *path = g_strdup_printf("actions[%u]", element);
  g_autoptr(GError) located = NULL;
  if (copy) /* made by a repeat: the repeat's line */
    rok_json_error(&located, doc, path, "action %u (a repeat's copy): %s", id, error->message);
  else
    rok_json_error(&located, doc, path, "%s", error->message);
  if (located != NULL) {
    g_free(error->message);
    error->message = g_steal_pointer(&located->message);
  }
}

RokSchedule *rok_schedule_load(const char *path, GError **error) {
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!rok_json_read_file(path, &text, &length, error))
    return NULL;
  return rok_schedule_parse(path, text, length, error);
}
