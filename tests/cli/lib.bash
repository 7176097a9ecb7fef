# Helpers for the CLI tests: a scratch folder removed on exit, and checks
# that say what they expected.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Under the sanitizers, LeakSanitizer's suppressions are tests/lsan.supp
# (the one list: leaks inside PoCL's compiler and fontconfig, not rok's),
# where a test runs by hand too; an absolute path, as a test may cd.
lib_dir=${BASH_SOURCE[0]%/*}
[[ $lib_dir == /* ]] || lib_dir=$PWD/$lib_dir
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$lib_dir/../lsan.supp"

# Checks use bash's own matching, not grep: a CLI test makes hundreds of
# checks, and a process costs 5-15 ms on a small VM.
expect_in() { # TEXT NEEDLE
  if [[ "$1" != *"$2"* ]]; then
    echo "expected to find: $2" >&2
    echo "in: $1" | head -20 >&2
    exit 1
  fi
}

# expect_fail CODE NEEDLE COMMAND... : runs it (a last argument ">FILE"
# redirects stdout), checks the exit code and that stderr holds NEEDLE.
expect_fail() {
  local code=$1 needle=$2 status=0 out=/dev/null err
  shift 2
  if [[ "${@: -1}" == ">"* ]]; then out=${@: -1}; out=${out#>}; set -- "${@:1:$#-1}"; fi
  "$@" >"$out" 2>"$tmp/stderr" || status=$?
  if [ "$status" -ne "$code" ]; then
    echo "expected exit $code, got $status: $*" >&2
    cat "$tmp/stderr" >&2
    exit 1
  fi
  read_into err "$tmp/stderr"
  if [[ "$err" != *"$needle"* ]]; then
    echo "expected stderr to contain: $needle ($*)" >&2
    cat "$tmp/stderr" >&2
    exit 1
  fi
}

# read_into VAR FILE: FILE's contents (up to a NUL byte) in VAR, read by
# bash itself (no process).
read_into() {
  local -n into=$1
  into=""
  IFS= read -r -d '' into <"$2" || true
}

# compare_saved_bytes LABEL TRACE.json TORCH_BYTES: the bytes layer 1 of a
# trace saves for backward against PyTorch's count; fails beyond 1%.
compare_saved_bytes() {
  /usr/bin/python3 -c "
import json, sys
t = json.load(open(sys.argv[2]))
r, p = sum(x['bytes'] for x in t['tensors'] if x['layer'] == 1 and x['needed_by']), int(sys.argv[3])
err = abs(r - p) / p
print(f'{sys.argv[1]}: rok {r} bytes, PyTorch {p} bytes, {100 * err:.3f}% apart')
sys.exit(0 if err < 0.01 else 1)" "$@"
}

# run_or_skip_opencl OUT ERR COMMAND...: runs it with stdout in OUT and
# stderr in ERR; exits 77 (skip) when it failed for want of an OpenCL
# device, 1 on any other failure.
run_or_skip_opencl() {
  local out=$1 err=$2 status=0
  shift 2
  "$@" >"$out" 2>"$err" || status=$?
  [ "$status" -eq 0 ] && return 0
  if grep -qiE "opencl|platform|no device" "$err"; then
    echo "skipping: no OpenCL device ($(head -1 "$err"))"
    exit 77
  fi
  cat "$err" >&2
  exit 1
}

# require_python: python3 as $python, or skip (77). The interpreter itself,
# resolved once: a version manager's shim (pyenv's) costs ~0.3 s a call.
require_python() {
  python=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
  [ -n "$python" ] && [ -x "$python" ] || { echo "python3 not installed: skipped"; exit 77; }
}

# sanitized: true in a sanitizer build (ctest sets ROK_SANITIZED), ten
# times slower, where a test may take fewer cases or leave what only
# compares names and numbers (PyTorch's side, say) to the plain build.
sanitized() {
  [ "${ROK_SANITIZED:-0}" = 1 ]
}

# Debian's python3 with its python3-torch, as $python; skips (77) without.
require_torch() {
  python=/usr/bin/python3
  "$python" -c "import torch" 2>/dev/null || { echo "PyTorch not installed: skipped"; exit 77; }
}
