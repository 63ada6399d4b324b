"""Graphs with symbolic sizes are lowered per concrete shape (egraph_lower/torch/specialise.py).

Each test compiles a small step under `dynamic=True` or dynamo's default (`dynamic=None`: static
first, symbolic from the first change of shape), runs it over several lengths against eager, and
checks what the backend did: every shape lowered (its record named by its sizes, `forward0[s0=9]`),
the sizes never the reason a graph ran in PyTorch, the recorded graphs carrying `sizes`.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402

import egraph_lower as el  # noqa: E402
import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.torch import specialise  # noqa: E402
from torch_steps import mse_step  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles anew


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.Sigmoid(), nn.Linear(8, 3))


def _grads(model: nn.Module) -> list[Any]:
    return [None if p.grad is None else p.grad.detach().clone() for p in model.parameters()]


def _close(got: Any, want: Any) -> None:
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def _failures(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "runs in PyTorch as it is" in str(w.message)]


def _never_for_sizes(be: Any) -> None:
    """No graph ran in PyTorch because of its sizes: no record says so, nor does the summary."""
    summary = be.summary()
    assert "symbolic shapes:" not in summary and "has symbolic sizes" not in summary, summary
    for g in be.graphs:
        assert not any(e.startswith("symbolic shapes") for e in g.errors), summary


def _run(make_step: Callable[[nn.Module], Callable[..., Any]], batches: list[tuple[Any, ...]], be: Any,
         dynamic: bool | None) -> list[warnings.WarningMessage]:
    """The step compiled with `be` and eager, batch by batch: loss and gradients equal at each."""
    eager = _mlp()
    compiled = copy.deepcopy(eager)
    step = torch.compile(make_step(compiled), backend=be, dynamic=dynamic)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for batch in batches:
            eager.zero_grad()
            compiled.zero_grad()
            _close(step(*batch), make_step(eager)(*batch))
            for g, w in zip(_grads(compiled), _grads(eager)):
                _close(g, w)
    return caught


def _batches(lengths: tuple[int, ...]) -> list[tuple[Any, ...]]:
    torch.manual_seed(1)
    return [(torch.randn(n, 5), torch.randn(n, 3)) for n in lengths]


def _shapes(be: Any) -> list[Any]:
    return [g for g in be.graphs if g.of is not None]


@pytest.mark.parametrize("dynamic", [True, None])
def test_lengths_are_lowered_per_shape_with_eagers_gradients(dynamic: bool | None) -> None:
    record: list[el.Graph] = []
    be = elt.backend("metal", record=record)
    lengths = (6, 9, 4, 11, 9)
    caught = _run(mse_step, _batches(lengths), be, dynamic)
    assert not _failures(caught), be.summary()
    _never_for_sizes(be)
    shapes = _shapes(be)
    met = len(set(lengths)) if dynamic else len(set(lengths)) - 1  # dynamic=None: the first length is static
    assert len(shapes) == 2 * met, be.summary()  # a forward and a backward per length met
    assert all(g.status == "lowered" for g in shapes), be.summary()
    assert all(g.replaced for g in shapes if g.kind == "backward"), be.summary()  # sigmoid_backward expanded
    top = [g for g in be.graphs if g.of is None]
    assert all(g.status in ("per shape", "lowered") for g in top), be.summary()
    assert {tuple(g.sizes.values()) for g in shapes} == {(n,) for n in lengths[0 if dynamic else 1:]}, be.summary()
    assert all(g.name.endswith(f"[{k}={v}]") for g in shapes for k, v in g.sizes.items()), be.summary()
    # the recorded graphs of a specialisation carry its sizes; they validate and round-trip
    sized = [g for g in record if g.sizes]
    assert len(sized) == len(shapes)
    from jsonschema import validate

    from egraph_lower.schema import schema

    for g in sized:
        assert el.validated(g).sizes == g.sizes
        doc = json.loads(g.to_json())
        validate(doc, schema())
        again = el.from_json(g.to_json())
        assert again == g and again.sizes == g.sizes
        assert doc["sizes"] == g.sizes
    static = [g for g in record if not g.sizes]
    assert all("sizes" not in g.to_dict() for g in static)


def test_a_symint_argument_and_a_view_to_a_symbolic_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """The length as a scalar operand (a SymInt placeholder) and as a view's size (`s0 * 2`)."""
    import sys

    backend_module = sys.modules["egraph_lower.torch.backend"]

    made: list[specialise.PerShape] = []

    class Spy(specialise.PerShape):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            made.append(self)

    monkeypatch.setattr(backend_module, "PerShape", Spy)
    def step(model: nn.Module) -> Callable[..., Any]:
        def run(x: Any, y: Any) -> Any:
            h = model(x)  # [n, 3]
            n = x.shape[0]
            folded = torch.cat([h, h], 1).view(n * 2, 3)  # a view to [2*s0, 3]
            loss = ((folded - torch.cat([y, y], 1).view(n * 2, 3)) ** 2).sum() / n + h.mean() * n
            loss.backward()
            return loss
        return run

    be = elt.backend("metal")
    caught = _run(step, _batches((6, 9, 7)), be, True)
    assert not _failures(caught), be.summary()
    _never_for_sizes(be)
    shapes = _shapes(be)
    assert len(shapes) == 6 and all(g.status == "lowered" for g in shapes), be.summary()
    assert any(p.shapes.numbers for p in made)  # a graph took the length as a SymInt argument
    views = [n for p in made for n in p.gm.graph.nodes if n.op == "call_function" and "view" in str(n.target)
             and any(isinstance(a, torch.fx.Node) for a in n.args[1])]
    assert views  # ... and viewed a tensor to a shape computed from it


