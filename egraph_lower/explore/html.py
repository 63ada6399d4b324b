"""The exploration as one self-contained HTML page: inline CSS and SVG, no script, nothing loaded.

Sections: a summary, the e-graph's growth per iteration (SVG chart), the rules
that ran, the graph before and after (SVG, layered by topological depth;
graphs over `MAX_DRAWN` nodes are summarised by an op-count table and their
first layers), each rewritten node's alternatives with their cost on every
explored backend (the chosen one marked), and the backends compared.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from ..backends import Backend
from ..extract import graph_cost
from ..graph import Graph, Node
from ..ops import BACKWARD_OPS
from ..text import printable
from .alternatives import Alternative

if TYPE_CHECKING:
    from . import Exploration

MAX_DRAWN = 150  # nodes drawn per graph; larger graphs are summarised
MAX_PER_LAYER = 24  # boxes per layer before "+k more"
MAX_LAYERS = 30  # layers drawn of a summarised graph
MAX_CHOICES = 80  # nodes whose alternatives are listed
MAX_ALTERNATIVES = 16  # alternatives listed per node

CSS = """
:root { --ink:#1f2633; --muted:#667085; --line:#d9dee8; --bg:#f6f7fb; --card:#fff; --accent:#3b6fd8;
        --good:#1e8a4c; --goodbg:#e3f5ea; --bad:#b42318; --badbg:#fdecea; --warn:#9a6700; --warnbg:#fff4d6; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
       color:var(--ink); background:var(--bg); }
