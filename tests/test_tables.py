"""Reading the saturated e-graph into columns, checked against a plain row-by-row reading."""

from __future__ import annotations

from collections import Counter
from importlib import resources
from typing import Any

import numpy as np
from egglog import bindings

from egraph_lower import backends, rules
from egraph_lower.egraph import tables
from egraph_lower.egraph.language import REF
from egraph_lower.egraph.load import load
from egraph_lower.egraph.saturate import saturate
from egraph_lower.graph import load_graph


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
    def value_to_string(self, v: _Same) -> str:
        return v.text

    value_to_i64 = value_to_f64 = value_to_string


def test_strings_with_one_hash_are_still_told_apart() -> None:
    decoder = tables._Decoder(_FakeEGraph())  # type: ignore[arg-type]
    values = [_Same("b"), _Same("a"), _Same("b"), _Same("c")]
    codes, distinct = decoder.codes("String", values)  # type: ignore[arg-type]
    assert [distinct[c] for c in codes.tolist()] == ["b", "a", "b", "c"]
    assert sorted(distinct) == ["a", "b", "c"]


def test_float_fields_keep_their_bits() -> None:
    class Floats(_FakeEGraph):
        def value_to_f64(self, v: float) -> float:  # type: ignore[override]
            return v

    codes, distinct = tables._Decoder(Floats()).codes("f64", [0.5, -0.0, 0.5, 1e300])  # type: ignore[arg-type]
    got = [distinct[c] for c in codes.tolist()]
    assert got == [0.5, -0.0, 0.5, 1e300] and np.signbit(got[1])
    assert len(distinct) == 3


def test_group_is_numpys_unique_on_either_path() -> None:
    rng = np.random.default_rng(3)
    dense = rng.integers(0, 50, size=1000)
    sparse = rng.integers(-2**62, 2**62, size=1000)
    sparse[::3] = sparse[0]
    for key, span in ((dense, 50), (dense, None), (sparse, None), (np.empty(0, dtype=np.int64), 8)):
        distinct, inverse = tables.group(key, span)
        want, want_inverse = np.unique(key, return_inverse=True)
        assert np.array_equal(distinct, want) and np.array_equal(inverse, want_inverse.ravel())
        reps = tables.representatives(inverse, len(distinct))
        assert np.array_equal(key[reps], distinct)
