"""The indexing ops (Flip, Index, IndexPut, Scatter, ScatterReduce): the NumPy reference agrees with
aten's kernels in float64 at the awkward points (negative indices, repeated positions, NaN, an empty
index), and the reference refuses what aten refuses."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from egraph_lower.errors import LowerError  # noqa: E402
from egraph_lower.evaluate import apply  # noqa: E402
from egraph_lower.torch import kernels  # noqa: E402

G = torch.Generator().manual_seed(19)


def _x(*shape: int) -> torch.Tensor:
    x = torch.randn(*shape, dtype=torch.float64, generator=G)
    x.view(-1)[::5] = float("nan")
    return x


def _same(op: str, attrs: dict, args: list[torch.Tensor], want: torch.Tensor) -> None:
    got = apply(op, attrs, [a.numpy() for a in args], "f64")
    np.testing.assert_array_equal(got, want.numpy())
    kernel = kernels.KERNELS[op](*args, **attrs)
    np.testing.assert_array_equal(kernel.numpy(), want.numpy())


def test_flip_and_index_read_what_aten_reads() -> None:
    x = _x(4, 5, 3)
    _same("Flip", {"axis": -2}, [x], torch.flip(x, [1]))
    i = torch.tensor([[-1, 0, 4], [-5, 2, 2]])
    _same("Index", {"axis": 1}, [x, i], x[:, i])
    i0, i1 = torch.tensor([[3], [-4]]), torch.tensor([0, -1, 2])
    _same("Index2", {"axis": 0}, [x, i0, i1], x[i0, i1])
    _same("Index3", {"axis": 0}, [x, i0, i1, torch.tensor([-3])], x[i0, i1, torch.tensor([-3])])
    _same("Index", {"axis": 0}, [x, torch.tensor(-2)], x[torch.tensor(-2)])
    with pytest.raises(LowerError, match="out of range"):
        apply("Index", {"axis": 1}, [x.numpy(), np.array([5])], "f64")


@pytest.mark.parametrize("accumulate", [True, False])
def test_index_put_writes_what_aten_writes(accumulate: bool) -> None:
    x, v = _x(4, 5), torch.randn(6, dtype=torch.float64, generator=G)
    i = torch.tensor([1, -4, 3, 1, 0, 1])  # position 1 three times (-4 is 1 too)
    v = v[:, None].expand(6, 5).contiguous()
    _same("IndexPut", {"axis": 0, "accumulate": accumulate}, [x, i, v], torch.index_put(x, (i,), v, accumulate))
    i0, i1 = torch.tensor([[0], [3]]), torch.tensor([1, 1, -1])
    vals = torch.randn(2, 3, dtype=torch.float64, generator=G)
    _same("IndexPut2", {"axis": 0, "accumulate": accumulate}, [x, i0, i1, vals],
          torch.index_put(x, (i0, i1), vals, accumulate))


def test_scatter_keeps_the_last_write_as_aten_cpu() -> None:
    x, src = _x(3, 4), torch.randn(5, 4, dtype=torch.float64, generator=G)
    i = torch.tensor([[0, 1, 2, 0], [2, 1, 0, 0], [0, 1, 1, 2], [1, 1, 1, 1], [0, 0, 0, 0]])
    _same("Scatter", {"axis": 0}, [x, i, src], torch.scatter(x, 0, i, src))


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_reduces_as_aten(reduce: str, include_self: bool) -> None:
    x, src = _x(3, 4), _x(5, 4)
    i = torch.tensor([[0, 1, 2, 0], [2, 1, 0, 0], [0, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 0]])
    want = torch.scatter_reduce(x, 0, i, src, reduce, include_self=include_self)
    attrs = {"axis": 0, "reduce": reduce, "include_self": include_self}
    got = apply("ScatterReduce", attrs, [x.numpy(), i.numpy(), src.numpy()], "f64")
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-15, equal_nan=True)
    xi, si = torch.arange(12).reshape(3, 4), torch.arange(20).reshape(5, 4) * 3 - 7
    want = torch.scatter_reduce(xi, 0, i, si, reduce, include_self=include_self)
    np.testing.assert_array_equal(apply("ScatterReduce", attrs, [xi.numpy(), i.numpy(), si.numpy()], "i64"),
                                  want.numpy())
