"""Memory estimates: `run` refuses, before allocating, a graph whose live values would not fit."""

from __future__ import annotations

import pytest

from egraph_lower.build import GraphBuilder
from egraph_lower.errors import LowerError
from egraph_lower.memory import WORK_BYTES_PER_ELEMENT, check_run_memory


def chain(n: int, elements: int):  # type: ignore[no-untyped-def]
    b = GraphBuilder("chain")
    x = b.input("x", [elements])
    for _ in range(n):
        x = b.act("Relu", x)
    return b.build([x])


def test_values_dropped_after_their_last_use_are_not_counted() -> None:
    g = chain(100, 1000)  # each value is 4,000 bytes; two live at once, plus one node's work
    need = 2 * 4000 + 1000 * WORK_BYTES_PER_ELEMENT
    check_run_memory(g, room=need)
    with pytest.raises(LowerError, match=r"^node 1 \(Activation\{Relu\}\): its value of shape \[1000\] f32 takes"):
        check_run_memory(g, room=need - 1)


def test_the_node_where_the_memory_runs_out_is_named() -> None:
    b = GraphBuilder("huge")
    x = b.input("x", [1])
    big = b.expand(x, [1 << 20, 1 << 20])
    g = b.build([b.act("Relu", x), big])
    with pytest.raises(LowerError, match=r"^node 1 \(Expand\): .* takes 4 TiB"):
        check_run_memory(g, room=1 << 40)
