"""The saturated e-graph as columns, read from egglog's frozen rows.

No terms are built and nothing recurses. Every e-node is a row: its signature
(constructor and primitive fields, interned: `sigs[sig[n]]`), its child e-classes
(`kids_array[n]`, -1 past its arity) and its e-class (`eclass_array[n]`), all NumPy
arrays, so a million e-nodes cost a few bytes each rather than Python objects.
E-classes keep egglog's own integer ids (dense enough to index arrays directly).
`ctor`, `fields`, `children` and `eclass` give the same rows as Python lists, made
when first asked for, for the passes that walk a few e-nodes at a time.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from operator import attrgetter, eq
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from .engine import bindings

from ..opdefs.kernel import MAX_KERNEL_INPUTS
from .language import CTORS, LEAF, REF, SCALAR

_FIELDS = {LEAF: 1, SCALAR: 1, **{name: len(c.fields) for name, c in CTORS.items()}}
MAX_ARITY = max(max(c.arity for c in CTORS.values()), MAX_KERNEL_INPUTS)
_OUTPUT, _INPUTS = attrgetter("output"), attrgetter("inputs")


def distinct_kids(kids: np.ndarray) -> np.ndarray:
    """Rows of child classes with a class repeated in a row counted once (-1 for the repeats)."""
    out = np.sort(kids, axis=1)
    out[:, 1:][out[:, 1:] == out[:, :-1]] = -1
    return out


# Below this many keys sorting them all is as fast as hashing (NumPy 2.4, 2 to 1000 copies of each
# key), and spares the 13 ms import of `numpy.ma` that `np.unique` makes unless asked for indices:
# a lowering of a small graph (the torch backend's) never imports it.
SORT_KEYS = 1 << 16


def group(key: np.ndarray, span: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values of the ints `key`, and for each key its index among them.
    Keys known to lie in [0, span), with span not far above their number, are grouped through
    a table of `span` flags (one pass, no sort). Up to `SORT_KEYS` others by sorting them all;
    more, by hashing out the distinct values (NumPy 2.3 on) and a binary search, which beats
    sorting every key when, as with the fields of a big graph's e-nodes, few are distinct."""
    if span is not None and span <= 4 * len(key) + 4096:
        present = np.zeros(span, dtype=bool)
        present[key] = True
        return np.flatnonzero(present), (np.cumsum(present) - 1)[key]
    if len(key) <= SORT_KEYS:
        distinct, inverse = np.unique(key, return_inverse=True)
        return distinct, inverse
    try:
        distinct = np.sort(np.unique(key, sorted=False))
    except TypeError:  # NumPy before 2.3
        distinct = np.unique(key)
    return distinct, np.searchsorted(distinct, key)


def representatives(inverse: np.ndarray, n_groups: int) -> np.ndarray:
    """An index of one member of each group, given each member's group."""
    out = np.empty(n_groups, dtype=np.int64)
    out[inverse] = np.arange(len(inverse))
    return out


def _ints(values: np.ndarray) -> array[int]:
    """A row view's machine ints: 32-bit (e-node and class ids, and offsets into rows of
    them, stay far below 2**31), half the memory of 64-bit at 12M e-nodes."""
    assert not len(values) or int(values.max()) < 2**31
    return array("i", values.astype(np.int32).tobytes())


class _Rows(Sequence[Any]):
    """A read-only column computed per row from compact arrays."""

    def __init__(self, get: Callable[[int], Any], n: int) -> None:
        self._get, self._n = get, n

    def __getitem__(self, n: int) -> Any:  # type: ignore[override]
        return self._get(n)

    def __len__(self) -> int:
        return self._n


class Members:
    """E-nodes by class, as one list sorted by class: `members[c]` is a slice of it,
    made when asked for, so a million mostly one-node classes cost no million lists."""

    def __init__(self, order: np.ndarray, starts: np.ndarray) -> None:
        self.order_array, self.starts_array = order, starts  # for vectorised passes
        self.order, self.starts = _ints(order), _ints(starts)

    def __getitem__(self, c: int) -> Sequence[int]:
        return self.order[self.starts[c]:self.starts[c + 1]]

    def __len__(self) -> int:
        return len(self.starts) - 1

    def size(self, c: int) -> int:
        return self.starts[c + 1] - self.starts[c]


@dataclass
class Tables:
    sig_array: np.ndarray  # per e-node: index into `sigs`
    sigs: list[tuple[str, tuple[Any, ...]]]  # distinct (constructor, fields)
    kids_array: np.ndarray  # (e-nodes, MAX_ARITY) child classes, -1 past an e-node's arity
    eclass_array: np.ndarray  # per e-node: its e-class
    n_classes: int  # one more than the largest e-class id
    ref: dict[int, int] = field(default_factory=dict)  # original node id -> e-class

    @property
    def n_nodes(self) -> int:
        return len(self.sig_array)

    # Row views, indexed by e-node like lists, for passes that visit a few e-nodes at a time.
    @cached_property
    def sig(self) -> array[int]:
        return _ints(self.sig_array)

    @cached_property
    def ctor(self) -> _Rows:
        sig, sigs = self.sig, self.sigs
        return _Rows(lambda n: sigs[sig[n]][0], self.n_nodes)

    @cached_property
    def fields(self) -> _Rows:
        sig, sigs = self.sig, self.sigs
        return _Rows(lambda n: sigs[sig[n]][1], self.n_nodes)

    @cached_property
    def children(self) -> _Rows:
        flat, start = self.kid_rows
        return _Rows(lambda n: tuple(flat[start[n]:start[n + 1]]), self.n_nodes)

    @cached_property
    def eclass(self) -> array[int]:
        return _ints(self.eclass_array)

    @cached_property
    def kid_rows(self) -> tuple[array[int], array[int]]:
        """The children as compact rows: e-node n's are `flat[start[n]:start[n + 1]]`
        (machine integers, not a Python object per child: a million e-nodes fit in megabytes)."""
        kids = self.kids_array
        valid = kids >= 0
        start = np.zeros(len(kids) + 1, dtype=np.int64)
        np.cumsum(np.count_nonzero(valid, axis=1), out=start[1:])
        return _ints(kids[valid]), _ints(start)

    def nodes_by_class(self) -> Members:
        """The e-nodes of each class id (empty for ids no class has)."""
        return self._members

    @cached_property
    def _members(self) -> Members:
        order = np.argsort(self.eclass_array, kind="stable")
        starts = np.zeros(self.n_classes + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.eclass_array, minlength=self.n_classes), out=starts[1:])
        return Members(order.astype(np.int64), starts)

    @cached_property
    def live_classes(self) -> int:
        return int(np.count_nonzero(np.bincount(self.eclass_array, minlength=self.n_classes)))


