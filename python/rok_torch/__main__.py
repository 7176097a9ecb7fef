"""python3 -m rok_torch capture: a rok-trace/1 of a reference model, measured.

    PYTHONPATH=python python3 -m rok_torch capture --arch gpt2 --layers 12 \\
        --hidden 768 --heads 12 --vocab 50257 --seq 128 -o traces/gpt2-small.json

Builds rok_torch.reference's GPT-2 or LLaMA-style model (HF module paths)
with random weights, runs `--warmup` untimed steps and one captured step
on the CPU (or the GPU with --device cuda) and writes the trace, with the
model's config (its "source" says how the trace was made) so that `rok`
knows its architecture.
"""
import argparse
import json
import platform
import sys

import torch

from .capture import capture, dropout_mask_bytes
from .reference import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM


def build(a):
    if a.arch == "gpt2":
        c = GPT2Config(vocab_size=a.vocab, n_positions=a.seq, n_embd=a.hidden, n_layer=a.layers, n_head=a.heads,
                       dropout=a.dropout)
        return GPT2LMHeadModel(c), 4 * a.hidden, a.heads
    kv = a.kv_heads or a.heads
    c = LlamaConfig(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=a.ffn, num_hidden_layers=a.layers,
                    num_attention_heads=a.heads, num_key_value_heads=kv, max_position_embeddings=a.seq)
    return LlamaForCausalLM(c), a.ffn, kv


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m rok_torch")
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("capture", help="capture a reference model's training step as rok-trace/1")
    c.add_argument("--arch", choices=["gpt2", "llama"], required=True)
    c.add_argument("--layers", type=int, required=True)
    c.add_argument("--hidden", type=int, required=True)
    c.add_argument("--heads", type=int, required=True)
    c.add_argument("--kv-heads", type=int, default=0)
    c.add_argument("--ffn", type=int, default=0, help="LLaMA's intermediate size")
    c.add_argument("--vocab", type=int, required=True)
    c.add_argument("--seq", type=int, required=True)
    c.add_argument("--batch", type=int, default=1)
    c.add_argument("--dropout", type=float, default=0.1, help="GPT-2's dropout")
    c.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    c.add_argument("--precision", choices=["mixed", "pure"], default=None,
                   help="how the optimizer keeps its states: mixed (fp32 master weights and states; the default "
                        "for bf16) or pure (in the weights' dtype, as torch.optim.Adam on a bf16 model)")
    c.add_argument("--device", default="cpu")
    c.add_argument("--warmup", type=int, default=None,
                   help="untimed steps first (default 2 on the CPU, 5 on a GPU, whose clocks ramp up)")
    c.add_argument("--name", default=None)
    c.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    if a.arch == "llama" and a.ffn <= 0:
        ap.error("--ffn is required for --arch llama")
    torch.manual_seed(0)
    model, ffn, kv = build(a)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    model = model.to(device=a.device, dtype=dtype)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).to(a.device)
    labels = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g).to(a.device)
    name = a.name or f"{a.arch}-l{a.layers}-h{a.hidden}-s{a.seq}-{a.device}"
    precision = a.precision or ("mixed" if a.dtype != "fp32" else "pure")
    warmup = a.warmup if a.warmup is not None else (5 if a.device.startswith("cuda") else 2)
    trace = capture(model, (ids, labels), name=name, warmup=warmup, precision=precision)
    where = torch.cuda.get_device_name() if a.device.startswith("cuda") else f"{platform.processor() or 'CPU'}, " \
        f"{torch.get_num_threads()} threads"
    trace["model"] = {
        "name": name,
        "source": f"Captured by `python3 -m rok_torch {' '.join(argv or sys.argv[1:])}` (rok_torch.capture, "
                  f"PyTorch {torch.__version__}, {where}): rok_torch.reference's {a.arch} with random weights; "
                  "tensors are what autograd saved, op times measured.",
        "arch": "gpt" if a.arch == "gpt2" else "llama",
        "layers": a.layers, "hidden": a.hidden, "heads": a.heads, "kv_heads": kv, "ffn_hidden": ffn,
        "vocab": a.vocab, "seq_len": a.seq, "micro_batch": a.batch, "global_batch": a.batch, "data_parallel": 1,
        "dtype": a.dtype, "dropout": a.dropout if a.arch == "gpt2" else 0.0,
        "mask_bytes": dropout_mask_bytes(dtype, a.device),
        "attention": "standard", "optimizer": "adam", "precision": precision,
    }
    with open(a.output, "w") as f:
        json.dump(trace, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
