"""The saturated e-graph in Graphviz DOT: each e-class a `subgraph cluster_N`, each e-node a box in it.

An edge goes from an e-node to the e-class of each of its inputs (drawn to the
class's first e-node, clipped at the cluster's border with `lhead`). The e-nodes
the explored backend's extraction chose are filled green, those the backend
cannot run (or whose inputs it cannot compute) are dashed and grey, and the
original nodes' own e-nodes are drawn bold.

Large e-graphs are capped: the `max_classes` e-classes nearest the outputs
(breadth first over every e-node's inputs, then the classes the outputs do not
reach) and `max_enodes_per_class` e-nodes of each are drawn; what was left out
is said in a comment at the top and in the graph's label, and edges into
left-out classes end at one "left out" node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..egraph.language import LEAF, REF, SCALAR
from ..extract.walks import breadth_first
from ..text import printable
from .alternatives import is_own, label, value_name

if TYPE_CHECKING:
    from . import Exploration


def quote(text: str) -> str:
    """A DOT string: quotes and backslashes escaped, newlines as `\\n`, other controls shown escaped."""
    return '"' + printable(text, keep_newlines=True).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def class_order(ex: Exploration) -> list[int]:
    """Every e-class, those the outputs reach first (breadth first), then the rest by id."""
    t = ex.saturated.tables
    nodes = ex.saturated.tables.nodes_by_class()
    order = breadth_first(ex.saturated.roots, lambda c: [k for n in nodes[c] for k in t.children[n]])
    seen = set(order)
    order += [c for c in range(t.n_classes) if c not in seen and nodes[c]]  # ids of no class are skipped
    return order


def render(ex: Exploration, max_classes: int = 400, max_enodes_per_class: int = 24) -> str:
    s = ex.saturated
    t = s.tables
    main = ex.main
    chosen = set(main.extraction.choice.values()) if main.extraction else set()
    ranking = main.ranking
    nodes_by_class = t.nodes_by_class()
    origins: dict[int, list] = {}
    for node in s.graph.nodes:
        origins.setdefault(t.ref[node.id], []).append(node)

    order = class_order(ex)
    shown = order[:max_classes]
    shown_set = set(shown)
    left_classes = len(order) - len(shown)
    real = [[n for n in nodes_by_class[c] if t.ctor[n] != REF] for c in range(t.n_classes)]
    left_enodes = sum(len(real[c]) for c in order[max_classes:])
    trimmed = sum(max(0, len(real[c]) - max_enodes_per_class) for c in shown)
    total_enodes = sum(len(r) for r in real)

    sat = s.saturation
    title = (f"e-graph of {s.graph.name or 'graph'} for {ex.backend.name}: {len(order)} e-classes,"
             f" {total_enodes} e-nodes after {len(sat.iterations)} iterations ({sat.stop_reason})")
    notes = []
    if left_classes:
        notes.append(f"left out {left_classes} of {len(order)} e-classes ({left_enodes} e-nodes):"
                     f" showing the {len(shown)} nearest the outputs")
    if trimmed:
        notes.append(f"left out {trimmed} e-nodes of classes with over {max_enodes_per_class}")
    caption = title + "".join("\n" + n for n in notes)
    caption += "\ngreen: chosen for " + ex.backend.name + "; dashed: not runnable there; bold: an original node"

    out = [f"// {printable(title)}"]  # a newline in a name must not end the comment
    out += [f"// {printable(n)}" for n in notes]
    out += [
        "digraph egraph {",
        "  graph [compound=true, newrank=true, rankdir=TB, fontname=\"Helvetica\", fontsize=11,"
        f" labelloc=t, label={quote(caption)}];",
        "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", fontsize=10];",
        "  edge [color=\"#55607a\", arrowsize=0.6];",
    ]
    anchor: dict[int, str] = {}
    edges: list[tuple[int, int | None]] = []  # e-node -> child class (None: left out)
    need_left_out = False
    for c in shown:
        ens = real[c]
        cl = [f"c{c}"]
        for node in origins.get(c, [])[:3]:
            cl.append(f"n{node.id} {node.op}" + (f"{{{node.attrs['kind']}}}" if "kind" in node.attrs else "")
                      + (f" ({value_name(node)})" if value_name(node) != f"n{node.id}" else ""))
        meta = s.metas[c]
        if meta is not None and meta[1] is not None:
            cl.append(f"{list(meta[0])} {meta[1]}")
        out.append(f"  subgraph cluster_{c} {{")
        out.append(f"    label={quote(chr(10).join(cl))}; style=\"rounded,filled\";"
                   f" fillcolor=\"{'#eef3fb' if c in origins else '#f6f6f6'}\"; color=\"#9aa5b8\"; fontsize=9;")
        if not ens:
            out.append(f"    c{c}_empty [label=\"(no e-node)\", shape=plaintext];")
            anchor[c] = f"c{c}_empty"
        for n in ens[:max_enodes_per_class]:
            ctor = t.ctor[n]
            if ctor == LEAF:
                src = s.graph.by_id[t.fields[n][0]]
                text = f"{src.op} {value_name(src)}"
            elif ctor == SCALAR:
                text = f"{t.fields[n][0]:g}"
            else:
                text = label(s.decoded, ctor, t.fields[n])
            attrs = [f"label={quote(text)}"]
            style = ["rounded", "filled"]
            if n in chosen:
                attrs.append("fillcolor=\"#c8ecc8\"")
            if ranking.cost_of(n) is None:
                style.append("dashed")
                attrs.append("fontcolor=\"#777777\"")
                attrs.append("color=\"#999999\"")
            if any(is_own(t, n, node, s.graph) for node in origins.get(c, [])):
                style.append("bold")
            attrs.append(f"style={quote(','.join(style))}")
            out.append(f"    e{n} [{', '.join(attrs)}];")
            anchor.setdefault(c, f"e{n}")
            for k in t.children[n]:
                need_left_out |= k not in shown_set
                edges.append((n, k if k in shown_set else None))
        if len(ens) > max_enodes_per_class:
            out.append(f"    c{c}_more [label=\"+{len(ens) - max_enodes_per_class} more e-nodes\", shape=plaintext];")
        out.append("  }")
    if need_left_out:
        out.append(f"  left_out [label={quote(f'{left_classes} e-classes left out')}, shape=note,"
                   " fillcolor=\"#fff4d6\"];")
    for n, kid in edges:
        if kid is None:
            out.append(f"  e{n} -> left_out [style=dotted];")
            continue
        head = anchor[kid]
        if t.eclass[n] == kid:
            out.append(f"  e{n} -> {head};")
        else:
            out.append(f"  e{n} -> {head} [lhead=cluster_{kid}];")
    out.append("}")
    return "\n".join(out) + "\n"
