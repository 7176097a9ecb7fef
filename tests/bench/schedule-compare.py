#!/usr/bin/env python3
"""Compare two schedule files action for action, independently of rok's C
reader: OLD (rok-schedule/1 or /2) against NEW (rok-schedule/2), both
expanded from their repeats; with --merge-comm, NEW's comm actions are first
merged back into the compute action they were split from (collectives
before or after it) and its pipeline sends dropped, so that a schedule
written with comm actions can be compared with one written before they
existed.

usage: tests/bench/schedule-compare.py [--merge-comm] OLD NEW
Exit 0 when the programs are the same, 1 otherwise."""
import json
import sys
from decimal import Decimal


def load(path):
    return json.load(open(path), parse_float=Decimal)


def expand(doc):
    out = []
    for e in doc['actions']:
        if 'repeat_from' not in e:
            assert e['id'] == len(out), e['id']
            out.append(e)
            continue
        n = e['id'] - e['repeat_from']
        for _ in range(n * e['times']):
            a = dict(out[len(out) - n])
            a['id'] = len(out)
            a['micro_batch'] += e['micro_batch_step']
            a['deps'] = [d + n for d in a['deps']]
            a['start_s'] += e['shift_s']
            a['end_s'] += e['shift_s']
            out.append(a)
    return out


COMPUTE = ('forward', 'backward', 'recompute', 'optimizer')


def merge_comm(new):
    """Groups of NEW's actions, each one action of the program without comm."""
    def collective(j):
        return new[j]['kind'] == 'comm' and new[j]['stream'] == 'comm'

    def after(j, core):  # a collective that follows its op
        c = new[j]
        return (j - 1) in c['deps'] and ((c['group'] == 'tensor-parallel' and c['collective'] != 'all-gather') or
                                         core['kind'] == 'optimizer')
    group, groups, i = [None] * len(new), [], 0
    while i < len(new):
        if new[i]['stream'] == 'p2p':
            i += 1
            continue
        members, j = [], i
        while j < len(new) and collective(j):
            members.append(j)
            j += 1
        core = new[j]
        members.append(j)
        j += 1
        while core['kind'] in COMPUTE and j < len(new) and collective(j) and after(j, core):
            members.append(j)
            j += 1
        for m in members:
            group[m] = len(groups)
        groups.append(members)
        i = j
    merged = []
    for g, members in enumerate(groups):
        first = new[members[0]]
        a = dict(next(new[m] for m in members if new[m]['kind'] != 'comm'))
        a.update(id=g, start_s=first['start_s'], end_s=new[members[-1]]['end_s'])
        a['deps'] = [group[d] for d in first['deps']]
        a['_comm_order'] = first['kind'] == 'comm' and first['deps'] and collective(first['deps'][-1])
        merged.append(a)
    return merged


def main():
    args = sys.argv[1:]
    merge = args[:1] == ['--merge-comm']
    if merge:
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    old, new = expand(load(args[0])), expand(load(args[1]))
    if merge:
        new = merge_comm(new)
    differ = 0
    for a, b in zip(old, new):
        order = b.pop('_comm_order', False)
        if a != b and order and b['deps'][:-1] == a['deps']:
            b['deps'] = b['deps'][:-1]  # the comm stream's own order, not in the old program
        if a != b:
            differ += 1
            if differ <= 3:
                print('old', a, '\nnew', b)
    print(f'{args[1]}: {len(old)} actions against {len(new)}, {differ} differ')
    sys.exit(0 if differ == 0 and len(old) == len(new) else 1)


main()
