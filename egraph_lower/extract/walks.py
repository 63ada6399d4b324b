"""The walks over e-classes that extraction, conversion and the reports share.

Each takes the classes to start from and `successors(c)`, the classes class `c`
leads to (through its chosen e-node, or through every usable e-node of it), so
one walk serves a choice and the whole e-graph alike. All are iterative (no
recursion limit). Where a walk's order matters to its caller (the order of the
nodes written out, the order the local search tries classes in), it is stated,
and a caller picks the order of visiting by the order `successors` returns.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..egraph.tables import Tables
from ..signals import held

Successors = Callable[[int], Iterable[int]]


class Cycle(Exception):
    """The walk came back to a class it is still below (only where rules made the e-graph cyclic)."""


def post_order(roots: Iterable[int], successors: Successors, n_classes: int, on_cycle: str = "skip") -> list[int]:
    """Every class reachable from `roots`, each after all the classes below it (children first).

    Depth first: from each class, the successors are visited from the last one `successors`
    returns to the first (return them reversed to visit the first one first); one already
    visited is passed over. A successor still open (a cycle back up) is passed over with
    `on_cycle="skip"` and raises `Cycle` with `on_cycle="raise"`."""
    if on_cycle not in ("skip", "raise"):
        raise ValueError(f"on_cycle: 'skip' or 'raise', not {on_cycle!r}")
    strict = on_cycle == "raise"
    state = bytearray(n_classes)  # 0 unseen, 1 open (below it still being visited), 2 done
    order: list[int] = []
    for root in roots:
        if state[root]:
            continue
        stack = [root]
        while stack:
            c = stack.pop()
            if c < 0:  # all below ~c done
                c = ~c
                state[c] = 2
                order.append(c)
                continue
            if state[c]:
                continue
            state[c] = 1
            stack.append(~c)
            for k in successors(c):
                s = state[k]
                if s == 0:
                    stack.append(k)
                elif s == 1 and strict:
                    raise Cycle
    return order


def has_cycle(starts: Iterable[int], successors: Successors, n_classes: int) -> bool:
    """Whether a cycle is reachable from `starts`."""
    try:
        post_order(starts, successors, n_classes, on_cycle="raise")
    except Cycle:
        return True
    return False


def reachable(roots: Iterable[int], successors: Successors) -> list[int]:
    """Every class reachable from `roots`, each once, in the order a stack reaches them: the last
    root first, and of a class's successors the last one first."""
    seen: set[int] = set()
    order: list[int] = []
    stack = list(roots)
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        order.append(c)
        stack.extend(successors(c))
    return order


def breadth_first(roots: Iterable[int], successors: Successors) -> list[int]:
    """Every class reachable from `roots`, each once, nearest the roots first."""
    seen: set[int] = set()
    order: list[int] = []
    queue = deque(roots)
    while queue:
        c = queue.popleft()
        if c in seen:
            continue
        seen.add(c)
        order.append(c)
        queue.extend(k for k in successors(c) if k not in seen)
    return order


# Up to this many edges the components are found here (Kosaraju's two walks, about 1.3 us an edge);
# beyond, by SciPy, whose graph module takes 0.11 to 0.14 s to import: more than a small graph's
# whole lowering, so a torch.compile first call that needs one cycle check would pay it.
SMALL_EDGES = 20_000


def on_cycles(n_classes: int, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Per class, whether it lies on a cycle of the directed edges `source[i] -> target[i]`:
    in a strongly connected component of more than one class, or with an edge to itself.
    The components are Kosaraju's (`SMALL_EDGES` edges at most) or SciPy's
    (`scipy.sparse.csgraph.connected_components`, strong)."""
    out = np.zeros(n_classes, dtype=bool)
    if not len(source):
        return out
    if len(source) <= SMALL_EDGES:  # on the classes the edges touch, numbered 0, 1, ...
        ids, ends = np.unique(np.concatenate([source, target]), return_inverse=True)
        label = _components_small(len(ids), ends[:len(source)], ends[len(source):])
    else:
        ids, label = np.arange(n_classes), _components(n_classes, source, target)
    size = np.bincount(label, minlength=int(label.max()) + 1)
    out[ids[size[label] > 1]] = True
    out[source[source == target]] = True
    return out


def _components(n_classes: int, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    with held():  # an interruption lands after SciPy's import, not inside it (signals)
        from scipy.sparse import coo_array
        from scipy.sparse.csgraph import connected_components

    flags = np.ones(len(source), dtype=bool)  # (an edge given many times sums to True, never wraps to 0)
    edges = coo_array((flags, (source, target)), shape=(n_classes, n_classes)).tocsr()
    return connected_components(edges, directed=True, connection="strong")[1]  # type: ignore[no-any-return]


def _components_small(n_classes: int, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Strongly connected components (a label per class): the classes in the order a depth-first
    walk finishes them, then, from the last finished, what reaches each against the edges."""
    succ: list[list[int]] = [[] for _ in range(n_classes)]
    pred: list[list[int]] = [[] for _ in range(n_classes)]
    for s, t in zip(source.tolist(), target.tolist()):
        succ[s].append(t)
        pred[t].append(s)
    label = [-1] * n_classes
    for c in reversed(post_order(range(n_classes), succ.__getitem__, n_classes)):
        if label[c] >= 0:
            continue
        label[c] = c
        stack = [c]
        while stack:
            for p in pred[stack.pop()]:
                if label[p] < 0:
                    label[p] = c
                    stack.append(p)
    return np.array(label, dtype=np.int64)


def classes_on_cycles(t: Tables, usable: np.ndarray) -> np.ndarray:
    """Per class, whether it lies on a cycle of the e-graph through the `usable` e-nodes (a mask)."""
    enodes = np.flatnonzero(usable)
    kids = t.kids_array[enodes]
    has = kids >= 0
    source = np.repeat(t.eclass_array[enodes].astype(np.int64), has.sum(axis=1))
    return on_cycles(t.n_classes, source, kids[has].astype(np.int64))


def children_first(t: Tables, pick: np.ndarray, roots: Iterable[int]) -> list[int]:
    """The classes the roots reach through the choice `pick` (per class, its chosen e-node; -1 for
    none: nothing below), children first (`post_order`); raises `Cycle` if the choice has one."""
    flat, start = t.kid_rows
    chosen = array("q", pick.astype(np.int64).tobytes())

    def below(c: int) -> Sequence[int]:
        n = chosen[c]
        return flat[start[n]:start[n + 1]] if n >= 0 else ()

    return post_order(roots, below, t.n_classes, on_cycle="raise")


def positions(order: Sequence[int]) -> dict[int, int]:
    """Each class of `order` -> its index there."""
    return {c: i for i, c in enumerate(order)}
