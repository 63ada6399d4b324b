"""The pipeline, top to bottom: each stage is one call, timed and named in the report.

    graph (validated) -> load into the e-graph -> saturate under limits
      -> extract for the backend -> convert back to a graph -> check legal
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import backends as backends_mod
from . import rules as rules_mod
from .backends import Backend
from .convert import to_graph
from .egraph import tables
from .egraph.load import load
from .egraph.saturate import Iteration, Limits, Saturation, saturate
from .errors import IllegalGraphError, LowerError
from .extract import Costs, Decoded, extract, graph_cost, infer_metas
from .graph import Graph, Node
from .provenance import Matcher

STAGES = ("load", "saturate", "extract", "convert", "check")
EXTRACTORS = ("greedy",)


@dataclass
class Report:
    graph: str | None
    backend: str
    before: dict[str, Any]
    after: dict[str, Any]
    stop_reason: str
    iterations: int
    eclasses: int
    enodes: int
    rules_fired: dict[str, int]
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "backend": self.backend,
            "before": self.before,
            "after": self.after,
            "stop_reason": self.stop_reason,
            "iterations": self.iterations,
            "eclasses": self.eclasses,
            "enodes": self.enodes,
            "rules_fired": self.rules_fired,
            "seconds": self.seconds,
        }

    def summary(self) -> str:
        def cost(c: float | None) -> str:
            return "not runnable" if c is None else f"{c:,.2f}"

        s = self.seconds
        fired = sorted(self.rules_fired.items(), key=lambda kv: -kv[1])
        lines = [
            f"lowered {self.graph or 'graph'} for {self.backend}",
            f"  before  {self.before['nodes']:>9,} nodes   cost {cost(self.before['cost'])}",
            f"  after   {self.after['nodes']:>9,} nodes   cost {cost(self.after['cost'])}",
            f"  e-graph {self.eclasses:,} e-classes, {self.enodes:,} e-nodes after {self.iterations} iterations"
            f" ({self.stop_reason})",
            f"  rules   {sum(self.rules_fired.values()):,} matches of {len(fired)} rules"
            + (": " + ", ".join(f"{k} {v:,}" for k, v in fired[:4]) + (", ..." if len(fired) > 4 else "") if fired else ""),
            "  seconds " + "  ".join(f"{k} {s[k]:.3f}" for k in (*STAGES, "total") if k in s),
        ]
        return "\n".join(lines)


@dataclass
class LowerResult:
    graph: Graph
    report: Report
    saturation: Saturation


def _label(node: Node) -> str:
    kind = node.attrs.get("kind")
    return f"{node.op}{{{kind}}}" if kind else node.op


def check_legal(graph: Graph, backend: Backend) -> None:
    """Every node runs on the backend, and the graph is a valid document (raises IllegalGraphError)."""
    for node in graph.nodes:
        if not backend.runs_node(node):
            raise IllegalGraphError(
                f"node {node.id} ({_label(node)}) is not run by backend {backend.name}: a lowering bug"
            )
    graph.validated()


def lower(
    graph: Graph,
    backend: str | Backend,
    *,
    limits: Limits = Limits(),
    progress: Callable[[Iteration], None] | None = None,
    extractor: str = "greedy",
) -> LowerResult:
    """Lower `graph` for `backend`: the cheapest equivalent graph it runs, with a report."""
    if extractor not in EXTRACTORS:
        raise LowerError(f"unknown extractor {extractor!r}: use one of {', '.join(EXTRACTORS)}")
    target = backends_mod.load(backend)
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    start = clock

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[stage] = now - clock
        clock = now

    rules = rules_mod.select(target.missing)
    egraph = load(graph, rules)
    lap("load")
    sat = saturate(egraph, limits, progress)
    lap("saturate")
    t = tables.read(egraph)
    decoded = Decoded()
    metas = infer_metas(t, graph, decoded)
    costs = Costs(t, metas, target, decoded)
    describe = [(t.ref[n.id], f"node {n.id} ({_label(n)})") for n in graph.nodes]
    ex = extract(t, costs, [t.ref[o] for o in graph.outputs], describe)
    lap("extract")
    out = to_graph(t, ex, graph, metas, decoded, Matcher(t, rules))
    lap("convert")
    check_legal(out, target)
    lap("check")
    seconds["total"] = time.perf_counter() - start
    report = Report(
        graph=graph.name,
        backend=target.name,
        before={"nodes": len(graph.nodes), "cost": graph_cost(graph, target)},
        after={"nodes": len(out.nodes), "cost": graph_cost(out, target)},
        stop_reason=sat.stop_reason,
        iterations=len(sat.iterations),
        eclasses=t.n_classes,
        enodes=t.n_nodes,
        rules_fired={k: v for k, v in sat.rule_matches.items() if v},
        seconds=seconds,
    )
    return LowerResult(out, report, sat)
