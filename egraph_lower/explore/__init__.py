"""Explore a lowering: how the e-graph grew, which rules fired, what each node could have become.

    ex = explore(graph, "metal", compare=("cpu", "wgpu"))
    ex.alternatives(node_id)   # the forms of one node for the backend (see `alternatives`)
    ex.report()                # the JSON report
    ex.to_html(), ex.to_dot()  # a page for people, the e-graph for Graphviz

One e-graph is saturated with the rules that the backend and every compared
backend need together, then extracted once per backend; the backends are
compared on that same e-graph. (So the graph lowered for a backend here may
differ from `lower`'s for it alone when a compared backend brought in rules it
does not need; extraction still picks its cheapest legal graph.)

The report's `choices` list, for every original node whose e-class holds a
form other than the node itself and for every backward op, the alternatives of
the node (the e-nodes of its class), each with what it would add to the lowered
graph; the cost, legality and choice are defined in
`egraph_lower.explore.alternatives`. Its `convolutions` list, for every
convolution node, the same alternatives on every explored backend side by side,
each with why it won or lost there (`egraph_lower.explore.convolutions`). Its
`what_if` (None unless asked for) is the same graph lowered for the backend as
a what-if changes it (rules dropped, op costs scaled, kernels added) and what that
changed, node by node and in total (`egraph_lower.explore.whatif`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import backends as backends_mod
from ..backends import Backend
from ..egraph.saturate import Iteration, Limits
from ..errors import LowerError
from ..extract import Costs, Extraction, graph_cost
from ..document import load_graph
from ..graph import Graph
from ..lower import Saturated, check_legal, convert_back, extract_for, proof_note, saturate_graph, stopped_early
from ..ops import BACKWARD_OPS
from ..provenance import Matcher
from ..text import printable
from .alternatives import Choice, Describer, Ranking, choices_for, rank
from .convolutions import convolutions
from .whatif import WhatIf, WhatIfResult, changed_backend, differences, dropped

__all__ = ["Exploration", "Lowered", "WhatIf", "explore", "REPORT_KEYS"]

REPORT_KEYS = ("graph", "backend", "stop_reason", "iterations", "rules", "before", "after", "extraction", "choices",
               "convolutions", "compare", "what_if")


@dataclass
class Lowered:
    """One backend's extraction from the shared e-graph: its ranking of every class and, when it worked, its graph."""

    backend: Backend
    ranking: Ranking
    describer: Describer
    extraction: Extraction | None
    graph: Graph | None
    error: str | None
    seconds: float

    def stats(self) -> dict[str, Any]:
        if self.graph is None:
            return {"nodes": None, "cost": None, "error": self.error}
        assert self.extraction is not None
        return {"nodes": len(self.graph.nodes), "cost": graph_cost(self.graph, self.backend),
                "optimal": self.extraction.optimal}


