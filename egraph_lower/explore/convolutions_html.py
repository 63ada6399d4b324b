"""The explore page's "Convolutions" section: per convolution node, its expansions on every explored
backend side by side, the chosen one marked, each with why it won or lost there
(the report's `convolutions`, `egraph_lower.explore.convolutions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .markup import cost_text, esc

if TYPE_CHECKING:
    from . import Exploration

MAX_CONVOLUTIONS = 40  # convolution nodes drawn; the rest are in the JSON report


def _cell(st: dict[str, Any]) -> str:
    why = f"<span class='cell-why'>{esc(st['why'])}</span>"
    if not st["legal"]:
        return f"<td class='num illegal' title='{esc(st['why'])}'>not runnable{why}</td>"
    if st["chosen"]:  # (why: in the verdicts below the table)
        return f"<td class='num chosen' title='{esc(st['why'])}'>✓ {cost_text(st['cost'])}</td>"
    return f"<td class='num'>{cost_text(st['cost'])}{why}</td>"


def _rules(expansion: dict[str, Any], backends: list[str]) -> str:
    """The rules of the expansion, and those it takes besides on some backends."""
    if expansion["original"]:
        return "<span class='illegal'>the node as it is</span>"
    own = expansion["expansion"].split(" + ")
    out = "".join(f"<span class='pill rule'>{esc(r)}</span>" for r in own)
    extra: dict[str, list[str]] = {}
    for b in backends:
        for r in expansion["backends"][b]["rules"]:
            if r not in own:
                extra.setdefault(r, []).append(b)
    for r, where in extra.items():
        out += f"<div class='note'>on {esc(', '.join(where))} also <span class='pill rule'>{esc(r)}</span></div>"
    return out


def _block(conv: dict[str, Any], main: str) -> str:
    backends = list(conv["backends"])
    a = conv["attrs"]
    title = f"node {conv['node']} · {conv['op']}"
    detail = (f"{list(conv['shape'])}, stride {a['stride']}, padding {a['padding']}, dilation {a['dilation']},"
              f" groups {a['groups']}")
    head = "".join(f"<th class='num'>{esc(b)}{' ★' if b == main else ''}</th>" for b in backends)
    rows = "".join(
        f"<tr><td><code>{esc(x['expansion'])}</code><div class='note'>top op {esc(x['op'])}</div></td>"
        f"<td>{_rules(x, backends)}</td>{''.join(_cell(x['backends'][b]) for b in backends)}</tr>"
        for x in conv["expansions"])
    verdicts = "".join(
        f"<tr><td><b>{esc(b)}</b></td><td><code>{esc(st['chosen'] or '—')}</code></td>"
        f"<td class='num'>{cost_text(st['cost'])}</td><td class='why'>{esc(st['why'].removeprefix('chosen: '))}</td></tr>"
        for b, st in conv["backends"].items())
    name = f"<span class='tag orig'>{esc(conv['name'])}</span>" if conv["name"] else ""
    return (f"<div class='panel choice conv'><div class='head'><h3>{esc(title)}</h3>{name}"
            f"<span class='note'>{esc(detail)}</span></div>"
            f"<table><tr><th>expansion</th><th>rules</th>{head}</tr>{rows}</table>"
            f"<table class='verdicts'><tr><th>backend</th><th>chosen</th><th class='num'>cost</th><th>why</th></tr>"
            f"{verdicts}</table></div>")


def convolutions_section(ex: Exploration) -> str:
    """The section's HTML, or "" when the graph has no convolution."""
    convs = ex.convolutions()
    if not convs:
        return ""
    blocks = "".join(_block(c, ex.backend.name) for c in convs[:MAX_CONVOLUTIONS])
    if len(convs) > MAX_CONVOLUTIONS:
        blocks += f"<p class='note'>… and {len(convs) - MAX_CONVOLUTIONS} more convolutions in the JSON report.</p>"
    return ("<h2 id=\"convolutions\">Convolutions</h2>\n"
            "<p class='note'>Each convolution and its gradients, with every expansion the e-graph holds for it and"
            " its cost on each explored backend (what it adds on top of the node's inputs, as in the alternatives"
            " below). On each backend the cheapest runnable expansion is chosen (✓); an expansion a backend cannot"
            " run says which ops it would need. ★ marks the explored backend.</p>\n" + blocks)
