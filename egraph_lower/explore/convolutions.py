"""Per convolution, the expansions each explored backend could take, what each costs there, and why one won.

A convolution node (`Conv2d`, `Conv2dBackwardInput`, `Conv2dBackwardWeight`) has one
e-class; its e-nodes are its expansions (the node as it is among them). For every
backend explored (the main one and each compared one), each expansion is described
as `alternatives.Describer` describes it for that backend (its cost on top of the
node's inputs, whether it runs, which rules made it), and given a reason:

- the chosen one: extraction's choice, the cheapest runnable expansion, with how
  much it saves over the next cheapest runnable one (where the greedy extractor's
  local search left a cheaper one, the report says so: it is not exact);
- another runnable one: how much more it costs than the chosen one;
- one that does not run: "not runnable: needs X", X the ops it would need that the
  backend lacks (its own op, or the ops of every form of a value it needs that has
  no runnable form), or "needs its own value" for an e-graph cycle.

A half-precision node (f16, bf16) whose expansions compute in float32 holds its
backend kernel ("as is") and `Cast(op(Cast(inputs)))`; the expansions are those of
the float32 op inside, each named with "(in f32)" and costed with the Casts around it
(the Cast form's cost, less the float32 value's form in it, plus the expansion's).

An expansion is named by the rules that made its e-node from the node, in the order
they applied, joined with " + " ("as is" for the node itself): `conv-bwd-input-conv +
conv-im2col` is the input gradient as a convolution, that convolution then as im2col and
MatMul. Each backend's entry lists every rule of what the expansion adds there (on a
backend without a convolution kernel, an expansion that builds a Conv2d also takes the
rule that lowers that Conv2d).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..convert import is_own
from ..egraph.language import CTORS, REF, plain
from ..rules.dsl import App, Rule
from .alternatives import Alternative, Choice, Describer, label

if TYPE_CHECKING:
    from . import Exploration

CONV_OPS = ("Conv2d", "Conv2dBackwardInput", "Conv2dBackwardWeight")
OPS_OF = {name: c.op for name, c in CTORS.items()}  # constructor -> format op
MAX_NEEDS = 6  # missing ops named per expansion


def made_by(d: Describer, rules: Mapping[str, Rule], c: int, n: int) -> list[str]:
    """The rules that made e-node `n` of class `c` from the class's original node, in the order they
    applied: the rule that made n, preceded by those that made the member its left-hand side matched."""
    t = d.t
    out: list[str] = []
    seen = {n}
    while True:
        made = d.matcher.made_from(c, n)
        if made is None or made[0] not in rules:
            return out[::-1]
        name, m = made
        out.append(name)
        if m in seen or (c in d.origins and is_own(t, m, d.origins[c], d.graph)):
            return out[::-1]
        seen.add(m)
        n = m


def expansion_name(d: Describer, rules: Mapping[str, Rule], c: int, alt: Alternative) -> str:
    if alt.original:
        return "as is"
    return " + ".join(made_by(d, rules, c, alt.enode)) or alt.label


def _shown(alt: Alternative, names: Mapping[int, str]) -> str:
    """The expansion's name, with the other rules it takes on this backend."""
    name = names[alt.enode]
    extra = [r for r in alt.rules if r not in name.split(" + ")]
    return name + (f" (with {', '.join(extra)})" if extra and not alt.original else "")


def missing(d: Describer, n: int) -> list[str]:
    """The ops e-node `n` would need that the backend does not run: n's own op if it does not run,
    else, for each value it needs that has no runnable form, what every form of that value lacks."""
    t, kernel = d.t, d.ranking.node_cost
    out: list[str] = []
    seen: set[int] = set()
    stack = [n]
    while stack:
        m = stack.pop()
        if kernel[m] is None:
            name = label(d.decoded, t.ctor[m], t.fields[m])
            if name not in out:
                out.append(name)
            continue
        for k in t.children[m]:
            if k not in seen and d.form_of(k) < 0:
                seen.add(k)
                stack.extend(e for e in d.nodes_by_class[k] if t.ctor[e] != REF)
    return out


def _reason(alt: Alternative, chosen: Alternative | None, runner_up: Alternative | None, d: Describer,
            names: Mapping[int, str]) -> str:
    if not alt.legal:
        needs = missing(d, alt.enode)
        if not needs:
            return "not runnable: needs its own value (an e-graph cycle)"
        more = len(needs) - MAX_NEEDS
        return "not runnable: needs " + ", ".join(needs[:MAX_NEEDS]) + (f" and {more} more" if more > 0 else "")
    if alt.chosen:
        if runner_up is None:
            return "chosen: the only runnable expansion"
        assert alt.cost is not None and runner_up.cost is not None
        if runner_up.cost < alt.cost:  # the greedy extractor's local search is not exact
            return (f"chosen by extraction, though {_shown(runner_up, names)} costs {alt.cost - runner_up.cost:,.2f}"
                    " less (the greedy extractor's local search missed this switch; --extractor exact solves for"
                    " the optimum)")
        return (f"chosen: the cheapest runnable expansion, {runner_up.cost - alt.cost:,.2f} less than"
                f" {_shown(runner_up, names)}")
    if chosen is None:
        return "runnable; the lowered graph does not need this value"
    assert alt.cost is not None and chosen.cost is not None
    if alt.cost < chosen.cost:
        return f"runnable, {chosen.cost - alt.cost:,.2f} less than the chosen {_shown(chosen, names)}"
    return f"runnable, {alt.cost - chosen.cost:,.2f} more than the chosen {_shown(chosen, names)}"


