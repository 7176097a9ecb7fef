#!/bin/bash
# Eager kernels ("kernels": "eager") against what PyTorch saves in a layer
# written as Hugging Face's eager code computes it
# (tests/pytorch/eager_saved_bytes.py): LLaMA (with and without
# grouped-query attention) and GPT-2 (with and without dropout), within 1%;
# the rotary tables, outside the layers in both, within 1% too. Fused
# kernels are checked by pytorch-saved-bytes.sh. Skips without PyTorch
# (Debian's python3-torch). Under the sanitizers rok's traces alone.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
require_torch
here=$(dirname "$0")

# PyTorch's CPU dropout keeps its mask in the activation dtype (2 bytes).
check() { # ARCH KV_HEADS FFN DROPOUT
  local arch=$1 kv=$2 ffn=$3 dropout=$4 s=256 b=2 h=512 a=8
  "$rok" trace gpt3-1.3b --set arch="\"$arch\"" --set layers=2 --set hidden=$h --set heads=$a --set kv_heads="$kv" \
    --set ffn_hidden="$ffn" --set seq_len=$s --set micro_batch=$b --set global_batch=$b --set data_parallel=1 \
    --set dropout="$dropout" --set mask_bytes=2 --set attention='"standard"' --set kernels='"eager"' \
    --json > "$tmp/trace.json"
  ! sanitized || return 0
  "$python" "$here/../pytorch/eager_saved_bytes.py" --arch "$arch" --seq $s --batch $b --hidden $h --heads $a \
    --kv-heads "$kv" --ffn "$ffn" --dropout "$dropout" > "$tmp/torch.json"
  "$python" - "$tmp/trace.json" "$tmp/torch.json" "$arch kv_heads=$kv dropout=$dropout" <<'PY'
import json, sys
t, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
layer = sum(x['bytes'] for x in t['tensors'] if x['layer'] == 1 and x['needed_by'])
tables = sum(x['bytes'] for x in t['tensors'] if x['name'] in ('input.rotary_cos', 'input.rotary_sin'))
ok = True
for what, r, q in (("layer", layer, p['saved_bytes']), ("rotary tables", tables, p['outside_bytes'])):
    err = abs(r - q) / q if q else abs(r)
    print(f"{sys.argv[3]}, {what}: rok {r} bytes, PyTorch {q} bytes, {100 * err:.3f}% apart")
    ok &= err < 0.01
sys.exit(0 if ok else 1)
PY
}
check llama 8 1376 0
check llama 2 1376 0
check gpt 8 2048 0.1
check gpt 8 2048 0
