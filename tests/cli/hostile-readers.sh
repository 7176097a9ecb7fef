#!/bin/bash
# Hostile input that hostile.sh's files do not reach, made here from what
# rok and its sources give today (hostile-readers.py): plan.json edited by
# hand as `rok simulate --plan` and `rok export` read it, Hugging Face
# config.json files as `rok trace` and `rok import hf` read them, and traces
# captured by rok_torch (traces/) as `rok simulate` and `rok plan` read them.
# Each must exit 2 with one located message (hostile-lib.bash's reject).
# Then rok under small limits on processes and address space: exit 0, or
# 1 with a message, never a signal.
set -euo pipefail
rok="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
source "$(dirname "$0")/lib.bash"
here="$(cd "$(dirname "$0")" && pwd)"
data="$tmp/made"
source "$here/hostile-lib.bash"
mkdir -p "$data"/{plan,hf,captured}

hw=a100-40g-pcie4-4xp5800x
model="$tmp/model.json"
echo '{"name": "hostile-tiny", "arch": "gpt", "layers": 2, "hidden": 128, "heads": 4, "seq_len": 64,
  "micro_batch": 2, "vocab": 512, "ffn_hidden": 512}' > "$model"
"$rok" plan "$model" --hw $hw --budget 20MiB --json > "$tmp/plan.json"
/usr/bin/python3 "$here/hostile-readers.py" plan "$tmp/plan.json" "$data/plan"
/usr/bin/python3 "$here/hostile-readers.py" hf "$here/../data/hf/llama-3.1-8b.json" "$data/hf"
captured="$here/../../traces/gpt2-small-s128-cpu.json"
/usr/bin/python3 "$here/hostile-readers.py" captured "$captured" "$data/captured"

