"""What if: the same graph lowered for a changed backend, and what that changes.

    explore(graph, "metal", what_if=WhatIf(without=("ln-bwd-input",), cost=(("MatMul", 2.0),)))

A what-if changes the explored backend in up to three ways: `without` drops rules (built-in ones, or the
backend file's own), `cost` scales the whole cost of an op (a label the cost model names: `MatMul`,
`Activation.Erf`, `Binary.Div`, or a kernel as `Kernel.<name>`) by a factor (dropping a kernel's rule,
`kernel-<name>`, drops its `-half` variant too), and `kernels` adds the
kernels (and rules) of files holding a backend file's `"kernels"` list, or an object with `"kernels"`
and `"rules"` (`backends/kernels.py`). The changed backend is extracted from the explored e-graph itself
when that holds everything it needs (no rule dropped: a changed cost or a new kernel's rules added to the
one saturation); a dropped rule needs an e-graph saturated without it, a second one.

The difference (`WhatIfResult.to_dict`): every original node (not a leaf) whose chosen form differs,
with its form and its cost (what it adds to the lowered graph, `explore.alternatives`) before and after
(None: not computed, the lowered graph no longer needs the value, as a cross entropy's NLL gradient
where a kernel computes the whole gradient from the log-probabilities), and the two lowered graphs'
costs and the change. Costs before are the explored backend's, after the
changed one's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..backends import WEIGHT_LABELS, Backend
from ..backends import kernels as kernels_mod
from ..errors import BackendError, LowerError
from ..graph import parse_json
from ..reading import BACKEND_BYTES, read_text
from ..rules import BY_NAME
from .alternatives import Alternative

SUFFIX = " (what if)"  # the changed backend's name: the explored one's and this


@dataclass(frozen=True)
class WhatIf:
    without: tuple[str, ...] = ()  # rules dropped
    cost: tuple[tuple[str, float], ...] = ()  # (label, factor)
    kernels: tuple[str, ...] = ()  # paths of kernel files

    @property
    def empty(self) -> bool:
        return not (self.without or self.cost or self.kernels)

    def describe(self) -> dict[str, Any]:
        return {"without": list(self.without), "cost": dict(self.cost), "kernels": list(self.kernels)}


def parse_cost(text: str) -> tuple[str, float]:
    """`OP=FACTOR` (`MatMul=2`) as a label and a factor; LowerError in one line when it is not one."""
    label, sep, value = text.partition("=")
    try:
        factor = float(value)
    except ValueError:
        factor = -1.0
    if not sep or not label or not 0 <= factor <= 1e12 or factor != factor:
        raise LowerError(f"--cost {text!r}: expected OP=FACTOR, a factor from 0 to 1e12 (MatMul=2)")
    return label, factor


def _kernel_file(path: str, where: str) -> tuple[tuple[kernels_mod.KernelDecl, ...], tuple[Any, ...]]:
    try:
        doc = parse_json(read_text(path, "kernel file", BACKEND_BYTES))
    except LowerError as e:
        raise BackendError(f"kernel file {path}: {e}" if not str(e).startswith("cannot read") else str(e)) from None
    if isinstance(doc, list):
        doc = {"kernels": doc}
    if not isinstance(doc, dict) or not set(doc) <= {"kernels", "rules"} or "kernels" not in doc:
        raise BackendError(f"kernel file {path}: expected a list of kernels, or an object with \"kernels\""
                           " (and \"rules\")")
    return kernels_mod.kernels(doc["kernels"], where), kernels_mod.rules(doc.get("rules", []), where)


def changed_backend(base: Backend, w: WhatIf) -> Backend:
    """The explored backend as the what-if changes it (named `<name> (what if)`)."""
    known = set(BY_NAME) | {r.name for r in base.own_rules}
    for name in w.without:
        if name not in known:
            raise LowerError(f"--without {name!r}: no such rule (egraph-lower rules lists them; a backend"
                             f" file's kernel is rule kernel-<name>)")
    labels = set(WEIGHT_LABELS) | {"Kernel"}
    kernels, rules = list(base.kernels), list(base.rules)
    for path in w.kernels:
        ks, rs = _kernel_file(path, path)
        kernels += ks
        rules += rs
    names = [k.name for k in kernels]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise BackendError(f"--kernel: a kernel named {dup!r} is declared twice")
    labels |= {f"Kernel.{k.name}" for k in kernels}
    for label, _ in w.cost:
        if label not in labels:
            raise LowerError(f"--cost {label}: not a label of the cost model (an op, Activation.<kind>,"
                             f" Binary.<op>, Kernel.<name>)")
    cost = dataclasses.replace(base.cost, scale={**base.cost.scale, **dict(w.cost)},
                               kernels={c: k.cost for k in kernels for c in k.ctors})
    return dataclasses.replace(base, name=base.name + SUFFIX, cost=cost, kernels=tuple(kernels), rules=tuple(rules))


def _form(a: Alternative | None) -> dict[str, Any] | None:
    if a is None:
        return None
    return {"form": "kept as is" if a.original else a.expr, "label": a.label, "cost": a.cost, "rules": a.rules}


def dropped(w: WhatIf) -> frozenset[str]:
    """The rules a what-if drops: those it names, and each named kernel rule's `-half` variant."""
    return frozenset(w.without) | {f"{n}-half" for n in w.without if n.startswith("kernel-")}


@dataclass
class WhatIfResult:
    what_if: WhatIf
    backend: Backend  # the changed one
    shared: bool  # extracted from the explored e-graph (else from an e-graph of its own)
    before: dict[str, Any]  # the explored backend's stats (nodes, cost)
    after: dict[str, Any]  # the changed backend's
    changes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def delta(self) -> float | None:
        b, a = self.before.get("cost"), self.after.get("cost")
        return None if a is None or b is None else a - b

    def to_dict(self) -> dict[str, Any]:
        return {**self.what_if.describe(), "backend": self.backend.name, "one_egraph": self.shared,
                "before": self.before, "after": self.after, "cost_delta": self.delta, "changed": self.changes}


def differences(base: Any, changed: Any, graph: Any) -> list[dict[str, Any]]:
    """Per original node (not a leaf) whose chosen form differs between two `Lowered`: its forms and costs
    (none when either has no runnable graph: its stats say why)."""
    out: list[dict[str, Any]] = []
    if base.extraction is None or changed.extraction is None:
        return out
    for node in graph.nodes:
        if node.op in ("Input", "Param", "Constant"):
            continue
        before = base.describer.choice(node).chosen
        after = changed.describer.choice(node).chosen
        fb, fa = _form(before), _form(after)
        if (fb or {}).get("form") == (fa or {}).get("form"):
            continue
        out.append({"node": node.id, "op": _node_label(node), "before": fb, "after": fa})
    return out


def _node_label(node: Any) -> str:
    kind = node.attrs.get("kind") or (node.attrs.get("name") if node.op == "Kernel" else None)
    return f"{node.op}{{{kind}}}" if kind else node.op
