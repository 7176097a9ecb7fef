#!/bin/bash
# rok import hf / megatron, and Hugging Face config.json files read
# directly: parameter counts against what transformers instantiates
# (tests/data/hf/transformers_params.py, module by module) and the
# published counts; refusals with exit 2 and located messages.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
data=$(cd "$(dirname "$0")/../data/hf" && pwd)
python=/usr/bin/python3
[ -x "$python" ] || { echo "python3 not installed: skipped"; exit 77; }

params() { # MODEL [ARGS...]: the whole model's parameters as rok counts them
  "$rok" trace "$@" --json 2>/dev/null | "$python" -c "import json,sys; print(json.load(sys.stdin)['fixed']['params_total'])"
}

# Published: the model cards' safetensors parameter counts (exact) or the
# papers' rounded totals (in billions, to 3 significant figures).
declare -A published=(
  [llama-3.1-8b]=8030261248 [llama-3.1-70b]=70553706496 [llama-3.1-405b]=405853388800
  [llama-2-7b-hf]=6738415616 [llama-3.2-1b]=1.24 [mistral-7b-v0.1]=7241732096
  [mixtral-8x7b-v0.1]=46702792704 [mixtral-8x22b-v0.1]=141 [qwen2-7b]=7615616512 [qwen2.5-7b]=7615616512
  [qwen2.5-72b]=72.7 [qwen2.5-0.5b]=0.494 [qwen1.5-moe-a2.7b]=14.3 [gpt2]=124439808 [pythia-160m]=162322944
  [gemma-2-9b]=9241705984 [gemma-2-27b]=27.2 [deepseek-v3]=671 [deepseek-v2-lite]=15.7
)
for f in "$data"/*.json; do
  name=$(basename "$f" .json)
  [ "$name" = unsupported-falcon ] && continue
  expected=$("$python" "$data/transformers_params.py" "$f")
  direct=$(params "$f")
  "$rok" import hf "$f" -o "$tmp/$name.json" 2>/dev/null
  imported=$(params "$tmp/$name.json")
  [ "$direct" = "$expected" ] && [ "$imported" = "$expected" ] ||
    { echo "$name: rok counts $direct (imported: $imported), transformers $expected" >&2; exit 1; }
  want=${published[$name]}
  "$python" -c "
import sys
n, want = int(sys.argv[1]), sys.argv[2]
ok = n == int(want) if len(want) > 5 else f'{n / 1e9:.3g}' == want
sys.exit(0 if ok else 1)" "$direct" "$want" || { echo "$name: $direct parameters, published $want" >&2; exit 1; }
  echo "$name: $direct parameters, as transformers and the published count"
done

# Qwen2-7B's q, k and v biases: 28 layers × (3584 + 2 × 512).
with=$(params "$data/qwen2-7b.json")
without=$(params "$data/qwen2-7b.json" --set qkv_bias=false)
[ $((with - without)) -eq 129024 ] || { echo "Qwen2-7B biases: $((with - without)), not 129024" >&2; exit 1; }

# The imported config is a rok config: it reads back to itself.
"$rok" import hf "$data/mixtral-8x7b-v0.1.json" --set seq_len=8192 -o "$tmp/a.json" 2>/dev/null
expect_fail 2 "not a Hugging Face config.json" "$rok" import hf "$tmp/a.json"
"$rok" trace "$tmp/a.json" --json 2>/dev/null >"$tmp/t.json"
"$python" -c "
import json, sys
a, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))['model']
assert a == t, (a, t)
assert a['experts'] == 8 and a['top_k'] == 2 and a['seq_len'] == 8192 and a['attention'] == 'flash'" "$tmp/a.json" "$tmp/t.json"

# The training side from an overlay file, --set after it winning.
printf '{"seq_len": 2048, "micro_batch": 4, "tensor_parallel": 2}\n' >"$tmp/overlay.json"
"$rok" trace "$data/llama-3.1-8b.json" --overlay "$tmp/overlay.json" --set micro_batch=2 --json >"$tmp/t.json"
"$python" -c "
import json, sys
m = json.load(open(sys.argv[1]))['model']
assert (m['seq_len'], m['micro_batch'], m['tensor_parallel']) == (2048, 2, 2), m" "$tmp/t.json"

# Refusals: an unknown model_type names itself and what is supported.
expect_fail 2 '"model_type": "falcon" is not a model type rok imports (supported: llama, mistral, mixtral, qwen2' \
  "$rok" import hf "$data/unsupported-falcon.json"
expect_fail 2 'is not a model type rok imports' "$rok" trace "$data/unsupported-falcon.json"
sed 's/"hidden_size": 4096/"hidden_size": "4096"/' "$data/llama-3.1-8b.json" >"$tmp/bad.json"
expect_fail 2 "bad.json:11:18: \"hidden_size\": must be an integer from 1 to 4294967295, not \"4096\"" "$rok" import hf "$tmp/bad.json"
sed 's/"use_sliding_window": false/"use_sliding_window": true/' "$data/qwen2-7b.json" >"$tmp/window.json"
expect_fail 2 '"use_sliding_window": true is not modelled by rok' "$rok" plan "$tmp/window.json" --hw a100-40g-pcie4-4xp5800x
expect_fail 2 '"context_parallel": must be an integer from 1 to 1' "$rok" trace "$data/qwen2-7b.json" --set context_parallel=2
expect_fail 2 'must divide "experts"' "$rok" trace "$data/mixtral-8x7b-v0.1.json" --set expert_parallel=3
expect_fail 0 'the all-to-all dispatch and combine between expert-parallel ranks are not modelled' \
  "$rok" trace "$data/mixtral-8x7b-v0.1.json" --set expert_parallel=8

# Megatron-LM's arguments: LLaMA-3 8B under tensor parallelism 8, the
# vocabulary padded to a multiple of 128 × 8 (129024 rows, 768 more).
llama=(--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention
  --num-query-groups 8 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 1024
  --tensor-model-parallel-size 8 --sequence-parallel --swiglu --normalization RMSNorm --position-embedding-type rope
  --disable-bias-linear --untie-embeddings-and-output-weights --vocab-size 128256 --bf16 --use-flash-attn
  --lr 3e-4 --data-path /data/x --recompute-activations)
"$rok" import megatron "${llama[@]}" -o "$tmp/m.json" 2>"$tmp/notes"
expect_in "$(cat "$tmp/notes")" "read past (no effect on memory, or rok decides it): --lr --data-path --recompute-activations"
[ "$(params "$tmp/m.json")" = $((8030261248 + 2 * 768 * 4096)) ] || { echo "megatron llama: $(params "$tmp/m.json")" >&2; exit 1; }
# DDP buckets and the overlapped gathers are views into the buffers rok
# counts (docs/training.md, "Framework buffers"): read past, same config.
"$rok" import megatron "${llama[@]}" --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
  --ddp-bucket-size 100000000 -o "$tmp/ddp.json" 2>"$tmp/notes"
expect_in "$(cat "$tmp/notes")" "--overlap-grad-reduce --overlap-param-gather --ddp-bucket-size"
"$rok" import megatron "${llama[@]}" --use-distributed-optimizer -o "$tmp/dist.json" 2>/dev/null
cmp -s "$tmp/ddp.json" "$tmp/dist.json" || { echo "megatron: DDP bucket arguments changed the config" >&2; exit 1; }
"$rok" import megatron "${llama[@]}" --num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 4 \
  -o "$tmp/moe.json" 2>/dev/null
"$python" -c "
import json, sys
m = json.load(open(sys.argv[1]))
assert (m['arch'], m['kv_heads'], m['tensor_parallel'], m['sequence_parallel'], m['experts'], m['top_k'],
        m['expert_parallel'], m['dtype'], m['attention'], m['vocab_divisible_by']) == \
       ('llama', 8, 8, True, 8, 2, 4, 'bf16', 'flash', 128), m" "$tmp/moe.json"
# Transformer Engine's FP8 recipe carries over; on experts it is refused.
"$rok" import megatron "${llama[@]}" --fp8-format hybrid -o "$tmp/fp8.json" 2>/dev/null
"$python" -c "
import json, sys
assert json.load(open(sys.argv[1]))['fp8'] == 'hybrid'" "$tmp/fp8.json"
expect_fail 2 'fp8 on a mixture of experts is not modelled' "$rok" import megatron "${llama[@]}" --fp8-format e4m3 \
  --num-experts 8 --moe-router-topk 2
expect_fail 2 '--context-parallel-size 2: context parallelism' "$rok" import megatron "${llama[@]}" --context-parallel-size 2
expect_fail 2 '--num-layer: a Megatron-LM argument rok does not know' "$rok" import megatron "${llama[@]}" --num-layer 3
expect_fail 2 '--vocab-size: needed' "$rok" import megatron --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1

# Sliding windows: flash attention does the work inside the window only;
# standard attention keeps every score (masked), as PyTorch saves it.
flops() { "$rok" trace "$data/mistral-7b-v0.1.json" --set seq_len=16384 "$@" --json 2>/dev/null | "$python" -c "
import json, sys
t = json.load(sys.stdin)
print(sum(o['fwd_flops'] for o in t['ops'] if o['kind'] == 'flash_attention'))"; }
windowed=$(flops) full=$(flops --set sliding_window=0)
"$python" -c "
import sys
w, f, s, k = int(sys.argv[1]), int(sys.argv[2]), 16384, 4096
share = (k * (k + 1) / 2 + (s - k) * k) / (s * (s + 1) / 2)
assert abs(w / f - share) < 1e-6, (w / f, share)" "$windowed" "$full"
# MoE schedules from the Hugging Face configs, shrunk, execute where an
# OpenCL device exists: keep, recompute, offload and a tight rok plan give
# one gradient checksum and check every copy. Expert parallelism, whose
# all-to-all rok does not model, is refused plainly.
tiny=(--set layers=2 --set hidden=64 --set heads=4 --set kv_heads=2 --set ffn_hidden=128 --set expert_ffn_hidden=128
  --set vocab=256 --set seq_len=64 --set micro_batch=2 --set dtype=fp32)
moe_field() { grep -o "\"$2\": [\"0-9a-f]*" "$1" | head -n 1 | sed 's/.*: "*//; s/"$//'; }
for cfg in mixtral-8x7b-v0.1 qwen1.5-moe-a2.7b; do
  extra=()
  [ "$cfg" = qwen1.5-moe-a2.7b ] && extra=(--set experts=6 --set top_k=2 --set shared_expert_ffn_hidden=128)
  for s in keep recompute offload; do
    "$rok" plan "$data/$cfg.json" --hw cpu-2core-virtio "${tiny[@]}" "${extra[@]}" --strategy "$s" \
      -o "$tmp/moe-$s" >/dev/null 2>&1
  done
  # The tightest budget of the curve with no host memory: to the SSDs.
  "$rok" plan "$data/$cfg.json" --hw cpu-2core-virtio "${tiny[@]}" "${extra[@]}" --host-memory 0 \
    -o "$tmp/moe-curve" >/dev/null 2>&1
  budget=$(sed -n 2p "$tmp/moe-curve/rok-curve.csv" | cut -d, -f2)
  "$rok" plan "$data/$cfg.json" --hw cpu-2core-virtio "${tiny[@]}" "${extra[@]}" --budget "$budget" --host-memory 0 \
    -o "$tmp/moe-rok" >/dev/null 2>&1
  "$rok" execute --list-devices >/dev/null 2>&1 || continue
  sum=""
  for s in keep recompute offload rok; do
    mkdir -p "$tmp/moe-disk"
    "$rok" execute "$tmp/moe-$s/schedule.json" --dir "$tmp/moe-disk" --repeat 1 --json > "$tmp/moe-$s.json"
    [ "$(moe_field "$tmp/moe-$s.json" integrity_failures)" = 0 ]
    this=$(moe_field "$tmp/moe-$s.json" gradient_checksum)
    [ -n "$sum" ] || sum=$this
    [ "$this" = "$sum" ] || { echo "$cfg $s: gradient checksum $this, keep gave $sum" >&2; exit 1; }
  done
  [ "$(moe_field "$tmp/moe-rok.json" nvme_write_bytes)" -gt 0 ] || { echo "$cfg: the tight plan wrote nothing" >&2; exit 1; }
done
if "$rok" execute --list-devices >/dev/null 2>&1; then
  "$rok" plan "$data/mixtral-8x7b-v0.1.json" --hw cpu-2core-virtio "${tiny[@]}" --set expert_parallel=2 \
    -o "$tmp/moe-ep" >/dev/null 2>&1
  expect_fail 2 "expert parallelism (2 ranks) needs the all-to-all dispatch" \
    "$rok" execute "$tmp/moe-ep/schedule.json" --dir "$tmp"
fi
echo "all import checks passed"
