#!/usr/bin/env python3
"""SSD batches measured beside predicted, and the disk's wake they imply,
by the idle before them, from the rows `rok validate -o` (or
`bench-validate.sh --keep`) leaves: each run's timelines and the profile.

    tests/bench/ssd_batches.py OUT [OUT ...]   (OUT: bench-validate --keep)

A batch is the legs of one SSD stream that overlap, one after another
without a gap; its time runs from its first leg's start to its last end.
Idle is the time since the last SSD leg of either stream ended. The
implied wake of a batch is what it took measured less its prediction
without the wake the simulator charged it (nvme.wake_* from wake_after,
deep_wake_* from deep_wake_after): the wake the run showed, if the rest of
the prediction holds. Only rows whose measured batches match the
predicted ones (stream, legs, bytes) count.

Measured 2026-12-06 on the development VM over seven bench runs (stops
53-55): reads -15..62 us after 4.5-8 ms idle against profiles' 66-110,
4-76 after 8-15 ms; writes 10-21 us below 4.5 ms (charged none), 16-73
after 4.5-8 ms, 76-131 after 8-15 ms: the wake grows with the idle where
the model steps at wake_after, and differs between reads and writes."""
import collections
import glob
import json
import os
import statistics
import sys

from legs_by_size import stream_legs

SSD = ("nvme-write", "nvme-read")
MIB = 1 << 20
# idle: us since the last SSD leg of either stream ended, None for the
# first; requests: the executor's, 1 MiB each; duration in us.
Batch = collections.namedtuple("Batch", "stream legs bytes requests idle duration")
CLASSES = ((1e3, "< 1 ms"), (4.47e3, "1-4.5 ms"), (8e3, "4.5-8 ms"), (15e3, "8-15 ms"),
           (44.7e3, "15-45 ms"), (float("inf"), ">= 45 ms"))


def batches(events, pid):
    """Process PID's SSD batches in start order, as Batch."""
    legs = stream_legs(events, pid, SSD)
    out, last_end, i = [], None, 0
    while i < len(legs):
        stream, first = legs[i]
        end, j = first["ts"] + first["dur"], i + 1
        while j < len(legs) and legs[j][0] == stream and legs[j][1]["ts"] <= end:
            end = max(end, legs[j][1]["ts"] + legs[j][1]["dur"])
            j += 1
        sizes = [e["args"].get("bytes", 0) for _, e in legs[i:j]]
        idle = first["ts"] - last_end if last_end is not None else None
        out.append(Batch(stream, j - i, sum(sizes), sum(max(1, -(-b // MIB)) for b in sizes), idle,
                         end - first["ts"]))
        last_end = end if last_end is None else max(last_end, end)
        i = j
    return out


def charged(nvme, kind, idle_us):
    """The wake the simulator charged a batch after IDLE_US, in us."""
    if idle_us >= nvme.get("deep_wake_after", float("inf")) * 1e6 and nvme.get(f"deep_wake_{kind}", 0) > 0:
        return nvme[f"deep_wake_{kind}"] * 1e6
    if idle_us >= nvme.get("wake_after", float("inf")) * 1e6:
        return nvme.get(f"wake_{kind}", 0) * 1e6
    return 0.0


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    implied, compared, skipped = {}, 0, []
    for out in sys.argv[1:]:
        try:
            with open(os.path.join(out, "hw.json")) as f:
                nvme = json.load(f)["nvme"]
        except (OSError, ValueError, KeyError) as err:
            print(f"ssd_batches.py: {out}/hw.json: {err}", file=sys.stderr)
            return 2
        for path in sorted(glob.glob(os.path.join(out, "run*", "timeline-*.json"))):
            with open(path) as f:
                events = json.load(f)["traceEvents"]
            measured, predicted = batches(events, 1), batches(events, 2)
            if not measured and not predicted:
                continue
            compared += 1
            def shape(bs):  # the same legs batched alike, or the runs are not comparable
                return [(b.stream, b.legs, b.bytes) for b in bs]
            if shape(measured) != shape(predicted):
                skipped.append((path, len(measured), len(predicted)))
                continue
            for m, p in zip(measured, predicted):
                if m.idle is None or p.idle is None:
                    continue
                kind = "write" if m.stream == "nvme-write" else "read"
                cls = next(name for bound, name in CLASSES if m.idle < bound)
                without_wake = p.duration - charged(nvme, kind, p.idle)
                implied.setdefault((kind, out, cls), []).append(m.duration - without_wake)
    print(f"{'stream':<6} {'run':<28} {'idle':>9} {'batches':>7} {'implied wake':>13}")
    order = {name: k for k, (_, name) in enumerate(CLASSES)}
    for kind, out, cls in sorted(implied, key=lambda k: (k[0], k[1], order[k[2]])):
        v = implied[(kind, out, cls)]
        print(f"{kind:<6} {os.path.basename(os.path.normpath(out))[:28]:<28} {cls:>9} {len(v):>7}"
              f" {statistics.median(v):>10.0f} us")
    if skipped:  # say why a row is missing rather than print less
        print(f"{len(skipped)} of {compared} timelines with SSD legs left out, their legs batched otherwise than "
              "predicted (measured / predicted batches):")
        for path, m, p in skipped:
            print(f"  {path}: {m} / {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
