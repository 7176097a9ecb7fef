"""rok's tensor names for what PyTorch saves, by module path.

A saved tensor is named where it is saved: the innermost module running
when autograd saves it (its path relative to the transformer layer, e.g.
`attn.c_proj`), and, where one module saves several, by a matcher:

  input        the storage is the module's first tensor argument
  out:PATH     the storage is the output of module PATH of the same layer
  fn:PREFIX    the tensor was made by an op whose autograd node starts so
               (SoftmaxBackward0 -> fn:Softmax)
  before:NAME  no storage of the layer has been named NAME yet
  *            anything else

A storage keeps the name it got when first saved (SSDTrain's rule: one
storage, one decision). Rules are tried for the innermost module, then for
its parents; a tensor no rule names is `unmapped` and kept.
"""
import re

import torch

# HF GPT-2 (transformer.h.N) and the reference GPT block.
GPT2 = {
    "name": "gpt2",
    "layers": "transformer.h",
    "layer_rules": {
        "ln_1": [("input", "input"), ("*", "attn.norm_stats")],
        "attn.c_attn": [("*", "attn.norm_out")],
        "attn": [("fn:Softmax", "attn.softmax_out"), ("out:attn.attn_dropout", "attn.dropout_out"),
                 ("*", "attn.qkv_out")],
        "attn.attn_dropout": [("*", "attn.dropout_mask")],
        "attn.c_proj": [("*", "attn.context_out")],
        "attn.resid_dropout": [("*", "attn.out_dropout_mask")],
        "ln_2": [("input", "attn.residual_out"), ("*", "mlp.norm_stats")],
        "mlp.c_fc": [("*", "mlp.norm_out")],
        "mlp.act": [("*", "mlp.fc1_out")],
        "mlp.c_proj": [("*", "mlp.gelu_out")],
        "mlp.dropout": [("*", "mlp.out_dropout_mask")],
    },
    "outer_rules": {
        "transformer.wte": [("*", "input.tokens")],
        "transformer.wpe": [("*", "input.positions")],
        "transformer.drop": [("*", "embed.dropout_mask")],
        "transformer.ln_f": [("input", "head.input"), ("*", "head.norm_stats")],
        "lm_head": [("*", "head.norm_out")],
        "": [("fn:LogSoftmax", "head.loss_probs"), ("*", "input.labels")],
    },
    "constants": [],
}

# HF LLaMA-family (model.layers.N): Llama, Mistral, Qwen2 share these paths.
LLAMA = {
    "name": "llama",
    "layers": "model.layers",
    "layer_rules": {
        "input_layernorm": [("input", "input"), ("*", "attn.norm_stats")],
        "self_attn.q_proj": [("*", "attn.norm_out")],
        "self_attn.k_proj": [("*", "attn.norm_out")],
        "self_attn.v_proj": [("*", "attn.norm_out")],
        # q and k (rotated; matmul copies them when not contiguous) are saved
        # by the scores matmul, before the softmax; v after it.
        "self_attn": [("fn:Softmax", "attn.softmax_out"), ("before:attn.softmax_out", "attn.rotary_out"),
                      ("*", "attn.v_out")],
        "self_attn.o_proj": [("*", "attn.context_out")],
        "post_attention_layernorm": [("input", "attn.residual_out"), ("*", "mlp.norm_stats")],
        "mlp.gate_proj": [("*", "mlp.norm_out")],
        "mlp.up_proj": [("*", "mlp.norm_out")],
        "mlp.act_fn": [("*", "mlp.gate_up_out")],
        "mlp.down_proj": [("*", "mlp.swiglu_out")],
    },
    "outer_rules": {
        "model.embed_tokens": [("*", "input.tokens")],
        "model.norm": [("input", "head.input"), ("*", "head.norm_stats")],
        "lm_head": [("*", "head.norm_out")],
        "": [("fn:LogSoftmax", "head.loss_probs"), ("*", "input.labels")],
    },
    # Outputs of these modules are constants every layer reads (rotary
    # cos/sin): not activations of a layer, never moved.
    "constants": ["model.rotary_emb"],
}

PROFILES = [GPT2, LLAMA]


def profile_for(model):
    """The profile whose layer list the model has, or None."""
    paths = {name for name, _ in model.named_modules()}
    for p in PROFILES:
        if p["layers"] + ".0" in paths and all(
                p["layers"] + ".0." + r in paths for r in p["layer_rules"] if r):
            return p
    return None


def storage_key(t):
    """(address, bytes) of the storage under T: equal for views of one storage."""
    if hasattr(t, "untyped_storage"):
        s = t.untyped_storage()
        return (s.data_ptr(), s.nbytes())
    s = t.storage()
    return (s.data_ptr(), s.nbytes())


def is_scalar(t):
    """A 0-dim tensor of at most 8 bytes: a Python number autograd wrapped
    (x * 0.125 saves 0.125 as a float64 tensor), not an activation."""
    return t.dim() == 0 and t.element_size() <= 8


def first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for v in value:
            t = first_tensor(v)
            if t is not None:
                return t
    return None


def all_tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from all_tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from all_tensors(v)


