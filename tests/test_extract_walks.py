"""The walks over e-classes (`extract.walks`), against their definitions on small and random graphs."""

from __future__ import annotations

import numpy as np
import pytest

from egraph_lower.extract import walks
from egraph_lower.extract.walks import Cycle, breadth_first, has_cycle, on_cycles, post_order, reachable

#   0 -> 1, 2;  1 -> 3;  2 -> 3;  3 -> ()
DIAMOND = {0: [1, 2], 1: [3], 2: [3], 3: []}


def test_post_order_puts_children_first_and_takes_the_visiting_order_from_the_successors() -> None:
    assert post_order([0], DIAMOND.__getitem__, 4) == [3, 2, 1, 0]  # the last successor first
    assert post_order([0], lambda c: reversed(DIAMOND[c]), 4) == [3, 1, 2, 0]  # reversed: the first first
    assert post_order([2, 0], DIAMOND.__getitem__, 4) == [3, 2, 1, 0]  # each class once, across roots


def test_post_order_skips_or_raises_on_a_cycle() -> None:
    loop = {0: [1], 1: [2], 2: [0]}
    assert post_order([0], loop.__getitem__, 3) == [2, 1, 0]
    with pytest.raises(Cycle):
        post_order([0], loop.__getitem__, 3, on_cycle="raise")
    assert has_cycle([0], loop.__getitem__, 3) and not has_cycle([0], DIAMOND.__getitem__, 4)
    with pytest.raises(ValueError):
        post_order([0], loop.__getitem__, 3, on_cycle="ignore")


def test_reachable_and_breadth_first_orders() -> None:
    assert reachable([0], DIAMOND.__getitem__) == [0, 2, 3, 1]  # a stack: the last successor first
    assert breadth_first([0], DIAMOND.__getitem__) == [0, 1, 2, 3]
    assert reachable([1, 2], DIAMOND.__getitem__) == [2, 3, 1]  # the last root first
    assert breadth_first([3], DIAMOND.__getitem__) == [3]


def _on_a_cycle(n: int, edges: list[tuple[int, int]]) -> list[bool]:
    """By definition: c lies on a cycle when c can reach itself through one edge or more."""
    succ: dict[int, list[int]] = {c: [] for c in range(n)}
    for a, b in edges:
        succ[a].append(b)
    out = []
    for c in range(n):
        seen: set[int] = set()
        stack = list(succ[c])
        while stack:
            k = stack.pop()
            if k not in seen:
                seen.add(k)
                stack.extend(succ[k])
        out.append(c in seen)
    return out


@pytest.mark.parametrize("small", [True, False], ids=["kosaraju", "scipy"])
@pytest.mark.parametrize("seed", range(20))
def test_on_cycles_is_the_classes_that_reach_themselves(seed: int, small: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(walks, "SMALL_EDGES", 10**9 if small else 0)  # each way of finding the components
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    m = int(rng.integers(0, 2 * n))
    source, target = rng.integers(0, n, size=m), rng.integers(0, n, size=m)
    got = on_cycles(n, source, target)
    assert got.tolist() == _on_a_cycle(n, list(zip(source.tolist(), target.tolist())))


def test_both_ways_of_finding_components_agree_on_a_larger_graph() -> None:
    rng = np.random.default_rng(7)
    n = 3000
    source, target = rng.integers(0, n, size=4000), rng.integers(0, n, size=4000)
    assert len(source) <= walks.SMALL_EDGES
    small = walks._components_small(n, source, target)
    big = walks._components(n, source, target)
    # the same partition: two classes share a label in one exactly when they do in the other
    pairs = {(int(a), int(b)) for a, b in zip(small, big)}
    assert len(pairs) == len(set(small.tolist())) == len(set(big.tolist())) < n


def test_on_cycles_of_no_edges() -> None:
    assert on_cycles(3, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)).tolist() == [False] * 3


def test_an_edge_given_many_times_is_still_an_edge() -> None:
    source = np.array([0] * 256 + [1])  # e-nodes with the same child class, many of them
    target = np.array([1] * 256 + [0])
    assert on_cycles(3, source, target).tolist() == [True, True, False]
