#!/usr/bin/env python3
"""Make the hostile inputs of tests/data/hostile/ from today's bundled configs
and fuzz seeds: each file is a valid input with one thing broken, named after
it. Run after a change of format (and tests/fuzz/make-seeds.sh), then check
the messages with ROK_HOSTILE_VERBOSE=1 tests/cli/hostile.sh build/rok and
update expected.txt where a line or column moved.

usage: tests/fuzz/make-hostile.py"""
import copy
import json
import os
import re

src = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
root = os.path.join(src, 'tests', 'data', 'hostile')


class D:
    pass


DEL = D()  # a member to delete

def w(kind, name, text):
    os.makedirs(f'{root}/{kind}', exist_ok=True)
    mode = 'wb' if isinstance(text, bytes) else 'w'
    with open(f'{root}/{kind}/{name}', mode) as f: f.write(text)

base = open(f'{src}/configs/models/gpt3-1.3b.json').read()
tiny = {"arch": "gpt", "layers": 2, "hidden": 64, "heads": 4, "seq_len": 16, "micro_batch": 2}
def cfg(**kv):
    d = dict(tiny); 
    for k,v in kv.items():
        if v is DEL: d.pop(k)
        else: d[k]=v
    return json.dumps(d, indent=2) + '\n'
def raw(k, literal):  # a config with one member written as raw text
    d = dict(tiny); d[k] = '@@'
    return json.dumps(d, indent=2).replace('"@@"', literal) + '\n'

