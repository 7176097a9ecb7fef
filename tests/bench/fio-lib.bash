# What the fio comparisons (bench-io.sh, bench-exec.sh, bench-calibrate.sh,
# bench-small-tensors.sh) share: functions only, which read $dir, $block
# and $qd when called.

# The folders a comparison works in: $dir as given (it must exist), else a
# new one under /var/tmp (a disk, not tmpfs) named after the script;
# $fio_file in it and $work, a temporary folder; all removed at exit.
bench_folders() { # NAME
  cleanup_dir=""
  if [ -z "$dir" ]; then
    dir=$(mktemp -d "/var/tmp/rok-$1.XXXXXX")
    cleanup_dir=$dir
  elif [ ! -d "$dir" ]; then
    echo "$(basename "$0"): $dir: no such directory (give one on the disk to measure)" >&2
    exit 2
  fi
  fio_file=$dir/fio-bench.dat
  work=$(mktemp -d)
  trap 'rm -f "$fio_file"; rm -rf "$work"; [ -z "$cleanup_dir" ] || rmdir "$cleanup_dir"' EXIT
}

describe_disk() {
  local src dev
  src=$(df --output=source "$dir" | tail -n 1)
  echo "directory: $dir ($(df --output=fstype "$dir" | tail -n 1) on $src)"
  dev=$(basename "$(readlink -f "$src")")
  dev=${dev%%[0-9]*}
  [ -e "/sys/block/$dev" ] || return 0
  case $(readlink -f "/sys/block/$dev/device" 2>/dev/null) in
    *virtio*) echo "disk: $dev is a virtio disk: a virtual machine's, the figures are the host's caching and backing store, not a drive's" ;;
    *) echo "disk: $dev $(cat "/sys/block/$dev/device/model" 2>/dev/null || true)" ;;
  esac
}

# rok's staging slots are (transparent) huge pages, so a block is one DMA
# segment; fio's default buffers are 4 KiB pages, which a device with fewer
# segments per request than pages per block (virtio-blk: 254) must split.
# Like for like needs fio on huge pages too: its --mem=shmhuge takes them
# from the reserved pool, if there are enough.
fio_memory() { # sets fio_mem
  local block_bytes need free
  block_bytes=$(numfmt --from=iec "$block")
  need=$(( (block_bytes * qd + (2 << 20) - 1) / (2 << 20) + 1 ))
  free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
  if [ "$free" -ge "$need" ]; then
    echo "fio buffers: huge pages (--mem=shmhuge), like rok's staging slots"
    fio_mem=--mem=shmhuge
  else
    echo "fio buffers: 4 KiB pages; rok's staging slots are huge pages. For like for like, reserve" \
      "$need huge pages (echo $need > /proc/sys/vm/nr_hugepages) and run again"
    fio_mem=--mem=malloc
  fi
}

# fio's "1M" is rok's "1MiB"; plain byte counts are the same for both.
rok_size() { case $1 in *[KMGTkmgt]) echo "${1}iB" ;; *) echo "$1" ;; esac; }
# Deleting a large file costs the disk work after the fact (ext4 mounted
# with "discard" trims the blocks at the next journal commit; a VM's host
# punches holes in its image): let that finish before the next timed run,
# so that neither side pays for the other's files.
settle() { sync; sleep 1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
gbs() { awk -v b="$1" 'BEGIN { printf "%.2f GB/s", b / 1e9 }'; }
