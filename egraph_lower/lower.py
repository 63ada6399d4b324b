"""The pipeline, top to bottom: each stage is one call, timed and named in the report.

    graph (validated) -> load into the e-graph -> saturate under limits
      -> extract for the backend -> convert back to a graph -> check legal
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import backends as backends_mod
from . import rules as rules_mod
from .backends import Backend
from .convert import to_graph
from .egraph import tables
from .egraph.load import I64_IDS, dense_ids, label, load
from .egraph.tables import Tables
from .egraph.saturate import FLAGS, Iteration, Limits, Saturation, first_growth, saturate
from .errors import IllegalGraphError, LowerError
from .extract import (ClassMetas, Costs, Decoded, Extraction, check_consistent, extract,
                      graph_cost, infer_metas)
from .fast.columns import Combo
from .graph import Graph, Node, gc_paused
from .memory import check_load
from .opdefs.elementwise import BASE_BINARY_OPS
from .text import printable
from .provenance import Matcher
from .rules.dsl import Rule

STAGES = ("load", "saturate", "extract", "convert", "check")


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
    extraction: dict[str, Any] = field(default_factory=dict)  # `Extraction.describe()`: extractor, optimal, status
    error: str | None = None  # why a failed run made no graph (then `after` holds None)

    def to_dict(self) -> dict[str, Any]:
        return ({"error": self.error} if self.error is not None else {}) | {
            "graph": self.graph,
            "backend": self.backend,
            "before": self.before,
            "after": self.after,
            "extraction": self.extraction,
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
        fired = sorted(self.rules_fired.items(), key=lambda kv: (-kv[1], kv[0]))
        lines = [
            f"lowered {printable(self.graph or 'graph')} for {printable(self.backend)}",
            f"  before  {self.before['nodes']:>9,} nodes   cost {cost(self.before['cost'])}",
            f"  after   {self.after['nodes']:>9,} nodes   cost {cost(self.after['cost'])}" + proof_note(self.extraction),
            f"  e-graph {self.eclasses:,} e-classes, {self.enodes:,} e-nodes after {self.iterations} iterations"
            f" ({self.stop_reason})",
            f"  rules   {sum(self.rules_fired.values()):,} matches of {len(fired)} rules"
            + (": " + ", ".join(f"{k} {v:,}" for k, v in fired[:4]) + (", ..." if len(fired) > 4 else "") if fired else ""),
            "  seconds " + "  ".join(f"{k} {s[k]:.3f}" for k in ("read", *STAGES, "write", "total") if k in s),
        ]
        return "\n".join(lines)


def proof_note(extraction: dict[str, Any]) -> str:
    """What the summary adds to the cost of an integer program's choice: whether it is proven optimal."""
    if extraction.get("extractor") != "exact":
        return ""
    if extraction.get("optimal"):
        return "   (exact: proven optimal)"
    return f"   (exact: NOT proven optimal, {extraction.get('status')})"


class LoweringFailed(LowerError):
    """A run whose extraction found no graph the backend runs (or could not be solved);
    `report` records how far it got and why."""

    def __init__(self, message: str, report: Report) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class LowerResult:
    graph: Graph
    report: Report
    saturation: Saturation


def _label(node: Node | Combo) -> str:
    kind = node.attrs.get("op") if node.op == "Binary" and node.attrs.get("op") not in BASE_BINARY_OPS \
        else node.attrs.get("kind")
    return f"{node.op}{{{kind}}}" if kind else node.op


def check_legal(graph: Graph, backend: Backend) -> None:
    """Every node runs on the backend (raises IllegalGraphError). That the graph is a valid
    document holds by construction and is checked by `extract.check_consistent`;
    `document.validated(graph)` checks it from scratch."""
    runs = backend.runs_node
    columns = graph.columns  # (a converted graph's: each distinct op and attributes asked once)
    for node in graph.nodes if columns is None else columns.combos():
        if not runs(node):
            raise IllegalGraphError(
                f"node {node.id} ({_label(node)}) is not run by backend {backend.name}: a lowering bug"
            )


@dataclass
class Saturated:
    """A graph's e-graph after saturation, read into tables: what every extraction starts from."""

    graph: Graph  # the graph loaded: the one given, or its `dense_ids` copy when its ids need it
    rules: tuple[Rule, ...]
    tables: Tables
    metas: ClassMetas
    decoded: Decoded
    saturation: Saturation
    seconds: dict[str, float]
    given: Graph | None = None  # the graph given, when `graph` is its copy with dense ids

    @property
    def roots(self) -> list[int]:
        return [self.tables.ref[o] for o in self.graph.outputs]


