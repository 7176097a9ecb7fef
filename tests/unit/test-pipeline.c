/* Pipeline parallelism: stage traces as Megatron-LM splits a model, the
 * 1F1B and interleaved orders, the micro-batches in flight, bubbles. */
#include <math.h>
#include <string.h>

#include "rok/core.h"
#include "rok/plan.h"
#include "rok/sim.h"
#include "rok/trace.h"
#include "test-bundled.h"

static RokModel *load(const char *name, const char *const *sets) {
  return test_bundled_model(name, sets);
}

static RokHw *h100(void) {
  return test_bundled_hw("h100-80g-sxm-4xgen5");
}

/* Megatron-LM's theoretical activation memory of the first stage
 * (megatron/training/theoretical_memory_usage.py, compute_activation_memory,
 * which assumes sequence parallelism and selective recompute), written out
 * from its formula: sbh(18 + 4f/h) per layer for all layers (p micro-
 * batches of L/p layers), the embedding's token ids and dropout mask per
 * micro-batch in flight, the interleaving factor 1 + (p-1)/(pv), all over
 * t. `per_layer` replaces 18 + 4f/h where given. */
static double megatron_activation_bytes(const RokModel *m, double per_layer) {
  double s = (double)m->seq_len, b = (double)m->micro_batch, h = (double)m->hidden, p = (double)m->pipeline_parallel;
  double v = (double)m->virtual_stages, f = (double)m->ffn_hidden;
  double bytes = s * b * h * (per_layer > 0 ? per_layer : 18 + 4 * f / h) * (double)m->layers;
  bytes += 8 * s * b * p + s * b * h * p;
  if (v > 1)
    bytes *= 1 + (p - 1) / (p * v);
  return bytes / (double)m->tensor_parallel;
}

/* Stage 0 of the pipeline under selective recompute: the activations it
 * holds at its peak of micro-batches in flight. */
static RokSimResult *stage0_selective(const RokModel *m) {
  g_autoptr(RokHw) hw = h100();
  GError *error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_for_stage(m, 0, &error);
  g_assert_no_error(error);
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(ROK_STRATEGY_SELECTIVE, trace, hw, NULL, &error);
  g_assert_no_error(error);
  RokSimResult *r = rok_simulate(trace, hw, plan, &error);
  g_assert_no_error(error);
  return r;
}

static void check_megatron(const char *name, const char *const *sets, double per_layer, double tolerance) {
  g_autoptr(RokModel) m = load(name, sets);
  g_autoptr(RokSimResult) r = stage0_selective(m);
  double megatron = megatron_activation_bytes(m, per_layer);
  double ratio = (double)r->held_activation_bytes / megatron;
  g_test_message("%s p=%" G_GUINT64_FORMAT " v=%" G_GUINT64_FORMAT ": rok holds %.4g GiB in %" G_GUINT64_FORMAT
                 " chunk-micro-batches (ledger peak %.4g GiB), Megatron's estimator %.4g GiB: %+.2f%%",
                 name, m->pipeline_parallel, m->virtual_stages, (double)r->held_activation_bytes / 0x1p30, r->in_flight,
                 (double)r->activation_peak_bytes / 0x1p30, megatron / 0x1p30, 100 * (ratio - 1));
  g_assert_cmpfloat(fabs(ratio - 1), <, tolerance);
  /* The ledger peak holds the same plus the backward's working set. */
  g_assert_cmpuint(r->activation_peak_bytes, >=, r->held_activation_bytes);
}

/* GPT-3 175B as the issue states it: TP 8 + SP, PP 8, DP 6, 192
 * sequences (32 micro-batches); Megatron: 9.59 GiB 1F1B, 12.38 GiB at v=3. */
