"""egraph/load.py: a graph's e-graph declares what its rows and rules use, not every constructor."""

from __future__ import annotations

from pathlib import Path

import pytest

from egraph_lower import backends, rules
from egraph_lower.build import GraphBuilder
from egraph_lower.egraph.language import CTORS
from egraph_lower.egraph.load import label, load


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_only_the_constructors_of_the_rows_and_rules_are_declared(dtype: str) -> None:
    b = GraphBuilder("tanh")
    x, dy = b.input("x", (8,), dtype), b.input("dy", (8,), dtype)
    graph = b.build([b.act_backward("Tanh", x, dy)])
    chosen = rules.select(backends.load("metal").missing, present={label(n.op, n.attrs) for n in graph.nodes})
    assert chosen
    declared = set(load(graph, chosen).freeze().functions) & set(CTORS)
    used = set().union(*(r.ctors for r in chosen))
    assert used <= declared  # every rule's constructors (else egglog refuses the program)
    assert "Conv2d" not in declared and len(declared) < len(CTORS) // 4
    assert ("Cast" in declared) == (dtype == "f16")  # the half-precision load rounds through a Cast


def test_without_in_memory_files_a_temporary_directory_is_used_and_removed(tmp_path: Path) -> None:
    b = GraphBuilder("relu")
    x, dy = b.input("x", (4,)), b.input("dy", (4,))
    graph = b.build([b.relu_backward(x, dy)])
    chosen = rules.select(backends.load("metal").missing, present={label(n.op, n.attrs) for n in graph.nodes})
    work = tmp_path / 'odd"dir\\'  # the paths reach egglog as string literals
    work.mkdir()
    frozen = load(graph, chosen, workdir=str(work)).freeze()  # (workdir: files, not memfd)
    assert len(frozen.functions["ReluBwd"].rows) == 1 and chosen[0].ctors <= set(frozen.functions)
    assert list(work.iterdir()) == []
