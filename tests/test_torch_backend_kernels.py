"""The example backend file's kernels through the torch backend (issue 23): the MLP with LayerNorm and the
GPT-2-like block train with the kernels in their lowered graphs and eager's gradients; a torch function
registered for a kernel's name runs in place of its pattern."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower import backends  # noqa: E402
from egraph_lower.document import validated  # noqa: E402
from torch_models import CASES, step_of  # noqa: E402
from torch_steps import train  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew

EXAMPLE = Path(__file__).resolve().parents[1] / "egraph_lower" / "examples" / "metal_kernels.json"


def train_both(name: str, be: Any) -> None:
    case = CASES[name]
    eager, compiled = case.model(), case.model()
    batch = case.data()
    got = train(compiled, step_of(case, compiled, lambda f: torch.compile(f, backend=be, dynamic=False)), batch, None)
    want = train(eager, step_of(case, eager), batch, None)
    names = [n for n, _ in eager.named_parameters()]
    for step, (g_step, w_step) in enumerate(zip(got, want)):
        for pname, g, w in zip(names, g_step, w_step):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=lambda m: f"step {step}, {pname}: {m}")


def kernels(graph: el.Graph) -> Counter[str]:
    return Counter(n.attrs["name"] for n in graph.nodes if n.op == "Kernel")


@pytest.mark.parametrize(("name", "forward", "backward"), [
    ("mlp", {}, {"layer_norm_backward": 3, "softmax_cross_entropy_backward": 1}),
    ("gpt2", {"bias_gelu_tanh": 1}, {"layer_norm_backward": 9, "softmax_cross_entropy_backward": 1}),
])
def test_the_models_train_like_eager_with_the_kernels_chosen(name: str, forward: dict[str, int],
                                                              backward: dict[str, int]) -> None:
    target = backends.load(str(EXAMPLE))
    record: list[el.Graph] = []
    be = elt.backend(target, record=record, strict=True)
    train_both(name, be)
    assert {g.kind: g.status for g in be.graphs} == {"forward": "lowered", "backward": "lowered"}, be.summary()
    assert be.unlowered_ops == {}, be.summary()
    by_kind = {g.kind: r for g, r in zip(be.graphs, record)}
    assert kernels(by_kind["forward"]) == Counter(forward)
    assert kernels(by_kind["backward"]) == Counter(backward)
    for graph in record:  # valid documents the backend runs
        assert all(target.runs_node(n) for n in validated(graph).nodes)


def test_a_registered_torch_function_runs_for_its_kernel() -> None:
    calls: list[int] = []

    def layer_norm_backward(x: Any, w: Any, mean: Any, rstd: Any, dy: Any, **params: Any) -> tuple[Any, ...]:
        calls.append(len(params))
        dims = tuple(range(params["axis"], x.dim()))
        lead = tuple(range(params["axis"]))
        xhat = (x - mean) * rstd
        g = dy * w
        dx = rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))
        return dx, (dy * xhat).sum(lead), dy.sum(lead)

    elt.register_kernel("layer_norm_backward", layer_norm_backward)
    try:
        train_both("mlp", elt.backend(backends.load(str(EXAMPLE)), strict=True))
    finally:
        elt.register_kernel("layer_norm_backward", None)
    assert calls and set(calls) == {3}  # axis, axes, lead; once per output and step


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_the_torch_kernel_runs_the_pattern_as_the_evaluator_does(dtype: str) -> None:
    import numpy as np

    from egraph_lower.evaluate import apply
    from egraph_lower.torch.common import FORMAT_TO_TORCH
    from egraph_lower.torch.kernels import KERNELS

    attrs = {"name": "centred_tanh", "inputs": ["x", "w"], "pattern": "(* (- x (Reduce.Mean axes 1 x)) (Tanh (+ w 0.5)))",
             "params": {"axes": "[1]"}}
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(4, 6, generator=g).to(FORMAT_TO_TORCH[dtype]), torch.randn(6, generator=g).to(FORMAT_TO_TORCH[dtype])
    got = KERNELS["Kernel"](x, w, **attrs)
    want = apply("Kernel", attrs, [x.float().numpy(), w.float().numpy()], "f64")  # the values x and w hold, in f64
    assert got.dtype == x.dtype
    eps = {"f32": 2.0**-23, "f16": 2.0**-10, "bf16": 2.0**-7}[dtype]
    # computed in f32 (f16 and bf16 too), rounded once to the dtype: within a few ulps of the exact value
    np.testing.assert_allclose(got.float().numpy(), want, rtol=4 * eps, atol=4 * eps)


def test_the_lowered_mlp_graphs_run_in_the_evaluator_as_imported(tmp_path: Path) -> None:
    import numpy as np

    from egraph_lower import cli
    from test_backend_kernels import _feeds
    from torch_models import recorded_graphs

    lowered = recorded_graphs(CASES["mlp"], target=str(EXAMPLE))
    imported = recorded_graphs(CASES["mlp"], target="cpu")  # cpu runs every op: the graphs as imported
    assert sum(kernels(g).total() for g in lowered.values()) == 4
    for name, graph in lowered.items():
        path, feeds_path, out = tmp_path / f"{name}.json", tmp_path / f"{name}.npz", tmp_path / f"{name}.out.npz"
        path.write_text(graph.to_json())
        feeds = {k: v % 5 if v.dtype.kind == "i" else v  # class indices of the MLP's 5 classes
                 for k, v in _feeds(imported[name], np.random.default_rng(0)).items()}
        np.savez(feeds_path, **feeds)
        assert cli.main(["run", str(path), "-i", str(feeds_path), "-o", str(out)]) == 0
        ran = np.load(out)
        for i, want in enumerate(el.evaluate(imported[name], feeds)):
            np.testing.assert_allclose(ran[f"out{i}"], want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))
