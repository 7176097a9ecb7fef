"""A rok-trace/1 of what PyTorch really does in one training step.

    trace = rok_torch.capture(model, (input_ids, labels))
    json.dump(trace, open("trace.json", "w"))      # rok plan trace.json --hw ...

Ops. The forward is cut at every module boundary: an op is a stretch of
one module's own code between its children's calls (GPT-2's attention is
`layer0.attn#1`, `layer0.attn.c_attn`, `layer0.attn#2` (scores, softmax),
...), plus `input.batch` (the step's inputs) and `step` (code outside the
model: the loss). Forward times are measured per op (CUDA events on a GPU,
wall time on the CPU). Backward time is measured between the moments
autograd unpacks saved tensors: the time from one op's first unpack to the
next op's is that op's backward (ops whose backward saves nothing fold into
a neighbour).

Tensors. Every storage autograd saves, once (a storage saved twice, or two
views of it, is one tensor, as SSDTrain counts), with its dtype and shape,
named in rok's terms where the model's module paths are known (names.py),
else by module path; `needed_by` lists the ops that saved it (whose
backward reads it); `producer` is the op that made the storage (seen with
a TorchFunctionMode); `recompute_from` the saved tensors that op read.
Parameters, buffers, Python scalars autograd wraps, and constants (rotary
cos/sin) are not activations and are left out.
"""
import time
import weakref

import torch
from torch.overrides import TorchFunctionMode

from . import names as N

DTYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.uint8: "u8",
          torch.bool: "u8", torch.int16: "u16", torch.int32: "u32", torch.int64: "i64"}

KINDS = [("Embedding", "embedding"), ("LayerNorm", "layernorm"), ("RMSNorm", "rmsnorm"), ("Linear", "linear"),
         ("Conv1D", "linear"), ("Dropout", "dropout"), ("GELU", "gelu"), ("SwiGLU", "swiglu"),
         ("ReLU", "relu")]


class _Clock:
    """Timestamps: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, cuda):
        self.cuda = cuda

    def now(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def seconds(self, a, b):
        if self.cuda:
            return a.elapsed_time(b) / 1e3
        return b - a


class _Made(TorchFunctionMode):
    """Notes which op made each storage. A fresh storage (not a view, not an
    argument handed back) is the op's own, even at an address the allocator
    reused; a view keeps its storage's producer."""

    def __init__(self, capture):
        super().__init__()
        self.c = capture

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        given = {id(a) for a in N.all_tensors((args, kwargs or {}))}
        op = len(self.c.ops) - 1
        for t in N.all_tensors(out):
            if id(t) in given:
                continue
            key = N.storage_key(t)
            if t._base is None:
                self.c.made_by[key] = op
                # Forgotten when the tensor dies: its address may come back.
                weakref.finalize(t, self.c.forget, key, op)
            else:
                self.c.made_by.setdefault(key, op)
        return out


class _Saved:
    __slots__ = ("tensor", "entry")

    def __init__(self, tensor, entry):
        self.tensor, self.entry = tensor, entry


