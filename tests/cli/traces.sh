#!/bin/bash
# The captured traces in traces/ stay readable: rok simulates each, and
# plans the smaller one at a budget under keep's peak.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
traces="$(dirname "$0")/../../traces"
for t in "$traces"/*.json; do
  out=$("$rok" simulate "$t" --hw cpu-2core-virtio)
  expect_in "$out" "strategy keep"
done
t="$traces/llama-style-l8-h1024-s128-cpu.json"
"$rok" plan "$t" --hw cpu-2core-virtio -s keep --json > "$tmp/keep.json"
peak=$(sed -n 's/.*"peak_bytes": \([0-9]*\).*/\1/p' "$tmp/keep.json" | head -1)
"$rok" plan "$t" --hw cpu-2core-virtio --budget $((peak - peak / 50)) --offload-min-elements 0 -n 4 -o "$tmp/p" >/dev/null
"$rok" export "$tmp/p/plan.json" --model "$t" --to torch -o "$tmp/policy.json" >/dev/null
grep -q '"model.layers.7.self_attn.o_proj"' "$tmp/policy.json"
echo "traces: ok"
