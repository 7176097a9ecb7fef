#!/usr/bin/env bash
# The executor's SSD bandwidth on a large offload vs fio on the same
# directory, with the same block size (the staging slot), queue depth (the
# profile's), O_DIRECT and io_uring.
#
#   tests/bench/bench-exec.sh [DIR] [--layers 8] [--tokens 524288] [--hidden 256] [--repeat 2]
#
# The offload: a trace made for this (rok-trace/1, written here) of cheap
# ops with large saved tensors: data of tokens x hidden, then --layers GeLUs
# (each saves its bf16 input: 256 MiB by default), then a cross-entropy. `rok plan --strategy offload` sends
# every mask to the SSDs on a profile whose NVMe figures are the ones fio
# measured here (so that the plan writes them all rather than reading them
# back from staging), and `rok execute --repeat N` runs it: its
# nvme_write_bandwidth and nvme_read_bandwidth (bytes over the time the
# SSD legs were busy, median step) are set beside fio's sequential write
# and read of the same number of bytes. DIR defaults to a fresh folder
# under /var/tmp (removed afterwards). The disk's kind is printed: numbers
# on a virtual disk say little about the hardware behind it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rok=${ROK:-$root/build/rok}
dir="" layers=8 tokens=524288 hidden=256 repeat=2
while [ $# -gt 0 ]; do
  case $1 in
    --layers) layers=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --hidden) hidden=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "bench-exec.sh: unknown option $1" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
command -v fio >/dev/null || { echo "bench-exec.sh: fio is not installed" >&2; exit 77; }
[ -x "$rok" ] || { echo "bench-exec.sh: $rok not built (ninja -C build)" >&2; exit 2; }
"$rok" execute --list-devices >/dev/null 2>&1 || { echo "bench-exec.sh: no OpenCL device" >&2; exit 77; }

source "$here/fio-lib.bash"
bench_folders bench-exec

block=1M  # rok execute's staging slot (--slot), the stripe unit
qd=$(sed -n 's/.*"queue_depth": *\([0-9]*\).*/\1/p' "$root/configs/hw/cpu-2core-virtio.json")
mask_bytes=$((2 * tokens * hidden))
size_bytes=$((mask_bytes * layers))

fio_bw() { # rw [minimal fields to print] -> bytes/s
  local fields
  fields=$(fio --name=bench --filename="$fio_file" --size="$size_bytes" --bs="$block" $fio_mem \
    --iodepth="$qd" --direct=1 --ioengine=io_uring --fixedbufs=1 --registerfiles=1 \
    --rw="$1" --fallocate=native --end_fsync=1 --minimal)
  if [ "$1" = write ]; then
    awk -F';' '{ printf "%.0f\n", $47 * 1024 / ($50 / 1000) }' <<<"$fields"
  else
    awk -F';' '{ printf "%.0f\n", $6 * 1024 / ($9 / 1000) }' <<<"$fields"
  fi
}

# The trace: an input (labels, and a bf16 tokens x hidden tensor of data),
# `layers` GeLUs (each saves its input for backward), a cross-entropy.
write_trace() {
  awk -v L="$layers" -v T="$tokens" -v H="$hidden" 'BEGIN {
    n = T * H
    printf "{\"format\": \"rok-trace/1\", \"model_name\": \"bench-offload\", \"layers\": %d, ", L
    printf "\"tokens_per_micro_batch\": %d, \"micro_batches_per_step\": 1, ", T
    printf "\"fixed\": {\"params_total\": 0, \"params_per_gpu\": 0, \"weight_bytes\": 0, \"gradient_bytes\": 0, "
    printf "\"optimizer_bytes\": 0, \"optimizer_step_bytes\": 0},\n\"ops\": [\n"
    printf "{\"id\": 0, \"name\": \"input.batch\", \"layer\": -1, \"kind\": \"input\", \"dims\": [1, %d, %d, 0], ", T, H
    printf "\"fwd_flops\": 0, \"bwd_flops\": 0, \"fwd_bytes\": 0, \"bwd_bytes\": 0, \"inputs\": [], \"outputs\": [0, 1]},\n"
    for (l = 0; l < L; l++) {
      printf "{\"id\": %d, \"name\": \"layer%d.gelu\", \"layer\": %d, \"kind\": \"gelu\", \"dims\": [1, %d, %d, 0], ", l + 1, l, l, T, H
      printf "\"fwd_flops\": %d, \"bwd_flops\": %d, \"fwd_bytes\": %d, \"bwd_bytes\": %d, ", 8 * n, 12 * n, 4 * n, 6 * n
      printf "\"inputs\": [%d], \"outputs\": [%d]},\n", l + 1, l + 2
    }
    printf "{\"id\": %d, \"name\": \"head.loss\", \"layer\": -1, \"kind\": \"cross_entropy\", \"dims\": [1, %d, %d, 0], ", L + 1, T, H
    printf "\"fwd_flops\": %d, \"bwd_flops\": %d, \"fwd_bytes\": %d, \"bwd_bytes\": %d, ", 5 * n, 2 * n, 6 * n, 6 * n
    printf "\"inputs\": [%d, 0], \"outputs\": [%d]}\n],\n\"tensors\": [\n", L + 1, L + 2
    printf "{\"id\": 0, \"name\": \"input.labels\", \"layer\": -1, \"dtype\": \"i64\", \"shape\": [%d], \"bytes\": %d, ", T, 8 * T
    printf "\"producer\": 0, \"needed_by\": [%d], \"recomputable\": false, \"recompute_from\": []},\n", L + 1
    for (l = 0; l <= L; l++) { # tensor l + 1: the input of GeLU l (the last one feeds the loss)
      printf "{\"id\": %d, \"name\": \"layer%d.in\", \"layer\": %d, \"dtype\": \"bf16\", \"shape\": [%d, %d], ", l + 1, l, l < L ? l : -1, T, H
      printf "\"bytes\": %d, \"producer\": %d, \"needed_by\": [%s], ", 2 * n, l, l < L ? l + 1 : ""
      if (l == 0)
        printf "\"recomputable\": false, \"recompute_from\": []},\n"
      else
        printf "\"recomputable\": true, \"recompute_from\": [%d]},\n", l
    }
    printf "{\"id\": %d, \"name\": \"head.loss_probs\", \"layer\": -1, \"dtype\": \"fp32\", \"shape\": [%d, %d], \"bytes\": %d, ", L + 2, T, H, 4 * n
    printf "\"producer\": %d, \"needed_by\": [%d], \"recomputable\": true, \"recompute_from\": [%d, 0]}\n]}\n", L + 1, L + 1, L + 1
  }' > "$work/trace.json"
}