M='model'
w(M,'truncated.json', base[:len(base)//2])
w(M,'truncated-in-string.json', base[:base.index('"gpt"')+3])
w(M,'empty.json', '')
w(M,'whitespace-only.json', ' \n\t\n')
w(M,'not-an-object.json', '[1, 2, 3]\n')
w(M,'null-document.json', 'null\n')
w(M,'layers-string.json', cfg(layers="forty"))
w(M,'layers-1e30.json', raw('layers','1e30'))
w(M,'layers-fraction.json', raw('layers','2.5'))
w(M,'name-lone-surrogate.json', raw('name', '"gpt\\ud800"'))
w(M,'name-escape-sequence.json', raw('name', '"gpt\\u001b[31m"'))
w(M,'micro-batches-per-step-past-limit.json', cfg(global_batch=4194304))
w(M,'layers-negative.json', cfg(layers=-4))
w(M,'layers-minus-zero.json', raw('layers','-0'))
w(M,'layers-zero.json', cfg(layers=0))
w(M,'layers-2pow24.json', cfg(layers=16777216))
w(M,'layers-2pow64.json', raw('layers','18446744073709551616'))
w(M,'layers-huge-exponent.json', raw('layers','1e999999999'))
w(M,'hidden-null.json', cfg(hidden=None))
w(M,'hidden-missing.json', cfg(hidden=DEL))
w(M,'dropout-nan.json', raw('dropout','NaN'))
w(M,'dropout-infinity.json', raw('dropout','-Infinity'))
w(M,'dropout-negative.json', cfg(dropout=-0.1))
w(M,'dropout-one.json', cfg(dropout=1.0))
w(M,'dropout-string-nan.json', cfg(dropout="NaN"))
w(M,'seq-times-batch-overflow.json', cfg(seq_len=16777216, micro_batch=16777216, global_batch=16777216))
w(M,'hidden-times-heads-overflow.json', cfg(hidden=16777216, heads=16777216, head_dim=16777216, ffn_hidden=16777216))
w(M,'flops-overflow.json', cfg(layers=1, hidden=1048576, heads=16, seq_len=65536, micro_batch=1))
w(M,'global-batch-overflow.json', cfg(micro_batch=16777216, data_parallel=1024, seq_len=1, hidden=4))
w(M,'t5-too-many-layers.json', cfg(arch="t5", layers=1500))
w(M,'duplicate-key.json', json.dumps(tiny, indent=2)[:-2] + ',\n  "layers": 96\n}\n')
w(M,'unknown-key.json', cfg(hidn=64))
w(M,'arch-number.json', cfg(arch=5))
w(M,'arch-typo.json', cfg(arch="gtp"))
w(M,'bool-as-string.json', cfg(sequence_parallel="yes"))
w(M,'heads-not-dividing.json', cfg(heads=3))
w(M,'tensor-parallel-not-dividing.json', cfg(tensor_parallel=3))
w(M,'nested-100.json', '{"arch": ' + '['*100 + ']'*100 + '}\n')
w(M,'nul-byte.json', cfg().replace('"gpt"', '"g\x00pt"').encode())
w(M,'invalid-utf8.json', cfg(name="@@").encode().replace(b'@@', b'caf\xe9'))
w(M,'code-point-past-unicode.json', cfg(name="@@").encode().replace(b'@@', b'\xf7\x9a\x92\x93'))
w(M,'byte-order-mark.json', b'\xef\xbb\xbf' + cfg().encode())
w(M,'comment.json', '// GPT, tiny\n' + cfg())
w(M,'trailing-comma.json', cfg()[:-3] + ',\n}\n')
w(M,'single-quotes.json', cfg().replace('"gpt"', "'gpt'"))
w(M,'trailing-garbage.json', cfg() + 'x\n')
w(M,'two-documents.json', cfg() + cfg())
w(M,'control-char-in-string.json', cfg(name="a\tb").replace('\\t', '\t'))
w(M,'key-with-nul.json', cfg().replace('"hidden"', '"hid\\u0000den"'))
w(M,'newer-format.json', json.dumps({"format": "rok-trace/2", **tiny}, indent=2) + '\n')
w(M,'format-number.json', json.dumps({"format": 7, **tiny}, indent=2) + '\n')
w(M,'vocab-2pow33.json', cfg(vocab=8589934592))
w(M,'mask-bytes-3.json', cfg(mask_bytes=3))
w(M,'zero-stage-4.json', cfg(zero_stage=4))
w(M,'name-array.json', cfg(name=["a"]))

# traces
T='trace'
tr = json.load(open(f'{src}/tests/fuzz/corpus/trace/tiny-gpt-flash.json'))
def tw(name, f, text=None):
    d = copy.deepcopy(tr); f(d)
    w(T, name, json.dumps(d, indent=1) + '\n')
txt = json.dumps(tr, indent=1) + '\n'
w(T,'truncated.json', txt[:len(txt)*2//3])
w(T,'truncated-after-key.json', txt[:txt.index('"tensors"')+10])
def setp(path, value):
    def f(d):
        o = d
        for p in path[:-1]: o = o[p]
        if value is DEL: del o[path[-1]]
        else: o[path[-1]] = value
    return f
tw('newer-format.json', setp(['format'], 'rok-trace/2'))
tw('format-missing.json', setp(['format'], DEL))
tw('ops-missing.json', setp(['ops'], DEL))
tw('ops-empty.json', setp(['ops'], []))
tw('ops-object.json', setp(['ops'], {}))
tw('op-not-object.json', setp(['ops', 2], 1))
tw('tensor-producer-out-of-range.json', setp(['tensors', 5, 'producer'], 100000))
tw('tensor-producer-negative.json', setp(['tensors', 5, 'producer'], -1))
tw('op-input-forward-reference.json', setp(['ops', 4, 'inputs'], [8]))
tw('op-input-missing-tensor.json', setp(['ops', 4, 'inputs'], [4000000000]))
tw('needed-before-made.json', setp(['tensors', 7, 'needed_by'], [5, 2]))
tw('needed-by-missing-op.json', setp(['tensors', 7, 'needed_by'], [99999]))
tw('recompute-cycle.json', setp(['tensors', 7, 'recompute_from'], [7]))
tw('recompute-later-tensor.json', setp(['tensors', 7, 'recompute_from'], [9]))
tw('tensors-out-of-order.json', setp(['tensors', 5, 'producer'], 1))
tw('id-mismatch.json', setp(['ops', 3, 'id'], 4))
tw('bytes-mismatch.json', setp(['tensors', 5, 'bytes'], 1))
tw('shape-empty.json', setp(['tensors', 5, 'shape'], []))
tw('shape-five-dims.json', setp(['tensors', 5, 'shape'], [1,1,1,1,1]))
tw('shape-overflow.json', setp(['tensors', 5, 'shape'], [4294967296, 4294967296, 4294967296]))
tw('layer-out-of-range.json', setp(['ops', 3, 'layer'], 5))
tw('layers-huge.json', setp(['layers'], 2000000000))
tw('outputs-mismatch.json', setp(['ops', 3, 'outputs'], [6, 5]))
tw('kind-unknown.json', setp(['ops', 3, 'kind'], 'convolution'))
tw('dims-three.json', setp(['ops', 3, 'dims'], [1, 2, 3]))
tw('time-negative.json', setp(['ops', 3, 'fwd_time_s'], -1))
tw('dropout-one.json', setp(['ops', 3, 'dropout'], 1.0))
tw('model-invalid.json', setp(['model', 'layers'], 0))
tw('name-null.json', setp(['tensors', 5, 'name'], None))
tw('flops-negative.json', setp(['ops', 4, 'fwd_flops'], -5))
tw('fixed-missing.json', setp(['fixed'], DEL))
# past the counts a trace may give (2^62; tokens 2^48)
tw('flops-past-limit.json', setp(['ops', 4, 'bwd_flops'], 2**62 + 1))
tw('bytes-past-limit.json', setp(['ops', 4, 'fwd_bytes'], 10**19))
tw('fixed-past-limit.json', setp(['fixed', 'optimizer_step_bytes'], 2**63))
tw('fixed-sum-past-limit.json', lambda d: d['fixed'].update(weight_bytes=2**61, gradient_bytes=2**61,
                                                          optimizer_bytes=2**61))
tw('tokens-past-limit.json', setp(['tokens_per_micro_batch'], 2**48 + 1))
tw('tensor-bytes-sum-past-limit.json', lambda d: [d['tensors'][i].update(shape=[2**30, 2**30], dtype='fp32',
                                                                         bytes=2**62) for i in (5, 6)])
w(T,'duplicate-key-in-op.json', txt.replace('"name": "embed.lookup"', '"name": "embed.lookup", "name": "again"', 1))
w(T,'time-1e400.json', txt.replace('"fwd_flops": 2048,', '"fwd_time_s": 1e400, "fwd_flops": 2048,', 1))

# hardware profiles
H='hw'
hw = json.load(open(f'{src}/configs/hw/a100-40g-pcie4-4xp5800x.json'))
def hwf(name, path, value):
    d = copy.deepcopy(hw); setp(path, value)(d)
    w(H, name, json.dumps(d, indent=2) + '\n')
htxt = json.dumps(hw, indent=2) + '\n'
w(H,'truncated.json', htxt[:len(htxt)//2])
hwf('memory-rate-unit.json', ['gpu','memory'], '40GB/s')
hwf('memory-negative.json', ['gpu','memory'], '-40GiB')
hwf('memory-zero.json', ['gpu','memory'], 0)
hwf('memory-1e400.json', ['gpu','memory'], '1e400 B')
hwf('memory-16EiB.json', ['gpu','memory'], '16EiB')
hwf('memory-fraction-of-byte.json', ['nvme','capacity'], '1.5B')
hwf('memory-bits.json', ['gpu','memory'], '40Gb')
hwf('peak-flops-nan.json', ['gpu','peak_flops'], 'NaN')
hwf('peak-flops-infinite.json', ['gpu','peak_flops'], '1e999 FLOP/s')
hwf('efficiency-two.json', ['gpu','matmul_efficiency'], 2)
hwf('latency-unknown-unit.json', ['pcie','latency'], '300w')
hwf('latency-too-long.json', ['pcie','latency'], 9999999999999)
hwf('latency-negative.json', ['nvme','latency'], '-10us')
hwf('pinned-over-host.json', ['host','pinned_buffer'], '1TiB')
hwf('devices-huge.json', ['nvme','devices'], 100000)
hwf('gpu-missing.json', ['gpu'], DEL)
hwf('gpu-array.json', ['gpu'], [])
hwf('gpudirect-string.json', ['nvme','gpudirect'], 'yes')
hwf('unknown-key.json', ['nvme','read_bw'], '7GB/s')
hwf('queue-depth-zero.json', ['nvme','queue_depth'], 0)
hwf('queue-depth-2048.json', ['nvme','queue_depth'], 2048)
hwf('name-escape-sequence.json', ['name'], 'a100\x1b[2J')
hwf('bandwidth-is-size.json', ['gpu','hbm_bandwidth'], '1.5TB')
hwf('bandwidth-hex.json', ['pcie','h2d_bandwidth'], '0x10GB/s')
w(H,'duplicate-key.json', htxt.replace('"memory": "40GiB"', '"memory": "40GiB", "memory": "80GiB"', 1))
w(H,'dropout-nan-literal.json', htxt.replace('"matmul_efficiency": 0.55', '"matmul_efficiency": NaN', 1))

def hw_latency_over_an_hour():
    d = copy.deepcopy(hw)
    d['nvme']['latency'] = '2h'
    w(H, 'latency-over-an-hour.json', json.dumps(d, indent=2) + '\n')


hw_latency_over_an_hour()

# schedules: the planner's under a 7 GiB budget (offloads, prefetches,
# recomputes), one action or member changed; actions are one per line.
S = 'schedule'
sched = open(f'{src}/tests/fuzz/corpus/schedule/rok-7gib.json').read()
slines = sched.split('\n')


def action(name, i, old, new):
    k = next(k for k, l in enumerate(slines) if l.startswith('    {"id": %d,' % i))
    assert old in slines[k], (name, slines[k])
    out = slines[:]
    out[k] = slines[k].replace(old, new, 1)
    w(S, name, '\n'.join(out))


def sched_head(name, old, new):
    assert old in sched, (name, old)
    w(S, name, sched.replace(old, new, 1))


action('deps-self-cycle.json', 8, '"deps": [5, 6]', '"deps": [5, 8]')
action('deps-later-action.json', 8, '"deps": [5, 6]', '"deps": [5, 11]')
action('deps-missing-action.json', 8, '"deps": [5, 6]', '"deps": [5, 4000000000]')
action('deps-negative.json', 8, '"deps": [5, 6]', '"deps": [-1]')
action('deps-first-action.json', 0, '"deps": []', '"deps": [0]')
action('deps-not-array.json', 8, '"deps": [5, 6]', '"deps": 5')
action('tensor-missing.json', 8, '"tensor": 5,', '"tensor": 99999,')
action('op-missing.json', 7, '"op": 4,', '"op": 99999,')
action('op-on-copy.json', 8, '"tensor": 5,', '"op": 5, "tensor": 5,')
action('bytes-mismatch.json', 8, '"bytes": 16777216', '"bytes": 16777215')
action('id-mismatch.json', 8, '"id": 8,', '"id": 9,')
action('stream-unknown.json', 8, '"stream": "d2h"', '"stream": "d3h"')
action('offload-on-compute.json', 8, '"stream": "d2h"', '"stream": "compute"')
action('end-before-start.json', 8, '"end_s": 0.001617788', '"end_s": 0.000000001')
action('time-negative.json', 8, '"start_s": 0.000757613', '"start_s": -0.5')
action('time-nan.json', 8, '"start_s": 0.000757613', '"start_s": NaN')
action('micro-batch-out-of-range.json', 8, '"micro_batch": 0', '"micro_batch": 7')
action('gpudirect-on-free.json', 10, '"bytes": 16777216,', '"bytes": 16777216, "gpudirect": true,')
# Faults only compiling the program finds (located at the action all the same).
action('free-twice.json', 3, '"tensor": 2, "bytes": 16777216', '"tensor": 3, "bytes": 8388608')
action('offload-twice.json', 8, '"tensor": 5,', '"tensor": 4,')
action('input-never-made.json', 6, '"op": 3,', '"op": 5,')
action('backward-before-forward.json', 1, '"kind": "forward"', '"kind": "backward"')
action('time-past-limit.json', 8, '"start_s": 0.000757613', '"start_s": 1e10')
sched_head('micro-batches-past-trace.json', '"micro_batches": 1,', '"micro_batches": 4294967295,')
sched_head('newer-format.json', '"format": "rok-schedule/1"', '"format": "rok-schedule/3"')
sched_head('trace-sha256-mismatch.json', '"trace_sha256": "', '"trace_sha256": "0')
sched_head('hw-latency-two-hours.json', '"latency": 1.9999999999999999e-06', '"latency": 7200')
# The compact form: a schedule with comm actions and a repeat line.
comm = open(f'{src}/tests/fuzz/corpus/schedule/comm.json').read()
rline = next(l for l in comm.split('\n') if '"repeat_from"' in l)


def repeat(name, old, new):
    assert old in rline, (name, old)
    w(S, name, comm.replace(rline, rline.replace(old, new, 1), 1))


repeat('repeat-times-huge.json', '"times": ', '"times": 400000')
repeat('repeat-micro-batch-past.json', '"micro_batch_step": 1', '"micro_batch_step": 2')
repeat('repeat-from-later.json', '"repeat_from": ', '"repeat_from": 9')
w(S, 'comm-in-format-1.json', comm.replace('"format": "rok-schedule/2"', '"format": "rok-schedule/1"', 1))
w(S, 'comm-collective-unknown.json', comm.replace('"collective": "all-gather"', '"collective": "all-to-all"', 1))
w(S, 'comm-on-compute.json', comm.replace('"stream": "comm", "kind": "comm"', '"stream": "compute", "kind": "comm"', 1))
i = sched.index('"trace": {')
j = sched.index('"name": "layer0.attn.qkv"', i)
k = sched.index('"inputs": [', j)
e = sched.index(']', k)
w(S, 'trace-forward-reference.json', sched[:k] + '"inputs": [\n            9\n          ]' + sched[e + 1:])
w(S, 'truncated.json', sched[:len(sched) * 3 // 5])
w(S, 'actions-missing.json', sched[:sched.index(',\n  "actions"')] + '\n}\n')

# plans of the same trace: refused by the plan reader (fuzz-plan), and
# curve-*: refused by rok plot, which draws their ROK curve.
P = 'plan'
plan_text = open(f'{src}/tests/fuzz/corpus/plan/rok-7gib.json').read()
plan = json.loads(plan_text)


def plan_head(name, old, new):
    assert old in plan_text, (name, old)
    w(P, name, plan_text.replace(old, new, 1))


def plan_edit(name, f):
    d = copy.deepcopy(plan)
    f(d)
    w(P, name, json.dumps(d, indent=2) + '\n')


plan_head('trace-sha256-mismatch.json', '"trace_sha256": "', '"trace_sha256": "f')
plan_head('strategy-unknown.json', '"strategy": "rok"', '"strategy": "magic"')
plan_head('newer-format.json', '"format": "rok-plan/1"', '"format": "rok-plan/2"')
plan_head('budget-negative.json', '"budget_bytes": %d' % plan['budget_bytes'], '"budget_bytes": -1')
plan_head('options-missing.json', '"options": {', '"options_": {')
m = re.search(r'"decision": "(\w+)"', plan_text)
plan_head('decision-unknown.json', m.group(0), '"decision": "teleport"')
first = plan['tensors'][0]['name']
plan_head('tensor-name-mismatch.json', '"name": "%s"' % first, '"name": "%s.x"' % first)
w(P, 'truncated.json', plan_text[:len(plan_text) // 2])
plan_edit('tensors-missing.json', lambda d: d.pop('tensors'))
plan_edit('curve-empty.json', lambda d: d.__setitem__('curve', []))
plan_edit('curve-object.json', lambda d: d.__setitem__('curve', {}))
plan_edit('curve-point-number.json', lambda d: d['curve'].__setitem__(0, 5))
plan_edit('curve-time-negative.json', lambda d: d['curve'][0].__setitem__('step_time_s', -1))
plan_edit('curve-point-missing-key.json', lambda d: d['curve'][0].pop('peak_bytes'))

# sweep CSVs (rok plot reads them), one row or the header changed.
C = 'sweep'
csv = open(f'{src}/tests/fuzz/corpus/sweep/budgets.csv').read()
rows = csv.split('\n')
fields = rows[2].split(',')


def row(idx, value, name):
    f = fields[:]
    f[idx] = value
    w(C, name, '\n'.join(rows[:2] + [','.join(f)] + rows[3:]))


w(C, 'empty.csv', '')
w(C, 'header-only.csv', rows[0] + '\n')
w(C, 'header-wrong.csv', csv.replace('strategy,', 'strategies,', 1))
w(C, 'row-short.csv', '\n'.join(rows[:2] + [rows[2].rsplit(',', 1)[0]] + rows[3:]))
w(C, 'row-long.csv', '\n'.join(rows[:2] + [rows[2] + ',1'] + rows[3:]))
row(0, 'teleport', 'strategy-unknown.csv')
row(3, '-1', 'micro-batch-negative.csv')
row(3, '1e30', 'micro-batch-float.csv')
row(6, '99999999999999999999999', 'budget-overflow.csv')
row(9, 'NaN', 'step-time-nan.csv')
row(9, 'inf', 'step-time-inf.csv')
row(20, '2', 'fits-two.csv')
row(1, 'other-model', 'other-model.csv')
row(9, '"0.5', 'unterminated-quote.csv')
w(C, 'binary.csv', b'\x00\x01\x02\xff\xfe')
w(C, 'truncated.csv', csv[:len(csv) // 2])
