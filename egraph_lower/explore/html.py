"""The exploration as one self-contained HTML page: inline CSS and SVG, no script, nothing loaded.

Sections: a summary, the e-graph's growth per iteration (SVG chart), the rules
that ran, the graph before and after (SVG, layered by topological depth;
graphs over `MAX_DRAWN` nodes are summarised by an op-count table and their
first layers: `drawing.py`), each convolution's expansions per backend with why
one won on each (`convolutions_html.py`), each rewritten node's alternatives with
their cost on every explored backend (the chosen one marked), what a what-if changed
(`whatif_html.py`), and the backends compared. The style sheet is `style.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..backends import Backend
from ..extract import graph_cost
from ..graph import Graph
from ..ops import BACKWARD_OPS
from .alternatives import Alternative
from .convolutions_html import convolutions_section
from .whatif_html import what_if_section
from .drawing import MAX_DRAWN, MAX_PER_LAYER, graph_svg, growth_svg, layers, node_text
from .markup import cost_text, esc
from .style import CSS

if TYPE_CHECKING:
    from . import Exploration

MAX_CHOICES = 80  # nodes whose alternatives are listed
MAX_ALTERNATIVES = 16  # alternatives listed per node


def _ms(seconds: float) -> str:
    return "—" if seconds <= 0 else f"{seconds * 1000:.1f} ms" if seconds >= 1e-4 else "<0.1 ms"


def _secs(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 0.1 else f"{seconds * 1000:.1f} ms"


def _op_table(graph: Graph, backend: Backend) -> str:
    counts: dict[str, list[int]] = {}
    for n in graph.nodes:
        label = node_text(n) if n.op not in ("Input", "Param", "Constant") else n.op
        row = counts.setdefault(label, [0, 0])
        row[0] += 1
        row[1] += 0 if backend.runs_node(n) else 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
    body = "".join(
        f"<tr><td><code>{esc(k)}</code></td><td class='num'>{v[0]:,}</td>"
        f"<td>{'<span class=ok>runs</span>' if not v[1] else f'<span class=no>{v[1]:,} not run</span>'}</td></tr>"
        for k, v in rows)
    return f"<table class='ops'><tr><th>op</th><th class='num'>nodes</th><th>{esc(backend.name)}</th></tr>{body}</table>"


def _graph_panel(title: str, graph: Graph, backend: Backend, uid: str) -> tuple[str, float]:
    """The panel and the width of its drawing."""
    cost = graph_cost(graph, backend)
    bad = sum(not backend.runs_node(n) for n in graph.nodes)
    head = (f"<div class='head'><h3>{esc(title)}: {len(graph.nodes):,} nodes, cost {cost_text(cost)}"
            + (f" <span class='tag err'>{bad} node{'s' if bad != 1 else ''} {esc(backend.name)} does not run</span>"
               if bad else f" <span class='tag orig'>runs on {esc(backend.name)}</span>") + "</h3></div>")
    svg, drawn, n_layers = graph_svg(graph, backend, uid=uid)
    total_layers = len(layers(graph))
    body = ""
    if len(graph.nodes) > MAX_DRAWN:
        body += (f"<p class='note'>Over {MAX_DRAWN} nodes: the op counts, and the first {n_layers} of"
                 f" {total_layers} layers ({drawn} nodes).</p>") + _op_table(graph, backend)
    elif drawn < len(graph.nodes):
        body += f"<p class='note'>Wide layers are cut at {MAX_PER_LAYER} boxes.</p>"
    width = float(re.search(r'width="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    return f"<div class='panel'>{head}{body}<div class='drawing'>{svg}</div></div>", width


# --- alternatives -------------------------------------------------------------------------------
def _ops_pills(ops: dict[str, int]) -> str:
    if not ops:
        return "<span class='illegal'>none</span>"
    return "".join(f"<span class='pill'>{esc(k)}{' ×' + str(v) if v > 1 else ''}</span>"
                   for k, v in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))


def _rules_pills(rules: Sequence[str], original: bool) -> str:
    if original:
        return "<span class='illegal'>the node as it is</span>"
    if not rules:
        return "<span class='illegal'>—</span>"
    return "".join(f"<span class='pill rule'>{esc(r)}</span>" for r in rules)


_NAME = re.compile(r"\bn(\d+)\b")


def _choice_block(ex: Exploration, node_id: int, names: Sequence[str]) -> str:
    per = {b: {a.enode: a for a in ex.choice(node_id, b).alternatives} for b in names}
    main = ex.choice(node_id)
    node = main.node
    shown = main.alternatives[:MAX_ALTERNATIVES]
    kind = node.attrs.get("kind")
    title = f"node {node.id} · {node.op}" + (f"{{{kind}}}" if kind else "")
    if node.attrs.get("wrt") == "output":
        title += " (wrt output)"
    tags = "<span class='tag bwd'>backward</span>" if node.op in BACKWARD_OPS else ""
    if node.name:
        tags += f"<span class='tag orig'>{esc(node.name)}</span>"
    head_cells = "".join(f"<th class='num'>{esc(b)}{' ★' if b == ex.backend.name else ''}</th>" for b in names)
    rows = []
    for a in shown:
        cells = []
        for b in names:
            alt: Alternative | None = per[b].get(a.enode)
            if alt is None or not alt.legal:
                cells.append(f"<td class='num illegal' title='not runnable on {esc(b)}'>not runnable</td>")
            elif alt.chosen:
                cells.append(f"<td class='num chosen' title='chosen on {esc(b)}'>✓ {cost_text(alt.cost)}</td>")
            else:
                cells.append(f"<td class='num'>{cost_text(alt.cost)}</td>")
        form = esc(a.expr)
        orig = "<span class='tag orig'>as is</span>" if a.original else ""
        rows.append(f"<tr{' class=sel' if a.chosen else ''}><td><code>{form}</code>{orig}</td>"
                    f"<td>{_ops_pills(a.ops)}</td><td>{_rules_pills(a.rules, a.original)}</td>{''.join(cells)}</tr>")
    more = len(main.alternatives) - len(shown)
    note = f"<p class='note'>… and {more} more alternatives in the JSON report.</p>" if more else ""
    ids = sorted({int(m) for a in shown for m in _NAME.findall(a.expr)} & set(ex.graph.by_id))
    where = ""
    if ids:
        where = "<div class='where'>where " + "; ".join(
            f"<code>n{i}</code> = {esc(node_text(ex.graph.by_id[i]))} {esc(list(ex.graph.by_id[i].shape))}" for i in ids[:12]
        ) + ("; …" if len(ids) > 12 else "") + "</div>"
    return (f"<div class='panel choice'><div class='head'><h3>{esc(title)}</h3>{tags}"
            f"<span class='note'>{len(main.alternatives)} forms, {sum(a.legal for a in main.alternatives)}"
            f" runnable on {esc(ex.backend.name)}</span></div>"
            f"<table><tr><th>form</th><th>ops it adds</th><th>rules</th>{head_cells}</tr>{''.join(rows)}</table>"
            f"{note}{where}</div>")


# --- page ---------------------------------------------------------------------------------------
def _cards(ex: Exploration, r: dict[str, Any]) -> str:
    sat = ex.saturated.saturation
    last = sat.iterations[-1] if sat.iterations else None
    stop = r["stop_reason"]
    stop_tag = "" if stop == "saturated" else " <span class='tag warn'>not saturated</span>"
    cards = [
        ("before", f"{r['before']['nodes']:,} nodes", f"cost {cost_text(r['before']['cost'])}"
         + ("" if r["before"]["cost"] is not None else f" (not runnable on {r['backend']})")),
        ("after", f"{r['after']['nodes']:,} nodes", f"cost {cost_text(r['after']['cost'])}"),
        ("e-graph", f"{last.enodes:,} e-nodes" if last else "—", f"{last.eclasses:,} e-classes" if last else ""),
        ("saturation", f"{len(sat.iterations)} iterations", f"stop: {stop}{stop_tag}"),
        ("rules", f"{sum(1 for x in r['rules'] if x['matches'])} of {len(r['rules'])} matched",
         f"{sum(x['matches'] for x in r['rules']):,} matches"),
        ("time", _secs(ex.seconds.get("total", 0.0)), f"saturate {_secs(ex.seconds.get('saturate', 0.0))}"),
    ]
    return "<div class='cards'>" + "".join(
        f"<div class='card'><div class='k'>{esc(k)}</div><div class='v'>{v}</div><div class='d'>{d}</div></div>"
        for k, v, d in cards) + "</div>"


def _rules_table(rules: list[dict[str, Any]]) -> str:
    fired = sorted((x for x in rules if x["matches"]), key=lambda x: (-x["matches"], x["name"]))
    idle = sorted((x for x in rules if not x["matches"]), key=lambda x: x["name"])
    top = max((x["matches"] for x in fired), default=1)
    timed = any(x["seconds"] > 0 for x in rules)

    def row(x: dict[str, Any]) -> str:
        w = 100 * x["matches"] / top if top else 0
        return (f"<tr><td><code>{esc(x['name'])}</code></td><td>{esc(x['identity'])}</td>"
                f"<td class='num'>{x['matches']:,}</td><td style='width:120px'><div class='bar' style='width:{w:.0f}%'>"
                f"</div></td>" + (f"<td class='num'>{_ms(x['seconds'])}</td>" if timed else "") + "</tr>")

    head = ("<tr><th>rule</th><th>identity</th><th class='num'>matches</th><th></th>"
            + ("<th class='num'>time</th>" if timed else "") + "</tr>")
    out = f"<div class='panel'><table class='rules'>{head}{''.join(row(x) for x in fired)}</table>"
    if not fired:
        out = f"<div class='panel'><p class='note'>No rule matched.</p><table class='rules'>{head}</table>"
    if idle:
        out += (f"<details><summary>{len(idle)} rule{'s' if len(idle) != 1 else ''} ran without a match</summary>"
                f"<table class='rules'>{head}{''.join(row(x) for x in idle)}</table></details>")
    if rules and not timed:
        out += "<p class='note'>egglog reported no time per rule for this run.</p>"
    return out + "</div>"


def _compare_table(ex: Exploration) -> str:
    rows = []
    names = list(ex.lowered)
    stats = {b: ex.lowered[b].stats() for b in names}
    top = max((s["cost"] for s in stats.values() if s["cost"] is not None), default=1.0) or 1.0
    for b in names:
        st = stats[b]
        lo = ex.lowered[b]
        mark = " <span class='tag orig'>explored</span>" if b == ex.backend.name else ""
        if st["nodes"] is None:
            rows.append(f"<tr><td><b>{esc(b)}</b>{mark}</td><td colspan='4' class='no'>no runnable graph:"
                        f" {esc(st['error'])}</td></tr>")
            continue
        assert lo.graph is not None
        counts = lo.graph.op_counts()
        ops = "".join(f"<span class='pill'>{esc(k)} {v}</span>"
                      for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        rows.append(f"<tr><td><b>{esc(b)}</b>{mark}<div class='note'>{esc(lo.backend.description)}</div></td>"
                    f"<td class='num'>{st['nodes']:,}</td><td class='num'>{cost_text(st['cost'])}</td>"
                    f"<td style='width:160px'><div class='bar' style='width:{100 * st['cost'] / top:.0f}%'></div></td>"
                    f"<td>{ops}</td></tr>")
    head = "<tr><th>backend</th><th class='num'>nodes</th><th class='num'>cost</th><th></th><th>ops</th></tr>"
    return f"<div class='panel'><table class='compare'>{head}{''.join(rows)}</table></div>"


def render(ex: Exploration) -> str:
    r = ex.report()
    name = r["graph"] or "graph"
    names = list(ex.lowered)
    choices = ex.choices()
    ordered = sorted(choices, key=lambda c: (c.node.op not in BACKWARD_OPS, c.node.id))
    listed = ordered[:MAX_CHOICES]
    blocks = "".join(_choice_block(ex, c.node.id, names) for c in listed)
    if len(ordered) > MAX_CHOICES:
        blocks += f"<p class='note'>… and {len(ordered) - MAX_CHOICES} more nodes in the JSON report.</p>"
    if not blocks:
        blocks = "<p class='note'>No node was rewritten and the graph has no backward op.</p>"
    legend = ("<div class='legend'><span><i class='sw' style='background:#e8eefc;border-color:#8aa4e0'></i>input / param</span>"
              "<span><i class='sw' style='background:#ffe9d6;border-color:#e59a55'></i>backward op</span>"
              "<span><i class='sw' style='background:#f1ecfc;border-color:#9b87d6'></i>made by a rule</span>"
              "<span><i class='sw' style='background:#fdecea;border-color:#d92d20'></i>not run by the backend</span>"
              "<span><i class='sw' style='border-width:2px'></i>output (thick border)</span></div>")
    iters = r["iterations"]
    growth_rows = "".join(
        f"<tr><td class='num'>{it['index']}</td><td class='num'>{it['eclasses']:,}</td>"
        f"<td class='num'>{it['enodes']:,}</td><td class='num'>{sum(it['matches'].values()):,}</td>"
        f"<td class='num'>{_ms(it['seconds'])}</td></tr>" for it in iters)
    (before, wb), (after, wa) = (_graph_panel("before", ex.graph, ex.backend, "before"),
                                 _graph_panel("after, on " + r["backend"], ex.after, ex.backend, "after"))
    # side by side when both fit the page (columns in proportion to the drawings), else one above the other
    columns = f"minmax(0,{wb:.0f}fr) minmax(0,{wa:.0f}fr)" if wb + wa <= 1150 else "minmax(0,1fr)"
    compare_note = "" if len(names) > 1 else "<p class='note'>Run with --compare a,b to compare backends.</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(name)} on {esc(r['backend'])}: rewrite exploration</title>
<style>{CSS}</style></head>
<body><main>
<h1>{esc(name)} → {esc(r['backend'])}</h1>
<p class="sub">How equality saturation lowered this graph: the e-graph's growth, the rules, what each node
could have become and what extraction chose. Costs are the backend's cost model
(backends compared: {esc(', '.join(names))}).</p>
{_cards(ex, r)}
<h2 id="growth">E-graph growth</h2>
<div class="panel growth"><div class="plot">{growth_svg(iters)}</div>
<div class="side"><table class="iterations"><tr><th class='num'>iteration</th>
<th class='num'>e-classes</th><th class='num'>e-nodes</th><th class='num'>matches</th><th class='num'>time</th></tr>
{growth_rows}</table></div></div>
<h2 id="rules">Rules</h2>
{_rules_table(r['rules'])}
<h2 id="graphs">The graph before and after</h2>
{legend}
<div class="graphs" style="grid-template-columns:{columns}">{before}{after}</div>
{convolutions_section(ex)}
<h2 id="choices">Alternatives</h2>
<p class="note">Each backward op and each rewritten node, with the forms its e-class holds. A cost is what
the form costs on that backend on top of the node's inputs: its kernel and the kernels of the values it needs
that nothing else in the lowered graph needs (values computed anyway, such as the forward pass's activations,
are free). Differences between forms are exactly what switching would change in the graph's cost.
✓ marks the form extraction chose, the cheapest runnable one; ★ the explored backend. "ops it adds" and
"rules" are for the explored backend.</p>
{blocks}
{what_if_section(r['what_if'])}
<h2 id="compare">Backends compared</h2>
{_compare_table(ex)}{compare_note}
</main></body></html>
"""
