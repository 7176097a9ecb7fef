"""Running a rok plan inside a PyTorch training step.

    runner = rok_torch.apply(model, "plan.json", nvme_dir="/mnt/nvme")
    for batch in data:
        with runner.step():
            loss = model(**batch)
            loss.backward()
        print(runner.report)

Inside `step()`, torch.autograd.graph.saved_tensors_hooks catches every
tensor autograd saves. Each is named in rok's terms (names.py) and handled
as the plan decides for that name:

  keep          held where it is
  offload-host  copied to (pinned, on a GPU) host memory
  offload-nvme  written to DIR/rok-XXXXXX/data through rok's own store
                (io_uring, O_DIRECT; storage.py), read back in backward
  recompute     dropped; the first time backward needs it, the layer's
                forward is replayed (same inputs, same RNG state) until every
                recomputed tensor of that layer is made again, as
                torch.utils.checkpoint's non-reentrant mode does for a whole
                region: here only the tensors the plan recomputes are
                rebuilt, others come from where the plan put them

SSDTrain's rules: a storage saved twice (two views, or two ops saving one
tensor) is one record, moved once; an offloaded tensor's device copy is
released when its layer's forward ends and the copy is done, and a backward
that needs it before then uses it directly (forwarding); in backward, the
offloaded tensors of the `prefetch_layers` layers before the current one
(the plan's option) are read ahead, in backward order. The work folder is
removed when the step ends, on success and on error.

What cannot be done as planned is kept and listed in report["deviations"]
(recomputing a layer's input, which replaying the layer cannot make, or
anything outside the layers); saved tensors the plan does not name are kept
and listed in report["unplanned"].
"""
import concurrent.futures
import contextlib
import json
import os
import threading
import warnings

import torch

from . import names as N
from .storage import Store

DECISIONS = ("keep", "offload-host", "offload-nvme", "recompute")


def prefetch_layers(options):
    """The plan's prefetch window in layers, the unit this hook prefetches
    in: rok's window counts layers, modules or ops (`prefetch_unit`); a
    window of modules or ops reads ahead within one layer, so it becomes one
    layer here (zero stays zero). Files older than the unit say
    `prefetch_layers`."""
    window = int(options.get("prefetch_window", options.get("prefetch_layers", 1)))
    if options.get("prefetch_unit", "layer") == "layer":
        return window
    return 1 if window > 0 else 0

class PlanError(ValueError):
    pass


class Plan:
    """The per-tensor decisions of a rok-plan/1 file."""

    def __init__(self, source):
        if isinstance(source, dict):
            doc, where = source, "plan"
        else:
            where = os.fspath(source)
            with open(where) as f:
                doc = json.load(f)
        if doc.get("format") == "rok-torch-policy/1":
            doc = self._from_policy(doc, where)
        if doc.get("format") != "rok-plan/1":
            raise PlanError(f"{where}: not a rok-plan/1 or rok-torch-policy/1 file (format {doc.get('format')!r})")
        self.doc = doc
        self.decisions, self.bytes, self.layer_of = {}, {}, {}
        for i, t in enumerate(doc.get("tensors", [])):
            if t.get("decision") not in DECISIONS:
                raise PlanError(f"{where}: tensors[{i}].decision {t.get('decision')!r} is not one of "
                                + ", ".join(DECISIONS))
            self.decisions[t["name"]] = t["decision"]
            self.bytes[t["name"]] = t["bytes"]
            self.layer_of[t["name"]] = t["layer"]
        self.layers = max(self.layer_of.values(), default=-1) + 1
        self.prefetch_layers = prefetch_layers(doc.get("options", {}))

    @staticmethod
    def _from_policy(doc, where):
        """`rok export --to torch`: decisions by name (no byte counts)."""
        tensors = []
        for name, decision in doc.get("decisions", {}).items():
            head = name.split(".", 1)[0]
            layer = int(head[5:]) if head.startswith("layer") and head[5:].isdigit() else -1
            tensors.append({"name": name, "layer": layer, "bytes": 0, "decision": decision})
        if not tensors:
            raise PlanError(f"{where}: a rok-torch-policy/1 without decisions")
        return {"format": "rok-plan/1", "tensors": tensors,
                "options": {"prefetch_layers": doc.get("prefetch_layers", 1)}}

    def predicted_layer_bytes(self):
        """{layer: {decision: bytes}} as the plan predicts it."""
        out = {}
        for name, b in self.bytes.items():
            d = out.setdefault(self.layer_of[name], dict.fromkeys(DECISIONS, 0))
            d[self.decisions[name]] += b
        return out