class _Capture:
    def __init__(self, model, profile):
        self.model = model
        self.tracker = N.Tracker(model, profile)
        self.tracker.on_frame = self._frame
        self.clock = _Clock(any(p.is_cuda for p in model.parameters()))

    # Ops: one per stretch of a module's own code.
    def _open(self, frame):
        call = frame.call if frame is not None else self.tracker.outer
        base = (N.full_name(call.layer, frame.rel) if call.layer >= 0 and frame.rel
                else f"layer{call.layer}" if call.layer >= 0
                else frame.path if frame is not None and frame.path else "step")
        n = self.seen.get(base, 0)
        self.seen[base] = n + 1
        module = type(self.modules[frame.path]).__name__ if frame is not None else ""
        kind = next((k for key, k in KINDS if key in module), "other")
        self.ops.append({"name": base if n == 0 else f"{base}#{n + 1}", "layer": call.layer, "kind": kind,
                         "frame": frame, "start": self.clock.now(), "inputs": []})
        if frame is not None:
            self.ops[-1]["args"] = frame.input_key

    def _close(self):
        self.ops[-1]["end"] = self.clock.now()

    def _frame(self, what, frame):
        self._close()
        if what == "exit":
            for key in frame.call.outputs.get(frame.rel, ()):
                self.made_by.setdefault(key, len(self.ops) - 1)
        self._open(frame if what == "enter" else (self.tracker.stack[-1] if self.tracker.stack else None))

    def release(self):
        """Drops what the step left: the ops' frames and the tracker's calls
        hold every layer's inputs, and the finalizers on tensors that
        outlive the step keep this object alive."""
        self.ops, self.entries, self.made_by, self.seen = [], {}, {}, {}
        self.tracker.reset()

    def forget(self, key, op):
        if self.made_by.get(key) == op and key not in self.entries:
            del self.made_by[key]

    def _producer(self, t, key, op):
        """Inputs of the step come from op 0; what an op makes inside
        (dropout masks, norm statistics: no autograd history) from the op
        that saves it; the rest from the op seen returning its storage."""
        if self.made_by.get(key) == 0 or t.grad_fn is None:
            return self.made_by.get(key) if self.made_by.get(key) == 0 else op
        return self.made_by.get(key, op)

    # Saves.
    def _pack(self, t):
        key = N.storage_key(t)
        if key in self.params or N.is_scalar(t) or t.dtype not in DTYPES:
            if t.dtype not in DTYPES and key not in self.params and not N.is_scalar(t):
                self.skipped.add(str(t.dtype))
            return t
        op = len(self.ops) - 1
        e = self.entries.get(key)
        if e is None:
            call, _, _ = self.tracker.context()
            local = self.tracker.name(t, key)
            if local is None:
                return t
            e = {"name": N.full_name(call.layer, N.numbered(call, local)), "layer": call.layer, "dtype": DTYPES[t.dtype],
                 "nbytes": key[1], "itemsize": t.element_size(), "shape": list(t.shape),
                 "numel": t.numel(), "producer": self._producer(t, key, op), "needed_by": set(),
                 "order": len(self.entries), "history": t.grad_fn is not None}
            self.entries[key] = e
            self.held.append(t)  # its storage stays alive, so keys stay unique
        e["needed_by"].add(op)
        return _Saved(t, e)

    def _unpack(self, s):
        if not isinstance(s, _Saved):
            return s
        op = min(s.entry["needed_by"])
        self.unpacks.append((self.clock.now(), op))
        return s.tensor

    def run(self, batch, loss_fn):
        self.modules = dict(self.model.named_modules())
        self.params = {N.storage_key(p) for p in self.model.parameters()}
        self.params |= {N.storage_key(b) for b in self.model.buffers()}
        self.ops = [{"name": "input.batch", "layer": -1, "kind": "input", "start": None, "end": None,
                     "inputs": []}]
        self.seen, self.made_by, self.entries, self.held, self.unpacks = {}, {}, {}, [], []
        self.skipped = set()
        self.tracker.reset()
        for t in N.all_tensors(batch):
            self.made_by[N.storage_key(t)] = 0
        self.tracker.active = True
        self._open(None)
        with torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack), _Made(self):
            out = self.model(*batch)
            loss = loss_fn(out) if loss_fn is not None else out
        self._close()
        self.tracker.active = False
        backward_start = self.clock.now()
        loss.backward()
        backward_end = self.clock.now()
        if self.clock.cuda:
            torch.cuda.synchronize()
        self.held = []
        return self._times(backward_start, backward_end)

    def _times(self, b_start, b_end):
        fwd = [0.0] * len(self.ops)
        for i, op in enumerate(self.ops[1:], 1):
            fwd[i] = self.clock.seconds(op["start"], op["end"])
        bwd = [0.0] * len(self.ops)
        marks = self.unpacks
        for i, (stamp, op) in enumerate(marks):
            start = b_start if i == 0 else stamp
            end = marks[i + 1][0] if i + 1 < len(marks) else b_end
            bwd[op] += self.clock.seconds(start, end)
        return fwd, bwd


def _op_inputs(c, entries):
    """Each op's inputs: the saved tensors it read that earlier ops made
    (what it saved itself, and its module's first argument)."""
    saved_by = {}
    for e in entries:
        for op in e["needed_by"]:
            saved_by.setdefault(op, []).append(e["id"])
    for i, op in enumerate(c.ops):
        inputs = [t for t in saved_by.get(i, []) if entries[t]["producer"] < i]
        arg = c.entries.get(op.get("args"))
        if arg is not None and arg["producer"] < i and arg["id"] not in inputs:
            inputs.append(arg["id"])
        op["input_ids"] = sorted(inputs)


