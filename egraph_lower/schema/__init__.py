"""The JSON Schema (draft 2020-12) of the graph format, made from the op declarations.

`schema()` builds it from `opdefs.OPDEFS` (every op, its attributes and their being
required, its arity), `dtypes.DTYPES` and `versions` (the versions, and each released version's
ops, their attributes and its dtypes): nothing is listed here by hand. `python -m egraph_lower.schema`
prints it; the package ships the output as `graph.schema.json`, and
tests/test_schema.py keeps that file equal to `schema()`.

The schema holds the document's structure only. The checks of values (attribute
values and kinds' parameters, shapes agreeing with the inputs', ids defined before
use, a Constant's value fitting its dtype) stay in the validator (`validate.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..dtypes import DTYPES
from ..graph import FORMAT
from ..opdefs import OPDEFS
from ..versions import FROZEN, VERSIONS, Frozen

__all__ = ["schema", "text", "PATH"]

PATH = Path(__file__).with_name("graph.schema.json")

_DESCRIPTION = (
    "A document of the egraph-lower graph format (docs/format.md), versions "
    + ", ".join(str(v) for v in VERSIONS)
    + ", generated from the op declarations by `python -m egraph_lower.schema`. It checks the structure: "
    "keys, the op names, each op's attribute names (required ones present) and number of inputs, the dtypes, "
    "and that a document of an earlier version uses only that version's ops, attributes and dtypes. The "
    "validator (egraph_lower/validate.py) checks the rest, which a schema cannot express: attribute values "
    "(activation kinds and Binary, Compare and Reduce ops, among them that a document of an earlier version "
    "uses only that version's, and the kinds' parameters), shapes and dtypes agreeing with the inputs', "
    "ids unique and defined before use, Input/Param names fed consistently, and a Constant's value fitting its "
    "shape and dtype."
)


def _ints(minimum: int | None = 0) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "integer"}
    if minimum is not None:
        item["minimum"] = minimum
    return {"type": "array", "items": item}


def _when_op(op: str, then: dict[str, Any]) -> dict[str, Any]:
    return {"if": {"properties": {"op": {"const": op}}, "required": ["op"]}, "then": then}


def _op_rule(name: str) -> dict[str, Any]:
    """A node of op `name`: its attribute names (the required ones present) and its number of inputs."""
    d = OPDEFS[name]
    attrs: dict[str, Any] = {"type": "object", "properties": {a.name: {} for a in d.attrs},
                             "additionalProperties": False}
    required = [a.name for a in d.attrs if a.required]
    then: dict[str, Any] = {"properties": {"attrs": attrs, "inputs": {"minItems": 1 if d.max_inputs else d.arity,
                                                                                "maxItems": d.max_inputs or d.arity}}}
    if required:
        attrs["required"] = required
        then["required"] = ["attrs"]
    return _when_op(name, then)


def _frozen_node(frozen: Frozen) -> dict[str, Any]:
    """A node of a document of a released version: that version's ops, each with its attributes only,
    and its dtypes."""
    return {
        "properties": {"op": {"enum": list(frozen.ops)}, "dtype": {"enum": sorted(frozen.dtypes)}},
        "allOf": [_when_op(op, {"properties": {"attrs": {"properties": {a: {} for a in sorted(takes)},
                                                         "additionalProperties": False}}})
                  for op, takes in frozen.ops.items()],
    }


def schema() -> dict[str, Any]:
    """The JSON Schema of a graph document (draft 2020-12)."""
    node = {
        "type": "object",
        "description": "One node; `attrs` may be omitted when the op requires none.",
        "properties": {
            "id": {"type": "integer", "minimum": 0},
            "op": {"enum": list(OPDEFS)},
            "attrs": {"type": "object"},
            "inputs": _ints(),
            "shape": _ints(),
            "dtype": {"enum": list(DTYPES)},
            "name": {"type": "string"},
        },
        "required": ["id", "op", "inputs", "shape", "dtype"],
        "additionalProperties": False,
        "allOf": [_op_rule(name) for name in OPDEFS],
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "egraph-lower graph document",
        "description": _DESCRIPTION,
        "type": "object",
        "properties": {
            "format": {"const": FORMAT},
            "version": {"enum": list(VERSIONS)},
            "name": {"type": "string"},
            "sizes": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0},
                      "description": "A graph specialised from one with symbolic sizes: each size's name and "
                                     "the value it was specialised to (optional, any version)."},
            "nodes": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            "outputs": _ints(),
        },
        "required": ["format", "version", "nodes", "outputs"],
        "additionalProperties": False,
        "allOf": [{"if": {"properties": {"version": {"const": f.number}}, "required": ["version"]},
                   "then": {"properties": {"nodes": {"items": {"$ref": f"#/$defs/v{f.number}_node"}}}}}
                  for f in FROZEN],
        "$defs": {"node": node, **{f"v{f.number}_node": _frozen_node(f) for f in FROZEN}},
    }


def text() -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"
