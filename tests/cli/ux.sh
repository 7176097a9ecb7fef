#!/bin/bash
# What a user types and reads (issue 20): sizes as people write them,
# did-you-mean for options and commands, --set against --hw-set, profile
# plausibility warnings, one meaning per short option, the batch semantics
# and the per-GPU figures said in the output, "no plan fits" explained, and
# the chart options (SVG text as text).
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
hw=a100-40g-pcie4-4xp5800x

# Sizes: rounded to the byte and said so; any case, read as the unit spelled.
"$rok" simulate ssdtrain-bert --hw $hw --budget 26.8GiB >/dev/null 2>"$tmp/err"
expect_in "$(cat "$tmp/err")" '--budget: "26.8GiB" is 28776280883.2 bytes: rounded to 28776280883 B'
"$rok" simulate ssdtrain-bert --hw $hw -b 30gb >/dev/null 2>"$tmp/err"
expect_in "$(cat "$tmp/err")" 'read "30gb" as "30GB"'
"$rok" simulate ssdtrain-bert --hw $hw -b 30gib --json >"$tmp/sim.json" 2>/dev/null
expect_in "$(cat "$tmp/sim.json")" '"budget_bytes": 32212254720'
expect_fail 2 'invalid size "30gx"' "$rok" plan ssdtrain-bert --hw $hw --budget 30gx

# Did you mean: long options and commands.
expect_fail 2 'Unknown option --budjet; did you mean "--budget"?' "$rok" plan ssdtrain-bert --hw $hw --budjet 30GiB
expect_fail 2 'did you mean "--micro-batch"?' "$rok" sweep ssdtrain-bert --hw $hw --micro-bach 8
expect_fail 2 'unknown command "plna"; did you mean "plan"?' "$rok" plna

# --set is the model's, --hw-set the profile's.
expect_fail 2 '--set overrides model-config fields; "nvme.devices" is a hardware-profile field: use --hw-set nvme.devices=2' \
  "$rok" plan ssdtrain-bert --hw $hw --set nvme.devices=2
expect_fail 2 'use --hw-set nvme.devices=2' "$rok" sweep ssdtrain-bert --hw $hw --micro-batch 4 --set nvme.devices=2
"$rok" simulate ssdtrain-bert --hw $hw --hw-set nvme.devices=2 --strategy offload --json >"$tmp/two.json"
"$rok" simulate ssdtrain-bert --hw $hw --strategy offload --json >"$tmp/four.json"
cmp -s "$tmp/two.json" "$tmp/four.json" && { echo "--hw-set nvme.devices=2 changed nothing" >&2; exit 1; }
expect_fail 2 '--hw-set gpu.memry=1: "gpu.memry": unknown key; did you mean "memory"?' "$rok" simulate ssdtrain-bert --hw $hw --hw-set gpu.memry=1
expect_fail 2 'for a model-config field use --set micro_batch=3' "$rok" plan ssdtrain-bert --hw $hw --hw-set micro_batch=3
expect_fail 2 '--hw-set x=1: no hardware profile to change' "$rok" trace ssdtrain-bert --hw-set x=1

# Plain numbers in a profile are bytes and seconds: implausible ones warned.
"$rok" simulate ssdtrain-bert --hw $hw --hw-set nvme.latency=70 --hw-set gpu.memory=80GB >/dev/null 2>"$tmp/err"
expect_in "$(cat "$tmp/err")" 'warning: --hw-set nvme.latency=70: "nvme.latency": 70 is 1.17 min: a plain number is seconds'
expect_in "$(cat "$tmp/err")" '"80GB" is 74.5 GiB (decimal units); GPU memory sold as "80 GB" holds 80 GiB'

# Global batch broken by --set micro_batch: the fix is named.
expect_fail 2 'a micro_batch that divides 16 (1, 2, 4, 8, 16), or global_batch 960 or 1152' \
  "$rok" plan gpt3-13b --hw $hw --set micro_batch=3

# -b is --budget in every command that takes one.
"$rok" sweep ssdtrain-bert --hw $hw --micro-batch 4 -b 30GiB -s keep --json >"$tmp/sweep.json"
expect_in "$(cat "$tmp/sweep.json")" '"budget_bytes": 32212254720'
out=$("$rok" sweep ssdtrain-bert --hw $hw --micro-batch 4 -s keep)
expect_in "$out" "keeps the config's micro-batches per step"
expect_in "$out" 'MFU: model FLOPs'

# Throughput per GPU, model FLOP/s and MFU, with the basis said. TP 2 over
# this profile's PCIe peer-to-peer (20 GB/s) exposes 1.4 s of all-reduces
# per step (the column-parallel backward's hidden under their GEMMs, as
# Megatron runs them) and 2.65 s of data-parallel reduction: MFU 31.9%
# (45.7% with compute alone).
out=$("$rok" simulate gpt3-13b --hw $hw)
expect_in "$out" 'tokens/s per copy of the model (2 GPUs: TP 2)'
expect_in "$out" '16 micro-batches of 1 sequence per step on each of 64 data-parallel copies (global batch 1024)'
expect_in "$out" 'MFU 31.9% of the 312 TFLOP/s peak'
"$rok" simulate gpt3-13b --hw $hw --json >"$tmp/s.json"
for key in tokens_per_gpu_s model_flops_per_gpu_s mfu replica_gpus; do expect_in "$(cat "$tmp/s.json")" "\"$key\""; done

# No plan fits: the fixed memory and the levers.
expect_fail 3 'weights 12.6 GiB + gradients 25.1 GiB + optimizer states 602 MiB = 38.2 GiB' \
  "$rok" plan llama2-7b --hw $hw --hw-set gpu.memory=24GiB
expect_in "$(cat "$tmp/stderr")" 'more than the budget by itself'
expect_in "$(cat "$tmp/stderr")" '--budget 39.0GiB or more'
expect_in "$(cat "$tmp/stderr")" 'LoRA'

# The SSD section explains its numbers (SSDTrain's tiers: at 39 GiB the
# plan of all four offloads to host memory only, as fast).
out=$("$rok" plan gpt3-13b --hw $hw --budget 39GiB --tiers keep,nvme,recompute)
expect_in "$out" 'The SSDs write faster than SSDTrain'"'"'s rule needs'
out=$("$rok" plan gpt3-1.3b --hw $hw --strategy offload --min-ssd-lifetime 0)
expect_in "$out" 'The decisions table sends 9.56 GiB per micro-batch to the SSDs'

# Charts: size, font, title; SVG text is text, not glyph outlines.
"$rok" plan ssdtrain-bert --hw $hw --budget 26GiB -o "$tmp/plan" --width 500 --height 300 --font-size 9 \
  --title "BERT at 26 GiB" >/dev/null
svg=$(cat "$tmp/plan/rok-curve.svg")
expect_in "$svg" 'width="500pt" height="300pt"'
expect_in "$svg" '>BERT at 26 GiB</text>'
expect_in "$svg" '>plan chosen at 26.0 GiB</text>'
expect_in "$svg" '>Throughput per copy of the model (k tokens/s)</text>'
if grep -q '<symbol' "$tmp/plan/rok-curve.svg"; then echo "SVG has glyph symbols" >&2; exit 1; fi
"$rok" plot "$tmp/plan/plan.json" -o "$tmp/again.svg" --width 500 --height 300 --font-size 9 --title "BERT at 26 GiB"
cmp "$tmp/plan/rok-curve.svg" "$tmp/again.svg"
expect_fail 2 '--font-size must be 6 to 36 points' "$rok" plot "$tmp/plan/plan.json" -o "$tmp/x.png" --font-size 99
echo "ux: ok"
