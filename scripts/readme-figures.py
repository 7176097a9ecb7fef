#!/usr/bin/env python3
"""The figures README.md quotes, computed from the built rok.

Every deterministic figure README.md gives (command output shown in a
block, a number in a sentence) is listed here with the command that
produces it. `--check` (what tests/cli/readme-figures.sh runs) fails naming
each figure whose README text differs from what the binary prints today;
`--update` rewrites README.md with today's figures. Figures measured on a
machine (benchmarks, calibration, validation errors) are not deterministic
and are not listed: their README text names the script that measured them.

Usage: scripts/readme-figures.py --check|--update [--rok BUILD/rok] [--readme README.md]
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HW40 = "a100-40g-pcie4-4xp5800x"
HW80 = "a100-80g-sxm-4x980pro"


class Rok:
    def __init__(self, path):
        self.path = path
        self.cache = {}

    def run(self, *args, code=0):
        """stdout and stderr of `rok ARGS`, which must exit with `code`."""
        if args not in self.cache:
            p = subprocess.run([self.path, *args], capture_output=True, text=True,
                               env={**os.environ, "LC_ALL": "C.UTF-8"})
            if p.returncode != code:
                sys.exit(f"readme-figures: rok {' '.join(args)} exited {p.returncode}, "
                         f"expected {code}:\n{p.stderr}")
            self.cache[args] = (p.stdout, p.stderr)
        return self.cache[args]

    def json(self, *args):
        return json.loads(self.run(*args, "--json")[0])


# ---- blocks: a command and the lines of its output README shows ----

def block(command, lines):
    return "```\n$ build/rok " + " ".join(command) + "\n" + "\n".join(lines) + "\n```"


def head_block(rok, command, n):
    out = rok.run(*command)[0].splitlines()
    return block(command, out[:n] + ["..."])


def trace_block(rok, command):
    out = rok.run(*command)[0].splitlines()
    start = next(i for i, l in enumerate(out) if l.startswith("Layers "))
    return block(command, out[:1] + ["..."] + out[start:start + 3] + ["  ..."])


BLOCKS = [
    ("plan quick start", lambda rok: head_block(rok, ["plan", "gpt3-13b", "--hw", HW40, "--budget", "39GiB"], 4)),
    ("simulate offload", lambda rok: head_block(rok, ["simulate", "ssdtrain-bert", "--hw", HW40, "--strategy",
                                                      "offload"], 5)),
    ("trace gpt3-13b", lambda rok: trace_block(rok, ["trace", "gpt3-13b"])),
]

# ---- numbers in sentences: a phrase with {} where the figure goes ----


def ratio(a, b):
    return f"{a / b:.2f}"


def sweep_bert(rok):
    return rok.json("sweep", "ssdtrain-bert", "--hw", HW40, "--micro-batch", "2:64:2")["rows"]


def fits_up_to(rows, strategy):
    return max(r["micro_batch"] for r in rows if r["strategy"] == strategy and r["fits"])


def best(rows, strategy):
    return max(r["tokens_per_s"] for r in rows if r["strategy"] == strategy and r["fits"])


def kilo(x):
    return f"{x / 1e3:.2f} k"


def simulate(rok, model, hw, strategy, *extra):
    return rok.json("simulate", model, "--hw", hw, "--strategy", strategy, *extra)


def no_fit(rok):
    err = rok.run("plan", "gpt3-13b", "--hw", HW40, "--budget", "20GiB", code=3)[1]
    return re.search(r"the smallest that fits is ([0-9.]+ \w+)", err).group(1)


STARVED = ["--hw-set", "nvme.devices=1", "--hw-set", "nvme.read_bandwidth=0.5GB/s",
           "--hw-set", "nvme.write_bandwidth=0.5GB/s"]

PHRASES = [
    ("no plan fits", "`no plan fits in 20.0 GiB: the smallest that fits is {} (...)`", no_fit),
    ("keep fits up to", "Keeping everything fits micro-batches up to {};",
     lambda rok: str(fits_up_to(sweep_bert(rok), "keep"))),
    ("offload/keep batch", "fits up to {}×) at the same throughput",
     lambda rok: "%s (%.1f" % (fits_up_to(sweep_bert(rok), "offload"),
                               fits_up_to(sweep_bert(rok), "offload") / fits_up_to(sweep_bert(rok), "keep"))),
    ("recompute fits up to", "full recompute fits up to {} of the",
     lambda rok: "%d at %.0f%%" % (fits_up_to(sweep_bert(rok), "recompute"),
                                   100 * best(sweep_bert(rok), "recompute") / best(sweep_bert(rok), "keep"))),
    ("rok fits up to", "the planner (`rok`) fits every size up to {}, and",
     lambda rok: str(fits_up_to(sweep_bert(rok), "rok"))),
    ("rok best", "its\nbest throughput, {} tokens/s,", lambda rok: kilo(best(sweep_bert(rok), "rok"))),
    ("keep best", "is above keep's best ({};", lambda rok: kilo(best(sweep_bert(rok), "keep"))),
    ("recompute cost", "full recompute costs {}× keep on GPT-3 175B",
     lambda rok: ratio(simulate(rok, "gpt3-175b", HW80, "recompute")["step_time_s"],
                       simulate(rok, "gpt3-175b", HW80, "keep")["step_time_s"])),
    ("offload cut", "offloading cuts the activation peak by {}% at",
     lambda rok: "%.1f" % (100 * (1 - simulate(rok, "ssdtrain-bert", HW40, "offload")["activation_peak_bytes"]
                                  / simulate(rok, "ssdtrain-bert", HW40, "keep")["activation_peak_bytes"]))),
    ("offload step", "the same step time ({}×)",
     lambda rok: ratio(simulate(rok, "ssdtrain-bert", HW40, "offload")["step_time_s"],
                       simulate(rok, "ssdtrain-bert", HW40, "keep")["step_time_s"])),
    ("starved", "makes offload {}×",
     lambda rok: ratio(simulate(rok, "ssdtrain-bert", HW40, "offload", *STARVED)["step_time_s"],
                       simulate(rok, "ssdtrain-bert", HW40, "keep", *STARVED)["step_time_s"])),
]


# ---- the bundled models' table: every column but "published" from the config ----

MODELS = ["gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "gpt3-175b", "llama2-7b", "llama2-13b",
          "llama2-70b", "bert-large", "t5-3b", "ssdtrain-bert"]


def count(x):
    """rok_units_format_count: three significant digits and k, M, B, T."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if x >= scale * 0.9995:
            v = x / scale
            return ("%.0f" if v >= 99.95 else "%.1f" if v >= 9.995 else "%.2f") % v + " " + unit
    return "%d" % x


