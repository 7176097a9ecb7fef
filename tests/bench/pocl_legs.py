#!/usr/bin/env python3
"""Each copy leg of a `rok execute` on PoCL's CPU device taken apart: the
wait before PoCL ran its copy command, the copy, and what came after it
(the stream's thread taking it, the check of its bytes, the wait for the
leg before it on that thread), beside the leg's prediction; with --hw,
what the thread spent beyond each check (the profile's rate for its
size, as the simulator interpolates it), for legs whose copies it waited
for and was woken by, and for those whose copies were done when it came
to them.

    cd OUT && POCL_TRACING=text rok execute SCHEDULE --dir DIR --repeat 2 -t tl.json
    tests/bench/pocl_legs.py OUT/pocl_trace_events.log OUT/tl.json [--stream h2d] [--hw hw.json]

PoCL's trace has every command's queued, running and complete times (its
own clock); the timeline `-t` writes has the median step's legs (start:
when the executor enqueued the leg's copies, end: the leg checked). The
legs are matched to the trace's copy commands of their stream (write_buffer
for h2d, read_buffer for d2h, a leg of several slots several commands) at
the offset that lines their starts up best over the run's steps. With
--hw, the parts the simulator takes from the profile are printed beside the
measured medians: pcie.latency for the wait, the link's bandwidth for the
copy, host.checksum_rates for the check.

Measured 2026-12-07 on the development VM (Intel host) with the
LLaMA-shaped model's rok row at 63.8 MiB (validate's schedule-07-rok.json):
h2d legs of 192-704 KiB waited 26 us (median; 3-44) for their copy against
pcie.latency's 16, copied at 5.8 GB/s over all (most at 6.4-8.4, 704 KiB
ones at 3.2-3.9 where they ran beside a GEMM's start and the check of the
leg before) against 11.5, and took 91-292 us after it (a 512 KiB check:
~118 us at the calibrated 4.4-4.5 GB/s); the stream ran 28% longer than predicted.
Later that day, validate-gpt's rok row at 17.9 MiB and the LLaMA-shaped
model's at 63.8 MiB: legs whose thread waited for their copies ended a
median 24 and 30 us after them beyond their checks (the hand-off round
trip 24 and 26 us, of which the model charged half for that wake; it now
charges a whole one), those it came to with their copies done 1 and 26."""
import argparse
import collections
import ctypes
import ctypes.util
import json
import math
import statistics

from legs_by_size import stream_legs
from pocl_copy_waits import read

COMMAND = {"h2d": "write_buffer", "d2h": "read_buffer"}


def commands(events, stream):
    """The stream's copy commands in queued order: write_buffers are h2d;
    read_buffers on a queue that runs no kernel are d2h (the executor reads
    a tensor's checksum back on the compute queue)."""
    kernel_queues = {e["queue"] for e in events if e["kind"] == "ndrange_kernel"}
    return sorted((e for e in events if e["kind"] == COMMAND[stream] and "queued" in e and
                   (stream == "h2d" or e["queue"] not in kernel_queues)), key=lambda e: e["queued"])


def group(cmds, legs, first):
    """Commands from FIRST split into one group per leg by their bytes, or
    None where they do not add up."""
    out, i = [], first
    for leg in legs:
        want, got, g = leg["args"]["bytes"], 0, []
        while got < want and i < len(cmds):
            g.append(cmds[i])
            got += cmds[i].get("size", 0)
            i += 1
        if got != want:
            return None
        out.append(g)
    return out


def align(cmds, legs):
    """The groups and the clock offset (us) that line the legs' starts up
    with their first commands' queued times with the least spread."""
    best = None
    for first in range(len(cmds)):
        groups = group(cmds, legs, first)
        if groups is None:
            continue
        offsets = [g[0]["queued"] / 1e3 - leg["ts"] for g, leg in zip(groups, legs)]
        spread = max(offsets) - min(offsets)
        if best is None or spread < best[0]:
            best = (spread, groups, statistics.median(offsets))
    return best


def union(legs):
    """The time at least one of LEGS ran (us): validate's stream time."""
    total, end = 0.0, -math.inf
    for leg in sorted(legs, key=lambda e: e["ts"]):
        start, stop = leg["ts"], leg["ts"] + leg["dur"]
        total += max(0.0, stop - max(start, end))
        end = max(end, stop)
    return total


def check_rates(hw, size):
    """The profile's check rates around SIZE: the host.checksum_rates points
    on either side of it (the simulator interpolates between them), else
    host.checksum_bandwidth; as "RATE at SIZE" text."""
    pts = hw["host"].get("checksum_rates") or []
    if not pts:
        return f"{hw['host'].get('checksum_bandwidth', 0) / 1e9:.2f} GB/s"
    below = [p for p in pts if p[0] <= size][-1:] or pts[:1]
    above = [p for p in pts if p[0] >= size][:1] or pts[-1:]
    return " and ".join(f"{r / 1e9:.2f} GB/s at {b / 1024:.0f} KiB" for b, r in sorted(set(map(tuple, below + above))))