def _f32_form(d: Describer, choice: Choice) -> tuple[Alternative, int] | None:
    """A half-precision node's Cast form and the class of the float32 op it rounds, or None."""
    t = d.t
    for a in choice.alternatives:
        if not a.original and t.ctor[a.enode] == "Cast" and len(t.children[a.enode]) == 1:
            k = t.children[a.enode][0]
            if any(plain(t.ctor[m]) == plain(t.ctor[o]) for m in d.nodes_by_class[k]
                   for o in d.nodes_by_class[choice.eclass] if o != a.enode and t.ctor[o] != REF):
                return a, k
    return None


def forms(d: Describer, choice: Choice) -> tuple[Choice, int | None]:
    """The node's expansions on one backend: its class's e-nodes, the Cast form of a half-precision
    node replaced by the forms of the float32 op it rounds (see the module docstring); and that op's
    class (None for a node without one)."""
    found = _f32_form(d, choice)
    if found is None:
        return choice, None
    cast, k = found
    t = d.t
    m = next((m for m in d.nodes_by_class[k] if t.ctor[m] != REF and plain(t.ctor[m]) == t.ctor[m]
              and OPS_OF.get(t.ctor[m]) == choice.node.op), None)
    if m is None:
        return choice, None
    inputs_new, region, _ = d.switch(k, m)
    inner = [d.alternative(k, n, (inputs_new, region)) for n in d.nodes_by_class[k] if t.ctor[n] != REF]
    ref = next((a.cost for a in inner if a.enode == d.form_of(k)), None)
    alts = [a for a in choice.alternatives if a is not cast]
    for a in inner:
        legal = a.legal and cast.legal
        cost = None if not legal or cast.cost is None or ref is None or a.cost is None else cast.cost - ref + a.cost
        alts.append(replace(a, legal=legal, cost=cost, chosen=a.chosen and cast.chosen,
                            ops={**a.ops, "Cast": a.ops.get("Cast", 0) + cast.ops.get("Cast", 1)}))
    return Choice(choice.node, choice.eclass, alts), k


def _entries(choice: Choice, d: Describer, names: Mapping[int, str]) -> dict[int, dict[str, Any]]:
    """Per e-node of the class, its description on one backend."""
    chosen = choice.chosen
    runnable = [a for a in choice.alternatives if a.legal and a is not chosen]
    runner_up = min(runnable, key=lambda a: a.cost or 0.0) if runnable else None
    return {a.enode: {"cost": a.cost, "legal": a.legal, "chosen": a.chosen, "rules": list(a.rules),
                      "ops": dict(a.ops), "why": _reason(a, chosen, runner_up, d, names)}
            for a in choice.alternatives}


def convolution(ex: Exploration, node_id: int) -> dict[str, Any]:
    """The per-backend view of one convolution node (see the module docstring)."""
    node = ex.graph.by_id[node_id]
    backends = list(ex.lowered)
    both = {b: forms(ex.lowered[b].describer, ex.choice(node_id, b)) for b in backends}
    choices = {b: ch for b, (ch, _) in both.items()}
    main, inner = both[backends[0]]
    rules = {r.name: r for r in ex.saturated.rules}
    d = ex.main.describer
    names = {a.enode: expansion_name(d, rules, main.eclass, a) if inner is None or d.t.eclass[a.enode] != inner
             else (" + ".join(made_by(d, rules, inner, a.enode)) or "as is") + " (in f32)"
             for a in main.alternatives}
    per = {b: _entries(choices[b], ex.lowered[b].describer, names) for b in backends}
    expansions = [{"expansion": names[a.enode], "op": a.label, "original": a.original,
                   "backends": {b: per[b][a.enode] for b in backends}}
                  for a in main.alternatives]
    summary: dict[str, dict[str, Any]] = {}
    for b in backends:
        ch = choices[b].chosen
        if ch is not None:
            summary[b] = {"chosen": names[ch.enode], "rules": list(ch.rules), "cost": ch.cost,
                          "why": per[b][ch.enode]["why"]}
        elif any(a.legal for a in choices[b].alternatives):
            summary[b] = {"chosen": None, "rules": [], "cost": None,
                          "why": "the lowered graph does not need this value"}
        else:
            summary[b] = {"chosen": None, "rules": [], "cost": None, "why": "no runnable expansion"}
    attrs = {k: node.attrs[k] for k in ("stride", "padding", "dilation", "groups")}
    return {"node": node.id, "op": node.op, "name": node.name, "shape": list(node.shape), "attrs": attrs,
            "backends": summary, "expansions": expansions}


def convolutions(ex: Exploration) -> list[dict[str, Any]]:
    """One entry per convolution node of the graph, in graph order."""
    return [convolution(ex, n.id) for n in ex.graph.nodes if n.op in CONV_OPS]