def model_row(rok, name):
    """The table's cells up to the parameters, from `rok trace NAME --json`."""
    t = rok.json("trace", name)
    m = t["model"]
    layers = str(m["layers"]) + ("+%d" % m["decoder_layers"] if m.get("decoder_layers") else "")
    heads = str(m["heads"]) + (" (%d)" % m["kv_heads"] if m["kv_heads"] != m["heads"] else "")
    par = []
    if m["tensor_parallel"] > 1:
        par.append("TP %d" % m["tensor_parallel"] + (" + SP" if m["sequence_parallel"] else ""))
    if m["pipeline_parallel"] > 1:
        par.append("PP %d" % m["pipeline_parallel"])
    par.append("DP %d" % m["data_parallel"])
    if m["zero_stage"] > 0:
        par.append("ZeRO-%d" % m["zero_stage"])
    cells = [f"`{name}`", m["arch"], layers, str(m["hidden"]), heads, str(m["ffn_hidden"]), str(m["vocab"]),
             str(m["seq_len"]), ", ".join(par), count(t["fixed"]["params_total"])]
    return "| " + " | ".join(cells) + " |"


def params_cell(rok, name, written):
    """The parameter count of a row the table gives in its own style: exact
    with thousands separators ("8,030,261,248") or as rok prints counts."""
    total = rok.json("trace", name)["fixed"]["params_total"]
    return f"{total:,}" if "," in written else count(total)


def phrase_regex(template):
    """The template with {} as a figure: a run of anything but a newline,
    lazily, as short as makes the rest match."""
    before, after = template.split("{}")

    def words(t):  # a space in the template stands for any line break too
        return r"\s+".join(re.escape(w) for w in t.split(" "))
    return re.compile(words(before) + r"(.+?)" + words(after))


def main():
    ap = argparse.ArgumentParser()
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--update", action="store_true")
    ap.add_argument("--rok", default=os.path.join(ROOT, "build", "rok"))
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    args = ap.parse_args()
    rok = Rok(args.rok)
    text = open(args.readme, encoding="utf-8").read()
    wrong, missing = [], []
    for name, make in BLOCKS:
        want = make(rok)
        first = want.split("\n")[1]  # "$ build/rok ..."
        m = re.search(r"```\n" + re.escape(first) + r"\n.*?\n```", text, re.S)
        if m is None:
            missing.append(f"{name}: no block starting with \"{first}\" in README")
        elif m.group(0) != want:
            wrong.append(f"{name}: README shows\n{m.group(0)}\nrok prints\n{want}")
            text = text[:m.start()] + want + text[m.end():]
    for name in MODELS:
        want = model_row(rok, name)
        m = re.search(r"^\| `" + re.escape(name) + r"` \|.*?\|(?= [^|]* \|$)", text, re.M)
        if m is None:
            missing.append(f"model table: no row for `{name}` in README")
        elif m.group(0) != want:
            wrong.append(f"model table: README has\n{m.group(0)}\nrok gives\n{want}")
            text = text[:m.start()] + want + text[m.end():]
    # The other rows of the table (models with annotations of their own):
    # their parameter count, the column rok computes.
    row = re.compile(r"^\| `([a-z0-9.-]+)` \|(?:[^|]*\|){8} ([^|]*) \| [^|]* \|$", re.M)
    for m in list(row.finditer(text)):
        name = m.group(1)
        if name in MODELS or not os.path.exists(os.path.join(ROOT, "configs", "models", name + ".json")):
            continue
        want = params_cell(rok, name, m.group(2))
        if m.group(2) != want:
            wrong.append(f"model table: `{name}` has {m.group(2)} parameters in README, rok counts {want}")
            text = text[:m.start(2)] + want + text[m.end(2):]
    for name, template, compute in PHRASES:
        value = compute(rok)
        regex = phrase_regex(template)
        m = regex.search(text)
        if m is None:
            missing.append(f"{name}: no \"{template}\" in README")
        elif m.group(1) != value:
            wrong.append(f"{name}: README says \"{m.group(1)}\", rok gives \"{value}\" ({template})")
            text = text[:m.start(1)] + value + text[m.end(1):]
    if args.update:
        with open(args.readme, "w", encoding="utf-8") as f:
            f.write(text)
        for w in wrong:
            print("updated " + w.split(":")[0])
        for w in missing:
            print("README.md: " + w, file=sys.stderr)
        return 1 if missing else 0
    wrong += missing
    for w in wrong:
        print("README.md: " + w, file=sys.stderr)
    if not wrong:
        print(f"README.md: {len(BLOCKS)} output blocks, the bundled models' table and {len(PHRASES)} figures "
              "match rok")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
