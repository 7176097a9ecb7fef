/* The executor's runner on whole schedules of a tiny GPT: every plan gives
 * the same gradients, moves the bytes the schedule says, checks every copy
 * and leaves nothing on disk; corruption, a full disk, an I/O error and
 * cancellation stop it cleanly; schedules it cannot follow are refused
 * naming the action; a schedule too big for the machine is refused up
 * front. */
#include <glib.h>
#include <glib/gstdio.h>

#ifndef ROK_WITH_OPENCL
int main(void) {
  return 77; /* built without OpenCL */
}
#else

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rok/device.h"
#include "exec/runner-private.h"
#include "rok/core.h"
#include "rok/exec.h"
#include "rok/plan.h"
#include "rok/schedule.h"
#include "test-exec-common.h"

typedef struct {
  RokTrace *trace;
  RokHw *hw;
  char *dir; /* a scratch directory for the store */
} Fixture;

static Fixture fx;

static RokTrace *trace_from(const char *json) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokModel) model = rok_model_parse("tiny-gpt", json, strlen(json), NULL, &error);
  g_assert_no_error(error);
  RokTrace *trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  return trace;
}

static RokHw *load_hw(const char *name) {
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_strdup_printf("%s/configs/hw/%s.json", g_getenv("ROK_SOURCE_DIR"), name);
  RokHw *hw = rok_hw_load(path, &error);
  g_assert_no_error(error);
  return hw;
}

/* A baseline's plan; offload with no size floor, so that a tiny model
 * offloads every saved tensor of its layers. */
static RokStepPlan *baseline(const RokTrace *trace, const RokHw *hw, RokStrategy strategy) {
  g_autoptr(GError) error = NULL;
  RokStrategyOptions so;
  rok_strategy_options_init(&so);
  so.offload_min_elements = 0;
  RokStepPlan *plan = rok_strategy_plan(strategy, trace, hw, &so, &error);
  g_assert_no_error(error);
  return plan;
}

/* Every tensor the offload plan sends to NVMe goes `to` instead. */
static RokStepPlan *offload_to(const RokTrace *trace, const RokHw *hw, RokDecision to) {
  RokStepPlan *plan = baseline(trace, hw, ROK_STRATEGY_OFFLOAD);
  for (guint t = 0; t < plan->n_tensors; t++)
    if (plan->decisions[t] == ROK_DECISION_OFFLOAD_NVME)
      plan->decisions[t] = to;
  return plan;
}

/* Each saved tensor of the layers gets one of the four decisions in turn
 * (recompute only where it can be). */
static RokStepPlan *mixed(const RokTrace *trace, const RokHw *hw) {
  RokStepPlan *plan = rok_step_plan_new(trace);
  (void)hw;
  guint i = 0;
  for (guint t = 0; t < plan->n_tensors; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (!rok_tensor_is_saved(tensor) || tensor->layer < 0)
      continue;
    RokDecision d = (RokDecision)(i++ % ROK_DECISION_COUNT);
    plan->decisions[t] = d == ROK_DECISION_RECOMPUTE && !tensor->recomputable ? ROK_DECISION_OFFLOAD_NVME : d;
  }
  return plan;
}

static RokSchedule *schedule_of(const RokTrace *trace, const RokHw *hw, RokStepPlan *plan, const char *name) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokStepPlan) owned = plan;
  RokSchedule *s = rok_sim_schedule_new(trace, hw, owned, name, hw->gpu.memory, &error);
  g_assert_no_error(error);
  return s;
}

static RokExecReport *run(const RokSchedule *s, const char *faults, RokExecCancel *cancel, RokExecProgressFunc progress,
                          GError **error) {
  const char *dirs[] = {fx.dir, NULL};
  RokExecOptions o;
  rok_exec_options_init(&o);
  o.dirs = dirs;
  o.repeat = 1;
  o.faults = faults != NULL ? faults : "";
  o.cancel = cancel;
  o.progress = progress;
  o.progress_data = cancel;
  return rok_exec_run(s, &o, error);
}

