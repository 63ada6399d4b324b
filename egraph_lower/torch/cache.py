"""A process-wide cache of lowered graphs, so each distinct graph is lowered once.

The key holds everything `egraph_lower.lower` depends on: the graph's structure
(nodes, attributes, constants' values, shapes, dtypes, Input names, outputs; not
its name), the backend's content (every field but its description: ops, kinds, costs,
how it computes f16/bf16, not only its name), the limits and the extractor. A recompile
of the same model, a second model with the same layers, or the same layer traced twice
(GPT-2's blocks) reuse the lowered graph.

A graph that the backend runs as it is and that no rule rewrites for it (on `cpu`, any
graph) is returned as it is, without an e-graph: lowering it would at most merge
identical nodes.

A graph whose lowering stopped on its time limit is not cached: another run might
finish, and a result that depends on the machine's load is not a function of the key.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import asdict, fields
from typing import Any

from .. import rules
from ..backends import Backend
from ..egraph.load import label
from ..egraph.saturate import Limits
from ..graph import Graph
from ..lower import lower

_lock = threading.Lock()
_lowered: dict[str, Graph] = {}
stats = {"hits": 0, "misses": 0}


def backend_key(backend: Backend) -> dict[str, Any]:
    """The backend's content (every field but the description), in a canonical order."""
    out: dict[str, Any] = {}
    for f in fields(backend):
        value = getattr(backend, f.name)
        if f.name == "description":
            continue
        if f.name == "cost":  # (its kernels' costs: in `kernels`)
            value = {k: (dict(sorted(v.items())) if k == "weights" else v) for k, v in asdict(value).items()
                     if k != "kernels"}
        elif f.name == "kernels":  # a backend file's kernels and rules as declared
            value = [[k.name, list(k.inputs), list(k.outputs), [k.cost.launch, k.cost.bytes, k.cost.work],
                      sorted(k.cost.dtypes) if k.cost.dtypes is not None else None] for k in value]
        elif f.name == "rules":
            value = [[r.name, *r.source] for r in value]
        elif isinstance(value, frozenset):
            value = sorted(value)
        out[f.name] = value
    return out


def key(graph: Graph, backend: Backend, limits: Limits, extractor: str) -> str:
    doc = graph.to_dict()
    doc.pop("name", None)
    text = json.dumps([doc, backend_key(backend), asdict(limits), extractor], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def lowered(graph: Graph, backend: Backend, limits: Limits, extractor: str = "greedy") -> tuple[Graph, bool]:
    """`graph` lowered for `backend` (from the cache when it was lowered before), and whether it was cached."""
    if unchanged(graph, backend):
        return graph, False
    k = key(graph, backend, limits, extractor)
    with _lock:
        hit = _lowered.get(k)
        stats["hits" if hit is not None else "misses"] += 1
    if hit is not None:
        return hit, True
    result = lower(graph, backend, limits=limits, extractor=extractor)
    if result.report.stop_reason != "time_limit":
        with _lock:
            _lowered[k] = result.graph
    return result.graph, False


def unchanged(graph: Graph, backend: Backend) -> bool:
    """Whether `graph` needs no lowering for `backend`: the backend runs every node and no rule rewrites
    any of them (the e-graph would hold the graph's nodes alone, identical ones merged)."""
    if not all(backend.runs_node(n) for n in graph.nodes):
        return False
    return not rules.select(backend.missing, present={label(n.op, n.attrs) for n in graph.nodes},
                            extra=backend.own_rules)  # (a backend file's kernels may replace what it runs)


def clear() -> None:
    """Forget every lowered graph (tests, or to measure a cold lowering)."""
    with _lock:
        _lowered.clear()
        stats.update(hits=0, misses=0)
