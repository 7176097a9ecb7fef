#!/usr/bin/env bash
# Rates that follow shapes: how well a calibrated profile predicts the GEMM
# ops of a model it never timed. Calibrates as usual (the calibration
# layers), and with --model on the held-out model, whose --show-fit table
# lists each of its GEMM ops as measured; then simulates the held-out
# model on each profile and compares every linear and attention op's
# predicted time (launch overhead taken out, as calibration takes it out)
# with that measurement. The --model profile's own figure is in-sample.
#
#   tests/bench/bench-calibrate-shapes.sh [--quick] [--trials N] [--keep OUT] [MODEL [--set KEY=VALUE]...]
#
# Default held-out model: a LLaMA-shaped layer (llama2-7b with hidden 256,
# 4 heads, 2 KV heads, ffn 688, 256 tokens, vocab 1024), shapes no
# calibration layer has. ROK_BASELINE=/path/to/rok adds that binary's own
# calibration (an older rok, say) to the comparison. The load average is
# printed: on a busy machine the calibrations' timings are not comparable.
# Uses build/rok, or $ROK.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rok=${ROK:-$here/../../build/rok}
quick="" trials=3 keep="" model=llama2-7b sets=()
default_sets=(--set hidden=256 --set heads=4 --set kv_heads=2 --set ffn_hidden=688 --set seq_len=256
  --set vocab=1024 --set micro_batch=1 --set global_batch=2 --set data_parallel=1)
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=--quick; shift ;;
    --trials) trials=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "bench-calibrate-shapes.sh: unknown option $1" >&2; exit 2 ;;
    *) model=$1; default_sets=(); shift ;;
  esac
done
[ "${#sets[@]}" -gt 0 ] || sets=("${default_sets[@]}")
[ -x "$rok" ] || { echo "bench-calibrate-shapes.sh: $rok not built (ninja -C build)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench-calibrate-shapes.sh: needs python3" >&2; exit 2; }
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "== $(uname -n): $(nproc) processors; held-out model $model ${sets[*]}"
profiles=()
if [ -n "${ROK_BASELINE:-}" ]; then
  echo "== $ROK_BASELINE calibrate $quick --trials $trials (load $(load))"
  "$ROK_BASELINE" calibrate $quick --trials "$trials" -o "$work/baseline.json" >"$work/baseline.txt"
  profiles+=(baseline)
fi
echo "== rok calibrate $quick --trials $trials --show-fit (load $(load))"
"$rok" calibrate $quick --trials "$trials" --show-fit -o "$work/layers.json" >"$work/layers.txt"
grep -E "GEMM model|held out" "$work/layers.txt"
echo "== rok calibrate $quick --trials $trials --show-fit --model $model ${sets[*]} (load $(load))"
"$rok" calibrate $quick --trials "$trials" --show-fit --model "$model" "${sets[@]}" -o "$work/model.json" \
  >"$work/model.txt"
grep -E "GEMM model|held out" "$work/model.txt"
profiles+=(layers model)
echo "== load now $(load)"

"$rok" trace "$model" "${sets[@]}" --set layers=1 --json >"$work/trace.json" 2>/dev/null
for p in "${profiles[@]}"; do
  "$rok" simulate "$model" "${sets[@]}" --set layers=1 --hw "$work/$p.json" --strategy keep \
    --timeline "$work/$p-timeline.json" >/dev/null 2>&1
done
python3 - "$work" "${profiles[@]}" <<'PY'
import json, re, statistics, sys
work, profiles = sys.argv[1], sys.argv[2:]
units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
measured = {}
for line in open(f"{work}/model.txt"):
    m = re.match(r"\s+op\s+(\d+) x (\d+) x (\d+) x (\d+)\s+(forward|backward)\s+([\d.]+) (\S+)", line)
    if m:
        key = (tuple(map(int, m.groups()[:4])), m.group(5))
        measured.setdefault(key, []).append(float(m.group(6)) * units[m.group(7)])
ops = {op["name"]: op for op in json.load(open(f"{work}/trace.json"))["ops"]}
print("== the held-out model's GEMM ops: predicted / measured - 1")
for p in profiles:
    launch = json.load(open(f"{work}/{p}.json"))["gpu"].get("launch_overhead", 0)
    errors = {}
    for e in json.load(open(f"{work}/{p}-timeline.json"))["traceEvents"]:
        op = ops.get(e.get("name"))
        if e.get("ph") != "X" or e.get("args", {}).get("micro_batch") != 0 or op is None:
            continue
        key = (tuple(op["dims"]), e["cat"])
        if op["kind"] in ("linear", "attn_scores", "attn_context") and key in measured:
            errors[(op["name"], e["cat"])] = (e["dur"] * 1e-6 - launch) / statistics.median(measured[key]) - 1
    size = sorted(abs(x) for x in errors.values())
    print(f"{p:9s} {len(size)} op directions: |error| median {100 * statistics.median(size):.1f}%, "
          f"worst {100 * size[-1]:.1f}%; signed median {100 * statistics.median(errors.values()):+.1f}%")
    for (name, cat), x in sorted(errors.items()):
        print(f"    {name:28s} {cat:9s} {100 * x:+7.1f}%")
PY
