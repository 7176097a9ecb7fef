/* How fast a sweep runs, and how it scales with threads: GPT-3 13B on
 * SSDTrain's machine, micro-batch 1:64 (64 points), the five baselines, then
 * all six strategies (rok plans every point with the planner), timed inside
 * the process (rok_sweep_run only) with 1 thread, 2 threads and one per
 * core. Each case repeats for at least MIN_SECONDS; the figure is the
 * fastest run. Also prints the CPU time the process used per second of
 * wall time, which shows when other work on the machine took the cores.
 *
 * Usage: bench-sweep [SOURCE_DIR] (default: ROK_SOURCE_DIR). Exits 1 if a
 * config cannot be loaded or two thread counts give different results. */
#include <stdio.h>
#include <stdlib.h>

#include "rok/core.h"
#include "rok/sweep.h"

#define MIN_SECONDS 1.0

static double now(void) {
  return (double)g_get_monotonic_time() / 1e6;
}

static RokSweepSpec *load(const char *root, const char *strategies, GError **error) {
  g_autofree char *model = g_build_filename(root, "configs", "models", "gpt3-13b.json", NULL);
  g_autofree char *hw_path = g_build_filename(root, "configs", "hw", "a100-40g-pcie4-4xp5800x.json", NULL);
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!g_file_get_contents(model, &text, &length, error))
    return NULL;
  g_autoptr(RokHw) hw = rok_hw_load(hw_path, error);
  g_autoptr(RokSweepSpec) spec = hw == NULL ? NULL : rok_sweep_spec_new(model, text, length, NULL, hw, error);
  if (spec == NULL || !rok_sweep_spec_set_axis(spec, ROK_SWEEP_MICRO_BATCH, "1:64", error) ||
      !rok_sweep_spec_set_strategies(spec, strategies, error))
    return NULL;
  return g_steal_pointer(&spec);
}

/* The fastest of repeated runs; the results' CSV in *csv. */
static double bench(const RokSweepSpec *spec, guint threads, char **csv, double *utilisation) {
  double best = G_MAXDOUBLE, start = now(), cpu = rok_host_own_cpu_seconds();
  do {
    double t = now();
    g_autoptr(RokSweep) sweep = rok_sweep_run(spec, threads, NULL, NULL, NULL);
    g_assert(sweep != NULL);
    best = MIN(best, now() - t);
    g_free(*csv);
    *csv = rok_sweep_to_csv(sweep);
  } while (now() - start < MIN_SECONDS);
  *utilisation = (rok_host_own_cpu_seconds() - cpu) / (now() - start);
  return best;
}

/* One set of strategies on 1, 2 and every core; FALSE when results differ. */
static gboolean bench_case(const RokSweepSpec *spec, const char *label) {
  guint cores = g_get_num_processors(), counts[] = {1, 2, cores};
  guint cases = cores > 2 ? 3 : 2;
  printf("%s: %u points\n", label, rok_sweep_spec_points(spec));
  g_autofree char *serial = NULL;
  double one = 0;
  for (guint i = 0; i < cases; i++) {
    g_autofree char *csv = NULL;
    double utilisation = 0, t = bench(spec, counts[i], &csv, &utilisation);
    if (i == 0) {
      one = t;
      serial = g_steal_pointer(&csv);
    } else if (g_strcmp0(csv, serial) != 0) {
      fprintf(stderr, "bench-sweep: %u threads gave other results than 1\n", counts[i]);
      return FALSE;
    }
    printf("  %2u thread%s %9.3f s  speed-up %.2fx  (%.2f CPUs busy)\n", counts[i], counts[i] == 1 ? " " : "s", t,
           one / t, utilisation);
  }
  return TRUE;
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : ROK_SOURCE_DIR;
  static const char *const cases[][2] = {
      {"keep,recompute,selective,offload,tba", "gpt3-13b on a100-40g-pcie4-4xp5800x, micro-batch 1:64, 5 baselines"},
      {"keep,recompute,selective,offload,tba,rok", "the same with rok as well (the planner at every point)"},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(RokSweepSpec) spec = load(root, cases[c][0], &error);
    if (spec == NULL) {
      fprintf(stderr, "bench-sweep: %s\n", error->message);
      return 1;
    }
    if (!bench_case(spec, cases[c][1]))
      return 1;
  }
  printf("  results identical on every thread count\n");
  return 0;
}
