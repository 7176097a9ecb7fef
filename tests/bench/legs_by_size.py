#!/usr/bin/env python3
"""Copy and SSD legs by size and by the idle before them, measured beside
predicted, from the timelines `rok execute -t` and `rok validate -o` write
(measured steps in process 1, the prediction in process 2).

    tests/bench/legs_by_size.py TIMELINE.json [TIMELINE.json ...] [--stream nvme-write]

Where a stream's total is off in validate's breakdown, this says which legs
make it: small ones (the leg's fixed part) or large ones (its rate), lone
ones or those that found another leg of the disk running ("queued"). Idle
is the time since the last leg of the same kind (SSD legs: either SSD
stream; copies: either copy stream) ended, in the classes < 4.5 ms, < 45 ms
and longer (a disk's wake, nvme.wake_after). ssd_batches.py takes its legs
from `stream_legs` below.

Measured 2026-11-25 on the development VM (`tests/bench/bench-validate.sh
--runs 1 --ssd --keep OUT`, then this on OUT/run1/timeline-06-rok.json):
32 KiB writes 76 us measured against 202 predicted, 256 KiB 153 against
260; the same 256 KiB writes took 304 us in the offload row's timeline."""
import argparse
import json
import statistics
import sys

STREAMS = ("d2h", "h2d", "nvme-write", "nvme-read")


def stream_legs(events, pid, streams=STREAMS):
    """The legs of process PID on STREAMS in start order, as (stream,
    trace event): measured steps are process 1, the prediction 2."""
    names = {e["tid"]: e["args"]["name"].split(",")[0] for e in events
             if e.get("pid") == pid and e.get("name") == "thread_name"}
    return sorted(((names[e["tid"]], e) for e in events if e.get("pid") == pid and e.get("ph") == "X"
                   and names.get(e["tid"]) in streams), key=lambda se: se[1]["ts"])


def spans(events, pid):
    """Each copy and SSD leg of process PID in start order, as (stream,
    bytes, idle us, duration us). Idle: since the last leg of the same
    kind ended; None for the first, negative when one was still running."""
    last_end = {}
    for stream, e in stream_legs(events, pid):
        kind = "ssd" if stream.startswith("nvme") else "copy"
        idle = e["ts"] - last_end[kind] if kind in last_end else None
        last_end[kind] = max(last_end.get(kind, 0), e["ts"] + e["dur"])
        yield stream, e["args"].get("bytes", 0), idle, e["dur"]


def idle_class(idle_us):
    if idle_us is None:
        return "first"
    if idle_us < 0:
        return "queued"
    return "< 4.5 ms" if idle_us < 4470 else "< 45 ms" if idle_us < 44700 else ">= 45 ms"


def by_class(events, pid):
    """{(stream, KiB, idle class): [duration us]} of process PID."""
    out = {}
    for stream, size, idle, dur in spans(events, pid):
        out.setdefault((stream, size // 1024, idle_class(idle)), []).append(dur)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("timelines", nargs="+")
    ap.add_argument("--stream", choices=STREAMS, help="only this stream")
    a = ap.parse_args()
    for path in a.timelines:
        try:
            with open(path) as f:
                events = json.load(f)["traceEvents"]
        except (OSError, ValueError, KeyError) as err:
            print(f"legs_by_size.py: {path}: {err}", file=sys.stderr)
            return 2
        measured, predicted = by_class(events, 1), by_class(events, 2)
        print(f"== {path}")
        print(f"{'stream':<11} {'size':>9} {'idle':>9} {'legs':>5} {'measured':>10} {'predicted':>10} {'ratio':>6}")
        for key in sorted(set(measured) | set(predicted)):
            if a.stream and key[0] != a.stream:
                continue
            m, p = measured.get(key, []), predicted.get(key, [])
            mm = statistics.median(m) if m else float("nan")
            pm = statistics.median(p) if p else float("nan")
            print(f"{key[0]:<11} {key[1]:>5} KiB {key[2]:>9} {len(m):>2}/{len(p):<2} {mm:>7.0f} us {pm:>7.0f} us"
                  f" {pm / mm if m and p else float('nan'):>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
