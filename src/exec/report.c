/* The executor's report: rok-report/1. */
#include <math.h>
#include <string.h>

#include "runner-private.h"
#include "rok/core.h"

gboolean rok_exec_action_ends_step(const RokAction *a) {
  return a->stream == ROK_STREAM_COMPUTE || a->stream == ROK_STREAM_COMM;
}

RokExecReport *exec_report_new(void) {
  RokExecReport *r = g_new0(RokExecReport, 1);
  r->dirs = g_ptr_array_new_with_free_func(g_free);
  r->notes = g_ptr_array_new_with_free_func(g_free);
  r->step_times_s = g_array_new(FALSE, FALSE, sizeof(double));
  r->others_cpu_s = g_array_new(FALSE, FALSE, sizeof(double));
  r->step_figures = g_array_new(FALSE, FALSE, sizeof(RokExecFigures));
  r->timeline = g_array_new(FALSE, FALSE, sizeof(RokExecSpan));
  r->loss = NAN;
  return r;
}

void rok_exec_report_free(RokExecReport *r) {
  if (r == NULL)
    return;
  g_free(r->strategy);
  g_free(r->model);
  g_free(r->device);
  g_free(r->device_type);
  g_free(r->platform);
  g_free(r->backend);
  g_ptr_array_unref(r->dirs);
  g_ptr_array_unref(r->notes);
  g_array_unref(r->step_times_s);
  g_array_unref(r->others_cpu_s);
  g_array_unref(r->step_figures);
  for (guint i = 0; i < r->timeline->len; i++)
    g_free(g_array_index(r->timeline, RokExecSpan, i).name);
  g_array_unref(r->timeline);
  g_free(r);
}

static void add(json_object *obj, const char *key, json_object *value) {
  json_object_object_add(obj, key, value);
}

static json_object *str_or_null(const char *s) {
  return s != NULL ? json_object_new_string(s) : NULL;
}

static json_object *per_stream(const double *values) {
  json_object *obj = json_object_new_object();
  for (guint s = 0; s < ROK_STREAM_COUNT; s++)
    add(obj, rok_stream_name(s), rok_json_new_double(values[s]));
  return obj;
}

static json_object *per_cause(const double *values) {
  json_object *obj = json_object_new_object();
  for (guint c = 0; c < ROK_STALL_COUNT; c++)
    add(obj, rok_stall_cause_name(c), rok_json_new_double(values[c]));
  return obj;
}

/* The scalar figures, by name, in the order they are written. */
typedef struct {
  const char *name;
  double value;
  gboolean bytes;
} Scalar;

static guint scalars(const RokExecFigures *f, Scalar *out) {
  Scalar all[] = {
      {"step_time_s", f->step_time_s, FALSE},
      {"peak_device_bytes", (double)f->peak_device_bytes, TRUE},
      {"activation_peak_bytes", (double)f->activation_peak_bytes, TRUE},
      {"d2h_bytes", (double)f->d2h_bytes, TRUE},
      {"h2d_bytes", (double)f->h2d_bytes, TRUE},
      {"nvme_write_bytes", (double)f->nvme_write_bytes, TRUE},
      {"nvme_read_bytes", (double)f->nvme_read_bytes, TRUE},
      {"d2h_bandwidth", f->d2h_bandwidth, FALSE},
      {"h2d_bandwidth", f->h2d_bandwidth, FALSE},
      {"nvme_write_bandwidth", f->nvme_write_bandwidth, FALSE},
      {"nvme_read_bandwidth", f->nvme_read_bandwidth, FALSE},
      {"compute_s", f->compute_s, FALSE},
      {"recompute_s", f->recompute_s, FALSE},
      {"stall_s", f->stall_s, FALSE},
  };
  memcpy(out, all, sizeof all);
  return G_N_ELEMENTS(all);
}

#define N_SCALARS 14

static void add_figures(json_object *obj, const RokExecFigures *f) {
  Scalar s[N_SCALARS];
  guint n = scalars(f, s);
  for (guint i = 0; i < n; i++)
    add(obj, s[i].name, s[i].bytes ? json_object_new_uint64((guint64)s[i].value) : rok_json_new_double(s[i].value));
  add(obj, "busy_s", per_stream(f->busy_s));
  add(obj, "stall_s_by_cause", per_cause(f->stall_s_by_cause));
}

/* (measured - predicted) / predicted; 0 when both are 0, null when only
 * the prediction is. */
static json_object *relative(double measured, double predicted) {
  if (predicted == 0)
    return measured == 0 ? rok_json_new_double(0) : NULL;
  return rok_json_new_double((measured - predicted) / predicted);
}

static json_object *relative_errors(const RokExecFigures *m, const RokExecFigures *p) {
  json_object *obj = json_object_new_object();
  Scalar sm[N_SCALARS], sp[N_SCALARS];
  guint n = scalars(m, sm);
  scalars(p, sp);
  for (guint i = 0; i < n; i++)
    add(obj, sm[i].name, relative(sm[i].value, sp[i].value));
  json_object *busy = json_object_new_object();
  for (guint s = 0; s < ROK_STREAM_COUNT; s++)
    add(busy, rok_stream_name(s), relative(m->busy_s[s], p->busy_s[s]));
  add(obj, "busy_s", busy);
  json_object *stall = json_object_new_object();
  for (guint c = 0; c < ROK_STALL_COUNT; c++)
    add(stall, rok_stall_cause_name(c), relative(m->stall_s_by_cause[c], p->stall_s_by_cause[c]));
  add(obj, "stall_s_by_cause", stall);
  return obj;
}