static void test_megatron_gpt3(void) {
  const char *base[] = {"pipeline_parallel=8", "data_parallel=6", "global_batch=192", NULL, NULL};
  check_megatron("gpt3-175b", base, 0, 0.02);
  const char *const interleaved[] = {"virtual_stages", "2", "3", "4"};
  for (guint i = 1; i < G_N_ELEMENTS(interleaved); i++) {
    g_autofree char *set = g_strdup_printf("%s=%s", interleaved[0], interleaved[i]);
    base[3] = set;
    check_megatron("gpt3-175b", base, 0, 0.02);
  }
  /* Fewer micro-batches than stages: only they are in flight. */
  const char *few[] = {"pipeline_parallel=8", "data_parallel=48", "global_batch=192", NULL};
  g_autoptr(RokModel) m = load("gpt3-175b", few);
  g_autoptr(RokSimResult) r = stage0_selective(m);
  g_assert_cmpuint(r->in_flight, ==, 4);
}

/* LLaMA-2 70B: TP 8 + SP, PP 8, DP 8, 512 sequences (64 micro-batches).
 * Megatron's per-layer term 18 + 4f/h is a GeLU layer's with dropout;
 * counted tensor by tensor the same way (Korthikanti et al.), a LLaMA
 * layer saves 33.5·sbh/t: norms' inputs 4, QKV input 2, rotated Q and K
 * 2 + 2/8 (GQA: 8 of 64 heads), V 2/8, the attention output 2, the MLP's
 * input 2, [gate|up] 4f/h and the SwiGLU output 2f/h (f/h = 3.5), no
 * dropout masks. The estimator with that term agrees within 2%; as
 * published it is 4.7% lower (it does not know gated MLPs). */
static void test_megatron_llama2(void) {
  const char *base[] = {"pipeline_parallel=8", "data_parallel=8", "global_batch=512", NULL, NULL};
  check_megatron("llama2-70b", base, 33.5, 0.02);
  base[3] = "virtual_stages=5";
  check_megatron("llama2-70b", base, 33.5, 0.02);
  base[3] = "virtual_stages=2";
  check_megatron("llama2-70b", base, 33.5, 0.02);
  base[3] = NULL;
  g_autoptr(RokModel) m = load("llama2-70b", base);
  g_autoptr(RokSimResult) r = stage0_selective(m);
  double published = (double)r->held_activation_bytes / megatron_activation_bytes(m, 0) - 1;
  g_assert_cmpfloat(published, >, 0.04);
  g_assert_cmpfloat(published, <, 0.05);
}

/* Uniform stages, one chunk, no sends: (m + p - 1)·(f + b), the bubble
 * (p - 1)/(m + p - 1) of the step; interleaving divides the bubble by v. */
static void test_bubble_fraction(void) {
  GRand *rand = g_rand_new_with_seed(13);
  for (guint trial = 0; trial < 200; trial++) {
    guint p = g_rand_int_range(rand, 1, 17), v = trial % 2 ? 1 : (guint)g_rand_int_range(rand, 2, 5);
    guint64 m = v > 1 ? p * (guint64)g_rand_int_range(rand, 1, 9) : (guint64)g_rand_int_range(rand, 1, 100);
    if (p == 1)
      v = 1;
    gint64 f = g_rand_int_range(rand, 1, 1000) * 1000, b = 2 * f + g_rand_int_range(rand, 0, 1000);
    g_autofree gint64 *fwd = g_new(gint64, p * v), *bwd = g_new(gint64, p * v), *busy = g_new(gint64, p);
    for (guint i = 0; i < p * v; i++) {
      fwd[i] = f;
      bwd[i] = b;
    }
    gint64 step = rok_pipeline_step_ns(p, v, m, fwd, bwd, 0, NULL, busy);
    for (guint s = 0; s < p; s++)
      g_assert_cmpint(busy[s], ==, (gint64)(m * v) * (f + b));
    /* v chunks of the stage's work each: the warm-up and drain cost (p-1) chunk times. */
    gint64 expected = (gint64)(m * v + p - 1) * (f + b);
    if (v > 1 && m == p) /* all forwards first: the drain has nothing to overlap */
      g_assert_cmpint(step, >=, expected);
    else
      g_assert_cmpint(step, ==, expected);
    if (v == 1) {
      double bubble = (double)(step - busy[0]) / (double)step;
      g_assert_cmpfloat(fabs(bubble - (double)(p - 1) / (double)(m + p - 1)), <, 1e-12);
    }
  }
  g_rand_free(rand);
}