class _ReplayDone(Exception):
    pass


class Record:
    """One storage saved in the step, and where its bytes are."""

    __slots__ = ("name", "layer", "call", "decision", "nbytes", "dtype", "numel", "device", "flat", "host",
                 "stored", "write", "fetch", "value", "staged", "left", "pack_index", "saves", "unpacked", "refs",
                 "resident", "__weakref__")

    def __init__(self, name, call, decision, t, pack_index):
        self.name, self.call, self.layer, self.decision = name, call, call.layer, decision
        self.dtype, self.device = t.dtype, t.device
        self.nbytes = N.storage_key(t)[1]
        self.numel = self.nbytes // t.element_size()
        self.flat = t.detach().as_strided((self.numel,), (1,), 0)
        self.host = self.stored = self.write = self.fetch = self.value = self.staged = None
        self.pack_index = pack_index
        self.saves = self.unpacked = self.refs = 0
        self.resident = self.left = False


class Handle:
    """What autograd holds for a saved tensor: its record and view."""

    __slots__ = ("engine", "record", "size", "stride", "offset", "requires_grad")

    def __init__(self, engine, record, t):
        self.engine, self.record = engine, record
        self.size, self.stride, self.offset = t.size(), t.stride(), t.storage_offset()
        self.requires_grad = t.requires_grad  # a replay's input: a saved constant (bf16 cos/sin) stays one
        record.refs += 1

    def __del__(self):
        try:
            self.engine._unref(self.record)
        except Exception:  # interpreter shutdown
            pass


