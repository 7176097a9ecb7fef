/* Limits the config and trace readers share (private to src/model).
 *
 * A trace holds about 35 ops and tensors per transformer layer, some 10 KB
 * in memory and 13-18 KB of rok-trace/1 text; 2048 layers (16 times the
 * deepest published LLM) make a trace of about 25 MB in memory and 26-37 MB
 * on disk (2.4 Mi values at most, T5), inside what rok_json_doc_parse()
 * accepts (128 MiB, 4 Mi values). Without a limit a config of 2^24 layers
 * asked the trace generator for some 170 GB. */
#pragma once

/* Transformer layers of one model: T5's encoder and decoder together. */
#define ROK_MAX_LAYERS 2048