/* The same through the simulator: a model of identical middle stages
 * under keep; their simulated blocks compose to the formula exactly. */
static void test_bubble_simulated(void) {
  const char *sets[] = {"pipeline_parallel=4", "data_parallel=1", "global_batch=12", "layers=8", "hidden=1024",
                        "heads=16", "seq_len=512", "tensor_parallel=1", "sequence_parallel=false", "zero_stage=0",
                        NULL};
  g_autoptr(RokModel) m = load("gpt3-1.3b", sets);
  g_autoptr(RokHw) hw = h100();
  GError *error = NULL;
  g_autoptr(RokTrace) middle = rok_trace_new_for_stage(m, 1, &error);
  g_assert_no_error(error);
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(middle);
  g_autoptr(RokSimResult) r = rok_simulate(middle, hw, plan, &error);
  g_assert_no_error(error);
  gint64 fwd[4], bwd[4], busy[4];
  for (guint s = 0; s < 4; s++) {
    fwd[s] = r->chunk_fwd_ns[0];
    bwd[s] = r->chunk_bwd_ns[0];
  }
  gint64 step = rok_pipeline_step_ns(4, 1, 12, fwd, bwd, 0, NULL, busy);
  g_assert_cmpfloat(fabs((double)(step - busy[0]) / (double)step - 3.0 / 15.0), <, 1e-12);
  /* The stage alone runs its blocks back to back. */
  g_assert_cmpint(llabs(r->stage_ns - r->optimizer_ns - 12 * (fwd[0] + bwd[0])), <=, 24);
  /* Every stage composed: the step is at least the slowest stage's work. */
  RokTrace *traces[4];
  RokStepPlan *plans[4];
  RokSimResult *results[4];
  for (guint s = 0; s < 4; s++) {
    traces[s] = rok_trace_new_for_stage(m, s, &error);
    g_assert_no_error(error);
    plans[s] = rok_step_plan_new(traces[s]);
  }
  g_assert_true(rok_pipeline_simulate(traces, hw, plans, 4, FALSE, results, &error));
  g_assert_no_error(error);
  gint64 step0 = results[0]->step_ns;
  for (guint s = 0; s < 4; s++) {
    g_assert_cmpint(results[s]->step_ns, ==, step0);
    g_assert_cmpint(results[s]->step_ns, >=, results[s]->stage_ns);
    g_assert_cmpuint(results[s]->in_flight, ==, 4 - s);
    rok_sim_result_free(results[s]);
    rok_step_plan_free(plans[s]);
    rok_trace_free(traces[s]);
  }
}

static guint count_named(const RokTrace *trace, const char *prefix) {
  guint n = 0;
  for (guint o = 0; o < trace->ops->len; o++)
    n += g_str_has_prefix(rok_trace_op(trace, o)->name, prefix);
  return n;
}

/* The first stage has the embedding, the last the head; the layers add
 * up, named by their place in the model; uneven splits as Megatron's. */
