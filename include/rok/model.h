/* Model configuration: the shape of a transformer and how it is trained.
 *
 * Read from configs/models/NAME.json (schema in docs/model-config.md).
 * Every field is validated: types, ranges, divisibility (heads by tensor
 * parallelism, ...), and that the largest tensor sizes fit 64 bits. T5 adds
 * two optional fields: `decoder_layers` (default: layers) and
 * `decoder_seq_len` (default: seq_len). */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "rok/core.h"

G_BEGIN_DECLS

/* Limits the config and trace readers share (the config and trace readers).
 *
 * A trace holds about 35 ops and tensors per transformer layer, some 10 KB
 * in memory and 13-18 KB of rok-trace/1 text; 2048 layers (16 times the
 * deepest published LLM) make a trace of about 25 MB in memory and 26-37 MB
 * on disk (2.4 Mi values at most, T5), inside what rok_json_doc_parse()
 * accepts (128 MiB, 4 Mi values). Without a limit a config of 2^24 layers
 * asked the trace generator for some 170 GB. */
/* Transformer layers of one model: T5's encoder and decoder together. */
#define ROK_MAX_LAYERS 2048

typedef enum { ROK_ARCH_GPT, ROK_ARCH_BERT, ROK_ARCH_T5, ROK_ARCH_LLAMA } RokArch;
typedef enum { ROK_ATTENTION_STANDARD, ROK_ATTENTION_FLASH } RokAttention;
typedef enum { ROK_OPTIMIZER_ADAM, ROK_OPTIMIZER_SGD } RokOptimizer;
typedef enum { ROK_PRECISION_MIXED, ROK_PRECISION_PURE } RokPrecision;

typedef struct {
  char *name;   /* default: the file name without .json */
  char *source; /* free text: where the numbers come from (may be NULL) */
  RokArch arch;
  guint64 layers;         /* T5: encoder layers */
  guint64 decoder_layers; /* T5 only; 0 otherwise */
  guint64 hidden, heads, kv_heads, head_dim, ffn_hidden, vocab;
  guint64 seq_len;
  guint64 decoder_seq_len; /* T5 only; 0 otherwise */
  guint64 micro_batch, global_batch;
  RokDtype dtype;      /* bf16, fp16 or fp32: activations and 16-bit weights */
  double dropout;      /* probability; 0 removes masks and dropout copies */
  guint64 mask_bytes;  /* bytes per dropout-mask element: 1, 2 or 4 */
  RokAttention attention;
  guint64 tensor_parallel, pipeline_parallel, data_parallel;
  gboolean sequence_parallel;
  RokOptimizer optimizer;
  RokPrecision precision;
  guint64 zero_stage; /* 0..3 */
  /* Pipeline parallelism as Megatron-LM runs it: `virtual_stages` model
   * chunks per stage (interleaved 1F1B above 1; default 1), and optionally
   * the layers of the first and last stages (Megatron's
   * --decoder-first/last-pipeline-num-layers; 0: an even split), the other
   * stages sharing the rest evenly. */
  guint64 virtual_stages;
  guint64 first_stage_layers, last_stage_layers;
} RokModel;

/* Load and validate a config; `overrides` (may be NULL) is a NULL-terminated
 * list of "key=value" from --set, applied before validation. */
RokModel *rok_model_load(const char *path, const char *const *overrides, GError **error);
RokModel *rok_model_parse(const char *name, const char *text, gsize length, const char *const *overrides,
                          GError **error);
/* A parsed document (which the overrides change) as a config. */
RokModel *rok_model_from_doc(RokJsonDoc *doc, const char *const *overrides, GError **error);
/* A config embedded in another file (a trace's "model" member). */
RokModel *rok_model_from_json(const RokJsonObj *obj, GError **error);
RokModel *rok_model_copy(const RokModel *model);
void rok_model_free(RokModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokModel, rok_model_free)

/* The config with every default filled in; reads back to an equal model. */
json_object *rok_model_to_json(const RokModel *model);

/* Names of enum values as they appear in configs ("gpt", "flash", ...). */
const char *rok_arch_name(RokArch arch);

/* Parameters of the whole model (all ranks together), embeddings included,
 * tied embeddings counted once. */
guint64 rok_model_param_count(const RokModel *model);
/* Parameters one GPU holds before ZeRO sharding: one tensor-parallel rank of
 * the first pipeline stage (which holds the embedding). */
guint64 rok_model_params_per_gpu(const RokModel *model);
/* Parameters one tensor-parallel rank of pipeline stage `stage` holds: its
 * layers, the embedding on the first stage, the final norm and output
 * head on the last (with a copy of a tied embedding, as Megatron-LM keeps
 * one there when pipelining). */
guint64 rok_model_stage_params(const RokModel *model, guint stage);
/* Bytes one layer saves for backward by the closed form of Korthikanti et
 * al. (sbh(34 + 5as/h) and its tensor/sequence-parallel, no-dropout and
 * flash variants), for GPT and BERT layers of the standard shape in 16-bit;
 * 0 where the formula does not apply. The trace counts the same tensors
 * exactly and adds what the formula leaves out (normalisation statistics,
 * flash attention's log-sum-exp). */
guint64 rok_model_reference_layer_bytes(const RokModel *model);
/* The layers pipeline stage `stage` (0-based, < pipeline_parallel) holds:
 * the first one's index in the model and how many (all its virtual chunks
 * together). */
void rok_model_stage_layers(const RokModel *model, guint stage, guint64 *first, guint64 *count);
/* Micro-batches per optimizer step on one data-parallel rank. */
guint64 rok_model_micro_batches_per_step(const RokModel *model);

G_END_DECLS
