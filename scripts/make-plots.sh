#!/bin/sh
# Regenerate the example charts in plots/ (shown in README.md) from the
# bundled configs with the built rok. The charts are deterministic: running
# this again on the same sources gives the same bytes.
# Usage: scripts/make-plots.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rok=$build/rok
if [ ! -x "$rok" ]; then
  echo "make-plots.sh: $rok not found; build first (scripts/build.sh)" >&2
  exit 1
fi
out=$root/plots
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

# sweep NAME MODEL HW RANGE [SVG]: throughput and memory against micro-batch
# size, as NAME-throughput.png and NAME-memory.png (and .svg with SVG=svg).
sweep() {
  "$rok" sweep "$2" --hw "$3" --micro-batch "$4" -o "$tmp/$1" > /dev/null
  for chart in throughput memory; do
    cp "$tmp/$1/$chart.png" "$out/$1-$chart.png"
    if [ "${5:-}" = svg ]; then cp "$tmp/$1/$chart.svg" "$out/$1-$chart.svg"; fi
  done
  echo "plots/$1-throughput.png, plots/$1-memory.png"
}

# SSDTrain's BERT on SSDTrain's machine: offloading fits micro-batches
# about twice as large as keeping everything, at the same throughput.
sweep ssdtrain-bert ssdtrain-bert a100-40g-pcie4-4xp5800x 2:64:2 svg
# GPT-3 13B on an A100 80 GB whose SSDs go through host memory: where
# recompute, selective recompute and offloading each stop fitting.
sweep gpt3-13b gpt3-13b a100-80g-sxm-4x980pro 1:16

# The ROK curve of SSDTrain's BERT: the planner's throughput at every
# activation budget, with the plan chosen at a 26 GiB budget and the
# baselines as the plan's table reports them under it (rok plot re-draws it
# from the plan file).
"$rok" plan ssdtrain-bert --hw a100-40g-pcie4-4xp5800x --budget 26GiB -o "$tmp/plan" > /dev/null
"$rok" plot "$tmp/plan/plan.json" -o "$out/ssdtrain-bert-rok-curve.png"
echo "plots/ssdtrain-bert-rok-curve.png"

# One step of SSDTrain's BERT under tba: compute, SSD writes in forward,
# reads in backward, GPU memory beneath.
"$rok" simulate ssdtrain-bert --hw a100-40g-pcie4-4xp5800x --strategy tba \
  --timeline-chart "$out/ssdtrain-bert-timeline.png" > /dev/null
echo "plots/ssdtrain-bert-timeline.png"
