#!/usr/bin/python3
"""rok_torch against PyTorch itself (Debian's python3-torch, on the CPU).

For a tiny GPT-2 and a tiny LLaMA (rok_torch.reference, HF's module paths,
fp32; --set mask_bytes says what this PyTorch's CPU dropout saves):
- 3 training steps (SGD) under keep and under applied plans that mix
  host offload, NVMe offload (rok's store) and recompute give bitwise the
  same gradients and weights;
- the bytes saved per layer and per decision are what the plan predicts;
- capture -> `rok plan` -> apply round trips, and `rok simulate` reads
  the captured trace;
- the NVMe work folder exists during the step and is gone after it, after
  a failed read (ROK_FAULT) and after an exception in the forward.
Usage: test_rok_torch.py ROK
"""
import concurrent.futures
import copy
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

import rok_torch
from rok_torch.capture import dropout_mask_bytes
from rok_torch.reference import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
from rok_torch.storage import StorageError

ROK = sys.argv[1]
SEQ, BATCH, HIDDEN, HEADS, LAYERS, VOCAB = 32, 2, 64, 4, 2, 128
CYCLE = ["keep", "offload-host", "offload-nvme", "recompute"]


def rok(*args):
    return subprocess.run([ROK, *args], check=True, capture_output=True, text=True).stdout


def model_args(arch):
    sets = dict(layers=LAYERS, hidden=HIDDEN, heads=HEADS, vocab=VOCAB, seq_len=SEQ, micro_batch=BATCH,
                global_batch=BATCH, data_parallel=1, dtype="fp32")
    if arch == "gpt":
        sets.update(ffn_hidden=4 * HIDDEN, mask_bytes=dropout_mask_bytes(), dropout=0.1)
        base = "gpt3-1.3b"
    else:
        sets.update(ffn_hidden=172, kv_heads=HEADS, attention="standard", zero_stage=0)
        base = "llama2-7b"
    return [base] + [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]


def make_model(arch):
    torch.manual_seed(0)
    if arch == "gpt":
        c = GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, dropout=0.1)
        return GPT2LMHeadModel(c)
    c = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=172, num_hidden_layers=LAYERS,
                    num_attention_heads=HEADS, num_key_value_heads=HEADS, max_position_embeddings=SEQ)
    return LlamaForCausalLM(c)


def batches():
    g = torch.Generator().manual_seed(1)
    return [(torch.randint(0, VOCAB, (BATCH, SEQ), generator=g), torch.randint(0, VOCAB, (BATCH, SEQ), generator=g))
            for _ in range(3)]


def train(model, plan, nvme):
    """3 SGD steps; the gradients of each step and the reports."""
    m = copy.deepcopy(model)
    runner = rok_torch.apply(m, plan, nvme_dir=nvme) if plan is not None else None
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    grads, reports = [], []
    torch.manual_seed(2)
    for ids, labels in batches():
        opt.zero_grad(set_to_none=True)
        if runner is None:
            m(ids, labels).backward()
        else:
            with runner.step():
                m(ids, labels).backward()
            reports.append(runner.report)
        grads.append({n: p.grad.clone() for n, p in m.named_parameters()})
        opt.step()
    return grads, reports, m


def same(grads_a, grads_b, what):
    for step, (a, b) in enumerate(zip(grads_a, grads_b)):
        bad = [n for n in a if not torch.equal(a[n], b[n])]
        assert not bad, f"{what}: step {step}: gradients differ in {bad[:4]}"


def check_bytes(report, plan, what):
    """Per layer and decision: measured = predicted, within 1%."""
    predicted = rok_torch.Plan(plan).predicted_layer_bytes()
    for layer in range(LAYERS):
        got = report["bytes_by_layer"][str(layer)]
        for d in rok_torch.DECISIONS:
            want = predicted[layer][d]
            assert abs(got[d] - want) <= 0.01 * max(want, 1), \
                f"{what}: layer {layer} {d}: PyTorch saved {got[d]} bytes, rok predicted {want}"


def mixed(plan):
    """Every decision, in turn, in every layer (a layer's input is moved,
    not recomputed: replaying the layer cannot make its own input)."""
    out = copy.deepcopy(plan)
    for i, t in enumerate(out["tensors"]):
        d = CYCLE[i % 4]
        if t["layer"] < 0 or t["name"].endswith(".input"):
            d = "offload-host" if d == "recompute" else d
        t["decision"] = d
    return out


