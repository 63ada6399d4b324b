"""The lowered training step against PyTorch's own decompositions, the peer (issue 22).

    python bench/torch_decomp.py [--models mlp,cnn,dwcnn,gpt2,bert,llama,vit] [--backends metal,wgpu]
                                 [--steps 20] [--repeats 1]

What a user without backward kernels would pick instead of this project is PyTorch's decomposition
table as Inductor uses it (`torch._inductor.decomposition.select_decomp_table()`, applied by
`aot_autograd`), which turns the backward ops into primitives by hand-written rules. Per model, in one
fresh process, the same training step compiled four ways, each on its own copy of the model:

- `aot_eager`: PyTorch's fused backward kernels (what a backend with every kernel gets);
- `decomp`: `aot_autograd` with Inductor's table, the graph run as it comes out (the peer);
- the backend for each target (`egraph_lower.torch.backend(target)`).

Their steps are interleaved (`--steps` each, after three warm-up steps), so all see the same machine;
each figure is the median step's process CPU time with one torch thread. Then one more step of each
under a dispatch mode counts what the backward runs: the aten kernels (every op but views, whose
results alias an input) and the bytes they read and write (each tensor argument's and result's
`nbytes`). On CPU these are a proxy for a GPU's launches and traffic. Every side's gradients are
checked against eager's (rtol 1e-4, atol 1e-5; the peer's differ wherever a model has dropout:
Inductor's table draws the masks with `rand`, not eager's `bernoulli`); "left in PyTorch" counts the aten ops the importer
does not map yet (they run as PyTorch gives them, on both sides alike).

The models (small, random weights, nothing downloaded): bench/torch_compile.py's MLP, CNN, GPT-2 and
BERT; a depthwise-separable CNN; transformers' LLaMA and ViT from small configs.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import torch_compile  # noqa: E402  (its models and warm-up)

MODELS = ("mlp", "cnn", "dwcnn", "gpt2", "bert", "llama", "vit")


def build(name: str) -> tuple[Any, Any]:
    """(model, loss(model) -> scalar): bench/torch_compile.py's models and three more."""
    import torch
    import torch.nn as nn

    if name in torch_compile.MODELS:
        model, _ = torch_compile.build(name)
        return model, _loss_of(name)
    torch.manual_seed(0)
    if name == "dwcnn":
        def block(cin: int, cout: int, groups: int = 1, k: int = 3) -> list[nn.Module]:
            return [nn.Conv2d(cin, cout, k, padding=k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
                    nn.ReLU()]

        model = nn.Sequential(*block(3, 16), *block(16, 16, groups=16), *block(16, 32, k=1),
                              *block(32, 32, groups=32), *block(32, 64, k=1),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
        return model, _loss_of(name)
    import transformers

    transformers.logging.set_verbosity_error()
    if name == "llama":
        cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                       num_attention_heads=2, num_key_value_heads=2, vocab_size=128,
                                       max_position_embeddings=64)
        model = transformers.LlamaForCausalLM(cfg)
        model.loss_type = "ForCausalLM"
        return model, _loss_of(name)
    cfg = transformers.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=64, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=128, num_labels=5)
    return transformers.ViTForImageClassification(cfg), _loss_of(name)


def _loss_of(name: str) -> Any:
    """loss(model): the model's step on a fixed batch (made once, here)."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(1)
    if name == "mlp":
        x, y = torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)
        return lambda m: F.cross_entropy(m(x), y)
    if name in ("cnn", "dwcnn"):
        x, y = torch.randn(16, 3, 32, 32, generator=g), torch.randint(0, 10, (16,), generator=g)
        return lambda m: F.cross_entropy(m(x), y)
    if name == "vit":
        x, y = torch.randn(8, 3, 16, 16, generator=g), torch.randint(0, 5, (8,), generator=g)
        return lambda m: m(pixel_values=x, labels=y).loss
    ids = torch.randint(0, 128, (4, 32), generator=g)
    if name == "bert":
        labels = torch.randint(0, 3, (4,), generator=g)
        return lambda m: m(input_ids=ids, labels=labels).loss
    return lambda m: m(input_ids=ids, labels=ids).loss


def _peer() -> Any:
    """aot_autograd with Inductor's decomposition table, the graphs run as they come out."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    from torch._inductor.decomposition import select_decomp_table

    def run_as_is(gm: Any, _: Any) -> Any:
        return make_boxed_func(gm.forward)

    return aot_autograd(fw_compiler=run_as_is, bw_compiler=run_as_is, decompositions=select_decomp_table())