static void assert_dir_empty(void) {
  g_autoptr(GDir) dir = g_dir_open(fx.dir, 0, NULL);
  g_assert_nonnull(dir);
  const char *entry = g_dir_read_name(dir);
  if (entry != NULL)
    g_error("%s is not empty: %s", fx.dir, entry);
}

static guint64 predicted_uint(const RokSchedule *s, const char *key) {
  json_object *value = NULL;
  g_assert_true(json_object_object_get_ex(s->predicted, key, &value));
  return (guint64)json_object_get_uint64(value);
}

/* Copies the schedule brings back to the device. */
static guint64 reads_back(const RokSchedule *s) {
  g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint i = 0; i < s->actions->len; i++) {
    const RokAction *a = rok_schedule_action(s, i);
    if (a->kind == ROK_ACTION_PREFETCH)
      g_hash_table_add(seen, GUINT_TO_POINTER(a->micro_batch * 100000 + a->tensor + 1));
  }
  return g_hash_table_size(seen);
}

/* Runs a schedule and checks what any run must give; returns its gradient
 * checksum. */
static guint64 run_and_check(RokSchedule *s) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokExecReport) r = run(s, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->integrity_failures, ==, 0);
  g_assert_cmpuint(r->tensors_verified, ==, reads_back(s));
  g_assert_cmpuint(r->measured.nvme_write_bytes, ==, predicted_uint(s, "nvme_write_bytes"));
  g_assert_cmpuint(r->measured.nvme_read_bytes, ==, predicted_uint(s, "nvme_read_bytes"));
  g_assert_cmpuint(r->measured.d2h_bytes, ==, predicted_uint(s, "pcie_d2h_bytes"));
  g_assert_cmpuint(r->measured.h2d_bytes, ==, predicted_uint(s, "pcie_h2d_bytes"));
  g_assert_cmpuint(r->predicted.nvme_write_bytes, ==, predicted_uint(s, "nvme_write_bytes"));
  g_assert_cmpuint(r->predicted.peak_device_bytes, ==, predicted_uint(s, "peak_bytes"));
  g_assert_cmpuint(r->micro_batches, ==, 2);
  g_assert_cmpuint(r->step_times_s->len, ==, 1);
  g_assert_cmpuint(r->others_cpu_s->len, ==, 1); /* one figure per measured step */
  if (g_file_test("/proc/stat", G_FILE_TEST_EXISTS))
    g_assert_cmpfloat(g_array_index(r->others_cpu_s, double, 0), >=, 0);
  g_assert_cmpfloat(r->measured.step_time_s, >, 0);
  g_assert_cmpfloat(r->measured.compute_s, <=, r->measured.step_time_s * 1.0001);
  g_assert_true(isfinite(r->loss) && r->loss > 0);
  /* Without copies, the ledger's activation peak is the simulator's within
   * a little slack (the loss and scratch buffers the interpreter keeps);
   * copies move the peak with their real timing, but nothing may pile up. */
  double act = (double)r->measured.activation_peak_bytes, pact = (double)r->predicted.activation_peak_bytes;
  gboolean copies = predicted_uint(s, "pcie_d2h_bytes") > 0;
  if ((!copies && fabs(act - pact) > 0.05 * pact + 65536) || act > 2 * pact + 65536)
    g_error("%s: activation peak %.0f bytes measured, %.0f predicted", s->strategy, act, pact);
  assert_dir_empty();
  return r->gradient_checksum;
}

/* Every plan of `t` gives the keep plan's gradients and moves real data;
 * returns the mixed plan (the caller frees it). */
