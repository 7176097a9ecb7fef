/* Reading a schedule's actions: each one checked against the trace, its
 * stream and kind, and the actions before it; repeats of the compact form
 * (rok-schedule/2) expanded into the copies they stand for. */
#include <math.h>

#include "rok/core.h"
#include "schedule-private.h"

typedef struct {
  const RokJsonDoc *doc;
  RokSchedule *s;
  guint64 micro_batches;
  const char *streams[ROK_STREAM_ALL_COUNT + 1];
  const char *kinds[ROK_ACTION_KIND_COUNT + 1];
  const char *collectives[ROK_COLLECTIVE_SEND + 2];
  const char *groups[ROK_COMM_GROUP_COUNT + 1];
  gboolean compact;          /* rok-schedule/2: repeats and comm actions allowed */
  guint64 max_actions;       /* after expanding repeats */
  GArray *elements;          /* ScheduleElement */
} Actions;

static gboolean is_compute(RokActionKind kind) {
  return kind == ROK_ACTION_FORWARD || kind == ROK_ACTION_BACKWARD || kind == ROK_ACTION_RECOMPUTE ||
         kind == ROK_ACTION_OPTIMIZER;
}

/* The streams a kind of action may run on. */
static gboolean stream_fits(RokActionKind kind, RokStream stream) {
  switch (kind) {
  case ROK_ACTION_OFFLOAD:
    return stream == ROK_STREAM_D2H || stream == ROK_STREAM_NVME_WRITE;
  case ROK_ACTION_PREFETCH:
    return stream == ROK_STREAM_H2D || stream == ROK_STREAM_NVME_READ;
  case ROK_ACTION_FREE:
    return stream < ROK_STREAM_COUNT;
  case ROK_ACTION_COMM:
    return stream == ROK_STREAM_COMM || stream == ROK_STREAM_P2P;
  default:
    return stream == ROK_STREAM_COMPUTE;
  }
}

/* A time in seconds, as whole nanoseconds. */
static gboolean get_ns(const RokJsonObj *e, const char *key, gint64 *ns, GError **error) {
  double seconds = 0;
  /* Predicted times: up to 1e9 s (31 years) into the step, so that
   * nanoseconds and their differences stay far inside 64 bits. */
  if (!rok_json_get_double(e, key, TRUE, 0, ROK_SCHEDULE_MAX_SECONDS, &seconds, error))
    return FALSE;
  *ns = llround(seconds * 1e9);
  return TRUE;
}

/* A comm action: its collective, group and message bytes; no op, no tensor. */
static gboolean read_comm(const Actions *a, const RokJsonObj *e, RokAction *act, GError **error) {
  int collective = 0, group = 0;
  if (json_object_object_get_ex(e->obj, "op", NULL) || json_object_object_get_ex(e->obj, "tensor", NULL) ||
      json_object_object_get_ex(e->obj, "gpudirect", NULL)) {
    rok_json_error(error, a->doc, e->path, "a comm action names no op, no tensor and no gpudirect");
    return FALSE;
  }
  if (!rok_json_get_enum(e, "collective", TRUE, a->collectives, &collective, error) ||
      !rok_json_get_enum(e, "group", TRUE, a->groups, &group, error) ||
      !rok_json_get_uint(e, "bytes", TRUE, 0, G_MAXUINT64, &act->bytes, error))
    return FALSE;
  act->op = act->tensor = ROK_NO_ID;
  act->collective = collective;
  act->group = group;
  return TRUE;
}

/* op for compute (none for the optimizer), tensor and its bytes for the rest. */
static gboolean read_target(const Actions *a, const RokJsonObj *e, RokAction *act, GError **error) {
  const RokTrace *trace = a->s->trace;
  if (act->kind == ROK_ACTION_COMM)
    return read_comm(a, e, act, error);
  if (json_object_object_get_ex(e->obj, "collective", NULL) || json_object_object_get_ex(e->obj, "group", NULL)) {
    rok_json_error(error, a->doc, e->path, "only comm actions name a collective and a group");
    return FALSE;
  }
  gboolean compute = is_compute(act->kind), needs_op = compute && act->kind != ROK_ACTION_OPTIMIZER;
  gboolean has_op = json_object_object_get_ex(e->obj, "op", NULL);
  gboolean has_tensor = json_object_object_get_ex(e->obj, "tensor", NULL);
  guint64 op = ROK_NO_ID, tensor = ROK_NO_ID;
  if (has_op != needs_op || has_tensor == compute) {
    rok_json_error(error, a->doc, e->path, "a %s action names %s", rok_action_kind_name(act->kind),
                   needs_op ? "an op and no tensor" : compute ? "neither op nor tensor" : "a tensor and no op");
    return FALSE;
  }
  if ((needs_op && !rok_json_get_uint(e, "op", TRUE, 0, trace->ops->len - 1, &op, error)) ||
      (!compute && !rok_json_get_uint(e, "tensor", TRUE, 0, trace->tensors->len - 1, &tensor, error)) ||
      (!compute && !rok_json_get_uint(e, "bytes", TRUE, 0, G_MAXUINT64, &act->bytes, error)))
    return FALSE;
  act->op = (guint)op;
  act->tensor = (guint)tensor;
  if (!compute && act->bytes != rok_trace_tensor(trace, act->tensor)->bytes) {
    rok_json_error(error, a->doc, e->path, "bytes: tensor %s has %" G_GUINT64_FORMAT " bytes, not %" G_GUINT64_FORMAT,
                   rok_trace_tensor(trace, act->tensor)->name, rok_trace_tensor(trace, act->tensor)->bytes,
                   act->bytes);
    return FALSE;
  }
  gboolean copy = act->kind == ROK_ACTION_OFFLOAD || act->kind == ROK_ACTION_PREFETCH;
  if (!copy && json_object_object_get_ex(e->obj, "gpudirect", NULL)) {
    rok_json_error(error, a->doc, e->path, "only copies say whether they are gpudirect");
    return FALSE;
  }
  return rok_json_get_bool(e, "gpudirect", copy, &act->gpudirect, error);
}

