# The hostile tests' harness (hostile.sh, hostile-readers.sh): `reject`
# runs rok on one hostile input and checks that it is refused properly.
# Needs $rok, $tmp (lib.bash) and $data (the hostile folder, stripped from
# what is printed).
seconds=${ROK_HOSTILE_SECONDS:-20} # per case; generous for sanitizer builds

# Memory: a plain build runs under `ulimit -v`; AddressSanitizer reserves
# terabytes of address space, so there its own limits apply instead.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=1536:max_allocation_size_mb=1024"
memory_kb=1572864
if ! (ulimit -v "$memory_kb" && "$rok" --version) >/dev/null 2>&1; then
  memory_kb=unlimited
fi

mkdir "$tmp/cwd"
cases=0

# reject WHERE TEXT ROK-ARGUMENTS...: `rok ROK-ARGUMENTS`, run in an empty
# folder (where the arguments ask for any output), must exit 2 within
# $seconds, print nothing on stdout and one line on stderr holding WHERE
# immediately followed by TEXT, and leave the folder empty (no output, no
# temporary file).
reject() {
  local where=$1 text=$2 status=0 start elapsed err left
  shift 2
  cases=$((cases + 1))
  start=${EPOCHREALTIME//[!0-9]/}
  (cd "$tmp/cwd" && ulimit -v "$memory_kb" && exec timeout -s KILL "$seconds" "$rok" "$@" </dev/null) \
    >"$tmp/stdout" 2>"$tmp/stderr" || status=$?
  elapsed=$(((${EPOCHREALTIME//[!0-9]/} - start) / 1000))
  local what="rok $*"
  what=${what//$data\//}
  what=${what//$tmp\/cwd\//}
  # Bash reads and matches itself: a process per check would be most of
  # this harness's time (hundreds of cases).
  read_into err "$tmp/stderr"
  if [ "$status" -ge 128 ]; then
    echo "FAIL: $what: killed by signal $((status - 128)) after ${elapsed} ms (a crash, or over ${seconds}s)" >&2
    tail -5 "$tmp/stderr" >&2
    exit 1
  fi
  if [ "$status" -ne 2 ]; then
    echo "FAIL: $what: exit $status, expected 2" >&2
    printf '%s' "$err" >&2
    exit 1
  fi
  if [[ "$err" != *"$where$text"* || "$err" != *$'\n' || "${err%$'\n'}" == *$'\n'* ]]; then
    echo "FAIL: $what: expected one line holding: $where$text" >&2
    printf '%s' "$err" >&2
    exit 1
  fi
  shopt -s nullglob dotglob
  left=("$tmp/cwd"/*)
  shopt -u nullglob dotglob
  if [ -s "$tmp/stdout" ] || [ "${#left[@]}" -ne 0 ]; then
    echo "FAIL: $what: wrote something:" >&2
    head -c 300 "$tmp/stdout" >&2
    ls -la "$tmp/cwd" >&2
    exit 1
  fi
  [ "${ROK_HOSTILE_VERBOSE:-0}" = 0 ] || echo "ok ${elapsed} ms: $what: ${err%$'\n'}"
}
