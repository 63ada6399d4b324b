"""Fractional max pooling (format version 3): aten's fractional_max_pool2d / 3d over the last two or
three axes of N, C, [D,] H, W, with the window starts drawn from `samples`.

    FractionalMaxPool{2,3}d{kernel, output_size}(x, samples)         the windows' maxima
    FractionalMaxPool{2,3}dIndices{kernel, output_size}(x, samples)  i64: the flat index of each maximum
                                                                     in its spatial volume (h * W + w, ...)
    FractionalPoolIndex{sample, size, kernel, output}(samples)      i64 [N, C, output, kernel]: the positions
                                                                     the windows read along one axis

`samples` [N, C, nd] is of x's dtype (aten's `random_samples`, drawn by `torch.rand`): sample column
`_COLUMN[nd][a]` gives the windows of spatial axis a (2-D: column 0 for W, 1 for H; 3-D: 0 for D, 1
for H, 2 for W, as aten's CPU kernels read them). Along an axis of L inputs, kernel K and O outputs,
window o starts at

    alpha = t(L - K) / t(O - 1);  start_o = int((o + u) * alpha) - int(u * alpha)  (o < O - 1),  start_{O-1} = L - K

with u the sample and every conversion, + and * rounded to x's dtype t (aten's `generate_intervals<scalar_t>`:
in f16 and bf16 each step computes in float32 and rounds to the dtype, which decides the windows, so a
bf16 x has other windows than its f32 copy). Windows are scanned in row-major order; the first maximum
wins and a NaN wins over numbers (the last NaN: `val > maxVal || isnan(val)`); a window of -inf names its
first position. aten requires O + K - 1 <= L (2-D) and O + K - 1 < L (3-D).

The window arithmetic reads the dtype of `samples` itself (its array's dtype), so these ops are
`ARITHMETIC_IN_DTYPE`: an f16/bf16 node is not loaded as its float32 computation rounded once (the
windows of the float32 samples differ), and the checker's reference takes the samples in their dtype.
The backward is aten's fractional_max_pool{2,3}d_backward: dy added at the indices, which is
`MaxPool{2,3}dBackward` (torch/aten_fractional.py).

`FractionalPoolIndex` reads only the samples: every backend runs it, as it runs InterpolateIndex; the
rules (rules/fractional_pool.py) gather the windows with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _round_float
from ..dtypes import FLOAT_DTYPES, from_numpy, round_float
from .base import F64, I64, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, ints, ints_text
from .meta import attr_check, is_int, is_int_list, show_shape
from .pool import float_input

_COLUMN = {2: (1, 0), 3: (0, 1, 2)}  # the sample column of each spatial axis
_COUNT = {2: "two", 3: "three"}
# the ops whose arithmetic is in their inputs' dtype (egraph/load.py, rules/check.py)
ARITHMETIC_IN_DTYPE: frozenset[str] = frozenset(f"FractionalMaxPool{nd}d{s}" for nd in (2, 3) for s in ("", "Indices"))


def _list(key: str, nd: int) -> Attr:
    def ok(v: Any) -> bool:
        return is_int_list(v) and len(v) == nd and all(d >= 1 for d in v)
    return Attr(key, attr_check(key, ok, f"a list of {_COUNT[nd]} integers >= 1"))


def starts(samples: np.ndarray, size: int, kernel: int, output: int, dtype: str) -> np.ndarray:
    """aten's `generate_intervals<scalar_t>` for each sample (any shape) -> [..., output] (i64), every
    conversion, + and * rounded to `dtype` (f16/bf16: computed in float32 and rounded, as c10's half types)."""
    wide = np.float64 if dtype == "f64" else np.float32

    def t(v: Any) -> np.ndarray:  # a value of dtype, held in `wide`
        return np.asarray(round_float(np.asarray(v, dtype=wide), dtype), dtype=wide)

    u = t(np.asarray(samples, dtype=np.float64))
    out = np.empty(u.shape + (output,), dtype=np.int64)
    if output > 1:
        alpha = t(t(size - kernel) / t(output - 1))
        i = t(np.arange(output - 1))
        a = np.trunc(t(t(i + u[..., None]) * alpha)).astype(np.int64)
        b = np.trunc(t(u * alpha)).astype(np.int64)
        out[..., :output - 1] = a - b[..., None]
    out[..., output - 1] = size - kernel
    return out


def positions(samples: np.ndarray, column: int, size: int, kernel: int, output: int) -> np.ndarray:
    """FractionalPoolIndex: [N, C, output, kernel], start_o + j, from samples [N, C, nd] in their dtype."""
    s = np.asarray(samples)
    first = starts(_f(s)[:, :, column], size, kernel, output, from_numpy(s.dtype))
    return first[..., None] + np.arange(kernel, dtype=np.int64)


def pool(attrs: Mapping[str, Any], x: np.ndarray, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of fractional max pooling x [N, C, *S] (float64) with samples in their dtype."""
    sizes, nd = x.shape[2:], x.ndim - 2
    k, o = attrs["kernel"], attrs["output_size"]
    pos = [positions(samples, _COLUMN[nd][a], sizes[a], k[a], o[a]) for a in range(nd)]  # [N, C, O_a, K_a]
    n, c = x.shape[:2]
    strides = [math.prod(sizes[a + 1:]) for a in range(nd)]
    flat = np.zeros((n, c, *o, *k), dtype=np.int64)
    for a in range(nd):
        view = [n, c] + [1] * (2 * nd)
        view[2 + a], view[2 + nd + a] = o[a], k[a]
        flat = flat + pos[a].reshape(view) * strides[a]
    flat = flat.reshape(n, c, *o, math.prod(k))  # the window's positions in row-major order
    vals = np.take_along_axis(x.reshape(n, c, 1, -1), flat.reshape(n, c, 1, -1), axis=3).reshape(flat.shape)
    best = np.full((n, c, *o), -np.inf)
    idx = flat[..., 0].copy()
    for j in range(flat.shape[-1]):  # aten's scan: val > maxVal || isnan(val)
        v = vals[..., j]
        take = (v > best) | np.isnan(v)
        best = np.where(take, v, best)
        idx = np.where(take, flat[..., j], idx)
    return best, idx


def _infer(nd: int, indices: bool) -> Any:
    def infer(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
        (shape, dt), (sshape, sdt) = ins
        float_input(ins[0], nd)
        if dt is not None and sdt is not None and sdt != dt:
            raise ValueError(f"samples must be of x's dtype {dt}, got {sdt}")
        if tuple(sshape) != (*shape[:2], nd):
            raise ValueError(f"samples has shape {show_shape(sshape)}, expected {show_shape((*shape[:2], nd))}")
        for a, (k, o, size) in enumerate(zip(attrs["kernel"], attrs["output_size"], shape[2:])):
            if o + k - 1 > size or (nd == 3 and o + k - 1 == size):
                raise ValueError(f"output_size {list(attrs['output_size'])} with kernel {list(attrs['kernel'])} is"
                                 f" too large for x {show_shape(shape)} (aten's O + K - 1 {'<' if nd == 3 else '<='} L)")
        return (*shape[:2], *attrs["output_size"]), "i64" if indices else dt
    return infer


def _op_values(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return _round_float(pool(attrs, _f(args[0]), np.asarray(args[1]))[0], dtype)


def _op_indices(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return pool(attrs, _f(args[0]), np.asarray(args[1]))[1]


def _infer_index(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    shape, dt = ins[0]
    if len(shape) != 3 or attrs["sample"] >= shape[2]:
        raise ValueError(f"samples {show_shape(shape)} is not [N, C, nd] with column {attrs['sample']}")
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"samples needs a float dtype, got {dt}")
    if attrs["kernel"] > attrs["size"]:
        raise ValueError(f"kernel {attrs['kernel']} is larger than size {attrs['size']}")
    return (*shape[:2], attrs["output"], attrs["kernel"]), "i64"


def _op_index(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    return positions(np.asarray(args[0]), int(attrs["sample"]), int(attrs["size"]), int(attrs["kernel"]),
                     int(attrs["output"]))


def _whole(name: str, sort: str, fn: Any) -> Field:
    return Field(name, sort, fn, None, source=WHOLE, shaped=True)


def _fields(nd: int) -> tuple[Field, ...]:
    """The rules' fields (rules/fractional_pool.py), from the attributes and x's shape [N, C, *L]: per
    spatial axis a the input length `l{a}`, kernel `k{a}`, output `o{a}`, the flat stride `st{a}`
    (prod L_b, b > a), the Reshape and Expand of its positions for its Gather (`ir{a}`: [N, C, 1.., O_a K_a,
    1..]; `ie{a}`: x's shape with the axes before a and a itself gathered) and for the flat positions
    (`pr{a}`: [N, C, 1.., O_a at a, 1.., K_a at nd + a, 1..]); `win` [N, C, O_0, K_0, O_1, K_1, ..],
    `wins` [N, C, *O, prod K], `pexp` [N, C, *O, *K], `plane` prod L (`st{a}` and `plane` as numbers, for `lit`)."""
    def per_axis(a: int) -> tuple[Field, ...]:
        def gathered(attrs: Mapping[str, Any], shape: Sequence[int], upto: int) -> list[int]:
            k, o = attrs["kernel"], attrs["output_size"]
            return [*shape[:2], *(o[b] * k[b] for b in range(upto + 1)), *shape[2 + upto + 1:]]

        def ir(attrs: Mapping[str, Any], shape: Sequence[int]) -> str:
            out = [*shape[:2]] + [1] * nd
            out[2 + a] = attrs["output_size"][a] * attrs["kernel"][a]
            return ints_text(out)

        def pr(attrs: Mapping[str, Any], shape: Sequence[int]) -> str:
            out = [*shape[:2]] + [1] * (2 * nd)
            out[2 + a], out[2 + nd + a] = attrs["output_size"][a], attrs["kernel"][a]
            return ints_text(out)
        return (_whole(f"l{a}", I64, lambda at, s: int(s[2 + a])),
                _whole(f"k{a}", I64, lambda at, s: int(at["kernel"][a])),
                _whole(f"o{a}", I64, lambda at, s: int(at["output_size"][a])),
                _whole(f"st{a}", F64, lambda at, s: float(math.prod(int(d) for d in s[3 + a:]))),
                _whole(f"ir{a}", STRING, ir),
                _whole(f"ie{a}", STRING, lambda at, s: ints_text(gathered(at, s, a))),
                _whole(f"pr{a}", STRING, pr))

    def win(attrs: Mapping[str, Any], shape: Sequence[int]) -> str:
        return ints_text([*shape[:2], *(v for a in range(nd) for v in (attrs["output_size"][a], attrs["kernel"][a]))])
    return (ints("kernel"), ints("output_size"), *(f for a in range(nd) for f in per_axis(a)),
            _whole("win", STRING, win),
            _whole("wins", STRING, lambda at, s: ints_text([*s[:2], *at["output_size"], math.prod(at["kernel"])])),
            _whole("pexp", STRING, lambda at, s: ints_text([*s[:2], *at["output_size"], *at["kernel"]])),
            _whole("plane", F64, lambda at, s: float(math.prod(int(d) for d in s[2:]))))


_SAMPLE = {2: ({"kernel": [2, 3], "output_size": [3, 2]}, (((2, 3, 5, 6), "f32"), ((2, 3, 2), "f32"))),
           3: ({"kernel": [2, 1, 2], "output_size": [2, 3, 3]}, (((2, 1, 4, 5, 6), "f32"), ((2, 1, 3), "f32")))}


def _ops(nd: int) -> tuple[OpDef, ...]:
    attrs = (_list("kernel", nd), _list("output_size", nd))
    out = []
    for suffix, indices, fn in (("", False, _op_values), ("Indices", True, _op_indices)):
        name = f"FractionalMaxPool{nd}d{suffix}"
        out.append(OpDef(name, ("x", "samples"), attrs, _infer(nd, indices), fn,
                         (Ctor(name, name, _fields(nd), 2, (head(name),)),), domain="fractional",
                         torch=f"fractional_max_pool{nd}d{'_indices' if indices else ''}", sample=_SAMPLE[nd]))
    return tuple(out)


def _int_attr(key: str, low: int) -> Attr:
    return Attr(key, attr_check(key, lambda v: is_int(v) and v >= low, f"an integer >= {low}"))


HELPER = OpDef("FractionalPoolIndex", ("samples",),
               (_int_attr("sample", 0), _int_attr("size", 1), _int_attr("kernel", 1), _int_attr("output", 1)),
               _infer_index, _op_index,
               (Ctor("FractionalPoolIndex", "FractionalPoolIndex",
                     tuple(Field(k, I64, lambda v, r: int(v), int) for k in ("sample", "size", "kernel", "output")), 1,
                     (head("FractionalPoolIndex"),)),),
               domain=None, torch="fractional_pool_index",
               sample=({"sample": 1, "size": 6, "kernel": 2, "output": 4}, (((2, 3, 2), "f32"),)))

OPS: tuple[OpDef, ...] = _ops(2) + _ops(3) + (HELPER,)
