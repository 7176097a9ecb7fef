/* Writing rok-schedule/2: the head as canonical pretty JSON, then one
 * action per line (a 175B step has a few hundred thousand of them), in
 * the compact form the repeats of earlier blocks as one line each. */
#include <string.h>

#include "rok/core.h"
#include "schedule-private.h"

/* Whole nanoseconds as seconds with nine decimals, exactly. */
static void append_seconds(GString *out, gint64 ns) {
  g_string_append_printf(out, "%" G_GINT64_FORMAT ".%09" G_GINT64_FORMAT, ns / 1000000000, ns % 1000000000);
}

/* `"key": value,` with the value's later lines indented one level. */
static void append_member(GString *out, const char *key, const char *text, gboolean last) {
  g_string_append_printf(out, "  \"%s\": ", key);
  for (const char *p = text; *p != '\0'; p++) {
    if (*p == '\n' && p[1] == '\0')
      break;
    g_string_append_c(out, *p);
    if (*p == '\n')
      g_string_append(out, "  ");
  }
  g_string_append(out, last ? "\n" : ",\n");
}

static void append_json(GString *out, const char *key, json_object *value) {
  g_autofree char *text = rok_json_to_string(value);
  append_member(out, key, text, FALSE);
  json_object_put(value);
}

static json_object *plan_json(const RokSchedule *s) {
  json_object *list = json_object_new_array();
  for (guint t = 0; t < s->trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(s->trace, t);
    if (!rok_tensor_is_saved(tensor))
      continue;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_uint64(t));
    json_object_object_add(o, "name", json_object_new_string(tensor->name));
    json_object_object_add(o, "decision", json_object_new_string(rok_decision_name(s->plan->decisions[t])));
    json_object_array_add(list, o);
  }
  return list;
}

static void append_head(GString *out, const RokSchedule *s) {
  g_string_append(out, "{\n");
  append_json(out, "format", json_object_new_string("rok-schedule/2"));
  append_json(out, "strategy", json_object_new_string(s->strategy));
  append_json(out, "model", json_object_new_string(s->trace->model_name ? s->trace->model_name : ""));
  append_json(out, "budget_bytes", json_object_new_uint64(s->budget_bytes));
  append_json(out, "micro_batches", json_object_new_uint64(s->plan->options.detail_micro_batches));
  append_json(out, "options", rok_step_options_to_json(&s->plan->options));
  append_json(out, "predicted", json_object_get(s->predicted));
  append_json(out, "plan", plan_json(s));
  append_json(out, "hw", rok_hw_to_json(s->hw));
  g_autofree char *trace_text = NULL;
  g_autofree char *hash = rok_trace_sha256(s->trace, &trace_text);
  append_json(out, "trace_sha256", json_object_new_string(hash));
  append_member(out, "trace", trace_text, FALSE);
}

static void append_action(GString *out, const RokSchedule *s, guint id) {
  const RokAction *a = rok_schedule_action(s, id);
  g_string_append_printf(out, "    {\"id\": %u, \"stream\": \"%s\", \"kind\": \"%s\", \"micro_batch\": %u", id,
                         rok_stream_name(a->stream), rok_action_kind_name(a->kind), a->micro_batch);
  if (a->op != ROK_NO_ID)
    g_string_append_printf(out, ", \"op\": %u", a->op);
  if (a->tensor != ROK_NO_ID)
    g_string_append_printf(out, ", \"tensor\": %u, \"bytes\": %" G_GUINT64_FORMAT, a->tensor, a->bytes);
  if (a->kind == ROK_ACTION_COMM)
    g_string_append_printf(out, ", \"collective\": \"%s\", \"group\": \"%s\", \"bytes\": %" G_GUINT64_FORMAT,
                           rok_collective_name(a->collective), rok_comm_group_name(a->group), a->bytes);
  if (a->kind == ROK_ACTION_OFFLOAD || a->kind == ROK_ACTION_PREFETCH)
    g_string_append_printf(out, ", \"gpudirect\": %s", a->gpudirect ? "true" : "false");
  g_string_append(out, ", \"deps\": [");
  for (guint d = 0; d < a->deps_count; d++)
    g_string_append_printf(out, "%s%u", d ? ", " : "", g_array_index(s->deps, guint, a->deps_first + d));
  g_string_append(out, "], \"start_s\": ");
  append_seconds(out, a->start_ns);
  g_string_append(out, ", \"end_s\": ");
  append_seconds(out, a->end_ns);
  g_string_append(out, "}");
}

static void append_repeat(GString *out, const ScheduleRepeat *r) {
  g_string_append_printf(out, "    {\"id\": %u, \"repeat_from\": %u, \"times\": %u, \"micro_batch_step\": %u, \"shift_s\": ",
                         r->first + r->count, r->first, r->times, r->mb_step);
  append_seconds(out, r->shift_ns);
  g_string_append(out, "}");
}

/* The actions, the repeats in `runs` (may be NULL) written as such. */
static char *to_string(const RokSchedule *s, const GArray *runs) {
  GString *out = g_string_sized_new(256 + (gsize)s->actions->len * (runs ? 16 : 160));
  append_head(out, s);
  g_string_append(out, "  \"actions\": [");
  guint next_run = 0;
  for (guint i = 0; i < s->actions->len;) {
    g_string_append(out, i ? ",\n" : "\n");
    const ScheduleRepeat *r = runs && next_run < runs->len ? &g_array_index(runs, ScheduleRepeat, next_run) : NULL;
    if (r != NULL && r->first + r->count == i) {
      append_repeat(out, r);
      i += r->count * r->times;
      next_run++;
    } else {
      append_action(out, s, i++);
    }
  }
  g_string_append(out, s->actions->len ? "\n  ]\n}\n" : "]\n}\n");
  return g_string_free(out, FALSE);
}

char *rok_schedule_to_string(const RokSchedule *s) {
  g_autoptr(GArray) runs = schedule_compact(s);
  return to_string(s, runs);
}

char *rok_schedule_to_string_full(const RokSchedule *s) {
  return to_string(s, NULL);
}

gboolean rok_schedule_save(const RokSchedule *s, const char *path, GError **error) {
  g_autofree char *text = rok_schedule_to_string(s);
  return rok_file_write(path, text, strlen(text), error);
}