class Runner:
    def __init__(self, model, plan, nvme_dir=None, profile=None, slot_bytes=1 << 20, slots=16):
        self.model = model
        self.plan = plan if isinstance(plan, Plan) else Plan(plan)
        self.tracker = N.Tracker(model, profile)
        if self.tracker.profile is None:
            raise PlanError("rok_torch: no module-path profile fits this model (known: "
                            + ", ".join(p["layers"] + ".N" for p in N.PROFILES) + ")")
        if self.plan.layers != self.tracker.n_layers:
            raise PlanError(f"the plan is for {self.plan.layers} layers, the model has {self.tracker.n_layers}")
        if any(d == "offload-nvme" for d in self.plan.decisions.values()) and nvme_dir is None:
            raise PlanError("the plan offloads to NVMe: give nvme_dir, a directory on the SSD")
        self.nvme_dir, self.slot_bytes, self.slots = nvme_dir, slot_bytes, slots
        # What the simulated step kept in memory at most (saved tensors):
        # forward waits for copies out and prefetches hold back to stay
        # under it, as the simulator's step does (none for a policy file).
        self.cap = self.plan.doc.get("predicted", {}).get("activation_peak_bytes")
        self.tracker.on_layer_enter = self._layer_enter
        self.tracker.on_layer_exit = self._layer_exit
        self.report = None
        # Reentrant: a Handle collected by the GC while this thread holds the
        # lock unrefs its record under it (a plain Lock deadlocked there).
        self._lock = threading.RLock()
        self._in_step = False

    # -- the step --------------------------------------------------------
    @contextlib.contextmanager
    def step(self):
        """One forward and backward under the plan; files removed on exit."""
        if self._in_step:
            raise RuntimeError("rok_torch: steps do not nest")
        self._begin()
        self._in_step = True
        ok = False
        try:
            with torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack):
                self.tracker.active = True
                try:
                    yield self
                finally:
                    self.tracker.active = False
            ok = True
        finally:
            self._in_step = False
            self._end(ok)

    def _begin(self):
        self.tracker.reset()
        self.params = {N.storage_key(p) for p in self.model.parameters()}
        self.params |= {N.storage_key(b) for b in self.model.buffers()}
        self.live = {}
        self.records = []
        self.store = None
        self.io = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="rok-io")
        self.cuda_stream = None
        self.fetched_calls = set()
        self.stats = dict(saves=0, deduplicated=0, forwarded=0, replays=0, d2h_bytes=0, h2d_bytes=0,
                          nvme_write_bytes=0, nvme_read_bytes=0, recomputed_bytes=0, fetch_waits=0)
        self.resident = self.peak = 0
        self.bytes = {}
        self.unplanned, self.deviations, self.deviations_seen = set(), [], set()
        self.workdir = None
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()

    def _end(self, ok):
        errors = []
        self.io.shutdown(wait=True)
        for r in self.records:
            for f in (r.write, r.fetch):
                if f is not None and f.done() and f.exception() is not None:
                    errors.append(f.exception())
        backend = direct = st = None
        if self.store is not None:
            backend, direct = self.store.backend, self.store.direct
            st = self.store.stats()
            self.store.close()  # every file and the rok-XXXXXX folder go here
            self.store = None
        self.report = {
            "bytes_by_layer": {str(k): v for k, v in sorted(self.bytes.items())},
            "moved": {k: self.stats[k] for k in ("d2h_bytes", "h2d_bytes", "nvme_write_bytes", "nvme_read_bytes")},
            "saves": self.stats["saves"], "storages": len(self.records),
            "deduplicated_saves": self.stats["deduplicated"], "forwarded": self.stats["forwarded"],
            "replays": self.stats["replays"], "recomputed_bytes": self.stats["recomputed_bytes"],
            "fetch_waits": self.stats["fetch_waits"],
            "peak_saved_bytes": self.peak,
            "cuda_max_memory_allocated": torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None,
            "unplanned": sorted(self.unplanned), "deviations": self.deviations,
            "workdir": self.workdir, "backend": backend, "direct": direct, "store": st, "completed": ok,
        }
        for r in self.records:
            r.stored = None  # the store is gone with its files
        self.records, self.live = [], {}
        self.tracker.reset()  # the layer calls hold their inputs: free them before the optimizer step
        if ok and errors:
            raise errors[0]

    # -- layer boundaries ------------------------------------------------
    def _layer_enter(self, call):
        call.records = []
        prefix = f"layer{call.layer}."
        if any(n.startswith(prefix) and d == "recompute" for n, d in self.plan.decisions.items()):
            call.rng = (torch.get_rng_state(),
                        [torch.cuda.get_rng_state(d) for d in range(torch.cuda.device_count())]
                        if torch.cuda.is_available() and torch.cuda.is_initialized() else [])
            call.input_keys = {N.storage_key(t) for t in N.all_tensors(call.args)}

    def _layer_exit(self, call):
        if call.rng is not None:
            # The replay's inputs: those saved come back through their record
            # (wherever the plan put them); others (masks, cos/sin) are held.
            args = []
            for a in call.args:
                rec = self.live.get(N.storage_key(a)) if isinstance(a, torch.Tensor) else None
                if rec is not None:
                    args.append(Handle(self, rec, a))
                    rec.saves += 1  # the replay unpacks it once more
                else:
                    args.append(a)
            call.args = tuple(args)
        for rec in call.records:
            if rec.decision == "keep":
                continue
            self.live.pop(N.storage_key(rec.flat), None)
            rec.left = True
            if rec.decision == "recompute" or rec.write is None:
                self._drop_device(rec)
            else:
                rec.write.add_done_callback(lambda f, rec=rec: self._drop_device(rec))
        self._throttle()

    def _throttle(self):
        """Over the plan's peak, waits for the oldest copies out of layers
        already left (their device memory goes when they land), as the
        simulated compute waits for memory."""
        if self.cap is None:
            return
        for rec in self.records:
            if self.resident <= self.cap:
                return
            if rec.left and rec.write is not None and rec.flat is not None:
                rec.write.result()
                self._drop_device(rec)

    def _drop_device(self, rec):
        with self._lock:
            rec.flat = None
            if rec.value is None:
                self._set_resident(rec, False)

    def _set_resident(self, rec, on):
        if rec.resident != on:
            rec.resident = on
            self.resident += rec.nbytes if on else -rec.nbytes
            self.peak = max(self.peak, self.resident)

    # -- pack ------------------------------------------------------------
    def _pack(self, t):
        key = N.storage_key(t)
        call, _, _ = self.tracker.context()
        index = call.saves
        call.saves += 1
        if key in self.params or not self.tracker.active or N.is_scalar(t):
            return t
        rec = self.live.get(key)
        if rec is not None and rec.dtype != t.dtype:
            return t  # one storage seen as two dtypes: left to autograd
        if rec is None:
            local = self.tracker.name(t, key)
            if local is None:
                return t  # a constant (rotary cos/sin)
            rec = self._new_record(N.full_name(call.layer, N.numbered(call, local)), call, t, index, key)
        else:
            self.stats["deduplicated"] += 1
        rec.saves += 1
        self.stats["saves"] += 1
        return Handle(self, rec, t)

    def _new_record(self, name, call, t, index, key):
        decision = self.plan.decisions.get(name, self.plan.decisions.get(N.base_name(name)))
        if decision is None:
            decision = "keep"
            self.unplanned.add(N.base_name(name))
        if decision == "recompute" and (call.layer < 0 or key in getattr(call, "input_keys", ())):
            if name not in self.deviations_seen:
                self.deviations_seen.add(name)
                self.deviations.append(f"{name}: kept, not recomputed (replaying its layer cannot make "
                                       + ("its own input)" if call.layer >= 0 else "it: outside the layers)"))
            decision = "keep"
        rec = Record(name, call, decision, t, index)
        self.records.append(rec)
        self.live[key] = rec
        call.records.append(rec)
        per = self.bytes.setdefault(call.layer, dict.fromkeys(DECISIONS, 0))
        per[decision] += rec.nbytes
        with self._lock:
            self._set_resident(rec, True)
        if decision == "offload-host":
            self._offload_host(rec)
        elif decision == "offload-nvme":
            self._offload_nvme(rec)
        return rec

    def _d2h(self, rec):
        """A host copy of REC's storage: pinned and asynchronous on a GPU."""
        if rec.device.type != "cuda":
            return rec.flat.clone()
        if self.cuda_stream is None:
            self.cuda_stream = torch.cuda.Stream()
        self.cuda_stream.wait_stream(torch.cuda.current_stream())
        host = torch.empty(rec.numel, dtype=rec.dtype, pin_memory=True)
        with torch.cuda.stream(self.cuda_stream):
            host.copy_(rec.flat, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
        rec.flat.record_stream(self.cuda_stream)
        return host, event

    def _offload_host(self, rec):
        self.stats["d2h_bytes"] += rec.nbytes
        if rec.device.type == "cuda":
            rec.host, event = self._d2h(rec)
            rec.write = self.io.submit(event.synchronize)
        else:
            rec.write = self.io.submit(self._host_copy, rec)

    @staticmethod
    def _host_copy(rec):
        rec.host = rec.flat.clone()

    def _offload_nvme(self, rec):
        if self.store is None:
            self.store = Store(self.nvme_dir, self.slot_bytes, self.slots)
            self.workdir = self.store.workdir
            for note in self.store.notes:
                warnings.warn(f"rok_torch: {note}")
        self.stats["nvme_write_bytes"] += rec.nbytes
        if rec.device.type == "cuda":
            self.stats["d2h_bytes"] += rec.nbytes
            host, event = self._d2h(rec)
            rec.write = self.io.submit(self._write, rec, host, event)
        else:
            rec.write = self.io.submit(self._write, rec, rec.flat, None)

    def _write(self, rec, src, event):
        if event is not None:
            event.synchronize()
        rec.stored = self.store.put(src.data_ptr(), rec.nbytes)

    # -- unpack ----------------------------------------------------------
    def _unpack(self, h):
        if not isinstance(h, Handle):
            return h  # a parameter, a constant: autograd's own
        rec = h.record
        self._prefetch_before(rec.call)
        value = self._materialize(rec)
        rec.unpacked += 1
        out = value.as_strided(h.size, h.stride, h.offset)
        if rec.unpacked >= rec.saves and rec.decision != "keep":
            with self._lock:
                rec.value = None
                if rec.flat is None:
                    self._set_resident(rec, False)
        return out

    def _materialize(self, rec):
        if rec.value is not None:
            return rec.value
        flat = rec.flat  # an I/O thread may drop it meanwhile
        if flat is not None:
            if rec.decision != "keep":
                self.stats["forwarded"] += 1
            return flat
        if rec.decision == "recompute":
            self._replay(rec.call)
        elif rec.decision == "offload-host":
            if rec.staged is not None:
                value, event = rec.staged
                rec.staged = None
                stream = torch.cuda.current_stream()
                stream.wait_event(event)
                value.record_stream(stream)  # made on the side stream, freed after use on this one
                rec.value = value
            else:
                rec.write.result()
                rec.value = self._to_device(rec, rec.host)
        else:
            if rec.fetch is None:
                self._start_fetch(rec)
            if not rec.fetch.done():
                self.stats["fetch_waits"] += 1
            rec.value = self._to_device(rec, rec.fetch.result())
        with self._lock:
            self._set_resident(rec, True)
        return rec.value

    def _to_device(self, rec, host):
        if rec.device.type == "cpu":
            return host  # already a copy of its own
        self.stats["h2d_bytes"] += rec.nbytes
        return host.to(rec.device, non_blocking=True)

    def _stage_h2d(self, rec):
        """Copies a host-offloaded tensor back ahead of backward, on the side
        stream behind its own d2h (which ran there), as the plan's prefetch
        does; the compute stream waits for it only when it needs it."""
        with torch.cuda.stream(self.cuda_stream):
            value = rec.host.to(rec.device, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
        self.stats["h2d_bytes"] += rec.nbytes
        rec.staged = (value, event)
        with self._lock:
            self._set_resident(rec, True)

    def _start_fetch(self, rec):
        rec.fetch = self.io.submit(self._read, rec)

    def _read(self, rec):
        rec.write.result()
        host = torch.empty(rec.numel, dtype=rec.dtype, pin_memory=rec.device.type == "cuda")
        self.store.get(rec.stored, host.data_ptr(), rec.nbytes)
        with self._lock:
            self.stats["nvme_read_bytes"] += rec.nbytes
        return host

    def _prefetch_before(self, call):
        """Brings back ahead the offloaded tensors of the layers backward
        reaches next: NVMe reads on the I/O threads, host copies on the side
        stream."""
        start = call.index if call.index >= 0 else len(self.tracker.calls)
        if start in self.fetched_calls:
            return
        self.fetched_calls.add(start)
        held = False  # once one host copy is held back, those after it wait too (in order, as simulated)
        for i in range(start, max(start - 1 - self.plan.prefetch_layers, -1), -1):
            if i >= len(self.tracker.calls):
                continue
            for rec in reversed(self.tracker.calls[i].records):
                if rec.decision == "offload-nvme" and rec.fetch is None and rec.flat is None:
                    self._start_fetch(rec)  # into host memory: no device memory to hold back
                elif (rec.decision == "offload-host" and rec.device.type == "cuda" and rec.flat is None
                      and rec.value is None and rec.staged is None and rec.host is not None and not held):
                    # held back, as the simulator holds a read back: copied when needed
                    held = self.cap is not None and self.resident + rec.nbytes > self.cap
                    if not held:
                        self._stage_h2d(rec)

    def _replay(self, call):
        """Re-runs CALL's layer until every recomputed tensor is made again."""
        wanted = {r.pack_index: r for r in call.records if r.decision == "recompute" and r.value is None}
        last = max(wanted)
        count, done = [0], [False]

        def pack(t):
            i = count[0]
            count[0] += 1
            rec = wanted.get(i)
            if rec is not None:
                rec.value = t.detach().as_strided((rec.numel,), (1,), 0)
                self.stats["recomputed_bytes"] += rec.nbytes
                with self._lock:
                    self._set_resident(rec, True)
                if i == last:
                    done[0] = True
                    raise _ReplayDone()
            # Nothing runs backward through the replay: holding T would tie
            # an op's saved output to its own node, a cycle through C++
            # that Python's collector cannot see (a layer leaked per replay).
            return None

        args = [self._unpack(a).detach().requires_grad_(a.requires_grad) if isinstance(a, Handle) else a
                for a in call.args]
        self.stats["replays"] += 1
        active, self.tracker.active = self.tracker.active, False
        devices = list(range(len(call.rng[1])))
        try:
            with torch.random.fork_rng(devices=devices), torch.enable_grad(), \
                    torch.autograd.graph.saved_tensors_hooks(pack, lambda _: None):
                torch.set_rng_state(call.rng[0])
                for d, state in zip(devices, call.rng[1]):
                    torch.cuda.set_rng_state(state, d)
                call.module(*args)
        except Exception:
            # Autograd wraps what a pack hook raises in a RuntimeError: the
            # early stop is known by its flag, anything else goes on up.
            if not done[0]:
                raise
        finally:
            self.tracker.active = active
        missing = [r.name for r in wanted.values() if r.value is None]
        if missing:
            raise RuntimeError(f"rok_torch: replaying layer {call.layer} did not make {', '.join(missing)}")

    def _unref(self, rec):
        rec.refs -= 1
        if rec.refs > 0:
            return
        with self._lock:
            rec.value = rec.host = rec.fetch = rec.staged = None
            if rec.decision == "keep":
                rec.flat = None
            if rec.flat is None:
                self._set_resident(rec, False)
        if rec.stored is not None and self.store is not None:
            self.store.drop(rec.stored)
            rec.stored = None

    def remove(self):
        """Removes the module hooks: the model runs as if never applied."""
        self.tracker.remove()


def apply(model, plan, nvme_dir=None, profile=None, **kwargs):
    """A Runner that runs PLAN (a rok-plan/1 path or dict) on MODEL."""
    return Runner(model, plan, nvme_dir=nvme_dir, profile=profile, **kwargs)