static json_object *strings(const GPtrArray *list) {
  json_object *array = json_object_new_array();
  for (guint i = 0; i < list->len; i++)
    json_object_array_add(array, json_object_new_string(g_ptr_array_index(list, i)));
  return array;
}

static json_object *header(const RokExecReport *r) {
  json_object *obj = json_object_new_object();
  add(obj, "format", json_object_new_string("rok-report/1"));
  add(obj, "strategy", str_or_null(r->strategy));
  add(obj, "model", str_or_null(r->model));
  json_object *device = json_object_new_object();
  add(device, "name", str_or_null(r->device));
  add(device, "type", str_or_null(r->device_type));
  add(device, "platform", str_or_null(r->platform));
  add(obj, "device", device);
  json_object *storage = json_object_new_object();
  add(storage, "backend", str_or_null(r->backend));
  add(storage, "direct", json_object_new_boolean(r->direct));
  add(storage, "dirs", strings(r->dirs));
  add(storage, "slot_bytes", json_object_new_uint64(r->slot_bytes));
  add(storage, "staging_bytes", json_object_new_uint64(r->staging_bytes));
  add(storage, "host_pool_bytes", json_object_new_uint64(r->host_pool_bytes));
  add(obj, "storage", storage);
  add(obj, "repeat", json_object_new_uint64(r->repeat));
  add(obj, "micro_batches", json_object_new_uint64(r->micro_batches));
  add(obj, "actions", json_object_new_uint64(r->actions));
  return obj;
}

static json_object *comm_figures(const RokExecFigures *f) {
  json_object *obj = json_object_new_object();
  add(obj, "comm_s", rok_json_new_double(f->comm_s));
  add(obj, "p2p_s", rok_json_new_double(f->p2p_s));
  add(obj, "compute_waited_s", rok_json_new_double(f->comm_wait_s));
  return obj;
}

/* Written only for a schedule with comm actions, all placeholders. */
static json_object *communication(const RokExecReport *r) {
  json_object *obj = comm_figures(&r->measured);
  add(obj, "placeholders", json_object_new_uint64(r->comm_actions));
  json_object *groups = json_object_new_object();
  for (guint g = 0; g < ROK_COMM_GROUP_COUNT; g++)
    add(groups, rok_comm_group_name(g), json_object_new_uint64(r->comm_by_group[g]));
  add(obj, "by_group", groups);
  add(obj, "predicted", comm_figures(&r->predicted));
  return obj;
}

json_object *rok_exec_report_to_json(const RokExecReport *r) {
  json_object *obj = header(r);
  add_figures(obj, &r->measured);
  add(obj, "step_time_min_s", rok_json_new_double(r->step_time_min_s));
  add(obj, "step_time_max_s", rok_json_new_double(r->step_time_max_s));
  json_object *steps = json_object_new_array();
  for (guint i = 0; i < r->step_times_s->len; i++)
    json_object_array_add(steps, rok_json_new_double(g_array_index(r->step_times_s, double, i)));
  add(obj, "step_times_s", steps);
  json_object *others = json_object_new_array();
  for (guint i = 0; i < r->others_cpu_s->len; i++)
    json_object_array_add(others, rok_json_new_double(g_array_index(r->others_cpu_s, double, i)));
  add(obj, "others_cpu_s", others);
  add(obj, "warmup_time_s", rok_json_new_double(r->warmup_time_s));
  add(obj, "dispatch_s", rok_json_new_double(r->dispatch_s));
  add(obj, "stream_threads", json_object_new_string(rok_host_wake_name(r->stream_wake)));
  add(obj, "fixed_device_bytes", json_object_new_uint64(r->fixed_device_bytes));
  add(obj, "staging_waits", json_object_new_uint64(r->staging_waits));
  add(obj, "staging_wait_s", rok_json_new_double(r->staging_wait_s));
  add(obj, "integrity_failures", json_object_new_uint64(r->integrity_failures));
  add(obj, "tensors_verified", json_object_new_uint64(r->tensors_verified));
  g_autofree char *sum = g_strdup_printf("%016" G_GINT64_MODIFIER "x", r->gradient_checksum);
  add(obj, "gradient_checksum", json_object_new_string(sum));
  add(obj, "loss", isfinite(r->loss) ? rok_json_new_double(r->loss) : NULL);
  json_object *predicted = json_object_new_object();
  add_figures(predicted, &r->predicted);
  add(predicted, "fixed_bytes", json_object_new_uint64(r->predicted_fixed_bytes));
  add(obj, "predicted", predicted);
  add(obj, "relative_error", relative_errors(&r->measured, &r->predicted));
  if (r->comm_actions > 0)
    add(obj, "communication", communication(r));
  add(obj, "notes", strings(r->notes));
  return obj;
}

gboolean rok_exec_report_save(const RokExecReport *report, const char *path, GError **error) {
  json_object *obj = rok_exec_report_to_json(report);
  gboolean ok = rok_json_write_file(obj, path, error);
  json_object_put(obj);
  return ok;
}