static RokStepPlan *plans_agree(const RokTrace *t, const RokHw *hw) {
  RokStepPlan *mix = mixed(t, hw);
  RokSchedule *schedules[] = {
      schedule_of(t, hw, baseline(t, hw, ROK_STRATEGY_KEEP), "keep"),
      schedule_of(t, hw, baseline(t, hw, ROK_STRATEGY_RECOMPUTE), "recompute"),
      schedule_of(t, hw, baseline(t, hw, ROK_STRATEGY_SELECTIVE), "selective"),
      schedule_of(t, hw, baseline(t, hw, ROK_STRATEGY_OFFLOAD), "offload"),
      schedule_of(t, hw, offload_to(t, hw, ROK_DECISION_OFFLOAD_HOST), "host"),
      schedule_of(t, hw, rok_step_plan_copy(mix), "mixed"),
  };
  guint64 first = 0;
  for (guint i = 0; i < G_N_ELEMENTS(schedules); i++) {
    guint64 sum = run_and_check(schedules[i]);
    if (i == 0)
      first = sum;
    else if (sum != first)
      g_error("%s, %s: gradient checksum %016" G_GINT64_MODIFIER "x, keep gave %016" G_GINT64_MODIFIER "x",
              t->model_name, schedules[i]->strategy, sum, first);
  }
  /* The plans really move data: offload to the SSDs, host copies, a mix. */
  g_assert_cmpuint(predicted_uint(schedules[3], "nvme_write_bytes"), >, 0);
  g_assert_cmpuint(predicted_uint(schedules[4], "pcie_d2h_bytes"), >, 0);
  g_assert_cmpuint(predicted_uint(schedules[4], "nvme_write_bytes"), ==, 0);
  g_assert_cmpuint(predicted_uint(schedules[5], "nvme_write_bytes"), >, 0);
  g_assert_cmpuint(predicted_uint(schedules[5], "pcie_d2h_bytes"), >, predicted_uint(schedules[5], "nvme_write_bytes"));
  for (guint i = 0; i < G_N_ELEMENTS(schedules); i++)
    rok_schedule_free(schedules[i]);
  return mix;
}

static void test_plans(void) { rok_step_plan_free(plans_agree(fx.trace, fx.hw)); }

/* Mixture-of-experts layers: the same agreement, with the mixed plan
 * keeping, recomputing and offloading (host and NVMe) MoE tensors. */
static void test_moe_plans(gconstpointer json) {
  g_autoptr(RokTrace) t = trace_from(json);
  g_autoptr(RokStepPlan) mix = plans_agree(t, fx.hw);
  guint seen[ROK_DECISION_COUNT] = {0};
  for (guint i = 0; i < mix->n_tensors; i++)
    if (strstr(rok_trace_tensor(t, i)->name, ".moe.") != NULL && rok_tensor_is_saved(rok_trace_tensor(t, i)))
      seen[mix->decisions[i]]++;
  for (guint d = 0; d < ROK_DECISION_COUNT; d++)
    if (seen[d] == 0)
      g_error("%s: the mixed plan has no MoE tensor with decision %u", t->model_name, d);
}

static guint64 keep_checksum(void) {
  static guint64 value = 0; /* tests run one after the other */
  if (value == 0) {
    g_autoptr(RokSchedule) s = schedule_of(fx.trace, fx.hw, baseline(fx.trace, fx.hw, ROK_STRATEGY_KEEP), "keep");
    value = run_and_check(s);
  }
  return value;
}

/* GPUDirect legs cannot be done here: they run through a staging slot, and
 * the report says so. */
