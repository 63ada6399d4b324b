"""egraph_lower.torch's backend never breaks a training step: fallbacks, symbolic shapes, the cache.

Each test compiles a small model and checks the step against eager PyTorch; where
something cannot be lowered, the step must still run, with one warning naming the
stage and the reason, and `summary()` listing it; `strict=True` raises instead.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.build import GraphBuilder  # noqa: E402
from egraph_lower.torch import cache  # noqa: E402
from egraph_lower.torch.guard import Guarded  # noqa: E402
from torch_steps import mse_step  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew


def _grads(model: nn.Module) -> list[Any]:
    return [None if p.grad is None else p.grad.detach().clone() for p in model.parameters()]


def _assert_same(got: Any, want: Any) -> None:
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
    elif want is None:
        assert got is None
    else:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def _failures(caught: list[warnings.WarningMessage]) -> list[str]:
    """The backend's warnings about a stage that failed (not those about unmapped ops)."""
    return [str(w.message) for w in caught
            if "egraph_lower" in str(w.message) and "runs in PyTorch as it is" in str(w.message)]


# --------------------------------------------------------------------------- item 1: literals and corners

def test_tensor_literal_in_forward_compiles_and_matches_eager() -> None:
    """The issue's snippet: a tensor literal is a module constant (was an AssertionError about FakeTensors)."""
    def f(x: Any) -> Any:
        return (torch.relu(x) * torch.tensor([1.0, 2.0, 3.0])).sum()

    x = torch.randn(4, 3, requires_grad=True)
    be = elt.backend("metal", strict=True)
    torch.compile(f, backend=be, dynamic=False)(x).backward()
    got = x.grad.clone()
    x.grad = None
    f(x).backward()
    torch.testing.assert_close(got, x.grad)
    assert all(g.status == "lowered" and not g.errors for g in be.graphs), be.summary()


