/* Shared by the executor's end-to-end test binaries (test-exec-runner.c,
 * test-exec-chunk-integrity.c): the tiny GPT they run and the leak
 * suppressions PoCL needs. Included once per binary. */
#pragma once

/* PoCL keeps its LLVM compiler state until exit. Not our leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libpocl.so\nleak:libLLVM\n";
}

/* Two layers, two micro-batches of 2 x 32 tokens per step: a step runs in
 * well under a second on PoCL with 2 cores. */
#define TINY_GPT                                                                                                       \
  "{\"arch\": \"gpt\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, \"seq_len\": 32, \"micro_batch\": 2, "             \
  "\"global_batch\": 4, \"vocab\": 128, \"dropout\": 0.1}"

/* Mixture of experts at the same size: Mixtral-style (4 experts, top-2,
 * dropless, load-balancing loss) and Qwen-MoE-style (a gated shared expert,
 * QKV biases, a capacity factor that pads and drops). */
#define TINY_MIXTRAL                                                                                                   \
  "{\"arch\": \"llama\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 2, \"ffn_hidden\": 128, "         \
  "\"seq_len\": 32, \"micro_batch\": 2, \"global_batch\": 4, \"vocab\": 128, \"experts\": 4, \"top_k\": 2, "            \
  "\"expert_ffn_hidden\": 96, \"aux_loss\": 0.02}"
#define TINY_QWEN_MOE                                                                                                  \
  "{\"arch\": \"llama\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 2, \"ffn_hidden\": 128, "         \
  "\"seq_len\": 32, \"micro_batch\": 2, \"global_batch\": 4, \"vocab\": 128, \"experts\": 4, \"top_k\": 2, "            \
  "\"expert_ffn_hidden\": 48, \"shared_expert_ffn_hidden\": 96, \"shared_expert_gate\": true, \"qkv_bias\": true, "   \
  "\"capacity_factor\": 1.25, \"aux_loss\": 0.001}"