static void test_stage_traces(void) {
  const char *sets[] = {"pipeline_parallel=4", "first_stage_layers=3", "last_stage_layers=5", NULL};
  g_autoptr(RokModel) m = load("gpt3-1.3b", sets); /* 24 layers: 3, 8, 8, 5 */
  GError *error = NULL;
  const guint expected[] = {3, 8, 8, 5};
  guint64 params = 0;
  for (guint s = 0; s < 4; s++) {
    g_autoptr(RokTrace) t = rok_trace_new_for_stage(m, s, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(t->layers, ==, expected[s]);
    g_assert_cmpuint(count_named(t, "embed.lookup"), ==, (s == 0 ? 1 : 0));
    g_assert_cmpuint(count_named(t, "head.loss"), ==, (s == 3 ? 1 : 0));
    g_assert_cmpuint(count_named(t, "recv0."), ==, (s == 0 ? 0 : 1));
    g_autofree char *first = g_strdup_printf("layer%u.", s == 0 ? 0 : 3 + 8 * (s - 1));
    g_assert_cmpuint(count_named(t, first), >, 0);
    params += t->fixed.params_per_gpu;
    /* A stage trace reads back as the same stage. */
    json_object *json = rok_trace_to_json(t);
    const char *text = json_object_to_json_string(json);
    g_autoptr(RokTrace) back = rok_trace_parse("stage", text, strlen(text), &error);
    g_assert_no_error(error);
    g_assert_cmpuint(back->stage, ==, s);
    g_assert_cmpuint(back->stages, ==, 4);
    json_object_put(json);
  }
  /* Every parameter once, plus the tied embedding's copy on the last stage. */
  g_assert_cmpuint(params, ==, rok_model_param_count(m) + m->vocab * m->hidden);
  g_autoptr(RokTrace) bad = rok_trace_new_for_stage(m, 4, &error);
  g_assert_null(bad);
  g_clear_error(&error);
}

/* Interleaving: stage 1 of 4 with 2 chunks holds model chunks 1 and 5. */
static void test_interleaved_trace(void) {
  const char *sets[] = {"pipeline_parallel=4", "virtual_stages=2", "global_batch=8", "data_parallel=1", NULL};
  g_autoptr(RokModel) m = load("gpt3-1.3b", sets); /* 24 layers: chunks of 3 */
  GError *error = NULL;
  g_autoptr(RokTrace) t = rok_trace_new_for_stage(m, 1, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(t->chunks, ==, 2);
  g_assert_cmpuint(count_named(t, "layer3."), >, 0);
  g_assert_cmpuint(count_named(t, "layer15."), >, 0);
  g_assert_cmpuint(count_named(t, "layer6."), ==, 0);
  g_assert_cmpuint(count_named(t, "recv1."), ==, 1);
  g_autoptr(RokTrace) last = rok_trace_new_for_stage(m, 3, &error);
  g_assert_cmpuint(count_named(last, "head.loss"), ==, 1);
  g_assert_cmpuint(rok_trace_op_chunk(last, last->ops->len - 1), ==, 1);
}

static void expect_error(const char *const *sets, const char *needle) {
  g_autofree char *path = test_bundled_path("models", "gpt3-1.3b");
  GError *error = NULL;
  g_autoptr(RokModel) m = rok_model_load(path, sets, &error);
  g_assert_null(m);
  g_assert_nonnull(error);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, needle));
  g_clear_error(&error);
}

static void test_bad_layouts(void) {
  expect_error((const char *[]){"pipeline_parallel=5", NULL}, "pipeline_parallel");
  expect_error((const char *[]){"pipeline_parallel=4", "virtual_stages=4", NULL}, "virtual_stages");
  expect_error((const char *[]){"virtual_stages=2", NULL}, "virtual_stages");
  expect_error((const char *[]){"pipeline_parallel=4", "first_stage_layers=5", NULL}, "first_stage_layers");
  expect_error((const char *[]){"pipeline_parallel=2", "first_stage_layers=5", "last_stage_layers=5", NULL},
               "first_stage_layers");
  expect_error((const char *[]){"pipeline_parallel=4", "virtual_stages=2", "global_batch=6", "data_parallel=1",
                                NULL},
               "virtual_stages");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/pipeline/megatron-gpt3-175b", test_megatron_gpt3);
  g_test_add_func("/pipeline/megatron-llama2-70b", test_megatron_llama2);
  g_test_add_func("/pipeline/bubble-fraction", test_bubble_fraction);
  g_test_add_func("/pipeline/bubble-simulated", test_bubble_simulated);
  g_test_add_func("/pipeline/stage-traces", test_stage_traces);
  g_test_add_func("/pipeline/interleaved-trace", test_interleaved_trace);
  g_test_add_func("/pipeline/bad-layouts", test_bad_layouts);
  return g_test_run();
}
