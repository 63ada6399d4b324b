"""The shipped JSON Schema (egraph_lower/schema/graph.schema.json): equal to what the op
declarations give, met by valid documents of both versions, and refusing what the validator
refuses for structural reasons."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from egraph_lower.build import GraphBuilder
from egraph_lower.errors import GraphError
from egraph_lower.graph import Graph
from egraph_lower.opdefs import OPDEFS
from egraph_lower.schema import PATH, schema, text
from egraph_lower.validate import check_document

jsonschema = pytest.importorskip("jsonschema")

EXAMPLE = Path(__file__).resolve().parents[1] / "egraph_lower" / "examples" / "mlp_step.json"


@pytest.fixture(scope="module")
def validator() -> Any:
    jsonschema.Draft202012Validator.check_schema(schema())
    return jsonschema.Draft202012Validator(schema())


def test_the_shipped_file_is_current() -> None:
    assert PATH.read_text() == text(), (
        "egraph_lower/schema/graph.schema.json is stale: regenerate it with "
        "`python -m egraph_lower.schema > egraph_lower/schema/graph.schema.json`")
    assert json.loads(PATH.read_text()) == schema()


def test_every_declared_op_is_in_the_schema() -> None:
    node = schema()["$defs"]["node"]
    assert node["properties"]["op"]["enum"] == list(OPDEFS)
    assert [rule["if"]["properties"]["op"]["const"] for rule in node["allOf"]] == list(OPDEFS)


def v1_graph() -> Graph:
    b = GraphBuilder("v1")
    x, dy = b.input("x", [4, 8]), b.input("dy", [4, 8])
    g, beta = b.param("g", [8]), b.param("beta", [8])
    mean, var = b.param("mean", [8]), b.param("var", [8])
    bn = b.batch_norm(x, g, beta, mean, var)
    y = b.act("Gelu", bn)
    s = b.reduce("Sum", b.binary("Mul", y, b.constant(2.0)), [-1], keep_dim=True)
    dx = b.act_backward("Gelu", x, dy)
    return b.build([s, dx, b.bn_backward_beta(dy)])


def v2_graph() -> Graph:
    b = GraphBuilder("v2")
    x, w, bias = b.input("x", [4, 8]), b.param("w", [8]), b.param("b", [8])
    ln = b.op("LayerNorm", x, w, bias, axis=-1, eps=1e-5)
    sm = b.op("Softmax", b.op("Activation", ln, kind="LeakyRelu", alpha=0.2), axis=-1)
    cat = b.op("Concat", sm, b.op("Slice", x, axis=0, start=0, end=4, step=1), axis=1)
    return b.build([cat, b.op("MseLoss", sm, x, reduction="mean")])


def sample_graph(name: str) -> Graph:
    """One node of op `name` with its declaration's sample attributes, fed by Inputs."""
    attrs, metas = OPDEFS[name].sample  # type: ignore[misc]
    b = GraphBuilder(name)
    inputs = [b.input(f"x{i}", shape, dtype or "f32") for i, (shape, dtype) in enumerate(metas)]
    return b.build([b.op(name, *inputs, **attrs)])


def test_the_example_and_built_graphs_are_valid(validator: Any) -> None:
    docs = [json.loads(EXAMPLE.read_text()), v1_graph().to_dict(), v2_graph().to_dict()]
    assert [d["version"] for d in docs] == [1, 1, 2]
    for doc in docs:
        validator.validate(doc)


@pytest.mark.parametrize("name", [name for name, d in OPDEFS.items() if d.sample is not None])
def test_each_ops_sample_node_is_valid(validator: Any, name: str) -> None:
    validator.validate(json.loads(sample_graph(name).to_json()))


def broken(change: str) -> dict[str, Any]:
    doc = copy.deepcopy(v1_graph().to_dict())
    node = doc["nodes"][-1]  # BatchNormInferenceBackwardBeta(dy)
    act = next(n for n in doc["nodes"] if n["op"] == "Activation")
    if change == "unknown op":
        node["op"] = "Frobnicate"
    elif change == "unknown attribute":
        doc["version"] = 2  # not only version 1's narrower table: no version has it
        act["attrs"]["colour"] = "red"
    elif change == "missing attribute":
        del act["attrs"]["kind"]
    elif change == "attributes of an op that takes none":
        node["attrs"] = {"eps": 1e-5}
    elif change == "wrong arity":
        node["inputs"] = node["inputs"] * 2
    elif change == "unknown dtype":
        node["dtype"] = "f8"
    elif change == "version 4":
        doc["version"] = 4
    elif change == "wrong format":
        doc["format"] = "egraph-lower/graf"
    elif change == "unknown node key":
        node["shap"] = node["shape"]
    elif change == "unknown top-level key":
        doc["extra"] = 1
    elif change == "version-2 op in version 1":
        doc["nodes"].append({"id": 99, "op": "Softmax", "attrs": {"axis": -1}, "inputs": [act["id"]],
                             "shape": act["shape"], "dtype": act["dtype"]})
    elif change == "version-2 attribute in version 1":
        act["attrs"]["alpha"] = 1.0
        act["attrs"]["kind"] = "Elu"
    return doc


CHANGES = ["unknown op", "unknown attribute", "missing attribute", "attributes of an op that takes none",
           "wrong arity", "unknown dtype", "version 4", "wrong format", "unknown node key", "unknown top-level key",
           "version-2 op in version 1", "version-2 attribute in version 1"]


@pytest.mark.parametrize("change", CHANGES)
def test_structural_errors_are_refused_by_the_validator_and_the_schema(validator: Any, change: str) -> None:
    doc = broken(change)
    with pytest.raises(GraphError):
        check_document(doc)
    assert not validator.is_valid(doc), change
