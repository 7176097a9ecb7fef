/* Hardware profiles of parallel jobs: the interconnect and its collectives,
 * node profiles and one GPU's share of a node. */
#include <math.h>
#include <string.h>

#include "rok/core.h"
#include "rok/hw.h"
#include "rok/plan.h"
#include "rok/trace.h"
#include "test-bundled.h"

static void assert_close(double a, double b) {
  g_assert_cmpfloat(fabs(a - b), <=, 1e-12 * MAX(fabs(a), fabs(b)) + 1e-18);
}

/* The alpha-beta formulas, over random sizes and group sizes. */
static void test_collectives(void) {
  g_autoptr(RokHw) hw = test_bundled_hw("h100-80g-sxm-4xgen5");
  double alpha = (double)hw->interconnect.intra_node_latency / 1e9, beta = hw->interconnect.intra_node_bandwidth;
  GRand *rand = g_rand_new_with_seed(7);
  for (guint i = 0; i < 500; i++) {
    double bytes = g_rand_double_range(rand, 1, 1e10), n = g_rand_int_range(rand, 2, 9);
    double ring = 2 * (n - 1) * alpha + 2 * (n - 1) / n * bytes / beta;
    double tree = 2 * ceil(log2(n)) * alpha + 2 * bytes / beta;
    assert_close(rok_hw_collective_s(hw, ROK_COLLECTIVE_ALL_REDUCE, bytes, (guint64)n, FALSE), MIN(ring, tree));
    assert_close(rok_hw_collective_s(hw, ROK_COLLECTIVE_ALL_GATHER, bytes, (guint64)n, FALSE),
                 (n - 1) * alpha + (n - 1) / n * bytes / beta);
    assert_close(rok_hw_collective_s(hw, ROK_COLLECTIVE_REDUCE_SCATTER, bytes, (guint64)n, FALSE),
                 (n - 1) * alpha + (n - 1) / n * bytes / beta);
    /* Between nodes: the slower figures. */
    g_assert_cmpfloat(rok_hw_collective_s(hw, ROK_COLLECTIVE_ALL_GATHER, bytes, (guint64)n, TRUE), >,
                      rok_hw_collective_s(hw, ROK_COLLECTIVE_ALL_GATHER, bytes, (guint64)n, FALSE));
  }
  g_rand_free(rand);
  assert_close(rok_hw_collective_s(hw, ROK_COLLECTIVE_SEND, 1e9, 2, FALSE), alpha + 1e9 / beta);
  g_assert_cmpfloat(rok_hw_collective_s(hw, ROK_COLLECTIVE_ALL_REDUCE, 1e9, 1, FALSE), ==, 0);
  g_autoptr(RokHw) alone = test_bundled_hw("cpu-2core-virtio");
  g_assert_cmpfloat(rok_hw_collective_s(alone, ROK_COLLECTIVE_ALL_REDUCE, 1e9, 8, FALSE), ==, 0);
}

/* Written and read back: the same profile, interconnect and node included. */
static void test_round_trip(void) {
  const char *names[] = {"h100-80g-sxm-4xgen5", "dgx-h100-8x-gen5", "ssdtrain-2x-a100-7xp5800x"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(RokHw) hw = test_bundled_hw(names[i]);
    for (guint share = 0; share < 2; share++) {
      GError *error = NULL;
      g_autoptr(RokHw) h = share ? rok_hw_gpu_share(hw, hw->node.gpus - 1, &error) : rok_hw_copy(hw);
      g_assert_no_error(error);
      json_object *json = rok_hw_to_json(h);
      const char *text = json_object_to_json_string(json);
      g_autoptr(RokHw) back = rok_hw_parse("back", text, strlen(text), &error);
      g_assert_no_error(error);
      json_object *again = rok_hw_to_json(back);
      g_assert_cmpstr(json_object_to_json_string(again), ==, text);
      json_object_put(again);
      g_assert_cmpuint(back->node.gpus, ==, h->node.gpus);
      g_assert_cmpuint(back->nvme.devices, ==, h->nvme.devices);
      g_assert_cmpuint(back->host.memory, ==, h->host.memory);
      json_object_put(json);
    }
  }
}

/* An 8-GPU node with 8 SSDs gives each GPU one SSD's bandwidth and an
 * eighth of host and pinned memory; SSDTrain's node gives its GPUs arrays
 * of 3 and 4 drives, and the command line plans the GPU with 3. */