main { max-width:1280px; margin:0 auto; padding:24px 28px 60px; }
h1 { font-size:22px; margin:0 0 4px; } h2 { font-size:17px; margin:34px 0 10px; }
h3 { font-size:14px; margin:0; }
.sub { color:var(--muted); margin:0 0 18px; }
.cards { display:flex; flex-wrap:wrap; gap:12px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 16px; min-width:170px; }
.card .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.card .v { font-size:20px; font-weight:600; margin-top:2px; }
.card .d { color:var(--muted); font-size:12px; }
.panel { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:14px 16px; overflow:auto; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:12px; color:var(--muted); font-weight:600; text-transform:uppercase; letter-spacing:.03em; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
tr:last-child td { border-bottom:none; }
code, .mono { font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; }
.bar { height:8px; background:#c9d6f3; border-radius:4px; min-width:2px; }
.pill { display:inline-block; padding:0 7px; border-radius:9px; font-size:12px; background:#eef1f6; margin:1px 2px 1px 0; }
.pill.rule { background:#efe9fb; color:#5b3ea8; }
.ok { color:var(--good); } .no { color:var(--bad); }
.chosen { background:var(--goodbg); font-weight:600; }
.illegal { color:#98a2b3; }
.tag { font-size:11px; padding:1px 6px; border-radius:8px; margin-left:6px; vertical-align:1px; }
.tag.bwd { background:#ffe9d6; color:#9a4a00; } .tag.orig { background:#eef1f6; color:var(--muted); }
.tag.warn { background:var(--warnbg); color:var(--warn); } .tag.err { background:var(--badbg); color:var(--bad); }
.choice { margin:0 0 14px; }
.choice .head { display:flex; align-items:baseline; gap:10px; margin-bottom:6px; flex-wrap:wrap; }
.choice .where { color:var(--muted); font-size:12px; margin-top:6px; }
.graphs { display:grid; grid-template-columns:1fr; gap:14px; align-items:start; }
.drawing { text-align:center; }
svg.graph, svg.chart { max-width:100%; height:auto; }
.growth { display:flex; flex-wrap:wrap; gap:18px; align-items:flex-start; }
.growth .plot { flex:2 1 560px; min-width:0; }
.growth .side { flex:1 1 340px; min-width:300px; max-height:300px; overflow:auto; }
.legend span { display:inline-flex; align-items:center; gap:5px; margin-right:14px; color:var(--muted); font-size:12px; }
.sw { width:14px; height:14px; border-radius:4px; display:inline-block; border:1.5px solid #98a2b3; }
details summary { cursor:pointer; color:var(--accent); margin:8px 0; }
.note { color:var(--muted); font-size:12px; margin:6px 0 0; }
svg text { font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif; }
"""


def _e(x: Any) -> str:
    return escape(printable(str(x), keep_newlines=True), quote=True)


def _num(c: float | None) -> str:
    if c is None:
        return "—"
    return f"{c:,.2f}" if abs(c) < 1e6 else f"{c:,.3g}"


def _ms(seconds: float) -> str:
    return "—" if seconds <= 0 else f"{seconds * 1000:.1f} ms" if seconds >= 1e-4 else "<0.1 ms"


def _secs(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 0.1 else f"{seconds * 1000:.1f} ms"


def _nice_ticks(hi: float, n: int = 5) -> list[float]:
    if hi <= 0:
        return [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(hi / step)) + 1)]


def _fmt_tick(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


# --- growth chart -------------------------------------------------------------------------------
def growth_svg(iterations: Sequence[dict[str, Any]]) -> str:
    if not iterations:
        return '<p class="note">No iteration ran.</p>'
    w, h, left, right, top, bottom = 700, 280, 58, 58, 18, 40
    pw, ph = w - left - right, h - top - bottom
    xs = [it["index"] for it in iterations]
    x0, x1 = min(xs) - 0.5, max(xs) + 0.5
    counts = [max(it["enodes"], it["eclasses"]) for it in iterations]
    ticks = _nice_ticks(max(counts) or 1)
    ymax = ticks[-1]
    matches = [sum(it["matches"].values()) for it in iterations]
    mticks = _nice_ticks(max(matches) or 1, 4)
    mmax = mticks[-1]

    def X(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * pw

    def Y(v: float) -> float:
        return top + ph - v / ymax * ph

    def YM(v: float) -> float:
        return top + ph - v / mmax * ph

    parts = [f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img"'
             ' aria-label="e-graph growth per iteration" class="chart">']
    for t in ticks:
        y = Y(t)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#e6e9f0"/>')
        parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" font-size="11" text-anchor="end" fill="#667085">'
                     f'{_fmt_tick(t)}</text>')
    for t in mticks:
        parts.append(f'<text x="{w - right + 8}" y="{YM(t) + 4:.1f}" font-size="11" fill="#9a7fd1">'
                     f'{_fmt_tick(t)}</text>')
    bw = max(4.0, min(34.0, pw / len(iterations) * 0.55))
    step = max(1, math.ceil(len(iterations) / 20))
    for i, it in enumerate(iterations):
        x = X(it["index"])
        m = matches[i]
        parts.append(f'<rect x="{x - bw / 2:.1f}" y="{YM(m):.1f}" width="{bw:.1f}" height="{top + ph - YM(m):.1f}"'
                     f' fill="#e4dcf7"><title>iteration {it["index"]}: {m:,} matches</title></rect>')
        if i % step == 0 or i == len(iterations) - 1:
            parts.append(f'<text x="{x:.1f}" y="{h - bottom + 16}" font-size="11" text-anchor="middle"'
                         f' fill="#667085">{it["index"]}</text>')
    parts.append(f'<text x="{left + pw / 2}" y="{h - 6}" font-size="11" text-anchor="middle" fill="#667085">'
                 'iteration</text>')
    for key, color, name in (("enodes", "#3b6fd8", "e-nodes"), ("eclasses", "#1e8a4c", "e-classes")):
        pts = " ".join(f"{X(it['index']):.1f},{Y(it[key]):.1f}" for it in iterations if it[key] >= 0)
        if not pts:
            continue
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2.2"/>')
        for it in iterations:
            if it[key] >= 0:
                parts.append(f'<circle cx="{X(it["index"]):.1f}" cy="{Y(it[key]):.1f}" r="3.2" fill="{color}">'
                             f'<title>iteration {it["index"]}: {it[key]:,} {name}</title></circle>')
    parts.append(f'<line x1="{left}" y1="{top + ph}" x2="{w - right}" y2="{top + ph}" stroke="#98a2b3"/>')
    lx: float = left + 10
    for color, name in (("#3b6fd8", "e-nodes"), ("#1e8a4c", "e-classes"), ("#c9b8ef", "rule matches (right axis)")):
        parts.append(f'<rect x="{lx}" y="{top + 2}" width="12" height="12" rx="2" fill="{color}"/>'
                     f'<text x="{lx + 17}" y="{top + 12}" font-size="11.5" fill="#344054">{name}</text>')
        lx += 17 + 7.2 * len(name) + 18
    parts.append("</svg>")
    return "".join(parts)


# --- graph drawing ------------------------------------------------------------------------------
def node_text(node: Node) -> str:
    a = node.attrs
    if node.op in ("Input", "Param"):
        return f"{node.op} {a.get('name', '')}"
    if node.op == "Constant":
        v = a.get("value")
        return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else "Constant"
    detail = a.get("kind") or a.get("op")
    return f"{node.op}{{{detail}}}" if detail else node.op


def _tip(node: Node) -> str:
    attrs = ", ".join(f"{k}={v}" for k, v in node.attrs.items() if k != "value" or not isinstance(v, list))
    return (f"node {node.id}: {node.op}" + (f" ({attrs})" if attrs else "") + f"\n{list(node.shape)} {node.dtype}"
            + (f"\ninputs {', '.join(map(str, node.inputs))}" if node.inputs else "")
            + (f"\nname {node.name}" if node.name else ""))


def layers(graph: Graph) -> list[list[Node]]:
    """Nodes by depth (the longest path from a leaf); a leaf sits just above its first user."""
    depth: dict[int, int] = {}
    for n in graph.nodes:
        depth[n.id] = 1 + max((depth[i] for i in n.inputs), default=-1)
    users: dict[int, list[int]] = {}
    for n in graph.nodes:
        for i in n.inputs:
            users.setdefault(i, []).append(n.id)
    for n in graph.nodes:
        if not n.inputs and n.id in users:
            depth[n.id] = max(0, min(depth[u] for u in users[n.id]) - 1)
    out: list[list[Node]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for n in graph.nodes:
        out[depth[n.id]].append(n)
    return out


def graph_svg(graph: Graph, backend: Backend, max_nodes: int = MAX_DRAWN, uid: str = "g") -> tuple[str, int, int]:
    """The graph as an SVG, inputs on top; (svg, nodes drawn, layers drawn).

    Past `max_nodes` nodes, only the first layers (up to `max_nodes` boxes and `MAX_LAYERS` layers)."""
    all_layers = layers(graph)
    drawn: list[list[Node]] = []
    count = 0
    summarised = len(graph.nodes) > max_nodes
    for layer in all_layers:
        if count and count + min(len(layer), MAX_PER_LAYER) > max_nodes:
            break
        if summarised and len(drawn) == MAX_LAYERS:
            break
        drawn.append(layer)
        count += min(len(layer), MAX_PER_LAYER)
    outputs = set(graph.outputs)
    bh, vgap, hgap, pad = 26, 44, 12, 16
    pos: dict[int, tuple[float, float, float]] = {}  # id -> (center x, top y, width)
    rows: list[tuple[list[Node], int]] = []
    order: dict[int, float] = {}
    for li, layer in enumerate(drawn):
        def bary(n: Node) -> float:
            xs = [order[i] for i in n.inputs if i in order]
            return sum(xs) / len(xs) if xs else order.get(n.id, 1e9)

        layer = sorted(layer, key=lambda n: (bary(n), n.id))
        shown = layer[:MAX_PER_LAYER]
        for j, n in enumerate(shown):
            order[n.id] = j  # position within the layer, for the next layer's barycentres
        rows.append((shown, len(layer) - len(shown)))
    widths = []
    for shown, more in rows:
        ws = [max(46.0, 6.6 * len(node_text(n)) + 18) for n in shown] + ([70.0] if more else [])
        widths.append((ws, sum(ws) + hgap * (len(ws) - 1)))
    total_w = max((w for _, w in widths), default=200.0) + 2 * pad
    extra: list[str] = []
    for li, ((shown, more), (ws, lw)) in enumerate(zip(rows, widths)):
        x = pad + (total_w - 2 * pad - lw) / 2
        y: float = pad + li * (bh + vgap)
        for n, bw in zip(shown, ws):
            pos[n.id] = (x + bw / 2, y, bw)
            x += bw + hgap
        if more:
            extra.append(f'<rect x="{x:.1f}" y="{y}" width="70" height="{bh}" rx="6" fill="#f2f4f7" stroke="#d0d5dd"'
                         f' stroke-dasharray="3 3"/><text x="{x + 35:.1f}" y="{y + 17}" font-size="11"'
                         f' text-anchor="middle" fill="#667085">+{more} more</text>')
    total_h = pad * 2 + len(rows) * (bh + vgap) - vgap
    parts = [f'<svg viewBox="0 0 {total_w:.0f} {total_h:.0f}"'
             f' width="{total_w:.0f}" height="{total_h:.0f}" role="img" class="graph">',
             f'<defs><marker id="{uid}-arr" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" markerHeight="6"'
             ' orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#98a2b3"/></marker></defs>']
    for n in graph.nodes:
        if n.id not in pos:
            continue
        cx, y, _ = pos[n.id]
        for i in dict.fromkeys(n.inputs):
            if i not in pos:
                continue
            px, py, _ = pos[i]
            y0, y1 = py + bh, y
            mid = (y0 + y1) / 2
            parts.append(f'<path d="M{px:.1f},{y0:.1f} C{px:.1f},{mid:.1f} {cx:.1f},{mid:.1f} {cx:.1f},{y1 - 1:.1f}"'
                         f' fill="none" stroke="#b4bccb" stroke-width="1.2" marker-end="url(#{uid}-arr)"/>')
    for n in graph.nodes:
        if n.id not in pos:
            continue
        cx, y, bw = pos[n.id]
        runs = backend.runs_node(n)
        if n.op in ("Input", "Param"):
            fill, stroke = "#e8eefc", "#8aa4e0"
        elif n.op == "Constant":
            fill, stroke = "#f2f4f7", "#c4cad6"
        elif n.op in BACKWARD_OPS:
            fill, stroke = "#ffe9d6", "#e59a55"
        elif n.name and "/" in n.name:
            fill, stroke = "#f1ecfc", "#9b87d6"  # made by a rule (provenance name: origin/rule...)
        else:
            fill, stroke = "#ffffff", "#98a2b3"
        if not runs:
            fill, stroke = "#fdecea", "#d92d20"
        sw = "2.4" if n.id in outputs else "1.2"
        dash = ' stroke-dasharray="4 3"' if not runs else ""
        parts.append(f'<g><title>{_e(_tip(n))}' + ("" if runs else f"\nnot run by {_e(backend.name)}")
                     + ("\nan output" if n.id in outputs else "") + "</title>"
                     f'<rect x="{cx - bw / 2:.1f}" y="{y}" width="{bw:.1f}" height="{bh}" rx="6" fill="{fill}"'
                     f' stroke="{stroke}" stroke-width="{sw}"{dash}/>'
                     f'<text x="{cx:.1f}" y="{y + 17}" font-size="11" text-anchor="middle" fill="#1f2633">'
                     f'{_e(node_text(n))}</text></g>')
    parts += extra
    parts.append("</svg>")
    return "".join(parts), len(pos), len(rows)


def _op_table(graph: Graph, backend: Backend) -> str:
    counts: dict[str, list[int]] = {}
    for n in graph.nodes:
        label = node_text(n) if n.op not in ("Input", "Param", "Constant") else n.op
        row = counts.setdefault(label, [0, 0])
        row[0] += 1
        row[1] += 0 if backend.runs_node(n) else 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
    body = "".join(
        f"<tr><td><code>{_e(k)}</code></td><td class='num'>{v[0]:,}</td>"
        f"<td>{'<span class=ok>runs</span>' if not v[1] else f'<span class=no>{v[1]:,} not run</span>'}</td></tr>"
        for k, v in rows)
    return f"<table class='ops'><tr><th>op</th><th class='num'>nodes</th><th>{_e(backend.name)}</th></tr>{body}</table>"


def _graph_panel(title: str, graph: Graph, backend: Backend, uid: str) -> tuple[str, float]:
    """The panel and the width of its drawing."""
    cost = graph_cost(graph, backend)
    bad = sum(not backend.runs_node(n) for n in graph.nodes)
    head = (f"<div class='head'><h3>{_e(title)}: {len(graph.nodes):,} nodes, cost {_num(cost)}"
            + (f" <span class='tag err'>{bad} node{'s' if bad != 1 else ''} {_e(backend.name)} does not run</span>"
               if bad else f" <span class='tag orig'>runs on {_e(backend.name)}</span>") + "</h3></div>")
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
    return "".join(f"<span class='pill'>{_e(k)}{' ×' + str(v) if v > 1 else ''}</span>"
                   for k, v in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))


def _rules_pills(rules: Sequence[str], original: bool) -> str:
    if original:
        return "<span class='illegal'>the node as it is</span>"
    if not rules:
        return "<span class='illegal'>—</span>"
    return "".join(f"<span class='pill rule'>{_e(r)}</span>" for r in rules)


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
        tags += f"<span class='tag orig'>{_e(node.name)}</span>"
    head_cells = "".join(f"<th class='num'>{_e(b)}{' ★' if b == ex.backend.name else ''}</th>" for b in names)
    rows = []
    for a in shown:
        cells = []
        for b in names:
            alt: Alternative | None = per[b].get(a.enode)
            if alt is None or not alt.legal:
                cells.append(f"<td class='num illegal' title='not runnable on {_e(b)}'>not runnable</td>")
            elif alt.chosen:
                cells.append(f"<td class='num chosen' title='chosen on {_e(b)}'>✓ {_num(alt.cost)}</td>")
            else:
                cells.append(f"<td class='num'>{_num(alt.cost)}</td>")
        form = _e(a.expr)
        orig = "<span class='tag orig'>as is</span>" if a.original else ""
        rows.append(f"<tr{' class=sel' if a.chosen else ''}><td><code>{form}</code>{orig}</td>"
                    f"<td>{_ops_pills(a.ops)}</td><td>{_rules_pills(a.rules, a.original)}</td>{''.join(cells)}</tr>")
    more = len(main.alternatives) - len(shown)
    note = f"<p class='note'>… and {more} more alternatives in the JSON report.</p>" if more else ""
    ids = sorted({int(m) for a in shown for m in _NAME.findall(a.expr)} & set(ex.graph.by_id))
    where = ""
    if ids:
        where = "<div class='where'>where " + "; ".join(
            f"<code>n{i}</code> = {_e(node_text(ex.graph.by_id[i]))} {_e(list(ex.graph.by_id[i].shape))}" for i in ids[:12]
        ) + ("; …" if len(ids) > 12 else "") + "</div>"
    return (f"<div class='panel choice'><div class='head'><h3>{_e(title)}</h3>{tags}"
            f"<span class='note'>{len(main.alternatives)} forms, {sum(a.legal for a in main.alternatives)}"
            f" runnable on {_e(ex.backend.name)}</span></div>"
            f"<table><tr><th>form</th><th>ops it adds</th><th>rules</th>{head_cells}</tr>{''.join(rows)}</table>"
            f"{note}{where}</div>")


# --- page ---------------------------------------------------------------------------------------
def _cards(ex: Exploration, r: dict[str, Any]) -> str:
    sat = ex.saturated.saturation
    last = sat.iterations[-1] if sat.iterations else None
    stop = r["stop_reason"]
    stop_tag = "" if stop == "saturated" else " <span class='tag warn'>not saturated</span>"
    cards = [
        ("before", f"{r['before']['nodes']:,} nodes", f"cost {_num(r['before']['cost'])}"
         + ("" if r["before"]["cost"] is not None else f" (not runnable on {r['backend']})")),
        ("after", f"{r['after']['nodes']:,} nodes", f"cost {_num(r['after']['cost'])}"),
        ("e-graph", f"{last.enodes:,} e-nodes" if last else "—", f"{last.eclasses:,} e-classes" if last else ""),
        ("saturation", f"{len(sat.iterations)} iterations", f"stop: {stop}{stop_tag}"),
        ("rules", f"{sum(1 for x in r['rules'] if x['matches'])} of {len(r['rules'])} matched",
         f"{sum(x['matches'] for x in r['rules']):,} matches"),
        ("time", _secs(ex.seconds.get("total", 0.0)), f"saturate {_secs(ex.seconds.get('saturate', 0.0))}"),
    ]
    return "<div class='cards'>" + "".join(
        f"<div class='card'><div class='k'>{_e(k)}</div><div class='v'>{v}</div><div class='d'>{d}</div></div>"
        for k, v, d in cards) + "</div>"


def _rules_table(rules: list[dict[str, Any]]) -> str:
    fired = sorted((x for x in rules if x["matches"]), key=lambda x: (-x["matches"], x["name"]))
    idle = sorted((x for x in rules if not x["matches"]), key=lambda x: x["name"])
    top = max((x["matches"] for x in fired), default=1)
    timed = any(x["seconds"] > 0 for x in rules)

    def row(x: dict[str, Any]) -> str:
        w = 100 * x["matches"] / top if top else 0
        return (f"<tr><td><code>{_e(x['name'])}</code></td><td>{_e(x['identity'])}</td>"
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
            rows.append(f"<tr><td><b>{_e(b)}</b>{mark}</td><td colspan='4' class='no'>no runnable graph:"
                        f" {_e(st['error'])}</td></tr>")
            continue
        assert lo.graph is not None
        counts = lo.graph.op_counts()
        ops = "".join(f"<span class='pill'>{_e(k)} {v}</span>"
                      for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        rows.append(f"<tr><td><b>{_e(b)}</b>{mark}<div class='note'>{_e(lo.backend.description)}</div></td>"
                    f"<td class='num'>{st['nodes']:,}</td><td class='num'>{_num(st['cost'])}</td>"
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
<title>{_e(name)} on {_e(r['backend'])}: rewrite exploration</title>
<style>{CSS}</style></head>
<body><main>
<h1>{_e(name)} → {_e(r['backend'])}</h1>
<p class="sub">How equality saturation lowered this graph: the e-graph's growth, the rules, what each node
could have become and what extraction chose. Costs are the backend's cost model
(backends compared: {_e(', '.join(names))}).</p>
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
<h2 id="choices">Alternatives</h2>
<p class="note">Each backward op and each rewritten node, with the forms its e-class holds. A cost is what
the form costs on that backend on top of the node's inputs: its kernel and the kernels of the values it needs
that nothing else in the lowered graph needs (values computed anyway, such as the forward pass's activations,
are free). Differences between forms are exactly what switching would change in the graph's cost.
✓ marks the form extraction chose, the cheapest runnable one; ★ the explored backend. "ops it adds" and
"rules" are for the explored backend.</p>
{blocks}
<h2 id="compare">Backends compared</h2>
{_compare_table(ex)}{compare_note}
</main></body></html>
"""