# FILE<TAB>TEXT as in expected.txt, but ":L:C:" stands for any line and
# column: these files are made from today's output, whose lines move.
expected=$(cat <<'EOF'
plan/sha256-wrong.json	:L:C: "trace_sha256": the plan was made for another trace
plan/sha256-short.json	:L:C: "trace_sha256": the plan was made for another trace
plan/sha256-number.json	:L:C: "trace_sha256": must be a string, not 5
plan/budget-nan.json	:L:C: NaN is not a JSON number
plan/budget-1e400.json	:L:C: number 1e400 is too large
plan/budget-2pow64.json	:L:C: integer 18446744073709551616 does not fit in 64 bits
plan/budget-string.json	:L:C: "budget_bytes": must be an integer from 0 to 4611686018427387904, not "20MiB"
plan/duplicate-key.json	:L:C: duplicate key "strategy"
plan/feasible-string.json	:L:C: "feasible": must be true or false, not "yes"
plan/format-missing.json	: no "format" member: not a rok-plan/1 file
plan/strategy-unknown.json	:L:C: "strategy": unknown strategy "teleport"
plan/decision-number.json	:L:C: "tensors[3].decision": must be one of "keep", "offload-nvme", "offload-host", "recompute", not 7
plan/decision-unknown.json	:L:C: "tensors[3].decision": must be one of "keep", "offload-nvme", "offload-host", "recompute", not "teleport"
plan/tensor-unknown-name.json	:L:C: "tensors[3]": expected saved tensor
plan/tensor-id-huge.json	:L:C: "tensors[3]": expected saved tensor
plan/tensor-bytes-wrong.json	:L:C: "tensors[3]": expected saved tensor
plan/tensor-layer-string.json	:L:C: "tensors[3].layer": must be an integer from -1 to
plan/tensor-missing.json	:L:C: "tensors[3]": expected saved tensor
plan/tensor-extra.json	:L:C: "tensors[37]": the trace has only 37 saved tensors
plan/tensors-object.json	:L:C: "tensors": must be an array, not an object
plan/options-unknown-key.json	:L:C: "options.prefetch_windw": unknown key; did you mean "prefetch_window"?
plan/options-window-huge.json	:L:C: "options.prefetch_window": must be an integer from 0 to
plan/options-window-negative.json	:L:C: "options.prefetch_window": must be an integer from 0 to
plan/options-unit-unknown.json	:L:C: "options.prefetch_unit": must be one of "layer", "module", "op", not "galaxy"
plan/options-rebuild-number.json	:L:C: "options.rebuild_whole_layers": must be true or false, not 1
plan/truncated.json	:L:C: unexpected end of data
plan/array.json	: the document must be a JSON object, not an array
hf/hidden-1e12.json	:L:C: "hidden_size": must be an integer from 1 to 4294967295, not 1000000000000
hf/hidden-1e12-float.json	:L:C: "hidden_size": must be an integer from 1 to 4294967295, not 1e12
hf/hidden-nan.json	:L:C: NaN is not a JSON number
hf/layers-1e9.json	 (as `rok import hf` prints it):L:C: "layers": must be an integer from 1 to 2048, not 1000000000
hf/layers-zero.json	:L:C: "num_hidden_layers": must be an integer from 1 to 4294967295, not 0
hf/layers-string.json	:L:C: "num_hidden_layers": must be an integer from 1 to 4294967295, not "32"
hf/heads-fraction.json	:L:C: "num_attention_heads": must be an integer from 1 to 4294967295, not 32.5
hf/heads-not-dividing.json	 (as `rok import hf` prints it):L:C: "heads": must divide "hidden" (or give "head_dim")
hf/kv-heads-over-heads.json	 (as `rok import hf` prints it):L:C: "kv_heads": must divide "heads"
hf/intermediate-2pow40.json	:L:C: "intermediate_size": must be an integer from 1 to 4294967295, not 1099511627776
hf/vocab-array.json	:L:C: "vocab_size": must be an integer from 1 to 4294967295, not an array
hf/max-positions-1e15.json	:L:C: "max_position_embeddings": must be an integer from 1 to 4294967295
hf/tie-string.json	:L:C: "tie_word_embeddings": must be true or false, not "false"
hf/model-type-unknown.json	:L:C: "model_type": "bloom" is not a model type rok imports
hf/model-type-number.json	:L:C: "model_type": must be a string, not 7
hf/model-type-missing.json	: required member "model_type" is missing
hf/hidden-missing.json	: required member "hidden_size" is missing
hf/kv-heads-zero.json	:L:C: "num_key_value_heads": must be an integer from 1 to 4294967295, not 0
hf/torch-dtype-unknown.json	:L:C: "torch_dtype": "float7" is not modelled by rok (not a torch dtype)
hf/rope-scaling-string.json	:L:C: "rope_scaling": expected an object or null
hf/rope-theta-string.json	:L:C: "rope_theta": must be a number from 0 to 1e+300, not "big"
hf/all-absurd.json	:L:C: "hidden_size": must be an integer from 1 to 4294967295, not 1000000000000
hf/truncated.json	:L:C: unexpected end of data
hf/array.json	: 
captured/time-nan.json	:L:C: NaN is not a JSON number
captured/time-negative.json	:L:C: "ops[1].fwd_time_s": must be a number from 0 to 1e+06, not -0.001
captured/time-past-limit.json	:L:C: "ops[1].bwd_time_s": must be a number from 0 to 1e+06, not 10000000.0
captured/flops-1e19.json	:L:C: "ops[14].fwd_flops": must be an integer from 0 to 4611686018427387904, not 10000000000000000000
captured/bytes-2pow64.json	:L:C: "ops[14].bwd_bytes": must be an integer from 0 to 4611686018427387904, not 18446744073709551615
captured/dims-negative.json	:L:C: "ops[14].dims[1]": must be an integer from 0 to
captured/kind-number.json	:L:C: "ops[14].kind": must be one of "input", "embedding",
captured/op-name-escape.json	:L:C: "ops[1].name": must not contain control characters (U+001B)
captured/input-later-tensor.json	:L:C: "ops[1].inputs[0]": tensor 212 is made by op 326, not by an op before this one
captured/micro-batches-zero.json	:L:C: "micro_batches_per_step": must be an integer from 1 to 4096, not 0
captured/micro-batches-1e6.json	:L:C: "micro_batches_per_step": must be an integer from 1 to 4096, not 1000000
captured/micro-batches-not-model.json	:L:C: "micro_batches_per_step": must be 1, global_batch / (micro_batch × data_parallel) of the trace's model
captured/tokens-zero.json	:L:C: "tokens_per_micro_batch": must be an integer from 1 to 281474976710656, not 0
captured/layers-past-limit.json	:L:C: "layers": must be an integer from 0 to 2048, not 2049
captured/model-layers-mismatch.json	:L:C: "layers": must be 13, the layers of pipeline stage 0 of the trace's model
captured/stage-without-pipeline.json	:L:C: "pipeline_stage": must be an integer from 0 to 0, not 1
captured/weights-2pow63.json	:L:C: "fixed.weight_bytes": must be an integer from 0 to 4611686018427387904, not 9223372036854775808
captured/dtype-unknown.json	:L:C: "tensors[3].dtype": must be one of "bf16", "fp16", "fp32", "u8", "u16", "u32", "i64", "e4m3", not "float7"
captured/shape-overflow.json	:L:C: "tensors[3].shape": is too large: its bytes do not fit 64 bits
EOF
)

