"""Trilinear (opdefs/trilinear.py): against aten's _trilinear in float64 on bilinear's four calls and other
axis sets; validation in one line; the lowering for every backend without a kernel is what the evaluator
says; F.bilinear through the torch backend leaves nothing in PyTorch and has eager's gradients."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.build import GraphBuilder
from egraph_lower.errors import LowerError
from egraph_lower.evaluate import apply
from egraph_lower.validate import infer
from support import assert_lowering_matches

torch = pytest.importorskip("torch")
F = torch.nn.functional

_BILINEAR = {"expand1": [1, 3], "expand2": [0], "expand3": [1, 2], "sumdim": [2, 3]}
_CASES = [
    (_BILINEAR, [(4, 3), (2, 3, 5), (4, 5)]),
    ({"expand1": [2, 3], "expand2": [0], "expand3": [1, 2], "sumdim": [1, 3]}, [(4, 2), (2, 3, 5), (4, 5)]),
    ({"expand1": [1, 3], "expand2": [2, 3], "expand3": [1, 2], "sumdim": [0]}, [(4, 3), (4, 2), (4, 5)]),
    ({"expand1": [1, 3], "expand2": [0], "expand3": [2, 3], "sumdim": [1, 2]}, [(4, 3), (2, 3, 5), (4, 2)]),
    ({"expand1": [], "expand2": [], "expand3": [], "sumdim": [0, -1]}, [(3, 4), (3, 4), (1, 4)]),
    ({"expand1": [0], "expand2": [1], "expand3": [], "sumdim": []}, [(5,), (3,), (3, 5)]),
    ({"expand1": [-1], "expand2": [0], "expand3": [0], "sumdim": [1]}, [(1, 3), (3, 2), (1, 2)]),
    (_BILINEAR, [(4, 0), (2, 0, 5), (4, 5)]),
]


def _reference(attrs: dict[str, Any], ts: list[Any]) -> Any:
    """The definition: each input with its axes inserted, the broadcast product summed over sumdim."""
    rank = ts[0].dim() + len(attrs["expand1"])
    out = 1
    for t, key in zip(ts, ("expand1", "expand2", "expand3")):
        for d in sorted(v % rank for v in attrs[key]):
            t = t.unsqueeze(d)
        out = out * t
    axes = sorted({v % rank for v in attrs["sumdim"]})
    return out.sum(dim=axes) if axes else out  # torch's sum over dim=[] would sum every axis


_NO_BROADCAST = [0, 1, 2, 3, 5, 7]  # the calls aten's kernel computes as the definition says


@pytest.mark.parametrize("attrs, shapes", _CASES)
def test_trilinear_is_its_definition_and_atens_where_nothing_broadcasts(attrs: dict[str, Any],
                                                                         shapes: list[tuple[int, ...]]) -> None:
    g = torch.Generator().manual_seed(len(shapes[0]) + sum(map(len, attrs.values())))
    ts = [torch.randn(s, dtype=torch.float64, generator=g) for s in shapes]
    want = _reference(attrs, ts)
    if _CASES.index((attrs, shapes)) in _NO_BROADCAST:
        aten = torch.ops.aten._trilinear(*ts, *(attrs[k] for k in ("expand1", "expand2", "expand3", "sumdim")))
        torch.testing.assert_close(aten, want, rtol=1e-12, atol=1e-12)
    got = apply("Trilinear", attrs, [t.numpy() for t in ts], "f64")
    assert got.shape == tuple(want.shape)
    assert infer("Trilinear", attrs, [(s, "f64") for s in shapes])[0] == tuple(want.shape)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("attrs, shapes, message", [
    ({**_BILINEAR, "expand2": []}, [(2, 3), (4, 3, 5), (2, 5)], "ranks with their expand axes differ"),
    ({**_BILINEAR, "sumdim": [2, -2]}, [(2, 3), (4, 3, 5), (2, 5)], "repeats an axis"),
    ({**_BILINEAR, "expand1": [1, 4]}, [(2, 3), (4, 3, 5), (2, 5)], "out of range for rank 4"),
    (_BILINEAR, [(2, 3), (4, 2, 5), (2, 5)], "do not broadcast"),
])
def test_trilinear_validation_in_one_line(attrs: dict[str, Any], shapes: list[tuple[int, ...]], message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        infer("Trilinear", attrs, [(s, "f32") for s in shapes])
    assert "\n" not in str(err.value)
    with pytest.raises(LowerError):
        apply("Trilinear", attrs, [np.zeros(s, np.float32) for s in shapes], "f32")


@pytest.mark.parametrize("backend", ["metal", "wgpu", "tpu", "mlx"])
@pytest.mark.parametrize("case", [0, 1, 2, 3, 4])
def test_trilinear_lowers_to_what_the_evaluator_says(case: int, backend: str) -> None:
    attrs, shapes = _CASES[case]
    b = GraphBuilder("trilinear")
    ins = [b.input(f"i{k}", list(s), "f32") for k, s in enumerate(shapes)]
    graph = b.build([b.op("Trilinear", *ins, **attrs)])
    rng = np.random.default_rng(case)
    feeds = {f"i{k}": rng.standard_normal(s).astype(np.float32) for k, s in enumerate(shapes)}
    lowered = el.lower(graph, backend).graph
    target = el.load_backend(backend)
    assert all(target.runs_node(node) for node in lowered.nodes)
    assert "Trilinear" not in lowered.op_counts()
    assert_lowering_matches(graph, lowered, feeds)


def test_cpu_keeps_its_trilinear_kernel() -> None:
    b = GraphBuilder("trilinear")
    ins = [b.input(f"i{k}", list(s), "f32") for k, s in enumerate(_CASES[0][1])]
    graph = b.build([b.op("Trilinear", *ins, **_BILINEAR)])
    assert el.lower(graph, "cpu").graph.op_counts().get("Trilinear") == 1


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("backend", ["metal", "wgpu", "cpu"])
def test_f_bilinear_through_the_backend_leaves_nothing_in_pytorch(backend: str, dtype: Any) -> None:
    from egraph_lower.torch import backend as make_backend

    torch._dynamo.reset()
    be = make_backend(backend)
    fn = torch.compile(lambda a, w, b, bias: F.bilinear(a, b, w, bias).tanh(), backend=be, dynamic=False)
    g = torch.Generator().manual_seed(3)
    args = [torch.randn(s, generator=g).to(dtype).requires_grad_(True) for s in ((4, 3), (2, 3, 5), (4, 5), (2,))]
    y = fn(*args)
    dy = torch.randn(y.shape, generator=g).to(dtype)
    got = torch.autograd.grad(y, args, dy)
    want = torch.autograd.grad(F.bilinear(args[0], args[2], args[1], args[3]).tanh(), args, dy)
    assert be.unlowered_ops == {} and all(not r.errors for r in be.graphs), be.summary()
    tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-2, torch.bfloat16: 1e-1}[dtype]
    for a, w in zip(got, want):
        torch.testing.assert_close(a, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("attrs, shapes", _CASES)
def test_the_trilinear_kernel_is_the_reference(attrs: dict[str, Any], shapes: list[tuple[int, ...]]) -> None:
    from egraph_lower.torch import kernels

    g = torch.Generator().manual_seed(4)
    ts = [torch.randn(s, dtype=torch.float64, generator=g) for s in shapes]
    np.testing.assert_allclose(kernels.trilinear(*ts, **attrs).numpy(),
                               apply("Trilinear", attrs, [t.numpy() for t in ts], "f64"), rtol=1e-13, atol=1e-13)


def test_a_trilinear_call_that_broadcasts_is_left_in_pytorch() -> None:
    """aten's kernel is not the broadcast product there (case 6: unroll_dim 1 on a summed axis where i3
    has size 1), so the importer must not claim it: eager's value, the op reported unlowered."""
    from egraph_lower.torch import backend as make_backend

    attrs, shapes = _CASES[6]
    torch._dynamo.reset()
    be = make_backend("metal")
    call = lambda a, b, c: torch.ops.aten._trilinear(a, b, c, *(attrs[k] for k in  # noqa: E731
                                                               ("expand1", "expand2", "expand3", "sumdim")))
    g = torch.Generator().manual_seed(6)
    ts = [torch.randn(s, generator=g) for s in shapes]
    got = torch.compile(call, backend=be, dynamic=False)(*ts)
    torch.testing.assert_close(got, call(*ts))
    assert "aten._trilinear.default" in be.unlowered_ops, be.summary()
