"""The explore page's drawings, as inline SVG: the e-graph's growth per iteration, and a graph
layered by topological depth (graphs over `MAX_DRAWN` nodes cut to their first layers)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..backends import Backend
from ..graph import Graph, Node
from ..ops import BACKWARD_OPS
from .markup import esc

MAX_DRAWN = 150  # nodes drawn per graph; larger graphs are summarised
MAX_PER_LAYER = 24  # boxes per layer before "+k more"
MAX_LAYERS = 30  # layers drawn of a summarised graph


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
        parts.append(f'<g><title>{esc(_tip(n))}' + ("" if runs else f"\nnot run by {esc(backend.name)}")
                     + ("\nan output" if n.id in outputs else "") + "</title>"
                     f'<rect x="{cx - bw / 2:.1f}" y="{y}" width="{bw:.1f}" height="{bh}" rx="6" fill="{fill}"'
                     f' stroke="{stroke}" stroke-width="{sw}"{dash}/>'
                     f'<text x="{cx:.1f}" y="{y + 17}" font-size="11" text-anchor="middle" fill="#1f2633">'
                     f'{esc(node_text(n))}</text></g>')
    parts += extra
    parts.append("</svg>")
    return "".join(parts), len(pos), len(rows)