@dataclass
class Exploration:
    graph: Graph
    backend: Backend
    compare: tuple[Backend, ...]
    saturated: Saturated
    lowered: dict[str, Lowered]  # backend name -> its extraction; the main backend first
    seconds: dict[str, float] = field(default_factory=dict)
    _choices: dict[str, list[Choice]] = field(default_factory=dict, repr=False)
    _convolutions: list[dict[str, Any]] | None = field(default=None, repr=False)
    what_if: WhatIfResult | None = None

    # --- per node -------------------------------------------------------------------------------
    def _for(self, backend: str | Backend | None) -> Lowered:
        name = self.backend.name if backend is None else backend if isinstance(backend, str) else backend.name
        try:
            return self.lowered[name]
        except KeyError:
            raise LowerError(f"backend {name!r} was not explored: use one of {', '.join(self.lowered)}") from None

    def choice(self, node_id: int, backend: str | Backend | None = None) -> Choice:
        if node_id not in self.graph.by_id:
            raise LowerError(f"no node {node_id} in graph {self.graph.name or ''}".rstrip())
        return self._for(backend).describer.choice(self.graph.by_id[node_id])

    def alternatives(self, node_id: int, backend: str | Backend | None = None) -> list[dict[str, Any]]:
        """The forms of original node `node_id` for the backend (default: the explored one), as in the report."""
        return [a.to_dict() for a in self.choice(node_id, backend).alternatives]

    def choices(self, backend: str | Backend | None = None) -> list[Choice]:
        """Every rewritten node and every backward op, with its alternatives for the backend."""
        lo = self._for(backend)
        name = lo.backend.name
        if name not in self._choices:
            self._choices[name] = choices_for(lo.describer, frozenset(BACKWARD_OPS))
        return self._choices[name]

    # --- the whole run --------------------------------------------------------------------------
    @property
    def main(self) -> Lowered:
        return self.lowered[self.backend.name]

    @property
    def after(self) -> Graph:
        assert self.main.graph is not None
        return self.main.graph

    def iterations(self) -> list[dict[str, Any]]:
        return [
            {"index": it.index, "eclasses": it.eclasses, "enodes": it.enodes, "seconds": it.seconds,
             "matches": dict(it.matches)}
            for it in self.saturated.saturation.iterations
        ]

    def rules(self) -> list[dict[str, Any]]:
        sat = self.saturated.saturation
        return [
            {"name": r.name, "identity": r.identity, "matches": sat.rule_matches.get(r.name, 0),
             "seconds": sat.rule_seconds.get(r.name, 0.0)}
            for r in self.saturated.rules
        ]

    def convolutions(self) -> list[dict[str, Any]]:
        """Per convolution node, its expansions on every explored backend and why one won on each."""
        if self._convolutions is None:
            self._convolutions = convolutions(self)
        return self._convolutions

    def compared(self) -> dict[str, dict[str, Any]]:
        return {b.name: self.lowered[b.name].stats() for b in self.compare}

    def report(self) -> dict[str, Any]:
        """The JSON report (keys `REPORT_KEYS`)."""
        return {
            "graph": self.graph.name,
            "backend": self.backend.name,
            "stop_reason": self.saturated.saturation.stop_reason,
            "iterations": self.iterations(),
            "rules": self.rules(),
            "before": {"nodes": len(self.graph.nodes), "cost": graph_cost(self.graph, self.backend)},
            "after": {"nodes": len(self.after.nodes), "cost": graph_cost(self.after, self.backend)},
            "extraction": self.main.extraction.describe() if self.main.extraction else None,
            "choices": [c.to_dict() for c in self.choices()],
            "convolutions": self.convolutions(),
            "compare": self.compared(),
            "what_if": self.what_if.to_dict() if self.what_if is not None else None,
        }

    def summary(self) -> str:
        return _summary(self)

    def to_html(self) -> str:
        from .html import render

        return render(self)

    def to_dot(self, max_classes: int = 400) -> str:
        from .dot import render

        return render(self, max_classes=max_classes)


def _unique(backends: Iterable[Backend]) -> tuple[Backend, ...]:
    seen: dict[str, Backend] = {}
    for b in backends:
        seen.setdefault(b.name, b)
    return tuple(seen.values())


def _lower_for(s: Saturated, backend: Backend, matcher: Matcher, main: bool, extractor: str) -> Lowered:
    t0 = time.perf_counter()
    ex: Extraction | None = None
    graph: Graph | None = None
    error: str | None = None
    try:
        ex, costs = extract_for(s, backend, extractor)
    except LowerError as e:
        if main:  # (worded with the limit that stopped saturation, when one did)
            raise LowerError(stopped_early(str(e), s.saturation)) from None
        error = stopped_early(str(e), s.saturation)
        costs = Costs(s.tables, s.metas, backend, s.decoded)
    ranking = rank(s.tables, costs, s.roots)
    if ex is not None:
        graph = convert_back(s, ex)
        check_legal(graph, backend)
    describer = Describer(s.tables, s.graph, s.decoded, matcher, ranking, ex, s.roots)
    return Lowered(backend, ranking, describer, ex, graph, error, time.perf_counter() - t0)


