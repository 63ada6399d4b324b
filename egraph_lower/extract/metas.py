"""What extraction knows of each e-class and e-node before choosing: the shape and dtype of
every e-class (`infer_metas`), each distinct signature decoded once (`Decoded`), and the
check that every chosen e-node agrees with its class's shape and dtype (`check_consistent`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..egraph.language import KERNEL, LEAF, SCALAR, decode, plain
from ..egraph.tables import Tables, group, representatives
from ..errors import IllegalGraphError
from ..graph import Graph
from ..validate import Meta, infer

# The field that refines an op for legality and cost: the activation kind, the binary operator.
_KIND_CTORS = ("Act", "ActBwd", "ActBwdOut", "Bin")


class Decoded:
    """(op, attrs, kind) per distinct (constructor, fields): computed once, shared by all e-nodes."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, tuple[Any, ...]], tuple[str, dict[str, Any], str | None]] = {}

    def __call__(self, ctor: str, fields: tuple[Any, ...]) -> tuple[str, dict[str, Any], str | None]:
        key = (ctor, fields)
        hit = self._cache.get(key)
        if hit is None:
            if ctor == LEAF:
                hit = ("Leaf", {}, None)
            elif ctor == SCALAR:
                hit = ("Constant", {"value": fields[0]}, None)
            else:
                op, attrs = decode(ctor, fields)
                # a parametrised kind's constructor implies its kind (attrs); a kernel's is its constructor
                hit = (op, attrs, ctor if op == KERNEL else fields[0] if plain(ctor) in _KIND_CTORS
                       else attrs.get("kind"))
            self._cache[key] = hit
        return hit


class ClassMetas(Sequence[Meta | None]):
    """Shape and dtype per e-class (None where unknown), looked up when asked for: `ids[c]`
    indexes `table` (-1: unknown), so the vectorised passes compare metas as ints."""

    def __init__(self, ids: np.ndarray, table: list[Meta]) -> None:
        self.ids, self.table = ids, table

    def __getitem__(self, c: int) -> Meta | None:  # type: ignore[override]
        i = self.ids[c]
        return None if i < 0 else self.table[i]

    def __len__(self) -> int:
        return len(self.ids)


_MIX_WIDTH = 64  # the widest rows the mix handles


@functools.cache
def _mix() -> np.ndarray:
    """64 odd multipliers, the same on every run (made on first use: numpy.random's import is
    20 ms that a graph whose rows all pack never needs)."""
    rng = np.random.default_rng(2026)
    return rng.integers(1, 2**63, size=_MIX_WIDTH, dtype=np.int64).astype(np.uint64) | np.uint64(1)


_PACKED = 1 << 62  # a packed key stays below this


