#!/bin/sh
# Install the Debian packages rok needs to build and run; with --tests, also
# what its test suite compares against and fuzzes with (fio, PyTorch,
# clang with libFuzzer). Idempotent; run as
# root on Debian 12 (bookworm) or newer.
set -eu
packages="build-essential cmake ninja-build pkg-config
  libglib2.0-dev libjson-c-dev libgsl-dev libcairo2-dev fonts-dejavu-core
  ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo liburing-dev"
case "${1:-}" in
  --tests) packages="$packages fio python3-torch clang-14 libclang-rt-14-dev libopenmpi-dev openmpi-bin" ;;
  "") ;;
  *) echo "usage: $0 [--tests]" >&2; exit 2 ;;
esac
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq $missing
fi