def test_empty_constants_import_as_constants() -> None:
    class Empties(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("e", torch.empty(0, 3))

        def forward(self, x: Any) -> Any:
            return (torch.relu(x) + self.e.sum(0) + torch.tensor([[]]).sum()).sum()

    x = torch.randn(2, 3, requires_grad=True)
    be = elt.backend("metal", strict=True)  # strict: any constant not imported would raise
    torch.compile(Empties(), backend=be, dynamic=False)(x).backward()
    torch.testing.assert_close(x.grad, (x > 0).float())
    assert [g.status for g in be.graphs] == ["lowered", "lowered"], be.summary()


class Corners(nn.Module):
    """Literals, empty constants, in-place ops, views, integer and boolean tensors, several outputs,
    a frozen parameter and one the loss never reaches (its gradient stays None)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.tensor([1.0, 2.0, 0.5, 1.5]))
        self.register_buffer("nothing", torch.empty(0))
        self.frozen = nn.Parameter(torch.linspace(-1.0, 1.0, 4), requires_grad=False)
        self.unused = nn.Parameter(torch.ones(4))

    def forward(self, x: Any, idx: Any, mask: Any) -> Any:
        h = self.lin(x) * self.scale * torch.tensor([1.0, -1.0, 2.0, 0.5])
        h = torch.cat([h, self.nothing.expand(h.shape[0], 0), torch.empty(h.shape[0], 0)], dim=1)
        h = h.view(-1, 2, 2).transpose(1, 2).reshape(h.shape[0], 4)
        y = h.clone()
        y.mul_(2.0)
        y.tanh_()
        y = torch.where(mask, y, torch.zeros_like(y))
        counts = (idx * 2 + 1).sum()
        z = y + counts.to(y.dtype) * self.frozen + torch.tensor(0.25)
        return z.sum(), z.detach(), idx + 1, mask.logical_not(), y[:, :2]


@pytest.mark.parametrize("target", ["metal", "wgpu", "cpu"])
def test_a_model_full_of_corners_trains_as_in_eager(target: str) -> None:
    torch.manual_seed(0)
    eager = Corners()
    compiled = copy.deepcopy(eager)
    x = torch.randn(3, 4)
    idx = torch.tensor([[1, 2, 3, 4], [0, -1, 5, 2], [7, 0, 0, 1]])
    mask = torch.randn(3, 4) > 0
    be = elt.backend(target)
    step = torch.compile(compiled, backend=be, dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = step(x, idx, mask)
        (got[0] + got[4].sum()).backward()
    want = eager(x, idx, mask)
    (want[0] + want[4].sum()).backward()
    _assert_same(got, want)
    _assert_same(_grads(compiled), _grads(eager))
    assert compiled.unused.grad is None
    assert not _failures(caught), be.summary()


# --------------------------------------------------------------------------- item 1: every stage falls back

def _no_matmul(tmp_path: Path) -> el.Backend:
    """metal without MatMul: a graph with a matrix product cannot be lowered for it."""
    doc = json.loads((Path(el.__file__).parent / "backends" / "metal.json").read_text())
    doc["name"] = "metal-without-matmul"
    doc["ops"] = [op for op in doc["ops"] if op != "MatMul"]
    path = tmp_path / "no_matmul.json"
    path.write_text(json.dumps(doc))
    return el.load_backend(str(path))


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.Sigmoid(), nn.Linear(8, 3))


def test_a_failed_lowering_runs_the_graph_as_pytorch_gave_it(tmp_path: Path) -> None:
    target = _no_matmul(tmp_path)
    eager, compiled = _mlp(), _mlp()
    x, y = torch.randn(6, 5), torch.randn(6, 3)
    be = elt.backend(target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(mse_step(compiled), backend=be, dynamic=False)(x, y)
    want = mse_step(eager)(x, y)
    _assert_same(got, want)
    _assert_same(_grads(compiled), _grads(eager))
    failures = _failures(caught)
    assert failures and all("lowering for metal-without-matmul" in m for m in failures)
    assert len(failures) == len(be.graphs)  # one warning per graph
    assert all(g.status == "not lowered" and g.errors for g in be.graphs)
    assert "lowering for metal-without-matmul" in be.summary()


def test_strict_raises_on_a_failed_lowering(tmp_path: Path) -> None:
    be = elt.backend(_no_matmul(tmp_path), strict=True)
    with pytest.raises(Exception, match="MatMul|matmul|no form|not run"):
        torch.compile(mse_step(_mlp()), backend=be, dynamic=False)(torch.randn(6, 5), torch.randn(6, 3))


def test_a_lowered_module_that_fails_to_run_falls_back_for_good() -> None:
    failures: list[BaseException] = []

    class Broken(nn.Module):
        def forward(self, x: Any) -> Any:
            raise RuntimeError("kernel exploded")

    class Doubles(nn.Module):
        def forward(self, x: Any) -> Any:
            return x * 2

    guarded = Guarded(Broken(), Doubles(), failures.append)
    x = torch.arange(3.0)
    assert torch.equal(guarded(x), x * 2) and torch.equal(guarded(x), x * 2)
    assert len(failures) == 1 and "kernel exploded" in str(failures[0])


# --------------------------------------------------------------------------- item 5: symbolic shapes

def test_dynamic_shapes_are_lowered_per_shape_and_never_fail_a_step() -> None:
    eager, compiled = _mlp(), _mlp()
    be = elt.backend("metal")
    step = torch.compile(mse_step(compiled), backend=be, dynamic=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (6, 9):
            eager.zero_grad()
            compiled.zero_grad()
            x, y = torch.randn(n, 5), torch.randn(n, 3)
            _assert_same(step(x, y), mse_step(eager)(x, y))
            _assert_same(_grads(compiled), _grads(eager))
    assert not _failures(caught), be.summary()
    top = [g for g in be.graphs if g.of is None]
    assert top and all(g.status == "per shape" for g in top), be.summary()
    shapes = [g for g in be.graphs if g.of is not None]
    assert len(shapes) == 2 * len(top) and all(g.status == "lowered" for g in shapes), be.summary()
    assert "lowered per shape" in be.summary()


def test_automatic_dynamic_shapes_after_a_recompile_never_fail_a_step() -> None:
    eager, compiled = _mlp(), _mlp()
    be = elt.backend("metal")
    step = torch.compile(mse_step(compiled), backend=be)  # dynamo's default: static first, then dynamic
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (6, 9, 4):
            eager.zero_grad()
            compiled.zero_grad()
            x, y = torch.randn(n, 5), torch.randn(n, 3)
            _assert_same(step(x, y), mse_step(eager)(x, y))
            _assert_same(_grads(compiled), _grads(eager))
    statuses = [g.status for g in be.graphs]
    assert "per shape" in statuses and "not lowered" not in statuses, be.summary()


def test_strict_lowers_symbolic_shapes() -> None:
    be = elt.backend("metal", strict=True)
    torch.compile(mse_step(_mlp()), backend=be, dynamic=True)(torch.randn(6, 5), torch.randn(6, 3))
    assert any(g.sizes for g in be.graphs), be.summary()


# --------------------------------------------------------------------------- item 3: lowered once, whole

def test_a_recompiled_graph_comes_from_the_cache() -> None:
    model = nn.Sequential(nn.Linear(7, 11), nn.GELU(), nn.Linear(11, 2))
    x, y = torch.randn(3, 7), torch.randn(3, 2)
    records: list[list[el.Graph]] = []
    backends = []
    for _ in range(2):
        torch._dynamo.reset()
        record: list[el.Graph] = []
        be = elt.backend("wgpu", record=record, strict=True)
        torch.compile(mse_step(model), backend=be, dynamic=False)(x, y)
        records.append(record)
        backends.append(be)
    assert sum(g.cached for g in backends[1].graphs) == len(records[1]) > 0
    assert [g.to_dict() for g in records[0]] == [g.to_dict() for g in records[1]]


def test_the_cache_key_holds_the_backends_content_the_limits_and_the_extractor(tmp_path: Path) -> None:
    b = GraphBuilder("g")
    x = b.input("x", (2, 3))
    y = b.act("Tanh", x)
    graph = b.build([y])
    metal, limits = el.load_backend("metal"), el.Limits()
    keys = {cache.key(graph, metal, limits, "greedy"), cache.key(graph, _no_matmul(tmp_path), limits, "greedy"),
            cache.key(graph, metal, el.Limits(iterations=3), "greedy"), cache.key(graph, metal, limits, "exact")}
    assert len(keys) == 4
    renamed = el.Graph(graph.nodes, graph.outputs, "another name")
    assert cache.key(renamed, metal, limits, "greedy") == cache.key(graph, metal, limits, "greedy")


class _Lgamma(nn.Module):
    """An op the format has no mapping for (aten's lgamma; its backward's digamma), forward and backward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.lgamma(x)


def test_pieces_between_unmapped_ops_are_lowered_as_one_graph() -> None:
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), _Lgamma(), nn.SiLU(), nn.Linear(8, 4))
    compiled = copy.deepcopy(eager)
    x, y = torch.randn(5, 6), torch.randint(0, 4, (5,))

    def step(model: nn.Module) -> Callable[..., Any]:
        def run() -> Any:
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            return loss

        return run

    be = elt.backend("metal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = torch.compile(step(compiled), backend=be, dynamic=False)()
    _assert_same(got, step(eager)())
    _assert_same(_grads(compiled), _grads(eager))
    assert [g.status for g in be.graphs] == ["partly lowered", "partly lowered"], be.summary()
    assert all(g.lowered == 1 for g in be.graphs), be.summary()  # one e-graph per FX graph, not per piece
    assert be.graphs[1].replaced >= 2, be.summary()  # the backward ops on both sides of the digamma


# --------------------------------------------------------------------------- item 4: nothing lowered, nothing added

def test_a_target_that_lowers_nothing_runs_the_graphs_as_pytorch_gave_them() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 2))
    be = elt.backend("cpu", strict=True)
    torch.compile(mse_step(model), backend=be, dynamic=False)(torch.randn(3, 4), torch.randn(3, 2))
    assert [g.status for g in be.graphs] == ["lowered", "lowered"]
    assert all(g.lowered == 1 and g.replaced == 0 for g in be.graphs), be.summary()
    metal = elt.backend("metal", strict=True)
    torch._dynamo.reset()
    torch.compile(mse_step(model), backend=metal, dynamic=False)(torch.randn(3, 4), torch.randn(3, 2))
    assert any(g.replaced for g in metal.graphs), metal.summary()


