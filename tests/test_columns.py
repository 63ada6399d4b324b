"""A converted graph's columns (egraph_lower/fast/columns.py) against the plain definitions: its JSON
against `node_line` of the nodes they make, its version and legality against the nodes', and a graph
made from columns behaving as one made from its nodes."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from egraph_lower.build import GraphBuilder
from egraph_lower.fast.columns import NodeColumns
from egraph_lower.graph import Graph, Node
from egraph_lower.lower import check_legal, lower
from egraph_lower.versions import required_version
from egraph_lower import backends

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from generate import chain, chain_shared, mlp  # noqa: E402


def plain_json(g: Graph) -> str:
    """What `to_json` writes for a graph of these very nodes, made as a list."""
    return Graph(list(g.nodes), list(g.outputs), g.name).to_json()


CASES = [(chain(40), "metal"), (chain_shared(30), "wgpu"), (mlp(3), "wgpu"), (mlp(2), "tpu")]


@pytest.mark.parametrize("graph, target", CASES, ids=lambda v: getattr(v, "name", v))
def test_a_lowered_graph_is_written_from_its_columns_as_from_its_nodes(graph: Graph, target: str) -> None:
    out = lower(graph, target).graph
    assert out.columns is not None and out.n_nodes == len(out.columns)
    text = "".join(out.json_chunks(nodes_per_chunk=7))  # pieces that cut templates' runs
    assert out.columns is not None  # writing did not make the nodes
    assert text == out.to_json()
    assert text == plain_json(out)  # reading `nodes` makes them; the columns are dropped
    assert out.columns is None and out.n_nodes == len(out.nodes)
    json.loads(text)


def test_columns_with_awkward_values_write_what_node_line_writes() -> None:
    """A name to escape, a `%` in a name and in an attribute, a node of no inputs, no head."""
    attrs = {"name": "w%d", "note": "100%"}
    shared = {"op": "Mul"}
    cols = NodeColumns(
        head=[],
        op=np.array(["Param", "Binary", "Binary", "Constant"], dtype=object),
        attrs=np.array([attrs, shared, shared, {"value": 1.5}], dtype=object),
        inputs=np.array([[-1, -1], [0, 0], [1, 0], [-1, -1]]),
        shape=np.array([(2, 3), (2, 3), (2, 3), ()], dtype=object),
        dtype=np.array(["f32", "f32", "f32", "f16"], dtype=object),
        name=np.array(["w %s \u00e9\n\"", None, "n1/r%%", None], dtype=object),
    )
    g = Graph.from_columns(cols, [2], "g")
    assert "".join(g.json_chunks(nodes_per_chunk=3)) == plain_json(g)


def test_version_and_legality_are_the_nodes() -> None:
    b = GraphBuilder("bf16")
    x = b.input("x", [4, 4], dtype="bf16")
    out = lower(b.build([b.act_backward("Gelu", x, b.act("Gelu", x))]), "metal").graph
    combos = out.columns.combos()
    assert len(combos) < out.n_nodes
    assert required_version(combos) == required_version(list(out.nodes))
    check_legal(out, backends.load("metal"))


def test_an_illegal_node_is_named_by_its_first_occurrence() -> None:
    shared = {"kind": "Gelu"}
    cols = NodeColumns(
        head=[Node(0, "Input", (), (4,), "f32", {"name": "x"})],
        op=np.array(["Activation", "Activation"], dtype=object),
        attrs=np.array([shared, shared], dtype=object),
        inputs=np.array([[0], [1]]),
        shape=np.array([(4,), (4,)], dtype=object),
        dtype=np.array(["f32", "f32"], dtype=object),
        name=np.array([None, None], dtype=object),
    )
    from egraph_lower.errors import IllegalGraphError

    with pytest.raises(IllegalGraphError, match=r"node 1 \(Activation\{Gelu\}\)"):
        check_legal(Graph.from_columns(cols, [2]), backends.load("wgpu"))


def test_a_graph_of_columns_is_equal_to_one_of_its_nodes_and_changes_like_one() -> None:
    out = lower(chain(8), "metal").graph
    same = Graph.from_columns(out.columns, list(out.outputs), out.name)
    made = Graph(list(out.nodes), list(out.outputs), out.name)
    assert out == made and same == made and dataclasses.replace(out, name="x").nodes == made.nodes
    made.nodes.append(made.nodes[-1])
    assert made.n_nodes == len(out.nodes) + 1
    out.nodes = out.nodes[:1]  # the setter: columns gone, the list is the graph's
    assert out.columns is None and out.n_nodes == 1
    nodes = same.nodes
    assert nodes[0].attrs is not same.nodes[1].attrs
    assert all(type(n.attrs) is dict for n in nodes)
    binary = [n for n in nodes if n.op == "Binary"]
    assert len({id(n.attrs) for n in binary}) == len(binary)  # each node its own attribute dict
