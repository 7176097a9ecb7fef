#!/usr/bin/env bash
# The planner against the exact optimum on slices of real models (3 to 6
# layers of GPT-3 13B and LLaMA-2 70B on the bundled A100 and H100
# machines, module and layer granularity, four budgets each): every plan
# enumerated and simulated (bench-plan-exact.c). About 3 minutes.
# Usage: tests/bench/bench-plan-exact.sh [BUILD_DIR]
#
# Measured 2026-11-24 on the development machine (2 cores, loaded):
#   28 budgets: median gap +0.00%, worst +4.60% (planner's step over the
#   optimum's); 23 of 28 exactly optimal. The gaps: gpt3-13b 6 layers at
#   layer granularity on the A100 box +4.60% (the least budget) and +3.60%,
#   3 layers at module granularity on the H100 +2.24%, +0.57%, on the A100
#   +0.78%. LLaMA-2 70B slices (TP 8: a narrow range of budgets): optimal.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
bin=$build/tests/bench-plan-exact
if [ ! -x "$bin" ]; then
  echo "bench-plan-exact.sh: $bin not found; build first (ninja -C $build)" >&2
  exit 1
fi
echo "rok planner against the exact optimum ($(nproc) cores, $(uname -m))"
"$bin" "$here" 2> >(grep -v '^rok: warning' >&2)