def _tensor(c, e):
    producer = c.ops[e["producer"]]
    whole = e["numel"] * e["itemsize"] == e["nbytes"] and 1 <= len(e["shape"]) <= 4
    # A dropout mask is rebuilt from the seed; anything else from what its
    # producer read, so a producer that read no saved tensor (its inputs
    # were never saved) leaves it not recomputable.
    is_mask = producer["kind"] == "dropout" and not e["history"]
    sources = [] if is_mask or e["producer"] == 0 else producer["input_ids"]
    # apply.py rebuilds by replaying a tensor's layer: one made outside it
    # (a layer's input, made by the layer before; anything outside the
    # layers) cannot be rebuilt here, so no plan for this trace may ask.
    replayable = e["layer"] >= 0 and producer["layer"] == e["layer"]
    return {"id": e["id"], "name": e["name"], "layer": e["layer"], "dtype": e["dtype"],
            "shape": e["shape"] if whole else [e["nbytes"] // e["itemsize"]], "bytes": e["nbytes"],
            "producer": e["producer"], "needed_by": sorted(e["needed_by"]),
            "recomputable": e["producer"] != 0 and replayable and (is_mask or bool(sources)),
            "recompute_from": sources}


def _op(c, i, entries, fwd, bwd):
    op = c.ops[i]
    o = {"id": i, "name": op["name"], "layer": op["layer"], "kind": op["kind"], "dims": [1, 0, 0, 0],
         "fwd_flops": 0, "bwd_flops": 0, "fwd_bytes": 0, "bwd_bytes": 0}
    if i > 0:
        o["fwd_time_s"], o["bwd_time_s"] = fwd[i], bwd[i]
    o["inputs"] = op["input_ids"]
    o["outputs"] = [e["id"] for e in entries if e["producer"] == i]
    return o


def _fixed(model, optimizer, precision):
    """Weights, gradients and optimizer states as rok counts them. Mixed
    precision: Adam's two fp32 states (and fp32 master weights under 16-bit
    weights); pure: the states in the weights' dtype, no master copy (a
    bf16 model under torch.optim.Adam)."""
    params = list({id(p): p for p in model.parameters()}.values())
    n = sum(p.numel() for p in params)
    elem = params[0].element_size() if params else 4
    states = {"adam": 2, "sgd": 1}[optimizer]
    opt = n * states * elem if precision == "pure" else n * ((4 if elem < 4 else 0) + states * 4)
    return {"params_total": n, "params_per_gpu": n, "weight_bytes": n * elem, "gradient_bytes": n * elem,
            "optimizer_bytes": opt, "optimizer_step_bytes": 2 * opt + 2 * elem * n}


def _trace(c, fwd, bwd, name, micro_batches, optimizer, precision, tokens):
    entries = sorted(c.entries.values(), key=lambda e: (e["producer"], e["order"]))
    for i, e in enumerate(entries):
        e["id"] = i
    _op_inputs(c, entries)
    return {
        "format": "rok-trace/1",
        "model_name": name,
        "layers": c.tracker.n_layers,
        "tokens_per_micro_batch": tokens,
        "micro_batches_per_step": micro_batches,
        "fixed": _fixed(c.model, optimizer, precision),
        "ops": [_op(c, i, entries, fwd, bwd) for i in range(len(c.ops))],
        "tensors": [_tensor(c, e) for e in entries],
    }


def dropout_mask_bytes(dtype=torch.float32, device="cpu"):
    """Bytes per element of the mask this PyTorch's dropout saves (rok's
    `mask_bytes`): 1.13 on the CPU keeps it in the activation dtype, the
    fused kernel (CUDA) keeps booleans."""
    sizes = []
    x = torch.ones(64, dtype=dtype, device=device, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: sizes.append(t.element_size()) or t, lambda t: t):
        torch.nn.functional.dropout(x, 0.5, training=True)
    return min(sizes)


def capture(model, batch, loss_fn=None, name=None, micro_batches_per_step=1, optimizer="adam", warmup=1,
            profile=None, precision="mixed"):
    """Runs one forward and backward of MODEL on BATCH (a tuple of its
    arguments; the output, or loss_fn(output), is the scalar loss) and
    returns the step as a rok-trace/1 dict. `warmup` untimed steps first.
    Gradients are left in the parameters. `precision` says how the
    optimizer keeps its states (rok's "mixed" or "pure", for the fixed
    memory)."""
    if optimizer not in ("adam", "sgd"):
        raise ValueError("optimizer: adam or sgd")
    if precision not in ("mixed", "pure"):
        raise ValueError("precision: mixed or pure")
    batch = tuple(batch)
    for _ in range(warmup):
        out = model(*batch)
        (loss_fn(out) if loss_fn is not None else out).backward()
    model.zero_grad(set_to_none=True)
    c = _Capture(model, profile)
    try:
        fwd, bwd = c.run(batch, loss_fn)
    finally:
        c.tracker.remove()
    if c.skipped:
        raise ValueError(f"rok-trace/1 has no dtype for saved tensors of {', '.join(sorted(c.skipped))}")
    ids = N.first_tensor(batch)
    trace = _trace(c, fwd, bwd, name or type(model).__name__, micro_batches_per_step, optimizer, precision,
                   ids.numel() if ids is not None else 1)
    c.release()
    return trace
