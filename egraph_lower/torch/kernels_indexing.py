"""The indexing ops (opdefs/indexing.py) as PyTorch functions: aten's own `flip`, `index` and
`index_put` (negative indices count from the end there too), indices taken as int64. index_put and
scatter_reduce compute f16/bf16 in float32 and round once (`in_float32`: torch's half kernels round each
accumulated value, and a scatter mean's sum before dividing it)."""

from __future__ import annotations

from torch import Tensor
import torch

from .kernels_half import in_float32


def flip(x: Tensor, axis: int) -> Tensor:
    return torch.flip(x, [axis % x.dim()])


def _indices(x: Tensor, axis: int, idx: tuple[Tensor, ...]) -> list[Tensor | None]:
    return [None] * (axis % x.dim()) + [i.long() for i in idx]


def _index(x: Tensor, axis: int, *idx: Tensor) -> Tensor:
    return torch.ops.aten.index.Tensor(x, _indices(x, axis, idx))


def index(x: Tensor, index: Tensor, axis: int) -> Tensor:
    return _index(x, axis, index)


def index2(x: Tensor, i0: Tensor, i1: Tensor, axis: int) -> Tensor:
    return _index(x, axis, i0, i1)


def index3(x: Tensor, i0: Tensor, i1: Tensor, i2: Tensor, axis: int) -> Tensor:
    return _index(x, axis, i0, i1, i2)


def _put(x: Tensor, idx: tuple[Tensor, ...], values: Tensor, axis: int, accumulate: bool) -> Tensor:
    return _put_same(x, values.to(x.dtype), axis, bool(accumulate), *idx)


@in_float32
def _put_same(x: Tensor, values: Tensor, axis: int, accumulate: bool, *idx: Tensor) -> Tensor:
    return torch.ops.aten.index_put.default(x, _indices(x, axis, idx), values, accumulate)


def index_put(x: Tensor, index: Tensor, values: Tensor, axis: int, accumulate: bool) -> Tensor:
    return _put(x, (index,), values, axis, accumulate)


def index_put2(x: Tensor, i0: Tensor, i1: Tensor, values: Tensor, axis: int, accumulate: bool) -> Tensor:
    return _put(x, (i0, i1), values, axis, accumulate)


def index_put3(x: Tensor, i0: Tensor, i1: Tensor, i2: Tensor, values: Tensor, axis: int, accumulate: bool) -> Tensor:
    return _put(x, (i0, i1, i2), values, axis, accumulate)


def scatter(x: Tensor, index: Tensor, src: Tensor, axis: int) -> Tensor:
    return torch.scatter(x, axis, index.long(), src.to(x.dtype))


def scatter_reduce(x: Tensor, index: Tensor, src: Tensor, axis: int, reduce: str, include_self: bool) -> Tensor:
    return _scatter_reduce(x, index, src.to(x.dtype), axis, reduce, bool(include_self))


@in_float32
def _scatter_reduce(x: Tensor, index: Tensor, src: Tensor, axis: int, reduce: str, include_self: bool) -> Tensor:
    return torch.scatter_reduce(x, axis, index.long(), src, reduce, include_self=include_self)