def test_ops_kept_in_pytorch_cut_the_graph_as_an_unmapped_op_does() -> None:
    """`keep_in_pytorch` runs a mapped op in PyTorch (by overload or by packet): the graph is cut around
    it, the pieces are lowered, strict does not count it a failure, and the step is eager's."""
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 3))
    x, y = torch.randn(5, 6), torch.randn(5, 3)
    for keep in (["aten.native_layer_norm"], ["aten.native_layer_norm.default", "aten.native_layer_norm_backward"]):
        torch._dynamo.reset()
        compiled = copy.deepcopy(eager)
        be = elt.backend("metal", strict=True, keep_in_pytorch=keep)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = torch.compile(mse_step(compiled), backend=be, dynamic=False)(x, y)
        assert not [w for w in caught if "egraph_lower" in str(w.message)]  # the user's choice: no warning
        want = mse_step(copy.deepcopy(eager))(x, y)
        _assert_same(got, want)
        assert set(be.unlowered_ops) == {"aten.native_layer_norm.default"} | (
            {"aten.native_layer_norm_backward.default"} if len(keep) == 2 else set()), be.summary()
        assert all(g.status == "partly lowered" for g in be.graphs[:1]), be.summary()
        assert sum(g.replaced for g in be.graphs) >= 1, be.summary()
