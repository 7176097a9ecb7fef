/* The compact form of rok-schedule/2: a schedule written with its repeated
 * blocks as repeats reads back to exactly the actions of the full form,
 * action for action, for plain, pipeline-stage (1F1B and interleaved) and
 * communicating schedules of every strategy; damaged repeats are refused
 * with their place named. */
#include <stdio.h>
#include <string.h>

#include "rok/core.h"
#include "rok/plan.h"
#include "rok/schedule.h"
#include "rok/sim.h"
#include "rok/trace.h"
#include "test-bundled.h"

static RokSchedule *parse(const char *text) {
  g_autoptr(GError) error = NULL;
  RokSchedule *s = rok_schedule_parse("schedule.json", text, strlen(text), &error);
  g_assert_no_error(error);
  return s;
}

static void same_actions(const RokSchedule *a, const RokSchedule *b) {
  g_assert_cmpuint(a->actions->len, ==, b->actions->len);
  for (guint i = 0; i < a->actions->len; i++) {
    const RokAction *x = rok_schedule_action(a, i), *y = rok_schedule_action(b, i);
    g_assert_cmpint(x->kind, ==, y->kind);
    g_assert_cmpint(x->stream, ==, y->stream);
    g_assert_cmpuint(x->micro_batch, ==, y->micro_batch);
    g_assert_cmpuint(x->op, ==, y->op);
    g_assert_cmpuint(x->tensor, ==, y->tensor);
    g_assert_cmpuint(x->bytes, ==, y->bytes);
    g_assert_cmpint(x->gpudirect, ==, y->gpudirect);
    g_assert_cmpint(x->collective, ==, y->collective);
    g_assert_cmpint(x->group, ==, y->group);
    g_assert_cmpint(x->start_ns, ==, y->start_ns);
    g_assert_cmpint(x->end_ns, ==, y->end_ns);
    g_assert_cmpuint(x->deps_count, ==, y->deps_count);
    for (guint d = 0; d < x->deps_count; d++)
      g_assert_cmpuint(g_array_index(a->deps, guint, x->deps_first + d), ==,
                       g_array_index(b->deps, guint, y->deps_first + d));
  }
}

/* Compact and full text of `s` read back to s's actions; the compact one
 * is smaller once micro-batches repeat, and either, read and written
 * again, gives the compact bytes. */
static gsize check(const RokSchedule *s, const char *what) {
  g_autofree char *compact = rok_schedule_to_string(s);
  g_autofree char *full = rok_schedule_to_string_full(s);
  g_autoptr(RokSchedule) from_compact = parse(compact);
  g_autoptr(RokSchedule) from_full = parse(full);
  same_actions(s, from_compact);
  same_actions(s, from_full);
  g_autofree char *again = rok_schedule_to_string(from_full);
  g_assert_cmpstr(again, ==, compact);
  g_autofree char *again_full = rok_schedule_to_string_full(from_compact);
  g_assert_cmpstr(again_full, ==, full);
  g_test_message("%s: %u actions, %zu bytes compact, %zu full", what, s->actions->len, strlen(compact),
                 strlen(full));
  g_assert_cmpuint(strlen(compact), <=, strlen(full));
  return strlen(compact);
}

static RokSchedule *schedule_of(const RokTrace *trace, const RokHw *hw, RokStrategy strategy) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(strategy, trace, hw, NULL, &error);
  g_assert_no_error(error);
  RokSchedule *s = rok_sim_schedule_new(trace, hw, plan, rok_strategy_name(strategy), hw->gpu.memory, &error);
  g_assert_no_error(error);
  return s;
}

/* A small GPT on `extra` layout settings; every stage of it, the baselines. */
static void check_model(const char *const *extra, guint stages) {
  const char *base[] = {"layers=8", "hidden=512", "heads=8", "seq_len=256", "micro_batch=1", "global_batch=8",
                        "data_parallel=1", "tensor_parallel=1", "sequence_parallel=false", "zero_stage=0",
                        "pipeline_parallel=1", "virtual_stages=1", NULL};
  g_autoptr(RokModel) m = test_bundled_model2("gpt3-1.3b", base, extra);
  g_autoptr(RokHw) hw = test_bundled_hw("h100-80g-sxm-4xgen5");
  for (guint stage = 0; stage < stages; stage++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(RokTrace) trace = rok_trace_new_for_stage(m, stage, &error);
    g_assert_no_error(error);
    for (guint st = 0; st < ROK_STRATEGY_BASELINE_COUNT; st++) {
      /* Stages: keep and recompute (the others offload nothing more here). */
      if (stages > 1 && st != ROK_STRATEGY_KEEP && st != ROK_STRATEGY_RECOMPUTE)
        continue;
      g_autoptr(RokSchedule) s = schedule_of(trace, hw, st);
      g_autofree char *what = g_strdup_printf("%s stage %u %s", extra[0] ? extra[0] : "plain", stage,
                                              rok_strategy_name(st));
      check(s, what);
    }
  }
}

static void test_plain(void) {
  check_model((const char *const[]){NULL}, 1);
  check_model((const char *const[]){"global_batch=1", NULL}, 1);
}

static void test_pipeline(void) {
  check_model((const char *const[]){"pipeline_parallel=4", NULL}, 4);
  check_model((const char *const[]){"pipeline_parallel=2", "virtual_stages=2", NULL}, 2);
}