def explore(
    graph: Graph | str,
    backend: str | Backend,
    compare: Iterable[str | Backend] = (),
    limits: Limits = Limits(),
    progress: Callable[[Iteration], None] | None = None,
    extractor: str = "greedy",
    what_if: WhatIf | None = None,
) -> Exploration:
    """Saturate one e-graph for `backend` and the `compare` backends together, extract for each
    (with `extractor`: greedy, exact or tree, as `lower` does); with `what_if`, lower for the backend as
    it changes it too, on the same e-graph unless it drops a rule (`explore.whatif`)."""
    if isinstance(graph, str):
        graph = load_graph(graph)
    target = backends_mod.load(backend)
    others = _unique(backends_mod.load(b) for b in compare)
    changed = changed_backend(target, what_if) if what_if is not None and not what_if.empty else None
    shared = changed is not None and what_if is not None and not what_if.without
    start = time.perf_counter()
    s = saturate_graph(graph, _unique((target, *others, *((changed,) if shared else ()))), limits, progress,
                       count_eclasses=True)
    matcher = Matcher(s.tables, s.rules)
    lowered = {target.name: _lower_for(s, target, matcher, main=True, extractor=extractor)}
    for b in others:
        if b.name not in lowered:
            lowered[b.name] = _lower_for(s, b, matcher, main=False, extractor=extractor)
    seconds = dict(s.seconds)
    seconds.update({f"extract {k}": v.seconds for k, v in lowered.items()})
    result = None
    if changed is not None and what_if is not None:
        t0 = time.perf_counter()
        if shared:
            alt = _lower_for(s, changed, matcher, main=False, extractor=extractor)
        else:
            s2 = saturate_graph(graph, (changed,), limits, progress, without=dropped(what_if))
            alt = _lower_for(s2, changed, Matcher(s2.tables, s2.rules), main=False, extractor=extractor)
        main = lowered[target.name]
        result = WhatIfResult(what_if, changed, shared, main.stats(), alt.stats(), differences(main, alt, s.graph))
        seconds["what if"] = time.perf_counter() - t0
    seconds["total"] = time.perf_counter() - start
    # (s.graph: the graph loaded, renumbered 0, 1, ... when its ids were beyond the e-graph's i64)
    return Exploration(s.graph, target, others, s, lowered, seconds, what_if=result)


def _cost(c: float | None) -> str:
    return "not runnable" if c is None else f"{c:,.2f}"


def _summary(ex: Exploration) -> str:
    r = ex.report()
    sat = ex.saturated.saturation
    last = sat.iterations[-1] if sat.iterations else None
    lines = [f"explored {printable(r['graph'] or 'graph')} for {printable(r['backend'])}"]
    lines.append(f"  before  {r['before']['nodes']:>7,} nodes   cost {_cost(r['before']['cost'])}")
    lines.append(f"  after   {r['after']['nodes']:>7,} nodes   cost {_cost(r['after']['cost'])}"
                 + proof_note(r["extraction"] or {}))
    if last is not None:
        lines.append(f"  e-graph {last.eclasses:,} e-classes, {last.enodes:,} e-nodes after {len(sat.iterations)}"
                     f" iterations ({sat.stop_reason})")
        lines.append("  growth  " + "  ".join(f"{it.index}:{it.enodes:,}" for it in sat.iterations[:12])
                     + ("  ..." if len(sat.iterations) > 12 else ""))
    fired = sorted((x for x in r["rules"] if x["matches"]), key=lambda x: -x["matches"])
    lines.append(f"  rules   {len(fired)} of {len(r['rules'])} matched"
                 + (": " + ", ".join(f"{x['name']} {x['matches']:,}" for x in fired[:6]) if fired else "")
                 + (", ..." if len(fired) > 6 else ""))
    choices = ex.choices()
    if choices:
        lines.append(f"  choices ({len(choices)} nodes with alternatives)")
        for c in choices[:20]:
            ch = c.chosen
            what = "none runnable" if ch is None else (
                "kept as is" if ch.original else ch.expr if len(ch.expr) < 70 else ch.label + " ...")
            legal = sum(a.legal for a in c.alternatives)
            lines.append(f"    node {c.node.id:<5} {_node_label(c.node):<30} {len(c.alternatives)} forms,"
                         f" {legal} runnable -> {what}" + ("" if ch is None else f"  (cost {_cost(ch.cost)})"))
        if len(choices) > 20:
            lines.append(f"    ... {len(choices) - 20} more in the reports")
    lines += _convolution_lines(r["convolutions"])
    lines += _what_if_lines(r["what_if"])
    if r["compare"]:
        lines.append("  compare")
        width = max(8, *(len(name) for name in r["compare"]))
        for name, st in r["compare"].items():
            if st["nodes"] is None:
                lines.append(f"    {name:<{width}} no runnable graph: {st['error']}")
            else:
                lines.append(f"    {name:<{width}} {st['nodes']:>7,} nodes   cost {_cost(st['cost'])}")
    return "\n".join(lines)


