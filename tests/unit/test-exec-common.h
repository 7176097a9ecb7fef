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
