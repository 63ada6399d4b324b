"""Embedding bags (aten's `_embedding_bag` and its backward ops), format version 3.

indices [N] pick rows of weight [W, D]; offsets [K] cut them into B bags (B = K, or K - 1 with
`include_last_offset`, whose last offset is then not read): position i is in bag
bag(i) = #{b < B : offsets[b] <= i} - 1, so that for offsets that start at 0 and do not decrease
(as aten requires) bag b holds offsets[b] <= i < offsets[b + 1] (the last bag: up to N); -1 is
no bag. Positions whose index is `padding_idx` (-1: none) count in no bag.

    EmbeddingBag{mode, padding_idx, include_last_offset}(weight, indices, offsets, per_sample_weights)
        [B, D]: per bag the sum (mode sum, each row times its per_sample_weights entry), the mean or the
        elementwise max of its rows; 0 for a bag without rows. per_sample_weights [N] is read in mode sum
        only (mean and max: for its shape; aten takes none there and the importer gives ones)
    EmbeddingBagOffset2Bag{include_last_offset}(indices, offsets)          [N] i64: the bag of each position
    EmbeddingBagSize{padding_idx, include_last_offset}(indices, offsets)   [B] i64: the rows counted per bag
    EmbeddingBagMaxIndices{padding_idx, include_last_offset}(weight, indices, offsets)
        [B, D] i64: the row of the max (the first position with it); 0 for a bag without rows
    EmbeddingBagBackward{mode, num_weights, padding_idx, include_last_offset}(dy, indices, offsets,
        per_sample_weights)  [num_weights, D], modes sum and mean: row w = sum over the counted positions
        i with index w of dy[bag(i)] times per_sample_weights[i] (sum) or 1 / the bag's count (mean)
    EmbeddingBagMaxBackward{num_weights}(dy, max_indices, bag_size)
        [num_weights, D]: dy[b, d] added at row max_indices[b, d] where bag_size[b] > 0
    EmbeddingBagPerSampleWeightsBackward{padding_idx, include_last_offset}(dy, weight, indices, offsets)
        [N]: dot(dy[bag(i)], weight[indices[i]]), 0 at a padding position

`docs/format.md` ("Embedding bags") is the specification.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import Args, Attrs, _f, _finish, _round_float
from ..dtypes import FLOAT_DTYPES, INT_DTYPES
from .base import F64, I64, INPUTS, STRING, WHOLE, Attr, Ctor, Field, Meta, OpDef, head, ints_text
from .index import _EMBEDDING_BWD_FIELDS
from .index import indices as checked_indices
from .meta import attr_check, boolean, is_int, one_of, show, show_shape

MODES = ("sum", "mean", "max")
_MODE = Attr("mode", one_of(MODES, "EmbeddingBag mode"))
_BWD_MODE = Attr("mode", one_of(("sum", "mean"), "EmbeddingBagBackward mode"))
_PADDING = Attr("padding_idx", attr_check("padding_idx", lambda v: is_int(v) and v >= -1, "an integer >= -1"))
_LAST = Attr("include_last_offset", boolean("include_last_offset"))
_NUM_WEIGHTS = Attr("num_weights", attr_check("num_weights", lambda v: is_int(v) and v > 0, "an integer > 0"))


# ---- infer -----------------------------------------------------------------------------------------

def _int(meta: Meta, what: str, rank: int) -> tuple[int, ...]:
    shape, dt = meta
    if dt is not None and dt not in INT_DTYPES:
        raise ValueError(f"{what} must have an integer dtype, got {dt}")
    if len(shape) != rank:
        raise ValueError(f"{what} must have rank {rank}, got {show_shape(shape)}")
    return shape


def _bags(attrs: Mapping[str, Any], ins: Sequence[Meta], at: int) -> tuple[int, int]:
    """(N, B) of indices ins[at] and offsets ins[at + 1]."""
    (n,), (k,) = _int(ins[at], "indices", 1), _int(ins[at + 1], "offsets", 1)
    b = k - int(bool(attrs["include_last_offset"]))
    if b < 1:
        raise ValueError(f"offsets of {k} entries hold no bag")
    return n, b


def _weight(meta: Meta, what: str = "weight") -> tuple[int, int]:
    shape, dt = meta
    if len(shape) != 2:
        raise ValueError(f"{what} must have rank 2, got {show_shape(shape)}")
    if dt is not None and dt not in FLOAT_DTYPES:
        raise ValueError(f"{what} must have a float dtype, got {dt}")
    return shape[0], shape[1]


def _pad_in(attrs: Mapping[str, Any], w: int) -> None:
    if attrs["padding_idx"] >= w:
        raise ValueError(f"padding_idx {show(attrs['padding_idx'])} is not -1 or in [0, {w})")


def _same_float(a: Meta, b: Meta, what: str) -> None:
    if a[1] is not None and b[1] is not None and a[1] != b[1]:
        raise ValueError(f"{what} is {b[1]} but the values are {a[1]} (they must be equal)")


def _embedding_bag(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    w, d = _weight(ins[0])
    n, b = _bags(attrs, ins, 1)
    _pad_in(attrs, w)
    if ins[3][0] != (n,):
        raise ValueError(f"per_sample_weights has shape {show_shape(ins[3][0])}, not indices' [{n}]")
    _same_float(ins[0], ins[3], "per_sample_weights")
    return (b, d), ins[0][1]


def _offset2bag(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    n, _ = _bags(attrs, ins, 0)
    return (n,), "i64"


def _bag_size(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    _, b = _bags(attrs, ins, 0)
    return (b,), "i64"


def _max_indices(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    w, d = _weight(ins[0])
    _, b = _bags(attrs, ins, 1)
    _pad_in(attrs, w)
    return (b, d), "i64"


def _backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    b0, d = _weight(ins[0], "dy")
    n, b = _bags(attrs, ins, 1)
    if b0 != b:
        raise ValueError(f"dy has {b0} bags but offsets hold {b}")
    _pad_in(attrs, attrs["num_weights"])
    if ins[3][0] != (n,):
        raise ValueError(f"per_sample_weights has shape {show_shape(ins[3][0])}, not indices' [{n}]")
    _same_float(ins[0], ins[3], "per_sample_weights")
    return (attrs["num_weights"], d), ins[0][1]


def _max_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    b, d = _weight(ins[0], "dy")
    if _int(ins[1], "max_indices", 2) != (b, d):
        raise ValueError(f"max_indices has shape {show_shape(ins[1][0])}, not dy's [{b}, {d}]")
    if _int(ins[2], "bag_size", 1) != (b,):
        raise ValueError(f"bag_size has shape {show_shape(ins[2][0])}, not [{b}]")
    return (attrs["num_weights"], d), ins[0][1]


def _psw_backward(attrs: Mapping[str, Any], ins: Sequence[Meta]) -> Meta:
    b0, d = _weight(ins[0], "dy")
    w, d1 = _weight(ins[1])
    n, b = _bags(attrs, ins, 2)
    if (b0, d) != (b, d1):
        raise ValueError(f"dy has shape {show_shape(ins[0][0])}, not [{b}, {d1}] (bags, weight's D)")
    _pad_in(attrs, w)
    _same_float(ins[0], ins[1], "weight")
    return (n,), ins[0][1]


# ---- evaluate --------------------------------------------------------------------------------------

def _layout(attrs: Attrs, idx: Any, off: Any, w: int, op: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indices, the bag of each position, whether each position counts): bag(i) is the number of bag
    starts <= i, less 1 (-1: before the first start, in no bag)."""
    i = checked_indices(idx, w, op)
    o = np.asarray(off).astype(np.int64)
    starts = o[:len(o) - int(bool(attrs["include_last_offset"]))]
    bag = np.sum(starts[:, None] <= np.arange(len(i))[None, :], axis=0).astype(np.int64) - 1
    return i, bag, (i != int(attrs["padding_idx"])) & (bag >= 0)


