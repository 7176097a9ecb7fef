#!/bin/bash
# The documentation in docs/ keeps up with the code. The lists come from
# the built rok itself wherever it can say them, so that a key added to a
# reader, an option added to a command or a member added to a file rok
# writes fails here until docs/ names it:
#  - every key the model-config and hardware-profile readers accept: each
#    reader, given a key far from every known one, answers "unknown key
#    (known keys: ...)" from its own table;
#  - every option of every command (`rok COMMAND --help`) in docs/cli.md;
#  - every format name the sources spell ("rok-NAME/N") in docs/formats*.md;
#  - every member of every JSON file rok writes (trace, plan, schedule,
#    timelines, sweep and simulate --json; with an OpenCL device also the
#    report, the validation and a calibrated profile) and every CSV column
#    in docs/formats*.md (or the schema documents, for embedded configs
#    and profiles).
# A name counts as documented when it appears in backquotes: `name`.
# Options named in docs/cli.md must exist, so that the page cannot go stale.
# The plain build's check: under the sanitizers the commands it runs are
# cli/trace's, plan's, simulate's, sweep's and validate's.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
if sanitized; then echo "sanitizer build: the documentation is checked in the plain build"; exit 77; fi

root="${ROK_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
docs="$root/docs"
[ -d "$docs" ] || { echo "no docs/ in $root" >&2; exit 1; }

missing=0
# docs_text FILE...: the files' text, joined (read by bash itself: the
# checks below are hundreds, and a grep apiece was most of this test's time).
docs_text() {
  local file text all=""
  for file in "$@"; do
    read_into text "$file"
    all+="$text"$'\n'
  done
  printf '%s' "$all"
}

# need FILE... -- WHAT NAME...: each NAME appears as `NAME` in one of the files.
need() {
  local files=() what text
  while [ "$1" != "--" ]; do files+=("$1"); shift; done
  shift
  what="$1"
  shift
  text=$(docs_text "${files[@]}")
  for name in "$@"; do
    if [[ "$text" != *"\`$name\`"* ]]; then
      echo "undocumented $what: \`$name\` (expected in ${files[*]#"$root/"})" >&2
      missing=$((missing + 1))
    fi
  done
}

# The known keys a reader lists when it meets an unknown one: run the
# command, which must fail with that message.
bogus=xqxqxqxqxqxqxqxqxqxqxqxqxqxqxqxqxqxqxqxq
known_keys() {
  local status=0
  "$@" >/dev/null 2>"$tmp/stderr" || status=$?
  if [ "$status" -ne 2 ] || ! grep -q 'unknown key (known keys: ' "$tmp/stderr"; then
    echo "expected an unknown-key error listing the known keys from: $*" >&2
    cat "$tmp/stderr" >&2
    exit 1
  fi
  sed -n 's/.*unknown key (known keys: \(.*\))$/\1/p' "$tmp/stderr" | grep -o '"[^"]*"' | tr -d '"'
}

# ---- model config ----
mapfile -t keys < <(known_keys "$rok" trace gpt3-1.3b --set "$bogus=1")
[ "${#keys[@]}" -ge 20 ] || { echo "only ${#keys[@]} model-config keys: ${keys[*]}" >&2; exit 1; }
need "$docs/model-config.md" -- "model-config key" "${keys[@]}"

# ---- hardware profile: each section in turn, the ones before it valid ----
gpu='"memory": "1GiB", "peak_flops": 1e12, "matmul_efficiency": 0.5, "hbm_bandwidth": "1GB/s"'
pcie='"h2d_bandwidth": "1GB/s", "d2h_bandwidth": "1GB/s"'
host='"memory": "1GiB", "pinned_buffer": "1MiB", "memcpy_bandwidth": "1GB/s"'
profile() { # SECTION_JSON: a profile whose first bad key is in it
  printf '%s\n' "$1" > "$tmp/hw.json"
  known_keys "$rok" trace gpt3-1.3b --hw "$tmp/hw.json"
}
mapfile -t keys < <(profile "{\"$bogus\": 1}")
need "$docs/hardware-profile.md" -- "hardware-profile key" "${keys[@]}"
for section in gpu pcie host nvme; do
  case $section in
  gpu) text="{\"gpu\": {\"$bogus\": 1}}" ;;
  pcie) text="{\"gpu\": {$gpu}, \"pcie\": {\"$bogus\": 1}}" ;;
  host) text="{\"gpu\": {$gpu}, \"pcie\": {$pcie}, \"host\": {\"$bogus\": 1}}" ;;
  nvme) text="{\"gpu\": {$gpu}, \"pcie\": {$pcie}, \"host\": {$host}, \"nvme\": {\"$bogus\": 1}}" ;;
  esac
  mapfile -t keys < <(profile "$text")
  [ "${#keys[@]}" -ge 3 ] || { echo "only ${#keys[@]} keys in $section: ${keys[*]}" >&2; exit 1; }
  need "$docs/hardware-profile.md" -- "hardware-profile key" "${keys[@]/#/$section.}"
done
mapfile -t keys < <(profile "{\"gpu\": {$gpu, \"op_rates\": {\"linear\": {\"$bogus\": 1}}}}")
need "$docs/hardware-profile.md" -- "op_rates direction" "${keys[@]}"