MAX_CONVOLUTIONS = 12  # convolution nodes listed in the text summary
MAX_CHANGES = 20  # what-if changes listed in the text summary


def _what_if_lines(w: dict[str, Any] | None) -> list[str]:
    """What the what-if changed: the total cost, then node by node, the form before and after."""
    if w is None:
        return []
    asked = ([f"without {', '.join(w['without'])}"] if w["without"] else []) \
        + ([", ".join(f"{k} x{v:g}" for k, v in w["cost"].items())] if w["cost"] else []) \
        + ([f"kernels of {', '.join(w['kernels'])}"] if w["kernels"] else [])
    delta = w["cost_delta"]
    if w["after"]["nodes"] is None:
        return [f"  what if ({'; '.join(asked)}): no runnable graph: {w['after']['error']}"]
    lines = [f"  what if ({'; '.join(asked)}; {'on the same e-graph' if w['one_egraph'] else 'an e-graph of its own'})",
             f"    cost {_cost(w['before']['cost'])} -> {_cost(w['after']['cost'])}"
             + ("" if delta is None else f"  ({delta:+,.2f})")
             + f", {len(w['changed'])} node{'' if len(w['changed']) == 1 else 's'} chose differently"]
    for c in w["changed"][:MAX_CHANGES]:
        def form(f: dict[str, Any] | None) -> str:
            if f is None:  # (an extraction that worked reaches every class it needs)
                return "not computed (no longer needed)"
            text = f["form"] if len(f["form"]) < 60 else f["label"] + " ..."
            return f"{text} (cost {_cost(f['cost'])})"
        lines.append(f"    node {c['node']:<5} {c['op']:<26} {form(c['before'])}  ->  {form(c['after'])}")
    if len(w["changed"]) > MAX_CHANGES:
        lines.append(f"    ... {len(w['changed']) - MAX_CHANGES} more in the reports")
    return lines


def _convolution_lines(convs: list[dict[str, Any]]) -> list[str]:
    """Per convolution node, the expansion each backend chose and why."""
    if not convs:
        return []
    lines = [f"  convolutions ({len(convs)}: the expansion each backend chose, and why)"]
    for c in convs[:MAX_CONVOLUTIONS]:
        a = c["attrs"]
        lines.append(f"    node {c['node']:<5} {c['op']:<22} stride {a['stride']} padding {a['padding']}"
                     f" dilation {a['dilation']} groups {a['groups']}")
        width = max(len(b) for b in c["backends"])
        for b, st in c["backends"].items():
            why = st["why"].removeprefix("chosen: ")
            lines.append(f"      {b:<{width}}  {st['chosen'] or '-'}"
                         + (f"  (cost {_cost(st['cost'])})" if st["chosen"] else "") + f": {why}")
        for e in c["expansions"]:
            lost = sorted({st["why"] for st in e["backends"].values() if not st["legal"]})
            if lost and not e["original"]:
                where = [b for b, st in e["backends"].items() if not st["legal"]]
                lines.append(f"      {e['expansion']} on {', '.join(where)}: {'; '.join(lost)}")
    if len(convs) > MAX_CONVOLUTIONS:
        lines.append(f"    ... {len(convs) - MAX_CONVOLUTIONS} more in the reports")
    return lines


def _node_label(node: Any) -> str:
    kind = node.attrs.get("kind")
    if not kind:
        return node.op
    # a parametrised kind's parameters (LeakyRelu alpha=0.2), so two nodes of one kind are told apart
    params = "".join(f" {k}={v:g}" for k, v in node.attrs.items() if k not in ("kind", "wrt"))
    return f"{node.op}{{{kind}{params}}}"
