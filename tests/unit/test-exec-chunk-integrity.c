/* The executor's per-chunk integrity check, through the public API: one
 * byte of one chunk in the middle of a multi-chunk tensor is flipped on
 * disk (corrupt@read:N), and the run must stop naming exactly that chunk:
 * the tensor, the micro-batch, the chunk, its size, the data file and the
 * chunk's offset in it. The whole-tensor check would catch the corruption
 * too, but only after every chunk went to the device, and it can name no
 * more than the last chunk: asserting the chunk and its offset is what
 * fails when the per-chunk check is gone (issue 11). */
#include <glib.h>
#include <glib/gstdio.h>

#ifndef ROK_WITH_OPENCL
int main(void) {
  return 77; /* built without OpenCL */
}
#else

#include <string.h>

#include "rok/core.h"
#include "rok/exec.h"
#include "rok/schedule.h"
#include "rok/sim.h"
#include "test-exec-common.h"

/* Layer 0's fc1 output of the tiny GPT is 2 x 32 x 256 fp32 values =
 * 32 KiB: eight 4 KiB chunks. */
#define TENSOR "layer0.mlp.fc1_out"
#define SLOT ((guint64)4096)

static gboolean no_device;

static RokSchedule *one_tensor_to_nvme(const RokTrace *trace, const RokHw *hw, guint64 *bytes) {
  g_autoptr(GError) error = NULL;
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  *bytes = 0;
  for (guint t = 0; t < plan->n_tensors; t++)
    if (g_str_equal(rok_trace_tensor(trace, t)->name, TENSOR)) {
      plan->decisions[t] = ROK_DECISION_OFFLOAD_NVME;
      *bytes = rok_trace_tensor(trace, t)->bytes;
    }
  g_assert_cmpuint(*bytes, ==, 8 * SLOT);
  RokSchedule *s = rok_sim_schedule_new(trace, hw, plan, "one-tensor", hw->gpu.memory, &error);
  g_assert_no_error(error);
  /* Both micro-batches read it back from the disk (not from staging), so
   * the store's reads are its chunks in order: 1-8 micro-batch 0, 9-16
   * micro-batch 1. */
  json_object *read = NULL;
  g_assert_true(json_object_object_get_ex(s->predicted, "nvme_read_bytes", &read));
  g_assert_cmpuint(json_object_get_uint64(read), ==, 2 * *bytes);
  return s;
}

static RokExecReport *run(const RokSchedule *s, const char *dir, const char *faults, GError **error) {
  const char *dirs[] = {dir, NULL};
  RokExecOptions o;
  rok_exec_options_init(&o);
  o.dirs = dirs;
  o.repeat = 1;
  o.slot_bytes = SLOT;
  o.faults = faults;
  return rok_exec_run(s, &o, error);
}

/* Read 11 is chunk 2 of micro-batch 1's copy. Micro-batch 0's copy was
 * freed on the disk before micro-batch 1's was written, so micro-batch 1's
 * sits at the start of the one data file: chunk 2 at 2 slots. */
static void test_chunk_named(gconstpointer data) {
  const char *dir = data;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_strdup_printf("%s/configs/hw/cpu-2core-virtio.json", g_getenv("ROK_SOURCE_DIR"));
  g_autoptr(RokHw) hw = rok_hw_load(path, &error);
  g_assert_no_error(error);
  g_autoptr(RokModel) model = rok_model_parse("tiny-gpt", TINY_GPT, strlen(TINY_GPT), NULL, &error);
  g_assert_no_error(error);
  g_autoptr(RokTrace) trace = rok_trace_new_from_model(model, &error);
  g_assert_no_error(error);
  guint64 bytes = 0;
  g_autoptr(RokSchedule) s = one_tensor_to_nvme(trace, hw, &bytes);

  g_autoptr(RokExecReport) clean = run(s, dir, "", &error);
  if (clean == NULL && g_error_matches(error, ROK_ERROR, ROK_ERROR_DEVICE)) {
    g_printerr("no usable OpenCL device: %s\n", error->message);
    no_device = TRUE;
    g_test_skip("no OpenCL device");
    return;
  }
  g_assert_no_error(error);
  g_assert_cmpuint(clean->integrity_failures, ==, 0);

  g_autoptr(RokExecReport) r = run(s, dir, "corrupt@read:11", &error);
  g_assert_null(r);
  g_assert_error(error, ROK_ERROR, ROK_ERROR_INTEGRITY);
  g_test_message("%s", error->message);
  g_autofree char *size = rok_units_format_size(SLOT);
  g_autofree char *quoted_size = g_regex_escape_string(size, -1);
  g_autofree char *quoted_dir = g_regex_escape_string(dir, -1);
  g_autofree char *pattern = g_strdup_printf(
      "^integrity: tensor '" TENSOR "' \\(micro-batch 1\\) came back different from what left the device: "
      "chunk 2 of 8 \\(%s\\) read from %s/rok-[^/]+/[^/ ]+ at offset %" G_GUINT64_FORMAT "$",
      quoted_size, quoted_dir, 2 * SLOT);
  if (!g_regex_match_simple(pattern, error->message, 0, 0))
    g_error("the message\n  %s\ndoes not name the chunk as\n  %s", error->message, pattern);
  /* Nothing left on the disk. */
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  g_assert_null(g_dir_read_name(d));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("rok-chunk-test-XXXXXX", &error);
  g_assert_no_error(error);
  g_test_add_data_func("/exec-chunk-integrity/chunk-named", dir, test_chunk_named);
  int status = g_test_run();
  g_rmdir(dir);
  return no_device ? 77 : status;
}

#endif /* ROK_WITH_OPENCL */
