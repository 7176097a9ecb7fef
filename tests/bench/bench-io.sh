#!/usr/bin/env bash
# Storage layer vs fio: sequential write and read bandwidth on one directory
# with the same block size, queue depth, O_DIRECT and file size.
#
#   tests/bench/bench-io.sh [DIR] [--block 1M] [--qd 32] [--size 1G] [--trials 3]
#
# DIR defaults to a fresh folder under /var/tmp (removed afterwards). Sizes
# are fio's: K, M, G are powers of 1024. Each trial runs fio (io_uring, fixed
# buffers, registered file, fallocate'd fresh file, write with end_fsync
# then read of the same file) and then bench-io (build/tests/bench-io, or
# $BENCH_IO) once, so that both see the same drift of a shared or virtual
# disk; medians are compared. The disk's kind is printed: numbers on a
# virtual disk say little about the hardware behind it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bench=${BENCH_IO:-$here/../../build/tests/bench-io}
dir="" block=1M qd=32 size=1G trials=3
while [ $# -gt 0 ]; do
  case $1 in
    --block) block=$2; shift 2 ;;
    --qd) qd=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "bench-io.sh: unknown option $1" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
command -v fio >/dev/null || { echo "bench-io.sh: fio is not installed" >&2; exit 77; }
[ -x "$bench" ] || { echo "bench-io.sh: $bench not built (ninja -C build)" >&2; exit 2; }

source "$here/fio-lib.bash"
bench_folders bench-io

# fio's bandwidth in bytes/s from its terse output: KiB moved / runtime ms.
fio_bw() { # rw
  local fields
  fields=$(fio --name=bench --filename="$fio_file" --size="$size" --bs="$block" $fio_mem \
    --iodepth="$qd" --direct=1 --ioengine=io_uring --fixedbufs=1 --registerfiles=1 \
    --rw="$1" --fallocate=native --end_fsync=1 --minimal)
  if [ "$1" = write ]; then
    awk -F';' '{ printf "%.0f\n", $47 * 1024 / ($50 / 1000) }' <<<"$fields"
  else
    awk -F';' '{ printf "%.0f\n", $6 * 1024 / ($9 / 1000) }' <<<"$fields"
  fi
}

describe_disk
fio_memory
echo "block $block, queue depth $qd, file $size, O_DIRECT, $trials trials"
fio_w=() fio_r=() rok_w=() rok_r=()
for t in $(seq "$trials"); do
  rm -f "$fio_file"
  settle
  fio_w+=("$(fio_bw write)")
  fio_r+=("$(fio_bw read)")
  rm -f "$fio_file"
  settle
  out=$("$bench" --block "$(rok_size "$block")" --qd "$qd" --size "$(rok_size "$size")" --trials 1 "$dir")
  grep -q '^backend=io_uring direct=yes' <<<"$out" ||
    echo "note: bench-io did not run io_uring with O_DIRECT: $(grep '^backend=' <<<"$out")"
  rok_w+=("$(sed -n 's/^write_bw_median=\([0-9]*\).*/\1/p' <<<"$out")")
  rok_r+=("$(sed -n 's/^read_bw_median=\([0-9]*\).*/\1/p' <<<"$out")")
  echo "trial $t: fio write $(gbs "${fio_w[-1]}") read $(gbs "${fio_r[-1]}");" \
    "rok write $(gbs "${rok_w[-1]}") read $(gbs "${rok_r[-1]}")"
done

fw=$(printf '%s\n' "${fio_w[@]}" | median) fr=$(printf '%s\n' "${fio_r[@]}" | median)
rw=$(printf '%s\n' "${rok_w[@]}" | median) rr=$(printf '%s\n' "${rok_r[@]}" | median)
printf '%-6s %14s %14s %8s\n' "median" "fio" "rok" "rok/fio"
printf '%-6s %14s %14s %8.3f\n' write "$(gbs "$fw")" "$(gbs "$rw")" "$(awk -v a="$rw" -v b="$fw" 'BEGIN { print a / b }')"
printf '%-6s %14s %14s %8.3f\n' read "$(gbs "$fr")" "$(gbs "$rr")" "$(awk -v a="$rr" -v b="$fr" 'BEGIN { print a / b }')"