# located FILE TEXT ROK-ARGUMENTS...: reject, with TEXT's ":L:C:" matched
# as a line and a column.
located() {
  local path=$1 text=$2 head tail
  shift 2
  if [[ "$text" != *":L:C:"* ]]; then
    reject "$path" "$text" "$@"
    return
  fi
  head=${text%%:L:C:*} tail=${text#*:L:C:}
  reject "$path$head:" "" "$@"
  grep -qP -- "\Q$path$head\E:\d+:\d+:\Q$tail\E" "$tmp/stderr" ||
    { echo "FAIL: rok $*: expected $path$text" >&2; cat "$tmp/stderr" >&2; exit 1; }
}

out="$tmp/cwd/out"
declare -A listed
while IFS=$'\t' read -r file text; do
  path="$data/$file"
  [ -f "$path" ] || { echo "FAIL: no file $file was made" >&2; exit 1; }
  listed[$file]=1
  case $file in
    plan/*)
      located "$path" "$text" simulate "$model" --hw $hw --plan "$path"
      located "$path" "$text" export "$path" --to megatron -m "$model" ;;
    hf/*)
      located "$path" "$text" trace "$path" -o "$out.json"
      located "$path" "$text" import hf "$path" -o "$out.json" ;;
    captured/*)
      located "$path" "$text" simulate "$path" --hw cpu-2core-virtio
      located "$path" "$text" plan "$path" --hw cpu-2core-virtio -o "$out" ;;
  esac
done <<<"$expected"
for path in "$data"/*/*; do
  [ -n "${listed[${path#"$data"/}]+set}" ] || { echo "FAIL: ${path#"$data"/} has no expected message" >&2; exit 1; }
done
echo "hostile-readers: $cases hostile inputs refused, each with a located message"

# Small limits. runs LIMIT... -- ROK-ARGUMENTS: rok must exit 0, or 1 with
# one message, and not die by a signal (an abort on a thread it could not
# start, say).
limited() {
  local limits=() status=0
  while [ "$1" != -- ]; do limits+=("$1"); shift; done
  shift
  timeout -s KILL 120 "${limits[@]}" "$rok" "$@" >/dev/null 2>"$tmp/stderr" </dev/null || status=$?
  if [ "$status" -ne 0 ] && { [ "$status" -ne 1 ] || [ "$(grep -c "^rok " "$tmp/stderr")" -ne 1 ]; }; then
    echo "FAIL: under ${limits[*]}: rok $*: exit $status" >&2
    cat "$tmp/stderr" >&2
    exit 1
  fi
  [ "${ROK_HOSTILE_VERBOSE:-0}" = 0 ] || echo "exit $status under ${limits[*]}: rok $*: $(cat "$tmp/stderr")"
}

# LeakSanitizer needs a thread of its own at exit, which these limits deny.
! sanitized || export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# RLIMIT_NPROC counts every process of the user and binds only users other
# than root: as root, run rok as nobody, whose processes are few.
has_device=0
"$rok" execute --list-devices >/dev/null 2>&1 && has_device=1
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && command -v prlimit >/dev/null && id nobody >/dev/null 2>&1; then
  chmod 711 "$tmp"
  chmod 644 "$model"
  mkdir -m 777 "$tmp/shared"
  "$rok" plan "$model" --hw cpu-2core-virtio --strategy keep -o "$tmp/keep" >/dev/null
  chmod -R a+rX "$tmp/keep"
  as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$tmp/shared")
  for n in 1 3 8; do
    nproc=(prlimit --nproc=$n)
    limited "${as_nobody[@]}" "${nproc[@]}" -- trace "$model" -o "$tmp/shared/t$n.json"
    limited "${as_nobody[@]}" "${nproc[@]}" -- plan "$model" --hw cpu-2core-virtio -o "$tmp/shared/p$n"
    limited "${as_nobody[@]}" "${nproc[@]}" -- sweep "$model" --hw cpu-2core-virtio --micro-batch 1,2 \
      -o "$tmp/shared/s$n"
    [ "$has_device" = 0 ] ||
      limited "${as_nobody[@]}" "${nproc[@]}" -- execute "$tmp/keep/schedule.json" --repeat 1
  done
  echo "hostile-readers: RLIMIT_NPROC of 1, 3 and 8: no signal"
else
  echo "hostile-readers: RLIMIT_NPROC not tried (needs root to run as nobody)"
fi

# RLIMIT_AS: too small for the OpenCL runtime's threads, an error; enough
# (plain builds only: AddressSanitizer reserves terabytes), a run.
if [ "$memory_kb" != unlimited ] && [ "$has_device" = 1 ]; then
  [ -d "$tmp/keep" ] || "$rok" plan "$model" --hw cpu-2core-virtio --strategy keep -o "$tmp/keep" >/dev/null
  for kb in 150000 1572864; do
    limited bash -c 'ulimit -v "$0" && exec "$@"' "$kb" -- execute "$tmp/keep/schedule.json" --repeat 1
  done
  echo "hostile-readers: rok execute under RLIMIT_AS of 150 MB to 1.5 GB: no signal"
fi
