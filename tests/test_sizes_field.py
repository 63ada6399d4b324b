"""The optional top-level `sizes` of a document (a graph specialised from one with symbolic sizes)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from jsonschema import ValidationError, validate

import egraph_lower as el
from egraph_lower.errors import GraphError
from egraph_lower.schema import schema

# the graph documents among the examples (metal_kernels.json is a backend file)
EXAMPLES = sorted(p for p in (Path(el.__file__).parent / "examples").glob("*.json") if "nodes" in json.loads(p.read_text()))


def test_sizes_round_trip_validate_and_stay_optional() -> None:
    g = el.load_graph(EXAMPLES[0])
    assert g.sizes is None and "sizes" not in g.to_dict()  # a document without them is as before
    s = dataclasses.replace(g, sizes={"s0": 16, "s1": 0})
    doc = json.loads(s.to_json())
    assert doc == s.to_dict() and doc["sizes"] == {"s0": 16, "s1": 0}
    assert doc["version"] == g.to_dict()["version"]  # any version may carry them
    validate(doc, schema())
    again = el.from_json(s.to_json())
    assert again == s and again.sizes == s.sizes
    assert el.validated(s).sizes == s.sizes


@pytest.mark.parametrize("bad", [[16], {"s0": -1}, {"s0": 1.5}, {"s0": True}, "s0=16"])
def test_malformed_sizes_are_refused_by_the_reader_and_the_schema(bad: object) -> None:
    doc = el.load_graph(EXAMPLES[0]).to_dict()
    doc["sizes"] = bad
    with pytest.raises(GraphError, match="sizes"):
        el.from_json(json.dumps(doc))
    with pytest.raises(ValidationError):
        validate(doc, schema())