def test_mixed(arch, tmp):
    model = make_model(arch)
    keep = json.loads(rok("plan", *model_args(arch), "--hw", "cpu-2core-virtio", "-s", "keep", "--json"))
    plan = mixed(keep)
    kinds = {t["decision"] for t in plan["tensors"]}
    assert kinds == set(CYCLE), kinds
    g_keep, _, m_keep = train(model, None, None)
    g_kept, r_kept, _ = train(model, keep, None)
    same(g_keep, g_kept, f"{arch} keep plan")
    check_bytes(r_kept[0], keep, f"{arch} keep plan")
    g_mixed, r_mixed, m_mixed = train(model, plan, tmp)
    same(g_keep, g_mixed, f"{arch} mixed plan")
    for (n, a), b in zip(m_keep.named_parameters(), m_mixed.parameters()):
        assert torch.equal(a, b), f"{arch}: weights differ after 3 steps: {n}"
    for r in r_mixed:
        check_bytes(r, plan, f"{arch} mixed plan")
        assert r["moved"]["nvme_write_bytes"] > 0 and r["replays"] > 0 and r["moved"]["d2h_bytes"] > 0, r
        assert not os.path.exists(r["workdir"]), f"{r['workdir']} left after the step"
    print(f"{arch}: 3 steps, mixed plan: gradients bitwise equal to keep; bytes per layer as predicted; "
          f"moved {r_mixed[0]['moved']}, {r_mixed[0]['replays']} replays, "
          f"peak saved {r_mixed[0]['peak_saved_bytes']} vs keep {r_kept[0]['peak_saved_bytes']} bytes")
    return model


def test_round_trip(arch, model, tmp):
    ids, labels = batches()[0]
    trace = rok_torch.capture(copy.deepcopy(model), (ids, labels), name=f"tiny-{arch}")
    path = os.path.join(tmp, f"{arch}-trace.json")
    with open(path, "w") as f:
        json.dump(trace, f)
    rok("simulate", path, "--hw", "cpu-2core-virtio")
    keep = json.loads(rok("plan", path, "--hw", "cpu-2core-virtio", "-s", "keep", "--json"))
    budget = (keep["predicted"]["peak_bytes"] + keep["curve"][0]["budget_bytes"]) // 2
    out = os.path.join(tmp, f"{arch}-plan")
    rok("plan", path, "--hw", "cpu-2core-virtio", "--budget", str(budget), "--offload-min-elements", "0", "-o", out)
    plan = json.load(open(os.path.join(out, "plan.json")))
    assert any(t["decision"] != "keep" for t in plan["tensors"]), "the planner kept everything"
    g_keep, _, _ = train(model, None, None)
    g_plan, r_plan, _ = train(model, os.path.join(out, "plan.json"), tmp)
    same(g_keep, g_plan, f"{arch} captured plan")
    check_bytes(r_plan[0], plan, f"{arch} captured plan")
    assert not r_plan[0]["unplanned"] or r_plan[0]["unplanned"] == ["input.positions"], r_plan[0]["unplanned"]
    policy = os.path.join(tmp, f"{arch}-policy.json")
    rok("export", os.path.join(out, "plan.json"), "--model", path, "--to", "torch", "-o", policy)
    g_policy, _, _ = train(model, policy, tmp)
    same(g_keep, g_policy, f"{arch} exported torch policy")
    print(f"{arch}: capture -> rok plan ({sum(t['decision'] != 'keep' for t in plan['tensors'])} tensors moved "
          f"or recomputed) -> apply: bitwise equal, bytes as planned; the exported policy too")


def live_tensor_bytes():
    gc.collect()
    seen = {}
    for o in gc.get_objects():
        if torch.is_tensor(o):
            seen[o.storage().data_ptr()] = o.storage().nbytes()
    return sum(seen.values())