/* Comm actions are rok-schedule/2's: a /1 file with one is refused. */
static void check_comm_needs_2(void) {
  const char *sets[] = {"layers=2", "hidden=256", "heads=4", "seq_len=64", "global_batch=4", "data_parallel=2",
                        "tensor_parallel=2", NULL};
  g_autoptr(RokModel) m = test_bundled_model("gpt3-1.3b", sets);
  g_autoptr(RokHw) hw = test_bundled_hw("h100-80g-sxm-4xgen5");
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_for_stage(m, 0, &error);
  g_autoptr(RokSchedule) s = schedule_of(trace, hw, ROK_STRATEGY_KEEP);
  g_autofree char *full = rok_schedule_to_string_full(s);
  memcpy(strstr(full, "rok-schedule/2") + strlen("rok-schedule/"), "1", 1);
  g_autoptr(RokSchedule) back = rok_schedule_parse("schedule.json", full, strlen(full), &error);
  g_assert_null(back);
  g_assert_nonnull(strstr(error->message, "comm actions need format rok-schedule/2"));
}

static void test_communication(void) {
  check_comm_needs_2();
  check_model((const char *const[]){"tensor_parallel=2", "sequence_parallel=true", "data_parallel=2",
                                    "global_batch=16", NULL},
              1);
  check_model((const char *const[]){"tensor_parallel=2", "data_parallel=2", "framework=deepspeed", "zero_stage=3", "global_batch=16",
                                    "pipeline_parallel=2", NULL},
              2);
}

static void expect_error(const char *text, const char *needle, guint line) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSchedule) s = rok_schedule_parse("schedule.json", text, strlen(text), &error);
  g_assert_null(s);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INPUT);
  if (strstr(error->message, needle) == NULL)
    g_error("expected \"%s\" in: %s", needle, error->message);
  g_autofree char *place = g_strdup_printf("schedule.json:%u:", line);
  if (line > 0 && !g_str_has_prefix(error->message, place))
    g_error("expected the place %s in: %s", place, error->message);
}

/* `text` with `from` replaced by `to` in its first repeat. */
static char *in_repeat(const char *text, const char *from, const char *to) {
  const char *line = strstr(text, "\"repeat_from\"");
  g_assert_nonnull(line);
  while (line > text && line[-1] != '\n')
    line--;
  const char *at = strstr(line, from);
  g_assert_nonnull(at);
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

static guint line_of(const char *text, const char *needle) {
  const char *at = strstr(text, needle);
  guint line = 1;
  for (const char *p = text; p < at; p++)
    line += *p == '\n';
  return line;
}

static void test_damage(void) {
  const char *sets[] = {"layers=4", "hidden=256", "heads=4", "seq_len=128", "global_batch=6", "data_parallel=1",
                        "tensor_parallel=1", "sequence_parallel=false", "zero_stage=0", NULL};
  g_autoptr(RokModel) m = test_bundled_model("gpt3-1.3b", sets);
  g_autoptr(RokHw) hw = test_bundled_hw("h100-80g-sxm-4xgen5");
  g_autoptr(GError) error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_for_stage(m, 0, &error);
  g_assert_no_error(error);
  g_autoptr(RokSchedule) s = schedule_of(trace, hw, ROK_STRATEGY_SELECTIVE);
  g_autofree char *text = rok_schedule_to_string(s);
  guint line = line_of(text, "\"repeat_from\"");
  g_autofree char *v1 = g_strdup(text);
  memcpy(strstr(v1, "rok-schedule/2") + strlen("rok-schedule/"), "1", 1);
  expect_error(v1, "repeats need format rok-schedule/2", line);
  g_autofree char *many = in_repeat(text, "\"times\": ", "\"times\": 9999");
  expect_error(many, "the most a step of this trace has", line);
  g_autofree char *past = in_repeat(text, "\"micro_batch_step\": 1", "\"micro_batch_step\": 3");
  expect_error(past, "past micro_batches", line);
  g_autofree char *self = in_repeat(text, "\"repeat_from\": ", "\"repeat_from\": 99999");
  expect_error(self, "repeat_from", line);
  g_autofree char *late = in_repeat(text, "\"shift_s\": ", "\"shift_s\": 99999999");
  expect_error(late, "end after 1e9 s", line);
  g_autofree char *key = in_repeat(text, "\"times\"", "\"copies\"");
  expect_error(key, "copies", line);
  /* A fault only running finds, in a copy: the repeat's line is named. */
  g_autoptr(RokSchedule) back = parse(text);
  GError *fault = g_error_new_literal(ROK_ERROR, ROK_ERROR_INPUT, "a fault");
  guint copy = 0;
  g_assert_cmpint(sscanf(g_strrstr_len(text, strstr(text, "\"repeat_from\"") - text, "{"), "{\"id\": %u", &copy), ==, 1);
  rok_schedule_locate_action(back, copy + 1, fault);
  g_autofree char *place = g_strdup_printf("schedule.json:%u:", line);
  g_assert_true(g_str_has_prefix(fault->message, place));
  g_assert_nonnull(strstr(fault->message, "a repeat's copy"));
  g_error_free(fault);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/schedule-compact/plain", test_plain);
  g_test_add_func("/schedule-compact/pipeline", test_pipeline);
  g_test_add_func("/schedule-compact/communication", test_communication);
  g_test_add_func("/schedule-compact/damage", test_damage);
  return g_test_run();
}