# ---- the command line: every command, every option ----
mapfile -t commands < <("$rok" help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')
[ "${#commands[@]}" -ge 8 ] || { echo "only ${#commands[@]} commands: ${commands[*]}" >&2; exit 1; }
need "$docs/cli.md" -- "command" "${commands[@]/#/rok }"
all_options=(--help --version)
cli_text=$(docs_text "$docs/cli.md")
for command in "${commands[@]}"; do
  mapfile -t options < <("$rok" "$command" --help | grep -oE '^  (-[a-zA-Z], )?--[a-z][a-z-]*' |
    grep -oE -- '--[a-z][a-z-]*' | grep -vx -- '--help')
  all_options+=("${options[@]}")
  for option in "${options[@]}"; do # `--budget SIZE`, `--budget=`, `--json`
    if [[ "$cli_text" != *"\`$option"[\ =\`]* ]]; then
      echo "undocumented option of rok $command: \`$option\` (expected in docs/cli.md)" >&2
      missing=$((missing + 1))
    fi
  done
done

# and no option in docs/cli.md that no command has (a stale page)
while read -r option; do
  if [[ " ${all_options[*]} " != *" $option "* ]]; then # no pipe into grep -q: pipefail and SIGPIPE
    echo "docs/cli.md names \`$option\`, which no command takes" >&2
    missing=$((missing + 1))
  fi
done < <(grep -oE -- '`--[a-z][a-z-]*' "$docs/cli.md" | tr -d '`' | sort -u)

# ---- format names, as the sources spell them in code (not comments) ----
mapfile -t formats < <(grep -rhE '"rok-[a-z]+/[0-9]+"' "$root/src" | grep -vE '^\s*(/?\*|//)' |
  grep -oE '"rok-[a-z]+/[0-9]+"' | tr -d '"' | sort -u)
[ "${#formats[@]}" -ge 6 ] || { echo "only ${#formats[@]} formats: ${formats[*]}" >&2; exit 1; }
need "$docs"/formats*.md -- "format" "${formats[@]}"

# ---- every member of every file rok writes ----
# rok writes canonical JSON: members are "key": (one per line, or inline
# in a schedule's actions); string values are never followed by a colon.
members() { grep -ohE '"[A-Za-z0-9_ -]+": ' "$@" | sed -E 's/^"(.*)": $/\1/' | sort -u; }
schemas=("$docs"/formats*.md "$docs/model-config.md" "$docs/hardware-profile.md")
hw=a100-40g-pcie4-4xp5800x
"$rok" trace gpt3-1.3b --set layers=2 -o "$tmp/trace.json" > /dev/null
"$rok" plan gpt3-1.3b --set layers=2 --hw "$hw" --points 2 -o "$tmp/plan" > /dev/null
"$rok" simulate gpt3-1.3b --set layers=2 --hw "$hw" --strategy offload --timeline "$tmp/timeline.json" \
  --json > "$tmp/simulate.json"
"$rok" sweep gpt3-1.3b --set layers=2 --hw "$hw" --micro-batch 1,2 -s keep,rok -o "$tmp/sweep" \
  --json > "$tmp/sweep.json"
written=("$tmp/trace.json" "$tmp/plan/plan.json" "$tmp/plan/schedule.json" "$tmp/timeline.json"
  "$tmp/simulate.json" "$tmp/sweep.json")
mapfile -t columns < <(head -n 1 "$tmp/sweep/sweep.csv" | tr ',' '\n'; head -n 1 "$tmp/plan/rok-curve.csv" | tr ',' '\n')
need "$docs"/formats*.md -- "CSV column" "${columns[@]}"

if "$rok" execute --list-devices > /dev/null 2>&1; then
  mkdir "$tmp/disk"
  "$rok" validate --set layers=2 --set hidden=64 --set heads=1 --set seq_len=64 --set ffn_hidden=256 \
    --set vocab=256 --hw cpu-2core-virtio --dir "$tmp/disk" --budgets 1 --repeat 1 --offload-floor 4096 \
    -o "$tmp/validate" > /dev/null
  # cli/calibrate's quick profile, calibrated by this rok (tests/CMakeLists.txt
  # runs it first), or one calibrated here.
  if [ -f "${ROK_TEST_PROFILE:-}" ] && [ "$ROK_TEST_PROFILE" -nt "$rok" ]; then
    cp "$ROK_TEST_PROFILE" "$tmp/calibrated.json"
  else
    "$rok" calibrate --quick --trials 1 --block 1MiB --qd 8 --dir "$tmp/disk" -o "$tmp/calibrated.json" \
      > /dev/null 2>&1
  fi
  "$rok" execute --list-devices --json > "$tmp/devices.json"
  written+=("$tmp/devices.json" "$tmp/validate/validation.json" "$tmp"/validate/report-*.json "$tmp"/validate/timeline-*.json
    "$tmp/calibrated.json")
else
  echo "no OpenCL device: rok-report/1, rok-validation/1 and calibrated profiles not written here" >&2
fi
# A member counts as documented as `name` or qualified, `gpu.name`.
mapfile -t keys < <(members "${written[@]}")
schema_text=$(docs_text "${schemas[@]}")
for key in "${keys[@]}"; do
  if [[ ! "$schema_text" =~ \`([a-z_]+\.)*"$key"\` ]]; then
    echo "undocumented member of a file rok writes: \`$key\` (expected in docs/formats*.md or the schemas)" >&2
    missing=$((missing + 1))
  fi
done
mapfile -t formats < <(grep -ohE '"format": "[^"]*"' "${written[@]}" | sed 's/.*: "\(.*\)"/\1/' | sort -u)
need "$docs"/formats*.md -- "format written" "${formats[@]}"

if [ "$missing" -gt 0 ]; then
  echo "$missing mismatches between the code and docs/" >&2
  exit 1
fi
