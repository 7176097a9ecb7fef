#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: rok's executor and calibration on the
# NVIDIA OpenCL driver, and predicted against measured in PyTorch.
#
#   tests/bench/bench-gpu.sh OUT [SCRATCH]
#
# 1. `rok calibrate --quick` on the GPU (OpenCL device 0) with SCRATCH as its
#    one SSD (default /var/tmp/rok-gpu): OUT/calibrated.json, OUT/calibrate.txt;
# 2. `rok validate` of the bundled validate-gpt on that profile: every
#    baseline and the planner run as OpenCL schedules on the GPU
#    (OUT/validate.txt, OUT/validation.json);
# 3. tests/bench/torch-gpu-table.py: a LLaMA-style model captured in PyTorch
#    on the GPU, planned by rok, each plan applied by rok_torch and measured
#    (OUT/torch.txt, OUT/table.json, OUT/trace.json).
#
# Uses build/rok and build/librok_torch_storage.so, or $ROK and
# $ROK_TORCH_STORAGE_LIB. Where no OpenCL ICD file names NVIDIA's driver
# library, one is written to a temporary folder (OCL_ICD_VENDORS).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rok=${ROK:-$here/../../build/rok}
out=${1:?usage: bench-gpu.sh OUT [SCRATCH]}
scratch=${2:-/var/tmp/rok-gpu}
mkdir -p "$out" "$scratch"
export PYTHONPATH="$here/../../python${PYTHONPATH:+:$PYTHONPATH}"
export ROK_TORCH_STORAGE_LIB=${ROK_TORCH_STORAGE_LIB:-$(dirname "$rok")/librok_torch_storage.so}

if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
  lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
    [ -z "$lib" ] && [ -e "$d/libnvidia-opencl.so.1" ] && lib=$d/libnvidia-opencl.so.1
  done
  if [ -n "$lib" ]; then
    icd=$(mktemp -d)
    echo "$lib" >"$icd/nvidia.icd"
    export OCL_ICD_VENDORS=$icd
    echo "== NVIDIA OpenCL: $lib (ICD file written to $icd)"
  else
    echo "== no libnvidia-opencl.so.1 found: OpenCL steps will use what the ICD loader finds"
  fi
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | sed 's/^/== /'
echo "== $(nproc) processors; load $(cut -d' ' -f1-3 /proc/loadavg); scratch $scratch on $(df -h --output=source,fstype,size "$scratch" | tail -1)"

start=$(date +%s)
echo "== rok calibrate --quick --dir $scratch"
timeout 150 "$rok" calibrate --quick --dir "$scratch" -o "$out/calibrated.json" >"$out/calibrate.txt" 2>&1
echo "   exit $? in $(( $(date +%s) - start )) s"
cat "$out/calibrate.txt"

if [ -s "$out/calibrated.json" ]; then
  start=$(date +%s)
  echo "== rok validate --hw calibrated.json --dir $scratch --rounds 3 --repeat 2"
  v=$(mktemp -d)
  timeout 150 "$rok" validate --hw "$out/calibrated.json" --dir "$scratch" --rounds 3 --repeat 2 -o "$v" \
    >"$out/validate.txt" 2>&1
  echo "   exit $? in $(( $(date +%s) - start )) s"
  cat "$out/validate.txt"
  cp "$v/validation.json" "$out/" 2>/dev/null
  rm -rf "$v"
  hw=$out/calibrated.json
else
  hw=$here/../../configs/hw/h100-80g-sxm-4xgen5.json
  echo "== no calibrated profile: the table below plans against $hw"
fi

start=$(date +%s)
echo "== torch-gpu-table.py --hw $hw"
t=$(mktemp -d)
PYTHONUNBUFFERED=1 timeout 270 python3 "$here/torch-gpu-table.py" --rok "$rok" --hw "$hw" --nvme-dir "$scratch" \
  --out "$t" 2>&1 | tee "$out/torch.txt"
echo "   exit ${PIPESTATUS[0]} in $(( $(date +%s) - start )) s"
cp "$t/table.json" "$t/trace.json" "$out/" 2>/dev/null
cp "$t/rok-lo/plan.json" "$out/plan-rok-lo.json" 2>/dev/null
rm -rf "$t" "$scratch"/rok-*
