"""A training step under torch.compile: egraph_lower's backend against `aot_eager`, whole process each.

    python bench/torch_compile.py [--models mlp,cnn,gpt2,bert] [--backends aot_eager,cpu,metal,wgpu]
                                  [--repeats 3] [--steps 30]
    python bench/torch_compile.py --dynamic [--models gpt2,bert] [--backends aot_eager,metal,wgpu]

Each (model, backend) runs in a fresh Python process, `repeats` times, alternating
backends. Times are the process's CPU time (`time.process_time`) with one torch
thread: on a machine shared with other work, wall-clock times swing by 2x and more. In the process: torch and egraph_lower.torch are imported and dynamo is
warmed up on an unrelated one-op function with `aot_eager` (imports and dynamo's own
first-use cost are no part of either backend); then the model is built, and

- first call: one training step (forward, backward) compiled with the backend, from
  the call until the gradients are there, in a fresh process each time; the median
  over `repeats` processes, aot_eager's likewise. One full garbage collection runs
  just before the call, for either backend: a full collection scans torch's 400k
  objects (0.2 s), and whether one falls inside the call otherwise depends on all the
  process allocated since the last one, not only on the call (CPython runs one once the
  objects promoted since the last reach a quarter of those that survived it); one the
  call itself sets off is still counted;
- steady state: the model compiled twice in one process, with the backend and with
  `aot_eager`, their steps interleaved (`steps` each, after three warm-up steps), so
  both see the same machine; the median step time of each, and the median over
  `repeats` processes of the per-process ratio;
- "less a step": the first call less one steady step, over aot_eager's likewise: what
  compiling costs, apart from the step that the first call also runs (for wgpu's CNN,
  whose convolutions run as Im2Col and MatMul, that step alone is 50 ms dearer).

`--dynamic`: a training loop over varied sequence lengths, compiled as users compile it
(dynamo's default, `dynamic=None`: static at the first shape, symbolic from the first change on), over
SHAPES (six lengths, two batch sizes), in a fresh process per (model, backend) and repeat:

- new shapes: the total CPU time of the first call at each new shape (compiling, and for the
  backend the per-shape lowering, included), against `aot_eager` over the same loop;
- a met shape: once the loop has run, the step at a shape it met (the graph with symbolic sizes,
  its specialisation kept) against the step of the same model compiled with `dynamic=False` at that
  shape (a static graph), both with the backend, interleaved in one process.

The models (small, random weights, nothing downloaded): an MLP with LayerNorm and
dropout, a CNN with Conv2d + BatchNorm2d + max pooling, and `transformers`' GPT-2
and BERT from small configs (skipped when transformers is not installed). Each
process prints one JSON line; the table is markdown. "pieces run lowered": graphs or
pieces the lowering changed (the others run as PyTorch gave them).
"""

from __future__ import annotations

import argparse
import gc
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
                                   vocab_size=128, max_position_embeddings=64)
    bcfg.num_labels = 3
    bcfg.problem_type = "single_label_classification"
    bert = transformers.BertForSequenceClassification(bcfg)
    labels = torch.randint(0, 3, (4,))
    return bert, lambda: bert(input_ids=ids, labels=labels).loss


def _warm() -> None:
    import warnings

    import torch

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)  # with process CPU time, other processes on the machine barely move the numbers
    torch.compile(lambda t: t.sin(), backend="aot_eager")(torch.randn(2, requires_grad=True)).sum().backward()
    torch._dynamo.reset()


def _compiled(model_name: str, backend_name: str) -> tuple[Any, Any]:
    """(a training step compiled with the backend, the backend object)."""
    import torch

    import egraph_lower.torch as elt

    model, loss_fn = build(model_name)
    model.train()
    be: Any = backend_name if backend_name == "aot_eager" else elt.backend(backend_name)
    step = torch.compile(loss_fn, backend=be, dynamic=False)

    def train_step() -> None:
        model.zero_grad(set_to_none=True)
        step().backward()

    return train_step, be


def first_call(model_name: str, backend_name: str) -> dict[str, Any]:
    """The first training step's CPU time in this (fresh) process."""
    _warm()
    train_step, be = _compiled(model_name, backend_name)
    gc.collect()  # the collector's history evened out: see the module's docstring
    t0 = time.process_time()
    train_step()
    out: dict[str, Any] = {"model": model_name, "backend": backend_name, "first": time.process_time() - t0}
    if backend_name != "aot_eager":
        out["lowered"] = sum(g.lowered for g in be.graphs)
        out["replaced"] = sum(getattr(g, "replaced", 0) for g in be.graphs)
        out["fallbacks"] = sum(len(g.errors) for g in be.graphs)
    return out


