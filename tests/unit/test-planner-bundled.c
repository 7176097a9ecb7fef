/* Every bundled model, each on one of the bundled machines in turn, at
 * several budgets: the plan fits, is never slower than a baseline that
 * fits, a budget below the least is refused, and the curve is monotone.
 * The searches are cut short (few refining runs): these properties hold
 * whatever the search finds. (tests/cli/plan.sh runs each model on two
 * other machines, through the command.) Under the sanitizers, every
 * sixth model. */
#include <string.h>

#include "rok/core.h"
#include "rok/model.h"
#include "rok/plan.h"

/* Sanitizers slow the planner tenfold: then every sixth model only
 * (cli/plan.sh takes others there). */
#if defined(__SANITIZE_ADDRESS__)
#define STRIDE 6
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRIDE 6
#endif
#endif
#ifndef STRIDE
#define STRIDE 1
#endif

static GPtrArray *names(const char *kind) {
  g_autofree char *dir = g_build_filename(g_getenv("ROK_SOURCE_DIR"), "configs", kind, NULL);
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  g_assert_nonnull(d);
  GPtrArray *list = g_ptr_array_new_with_free_func(g_free);
  for (const char *entry; (entry = g_dir_read_name(d)) != NULL;)
    if (g_str_has_suffix(entry, ".json"))
      g_ptr_array_add(list, g_build_filename(dir, entry, NULL));
  g_ptr_array_sort(list, (GCompareFunc)g_strcmp0);
  return list;
}

static void check_plan(RokPlanner *planner, guint64 budget, const char *what) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokSimResult) r = NULL;
  g_autoptr(RokStepPlan) plan = rok_planner_plan(planner, budget, &r, &error);
  if (plan == NULL)
    g_error("%s: %s", what, error->message);
  g_assert_cmpuint(r->peak_bytes, <=, budget);
  for (guint b = 0; b < ROK_STRATEGY_BASELINE_COUNT; b++) {
    g_autoptr(RokSimResult) br = NULL;
    g_autoptr(RokStepPlan) bp = rok_planner_baseline(planner, b, budget, &br, NULL);
    /* As fast, or within the wear tolerance and writing less to the SSDs. */
    gboolean wears_less = r->nvme_write_bytes < br->nvme_write_bytes ||
                          (r->nvme_write_bytes == br->nvme_write_bytes &&
                           r->pcie_d2h_bytes + r->pcie_h2d_bytes <= br->pcie_d2h_bytes + br->pcie_h2d_bytes);
    if (bp != NULL && br->peak_bytes <= budget && br->step_ns < r->step_ns &&
        (!wears_less || (double)r->step_ns > (double)br->step_ns * (1 + ROK_PLAN_WEAR_TOLERANCE)))
      g_error("%s: %s takes %.6f s, the plan %.6f s", what, rok_strategy_name(b), br->step_time_s, r->step_time_s);
  }
}

static void check_pair(const char *model_path, const char *hw_path) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokModel) model = rok_model_load(model_path, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
  g_autoptr(RokHw) hw = rok_hw_load(hw_path, &error);
  g_assert_no_error(error);
  RokPlannerOptions o;
  rok_planner_options_init(&o);
  o.polish_runs = 40;
  o.curve_polish_runs = 4;
  g_autoptr(RokPlanner) planner = rok_planner_new(trace, hw, &o, &error);
  g_assert_no_error(error);
  g_autofree char *what = g_strdup_printf("%s on %s", model->name, hw->name);
  g_autoptr(RokCurve) curve = rok_planner_curve(planner, 3, NULL, NULL, &error);
  g_assert_no_error(error);
  for (guint i = 1; i < curve->points->len; i++) {
    const RokCurvePoint *p = &g_array_index(curve->points, RokCurvePoint, i);
    const RokCurvePoint *q = &g_array_index(curve->points, RokCurvePoint, i - 1);
    g_assert_cmpfloat(p->step_time_s, <=, q->step_time_s * (1 + ROK_PLAN_WEAR_TOLERANCE));
    g_assert_cmpuint(p->peak_bytes, <=, p->budget_bytes);
  }
  guint64 least = curve->min_budget, most = curve->keep_budget;
  const guint64 budgets[] = {least, least + (most - least) / 3, hw->gpu.memory};
  for (guint i = 0; i < G_N_ELEMENTS(budgets); i++)
    if (budgets[i] >= least)
      check_plan(planner, budgets[i], what);
  g_autoptr(RokStepPlan) none = rok_planner_plan(planner, least - 1, NULL, &error);
  g_assert_null(none);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_NO_FIT);
}

static void test_bundled(void) {
  g_autoptr(GPtrArray) models = names("models"), machines = names("hw");
  g_assert_cmpuint(models->len, >=, 5);
  g_assert_cmpuint(machines->len, >=, 2);
  for (guint m = 0; m < models->len; m += STRIDE)
    for (guint h = 0; h < machines->len; h++)
      if (h == m % machines->len)
        check_pair(g_ptr_array_index(models, m), g_ptr_array_index(machines, h));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/planner/bundled", test_bundled);
  return g_test_run();
}
