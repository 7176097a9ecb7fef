#!/bin/bash
# rok calibrate --model: one layer of the user's model timed, the GEMM model
# fitted to its shapes and the probes, the shapes recorded in the profile;
# the simulator warns of GEMMs far outside them and not of the model's own.
# Skips (77) where there is no OpenCL device. Small shapes, one trial: a
# few seconds.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"

small=(--set hidden=256 --set heads=4 --set seq_len=256 --set vocab=2048 --set micro_batch=1)
run_or_skip_opencl "$tmp/out" "$tmp/err" \
  "$rok" calibrate --quick --trials 1 --model gpt2-small "${small[@]}" --show-fit -o "$tmp/hw.json"
cat "$tmp/out" "$tmp/err"

out=$(cat "$tmp/out")
expect_in "$out" "Calibration (--quick), one layer of gpt2-small: medians of 1 trials"
expect_in "$out" "GEMM model "
expect_in "$out" "held out             fitted to the"
# --show-fit: the GEMMs alone, and the layer's linear ops at the model's
# shapes (256 tokens, hidden 256: the QKV projection 256 x 768 x 256).
expect_in "$out" "1 x 256 x 768 x 256"
json=$(cat "$tmp/hw.json")
expect_in "$json" '"sm_count": '
expect_in "$json" '"gemm_tile": ['
expect_in "$json" '"calibrated_shapes": {'
expect_in "$json" '"elementwise_bytes": ['
expect_in "$json" 'every op of one layer of gpt2-small'
# The kinds the GEMM model times have no measured rates; the others do.
python3 - "$tmp/hw.json" <<'PY'
import json, sys
hw = json.load(open(sys.argv[1]))
rates = hw["gpu"]["op_rates"]
assert not {"linear", "attn_scores", "attn_context"} & set(rates), sorted(rates)
assert {"layernorm", "gelu", "add"} <= set(rates), sorted(rates)
assert "gemm_efficiency" not in hw["gpu"]
assert [1, 256, 768, 256] in hw["calibrated_shapes"]["gemm"]
PY

# The model itself (all its layers) at the calibrated shapes: no warning.
"$rok" simulate gpt2-small "${small[@]}" --hw "$tmp/hw.json" >/dev/null 2>"$tmp/near"
if grep -q "calibrated on" "$tmp/near"; then
  echo "warned of the calibrated model's own shapes:" >&2
  cat "$tmp/near" >&2
  exit 1
fi
# A model eight times as wide: its GEMMs are far outside, and rok says so.
"$rok" simulate gpt3-1.3b --set layers=2 --hw "$tmp/hw.json" >/dev/null 2>"$tmp/far"
expect_in "$(cat "$tmp/far")" "rok simulate: warning: "
expect_in "$(cat "$tmp/far")" "calibrated on (m "

# Bad usage fails at once.
expect_fail 2 "--set hidden=256: --set changes the config of --model, which is not given" \
  "$rok" calibrate --quick --set hidden=256
expect_fail 2 "--show-fit lists the fit in the table that -o FILE prints" "$rok" calibrate --quick --show-fit
expect_fail 2 "--model nope" "$rok" calibrate --quick --model nope
expect_fail 2 "--model gpt2-small" "$rok" calibrate --quick --model gpt2-small --set hidden=lots
echo "ok"