def steady(model_name: str, backend_name: str, steps: int) -> dict[str, Any]:
    """Median step CPU times of the backend and of aot_eager, their steps interleaved in this process
    (so both see the same machine)."""
    _warm()
    runs = {b: _compiled(model_name, b)[0] for b in ("aot_eager", backend_name)}
    for run in runs.values():
        for _ in range(3):
            run()
    times: dict[str, list[float]] = {b: [] for b in runs}
    for _ in range(steps):
        for b, run in runs.items():
            t0 = time.process_time()
            run()
            times[b].append(time.process_time() - t0)
    return {"model": model_name, "backend": backend_name, "step": statistics.median(times[backend_name]),
            "aot_eager_step": statistics.median(times["aot_eager"])}


SHAPES = ((4, 16), (4, 24), (2, 32), (4, 40), (2, 48), (4, 56))  # (batch, length)
MET = (2, 32)


def build_dynamic(name: str) -> tuple[Any, Any]:
    """(model, loss(ids, labels)) of transformers' GPT-2 or BERT, any batch and length."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    if name == "gpt2":
        gpt = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=128,
                                                                   n_positions=64))
        gpt.loss_type = "ForCausalLM"
        return gpt, lambda ids, labels: gpt(input_ids=ids, labels=ids).loss
    cfg = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=64, intermediate_size=128,
                                  vocab_size=128, max_position_embeddings=64, num_labels=3)
    cfg.problem_type = "single_label_classification"
    bert = transformers.BertForSequenceClassification(cfg)
    return bert, lambda ids, labels: bert(input_ids=ids, labels=labels).loss


def _dynamic_step(model_name: str, backend_name: str, dynamic: bool | None) -> tuple[Any, Any]:
    import torch

    import egraph_lower.torch as elt

    model, loss_fn = build_dynamic(model_name)
    model.train()
    be: Any = backend_name if backend_name == "aot_eager" else elt.backend(backend_name)
    step = torch.compile(loss_fn, backend=be, dynamic=dynamic)

    def train_step(ids: Any) -> None:
        model.zero_grad(set_to_none=True)
        step(ids, ids[:, 0] % 3).backward()  # the labels made outside the compiled step

    return train_step, be


def _ids(b: int, n: int) -> Any:
    import torch

    return torch.randint(0, 128, (b, n), generator=torch.Generator().manual_seed(b * 1000 + n))


def dynamic_loop(model_name: str, backend_name: str) -> dict[str, Any]:
    """The CPU time of the first call at each new shape of SHAPES, in this (fresh) process."""
    _warm()
    train_step, be = _dynamic_step(model_name, backend_name, None)
    times = []
    for b, n in SHAPES:
        ids = _ids(b, n)
        gc.collect()
        t0 = time.process_time()
        train_step(ids)
        times.append(time.process_time() - t0)
    out: dict[str, Any] = {"model": model_name, "backend": backend_name, "firsts": times, "total": sum(times)}
    if backend_name != "aot_eager":
        out["shapes lowered"] = sum(g.of is not None and g.status == "lowered" for g in be.graphs)
        out["fallbacks"] = sum(len(g.errors) for g in be.graphs) + len(be.unlowered_ops)
    return out


def dynamic_steady(model_name: str, backend_name: str, steps: int) -> dict[str, Any]:
    """Median step CPU times at MET: the loop's step (symbolic sizes, MET's specialisation) against a
    static graph's (`dynamic=False`), interleaved."""
    _warm()
    loop, _ = _dynamic_step(model_name, backend_name, None)
    for b, n in SHAPES:
        loop(_ids(b, n))
    static, _ = _dynamic_step(model_name, backend_name, False)
    ids = _ids(*MET)
    runs = {"met": loop, "static": static}
    for run in runs.values():
        for _ in range(3):
            run(ids)
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(steps):
        for k, run in runs.items():
            t0 = time.process_time()
            run(ids)
            times[k].append(time.process_time() - t0)
    return {"model": model_name, "backend": backend_name, "met": statistics.median(times["met"]),
            "static": statistics.median(times["static"])}