class LayerCall:
    """One call of a transformer layer (or the outside, layer -1)."""

    def __init__(self, index, layer, module, args, kwargs):
        self.index = index  # calls in forward order
        self.layer = layer
        self.module = module
        self.args, self.kwargs = args, kwargs
        self.outputs = {}   # relative module path -> storage keys of its output
        self.rng = None     # RNG states at entry, for a replay
        self.saves = 0      # pack calls made in it so far
        self.records = []   # what apply saved in it, in order
        self.name_counts = {}
        self.input_keys = set()


class Frame:
    __slots__ = ("path", "rel", "call", "input_key")

    def __init__(self, path, rel, call, input_key):
        self.path, self.rel, self.call, self.input_key = path, rel, call, input_key


class Tracker:
    """Module hooks that keep the stack of running modules and name saves.

    `on_layer_enter(call)` / `on_layer_exit(call)` let the user (apply,
    capture) act at layer boundaries; `on_frame` is told every push and pop.
    """

    def __init__(self, model, profile=None):
        self.model = model
        self.profile = profile if profile is not None else profile_for(model)
        self.stack = []
        self.calls = []
        self.outer = LayerCall(-1, -1, None, (), {})
        self.constants = set()
        self.active = False
        self.on_layer_enter = self.on_layer_exit = self.on_frame = None
        self._handles = []
        layers = self.profile["layers"] if self.profile else None
        pattern = re.compile(re.escape(layers) + r"\.(\d+)$") if layers else None
        self.layer_paths = {}
        for path, m in model.named_modules():
            match = pattern.match(path) if pattern else None
            if match:
                self.layer_paths[path] = int(match.group(1))
            self._handles.append(m.register_forward_pre_hook(self._pre(path)))
            self._handles.append(m.register_forward_hook(self._post(path)))
        self.n_layers = len(self.layer_paths)

    def remove(self):
        for h in self._handles:
            h.remove()

    def reset(self):
        self.stack, self.calls, self.constants = [], [], set()
        self.outer = LayerCall(-1, -1, None, (), {})

    def current_call(self):
        return self.stack[-1].call if self.stack else self.outer

    def _pre(self, path):
        def hook(module, args):
            if not self.active:
                return
            call = self.current_call()
            rel = path
            if path in self.layer_paths:
                call = LayerCall(len(self.calls), self.layer_paths[path], module, args, {})
                self.calls.append(call)
                rel = ""
                if self.on_layer_enter:
                    self.on_layer_enter(call)
            elif call.layer >= 0:
                prefix = self.profile["layers"] + f".{call.layer}."
                rel = path[len(prefix):] if path.startswith(prefix) else path
            t = first_tensor(args)
            self.stack.append(Frame(path, rel, call, storage_key(t) if t is not None else None))
            if self.on_frame:
                self.on_frame("enter", self.stack[-1])
        return hook

    def _post(self, path):
        def hook(module, args, output):
            if not self.active or not self.stack or self.stack[-1].path != path:
                return
            frame = self.stack.pop()
            keys = {storage_key(t) for t in all_tensors(output)}
            if self.profile and path in self.profile["constants"]:
                self.constants |= keys
            frame.call.outputs[frame.rel] = keys
            if self.on_frame:
                self.on_frame("exit", frame)
            if path in self.layer_paths and self.on_layer_exit:
                self.on_layer_exit(frame.call)
        return hook

    def context(self):
        """(layer call, relative path of the innermost module, its frame)."""
        if not self.stack:
            return self.outer, "", None
        f = self.stack[-1]
        return f.call, f.rel, f

    def name(self, t, key):
        """rok's local name for a saved tensor T with storage KEY, without
        the `layerN.` prefix; None for a constant."""
        if key in self.constants:
            return None
        call, rel, _ = self.context()
        if self.profile is None:
            return "unmapped." + (rel or "root")
        rules = self.profile["layer_rules"] if call.layer >= 0 else self.profile["outer_rules"]
        frames = [f for f in self.stack if f.call is call] if call.layer >= 0 else list(self.stack)
        candidates = [(f.rel, f) for f in reversed(frames)] + ([("", None)] if call.layer < 0 else [])
        for rel_path, frame in candidates:
            for matcher, local in rules.get(rel_path, []):
                if self._matches(matcher, t, key, call, frame):
                    return local
        return "unmapped." + (rel or "root")

    @staticmethod
    def _matches(matcher, t, key, call, frame):
        if matcher == "*":
            return True
        if matcher == "input":
            return frame is not None and frame.input_key == key
        if matcher.startswith("out:"):
            return key in call.outputs.get(matcher[4:], ())
        if matcher.startswith("before:"):
            return matcher[7:] not in call.name_counts
        if matcher.startswith("fn:"):
            fn = t.grad_fn
            return fn is not None and type(fn).__name__.startswith(matcher[3:])
        raise ValueError(f"bad matcher {matcher}")


def numbered(call, local):
    """LOCAL, or LOCAL#k for the k-th storage of that name in CALL (GPT-2's
    attention saves q, k and v as three copies, all attn.qkv_out)."""
    k = call.name_counts.get(local, 0) + 1
    call.name_counts[local] = k
    return local if k == 1 else f"{local}#{k}"


def base_name(name):
    return name.split("#", 1)[0]


def full_name(layer, local):
    return f"layer{layer}.{local}" if layer >= 0 else local