def _counts(bag: np.ndarray, keep: np.ndarray, b: int) -> np.ndarray:
    return np.bincount(bag[keep], minlength=b).astype(np.int64)


def _op_embedding_bag(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    w = _f(args[0])
    i, bag, keep = _layout(attrs, args[1], args[2], w.shape[0], "EmbeddingBag")
    b = len(np.asarray(args[2])) - int(bool(attrs["include_last_offset"]))
    rows = w[i]
    out = np.zeros((b, w.shape[1]))
    mode = attrs["mode"]
    if mode == "max":
        for k in range(b):
            sel = rows[(bag == k) & keep]
            if len(sel):
                out[k] = sel.max(axis=0)
        return _round_float(out, dtype)
    scale = _f(args[3]) if mode == "sum" else np.ones(len(i))
    np.add.at(out, bag[keep], rows[keep] * scale[keep, None])
    if mode == "mean":
        out /= np.maximum(_counts(bag, keep, b), 1)[:, None]
    return _round_float(out, dtype)


def _op_offset2bag(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    idx = np.asarray(args[0]).astype(np.int64)
    _, bag, _ = _layout({**attrs, "padding_idx": -1}, args[0], args[1], int(idx.max(initial=0)) + 1,
                        "EmbeddingBagOffset2Bag")
    return _finish(bag, dtype)


def _op_bag_size(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    idx = np.asarray(args[0]).astype(np.int64)
    w = max(int(idx.max(initial=0)), int(attrs["padding_idx"])) + 1
    _, bag, keep = _layout(attrs, args[0], args[1], w, "EmbeddingBagSize")
    return _finish(_counts(bag, keep, len(np.asarray(args[1])) - int(bool(attrs["include_last_offset"]))), dtype)


def _op_max_indices(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    w = _f(args[0])
    i, bag, keep = _layout(attrs, args[1], args[2], w.shape[0], "EmbeddingBagMaxIndices")
    b = len(np.asarray(args[2])) - int(bool(attrs["include_last_offset"]))
    out = np.zeros((b, w.shape[1]), dtype=np.int64)
    for k in range(b):
        pos = np.flatnonzero((bag == k) & keep)
        if len(pos):
            out[k] = i[pos[np.argmax(w[i[pos]], axis=0)]]  # argmax: the first position with the max
    return _finish(out, dtype)


def _op_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy, nw = _f(args[0]), int(attrs["num_weights"])
    i, bag, keep = _layout(attrs, args[1], args[2], nw, "EmbeddingBagBackward")
    if attrs["mode"] == "sum":
        scale = _f(args[3])
    else:
        scale = 1.0 / np.maximum(_counts(bag, keep, dy.shape[0]), 1)[bag]
    out = np.zeros((nw, dy.shape[1]))
    np.add.at(out, i[keep], dy[bag[keep]] * scale[keep, None])
    return _round_float(out, dtype)


def _op_max_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy, nw = _f(args[0]), int(attrs["num_weights"])
    mi = checked_indices(args[1], nw, "EmbeddingBagMaxBackward")
    full = np.asarray(args[2]).astype(np.int64) > 0
    out = np.zeros((nw, dy.shape[1]))
    cols = np.broadcast_to(np.arange(dy.shape[1]), dy.shape)
    np.add.at(out, (mi[full], cols[full]), dy[full])
    return _round_float(out, dtype)


def _op_psw_backward(attrs: Attrs, args: Args, dtype: str, shape: Sequence[int] | None) -> np.ndarray:
    dy, w = _f(args[0]), _f(args[1])
    i, bag, keep = _layout(attrs, args[2], args[3], w.shape[0], "EmbeddingBagPerSampleWeightsBackward")
    return _round_float(np.where(keep, np.sum(dy[bag] * w[i], axis=1), 0.0), dtype)


# ---- fields ----------------------------------------------------------------------------------------

def _geometry(a: Mapping[str, Any], s: Sequence[tuple[int, ...]], at: int, w: int | None) -> dict[str, Any]:
    """The shapes the rules reshape to, for indices s[at] [N], offsets s[at + 1] and D the last axis of s[0]:
    row [1, N], col [B, 1], bn1 [B, N, 1], n1d [1, N, D], n11 [1, N, 1], b1d [B, 1, D], b11 [B, 1, 1],
    ncol [N, 1], nd [N, D], wn [W, N] and wn1 [W, N, 1]; with W, the fields of the EmbeddingBackward of a
    gradient [N, D] at the indices [N] (`e` + its field names: `_EMBEDDING_BWD_FIELDS`)."""
    n, b = s[at][0], s[at + 1][0] - int(bool(a["include_last_offset"]))
    d = s[0][-1]
    out: dict[str, Any] = {"row": [1, n], "col": [b, 1], "bn1": [b, n, 1], "n1d": [1, n, d], "n11": [1, n, 1],
                           "b1d": [b, 1, d], "b11": [b, 1, 1], "ncol": [n, 1], "nd": [n, d]}
    if w is not None:
        out.update(wn=[w, n], wn1=[w, n, 1])
        attrs = {"num_weights": w, "padding_idx": int(a["padding_idx"])}
        for f in _EMBEDDING_BWD_FIELDS[2:]:  # after num_weights and padding_idx, which the op has itself
            out["e" + f.name] = f.encode(attrs.get(f.attr), (n, d) if f.shaped else 2)
    return out


def _fields(at: int, names: tuple[str, ...], weights: bool = False) -> tuple[Field, ...]:
    """The e-node's fields beyond the attributes: B (the end of the Slice of offsets the bags start at), N
    as an f64 (a literal of the rules), then the shapes `names` of `_geometry`."""
    def shape_of(g: str) -> Callable[[Mapping[str, Any], Sequence[tuple[int, ...]]], Any]:
        def encode(a: Mapping[str, Any], s: Sequence[tuple[int, ...]]) -> Any:
            v = _geometry(a, s, at, int(a["num_weights"]) if weights else None)[g]
            return v if isinstance(v, (str, int)) else ints_text(v)
        return encode

    def bags(a: Mapping[str, Any], s: Sequence[tuple[int, ...]]) -> int:
        return s[at + 1][0] - int(bool(a["include_last_offset"]))

    def positions(a: Mapping[str, Any], s: Sequence[tuple[int, ...]]) -> float:
        return float(s[at][0])

    return ((Field("nb", I64, bags, None, source=WHOLE, shaped=INPUTS),
             Field("n", F64, positions, None, source=WHOLE, shaped=INPUTS))
            + tuple(Field(g, I64 if g == "epadded" else STRING, shape_of(g), None, source=WHOLE, shaped=INPUTS)
                    for g in names))


def _pad_field() -> Field:
    return Field("padding_idx", F64, lambda v, s: float(v), int, shaped=INPUTS)


def _last_field() -> Field:
    return Field("include_last_offset", I64, lambda v, s: int(bool(v)), bool, shaped=INPUTS)


def _mode_field() -> Field:
    """The mode upper-cased in the e-graph (the rule notation reads a lower-case field value as a variable)."""
    return Field("mode", STRING, lambda v, s: str(v).upper(), lambda v: str(v).lower(), shaped=INPUTS)


def _mode_heads(name: str, modes: Sequence[str]) -> tuple[Any, ...]:
    return (head(name),) + tuple(head(f"{name}.{m}", mode=m.upper()) for m in modes)


_EMBEDDING_BWD_NAMES = tuple("e" + f.name for f in _EMBEDDING_BWD_FIELDS[2:])
_BAG_SHAPES = ("row", "col", "bn1", "n1d", "n11", "ncol", "nd")
_BAG_FIELDS = (_mode_field(), _pad_field(), _last_field()) + _fields(1, _BAG_SHAPES)
_O2B_FIELDS = (_last_field(),) + _fields(0, ("row", "col"))
_SIZE_FIELDS = (_pad_field(), _last_field()) + _fields(0, ("row", "col"))
_MAXI_FIELDS = (_pad_field(), _last_field()) + _fields(1, ("row", "col", "bn1", "n1d", "n11"))
_BWD_SHAPES = ("row", "col", "bn1", "n1d", "n11", "b1d", "b11", "ncol", "nd", "wn", "wn1") + _EMBEDDING_BWD_NAMES
_BWD_FIELDS = ((_mode_field(), Field("num_weights", I64, lambda v, s: int(v), int, shaped=INPUTS), _pad_field(),
                _last_field()) + _fields(1, _BWD_SHAPES, weights=True))
_MAX_BWD_FIELDS = (Field("num_weights", I64, lambda v, s: int(v), int, shaped=INPUTS),
                   Field("w11", STRING, lambda v, s: ints_text([v, 1, 1]), None, source="num_weights", shaped=INPUTS),
                   Field("col", STRING, lambda v, s: ints_text([s[0][0], 1]), None, source="num_weights",
                         shaped=INPUTS))
_PSW_FIELDS = (_pad_field(), _last_field()) + _fields(2, ("row", "col", "bn1", "n1d", "b1d", "ncol", "nd"))

_BAG_SAMPLE = (((5, 3), "f32"), ((6,), "i64"), ((3,), "i64"), ((6,), "f32"))

OPS: tuple[OpDef, ...] = (
    OpDef("EmbeddingBag", ("weight", "indices", "offsets", "per_sample_weights"), (_MODE, _PADDING, _LAST),
          _embedding_bag, _op_embedding_bag,
          (Ctor("EmbeddingBag", "EmbeddingBag", _BAG_FIELDS, 4, _mode_heads("EmbeddingBag", MODES)),),
          domain="bag", torch="embedding_bag",
          sample=({"mode": "mean", "padding_idx": 2, "include_last_offset": False}, _BAG_SAMPLE)),
    OpDef("EmbeddingBagOffset2Bag", ("indices", "offsets"), (_LAST,), _offset2bag, _op_offset2bag,
          (Ctor("EmbeddingBagOffset2Bag", "EmbeddingBagOffset2Bag", _O2B_FIELDS, 2,
                (head("EmbeddingBagOffset2Bag"),)),),
          domain="bag", torch="embedding_bag_offset2bag",
          sample=({"include_last_offset": True}, (((6,), "i64"), ((3,), "i64")))),
    OpDef("EmbeddingBagSize", ("indices", "offsets"), (_PADDING, _LAST), _bag_size, _op_bag_size,
          (Ctor("EmbeddingBagSize", "EmbeddingBagSize", _SIZE_FIELDS, 2, (head("EmbeddingBagSize"),)),),
          domain="bag", torch="embedding_bag_size",
          sample=({"padding_idx": 1, "include_last_offset": False}, (((6,), "i64"), ((3,), "i64")))),
    OpDef("EmbeddingBagMaxIndices", ("weight", "indices", "offsets"), (_PADDING, _LAST), _max_indices,
          _op_max_indices,
          (Ctor("EmbeddingBagMaxIndices", "EmbeddingBagMaxIndices", _MAXI_FIELDS, 3,
                (head("EmbeddingBagMaxIndices"),)),),
          domain="bag", torch="embedding_bag_max_indices",
          sample=({"padding_idx": -1, "include_last_offset": False}, _BAG_SAMPLE[:3])),
    OpDef("EmbeddingBagBackward", ("dy", "indices", "offsets", "per_sample_weights"),
          (_BWD_MODE, _NUM_WEIGHTS, _PADDING, _LAST), _backward, _op_backward,
          (Ctor("EmbeddingBagBwd", "EmbeddingBagBackward", _BWD_FIELDS, 4,
                _mode_heads("EmbeddingBagBackward", ("sum", "mean"))),),
          domain="bag", torch="embedding_bag_backward", backward=True,
          sample=({"mode": "sum", "num_weights": 5, "padding_idx": 1, "include_last_offset": True},
                  (((2, 3), "f32"), ((6,), "i64"), ((3,), "i64"), ((6,), "f32")))),
    OpDef("EmbeddingBagMaxBackward", ("dy", "max_indices", "bag_size"), (_NUM_WEIGHTS,), _max_backward,
          _op_max_backward,
          (Ctor("EmbeddingBagMaxBwd", "EmbeddingBagMaxBackward", _MAX_BWD_FIELDS, 3,
                (head("EmbeddingBagMaxBackward"),)),),
          domain="bag", torch="embedding_bag_max_backward", backward=True,
          sample=({"num_weights": 5}, (((3, 2), "f32"), ((3, 2), "i64"), ((3,), "i64")))),
    OpDef("EmbeddingBagPerSampleWeightsBackward", ("dy", "weight", "indices", "offsets"), (_PADDING, _LAST),
          _psw_backward, _op_psw_backward,
          (Ctor("EmbeddingBagPswBwd", "EmbeddingBagPerSampleWeightsBackward", _PSW_FIELDS, 4,
                (head("EmbeddingBagPswBackward"),)),),
          domain="bag", torch="embedding_bag_psw_backward", backward=True,
          sample=({"padding_idx": 2, "include_last_offset": False},
                  (((3, 3), "f32"), ((5, 3), "f32"), ((6,), "i64"), ((3,), "i64")))),
)
