#!/usr/bin/env bash
# Simulator speed: wall time per simulated step and events per second for
# GPT-3 175B and LLaMA-2 70B. Usage: tests/bench/bench-sim.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
bin=$build/tests/bench-sim
if [ ! -x "$bin" ]; then
  echo "bench-sim.sh: $bin not found; build first (ninja -C $build)" >&2
  exit 1
fi
echo "rok simulator benchmark ($(nproc) cores, $(uname -m))"
"$bin" "$here"