def distinct_rows(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of int64 columns (1-D, or 2-D for several), and for each row the index of
    its distinct row. The values are small (signatures, meta ids), so a row packs exactly into
    one int64 key (each column offset to 0 and scaled by the ranges before it) and one pass of
    `tables.group` over the keys decides; rows too wide to pack are told apart by a 64-bit mix of
    their values, checked exactly afterwards (a collision, never seen, falls back to comparing
    whole rows)."""
    parts = [np.asarray(c, dtype=np.int64) for c in columns]
    parts = [p if p.ndim == 2 else p[:, None] for p in parts]
    n = len(parts[0])
    key = np.zeros(n, dtype=np.int64)
    span = 1
    for col in (p[:, j] for p in parts for j in range(p.shape[1])):
        lo, hi = (int(col.min()), int(col.max())) if n else (0, 0)
        span *= hi - lo + 1
        if span >= _PACKED:
            return _distinct_mixed(np.column_stack(parts))
        key *= hi - lo + 1
        key += col - lo
    distinct, inverse = group(key, span)
    first = representatives(inverse, len(distinct))  # a row of each key
    return np.column_stack([p[first] for p in parts]), inverse


def _distinct_mixed(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.ascontiguousarray(rows)
    if rows.shape[1] <= _MIX_WIDTH:
        mixed = rows.view(np.uint64) * _mix()[:rows.shape[1]]
        h = mixed.sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        if np.array_equal(rows[first][inverse], rows):
            return rows[first], inverse
    packed = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
    return rows[first], inverse.ravel()


def child_metas(t: Tables, ids: np.ndarray, enodes: np.ndarray) -> np.ndarray:
    """Meta id of the children of `enodes`; -2 past an e-node's arity, -1 where unknown."""
    kids = t.kids_array[enodes]
    return np.where(kids >= 0, ids[kids], -2)


def infer_metas(t: Tables, graph: Graph, decoded: Decoded) -> ClassMetas:
    """Shape and dtype of each e-class; None where no e-node's inputs are known (dead classes).

    Classes of original nodes are known from the graph. The rest are inferred in rounds:
    each round takes the e-nodes of unknown classes whose children are all known, and
    runs the format's `infer` once per distinct (constructor, fields, child metas).
    """
    table: list[Meta] = []
    index: dict[Meta, int] = {}

    def intern(m: Meta) -> int:
        i = index.get(m)
        if i is None:
            i = index[m] = len(table)
            table.append(m)
        return i

    ids = np.full(t.n_classes, -1, dtype=np.int32)  # (int32: the gathers below move half the bytes)
    by_id = graph.by_id
    # the original nodes' own: the first node (in the reference's order) of each class
    node_ids = np.fromiter(t.ref.keys(), dtype=np.int64, count=len(t.ref))
    classes = np.fromiter(t.ref.values(), dtype=np.int64, count=len(t.ref))
    classes, first = np.unique(classes, return_index=True)
    ids[classes] = [intern((n.shape, n.dtype)) for n in map(by_id.__getitem__, node_ids[first].tolist())]
    eclass, sig = t.eclass_array, t.sig_array
    todo = np.flatnonzero(ids[eclass] < 0)  # e-nodes of classes still unknown
    while todo.size:
        kid = child_metas(t, ids, todo)
        ready = (kid != -1).all(axis=1)
        idx, kid = todo[ready], kid[ready]
        if idx.size == 0:
            break
        rows, inverse = distinct_rows(sig[idx], kid)
        result = np.empty(len(rows), dtype=np.int32)
        for j, row in enumerate(rows.tolist()):
            ctor, fields = t.sigs[row[0]]
            if ctor == LEAF:
                node = by_id[fields[0]]
                m: Meta | None = (node.shape, node.dtype)
            elif ctor == SCALAR:
                m = ((), None)
            else:
                op, attrs, _ = decoded(ctor, fields)
                ins = [table[i] for i in row[1:] if i != -2]
                try:
                    m = infer(op, attrs, ins)
                except ValueError:
                    m = None  # inputs that do not fit: not a way to compute this class
            result[j] = -1 if m is None else intern(m)
        got = result[inverse]
        ids[eclass[idx[got >= 0]]] = got[got >= 0]
        todo = todo[~ready]  # the e-nodes tried are done (an unfit one never fits)
        todo = todo[ids[eclass[todo]] < 0]
    return ClassMetas(ids, table)


def check_consistent(t: Tables, metas: ClassMetas, chosen: dict[int, int], decoded: Decoded) -> None:
    """Every chosen e-node infers its class's shape and dtype from its children's: what
    validating the converted graph would check, once per distinct signature. A mismatch
    means an unsound rule merged values of different shapes or dtypes."""
    classes = np.fromiter(chosen.keys(), dtype=np.int64, count=len(chosen))
    enodes = np.fromiter(chosen.values(), dtype=np.int64, count=len(chosen))
    kid = child_metas(t, metas.ids, enodes)
    rows, _ = distinct_rows(t.sig_array[enodes], metas.ids[classes], kid)
    for row in rows.tolist():
        ctor, fields = t.sigs[row[0]]
        if ctor in (LEAF, SCALAR):
            continue
        op, attrs, _ = decoded(ctor, fields)
        want = metas.table[row[1]]
        try:
            got = infer(op, attrs, [metas.table[i] for i in row[2:] if i != -2])
        except ValueError as e:
            got, why = None, str(e)
        if got != want:
            detail = why if got is None else f"gives {got}"
            raise IllegalGraphError(f"an unsound rewrite: {op} {attrs} {detail}, but its e-class is {want}")


