#!/usr/bin/env bash
# GEMM GFLOP/s of rok's OpenCL kernels on this machine's default device
# (first GPU, else PoCL's CPU device).
#
#   tests/bench/bench-opencl.sh [BUILD_DIR] [bench-opencl options...]
#
# BUILD_DIR defaults to ./build; options go to the program (--device N,
# --dtype bf16|fp16|fp32, --repeats R, --quick). Prints one line per shape.
set -euo pipefail
build=${1:-build}
shift || true
bench="$build/tests/bench-opencl"
if [[ ! -x $bench ]]; then
  echo "bench-opencl.sh: $bench not found; build first (ninja -C $build)" >&2
  exit 2
fi
# A fresh kernel cache would charge compilation to the first shape; the
# program warms up each shape first, so the shared cache is fine here.
for dtype in bf16 fp32; do
  "$bench" --dtype "$dtype" "$@"
  echo
done
