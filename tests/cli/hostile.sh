#!/bin/bash
# Hostile input through rok as a user gives it: the files of
# tests/data/hostile/ with the message expected of each (expected.txt says
# which command reads which folder), absurd --set values, and inputs too
# big to keep in the repository, made here. Each must exit 2 with one
# message that names the file (or the option) and the place, quickly and in
# bounded memory; never die by a signal; write nothing.
set -euo pipefail
rok="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
source "$(dirname "$0")/lib.bash"
data="$(cd "$(dirname "$0")/../data/hostile" && pwd)"
source "$(dirname "$0")/hostile-lib.bash"

# The files, each with its line in expected.txt, and no line without a file.
out="$tmp/cwd/out"
has_execute=0
"$rok" help execute >/dev/null 2>&1 && has_execute=1
# Under the sanitizers every third file a reader alone refuses: this suite's
# fuzz replays (fuzz/NAME) read every one of them there, in process; the
# schedules, which rok execute checks beyond its reader, all.
declare -A expected
n=0
while IFS=$'\t' read -r file text; do
  [[ -z "$file" || "$file" == "#"* ]] && continue
  [ -f "$data/$file" ] || { echo "FAIL: expected.txt names $file, which is not there" >&2; exit 1; }
  expected[$file]=$text
  path="$data/$file"
  n=$((n + 1))
  [[ "$file" == schedule/* ]] || ! sanitized || [ $((n % 3)) -eq 0 ] || continue
  case $file in
    model/* | trace/*) reject "$path" "$text" trace "$path" -o "$out.json" ;;
    hw/*) reject "$path" "$text" trace gpt3-1.3b --hw "$path" -o "$out.json" ;;
    sweep/* | plan/*) reject "$path" "$text" plot "$path" -o "$out.png" ;;
    schedule/*) [ "$has_execute" = 0 ] || reject "$path" "$text" execute "$path" --dir "$tmp/cwd" ;;
    *) echo "FAIL: expected.txt: no command for $file" >&2; exit 1 ;;
  esac
done <"$data/expected.txt"
for path in "$data"/{model,trace,hw,sweep,schedule}/*; do
  [ -n "${expected[${path#"$data"/}]+set}" ] || { echo "FAIL: ${path#"$data"/} has no line in expected.txt" >&2; exit 1; }
done

# reject_trace WHERE TEXT ARGUMENTS...: reject for `rok trace ARGUMENTS -o OUT`.
reject_trace() {
  local where=$1 text=$2
  shift 2
  reject "$where" "$text" trace "$@" -o "$out.json"
}

# Absurd values given on the command line.
tiny="$data/../../fuzz/corpus/model/tiny-gpt.json"
reject_trace "--set seq_len=4000000000" ': "seq_len": must be an integer from 1 to 16777216, not 4000000000' \
  gpt3-1.3b --set seq_len=4000000000 --set micro_batch=4000000000
reject_trace "--set layers=1e30" ': "layers": must be an integer from 1 to 2048, not 1e30' gpt3-1.3b --set layers=1e30
reject_trace "--set layers=16777216" ': "layers": must be an integer from 1 to 2048' gpt3-175b --set layers=16777216
reject_trace "--set dropout=NaN" ': "dropout": must be a number from 0 to 0.99, not "NaN"' gpt3-1.3b --set dropout=NaN
reject_trace "--set dropout=Infinity" ': "dropout": must be a number' gpt3-1.3b --set dropout=Infinity
reject_trace "--set micro_batch=99999999999999999999" ": integer 99999999999999999999 does not fit in 64 bits" \
  gpt3-1.3b --set micro_batch=99999999999999999999
reject_trace "--set micro_batch=-1" ': "micro_batch": must be an integer from 1 to 16777216, not -1' \
  gpt3-1.3b --set micro_batch=-1
reject_trace "$tiny" ": the activation bytes" "$tiny" --set seq_len=16777216 --set micro_batch=16777216 \
  --set global_batch=16777216
reject_trace "$tiny" ": the parameter bytes" "$tiny" --set hidden=16777216 --set ffn_hidden=16777216 \
  --set heads=16777216 --set head_dim=16777216
reject_trace "--set data_parallel=1024" ': "data_parallel": times micro_batch must be at most 4294967295' \
  "$tiny" --set micro_batch=16777216 --set data_parallel=1024
reject_trace "--set layers=1500" ': "layers": and "decoder_layers"' "$tiny" --set arch=t5 --set layers=1500
reject_trace "--set =3" ": expected KEY=VALUE" gpt3-1.3b --set =3
reject_trace "--set a..b=1" ': invalid key "a..b"' gpt3-1.3b --set a..b=1
reject_trace "--set attention=flash2" ': "attention": must be one of "standard", "flash", not "flash2"; did you mean' \
  gpt3-1.3b --set attention=flash2
reject_trace "--set hidden={\"a\": 1, \"a\": 2}" ': duplicate key "a"' gpt3-1.3b --set 'hidden={"a": 1, "a": 2}'

# Numeric options out of range (an unset option is not -1: -1 is refused).
hw=a100-40g-pcie4-4xp5800x
reject "--points 100000" ": must be from 2 to 512" plan gpt3-1.3b --hw $hw --points 100000 -o "$out"
reject "--offload-min-elements -1" ": must be from 0" plan gpt3-1.3b --hw $hw --offload-min-elements -1 -o "$out"
reject "--detail -1" ": must be from 1 to 4096" simulate gpt3-1.3b --hw $hw --detail -1
reject "--prefetch-window -1" ": must be from 0 to 2048" simulate gpt3-1.3b --hw $hw --prefetch-window -1
reject "--pass-time nan" ": must be from 0" calibrate --pass-time nan -o "$out.json"
reject "--repeat 1000000" ": must be from 1 to 1000" execute "$data/schedule/truncated.json" --repeat 1000000 \
  --dir "$tmp/cwd"
reject "--device -2" ": must be from 0" execute "$data/schedule/truncated.json" --device -2 --dir "$tmp/cwd"
reject "--set global_batch=3" ': "global_batch": 3 must be a multiple of micro_batch × data_parallel' \
  trace gpt3-1.3b --set global_batch=3 -o "$out.json"

# Inputs too big for the repository, made here. repeat TEXT BYTES: TEXT
# over and over, BYTES in all (`yes` ends by SIGPIPE, which is fine here).
repeat() {
  (set +o pipefail; yes "$1" | tr -d '\n' | head -c "$2")
}
big="$tmp/big"
mkdir "$big"
repeat '[' 100000 >"$big/nested-100000.json"
reject_trace "$big/nested-100000.json" ":1:65: nesting too deep" "$big/nested-100000.json"
# 50 MB of "0,": 25 million values, refused before any tree is built.
{ printf '{"arch": "gpt", "layers": ['; repeat '0,' 50000000; printf '0]}'; } >"$big/array-50mb.json"
reject_trace "$big/array-50mb.json" ":1:" "$big/array-50mb.json"
grep -qF "too many values (more than 4194304, an object counting as 8)" "$tmp/stderr"
# 20 MB of 12-digit numbers: under the value limit, so parsed, then refused.
{ printf '{"arch": "gpt", "layers": ['; repeat '123456789012,' 20000000; printf '0]}'; } >"$big/numbers-20mb.json"
reject_trace "$big/numbers-20mb.json" ':1:27: "layers": must be an integer from 1 to 2048, not an array' \
  "$big/numbers-20mb.json"
# 300000 distinct keys, and a 60 MB string.
{ printf '{"arch": "gpt"'; seq -f ', "k%.0f": 1' 300000; printf '}'; } >"$big/keys-300k.json"
reject_trace "$big/keys-300k.json" ':1:17: "k1": unknown key' "$big/keys-300k.json"
{ printf '{"arch": "gpt", "name": "'; repeat a 60000000; printf '", "layers": 0}'; } >"$big/string-60mb.json"
reject_trace "$big/string-60mb.json" ':1:60000039: "layers": must be an integer from 1 to 2048, not 0' \
  "$big/string-60mb.json"
rm -f "$big"/*.json
# Past the size limit: refused before reading (sparse file) or while reading.
truncate -s 200M "$big/sparse-200mb.json"
reject_trace "$big/sparse-200mb.json" \
  ": too large for a JSON document (rok reads at most 128 MiB; 209715200 bytes)" "$big/sparse-200mb.json"
rm -f "$big/sparse-200mb.json"
if [ -r /dev/zero ]; then
  reject_trace /dev/zero ": too large for a JSON document" /dev/zero
  reject_trace /dev/zero ": too large for a JSON document" gpt3-1.3b --hw /dev/zero
fi
reject_trace "$data" ": cannot read: Is a directory" "$data"

echo "hostile: $cases hostile inputs refused, each with a located message (memory limit: $memory_kb KiB)"
