#!/bin/bash
# The trace against what PyTorch itself saves for backward in an equivalent
# layer (tests/pytorch/saved_bytes.py): within 1%. Skips without PyTorch
# (Debian's python3-torch; `scripts/install-deps.sh --tests` installs it).
# Under the sanitizers rok's traces alone (PyTorch's side is no C).
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
require_torch
here=$(dirname "$0")

# PyTorch's CPU dropout keeps its mask in the activation dtype (2 bytes in
# bf16), where CUDA keeps 1-byte booleans: mask_bytes says which.
check() { # ARCH DROPOUT MASK_BYTES
  local arch=$1 dropout=$2 mask=$3 s=256 b=2 h=512 a=8
  local torch_bytes
  "$rok" trace gpt3-1.3b --set arch=$arch --set layers=2 --set hidden=$h --set heads=$a --set ffn_hidden=$((4 * h)) \
    --set seq_len=$s --set micro_batch=$b --set global_batch=$b --set data_parallel=1 \
    --set dropout="$dropout" --set mask_bytes="$mask" --json > "$tmp/trace.json"
  ! sanitized || return 0
  torch_bytes=$("$python" "$here/../pytorch/saved_bytes.py" --arch "$arch" --seq $s --batch $b \
    --hidden $h --heads $a --dropout "$dropout" | "$python" -c "import json,sys; print(json.load(sys.stdin)['saved_bytes'])")
  compare_saved_bytes "$arch dropout=$dropout" "$tmp/trace.json" "$torch_bytes"
}
check gpt 0.1 2
check gpt 0 1
check bert 0.1 2
check bert 0 1
