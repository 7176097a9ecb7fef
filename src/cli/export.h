/* `rok export`: what a framework can express of a plan (export-map.c) and
 * the command (cmd-export.c). */
#pragma once

#include <json-c/json.h>

#include "rok/hw.h"
#include "rok/sim.h"
#include "rok/trace.h"

/* A framework knob and the tensors (local names, "attn.norm_out") it covers. */
typedef struct {
  const char *knob;
  const char *const *names;
} RokExportGroup;

/* NULL-terminated; bit i of a mask is element i. */
extern const RokExportGroup cli_export_recompute_modules[];
extern const RokExportGroup cli_export_offload_modules[];

gboolean cli_export_in_group(const RokTensor *t, const RokExportGroup *group);

typedef struct {
  guint full_layers;        /* --recompute-granularity full --recompute-method block --recompute-num-layers */
  guint cpu_offload_layers; /* --cpu-offloading-num-layers */
  guint64 recompute_modules; /* selective: mask over cli_export_recompute_modules */
  guint64 offload_modules;   /* fine-grained offloading: mask over cli_export_offload_modules */
} RokExportMegatron;

void cli_export_megatron(const RokTrace *trace, const RokStepPlan *plan, RokExportMegatron *m);
RokStepPlan *cli_export_megatron_plan(const RokTrace *trace, const RokStepPlan *plan, const RokExportMegatron *m);

typedef struct {
  gboolean *checkpointed; /* per layer; g_free */
  guint n_checkpointed;
  gboolean cpu_checkpointing;
} RokExportDeepSpeed;

void cli_export_deepspeed(const RokTrace *trace, const RokStepPlan *plan, RokExportDeepSpeed *ds);
RokStepPlan *cli_export_deepspeed_plan(const RokTrace *trace, const RokStepPlan *plan, const RokExportDeepSpeed *ds);

/* What an export makes: the artifact (Megatron's command line, or a JSON
 * config), the closest plan the framework expresses, and notes on what it
 * gave up. */
typedef struct {
  char *arguments;
  json_object *config;
  RokStepPlan *closest;
  GPtrArray *notes; /* strings */
} Export;

void cli_export_note(Export *e, const char *format, ...) G_GNUC_PRINTF(2, 3);
/* Make the export of `plan` for framework `to` (megatron, deepspeed,
 * torch) into `e`; ROK_ERROR_USAGE for another framework. */
gboolean cli_export_run(Export *e, const char *to, const RokTrace *trace, const RokStepPlan *plan, GError **error);
void cli_export_clear(Export *e);
/* Exchange the contents of two exports. */
void cli_export_swap(Export *a, Export *b);
/* Simulate `e`'s closest plan into *closest_r; with `replan` (a plan of
 * the planner, not a baseline's, which its mapping reproduces), for
 * Megatron and DeepSpeed, replace `e` by the planner's plan at `budget`
 * with whole-layer decisions and the framework's tiers, mapped to the
 * framework, where that is faster within the budget (export-replan.c). */
gboolean cli_export_replan(Export *e, const char *to, const RokTrace *trace, const RokHw *hw, gboolean replan,
                           guint64 budget, RokSimResult **closest_r, GError **error);

/* rok-torch-policy/1 (export-torch.c). */
gboolean cli_export_torch(Export *e, const RokTrace *trace, const RokStepPlan *plan, GError **error);
