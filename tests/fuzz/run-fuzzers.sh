#!/bin/bash
# Build rok's fuzz targets with clang's libFuzzer under AddressSanitizer and
# UndefinedBehaviorSanitizer (into their own build folder), then run each
# for a while, starting from its seeds, regressions and hostile inputs.
#
# usage: tests/fuzz/run-fuzzers.sh [-t SECONDS] [-j JOBS] [-B BUILD_DIR] [TARGET...]
#   -t  seconds per target (default 60)
#   -j  targets run at once (default 1)
#   -B  build folder (default build-fuzz; its fuzz-corpus/ keeps what the
#       fuzzers learnt, so a second run starts where the first stopped)
#   TARGET: model, hw, trace, units, json... (default: every tests/fuzz/fuzz-*.c)
# Environment: CC (default: the first of clang, clang-14..19 with libFuzzer).
#
# Exit 0 when nothing was found; 1 when a target crashed, leaked, hung
# (-timeout) or went over -rss_limit_mb: the input is then in
# BUILD/fuzz-artifacts/TARGET/ and the log says how to minimise it; 77 when
# there is no clang with libFuzzer here (Debian: clang-14 libclang-rt-14-dev).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=60 jobs=1 build="$root/build-fuzz"
while getopts "t:j:B:h" opt; do
  case $opt in
    t) seconds=$OPTARG ;;
    j) jobs=$OPTARG ;;
    B) build=$(realpath -m "$OPTARG") ;;
    *) sed -n '5,12p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

# A compiler that links a libFuzzer target.
find_clang() {
  local cc probe
  probe=$(mktemp -d)
  printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; return (int)n * 0; }\n' >"$probe/t.c"
  for cc in ${CC:-} clang clang-14 clang-15 clang-16 clang-17 clang-18 clang-19; do
    if command -v "$cc" >/dev/null && "$cc" -fsanitize=fuzzer,address,undefined "$probe/t.c" -o "$probe/t" 2>/dev/null; then
      rm -rf "$probe"
      echo "$cc"
      return 0
    fi
  done
  rm -rf "$probe"
  return 1
}
if ! cc=$(find_clang); then
  echo "run-fuzzers: no clang with libFuzzer here (Debian: apt-get install clang-14 libclang-rt-14-dev): skipped" >&2
  exit 77
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$here"/fuzz-*.c; do
    t=${f##*/fuzz-}
    targets+=("${t%.c}")
  done
fi

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DROK_FUZZ=ON -DROK_SANITIZE=ON -DROK_WITH_OPENCL=OFF -DROK_WITH_URING=OFF >/dev/null
ninja -C "$build" "${targets[@]/#/fuzz-}"

# One target: fuzz for $seconds; the log goes to $build/fuzz-logs/NAME.log.
run_one() {
  local name=$1 work="$build/fuzz-corpus/$1" artifacts="$build/fuzz-artifacts/$1" log="$build/fuzz-logs/$1.log"
  local inputs=("$here/corpus/$name") dict="$here/dict/$name.dict" status=0
  mkdir -p "$work" "$artifacts" "$build/fuzz-logs"
  for extra in "$here/regressions/$name" "$root/tests/data/hostile/$name"; do
    [ -d "$extra" ] && inputs+=("$extra")
  done
  [ -f "$dict" ] || dict="$here/dict/json.dict"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/fuzz-$name" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -timeout=10 -error_exitcode=1 -timeout_exitcode=1 -dict="$dict" -artifact_prefix="$artifacts/" \
    -print_final_stats=1 "$work" "${inputs[@]}" >"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    echo "fuzz-$name: FOUND A PROBLEM (exit $status); log: $log" >&2
    grep -E "^(==[0-9]+==ERROR|SUMMARY|fuzz check failed|.*runtime error)|Test unit written" "$log" | head -8 >&2 || true
    echo "  minimise: $build/tests/fuzz/fuzz-$name -minimize_crash=1 -max_total_time=60 -exact_artifact_path=MIN FILE" >&2
    echo "  then add MIN to $here/regressions/$name/" >&2
    return 1
  fi
  echo "fuzz-$name: ${seconds}s, $(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$') runs," \
    "$(grep -oE 'cov: [0-9]+' "$log" | tail -1), corpus $(find "$work" -type f | wc -l) files: no findings"
}

failed=0
running=0
for name in "${targets[@]}"; do
  if [ "$jobs" -le 1 ]; then
    run_one "$name" || failed=1
    continue
  fi
  run_one "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
