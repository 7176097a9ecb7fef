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
/* Micro-batches of one step on one GPU (global_batch / (micro_batch ×
 * data_parallel)): a schedule holds every action of every one, so its size
 * and the simulator's memory grow with them; 2048 of a 2-layer toy model
 * already make a 66 MB rok-schedule/1, and 500,000 took the planner past
 * 9 GB. GPT-3 175B's batch of 1536 sequences at micro-batch 1 without data
 * parallelism is 1536. */
#define ROK_MAX_MICRO_BATCHES_PER_STEP 4096

typedef enum { ROK_ARCH_GPT, ROK_ARCH_BERT, ROK_ARCH_T5, ROK_ARCH_LLAMA } RokArch;
typedef enum { ROK_ATTENTION_STANDARD, ROK_ATTENTION_FLASH } RokAttention;
/* adam and adamw keep the same states; sgd keeps a momentum buffer unless
 * "momentum": false; adam8bit: bitsandbytes' block-wise 8-bit states;
 * adafactor: factored second moment, no first moment; apollo (rank
 * "optimizer_rank") and apollo_mini (rank 1): Zhu et al., arXiv 2412.05270.
 * States and step costs: src/model/fixed.c. */
typedef enum {
  ROK_OPTIMIZER_ADAM,
  ROK_OPTIMIZER_SGD,
  ROK_OPTIMIZER_ADAMW,
  ROK_OPTIMIZER_ADAM8BIT,
  ROK_OPTIMIZER_ADAFACTOR,
  ROK_OPTIMIZER_APOLLO,
  ROK_OPTIMIZER_APOLLO_MINI,
} RokOptimizer;
/* Whose accounting of weights, gradients and optimizer states (docs in
 * README, "Fixed memory"): Megatron-LM (fp32 main gradients; zero_stage 1
 * is its distributed optimizer) or DeepSpeed ZeRO 0-3. */
typedef enum { ROK_FRAMEWORK_MEGATRON, ROK_FRAMEWORK_DEEPSPEED } RokFramework;
/* How LoRA's frozen base weights are stored: in the model's dtype, int8
 * (LLM.int8) or nf4 (QLoRA, double-quantised). */
typedef enum { ROK_BASE_DTYPE, ROK_BASE_INT8, ROK_BASE_NF4 } RokBaseFormat;
/* The kernels a framework runs: fused (Megatron-LM, Transformer Engine:
 * what rok counted from the start) or eager PyTorch as Hugging Face's
 * eager code runs it (fp32 copies in RMSNorm, fp32 softmax in LLaMA's
 * attention, unfused SwiGLU and tanh-GeLU, K and V repeated for GQA). */
typedef enum { ROK_KERNELS_FUSED, ROK_KERNELS_EAGER } RokKernels;
/* The loss head: fp32 softmax probabilities saved (PyTorch's
 * cross-entropy on upcast logits), a fused cross-entropy that saves the
 * logits and a log-sum-exp per token, or a chunked fused linear
 * cross-entropy (Liger Kernel) that never holds all the logits. */
typedef enum { ROK_LOSS_FP32_SOFTMAX, ROK_LOSS_FUSED, ROK_LOSS_CHUNKED } RokLoss;
/* FP8 training as Transformer Engine runs it: each layer's linears save
 * their input as an e4m3 copy with an fp32 scale, and keep fp8 copies of
 * their weights and transposes; "hybrid" takes e5m2 for gradients, which
 * are not saved, so it saves what "e4m3" saves. */
typedef enum { ROK_FP8_NONE, ROK_FP8_E4M3, ROK_FP8_HYBRID } RokFp8;
/* Weight matrices of a layer that LoRA adapts (bits). */
typedef enum {
  ROK_LORA_QKV = 1 << 0,  /* q, k and v projections */
  ROK_LORA_PROJ = 1 << 1, /* attention output projection */
  ROK_LORA_FC1 = 1 << 2,  /* MLP up (and gate) projections */
  ROK_LORA_FC2 = 1 << 3,  /* MLP down projection */
} RokLoraTarget;
typedef enum { ROK_PRECISION_MIXED, ROK_PRECISION_PURE } RokPrecision;

/* What sets families apart beyond their shape (config-arch.c; DESIGN.md,
 * "Model config"). Defaults keep the four base architectures as they were. */