def check_timer(hw):
    """The check of a leg as the simulator times it (rok_hw_host_check_seconds),
    as a function of the leg's bytes: host.checksum_rates interpolated in
    log(bytes) by GSL's Steffen method (linear below three knots), clamped
    to the end knots, else host.checksum_bandwidth. GSL is loaded and the
    interpolation set up once."""
    pts = hw["host"].get("checksum_rates") or []
    if not pts:
        rate = hw["host"].get("checksum_bandwidth", 0)
        return lambda size: size / rate if rate > 0 else 0.0
    n = len(pts)
    interp = None
    if n >= 2:
        ctypes.CDLL(ctypes.util.find_library("gslcblas"), mode=ctypes.RTLD_GLOBAL)
        gsl = ctypes.CDLL(ctypes.util.find_library("gsl"))
        gsl.gsl_interp_alloc.restype = ctypes.c_void_p
        gsl.gsl_interp_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        gsl.gsl_interp_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        gsl.gsl_interp_eval.restype = ctypes.c_double
        gsl.gsl_interp_eval.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_double,
                                        ctypes.c_void_p]
        x = (ctypes.c_double * n)(*(math.log(b) for b, _ in pts))
        y = (ctypes.c_double * n)(*(r for _, r in pts))
        interp = gsl.gsl_interp_alloc(ctypes.c_void_p.in_dll(gsl, "gsl_interp_steffen" if n >= 3
                                                             else "gsl_interp_linear"), n)
        gsl.gsl_interp_init(interp, x, y, n)

    def seconds(size):
        if size <= pts[0][0]:
            return size / pts[0][1]
        if size >= pts[-1][0]:
            return size / pts[-1][1]
        return size / gsl.gsl_interp_eval(interp, x, y, math.log(size), None)
    return seconds


def thread_waits(rows, check):
    """What a leg's thread spent beyond its check, split by whether it had
    to wait for the leg's copies (it ended the leg before it, or was idle,
    before they completed: PoCL's completion wakes it) or found them done
    (it goes straight on from the leg before). ROWS: (complete, end, bytes)
    in the thread's order, times in us; CHECK: check_timer's."""
    woken, queued, before = [], [], -math.inf
    for complete, end, size in rows:
        beyond = end - max(complete, before) - check(size) * 1e6
        (woken if complete > before else queued).append(beyond)
        before = end
    return woken, queued


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("timeline")
    ap.add_argument("--stream", choices=sorted(COMMAND), default="h2d")
    ap.add_argument("--hw", help="the profile the prediction used")
    a = ap.parse_args()
    events = read(a.trace)
    with open(a.timeline) as f:
        doc = json.load(f)
    tl = doc["traceEvents"] if isinstance(doc, dict) else doc
    legs = [e for s, e in stream_legs(tl, 1, (a.stream,))]
    predicted = [e for s, e in stream_legs(tl, 2, (a.stream,))]
    cmds = commands(events, a.stream)
    if not legs or not cmds:
        raise SystemExit(f"no {a.stream} legs in {a.timeline} or no {COMMAND[a.stream]} in {a.trace} "
                         "(was POCL_TRACING=text set?)")
    found = align(cmds, legs)
    if found is None:
        raise SystemExit(f"the trace's {COMMAND[a.stream]} commands never add up to the timeline's legs")
    spread, groups, offset = found
    print(f"{len(legs)} {a.stream} legs matched to {sum(map(len, groups))} commands "
          f"(their starts within {spread:.0f} us of one offset)")
    print(f"  {'leg':28s} {'bytes':>8s} {'wait':>6s} {'copy':>6s} {'GB/s':>5s} {'after':>6s} {'leg':>6s} {'pred.':>6s}")
    parts = collections.defaultdict(list)
    rows = []
    for leg, g, p in zip(legs, groups, predicted + [None] * len(legs)):
        queued = g[0]["queued"] / 1e3 - offset
        running, complete = g[0]["running"] / 1e3 - offset, max(c["complete"] for c in g) / 1e3 - offset
        wait, copy, after = running - queued, complete - running, leg["ts"] + leg["dur"] - complete
        size = leg["args"]["bytes"]
        rows.append((complete, leg["ts"] + leg["dur"], size))
        print(f"  {leg['name'][:28]:28s} {size:8d} {wait:6.0f} {copy:6.0f} {size / copy / 1e3:5.2f} {after:6.0f} "
              f"{leg['dur']:6.0f} {p['dur'] if p else float('nan'):6.0f}")
        for k, v in (("wait", wait), ("copy", copy), ("after", after), ("leg", leg["dur"]),
                     ("bytes", size), ("predicted", p["dur"] if p else 0)):
            parts[k].append(v)
    med = {k: statistics.median(v) for k, v in parts.items()}
    print(f"median: wait {med['wait']:.0f} us, copy {med['copy']:.0f} us "
          f"({sum(parts['bytes']) / sum(parts['copy']) / 1e3:.2f} GB/s over all), after it {med['after']:.0f} us; "
          f"the stream had a leg running {union(legs):.0f} us of the step, {union(predicted):.0f} predicted")
    if a.hw:
        with open(a.hw) as f:
            hw = json.load(f)
        link = hw["pcie"]["h2d_bandwidth" if a.stream == "h2d" else "d2h_bandwidth"]
        size = statistics.median(parts["bytes"])
        print(f"the profile: pcie.latency {hw['pcie']['latency'] * 1e6:.0f} us, "
              f"{a.stream} {link / 1e9:.2f} GB/s, the check for the median leg's {size / 1024:.0f} KiB between "
              f"{check_rates(hw, size)}, host.copy_overhead "
              f"{hw['host'].get('copy_overhead', 0) * 1e6:.0f} us")
        for name, v in zip(("waited for the copy (woken by its end)", "found the copy done"), thread_waits(rows, check_timer(hw))):
            if v:
                q = statistics.quantiles(v) if len(v) > 1 else [v[0]] * 3
                print(f"legs whose thread {name}: {len(v)}, each ending {statistics.median(v):.0f} us "
                      f"(median; quartiles {q[0]:.0f}..{q[2]:.0f}) after {'it' if 'waited' in name else 'the leg before'}"
                      f", beyond its check at the profile's rates")


if __name__ == "__main__":
    main()