def _counted(train_step: Any) -> dict[str, float]:
    """The aten kernels the step's backward runs (views left out) and the bytes they read and write."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.kernels = 0
            self.bytes = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if not any(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns):
                self.kernels += 1
                self.bytes += sum(t.nbytes for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor))
            return out

    counter = Count()
    train_step(counter)
    return {"kernels": counter.kernels, "bytes": counter.bytes}


def measure(model_name: str, targets: list[str], steps: int) -> dict[str, Any]:
    """In this (fresh) process: each side's median step, backward kernels and bytes, gradients vs eager."""
    import contextlib

    import torch

    import egraph_lower.torch as elt

    torch_compile._warm()
    model, loss = build(model_name)
    model.train()
    eager = copy.deepcopy(model)
    torch.manual_seed(7)
    loss(eager).backward()
    backends: dict[str, Any] = {"aot_eager": "aot_eager", "decomp": _peer()}
    backends.update({t: elt.backend(t) for t in targets})
    runs: dict[str, Any] = {}
    for side, be in backends.items():
        m = copy.deepcopy(model)
        compiled = torch.compile(loss, backend=be, dynamic=False)

        def train_step(mode: Any = None, m: Any = m, compiled: Any = compiled) -> None:
            m.zero_grad(set_to_none=True)
            torch.manual_seed(7)  # dropout draws eager's masks
            out = compiled(m)
            with mode if mode is not None else contextlib.nullcontext():
                out.backward()

        runs[side] = (m, train_step)
    out: dict[str, Any] = {"model": model_name}
    for side, (m, train_step) in runs.items():
        train_step()
        bad = [n for (n, p), q in zip(m.named_parameters(), eager.parameters())
               if (p.grad is None) != (q.grad is None)
               or (p.grad is not None and not torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-5))]
        out[side] = {"grads": "eager's" if not bad else f"differ: {', '.join(bad[:3])}"}
        for _ in range(2):
            train_step()
    times: dict[str, list[float]] = {side: [] for side in runs}
    for _ in range(steps):
        for side, (_, train_step) in runs.items():
            t0 = time.process_time()
            train_step()
            times[side].append(time.process_time() - t0)
    for side, (_, train_step) in runs.items():
        out[side]["step"] = statistics.median(times[side])
        out[side].update(_counted(train_step))
    for t in targets:
        out[t]["left in PyTorch"] = sum(sum(g.unlowered_ops.values()) for g in backends[t].graphs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--backends", default="metal,wgpu")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=1, help="processes per model (the median of their ratios)")
    ap.add_argument("--measure", metavar="MODEL", help=argparse.SUPPRESS)
    args = ap.parse_args()
    targets = [t for t in args.backends.split(",") if t]
    if args.measure:
        print(json.dumps(measure(args.measure, targets, args.steps)))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT.parent))
    print(f"steady step, median of {args.steps} interleaved, process CPU time, one thread; backward's aten kernels"
          " and MB read+written")
    print("| model | target | ours (ms) | decomp (ms) | aot_eager (ms) | ours / decomp | ours / aot_eager |"
          " kernels ours / decomp | MB ours / decomp | grads | left in PyTorch |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    ratios: dict[str, list[float]] = {t: [] for t in targets}
    eager_ratios: dict[str, list[float]] = {t: [] for t in targets}
    for model in args.models.split(","):
        rs = []
        for _ in range(args.repeats):
            cmd = [sys.executable, __file__, "--measure", model, "--backends", ",".join(targets),
                   "--steps", str(args.steps)]
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                print(f"| {model} | failed: {done.stderr.strip().splitlines()[-1:]} |", flush=True)
                break
            rs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        if not rs:
            continue
        for t in targets:
            r = rs[0]
            ratio = statistics.median(x[t]["step"] / x["decomp"]["step"] for x in rs)
            eager_ratio = statistics.median(x[t]["step"] / x["aot_eager"]["step"] for x in rs)
            ratios[t].append(ratio)
            eager_ratios[t].append(eager_ratio)
            grads = r[t]["grads"] if r["decomp"]["grads"] == "eager's" else f"{r[t]['grads']} (decomp: {r['decomp']['grads']})"
            print(f"| {model} | {t} | {r[t]['step'] * 1e3:.2f} | {r['decomp']['step'] * 1e3:.2f} |"
                  f" {r['aot_eager']['step'] * 1e3:.2f} | {ratio:.2f} | {eager_ratio:.2f} |"
                  f" {r[t]['kernels']} / {r['decomp']['kernels']} |"
                  f" {r[t]['bytes'] / 1e6:.1f} / {r['decomp']['bytes'] / 1e6:.1f} | {grads} |"
                  f" {r[t]['left in PyTorch']} |", flush=True)
    for t in targets:
        if ratios[t]:
            print(f"{t}: ours / decomp median {statistics.median(ratios[t]):.2f}, worst {max(ratios[t]):.2f};"
                  f" ours / aot_eager median {statistics.median(eager_ratios[t]):.2f}")


if __name__ == "__main__":
    main()