def test_a_length_met_again_after_eviction_is_lowered_again_from_the_cache() -> None:
    be = elt.backend("metal", max_shapes=1)
    caught = _run(mse_step, _batches((6, 9, 6)), be, True)
    assert not _failures(caught), be.summary()
    _never_for_sizes(be)
    six = [g for g in _shapes(be) if g.sizes == {"s0": 6} or list(g.sizes.values()) == [6]]
    assert len(six) == 2, be.summary()  # one record per graph and shape, met twice
    assert all(g.lowered == 2 for g in six), be.summary()  # specialised and lowered again at its return
    assert all(g.cached >= 1 for g in six if g.kind == "backward"), be.summary()  # the second time from the cache


def test_max_shapes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_shapes"):
        elt.backend("metal", max_shapes=0)


def _fail_at(length: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Specialising any graph to `length` raises."""
    real = specialise.specialise

    def flaky(gm: Any, args: Any) -> Any:
        if any(isinstance(a, torch.Tensor) and a.dim() and a.shape[0] == length for a in args):
            raise RuntimeError(f"no specialisation at {length}")
        return real(gm, args)

    monkeypatch.setattr(specialise, "specialise", flaky)


def test_a_specialisation_that_fails_runs_in_pytorch_and_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    _fail_at(9, monkeypatch)
    be = elt.backend("metal")
    caught = _run(mse_step, _batches((6, 9, 4, 9)), be, True)
    failures = _failures(caught)
    assert failures and all("no specialisation at 9" in m for m in failures), failures
    assert len(failures) == 2, failures  # one warning per graph and shape, not per call
    failed = [g for g in _shapes(be) if g.errors]
    assert len(failed) == 2 and all(list(g.sizes.values()) == [9] for g in failed), be.summary()
    assert all(g.errors == ["specialisation: RuntimeError: no specialisation at 9"] for g in failed), be.summary()
    assert all(g.status == "lowered" for g in _shapes(be) if not g.errors), be.summary()
    assert "ran in PyTorch after a failure: specialisation" in be.summary()


def test_strict_raises_when_a_specialisation_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    _fail_at(9, monkeypatch)
    be = elt.backend("metal", strict=True)
    step = torch.compile(mse_step(_mlp()), backend=be, dynamic=True)
    step(torch.randn(6, 5), torch.randn(6, 3))
    with pytest.raises(RuntimeError, match="no specialisation at 9"):
        step(torch.randn(9, 5), torch.randn(9, 3))


def test_a_lowering_that_fails_at_one_shape_runs_that_shape_in_pytorch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The failure of a later stage (the e-graph lowering) at one shape: the other shapes stay lowered."""
    from egraph_lower.torch import cache

    real = cache.lowered

    def flaky(graph: el.Graph, *rest: Any, **kw: Any) -> Any:
        if any(n.op == "Input" and n.shape and n.shape[0] == 9 for n in graph.nodes):
            raise RuntimeError("no lowering at 9")
        return real(graph, *rest, **kw)

    monkeypatch.setattr(cache, "lowered", flaky)
    be = elt.backend("metal")
    caught = _run(mse_step, _batches((6, 9, 4)), be, True)
    assert _failures(caught) and all("no lowering at 9" in m for m in _failures(caught))
    by_length = {list(g.sizes.values())[0]: g for g in _shapes(be) if g.kind == "forward"}
    assert by_length[9].errors and by_length[6].status == by_length[4].status == "lowered", be.summary()


def test_dropout_in_a_graph_that_takes_a_number_first_draws_on_a_tensors_device() -> None:
    """Regression: a specialised graph's first argument can be a SymInt (a GPT-2 forward under dynamic
    shapes); the exported module drew its dropout masks on `that.device` and failed at every shape."""
    from torch_models import CASES, step_of

    case = CASES["gpt2"]  # dropout on
    eager = case.model()
    compiled = copy.deepcopy(eager)
    be = elt.backend("wgpu", strict=True)
    step = step_of(case, compiled, lambda f: torch.compile(f, backend=be, dynamic=True))
    want = step_of(case, eager)
    g = torch.Generator().manual_seed(2)
    for n in (8, 12):
        batch = (torch.randint(0, 48, (2, n), generator=g),)
        eager.zero_grad()
        compiled.zero_grad()
        _close(step(batch), want(batch))
        for got, w in zip(_grads(compiled), _grads(eager)):
            _close(got, w)
    assert all(g.status == "lowered" and g.replaced for g in _shapes(be)), be.summary()


def test_true_divide_maps_as_div() -> None:
    """`aten.true_divide.Tensor` (div's alias, which GPT-2's loss traces to under dynamic shapes)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x: Any, y: Any) -> Any:
        return torch.ops.aten.true_divide.Tensor(x, y)

    x, y = torch.randn(3, 4), torch.rand(4) + 0.5
    gm = make_fx(f)(x, y)  # traced as div.Tensor: put the alias back
    for node in gm.graph.nodes:
        if node.target is torch.ops.aten.div.Tensor:
            node.target = torch.ops.aten.true_divide.Tensor
    gm.recompile()
    imported = elt.import_graph(gm)
    assert [n.attrs.get("op") for n in imported.graph.nodes if n.op == "Binary"] == ["Div"]
    _close(elt.export_graph(imported.graph, imported.signature)(x, y), x / y)


def test_mark_dynamic_lowers_each_length() -> None:
    """`torch._dynamo.mark_dynamic` on the batch dim: symbolic from the first call, each length lowered."""
    be = elt.backend("metal", strict=True)
    eager = _mlp()
    compiled = copy.deepcopy(eager)
    step = torch.compile(mse_step(compiled), backend=be)
    for x, y in _batches((6, 9, 4)):
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(y, 0)
        eager.zero_grad()
        compiled.zero_grad()
        _close(step(x, y), mse_step(eager)(x, y))
        for g, w in zip(_grads(compiled), _grads(eager)):
            _close(g, w)
    top = [g for g in be.graphs if g.of is None]
    assert top and all(g.status == "per shape" for g in top), be.summary()
    assert len(_shapes(be)) == 2 * 3 and all(g.status == "lowered" for g in _shapes(be)), be.summary()


def _layout(graph: Any) -> list[Any]:
    """Every node's meta["val"] as plain data: numbers, and for tensors shape, strides, offset, dtype,
    device and which earlier tensor's storage it shares (by first appearance)."""
    from torch.multiprocessing.reductions import StorageWeakRef

    storages: dict[int, int] = {}

    def plain(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            key = int(StorageWeakRef(v.untyped_storage()).cdata)
            share = storages.setdefault(key, len(storages))
            return (tuple(v.shape), v.stride(), v.storage_offset(), v.dtype, str(v.device), share,
                    v.untyped_storage().nbytes())
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        return v

    return [(n.name, plain(n.meta.get("val"))) for n in graph.nodes if n.op != "output"]  # its own: unread


def test_sizes_put_into_the_trace_give_what_propagation_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """specialise() evaluates the trace's size expressions at the call's sizes instead of running every
    meta function again; on transformers' GPT-2 (views, reshapes to symbolic shapes, attention, a
    saved sym_size) each node's value is what fake-tensor propagation at those sizes gives."""
    from torch_models import hf_cases

    cases = {c.name: c for c in hf_cases()}
    if "hf_gpt2" not in cases:
        pytest.skip("transformers is not installed")
    calls: list[tuple[Any, list[Any]]] = []
    real = specialise.specialise

    def recording(gm: Any, args: Any) -> Any:
        calls.append((gm, list(args)))
        return real(gm, args)

    monkeypatch.setattr(specialise, "specialise", recording)
    model = cases["hf_gpt2"].model()
    step = torch.compile(lambda ids: model(input_ids=ids, labels=ids).loss, backend=elt.backend("cpu"))
    for n in (7, 11):
        step(torch.randint(0, 128, (2, n))).backward()
    assert len(calls) == 2  # the forward and the backward at length 11
    for gm, args in calls:
        substituted, _, numbers = real(gm, args)
        monkeypatch.setattr(specialise, "_substitute", lambda *a: False)
        propagated, _, propagated_numbers = real(gm, args)
        monkeypatch.undo()
        monkeypatch.setattr(specialise, "specialise", recording)
        assert numbers == propagated_numbers
        assert _layout(substituted.graph) == _layout(propagated.graph)


def test_sizes_the_arguments_do_not_give_or_contradict_are_not_put_in() -> None:
    """An unbacked size (`nonzero`'s count) is no argument's, and an argument whose sizes contradict
    the trace's binds nothing consistently: either way nothing is changed and False tells specialise()
    to propagate instead."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    def vals(gm: Any) -> list[Any]:
        return [n.meta.get("val") for n in gm.graph.nodes]

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    unbacked = make_fx(lambda x: torch.nonzero(x), tracing_mode="symbolic")(torch.randn(5))
    before = vals(unbacked)
    assert not specialise._substitute(unbacked.graph, [torch.randn(6)], mode)
    assert vals(unbacked) == before
    pair = make_fx(lambda x, y: x + y, tracing_mode="symbolic")(torch.randn(5, 3), torch.randn(5, 3))
    assert not specialise._substitute(pair.graph, [torch.randn(4, 3), torch.randn(6, 3)], mode)  # one s0
    assert specialise._substitute(pair.graph, [torch.randn(4, 3), torch.randn(4, 3)], mode)
    assert [tuple(v.shape) for v in vals(pair) if isinstance(v, torch.Tensor)] == [(4, 3)] * 3
