#!/usr/bin/env bash
# rok calibrate's disk figures vs fio: sequential write and read bandwidth
# on one directory with the same block size, queue depth, O_DIRECT, file
# size and method.
#
#   tests/bench/bench-calibrate.sh [DIR] [--block 1M] [--qd 32] [--size 1G] [--trials 3]
#
# DIR defaults to a fresh folder under /var/tmp (removed afterwards). Sizes
# are fio's: K, M, G are powers of 1024. The method is rok calibrate's: a
# file laid out with random data and synced, then a timed overwrite through
# fdatasync and a read with the cache dropped. fio does the same: an
# untimed write job with end_fsync=1 lays the file out, then the timed
# write (overwrite=1, end_fsync=1) and read (invalidate=1) jobs, on
# io_uring with fixed buffers and a registered file. Each trial runs fio
# once and `rok calibrate --quick --trials 1` (build/rok, or $ROK) once
# with --block, --qd, --file-size and a pass time long enough to move the
# whole file, so that both see the same drift of a shared or virtual disk;
# medians are compared. The disk's kind is printed: figures on a virtual
# disk say little about the hardware behind it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rok=${ROK:-$here/../../build/rok}
dir="" block=1M qd=32 size=1G trials=3
while [ $# -gt 0 ]; do
  case $1 in
    --block) block=$2; shift 2 ;;
    --qd) qd=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "bench-calibrate.sh: unknown option $1" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
command -v fio >/dev/null || { echo "bench-calibrate.sh: fio is not installed" >&2; exit 77; }
[ -x "$rok" ] || { echo "bench-calibrate.sh: $rok not built (ninja -C build)" >&2; exit 2; }

source "$here/fio-lib.bash"
bench_folders bench-calibrate

fio_job() { # rw
  fio --name=bench --filename="$fio_file" --size="$size" --bs="$block" $fio_mem \
    --iodepth="$qd" --direct=1 --ioengine=io_uring --fixedbufs=1 --registerfiles=1 --rw="$1" \
    --fallocate=native --overwrite=1 --end_fsync=1 --invalidate=1 --minimal
}

# rok lays its file out and syncs before the timed overwrite, so that the
# overwrite does not compete with the layout's write-back: fio likewise.
fio_layout() { fio_job write >/dev/null; }

# fio's bandwidth in bytes/s from its terse output: KiB moved / runtime ms.
fio_bw() { # rw
  local fields
  fields=$(fio_job "$1")
  if [ "$1" = write ]; then
    awk -F';' '{ printf "%.0f\n", $47 * 1024 / ($50 / 1000) }' <<<"$fields"
  else
    awk -F';' '{ printf "%.0f\n", $6 * 1024 / ($9 / 1000) }' <<<"$fields"
  fi
}

# The array figures of rok's profile: with one directory, the directory's.
profile_field() { sed -n "s/^ *\"$1\": \([-0-9.e+]*\),\{0,1\}$/\1/p" "$work/hw.json" | tail -1; }

fio_memory
echo "block $block, queue depth $qd, file $size, O_DIRECT, $trials trials"
fio_w=() fio_r=() rok_w=() rok_r=()
for t in $(seq "$trials"); do
  rm -f "$fio_file"
  settle
  fio_layout
  fio_w+=("$(fio_bw write)")
  fio_r+=("$(fio_bw read)")
  rm -f "$fio_file"
  settle
  "$rok" calibrate --quick --trials 1 --dir "$dir" --block "$(rok_size "$block")" --qd "$qd" \
    --file-size "$(rok_size "$size")" --pass-time 600 -o "$work/hw.json" >"$work/table" 2>"$work/warnings"
  [ "$t" -gt 1 ] || { grep '^Disk ' "$work/table"; sed 's/^rok calibrate: //' "$work/warnings"; }
  rok_w+=("$(profile_field write_bandwidth)")
  rok_r+=("$(profile_field read_bandwidth)")
  echo "trial $t: fio write $(gbs "${fio_w[-1]}") read $(gbs "${fio_r[-1]}");" \
    "rok write $(gbs "${rok_w[-1]}") read $(gbs "${rok_r[-1]}")"
done

fw=$(printf '%s\n' "${fio_w[@]}" | median) fr=$(printf '%s\n' "${fio_r[@]}" | median)
rw=$(printf '%s\n' "${rok_w[@]}" | median) rr=$(printf '%s\n' "${rok_r[@]}" | median)
printf '%-6s %14s %14s %8s\n' "median" "fio" "rok" "rok/fio"
printf '%-6s %14s %14s %8.3f\n' write "$(gbs "$fw")" "$(gbs "$rw")" "$(awk -v a="$rw" -v b="$fw" 'BEGIN { print a / b }')"
printf '%-6s %14s %14s %8.3f\n' read "$(gbs "$fr")" "$(gbs "$rr")" "$(awk -v a="$rr" -v b="$fr" 'BEGIN { print a / b }')"
