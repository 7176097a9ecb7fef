#!/usr/bin/env python3
"""Hostile variants of real inputs for tests/cli/hostile-readers.sh, made at
test time from what rok writes today (so they never go stale): each file is
the input with one thing broken, named after it.

usage: hostile-readers.py plan|hf|captured SOURCE OUT-DIR"""
import json
import os
import sys

kind, src, out = sys.argv[1:4]
text = open(src).read()
base = json.loads(text)


def put(name, body):
    with open(os.path.join(out, name), 'w') as f:
        f.write(body)


def edit(name, change, indent=2):
    d = json.loads(text)
    change(d)
    put(name, json.dumps(d, indent=indent) + '\n')


def raw(name, old, new):  # one member's text replaced as written
    assert old in text, (name, old)
    put(name, text.replace(old, new, 1))


def setter(*path, value=None, delete=False):
    def change(d):
        for p in path[:-1]:
            d = d[p]
        if delete:
            d.pop(path[-1])
        else:
            d[path[-1]] = value
    return change


def plans():
    """A plan.json edited by hand, as `rok simulate --plan` and `rok export` read it."""
    sha, budget = base['trace_sha256'], '"budget_bytes": %d' % base['budget_bytes']
    raw('sha256-wrong.json', sha, ('0' if sha[0] != '0' else '1') + sha[1:])
    raw('sha256-short.json', sha, sha[:10])
    raw('sha256-number.json', '"%s"' % sha, '5')
    raw('budget-nan.json', budget, '"budget_bytes": NaN')
    raw('budget-1e400.json', budget, '"budget_bytes": 1e400')
    raw('budget-2pow64.json', budget, '"budget_bytes": 18446744073709551616')
    raw('budget-string.json', budget, '"budget_bytes": "20MiB"')
    raw('duplicate-key.json', '"strategy": "rok"', '"strategy": "rok", "strategy": "keep"')
    raw('feasible-string.json', '"feasible": true', '"feasible": "yes"')
    edit('format-missing.json', setter('format', delete=True))
    edit('strategy-unknown.json', setter('strategy', value='teleport'))
    edit('decision-number.json', setter('tensors', 3, 'decision', value=7))
    edit('decision-unknown.json', setter('tensors', 3, 'decision', value='teleport'))
    edit('tensor-unknown-name.json', setter('tensors', 3, 'name', value='layer9.attn.nothing'))
    edit('tensor-id-huge.json', setter('tensors', 3, 'id', value=4000000000))
    edit('tensor-bytes-wrong.json', setter('tensors', 3, 'bytes', value=base['tensors'][3]['bytes'] + 1))
    edit('tensor-layer-string.json', setter('tensors', 3, 'layer', value='zero'))
    edit('tensor-missing.json', lambda d: d['tensors'].pop(3))
    edit('tensor-extra.json', lambda d: d['tensors'].append(dict(d['tensors'][-1], id=d['tensors'][-1]['id'] + 1)))
    edit('tensors-object.json', setter('tensors', value={}))
    edit('options-unknown-key.json', setter('options', 'prefetch_windw', value=2))
    edit('options-window-huge.json', setter('options', 'prefetch_window', value=10**12))
    edit('options-window-negative.json', setter('options', 'prefetch_window', value=-1))
    edit('options-unit-unknown.json', setter('options', 'prefetch_unit', value='galaxy'))
    edit('options-rebuild-number.json', setter('options', 'rebuild_whole_layers', value=1))
    put('truncated.json', text[:len(text) // 3])
    put('array.json', '[]\n')


def hf():
    """A Hugging Face config.json: wrong types, unknown families, absurd sizes."""
    def lit(name, key, literal):
        d = dict(base)
        d[key] = '@@'
        put(name, json.dumps(d, indent=2).replace('"@@"', literal) + '\n')
    edit('hidden-1e12.json', setter('hidden_size', value=10**12))
    lit('hidden-1e12-float.json', 'hidden_size', '1e12')
    lit('hidden-nan.json', 'hidden_size', 'NaN')
    edit('layers-1e9.json', setter('num_hidden_layers', value=10**9))
    edit('layers-zero.json', setter('num_hidden_layers', value=0))
    edit('layers-string.json', setter('num_hidden_layers', value='32'))
    edit('heads-fraction.json', setter('num_attention_heads', value=32.5))
    edit('heads-not-dividing.json', setter('num_attention_heads', value=33))
    edit('kv-heads-over-heads.json', setter('num_key_value_heads', value=64))
    edit('intermediate-2pow40.json', setter('intermediate_size', value=2**40))
    edit('vocab-array.json', setter('vocab_size', value=[base['vocab_size']]))
    edit('max-positions-1e15.json', setter('max_position_embeddings', value=10**15))
    edit('tie-string.json', setter('tie_word_embeddings', value='false'))
    edit('model-type-unknown.json', setter('model_type', value='bloom'))
    edit('model-type-number.json', setter('model_type', value=7))
    edit('model-type-missing.json', setter('model_type', delete=True))
    edit('hidden-missing.json', setter('hidden_size', delete=True))
    edit('kv-heads-zero.json', setter('num_key_value_heads', value=0))
    edit('torch-dtype-unknown.json', setter('torch_dtype', value='float7'))
    edit('rope-scaling-string.json', setter('rope_scaling', value='yes'))
    edit('rope-theta-string.json', setter('rope_theta', value='big'))
    edit('all-absurd.json', lambda d: d.update(num_hidden_layers=10**9, hidden_size=10**12, vocab_size=10**12))
    put('truncated.json', text[:len(text) // 2])
    put('array.json', '[' + text + ']\n')


def captured():
    """A trace captured by rok_torch (traces/), edited."""
    timed = next(i for i, op in enumerate(base['ops']) if op.get('fwd_time_s', 0) > 0)
    gemm = next(i for i, op in enumerate(base['ops']) if op['kind'] == 'linear')
    one = lambda *path, value: setter(*path, value=value)  # noqa: E731
    raw('time-nan.json', '"fwd_time_s": %s' % json.dumps(base['ops'][timed]['fwd_time_s']), '"fwd_time_s": NaN')
    for name, change in [
            ('time-negative.json', one('ops', timed, 'fwd_time_s', value=-1e-3)),
            ('time-past-limit.json', one('ops', timed, 'bwd_time_s', value=1e7)),
            ('flops-1e19.json', one('ops', gemm, 'fwd_flops', value=10**19)),
            ('bytes-2pow64.json', one('ops', gemm, 'bwd_bytes', value=2**64 - 1)),
            ('dims-negative.json', one('ops', gemm, 'dims', value=[1, -128, 768, 768])),
            ('kind-number.json', one('ops', gemm, 'kind', value=3)),
            ('op-name-escape.json', one('ops', timed, 'name', value='transformer\u001b[2J')),
            ('input-later-tensor.json', one('ops', timed, 'inputs', value=[len(base['tensors']) - 1])),
            ('micro-batches-zero.json', one('micro_batches_per_step', value=0)),
            ('micro-batches-1e6.json', one('micro_batches_per_step', value=10**6)),
            ('micro-batches-not-model.json', one('micro_batches_per_step', value=2)),
            ('tokens-zero.json', one('tokens_per_micro_batch', value=0)),
            ('layers-past-limit.json', one('layers', value=2049)),
            ('model-layers-mismatch.json', one('model', 'layers', value=base['layers'] + 1)),
            ('stage-without-pipeline.json', one('pipeline_stage', value=1)),
            ('weights-2pow63.json', one('fixed', 'weight_bytes', value=2**63)),
            ('dtype-unknown.json', one('tensors', 3, 'dtype', value='float7')),
            ('shape-overflow.json', one('tensors', 3, 'shape', value=[2**31] * 4))]:
        edit(name, change, indent=1)


{'plan': plans, 'hf': hf, 'captured': captured}[kind]()
