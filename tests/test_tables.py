"""Reading the saturated e-graph into columns, checked against a plain row-by-row reading."""

from __future__ import annotations

from collections import Counter
from importlib import resources
from types import SimpleNamespace
from typing import Any

import numpy as np
from egglog import bindings

from egraph_lower import backends, rules
from egraph_lower.egraph import tables
from egraph_lower.egraph.language import REF, SCALAR
from egraph_lower.egraph.load import load
from egraph_lower.egraph.saturate import saturate
from egraph_lower.document import load_graph


def saturated() -> bindings.EGraph:
    path = resources.files("egraph_lower") / "examples" / "mlp_step.json"
    graph = load_graph(str(path))
    egraph = load(graph, rules.select(backends.load("wgpu").missing))  # lowered two levels deep
    saturate(egraph)
    return egraph


def plain_rows(egraph: bindings.EGraph) -> tuple[Counter[Any], dict[int, int]]:
    """(constructor, fields, children, class) of every expression row, one value at a time."""
    decode = {"i64": egraph.value_to_i64, "f64": egraph.value_to_f64, "String": egraph.value_to_string,
              "Expr": egraph.value_to_i64}
    rows: Counter[Any] = Counter()
    ref: dict[int, int] = {}
    for name, fn in egraph.freeze().functions.items():
        if fn.output_sort != "Expr":
            continue
        for r in fn.rows:
            values = [decode[s](v) for s, v in zip(fn.input_sorts, r.inputs)]
            out = egraph.value_to_i64(r.output)
            if name == REF:
                ref[values[0]] = out
                continue
            k = sum(s != "Expr" for s in fn.input_sorts)
            rows[(name, tuple(values[:k]), tuple(values[k:]), out)] += 1
    return rows, ref


def test_read_gives_every_row_as_the_plain_reading_does() -> None:
    egraph = saturated()
    want, want_ref = plain_rows(egraph)
    t = tables.read(egraph)
    got = Counter((t.ctor[n], t.fields[n], t.children[n], t.eclass[n]) for n in range(t.n_nodes))
    assert got == want
    assert t.ref == want_ref
    kinds = {type(f) for _, fields, _, _ in want for f in fields}
    assert {str, float, int} <= kinds  # strings, floats and ints were all read
    assert t.n_classes > max(t.eclass)


class _Same:
    """A value whose hash every other shares (as two strings' hashes could)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.text == self.text


class _FakeEGraph:
    """What `tables.read` uses of an e-graph: frozen rows of one constructor, and value decoding.
    Expression values (children, e-classes) are plain ints."""

    def __init__(self, ctor: str, sorts: tuple[str, ...], rows: list[tuple[list[Any], int]]) -> None:
        fn = SimpleNamespace(output_sort="Expr", input_sorts=sorts,
                             rows=[SimpleNamespace(inputs=inputs, output=out) for inputs, out in rows])
        self.frozen = SimpleNamespace(functions={ctor: fn})

    def freeze(self) -> SimpleNamespace:
        return self.frozen

    def value_to_i64(self, v: int) -> int:
        return v

    def value_to_f64(self, v: float) -> float:
        return v

    def value_to_string(self, v: _Same) -> str:
        return v.text


def test_strings_with_one_hash_are_still_told_apart() -> None:
    rows = [([_Same(text), 0], c) for c, text in enumerate("babc", start=1)]
    t = tables.read(_FakeEGraph("Act", ("String", "Expr"), rows))  # type: ignore[arg-type]
    assert [t.fields[n] for n in range(t.n_nodes)] == [("b",), ("a",), ("b",), ("c",)]
    assert [t.children[n] for n in range(t.n_nodes)] == [(0,)] * 4 and list(t.eclass) == [1, 2, 3, 4]
    assert sorted(fields for _, fields in t.sigs) == [("a",), ("b",), ("c",)]


def test_float_fields_keep_their_bits() -> None:
    rows = [([v], c) for c, v in enumerate([0.5, -0.0, 0.5, 1e300])]
    t = tables.read(_FakeEGraph(SCALAR, ("f64",), rows))  # type: ignore[arg-type]
    got = [t.fields[n][0] for n in range(t.n_nodes)]
    assert got == [0.5, -0.0, 0.5, 1e300] and [bool(np.signbit(v)) for v in got] == [False, True, False, False]
    assert len(t.sigs) == 3


def test_group_is_numpys_unique_on_every_path() -> None:
    rng = np.random.default_rng(3)
    dense = rng.integers(0, 50, size=1000)
    sparse = rng.integers(-2**62, 2**62, size=1000)
    sparse[::3] = sparse[0]
    many = rng.integers(-2**62, 2**62, size=tables.SORT_KEYS + 1)  # hashed, not sorted
    many[::3] = many[1]
    for key, span in ((dense, 50), (dense, None), (sparse, None), (many, None), (np.empty(0, dtype=np.int64), 8)):
        distinct, inverse = tables.group(key, span)
        want, want_inverse = np.unique(key, return_inverse=True)
        assert np.array_equal(distinct, want) and np.array_equal(inverse, want_inverse.ravel())
        reps = tables.representatives(inverse, len(distinct))
        assert np.array_equal(key[reps], distinct)