static gboolean read_deps(const Actions *a, const RokJsonObj *e, guint id, RokAction *act, GError **error) {
  act->deps_first = a->s->deps->len;
  json_object *deps = NULL;
  if (!rok_json_get_array(e, "deps", TRUE, &deps, error))
    return FALSE;
  if (id == 0 && json_object_array_length(deps) > 0) {
    rok_json_error(error, a->doc, e->path, "deps: the first action waits for nothing");
    return FALSE;
  }
  /* Only earlier actions: the program cannot have a cycle. */
  if (id > 0 && !rok_json_get_index_array(e, "deps", TRUE, id - 1, a->s->deps, error))
    return FALSE;
  act->deps_count = a->s->deps->len - act->deps_first;
  return TRUE;
}

/* An element's id: the index of the (first) action it gives. */
static gboolean check_id(const Actions *a, const RokJsonObj *e, guint index, GError **error) {
  guint64 id = 0;
  if (!rok_json_get_uint(e, "id", TRUE, 0, G_MAXUINT, &id, error))
    return FALSE;
  if (id != index) {
    g_autofree char *path = g_strdup_printf("%s.id", e->path);
    rok_json_error(error, a->doc, path, "actions are numbered in order: expected %u, not %" G_GUINT64_FORMAT, index,
                   id);
    return FALSE;
  }
  return TRUE;
}

static gboolean read_action(const Actions *a, const RokJsonObj *e, guint index, GError **error) {
  static const char *const keys[] = {"id", "stream", "kind", "micro_batch", "op", "tensor", "bytes", "collective",
                                     "group", "gpudirect", "deps", "start_s", "end_s", NULL};
  RokAction act = {0};
  guint64 mb = 0;
  int stream = 0, kind = 0;
  if (!rok_json_only_keys(e, keys, error) || !check_id(a, e, index, error))
    return FALSE;
  if (
      !rok_json_get_enum(e, "stream", TRUE, a->streams, &stream, error) ||
      !rok_json_get_enum(e, "kind", TRUE, a->kinds, &kind, error) ||
      !rok_json_get_uint(e, "micro_batch", TRUE, 0, a->micro_batches - 1, &mb, error))
    return FALSE;
  act.stream = stream;
  act.kind = kind;
  act.micro_batch = (guint)mb;
  if (act.kind == ROK_ACTION_COMM && !a->compact) {
    rok_json_error(error, a->doc, e->path, "comm actions need format rok-schedule/2");
    return FALSE;
  }
  if (!stream_fits(act.kind, act.stream)) {
    rok_json_error(error, a->doc, e->path, "a %s action cannot run on the %s stream", rok_action_kind_name(act.kind),
                   rok_stream_name(act.stream));
    return FALSE;
  }
  if (!read_target(a, e, &act, error) || !read_deps(a, e, index, &act, error) ||
      !get_ns(e, "start_s", &act.start_ns, error) || !get_ns(e, "end_s", &act.end_ns, error))
    return FALSE;
  if (act.end_ns < act.start_ns) {
    rok_json_error(error, a->doc, e->path, "end_s is before start_s");
    return FALSE;
  }
  g_array_append_val(a->s->actions, act);
  return TRUE;
}

/* Copy c of the repeated block's action `from`: the next action. */
static gboolean copy_action(const Actions *a, const RokJsonObj *e, guint from, const ScheduleRepeat *r,
                            GError **error) {
  RokAction act = g_array_index(a->s->actions, RokAction, from);
  guint id = a->s->actions->len;
  act.micro_batch += r->mb_step;
  act.start_ns += r->shift_ns;
  act.end_ns += r->shift_ns;
  if (act.micro_batch >= a->micro_batches || act.end_ns > (gint64)(ROK_SCHEDULE_MAX_SECONDS * 1e9)) {
    rok_json_error(error, a->doc, e->path, "action %u, the copy of action %u, would %s", id, from,
                   act.micro_batch >= a->micro_batches ? "run a micro-batch past micro_batches" : "end after 1e9 s");
    return FALSE;
  }
  guint first = act.deps_first;
  act.deps_first = a->s->deps->len;
  for (guint d = 0; d < act.deps_count; d++) {
    guint dep = g_array_index(a->s->deps, guint, first + d) + r->count;
    g_array_append_val(a->s->deps, dep);
  }
  g_array_append_val(a->s->actions, act);
  return TRUE;
}