typedef struct {
  gboolean qkv_bias;          /* biases on q, k, v (Qwen2); GPT and BERT have every bias */
  gboolean tied_embeddings;   /* output head shares the token embedding */
  guint64 vocab_divisible_by; /* Megatron's padding: vocab rounded up to a multiple of this × tensor_parallel;
                                 0: only to a multiple of tensor_parallel, counted unpadded */
  guint64 positions;          /* rows of the learned position table (gpt, bert); 0: rotary */
  gboolean parallel_residual; /* GPT-NeoX: x + attn(norm1(x)) + mlp(norm2(x)) */
  gboolean post_norms;        /* Gemma 2: a norm after attention and after the MLP too */
  guint64 sliding_window;     /* keys a query sees; 0: full causal attention */
  guint64 window_skip;        /* every n-th layer (from the n-th) attends fully; 0: all layers windowed */
  /* Mixture of experts (rok_model_is_moe_layer()): experts = 0 is dense. */
  guint64 experts, top_k;
  guint64 expert_ffn_hidden;        /* one routed expert's FFN width */
  guint64 shared_expert_ffn_hidden; /* all shared experts together; 0: none */
  gboolean shared_expert_gate;      /* Qwen2-MoE: sigmoid(x·w) scales the shared expert */
  gboolean router_bias;             /* DeepSeek-V3: a per-expert score correction */
  guint64 moe_first_dense;          /* leading dense layers (DeepSeek's first_k_dense_replace) */
  guint64 moe_layer_freq;           /* from there, every n-th layer is MoE */
  double capacity_factor;           /* 0: dropless, expert loads balanced on average */
  double aux_loss;                  /* load-balancing loss coefficient; 0: none */
  guint64 expert_parallel;          /* experts split over this many ranks */
  /* Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank = 0: none. */
  guint64 q_lora_rank, kv_lora_rank, rope_head_dim, v_head_dim;
} RokModelArchitecture;

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
  RokModelArchitecture a; /* details beyond the shape (config-arch.c) */
  /* How the framework trains it (src/model/config-training.c). */
  struct {
    RokFramework framework;
    RokDtype grad_dtype;      /* gradient buffers; default fp32 under megatron+mixed, else dtype */
    gboolean momentum;        /* sgd only */
    guint64 optimizer_rank;   /* apollo: rank r of the projected states; apollo_mini: 1 */
    guint64 lora_rank;        /* 0: no LoRA */
    guint lora_targets;       /* RokLoraTarget bits */
    RokBaseFormat lora_base;  /* frozen base weights under LoRA */
    guint64 frozen_layers;    /* the embedding and the first N layers are frozen */
    RokKernels kernels;
    RokLoss loss;
    guint64 loss_chunk;       /* chunked loss: tokens per chunk (0 before defaults: Liger's choice) */
    RokFp8 fp8;
    /* DeepSpeed ZeRO's communication buffers (fixed.c, "framework
     * temporaries"); set under framework "deepspeed" with zero_stage >= 1
     * only, 0 / FALSE otherwise. Sizes in elements, as DeepSpeed counts. */
    struct {
      guint64 reduce_bucket_size;     /* default 5e8 */
      gboolean contiguous_gradients;  /* default true: the reduce buckets exist */
      gboolean overlap_comm;          /* ZeRO-1/2: two reduce buckets; default false (ZeRO-3: always true) */
      guint64 prefetch_bucket_size;   /* ZeRO-3's stage3_prefetch_bucket_size, default 5e7 */
      guint64 max_live_parameters;    /* ZeRO-3's stage3_max_live_parameters, default 1e9 */
    } ds;
  } train;
} RokModel;

/* Load and validate a config; `overrides` (may be NULL) is a NULL-terminated
 * list of "key=value" from --set, applied before validation. */
RokModel *rok_model_load(const char *path, const char *const *overrides, GError **error);
RokModel *rok_model_parse(const char *name, const char *text, gsize length, const char *const *overrides,
                          GError **error);
/* A config as the user gave it, kept to be parsed again with more
 * overrides at each point of a sweep or a search: its name for messages
 * (normally its path), its text and the user's --set overrides. */
typedef struct {
  char *name, *text;
  gsize length;
  char **sets; /* NULL-terminated; never NULL */
} RokModelSource;
/* The source of `text`, checked by parsing it with `overrides`; `model`
 * (may be NULL) receives that parse. */
