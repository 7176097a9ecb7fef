#!/usr/bin/env python3
"""How long the copies of a `rok execute` on PoCL's CPU device waited for
the kernel in progress, from PoCL's own trace of every command: the
figure behind gpu.copy_kernel_free_at (docs/simulator.md).

    cd OUT && POCL_TRACING=text rok execute SCHEDULE --dir DIR --repeat 2
    tests/bench/pocl_copy_waits.py OUT/pocl_trace_events.log [--free-at 0.95] [--wait 0.94]

PoCL writes each command's queued, submitted, running and complete times
(one clock for every queue). A copy (write_buffer: h2d; read_buffer on a
queue that runs no kernel: d2h) submitted while a kernel of at least
--min-kernel us runs waited from its submission until it ran. For the
first copy of each kernel that came in the kernel's first half, this
prints where its wait ended: as a share of that kernel's length, and of
the same kernel's shortest run over the steps ("base": the run that lost
least to the host's other threads), and the share of what was left that
it waited, by when it came. Then the copies' measured wait beside what
each model form gives: free at --free-at of the kernel (a copy after
that point does not wait; counted on the kernel's base, as the simulator
counts it on the kernel's own length), or --wait of what is left (older
profiles); both let later copies in the kernel go when the first does.

Measured 2026-11-25 on the development VM (validate-gpt's offload row,
`rok execute --repeat 2`): first copies free at 0.78 of their kernel
(median; 0.45-1.01), 0.98 of its base; by when they came, the share of
what was left waited 0.77 (first quarter), 0.39 (second); summed waits
79.6 ms measured, 128.6 from the remainder form at 0.94, 86.2 from the
free-point form at the calibration's 0.95. The rok row at its smallest
budget: free at 0.87 of the kernel, 0.94 of its base; waits 133.8 ms
measured, 166.8 and 149.9 from the two forms."""
import argparse
import bisect
import collections
import statistics


def read(path):
    events = collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            p = [x.strip() for x in line.split("|")]
            if len(p) < 6 or not p[0].isdigit():
                continue
            e = events[int(p[1].split()[-1])]
            e[p[5]] = int(p[0])
            e["kind"], e["queue"] = p[4], p[3]
            for extra in p[6:]:
                if extra.startswith("name="):
                    e["name"] = extra[5:]
                elif extra.startswith("size="):
                    e["size"] = int(extra[5:])
    return [e for e in events.values() if "running" in e and "complete" in e]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--free-at", type=float, default=0.95, help="copy_kernel_free_at to compare with")
    ap.add_argument("--wait", type=float, default=0.94, help="copy_kernel_wait to compare with")
    ap.add_argument("--min-kernel", type=float, default=300, help="kernels shorter than this (us) are left out")
    a = ap.parse_args()
    events = read(a.trace)
    kernels = sorted((e for e in events if e["kind"] == "ndrange_kernel"), key=lambda e: e["running"])
    if not kernels:
        raise SystemExit(f"{a.trace}: no kernels (was POCL_TRACING=text set?)")
    compute = collections.Counter(k["queue"] for k in kernels).most_common(1)[0][0]
    copies = sorted((e for e in events if "submitted" in e and e["queue"] != compute and
                     e["kind"] in ("write_buffer", "read_buffer")), key=lambda e: e["submitted"])
    # base: a kernel's shortest run at the same place from the end of the run (steps repeat)
    names = [k.get("name") for k in kernels]
    n = len(names)
    period = next((p for p in range(1, n // 2 + 1)  # a step's kernels, not a layer's: a third of the run
                   if all(names[n - 1 - i] == names[n - 1 - i - p] for i in range(max(p, n // 3)) if i + p < n)),
                  None)
    base = {}
    if period:
        runs = collections.defaultdict(list)
        for i, k in enumerate(kernels):
            runs[(n - 1 - i) % period].append(k["complete"] - k["running"])
        base = {id(k): min(runs[(n - 1 - i) % period]) for i, k in enumerate(kernels)}
    starts = [k["running"] for k in kernels]
    first_free, by_quarter = [], collections.defaultdict(list)
    measured = remainder = free_form = 0.0
    freed = {}
    count = 0
    for c in copies:
        s = c["submitted"]
        i = bisect.bisect_right(starts, s) - 1
        if i < 0 or kernels[i]["complete"] <= s:
            continue
        k = kernels[i]
        length = k["complete"] - k["running"]
        if length < a.min_kernel * 1e3:
            continue
        into, wait = s - k["running"], c["running"] - s
        count += 1
        measured += wait
        if i in freed:
            remainder += max(freed[i] - s, 0)
        else:
            w = a.wait * (length - into)
            remainder += w
            freed[i] = s + w
            if into < length / 2:
                end = into + wait
                first_free.append((end / length, end / base.get(id(k), length)))
            by_quarter[min(int(4 * into / length), 3)].append(wait / (length - into))
        free_form += max(a.free_at * base.get(id(k), length) - into, 0)  # as the simulator: on the base
    print(f"{count} copies came during kernels of {a.min_kernel:.0f} us or more "
          f"({len(copies)} copies, {len(kernels)} kernels{f', steps of {period} kernels' if period else ''})")
    if first_free:
        print(f"first copies in a kernel's first half: {len(first_free)}, free at "
              f"{statistics.median(f for f, _ in first_free):.2f} of the kernel (median; "
              f"{min(f for f, _ in first_free):.2f}-{max(f for f, _ in first_free):.2f}), "
              f"{statistics.median(b for _, b in first_free):.2f} of its base")
    for q in sorted(by_quarter):
        w = by_quarter[q]
        print(f"  came in quarter {q + 1}: {len(w):4d} first copies waited {statistics.median(w):.2f} "
              f"of what was left (median)")
    print(f"waits summed: measured {measured / 1e6:.1f} ms, --wait {a.wait} of what is left "
          f"{remainder / 1e6:.1f} ms, --free-at {a.free_at} {free_form / 1e6:.1f} ms")


if __name__ == "__main__":
    main()