def saturate_graph(
    graph: Graph,
    targets: Sequence[Backend],
    limits: Limits = Limits(),
    progress: Callable[[Iteration], None] | None = None,
    count_eclasses: bool = False,
    without: frozenset[str] = frozenset(),
) -> Saturated:
    """Stages load and saturate, with the rules that the targets need (capability gating), but those
    named in `without` (explore's what-if)."""
    missing = frozenset().union(*(b.missing for b in targets))
    own = tuple({r.name: r for b in targets for r in b.own_rules}.values())  # backend files' rules and kernels
    rules = rules_mod.select(missing, present={label(n.op, n.attrs) for n in graph.nodes}, extra=own)
    if without:
        rules = tuple(r for r in rules if r.name not in without)
    t0 = time.perf_counter()
    check_load(len(graph.nodes))
    given = graph
    if graph.nodes and max(n.id for n in graph.nodes) >= I64_IDS:
        graph = dense_ids(graph)
    # f16/bf16 expansions in float32 unless every target computes in the low precision
    native = all(b.half_precision_math == "native" for b in targets)
    egraph = load(graph, rules, half_math="native" if native else "float32")
    t1 = time.perf_counter()
    sat = saturate(egraph, limits, progress, count_eclasses, first_growth(graph, rules))
    t = tables.read(egraph)
    decoded = Decoded()
    metas = infer_metas(t, graph, decoded)
    t2 = time.perf_counter()
    return Saturated(graph, rules, t, metas, decoded, sat, {"load": t1 - t0, "saturate": t2 - t1},
                     given if given is not graph else None)


def extract_for(s: Saturated, backend: Backend, extractor: str = "greedy") -> tuple[Extraction, Costs]:
    """Stage extract: the cheapest legal choice per e-class for `backend`."""
    costs = Costs(s.tables, s.metas, backend, s.decoded)
    describe = _Described(s.tables, s.graph, s.given or s.graph)  # named only when a node has no form
    if not s.roots and extractor == "exact":
        extractor = "greedy"  # nothing to choose: an integer program of no variables is not one SciPy solves
    return extract(s.tables, costs, s.roots, describe, extractor), costs


class _Described(Sequence[tuple[int, str]]):
    """(e-class, "node <id> (<op>)") per original node, in graph order, made when read; the id
    is the given graph's (`given`), the class that of the node of the graph loaded."""

    def __init__(self, t: Tables, graph: Graph, given: Graph) -> None:
        self.t, self.nodes, self.given = t, graph.nodes, given.nodes

    def __getitem__(self, i: int) -> tuple[int, str]:  # type: ignore[override]
        n = self.given[i]
        return self.t.ref[self.nodes[i].id], f"node {n.id} ({_label(n)})"

    def __len__(self) -> int:
        return len(self.nodes)


def convert_back(s: Saturated, ex: Extraction) -> Graph:
    """Stage convert: the extraction as a node graph, with provenance names."""
    return to_graph(s.tables, ex, s.graph, s.metas, s.decoded, Matcher(s.tables, s.rules))


def lower(
    graph: Graph,
    backend: str | Backend,
    *,
    limits: Limits = Limits(),
    progress: Callable[[Iteration], None] | None = None,
    extractor: str = "greedy",
) -> LowerResult:
    """Lower `graph` for `backend`: the cheapest equivalent graph it runs, with a report."""
    target = backends_mod.load(backend)
    with gc_paused():  # millions of tables, tuples and nodes, no cycles: nothing for the collector
        return _lower(graph, target, limits, progress, extractor)


def _lower(graph: Graph, target: Backend, limits: Limits, progress: Callable[[Iteration], None] | None,
           extractor: str) -> LowerResult:
    start = time.perf_counter()
    s = saturate_graph(graph, [target], limits, progress)
    seconds = dict(s.seconds)

    def report(after: dict[str, Any], error: str | None = None, extraction: dict[str, Any] | None = None) -> Report:
        return Report(
            graph=graph.name,
            backend=target.name,
            before={"nodes": len(graph.nodes), "cost": graph_cost(graph, target)},
            after=after,
            stop_reason=s.saturation.stop_reason,
            iterations=len(s.saturation.iterations),
            eclasses=s.tables.live_classes,
            enodes=s.tables.n_nodes,
            rules_fired={k: v for k, v in s.saturation.rule_matches.items() if v},
            seconds=seconds,
            extraction=extraction or {},
            error=error,
        )

    try:
        t0 = time.perf_counter()
        ex, _ = extract_for(s, target, extractor)
        t1 = time.perf_counter()
        out = convert_back(s, ex)
        t2 = time.perf_counter()
        check_consistent(s.tables, s.metas, ex.choice, s.decoded)
        check_legal(out, target)
        t3 = time.perf_counter()
    except LowerError as e:
        if type(e) is not LowerError:
            raise  # IllegalGraphError and the like: a bug named as it is, no report of the run
        message = stopped_early(str(e), s.saturation)
        seconds["total"] = time.perf_counter() - start
        raise LoweringFailed(message, report({"nodes": None, "cost": None}, message)) from None
    seconds.update(extract=t1 - t0, convert=t2 - t1, check=t3 - t2, total=t3 - start)
    return LowerResult(out, report({"nodes": out.n_nodes, "cost": ex.cost}, extraction=ex.describe()), s.saturation)


def stopped_early(message: str, sat: Saturation) -> str:
    """An extraction's error said again when a limit stopped saturation first: then a node it
    names as not lowered may simply not have been reached, and the limit is what to change."""
    flag = FLAGS.get(sat.stop_reason)
    if flag is None or not ("no rule lowers it" in message or "no form the backend" in message):
        return message  # saturated, or another failure: the message stands
    what = message.split(": backend ")[0] if message.startswith("node ") else "an output"
    n = len(sat.iterations)
    why = f"; {sat.memory}" if sat.memory else f"; raise {flag}"
    return f"{sat.stop_reason}: {what} was not yet lowered after {n} iteration{'' if n == 1 else 's'}{why}"