RokModelSource *rok_model_source_new(const char *name, const char *text, gsize length, const char *const *overrides,
                                     RokModel **model, GError **error);
void rok_model_source_free(RokModelSource *source);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RokModelSource, rok_model_source_free)
/* The config with the source's overrides, then `more` (may be NULL). */
RokModel *rok_model_source_load(const RokModelSource *source, const char *const *more, GError **error);
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
/* Whether transformer layer `layer` (0-based) has a mixture of experts. */
gboolean rok_model_is_moe_layer(const RokModel *model, guint64 layer);
/* The sliding window of `layer` (0: full attention). */
guint64 rok_model_layer_window(const RokModel *model, guint64 layer);
/* The vocabulary as the embedding holds it (padded, all ranks together). */
guint64 rok_model_padded_vocab(const RokModel *model);
/* What rok does not model in this config (the CLI prints them as
 * warnings), and what it assumes (notes): one line each, NULL-terminated,
 * empty when there is none. */
char **rok_model_unmodelled(const RokModel *model);
char **rok_model_assumptions(const RokModel *model);

/* Hugging Face config.json files (hf-import.c): a document is one when its
 * root has "model_type" or "architectures". Reading one maps it to a rok
 * config (printed by `rok import hf`), then applies `overrides` (the
 * training side: seq_len, micro_batch, parallelism). An unknown model_type
 * is ROK_ERROR_INPUT naming it and the supported ones. */
gboolean rok_model_doc_is_hf(const RokJsonDoc *doc);
/* `notes` (may be NULL) receives what rok approximates, NULL-terminated. */
json_object *rok_model_hf_to_config(const RokJsonDoc *doc, char ***notes, GError **error);
/* The supported model_type values, NULL-terminated. */
const char *const *rok_model_hf_types(void);
/* Megatron-LM's command-line arguments (megatron-import.c) as a rok config;
 * an argument rok does not know, or one it cannot model, is
 * ROK_ERROR_USAGE naming it. */
json_object *rok_model_megatron_to_config(int argc, const char *const *argv, char ***notes, GError **error);
/* One term of the fixed memory on one GPU: what it is, its bytes, and the
 * public accounting it follows. */
typedef enum { ROK_FIXED_WEIGHTS, ROK_FIXED_GRADIENTS, ROK_FIXED_OPTIMIZER } RokFixedKind;
typedef struct {
  const char *name;
  RokFixedKind kind;
  guint64 bytes;
  const char *source;
} RokFixedTerm;
#define ROK_FIXED_MAX_TERMS 14
/* The fixed memory's terms (weights, gradients, fp32 gradient partition,
 * master weights, optimizer states, ZeRO-3's gathered buffers, DeepSpeed's
 * reduce and prefetch buckets...) on one
 * GPU of pipeline stage `stage` (its parameters as
 * rok_model_stage_params; stage 0 is the first, Megatron-LM's most loaded
 * shard) into `terms`; returns how many. */
guint rok_model_fixed_terms(const RokModel *model, guint stage, RokFixedTerm terms[ROK_FIXED_MAX_TERMS]);
/* Parameters one GPU of `stage` trains (adapters under LoRA; not the
 * frozen layers). */
guint64 rok_model_trainable_params_per_gpu(const RokModel *model, guint stage);
/* Bytes one optimizer step reads and writes on one GPU of `stage`: the
 * optimizer's own traffic per trained parameter, gradient-norm clipping
 * and (fp16) the loss-scale check, over the shard this rank updates. */
guint64 rok_model_optimizer_step_bytes(const RokModel *model, guint stage);
/* FLOPs of one optimizer step's GEMMs on one GPU of `stage`: APOLLO's
 * projection of each trained attention and MLP gradient (2·r·rows·cols),
 * over this rank's shard; 0 for the element-wise optimizers. */
guint64 rok_model_optimizer_step_flops(const RokModel *model, guint stage);
const char *rok_optimizer_name(RokOptimizer optimizer);
const char *rok_framework_name(RokFramework framework);

/* Micro-batches per optimizer step on one data-parallel rank. */
guint64 rok_model_micro_batches_per_step(const RokModel *model);

G_END_DECLS
