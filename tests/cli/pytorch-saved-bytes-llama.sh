#!/bin/bash
# The trace of a Qwen2 layer (grouped-query attention, QKV biases) and of a
# Mixtral-style MoE layer against what PyTorch saves for backward in the
# same layer (tests/pytorch/saved_bytes_llama.py): within 1%. The layers
# come from the Hugging Face config.json files in tests/data/hf, shrunk
# with --set. Skips without PyTorch (Debian's python3-torch). Under the
# sanitizers rok's traces alone.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
require_torch
here=$(dirname "$0")
s=256 b=2 h=512 a=8 g=2

check() { # LABEL CONFIG FFN TORCH-ARGS -- ROK-ARGS
  local label=$1 config=$2 f=$3 torch_args=() torch_bytes
  shift 3
  while [ "$1" != -- ]; do torch_args+=("$1"); shift; done
  shift
  "$rok" trace "$here/../data/hf/$config.json" --set layers=2 --set hidden=$h --set heads=$a --set kv_heads=$g \
    --set ffn_hidden="$f" --set seq_len=$s --set micro_batch=$b --set global_batch=$b "$@" --json 2>/dev/null >"$tmp/trace.json"
  ! sanitized || return 0
  torch_bytes=$("$python" "$here/../pytorch/saved_bytes_llama.py" --seq $s --batch $b --hidden $h --heads $a \
    --kv-heads $g --ffn "$f" "${torch_args[@]}" | "$python" -c "import json,sys; print(json.load(sys.stdin)['saved_bytes'])")
  compare_saved_bytes "$label" "$tmp/trace.json" "$torch_bytes"
}
check "Qwen2 layer" qwen2-7b 1536 --qkv-bias --
check "Mixtral-style MoE layer (8 experts, top 2)" mixtral-8x7b-v0.1 1024 --experts 8 --top-k 2 -- \
  --set expert_ffn_hidden=1024
check "Qwen-MoE-style layer (8 experts, top 4, gated shared expert)" qwen1.5-moe-a2.7b 512 --experts 8 --top-k 4 \
  --qkv-bias --shared 1024 --shared-gate -- --set expert_ffn_hidden=512 --set experts=8 --set top_k=4 \
  --set shared_expert_ffn_hidden=1024
