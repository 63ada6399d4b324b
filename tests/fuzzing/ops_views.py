"""Shape and view ops: transposes, reshapes, slices, expands, concatenation, reductions, `as_strided`
(which reads the storage as laid out: a value whose strides are not eager's reads other elements)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from .ops import Draw, dim_of, op, rank
from .program import Builder, Val


def _view(b: Builder, v: Val, expr: str, shape: tuple[int, ...], feature: str) -> None:
    """A view of v: it shares v's storage (an in-place op on it writes v, or the input v views)."""
    b.add(expr, shape, grad=v.grad, feature=feature, root=v.root, token=v.token)


@op("transpose", rank(2), view=True)
def _transpose(draw: Draw, b: Builder, v: Val) -> None:
    i, j = dim_of(draw, v), dim_of(draw, v)
    s = list(v.shape)
    s[i], s[j] = s[j], s[i]
    _view(b, v, f"{v.name}.transpose({i}, {j})", tuple(s), "view transpose")


@op("t", rank(2, 2), view=True)
def _t(draw: Draw, b: Builder, v: Val) -> None:
    _view(b, v, f"{v.name}.t()", (v.shape[1], v.shape[0]), "view t()")


@op("permute", rank(3), view=True)
def _permute(draw: Draw, b: Builder, v: Val) -> None:
    perm = draw(st.permutations(range(v.rank)))
    _view(b, v, f"{v.name}.permute({', '.join(map(str, perm))})", tuple(v.shape[p] for p in perm), "view permute")


@op("reshape: merge two dims", rank(2))
def _merge(draw: Draw, b: Builder, v: Val) -> None:
    i = int(draw(st.integers(0, v.rank - 2)))
    s = v.shape[:i] + (v.shape[i] * v.shape[i + 1],) + v.shape[i + 2:]
    method = draw(st.sampled_from(["reshape", "view", "flatten"]))
    expr = f"{v.name}.flatten({i}, {i + 1})" if method == "flatten" else f"{v.name}.{method}{s}"
    b.add(expr, s, grad=v.grad, feature=f"{method} (merge)", root=v.root)


