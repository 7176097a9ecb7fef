#!/usr/bin/env python3
"""Which of the kernels' passes `rok validate` should predict a row's
round at: the round's median over its passes (what validate does), the
pass right before the row's run, the mean of that and the next (before
and after it), or the median of three (the previous row's, before, after).
On kept runs whose rows have kernel_speed_before (tests/bench/
bench-validate.sh --keep OUT), each row's plan is simulated again per
round at each pairing's GEMM and other figures (by class, where validate
scales each op kind; the copies at the other figure times the profile's
calibrated_copies_memory_speed, as validate carries them over), and its
error taken per round against that round's median step, the median over
the rounds, as validate's error_at_speed is; printed per run: the median
|error| over the rows and the worst.

    tests/bench/pairing.py [--rok build/rok] [--model validate-gpt] OUT [OUT ...]

Measured 2026-12-08 (stop 66) on four runs (validate-gpt and the
LLaMA-shaped model, two each): the round's median 0.8-3.8% (worst
1.9-8.3%), the pass before 0.6-3.5% (7.6-24.8%), before and after
1.4-6.1% (4.9-15.6%), three 0.9-3.0% (2.6-10.7%): a single pass or two
catch the VM's transient spells; the round's median stays."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import repredict as rp  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--rok", default="build/rok")
ap.add_argument("--model", default="validate-gpt")
ap.add_argument("kept", nargs="+")
a = ap.parse_args()
rok, model = a.rok, a.model
for out in a.kept:
    hw_path = os.path.join(out, "hw.json")
    hw = json.load(open(hw_path))
    mem = hw.get("calibrated_copies_memory_speed", 1)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([rok, "plan", model, "--hw", hw_path, "-o", tmp], check=True, capture_output=True)
        base = json.load(open(os.path.join(tmp, "plan.json")))
        for run in rp.runs(out):
            v = json.load(open(os.path.join(out, run, "validation.json")))
            rows, R, rep = v["rows"], v["rounds"], v["repeat"]
            N = len(rows)
            if any(r.get("kernel_speed_before") is None for r in rows):
                print(out, run, "no kernel_speed_before"); continue
            order = []  # (round, row) in run order, measured rounds only
            for rnd in range(1, R + 1):
                first = (rnd - 1) * N // R % N
                order += [(rnd - 1, (first + k) % N) for k in range(N)]
            passes = [rows[i]["kernel_speed_before"][rr] for rr, i in order]
            pos = {o: n for n, o in enumerate(order)}
            cache = {}
            def predict(i, g, o):
                key = (i, round(g, 6), round(o, 6))
                if key not in cache:
                    scaled = rp.at_kernel_speed(hw, {"gemm": g, "other": o})
                    scaled = rp.at_copy_speed(scaled, {"d2h": o * mem, "h2d": o * mem})
                    p = os.path.join(tmp, "at.json"); json.dump(scaled, open(p, "w"))
                    sched = json.load(open(os.path.join(out, run, f"schedule-{i + 1:02d}-{rows[i]['strategy']}.json")))
                    rp.plan_file(base, sched, os.path.join(tmp, "row.json"))
                    sim = rp.simulate(rok, model, p, os.path.join(tmp, "row.json"))
                    cache[key] = sim["step_time_s"] - rows[i].get("predicted_optimizer_s", 0)
                return cache[key]
            def med(vals):
                vals = [x for x in vals if x is not None]
                return statistics.median(vals)
            strategies = {}
            for name in ("round", "before", "around", "three"):
                errs = []
                for i, r in enumerate(rows):
                    per = []
                    for rr in range(R):
                        n = pos[(rr, i)]
                        if name == "round":
                            ps = [passes[m] for m in range(len(order)) if order[m][0] == rr]
                        elif name == "before":
                            ps = [passes[n]]
                        elif name == "around":
                            ps = passes[n:n + 2]
                        else:
                            ps = passes[max(n - 1, 0):n + 2]
                        if name == "around":
                            g = statistics.mean(p[0] for p in ps); o = statistics.mean(p[1] for p in ps)
                        else:
                            g = med(p[0] for p in ps); o = med(p[1] for p in ps)
                        steps = r["step_times_s"][rr * rep:(rr + 1) * rep]
                        per.append(statistics.median(steps) / predict(i, g, o) - 1)
                    errs.append(statistics.median(per))
                strategies[name] = errs
            line = " ".join(f"{k} {100*statistics.median(map(abs,e)):.1f}% ({100*max(map(abs,e)):.1f}%)"
                            for k, e in strategies.items())
            vv = [abs(r["error_at_speed"]) for r in rows]
            print(f"{out} {run}: validate {100*statistics.median(vv):.1f}% ({100*max(vv):.1f}%) | {line}")