# The CPU profile, its NVMe figures measured here by fio (per device, one
# device), its device figures closer to what PoCL does on two cores.
write_profile() { # write_bw read_bw
  sed -e "s/\"write_bandwidth\": \"[^\"]*\"/\"write_bandwidth\": $1/" \
      -e "s/\"read_bandwidth\": \"[^\"]*\"/\"read_bandwidth\": $2/" \
      -e 's/"hbm_bandwidth": "[^"]*"/"hbm_bandwidth": "2GB\/s"/' \
      -e 's/"name": "[^"]*"/"name": "cpu-2core-virtio-measured"/' \
      "$root/configs/hw/cpu-2core-virtio.json" > "$work/hw.json"
}

num() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -n 1 | sed 's/.*: //'; }

describe_disk
fio_memory
echo "block $block, queue depth $qd, O_DIRECT, io_uring; $layers tensors of $(numfmt --to=iec "$mask_bytes")B," \
  "$(numfmt --to=iec "$size_bytes")B per step"
# rok execute's measured steps overwrite the data file its warm-up step
# laid out (and read what they wrote): fio is timed the same way, on a file
# it has written once already (the first write into fallocated space also
# converts its extents, which costs more on ext4).
fio_w=() fio_r=()
for t in 1 2 3; do
  rm -f "$fio_file"
  fio_bw write > /dev/null
  settle
  fio_w+=("$(fio_bw write)")
  fio_r+=("$(fio_bw read)")
  echo "fio trial $t: write $(gbs "${fio_w[-1]}") read $(gbs "${fio_r[-1]}")"
done
rm -f "$fio_file"
settle
fw=$(printf '%s\n' "${fio_w[@]}" | median) fr=$(printf '%s\n' "${fio_r[@]}" | median)

write_trace
write_profile "$fw" "$fr"
"$rok" plan "$work/trace.json" --hw "$work/hw.json" --strategy offload -o "$work/plan" > /dev/null
planned=$(num "$work/plan/schedule.json" nvme_write_bytes)
echo "the plan writes $(numfmt --to=iec "$planned")B to the SSDs per step; rok execute --repeat $repeat ..."
"$rok" execute "$work/plan/schedule.json" --dir "$dir" --repeat "$repeat" --json > "$work/report.json"
rw=$(num "$work/report.json" nvme_write_bandwidth) rr=$(num "$work/report.json" nvme_read_bandwidth)
written=$(num "$work/report.json" nvme_write_bytes)
[ "$written" = "$planned" ] || echo "note: rok execute wrote $written bytes, the plan $planned"
grep -q '"backend": "io_uring"' "$work/report.json" || echo "note: rok execute did not use io_uring"
grep -q '"direct": true' "$work/report.json" || echo "note: rok execute did not use O_DIRECT"
echo "rok execute: step $(num "$work/report.json" step_time_s) s, SSD legs busy" \
  "$(grep -o '"nvme-write": [0-9.e+-]*' "$work/report.json" | head -n 1 | sed 's/.*: //') s writing," \
  "$(grep -o '"nvme-read": [0-9.e+-]*' "$work/report.json" | head -n 1 | sed 's/.*: //') s reading (median step)"
printf '%-6s %14s %14s %8s\n' "" "fio" "rok execute" "rok/fio"
printf '%-6s %14s %14s %8.3f\n' write "$(gbs "$fw")" "$(gbs "$rw")" "$(awk -v a="$rw" -v b="$fw" 'BEGIN { print a / b }')"
printf '%-6s %14s %14s %8.3f\n' read "$(gbs "$fr")" "$(gbs "$rr")" "$(awk -v a="$rr" -v b="$fr" 'BEGIN { print a / b }')"