static void test_gpudirect(void) {
  g_autoptr(RokHw) hw = rok_hw_copy(fx.hw);
  hw->nvme.gpudirect = TRUE;
  g_autoptr(RokSchedule) s = schedule_of(fx.trace, hw, baseline(fx.trace, hw, ROK_STRATEGY_OFFLOAD), "offload");
  guint direct = 0;
  for (guint i = 0; i < s->actions->len; i++)
    direct += rok_schedule_action(s, i)->gpudirect;
  g_assert_cmpuint(direct, >, 0);
  g_assert_cmpuint(run_and_check(s), ==, keep_checksum());
  g_autoptr(GError) error = NULL;
  g_autoptr(RokExecReport) r = run(s, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  gboolean noted = FALSE;
  for (guint i = 0; i < r->notes->len; i++)
    noted |= strstr(g_ptr_array_index(r->notes, i), "gpudirect") != NULL;
  g_assert_true(noted);
}

/* Every read back from the SSDs corrupted (one fault per read request,
 * chunks counted from 1): legs run concurrently, so which request comes
 * Nth is not the schedule's order. NAMES gets the tensors read back, one
 * of which the error must name (the fault flips a byte 2 KiB into a
 * chunk: payload in every tensor larger than that). */
static char *corrupt_every_read(const RokSchedule *s, GPtrArray *names) {
  GString *fault = g_string_new(NULL);
  guint reads = 0;
  for (guint i = 0; i < s->actions->len; i++) {
    const RokAction *a = rok_schedule_action(s, i);
    if (a->stream != ROK_STREAM_NVME_READ)
      continue;
    for (guint64 c = 0; c < (a->bytes + (1 << 20) - 1) >> 20; c++) {
      reads++;
      g_string_append_printf(fault, "%scorrupt@read:%u", reads == 1 ? "" : ",", reads);
    }
    g_ptr_array_add(names, g_strdup_printf("'%s'", rok_trace_tensor(s->trace, a->tensor)->name));
  }
  g_assert_cmpuint(names->len, >, 0);
  return g_string_free(fault, FALSE);
}

static void assert_error_says(const GError *error, int code, const char *a, const char *b) {
  g_assert_error(error, ROK_ERROR, code);
  if (strstr(error->message, a) == NULL || (b != NULL && strstr(error->message, b) == NULL))
    g_error("\"%s\" does not say \"%s\" and \"%s\"", error->message, a, b != NULL ? b : "");
  assert_dir_empty();
}

static void test_corrupt(void) {
  g_autoptr(RokSchedule) s = schedule_of(fx.trace, fx.hw, baseline(fx.trace, fx.hw, ROK_STRATEGY_OFFLOAD), "offload");
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  g_autofree char *fault = corrupt_every_read(s, names);
  g_autoptr(GError) error = NULL;
  g_autoptr(RokExecReport) r = run(s, fault, NULL, NULL, &error);
  g_assert_null(r);
  const char *named = NULL;
  for (guint i = 0; i < names->len && error != NULL; i++)
    if (strstr(error->message, g_ptr_array_index(names, i)) != NULL)
      named = g_ptr_array_index(names, i);
  assert_error_says(error, ROK_ERROR_INTEGRITY, named != NULL ? named : "a tensor read back", fx.dir);
  g_assert_nonnull(strstr(error->message, "came back different"));
}

static void test_disk_errors(void) {
  g_autoptr(RokSchedule) s = schedule_of(fx.trace, fx.hw, baseline(fx.trace, fx.hw, ROK_STRATEGY_OFFLOAD), "offload");
  const struct {
    const char *fault, *says;
  } cases[] = {
      {"enospc@write:2", "No space left on device"},
      {"eio@write:5", "Input/output error"},
      {"eio@read:3", "Input/output error"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(RokExecReport) r = run(s, cases[i].fault, NULL, NULL, &error);
    g_assert_null(r);
    assert_error_says(error, ROK_ERROR_IO, cases[i].says, fx.dir);
  }
  /* Short transfers are finished by the store: the run succeeds. */
  g_autoptr(GError) error = NULL;
  g_autoptr(RokExecReport) r = run(s, "short@write:1,short@read:2", NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->gradient_checksum, ==, keep_checksum());
  assert_dir_empty();
}

static void cancel_midway(const RokExecProgress *p, gpointer data) {
  if (p->step == 1 && p->done > 0)
    rok_exec_cancel_trigger(data, 2);
}

static void test_cancel(void) {
  g_autoptr(RokSchedule) s = schedule_of(fx.trace, fx.hw, baseline(fx.trace, fx.hw, ROK_STRATEGY_OFFLOAD), "offload");
  g_autoptr(RokExecCancel) cancel = rok_exec_cancel_new();
  g_autoptr(GError) error = NULL;
  g_autoptr(RokExecReport) r = run(s, NULL, cancel, cancel_midway, &error);
  g_assert_null(r);
  assert_error_says(error, ROK_ERROR_CANCELLED, "interrupted by signal 2", NULL);
  g_assert_cmpint(rok_exec_cancel_signal(cancel), ==, 2);
  /* Cancelled before it starts: nothing runs. */
  g_autoptr(RokExecCancel) early = rok_exec_cancel_new();
  rok_exec_cancel_trigger(early, 0);
  g_clear_error(&error);
  g_assert_null(run(s, NULL, early, NULL, &error));
  assert_error_says(error, ROK_ERROR_CANCELLED, "cancelled", NULL);
}

/* Schedules the runner cannot follow are refused before anything runs,
 * naming the action. */
static void test_bad_schedules(void) {
  g_autoptr(RokSchedule) s = schedule_of(fx.trace, fx.hw, baseline(fx.trace, fx.hw, ROK_STRATEGY_OFFLOAD), "offload");
  g_autoptr(GError) error = NULL;
  /* Its SSD legs need a directory. */
  RokExecOptions o;
  rok_exec_options_init(&o);
  o.repeat = 1;
  g_assert_null(rok_exec_run(s, &o, &error));
  assert_error_says(error, ROK_ERROR_USAGE, "--dir", NULL);
  /* A copy of a tensor the plan keeps. */
  guint tensor = G_MAXUINT;
  for (guint i = 0; i < s->actions->len && tensor == G_MAXUINT; i++)
    if (rok_schedule_action(s, i)->stream == ROK_STREAM_D2H)
      tensor = rok_schedule_action(s, i)->tensor;
  s->plan->decisions[tensor] = ROK_DECISION_KEEP;
  g_clear_error(&error);
  g_assert_null(run(s, NULL, NULL, NULL, &error));
  assert_error_says(error, ROK_ERROR_INPUT, "schedule action", "is not offloaded");
  s->plan->decisions[tensor] = ROK_DECISION_OFFLOAD_NVME;
  /* A free of a tensor that is not in device memory then: the first free
   * made to free the last op's output, which is not made yet. */
  RokAction *free_action = NULL;
  for (guint i = 0; i < s->actions->len && free_action == NULL; i++)
    if (rok_schedule_action(s, i)->kind == ROK_ACTION_FREE)
      free_action = &g_array_index(s->actions, RokAction, i);
  guint saved = free_action->tensor;
  free_action->tensor = fx.trace->tensors->len - 1;
  g_clear_error(&error);
  g_assert_null(run(s, NULL, NULL, NULL, &error));
  assert_error_says(error, ROK_ERROR_INPUT, "which is not in device memory then", "frees tensor");
  free_action->tensor = saved;
  /* Bad options. */
  o.repeat = 0;
  g_clear_error(&error);
  g_assert_null(rok_exec_run(s, &o, &error));
  assert_error_says(error, ROK_ERROR_USAGE, "--repeat", NULL);
}

/* GPT-3 13B on this machine: refused up front, saying what it needs. */
static void test_too_big(void) {
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_strdup_printf("%s/configs/models/gpt3-13b.json", g_getenv("ROK_SOURCE_DIR"));
  const char *overrides[] = {"micro_batch=1", "global_batch=1", "data_parallel=1", NULL};
  g_autoptr(RokModel) model = rok_model_load(path, overrides, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  g_autoptr(RokSchedule) s = schedule_of(trace, fx.hw, rok_step_plan_new(trace), "keep");
  g_autoptr(RokExecReport) r = run(s, NULL, NULL, NULL, &error);
  g_assert_null(r);
  assert_error_says(error, ROK_ERROR_DEVICE, "too big to run here", "of device memory");
}

static void test_report_json(void) {
  g_autoptr(RokSchedule) s = schedule_of(fx.trace, fx.hw, baseline(fx.trace, fx.hw, ROK_STRATEGY_OFFLOAD), "offload");
  g_autoptr(GError) error = NULL;
  g_autoptr(RokExecReport) r = run(s, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_autofree char *path = g_build_filename(fx.dir, "..", "rok-exec-report-test.json", NULL);
  g_assert_true(rok_exec_report_save(r, path, &error));
  g_assert_no_error(error);
  json_object *doc = json_object_from_file(path);
  g_unlink(path);
  g_assert_nonnull(doc);
  json_object *value = NULL, *predicted = NULL, *rel = NULL;
  g_assert_true(json_object_object_get_ex(doc, "format", &value));
  g_assert_cmpstr(json_object_get_string(value), ==, "rok-report/1");
  const char *figures[] = {
      "step_time_s",     "peak_device_bytes",    "d2h_bytes",           "h2d_bytes", "nvme_write_bytes",
      "nvme_read_bytes", "nvme_write_bandwidth", "nvme_read_bandwidth", "stall_s"};
  g_assert_true(json_object_object_get_ex(doc, "predicted", &predicted));
  g_assert_true(json_object_object_get_ex(doc, "relative_error", &rel));
  for (guint i = 0; i < G_N_ELEMENTS(figures); i++) {
    g_assert_true(json_object_object_get_ex(doc, figures[i], NULL));
    g_assert_true(json_object_object_get_ex(predicted, figures[i], NULL));
    g_assert_true(json_object_object_get_ex(rel, figures[i], NULL));
  }
  g_assert_true(json_object_object_get_ex(doc, "nvme_write_bandwidth", &value));
  g_assert_cmpfloat(json_object_get_double(value), >, 0);
  g_assert_true(json_object_object_get_ex(doc, "integrity_failures", &value));
  g_assert_cmpint(json_object_get_int64(value), ==, 0);
  g_assert_true(json_object_object_get_ex(doc, "gradient_checksum", &value));
  g_autofree char *hex = g_strdup_printf("%016" G_GINT64_MODIFIER "x", r->gradient_checksum);
  g_assert_cmpstr(json_object_get_string(value), ==, hex);
  g_assert_true(json_object_object_get_ex(rel, "nvme_write_bytes", &value));
  g_assert_cmpfloat(json_object_get_double(value), ==, 0.0);
  json_object_put(doc);
}

static double predicted_double(const RokSchedule *s, const char *key, const char *member) {
  json_object *value = NULL;
  g_assert_true(json_object_object_get_ex(s->predicted, key, &value));
  if (member != NULL)
    g_assert_true(json_object_object_get_ex(value, member, &value));
  return json_object_get_double(value);
}

/* The predicted figures the report derives from the schedule's actions are
 * the simulator's own, figure for figure; so the measured ones, derived the
 * same way from measured times, are comparable with them. */
static void test_predicted(void) {
  const RokTrace *t = fx.trace;
  RokSchedule *schedules[] = {
      schedule_of(t, fx.hw, baseline(t, fx.hw, ROK_STRATEGY_RECOMPUTE), "recompute"),
      schedule_of(t, fx.hw, baseline(t, fx.hw, ROK_STRATEGY_OFFLOAD), "offload"),
      schedule_of(t, fx.hw, mixed(t, fx.hw), "mixed"),
  };
  for (guint i = 0; i < G_N_ELEMENTS(schedules); i++) {
    const RokSchedule *s = schedules[i];
    g_autoptr(GError) error = NULL;
    RunnerProgram prog;
    g_assert_true(runner_program_build(&prog, s, ROK_EXEC_DEFAULT_SLOT_BYTES, &error));
    g_assert_no_error(error);
    RokExecFigures f;
    runner_measure_predicted(&prog, &f);
    g_assert_cmpfloat_with_epsilon(f.step_time_s, predicted_double(s, "step_time_s", NULL), 1e-9);
    g_assert_cmpfloat_with_epsilon(f.compute_s, predicted_double(s, "compute_s", NULL), 1e-9);
    g_assert_cmpfloat_with_epsilon(f.recompute_s, predicted_double(s, "recompute_s", NULL), 1e-9);
    for (guint st = 0; st < ROK_STREAM_COUNT; st++)
      g_assert_cmpfloat_with_epsilon(f.busy_s[st], predicted_double(s, "busy_s", rok_stream_name(st)), 1e-9);
    g_assert_cmpuint(f.d2h_bytes, ==, predicted_uint(s, "pcie_d2h_bytes"));
    g_assert_cmpuint(f.nvme_read_bytes, ==, predicted_uint(s, "nvme_read_bytes"));
    g_assert_cmpuint(f.activation_peak_bytes, ==, predicted_uint(s, "activation_peak_bytes"));
    g_assert_cmpfloat_with_epsilon(f.stall_s, predicted_double(s, "stall_s", NULL), 1e-9);
    /* Every copy of the mixed plan goes to staging, host memory or both. */
    if (i == 2)
      g_assert_cmpuint(prog.staging_peak + prog.host_total, >, 0);
    runner_program_clear(&prog);
    rok_schedule_free(schedules[i]);
  }
}

/* Every d2h leg is primed as its producer ends, before the compute thread
 * launches its next kernel, the leg before it still copied or checked or
 * not (runner_d2h_prime): the host plan's legs (no staging, so none waits
 * for slots) start in the median step before any compute action that
 * starts after their producer ended. Before, one leg in flight kept the
 * next from being issued: it began on the d2h thread, behind that kernel. */
static void test_d2h_primed(void) {
  RokSchedule *s = schedule_of(fx.trace, fx.hw, offload_to(fx.trace, fx.hw, ROK_DECISION_OFFLOAD_HOST), "host");
  g_autoptr(GError) error = NULL;
  g_autoptr(RokExecReport) r = run(s, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_autofree const RokExecSpan **by_action = g_new0(const RokExecSpan *, s->actions->len);
  for (guint i = 0; i < r->timeline->len; i++) {
    const RokExecSpan *span = &g_array_index(r->timeline, RokExecSpan, i);
    by_action[span->action] = span;
  }
  guint legs = 0, behind = 0;
  for (guint i = 0; i < r->timeline->len; i++) {
    const RokExecSpan *leg = &g_array_index(r->timeline, RokExecSpan, i);
    if (leg->stream != ROK_STREAM_D2H || leg->kind != ROK_ACTION_OFFLOAD)
      continue;
    const RokAction *a = rok_schedule_action(s, leg->action);
    const RokExecSpan *producer = NULL;
    for (guint k = 0; k < a->deps_count; k++) {
      guint dep = g_array_index(s->deps, guint, a->deps_first + k);
      if (by_action[dep] != NULL && by_action[dep]->stream == ROK_STREAM_COMPUTE)
        producer = by_action[dep];
    }
    g_assert_nonnull(producer);
    double next = G_MAXDOUBLE; /* the first kernel after the producer */
    for (guint k = 0; k < r->timeline->len; k++) {
      const RokExecSpan *c = &g_array_index(r->timeline, RokExecSpan, k);
      if (c->stream == ROK_STREAM_COMPUTE && c->kind != ROK_ACTION_FREE && c->start_s >= producer->end_s &&
          c->action != producer->action)
        next = MIN(next, c->start_s);
    }
    legs++;
    behind += leg->start_s > next;
  }
  g_assert_cmpuint(legs, >, 1);
  g_assert_cmpuint(behind, ==, 0);
  rok_schedule_free(s);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) devices = rok_cl_device_list(&error);
  if (devices == NULL || devices->len == 0) {
    g_printerr("no OpenCL device: %s\n", error != NULL ? error->message : "empty list");
    return 77;
  }
  fx.trace = trace_from(TINY_GPT);
  fx.hw = load_hw("cpu-2core-virtio");
  fx.dir = g_dir_make_tmp("rok-exec-test-XXXXXX", &error);
  g_assert_no_error(error);
  g_test_add_func("/exec-runner/plans", test_plans);
  g_test_add_data_func("/exec-runner/moe-plans/mixtral", TINY_MIXTRAL, test_moe_plans);
  g_test_add_data_func("/exec-runner/moe-plans/qwen-moe", TINY_QWEN_MOE, test_moe_plans);
  g_test_add_func("/exec-runner/predicted", test_predicted);
  g_test_add_func("/exec-runner/d2h-primed", test_d2h_primed);
  g_test_add_func("/exec-runner/gpudirect", test_gpudirect);
  g_test_add_func("/exec-runner/corrupt", test_corrupt);
  g_test_add_func("/exec-runner/disk-errors", test_disk_errors);
  g_test_add_func("/exec-runner/cancel", test_cancel);
  g_test_add_func("/exec-runner/bad-schedules", test_bad_schedules);
  g_test_add_func("/exec-runner/too-big", test_too_big);
  g_test_add_func("/exec-runner/report-json", test_report_json);
  int status = g_test_run();
  g_rmdir(fx.dir);
  g_free(fx.dir);
  rok_trace_free(fx.trace);
  rok_hw_free(fx.hw);
  return status;
}

#endif /* ROK_WITH_OPENCL */