static void test_node_share(void) {
  g_autoptr(RokHw) dgx = test_bundled_hw("dgx-h100-8x-gen5");
  GError *error = NULL;
  for (guint64 g = 0; g < 8; g++) {
    g_autoptr(RokHw) share = rok_hw_gpu_share(dgx, g, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(share->nvme.devices, ==, 1);
    g_assert_cmpfloat(rok_hw_nvme_write_bandwidth(share), ==, dgx->nvme.write_bandwidth);
    g_assert_cmpuint(share->host.memory, ==, dgx->host.memory / 8);
    g_assert_cmpuint(share->host.pinned_buffer, ==, dgx->host.pinned_buffer / 8);
    g_assert_true(share->node.is_share);
  }
  g_autoptr(RokHw) none = rok_hw_gpu_share(dgx, 8, &error);
  g_assert_null(none);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_USAGE);
  g_clear_error(&error);
  g_autoptr(RokHw) ssdtrain = test_bundled_hw("ssdtrain-2x-a100-7xp5800x");
  g_assert_cmpuint(rok_hw_node_weakest_gpu(ssdtrain), ==, 0);
  g_autoptr(RokHw) first = rok_hw_gpu_share(ssdtrain, 0, &error);
  g_autoptr(RokHw) second = rok_hw_gpu_share(ssdtrain, 1, &error);
  g_assert_cmpuint(first->nvme.devices, ==, 3);
  g_assert_cmpuint(second->nvme.devices, ==, 4);
}

/* The offload step of gpt3-13b with tensor parallelism 2 on the A100 PCIe
 * machine, its GPUs talking over PCIe or not. */
static double offload_step(gboolean pcie, const char *tp, gdouble *copy_s) {
  g_autoptr(RokHw) hw = test_bundled_hw("a100-40g-pcie4-4xp5800x");
  hw->interconnect.intra_node_pcie = pcie;
  const char *sets[] = {tp, NULL};
  g_autoptr(RokModel) model = test_bundled_model("gpt3-13b", sets);
  GError *error = NULL;
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  g_autoptr(RokStepPlan) plan = rok_strategy_plan(ROK_STRATEGY_OFFLOAD, trace, hw, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(RokSim) sim = rok_sim_new(trace, hw, &error);
  g_autoptr(RokSimResult) r = rok_sim_run(sim, plan, &error);
  g_assert_no_error(error);
  *copy_s = (double)(r->busy_ns[ROK_STREAM_D2H] + r->busy_ns[ROK_STREAM_NVME_WRITE]) / 1e9;
  return r->step_time_s;
}

/* Collectives over PCIe take their share of the link from the copies:
 * the offloads take longer, the step no less; without tensor
 * parallelism there is nothing on the link and nothing changes. */
static void test_pcie_contention(void) {
  double alone_copy, shared_copy, a, b;
  double alone = offload_step(FALSE, "tensor_parallel=2", &alone_copy);
  double shared = offload_step(TRUE, "tensor_parallel=2", &shared_copy);
  g_assert_cmpfloat(shared_copy, >, alone_copy);
  g_assert_cmpfloat(shared, >=, alone);
  g_assert_cmpfloat(offload_step(FALSE, "tensor_parallel=1", &a), ==, offload_step(TRUE, "tensor_parallel=1", &b));
  g_assert_cmpfloat(a, ==, b);
}

static void expect_error(const char *node, const char *needle) {
  g_autofree char *text = g_strdup_printf(
      "{\"gpu\": {\"memory\": \"80GiB\", \"peak_flops\": 1e15, \"matmul_efficiency\": 0.5, \"hbm_bandwidth\": 3e12},"
      " \"pcie\": {\"h2d_bandwidth\": 5e10, \"d2h_bandwidth\": 5e10}, \"host\": {\"memory\": \"1TiB\","
      " \"pinned_buffer\": \"8GiB\", \"memcpy_bandwidth\": 4e10}, \"nvme\": {\"devices\": 6, \"read_bandwidth\": 7e9,"
      " \"write_bandwidth\": 3e9, \"capacity\": \"4TB\"}, \"node\": %s}",
      node);
  GError *error = NULL;
  g_autoptr(RokHw) hw = rok_hw_parse("node.json", text, strlen(text), &error);
  g_assert_null(hw);
  g_assert_nonnull(error);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, needle));
  g_clear_error(&error);
}

static void test_bad_nodes(void) {
  expect_error("{\"gpus\": 4}", "does not divide nvme.devices");
  expect_error("{\"gpus\": 2, \"nvme_devices\": [3, 2]}", "adds up to 5 drives");
  expect_error("{\"gpus\": 2, \"nvme_devices\": [6]}", "each of the node's 2 GPUs");
  expect_error("{\"gpus\": 0}", "gpus");
  expect_error("{\"gpus\": 2, \"drives\": 3}", "drives");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/interconnect/collectives", test_collectives);
  g_test_add_func("/interconnect/round-trip", test_round_trip);
  g_test_add_func("/interconnect/node-share", test_node_share);
  g_test_add_func("/interconnect/bad-nodes", test_bad_nodes);
  g_test_add_func("/interconnect/pcie-contention", test_pcie_contention);
  return g_test_run();
}