class _Decoder:
    """Primitive values of one e-graph as Python values, each distinct one decoded once."""

    def __init__(self, egraph: bindings.EGraph) -> None:
        self.by_sort = {"i64": egraph.value_to_i64, "f64": egraph.value_to_f64, "String": egraph.value_to_string}

    def codes(self, sort: str, values: list[bindings.Value]) -> tuple[np.ndarray, list[Any]]:
        """Each value's index into the list of distinct decoded values."""
        if sort == "String":  # few distinct strings: group by the values' hashes, decode each group once
            hashes = np.fromiter(map(hash, values), dtype=np.int64, count=len(values))
            distinct_hashes, codes = group(hashes)
            reps = [values[i] for i in representatives(codes, len(distinct_hashes)).tolist()]
            if all(map(eq, values, map(reps.__getitem__, codes.tolist()))):  # exact, not trusting hashes
                return codes, [self.by_sort[sort](v) for v in reps]
        decoded = list(map(self.by_sort[sort], values))
        if sort == "String":  # (two strings with one hash: never seen)
            bits = np.unique(np.array(decoded, dtype=object), return_inverse=True)[1]
        elif sort == "f64":
            bits = np.array(decoded, dtype=np.float64).view(np.int64)
        else:
            bits = np.array(decoded, dtype=np.int64)
        distinct_bits, codes = group(bits)
        return codes, [decoded[i] for i in representatives(codes, len(distinct_bits)).tolist()]


def read(egraph: bindings.EGraph) -> Tables:
    """Every expression e-node of `egraph`, one function (constructor) at a time. Each row's
    values are read in C-level passes (`map` over the rows, one slice of a flat list per
    column): a Python-level loop per row doubled the time at a million-node graph."""
    frozen = egraph.freeze()
    to_i64 = egraph.value_to_i64
    decoder = _Decoder(egraph)
    ref: dict[int, int] = {}
    sig_ids: dict[tuple[str, tuple[Any, ...]], int] = {}
    sig_parts: list[np.ndarray] = []
    kid_parts: list[np.ndarray] = []
    class_parts: list[np.ndarray] = []
    functions = frozen.functions
    del frozen
    for name in list(functions):
        fn = functions.pop(name)  # dropped once read: its rows' memory goes back before the next
        if fn.output_sort != "Expr":
            continue
        rows = fn.rows  # nothing is ever subsumed: the lowering rules only add
        n = len(rows)
        if not n:
            continue
        outs = np.fromiter(map(to_i64, map(_OUTPUT, rows)), dtype=np.int32, count=n)
        width = len(fn.input_sorts)
        flat = list(chain.from_iterable(map(_INPUTS, rows)))  # row-major: column j is flat[j::width]
        del rows
        if name == REF:
            ref.update(zip(map(to_i64, flat), outs.tolist()))
            continue
        k = _FIELDS[name] if name in _FIELDS else len(CTORS[name].fields)  # (a kernel's: made at load)
        # the fields as dense codes: one distinct combination at a time, field by field
        key = np.zeros(n, dtype=np.int64)
        combos: list[tuple[Any, ...]] = [()]
        for j, sort in enumerate(fn.input_sorts[:k]):
            codes, distinct = decoder.codes(sort, flat[j::width])
            joint, key = group(key * len(distinct) + codes, len(combos) * len(distinct))
            combos = [combos[u // len(distinct)] + (distinct[u % len(distinct)],) for u in joint.tolist()]
        to_global = np.array([sig_ids.setdefault((name, f), len(sig_ids)) for f in combos], dtype=np.int64)
        sig_parts.append(to_global[key.ravel()].astype(np.int32))
        kids = np.full((n, MAX_ARITY), -1, dtype=np.int32)
        for j in range(width - k):
            kids[:, j] = np.fromiter(map(to_i64, flat[k + j::width]), dtype=np.int32, count=n)
        kid_parts.append(kids)
        class_parts.append(outs)
        del flat
    eclass = np.concatenate(class_parts) if class_parts else np.empty(0, dtype=np.int32)
    largest = max(int(eclass.max()) if eclass.size else -1, max(ref.values(), default=-1))
    return Tables(
        sig_array=np.concatenate(sig_parts) if sig_parts else np.empty(0, dtype=np.int32),
        sigs=list(sig_ids),
        kids_array=np.concatenate(kid_parts) if kid_parts else np.empty((0, MAX_ARITY), dtype=np.int32),
        eclass_array=eclass,
        n_classes=largest + 1,
        ref=ref,
    )