def main_dynamic(args: argparse.Namespace, env: dict[str, str]) -> None:
    models = [m for m in args.models.split(",") if m in ("gpt2", "bert")] or ["gpt2", "bert"]
    backends = [b for b in args.backends.split(",") if b not in ("aot_eager", "cpu")]
    print(f"shapes (batch, length): {', '.join(f'{b}x{n}' for b, n in SHAPES)}; met shape {MET[0]}x{MET[1]}")
    print("| model | backend | new shapes: total first calls (s) | aot_eager (s) | ratio | step at a met shape (ms) |"
          " static graph's step (ms) | ratio | shapes lowered | fallbacks |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model in models:
        loops = _alternated("--dynamic-loop", model, backends, args.repeats, env)
        base = statistics.median(r["total"] for r in loops.get("aot_eager", [{"total": float("nan")}]))
        for backend in backends:
            if backend not in loops:
                continue
            total = statistics.median(r["total"] for r in loops[backend])
            st = _repeated(["--dynamic-steady", model, backend, "--steps", str(args.steps)], args.repeats, env)
            met = statistics.median(r["met"] for r in st) if st else float("nan")
            static = statistics.median(r["static"] for r in st) if st else float("nan")
            ratio = statistics.median(r["met"] / r["static"] for r in st) if st else float("nan")
            r0 = loops[backend][0]
            print(f"| {model} | {backend} | {total:.2f} | {base:.2f} | {total / base:.2f}x | {met * 1e3:.2f} |"
                  f" {static * 1e3:.2f} | {ratio:.2f}x | {r0['shapes lowered']} | {r0['fallbacks']} |", flush=True)


def _alternated(flag: str, model: str, backends: list[str], repeats: int,
                env: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """`flag`'s measurement of `model` under aot_eager and each backend, alternated `repeats` times, each
    in a fresh process: the runs that succeeded, by backend."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(repeats):
        for backend in ["aot_eager", *backends]:
            r = _run([flag, model, backend], env)
            if r is not None:
                runs.setdefault(backend, []).append(r)
    return runs


def _repeated(args: list[str], repeats: int, env: dict[str, str]) -> list[dict[str, Any]]:
    """The runs of `args` that succeeded, of `repeats` fresh processes."""
    return [r for r in (_run(args, env) for _ in range(repeats)) if r is not None]


def _run(args: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"{' '.join(args)}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--first", nargs=2, metavar=("MODEL", "BACKEND"), help=argparse.SUPPRESS)
    ap.add_argument("--steady", nargs=2, metavar=("MODEL", "BACKEND"), help=argparse.SUPPRESS)
    ap.add_argument("--dynamic", action="store_true", help="the loop over varied sequence lengths (above)")
    ap.add_argument("--dynamic-loop", nargs=2, metavar=("MODEL", "BACKEND"), help=argparse.SUPPRESS)
    ap.add_argument("--dynamic-steady", nargs=2, metavar=("MODEL", "BACKEND"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dynamic_loop:
        print(json.dumps(dynamic_loop(*args.dynamic_loop)))
        return
    if args.dynamic_steady:
        print(json.dumps(dynamic_steady(args.dynamic_steady[0], args.dynamic_steady[1], args.steps)))
        return
    if args.first:
        print(json.dumps(first_call(args.first[0], args.first[1])))
        return
    if args.steady:
        print(json.dumps(steady(args.steady[0], args.steady[1], args.steps)))
        return
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    if args.dynamic:
        main_dynamic(args, env)
        return
    backends = [b for b in args.backends.split(",") if b != "aot_eager"]
    print("| model | backend | first call (s) | aot_eager (s) | ratio | less a step: ratio | step (ms) |"
          " aot_eager (ms) | ratio | lowered graphs | pieces run lowered |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model in args.models.split(","):
        firsts = _alternated("--first", model, backends, args.repeats, env)
        base = statistics.median(r["first"] for r in firsts.get("aot_eager", [{"first": float("nan")}]))
        for backend in backends:
            if backend not in firsts:
                continue
            first = statistics.median(r["first"] for r in firsts[backend])
            st = _repeated(["--steady", model, backend, "--steps", str(args.steps)], args.repeats, env)
            step = statistics.median(r["step"] for r in st) if st else float("nan")
            base_step = statistics.median(r["aot_eager_step"] for r in st) if st else float("nan")
            ratio = statistics.median(r["step"] / r["aot_eager_step"] for r in st) if st else float("nan")
            f0 = firsts[backend][0]
            compile_ratio = (first - step) / (base - base_step)
            print(f"| {model} | {backend} | {first:.2f} | {base:.2f} | {first / base:.2f}x | {compile_ratio:.2f}x |"
                  f" {step * 1e3:.2f} | {base_step * 1e3:.2f} | {ratio:.2f}x | {f0['lowered']} | {f0['replaced']} |",
                  flush=True)


if __name__ == "__main__":
    main()
