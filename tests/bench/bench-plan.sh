#!/usr/bin/env bash
# Planner speed: a plan and a 32-budget ROK curve for GPT-3 175B and a few
# more models, wall and CPU seconds. Usage: tests/bench/bench-plan.sh [BUILD_DIR]
#
# Measured on the development machine (2 cores, x86_64, shared), old and
# new builds alternated on 2026-11-24 at load average 0.7-1.0:
#   rok plan gpt3-175b --hw a100-40g-pcie4-4xp5800x --json: 1.89 s of CPU
#   (2.81 s for the previous main, same bytes out; issue 12 asks < 1 s).
#   About 3,650 simulator runs (4,750 before): a finalist's final
#   judgement stops trying prefetch windows once one runs at keep's step
#   time, which no plan beats (at most budgets of this curve the best
#   plans hide every copy), and the ascent stops there too. By perf
#   (--call-graph dwarf) the CPU now goes to the three planners' shared
#   descents (25%, about 770 runs, one a step), their ascents (23%, the
#   recompute-only planner's 73 steps), refinement (18%), the final
#   judgements (14%, 40% before) and the descents under each budget (8%).
#   In process (the lines below, same day): plan at 19.9 GiB 1.50 s CPU,
#   curve 1.78 s.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
bin=$build/tests/bench-plan
if [ ! -x "$bin" ]; then
  echo "bench-plan.sh: $bin not found; build first (ninja -C $build)" >&2
  exit 1
fi
echo "rok planner benchmark ($(nproc) cores, $(uname -m))"
"$bin" "$here"
. "$here/tests/bench/cpu-lib.bash"
# The plan and the 32-budget curve, as README quotes it (issue 12 wants < 1 s).
printf 'rok plan gpt3-175b --hw a100-40g-pcie4-4xp5800x --json: %s\n' \
  "$(wall_cpu_seconds "$build/rok" plan gpt3-175b --hw a100-40g-pcie4-4xp5800x --json)"
# The whole command, as a user runs it, files included.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s.%N)
"$build/rok" plan gpt3-175b --hw a100-40g-pcie4-4xp5800x --budget 20GiB -o "$out" > /dev/null
end=$(date +%s.%N)
printf 'rok plan gpt3-175b --hw a100-40g-pcie4-4xp5800x --budget 20GiB -o DIR: %.2f s (schedule.json %s)\n' \
  "$(echo "$end - $start" | bc)" "$(du -h "$out/schedule.json" | cut -f1)"
# Schedule files in their compact form (issue 12 wants 175B's under 5 MB):
# bytes, actions in the program and lines written for them.
for model in gpt3-175b gpt3-13b; do
  "$build/rok" plan "$model" --hw a100-40g-pcie4-4xp5800x -o "$out/$model" > /dev/null 2>&1
  s="$out/$model/schedule.json"
  printf '%s schedule.json: %s bytes, %s action lines, %s repeat lines\n' "$model" "$(stat -c %s "$s")" \
    "$(grep -c '^    {"id": [0-9]*, "stream"' "$s")" "$(grep -c '"repeat_from"' "$s")"
done