@op("reshape: split a dim", lambda b, v: any(d >= 4 and d % 2 == 0 for d in v.shape))
def _split_dim(draw: Draw, b: Builder, v: Val) -> None:
    i = draw(st.sampled_from([k for k, d in enumerate(v.shape) if d >= 4 and d % 2 == 0]))
    s = v.shape[:i] + (2, v.shape[i] // 2) + v.shape[i + 1:]
    method = draw(st.sampled_from(["reshape", "view"]))
    b.add(f"{v.name}.{method}{s}", s, grad=v.grad, feature=f"{method} (split)", root=v.root)


@op("unsqueeze", rank(0, 3), view=True)
def _unsqueeze(draw: Draw, b: Builder, v: Val) -> None:
    d = int(draw(st.integers(0, v.rank)))
    _view(b, v, f"{v.name}.unsqueeze({d})", v.shape[:d] + (1,) + v.shape[d:], "view unsqueeze")


@op("squeeze", lambda b, v: 1 in v.shape, view=True)
def _squeeze(draw: Draw, b: Builder, v: Val) -> None:
    d = v.shape.index(1)
    _view(b, v, f"{v.name}.squeeze({d})", v.shape[:d] + v.shape[d + 1:], "view squeeze")


@op("expand", lambda b, v: 1 in v.shape)
def _expand(draw: Draw, b: Builder, v: Val) -> None:
    d = v.shape.index(1)
    s = v.shape[:d] + (3,) + v.shape[d + 1:]
    b.add(f"{v.name}.expand{s}", s, grad=v.grad, feature="view expand", root=v.root or v.name)


@op("slice", lambda b, v: v.rank >= 1 and max(v.shape) >= 2, view=True)
def _slice(draw: Draw, b: Builder, v: Val) -> None:
    d = draw(st.sampled_from([k for k, n in enumerate(v.shape) if n >= 2]))
    n = v.shape[d]
    form = draw(st.sampled_from(["narrow", "step", "select", "negative"]))
    lead = ":, " * d
    if form == "narrow":
        start = int(draw(st.integers(0, n - 1)))
        length = int(draw(st.integers(0, n - start)))
        expr, size = f"{v.name}.narrow({d}, {start}, {length})", length
    elif form == "step":
        expr, size = f"{v.name}[{lead}1::2]", len(range(1, n, 2))
    elif form == "negative":
        expr, size = f"{v.name}[{lead}-2:]", 2
    else:
        i = int(draw(st.integers(-n, n - 1)))
        _view(b, v, f"{v.name}[{lead}{i}]", v.shape[:d] + v.shape[d + 1:], "view select")
        return
    _view(b, v, expr, v.shape[:d] + (size,) + v.shape[d + 1:], f"view slice {form}")


@op("split", lambda b, v: v.rank >= 1 and max(v.shape) >= 2, view=True)
def _split(draw: Draw, b: Builder, v: Val) -> None:
    d = draw(st.sampled_from([k for k, n in enumerate(v.shape) if n >= 2]))
    n, k = v.shape[d], int(draw(st.integers(0, 1)))
    sizes = [n // 2, n - n // 2]
    fn = draw(st.sampled_from(["split", "chunk"]))
    expr = f"torch.split({v.name}, {sizes}, {d})[{k}]" if fn == "split" else f"{v.name}.chunk(2, {d})[{k}]"
    size = sizes[k] if fn == "split" else (math.ceil(n / 2) if k == 0 else n - math.ceil(n / 2))
    _view(b, v, expr, v.shape[:d] + (size,) + v.shape[d + 1:], f"view {fn}")


@op("cat", rank(1))
def _cat(draw: Draw, b: Builder, v: Val) -> None:
    d = dim_of(draw, v)
    others = [u for u in b.pool if u.kind == "f" and u is not v and u.rank == v.rank
              and all(a == c for k, (a, c) in enumerate(zip(u.shape, v.shape)) if k != d)]
    u = draw(st.sampled_from(others)) if others and draw(st.booleans()) else None
    second = u.name if u else f"{v.name} * 2.0"
    s = list(v.shape)
    s[d] += u.shape[d] if u else v.shape[d]
    b.add(f"torch.cat([{v.name}, {second}], {d})", tuple(s), grad=v.grad or bool(u and u.grad), feature="cat",
          fresh=True)


@op("contiguous or clone")
def _copy(draw: Draw, b: Builder, v: Val) -> None:
    fn = draw(st.sampled_from(["contiguous", "clone"]))
    b.add(f"{v.name}.{fn}()", v.shape, grad=v.grad, feature=fn, root=v.root if fn == "contiguous" else None,
          fresh=fn == "clone")


@op("as_strided (cut)", lambda b, v: v.rank >= 2 and v.numel > 0)
def _as_strided(draw: Draw, b: Builder, v: Val) -> None:
    """The storage read as a matrix, or as its transpose: meaningful for dense values only (eager
    refuses what falls outside the storage: then the program is not run)."""
    rows, cols = v.shape[0], v.numel // v.shape[0]
    if draw(st.booleans()):
        expr, s = f"{v.name}.as_strided(({rows}, {cols}), ({cols}, 1))", (rows, cols)
    else:
        expr, s = f"{v.name}.as_strided(({cols}, {rows}), (1, {cols}))", (cols, rows)
    b.add(expr, s, grad=v.grad, feature="as_strided (cut)", root=v.root or v.name)


@op("flip, roll or cumsum", rank(1), smooth=True, keep=("aten.flip", "aten.cumsum"))
def _flip(draw: Draw, b: Builder, v: Val) -> None:
    d = dim_of(draw, v)
    expr = draw(st.sampled_from([f"{v.name}.flip({d})", f"{v.name}.roll(1, {d})", f"{v.name}.cumsum({d})"]))
    b.add(expr, v.shape, grad=v.grad, feature=expr.split(".")[1].split("(")[0] + (" (cut)" if ".roll(" in expr else ""))


@op("pad", rank(1), keep=("aten.constant_pad_nd",))
def _pad(draw: Draw, b: Builder, v: Val) -> None:
    lo, hi = int(draw(st.integers(-1, 2))), int(draw(st.integers(0, 2)))
    if v.shape[-1] + lo + hi < 0 or (lo < 0 and v.shape[-1] < 1):
        return
    value = draw(st.sampled_from([0.0, 1.5]))
    s = v.shape[:-1] + (v.shape[-1] + lo + hi,)
    b.add(f"F.pad({v.name}, ({lo}, {hi}), value={value})", s, grad=v.grad,
          feature="pad (negative: cropping, cut)" if lo < 0 else "pad", fresh=True)


@op("reduce", rank(1), keep=("aten.sum", "aten.mean"))
def _reduce(draw: Draw, b: Builder, v: Val) -> None:
    d = dim_of(draw, v)
    fns = ["sum", "mean"] + ([] if b.half else ["amax"])
    fn, keepdim = draw(st.sampled_from(fns)), draw(st.booleans())
    if fn == "amax" and v.shape[d] == 0:
        return
    s = v.shape[:d] + ((1,) if keepdim else ()) + v.shape[d + 1:]
    b.add(f"{v.name}.{fn}({d}, keepdim={keepdim})", s, grad=v.grad, feature=f"reduce {fn}", fresh=fn != "amax")