/* {"id", "repeat_from", "times", "micro_batch_step", "shift_s"}: the actions
 * repeat_from .. id-1 again `times` times. */
static gboolean read_repeat(const Actions *a, const RokJsonObj *e, guint index, GError **error) {
  static const char *const keys[] = {"id", "repeat_from", "times", "micro_batch_step", "shift_s", NULL};
  guint64 from = 0, times = 0, step = 0;
  ScheduleRepeat r = {0};
  if (!a->compact || index == 0) {
    rok_json_error(error, a->doc, e->path, index ? "repeats need format rok-schedule/2" : "nothing to repeat yet");
    return FALSE;
  }
  if (!rok_json_only_keys(e, keys, error) || !check_id(a, e, index, error) ||
      !rok_json_get_uint(e, "repeat_from", TRUE, 0, index - 1, &from, error) ||
      !rok_json_get_uint(e, "times", TRUE, 1, G_MAXUINT, &times, error) ||
      !rok_json_get_uint(e, "micro_batch_step", TRUE, 0, a->micro_batches - 1, &step, error) ||
      !get_ns(e, "shift_s", &r.shift_ns, error))
    return FALSE;
  r.count = index - (guint)from;
  /* A repeat can claim far more than the file holds: no more actions than
   * any step of this trace could have. */
  if (index >= a->max_actions || (guint64)r.count * times > a->max_actions - index) {
    rok_json_error(error, a->doc, e->path, "%" G_GUINT64_FORMAT " copies of %u actions exceed %" G_GUINT64_FORMAT
                   " actions, the most a step of this trace has", times, r.count, a->max_actions);
    return FALSE;
  }
  r.times = (guint)times;
  r.mb_step = (guint)step;
  for (guint64 k = 0; k < (guint64)r.count * r.times; k++)
    if (!copy_action(a, e, (guint)(index - r.count + k), &r, error))
      return FALSE;
  return TRUE;
}

static void actions_init(Actions *a, const RokJsonDoc *doc, RokSchedule *s, gboolean compact) {
  *a = (Actions){.doc = doc, .s = s, .micro_batches = s->plan->options.detail_micro_batches, .compact = compact};
  for (guint i = 0; i < ROK_STREAM_ALL_COUNT; i++)
    a->streams[i] = rok_stream_name(i);
  for (guint i = 0; i < ROK_ACTION_KIND_COUNT; i++)
    a->kinds[i] = rok_action_kind_name(i);
  for (guint i = 0; i <= ROK_COLLECTIVE_SEND; i++)
    a->collectives[i] = rok_collective_name(i);
  for (guint i = 0; i < ROK_COMM_GROUP_COUNT; i++)
    a->groups[i] = rok_comm_group_name(i);
  /* Per micro-batch and op: its forward, backward, a recompute and their
   * collectives (up to seven), sends; per tensor: two legs each way and
   * its frees. 16 per op and tensor is twice what a step has. */
  const RokTrace *t = s->trace;
  a->max_actions = MIN(a->micro_batches * 16 * ((guint64)t->ops->len + t->tensors->len) + 64, G_MAXUINT - 1);
}

gboolean schedule_read_actions(const RokJsonDoc *doc, const RokJsonObj *root, RokSchedule *s, gboolean compact,
                               GError **error) {
  Actions a;
  actions_init(&a, doc, s, compact);
  json_object *list = NULL;
  if (!rok_json_get_array(root, "actions", TRUE, &list, error))
    return FALSE;
  gsize n = json_object_array_length(list);
  g_array_set_size(s->actions, 0);
  g_autoptr(GArray) elements = g_array_sized_new(FALSE, FALSE, sizeof(ScheduleElement), n);
  gboolean any_repeat = FALSE;
  for (gsize i = 0; i < n; i++) {
    g_auto(RokJsonObj) e = {0};
    if (!rok_json_element(root, "actions", list, i, &e, error))
      return FALSE;
    ScheduleElement el = {.first = s->actions->len,
                          .repeat = json_object_object_get_ex(e.obj, "repeat_from", NULL)};
    if (el.first == G_MAXUINT) {
      rok_json_error(error, doc, e.path, "too many actions");
      return FALSE;
    }
    if (!(el.repeat ? read_repeat(&a, &e, el.first, error) : read_action(&a, &e, el.first, error)))
      return FALSE;
    any_repeat |= el.repeat;
    g_array_append_val(elements, el);
  }
  if (any_repeat)
    s->elements = g_steal_pointer(&elements);
  return TRUE;
}
