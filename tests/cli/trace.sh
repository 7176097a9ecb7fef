#!/bin/bash
# rok trace as a user runs it: tables, JSON, files, and bad input.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"

out=$("$rok" trace gpt3-13b --hw a100-40g-pcie4-4xp5800x)
expect_in "$out" "Layers 0–39 (alike"
expect_in "$out" "Korthikanti et al."
expect_in "$out" "Parameters: 12.9"
expect_in "$out" "it does not fit"

# JSON on stdout and in a file, byte-identical, and the same on a second run.
"$rok" trace llama2-70b --json > "$tmp/a.json"
"$rok" trace llama2-70b -o "$tmp/b.json" > /dev/null
cmp "$tmp/a.json" "$tmp/b.json"
"$rok" trace llama2-70b --json | cmp - "$tmp/a.json"
grep -q '"format": "rok-trace/1"' "$tmp/a.json"
# A written trace reads back as the input of the same command.
"$rok" trace "$tmp/a.json" --json | cmp - "$tmp/a.json"

# A trace read from a pipe (it can be read only once).
"$rok" trace llama2-70b --json | "$rok" trace /dev/stdin --json | cmp - "$tmp/a.json"

# --set changes the model; its bad values name the option.
"$rok" trace gpt3-1.3b --set micro_batch=4 --json > "$tmp/set.json"
grep -q '"micro_batch": 4' "$tmp/set.json"
expect_fail 2 "--set micro_batch=many" "$rok" trace gpt3-1.3b --set micro_batch=many
expect_fail 2 "a trace file has no model config" "$rok" trace "$tmp/a.json" --set micro_batch=2

# Bad configs: exit 2, the file and place named, nothing written.
printf '{"arch": "gpt",\n  "layers": 2,\n  "hidden": 64 64}\n' > "$tmp/syntax.json"
expect_fail 2 "syntax.json:3:" "$rok" trace "$tmp/syntax.json" -o "$tmp/never.json"
test ! -e "$tmp/never.json"
echo '{"arch": "gpt", "layers": 2, "hidden": 64, "heads": 2, "seq_len": 8, "micro_batch": 1, "hidn": 3}' > "$tmp/key.json"
expect_fail 2 '"hidn": unknown key' "$rok" trace "$tmp/key.json"
echo '{"arch": "gpt", "layers": 2, "hidden": 64, "heads": 2, "seq_len": 8, "micro_batch": -1}' > "$tmp/neg.json"
expect_fail 2 '"micro_batch"' "$rok" trace "$tmp/neg.json"
expect_fail 2 "no such file, nor a bundled model config" "$rok" trace no-such-model
expect_fail 2 "missing MODEL" "$rok" trace
expect_fail 2 "Unknown option" "$rok" trace gpt3-13b --frobnicate
expect_fail 2 "unknown command" "$rok" frobnicate

# Help, and a full disk behind stdout is an error.
expect_in "$("$rok" help trace)" "--hw"
expect_in "$("$rok" trace --help)" "Exit codes"
if [ -w /dev/full ]; then
  expect_fail 1 "writing standard output" "$rok" trace gpt3-175b --json ">/dev/full"
fi
echo "trace: all checks passed"
