#!/bin/bash
# rok export: Megatron-LM arguments, a DeepSpeed block and a PyTorch policy
# from a plan, with both predicted costs; bad input exits 2.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"

# The budget of 17 MB before fixed memory counted fp32 main gradients (+2 bytes per parameter).
"$rok" plan validate-gpt --hw cpu-2core-virtio --budget 18914368 --offload-min-elements 0 -o "$tmp/p" >/dev/null
out=$("$rok" export "$tmp/p/plan.json" --to megatron)
# The plan offloads whole layers to host memory (Transformer Engine's
# CPU offloading of N layers)...
expect_in "$out" "--cpu-offloading-num-layers"
expect_in "$out" "plan  "
expect_in "$out" "closest"
# ... and Megatron's selective recompute is the attention core.
"$rok" plan validate-gpt --hw cpu-2core-virtio -s selective -o "$tmp/sel" >/dev/null
expect_in "$("$rok" export "$tmp/sel/plan.json" --to megatron)" "--recompute-granularity selective --recompute-modules core_attn"
"$rok" export "$tmp/p/plan.json" --to deepspeed --json -o "$tmp/ds.json" > "$tmp/ds-out.json"
grep -q '"activation_checkpointing"' "$tmp/ds.json"
grep -q '"cpu_checkpointing"' "$tmp/ds.json"
grep -q '"predicted_closest"' "$tmp/ds-out.json"
"$rok" export "$tmp/p/plan.json" --to torch -o "$tmp/policy.json" >/dev/null
grep -q '"rok-torch-policy/1"' "$tmp/policy.json"
grep -q '"transformer.h.3.attn.c_attn"' "$tmp/policy.json"

# Full recomputation of every layer: Megatron's full granularity.
"$rok" plan validate-gpt --hw cpu-2core-virtio -s recompute -o "$tmp/r" >/dev/null
out=$("$rok" export "$tmp/r/plan.json" --to megatron)
expect_in "$out" "--recompute-granularity full --recompute-method block --recompute-num-layers 4"
out=$("$rok" export "$tmp/r/plan.json" --to deepspeed)
expect_in "$out" '"number_checkpoints": 4'
expect_in "$out" "wrap layers 0, 1, 2, 3"

expect_fail 2 "--to foo: must be megatron, deepspeed or torch" "$rok" export "$tmp/p/plan.json" --to foo
expect_fail 2 "the plan was made for another trace" "$rok" export "$tmp/p/plan.json" --to megatron --model gpt3-13b
small=(--set layers=2 --set seq_len=64)
"$rok" plan bert-large --hw cpu-2core-virtio -s keep "${small[@]}" -o "$tmp/b" >/dev/null
expect_fail 2 "module paths are known for GPT-2 and LLaMA-family models; bert is neither" \
  "$rok" export "$tmp/b/plan.json" --to torch "${small[@]}"
# A plan of the planner: Megatron's closest plan is the fastest of the
# mapping and the plans made anew with whole-layer decisions, so it is never
# slower within the budget than the mapping of a layer-granular plan.
"$rok" plan validate-gpt --hw cpu-2core-virtio --budget 20000000 --granularity layer --tiers keep,recompute \
  -o "$tmp/lay" >/dev/null
"$rok" export "$tmp/lay/plan.json" --to megatron --json > "$tmp/lay-out.json"
/usr/bin/python3 -c "
import json, sys
e, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
c = e['predicted_closest']
assert c['within_budget'], c
assert c['step_time_s'] <= p['predicted']['step_time_s'] * 1.0001 or 'anew' not in ' '.join(e['notes']), (c, p['predicted'])
" "$tmp/lay-out.json" "$tmp/lay/plan.json"
echo "export: ok"