def test_bf16_recompute(tmp):
    """A bf16 LLaMA with GQA, captured (pure precision: bf16 Adam states;
    the capture leaves no tensor behind),
    under the recompute baseline: rok plans the captured trace (the last
    layer's output is the head's input, kept), replays give the gradients
    of plain PyTorch bitwise, and a runner's steps leave no tensor behind
    (replays once leaked a layer each through a saved-output cycle)."""
    torch.manual_seed(0)
    c = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=172, num_hidden_layers=LAYERS,
                    num_attention_heads=HEADS, num_key_value_heads=2, max_position_embeddings=SEQ)
    model = LlamaForCausalLM(c).to(torch.bfloat16)
    ids, labels = batches()[0]
    captured = copy.deepcopy(model)
    before = live_tensor_bytes()
    trace = rok_torch.capture(captured, (ids, labels), name="tiny-llama-bf16", precision="pure")
    captured.zero_grad(set_to_none=True)
    left = live_tensor_bytes() - before
    assert left == 0, f"capture left {left} bytes of tensors (once: every layer's input)"
    del captured
    n = sum(p.numel() for p in model.parameters())
    assert trace["fixed"]["optimizer_bytes"] == 4 * n, trace["fixed"]  # two bf16 states, no master copy
    path = os.path.join(tmp, "bf16-trace.json")
    with open(path, "w") as f:
        json.dump(trace, f)
    plan = json.loads(rok("plan", path, "--hw", "cpu-2core-virtio", "-s", "recompute", "--budget", "1GiB", "--json"))
    assert any(t["decision"] == "recompute" for t in plan["tensors"])
    g_keep, _, _ = train(model, None, None)
    before = live_tensor_bytes()
    g_plan, r_plan, _ = train(model, plan, tmp)
    same(g_keep, g_plan, "bf16 llama, recompute baseline")
    assert all(r["replays"] > 0 for r in r_plan), r_plan
    del g_plan
    left = live_tensor_bytes() - before
    assert left == 0, f"{left} bytes of tensors left after the runner's steps"
    print(f"bf16 llama (GQA): recompute baseline on its captured trace: bitwise equal to plain PyTorch, "
          f"{r_plan[0]['replays']} replays per step, no tensor left after the steps")


def landed(runner):
    """Wait until every offload's write is done (its done-callback then
    lets the tensor go from memory)."""
    concurrent.futures.wait([r.write for r in runner.records if r.write is not None])
    time.sleep(0.05)


def test_files(tmp):
    model = make_model("gpt")
    keep = json.loads(rok("plan", *model_args("gpt"), "--hw", "cpu-2core-virtio", "-s", "keep", "--json"))
    plan = copy.deepcopy(keep)
    for t in plan["tensors"]:
        t["decision"] = "offload-nvme"
    ids, labels = batches()[0]
    m = copy.deepcopy(model)
    runner = rok_torch.apply(m, plan, nvme_dir=tmp)
    seen = {}
    with runner.step():
        loss = m(ids, labels)
        seen["during"] = sorted(os.listdir(runner.workdir))
        loss.backward()
    assert seen["during"] == ["data", "rok-owner"], seen
    assert not os.path.exists(runner.report["workdir"])
    # A failed read in backward: the step raises, the folder goes. The
    # writes are let land first: a tensor backward finds still in memory
    # (its write in flight) is not read back, and on a busy machine that
    # could be every one of them.
    os.environ["ROK_FAULT"] = "eio@read:1"
    try:
        with runner.step():
            loss = m(ids, labels)
            landed(runner)
            loss.backward()
        raise AssertionError("an I/O error did not fail the step")
    except (StorageError, RuntimeError) as e:
        assert "Input/output error" in str(e) or "EIO" in str(e), e
    finally:
        del os.environ["ROK_FAULT"]
    assert runner.report["workdir"] and not os.path.exists(runner.report["workdir"])
    # An exception in the forward.
    boom = m.transformer.h[1].register_forward_hook(lambda *a: (_ for _ in ()).throw(ValueError("boom")))
    try:
        with runner.step():
            m(ids, labels).backward()
    except ValueError:
        pass
    boom.remove()
    assert runner.report["workdir"] and not os.path.exists(runner.report["workdir"])
    assert [e for e in os.listdir(tmp) if e.startswith("rok-")] == [], os.listdir(tmp)
    print("files: the work folder holds data during the step and is gone after it, after EIO, after an exception")


def main():
    with tempfile.TemporaryDirectory(dir=os.environ.get("ROK_TORCH_TEST_DIR")) as tmp:
        for arch in ("gpt", "llama"):
            model = test_mixed(arch, tmp)
            test_round_trip(arch, model, tmp)
        test_bf16_recompute(tmp)
        test_files(tmp)


if __name__ == "__main__":
    main()
