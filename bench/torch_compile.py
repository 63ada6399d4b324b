"""A training step under torch.compile: egraph_lower's backend against `aot_eager`, whole process each.

    python bench/torch_compile.py [--models mlp,cnn,gpt2,bert] [--backends aot_eager,cpu,metal,wgpu]
                                  [--repeats 3] [--steps 30]

Each (model, backend) runs in a fresh Python process, `repeats` times, alternating
backends. Times are the process's CPU time (`time.process_time`) with one torch
thread: on a machine shared with other work, wall-clock times swing by 2x and more. In the process: torch and egraph_lower.torch are imported and dynamo is
warmed up on an unrelated one-op function with `aot_eager` (imports and dynamo's own
first-use cost are no part of either backend); then the model is built, and

- first call: one training step (forward, backward) compiled with the backend, from
  the call until the gradients are there; the median over the processes;
- steady state: `steps` more steps after three warm-up steps, the median step time;
  the median of the processes' medians.

The models (small, random weights, nothing downloaded): an MLP with LayerNorm and
dropout, a CNN with Conv2d + BatchNorm2d + max pooling, and `transformers`' GPT-2
and BERT from small configs (skipped when transformers is not installed). Each
process prints one JSON line; the table is markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("mlp", "cnn", "gpt2", "bert")
BACKENDS = ("aot_eager", "cpu", "metal", "wgpu")


def build(name: str) -> tuple[Any, Any]:
    """(model, step) where step() runs one forward and backward."""
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(64, 256), nn.LayerNorm(256), nn.GELU(), nn.Dropout(0.1),
                              nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 10))
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        return model, lambda: nn.functional.cross_entropy(model(x), y)
    if name == "cnn":
        model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.SiLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
        x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
        return model, lambda: nn.functional.cross_entropy(model(x), y)
    import transformers

    transformers.logging.set_verbosity_error()
    ids = torch.randint(0, 128, (4, 32))
    if name == "gpt2":
        cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=128, n_positions=64)
        gpt = transformers.GPT2LMHeadModel(cfg)
        gpt.loss_type = "ForCausalLM"
        return gpt, lambda: gpt(input_ids=ids, labels=ids).loss
    bcfg = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=64, intermediate_size=128,
                                   vocab_size=128, max_position_embeddings=64, num_labels=3)
    bcfg.problem_type = "single_label_classification"
    bert = transformers.BertForSequenceClassification(bcfg)
    labels = torch.randint(0, 3, (4,))
    return bert, lambda: bert(input_ids=ids, labels=labels).loss


def run_one(model_name: str, backend_name: str, steps: int) -> dict[str, Any]:
    """One process's measurement (see the module docstring)."""
    import warnings

    import torch

    import egraph_lower.torch as elt

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)  # with process CPU time, other processes on the machine barely move the numbers
    torch.compile(lambda t: t.sin(), backend="aot_eager")(torch.randn(2, requires_grad=True)).sum().backward()
    torch._dynamo.reset()
    model, loss_fn = build(model_name)
    model.train()
    be: Any = backend_name if backend_name == "aot_eager" else elt.backend(backend_name)
    step = torch.compile(loss_fn, backend=be, dynamic=False)

    def train_step() -> None:
        model.zero_grad(set_to_none=True)
        step().backward()

    t0 = time.process_time()
    train_step()
    first = time.process_time() - t0
    for _ in range(3):
        train_step()
    times = []
    for _ in range(steps):
        t0 = time.process_time()
        train_step()
        times.append(time.process_time() - t0)
    out: dict[str, Any] = {"model": model_name, "backend": backend_name, "first": first,
                           "step": statistics.median(times)}
    if backend_name != "aot_eager":
        out["lowered"] = sum(g.lowered for g in be.graphs)
        out["fallbacks"] = sum(len(g.errors) for g in be.graphs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--one", nargs=2, metavar=("MODEL", "BACKEND"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], args.one[1], args.steps)))
        return
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for model in args.models.split(","):
        for _ in range(args.repeats):
            for backend in args.backends.split(","):
                proc = subprocess.run([sys.executable, __file__, "--one", model, backend, "--steps", str(args.steps)],
                                      capture_output=True, text=True, env=env)
                if proc.returncode != 0:
                    print(f"{model} {backend}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
                    continue
                results.setdefault((model, backend), []).append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print("| model | backend | first call (s) | vs aot_eager | step (ms) | vs aot_eager | lowered graphs |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for (model, backend), runs in results.items():
        first = statistics.median(r["first"] for r in runs)
        step = statistics.median(r["step"] for r in runs)
        base = results.get((model, "aot_eager"))
        ratio_f = ratio_s = "–"
        if base and backend != "aot_eager":
            ratio_f = f"{first / statistics.median(r['first'] for r in base):.2f}x"
            ratio_s = f"{step / statistics.median(r['step'] for r in base):.2f}x"
        lowered = str(runs[0].get("lowered", "–"))
        print(f"| {model} | {backend} | {first:.2f} | {ratio_f} | {step * 1e3:.2f} | {ratio_s} | {lowered} |")


if __name__ == "__main__":
    main()
