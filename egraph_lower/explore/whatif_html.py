"""The what-if section of the exploration page: the asked changes, the cost before and after, and each
node whose choice changed with its form and cost before and after, side by side (`explore.whatif`)."""

from __future__ import annotations

from typing import Any

from .markup import cost_text, esc

MAX_CHANGES = 80  # nodes listed on the page


def _asked(w: dict[str, Any]) -> str:
    parts = [f"without <code>{esc(r)}</code>" for r in w["without"]]
    parts += [f"<code>{esc(k)}</code> cost ×{v:g}" for k, v in w["cost"].items()]
    parts += [f"the kernels of <code>{esc(k)}</code>" for k in w["kernels"]]
    return ", ".join(parts)


def _form(f: dict[str, Any] | None) -> str:
    if f is None:
        return "<td class='note'>not computed: the lowered graph no longer needs it</td><td class='num'></td>"
    rules = "".join(f"<span class='pill'>{esc(r)}</span>" for r in f["rules"])
    return f"<td><code>{esc(f['form'])}</code>{rules}</td><td class='num'>{cost_text(f['cost'])}</td>"


def what_if_section(w: dict[str, Any] | None) -> str:
    if w is None:
        return ""
    where = "on the explored e-graph" if w["one_egraph"] else "on an e-graph saturated without the dropped rules"
    head = f"<h2 id='what-if'>What if</h2><p class='note'>The graph lowered again with {_asked(w)}, {where}."
    if w["after"]["nodes"] is None:
        return head + f"</p><div class='panel'><p class='no'>No runnable graph: {esc(w['after']['error'])}</p></div>"
    delta = w["cost_delta"]
    total = (f" Cost {cost_text(w['before']['cost'])} → {cost_text(w['after']['cost'])}"
             + ("" if delta is None else f" ({'+' if delta >= 0 else '−'}{cost_text(abs(delta))})")
             + f", {w['before']['nodes']:,} → {w['after']['nodes']:,} nodes; {len(w['changed'])} node"
             + f"{'' if len(w['changed']) == 1 else 's'} chose differently. A node's cost is what its form adds"
             " to the lowered graph on top of its inputs.</p>")
    rows = "".join(f"<tr><td class='num'>{c['node']}</td><td>{esc(c['op'])}</td>{_form(c['before'])}{_form(c['after'])}</tr>"
                   for c in w["changed"][:MAX_CHANGES])
    more = len(w["changed"]) - MAX_CHANGES
    note = f"<p class='note'>… and {more} more nodes in the JSON report.</p>" if more > 0 else ""
    if not rows:
        return head + total
    table = ("<div class='panel'><table class='whatif'><tr><th class='num'>node</th><th>op</th><th>before</th>"
             "<th class='num'>cost</th><th>after</th><th class='num'>cost</th></tr>" + rows + "</table></div>")
    return head + total + table + note
