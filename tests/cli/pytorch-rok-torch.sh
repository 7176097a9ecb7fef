#!/bin/bash
# rok_torch (python/) with Debian's python3-torch on the CPU: plans applied
# in training give bitwise the gradients of keep, save per layer the bytes
# rok predicts, round-trip through capture and `rok plan`, and leave no
# files (tests/pytorch/test_rok_torch.py). Skips without PyTorch
# (`scripts/install-deps.sh --tests` installs it).
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
require_torch
here=$(cd "$(dirname "$0")" && pwd)
lib="$(dirname "$rok")/librok_torch_storage.so"
# A sanitizer build's storage library needs the ASan runtime loaded before
# anything else, which Debian's python is not: the library is tested in the
# plain build (and its C code under ASan through the storage unit tests).
# CMake says which build this is (asking ldd through `grep -q` under
# pipefail failed by SIGPIPE when grep stopped reading first).
if sanitized; then echo "sanitizer build: the Python bridge is tested in the plain build"; exit 77; fi
export PYTHONPATH="$here/../../python" ROK_TORCH_STORAGE_LIB="$lib"
export ROK_TORCH_TEST_DIR="$tmp"
"$python" "$here/../pytorch/test_rok_torch.py" "$rok"
