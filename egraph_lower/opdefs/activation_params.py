"""The parameters of the parametrised activation kinds (format version 2), as attributes and e-nodes.

`Activation` and `ActivationBackward` take, for the kinds that declare them
(`kinds.py`, `Kind.params`): LeakyRelu `alpha`; Hardtanh `min`, `max`; Elu `alpha`,
`scale`, `input_scale`; Softplus `beta`, `threshold`. A parameter left out takes
its default. In the e-graph each parametrised kind has its own constructors whose
f64 fields are the parameters (the kind is implied by the constructor). Elu and
Softplus nodes whose parameters all equal the defaults encode to version 1's
constructors (`Act`, `ActBwd`, `ActBwdOut` with a `kind` field), so a version-1
graph loads, lowers and is written exactly as before; LeakyRelu and Hardtanh
always use theirs. Softplus has two: with a threshold, and without one (no linear
region: `SoftplusB`, beta only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from . import kinds as K
from .base import F64, Attr, Ctor, Field, head
from .meta import show

PARAM_ONLY: frozenset[str] = frozenset({"LeakyRelu", "Hardtanh"})  # no version-1 (unparametrised) form
PARAMS: dict[str, tuple[tuple[str, float | None], ...]] = {k.name: k.params for k in K.KINDS if k.params}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _number_check(name: str) -> Any:
    def check(v: Any) -> None:
        if not _is_number(v):
            raise ValueError(f"attribute {show(name)} must be a finite number, got {show(v)}")
    return check


_NAMES: tuple[str, ...] = tuple(dict.fromkeys(n for ps in PARAMS.values() for n, _ in ps))
ATTRS: tuple[Attr, ...] = tuple(Attr(n, _number_check(n), required=False) for n in _NAMES)


def check_params(attrs: Mapping[str, Any]) -> None:
    """Parameters only where the kind declares them, and values the kind is defined for."""
    kind = attrs["kind"]
    allowed = {n for n, _ in PARAMS.get(kind, ())}
    extra = sorted(n for n in _NAMES if n in attrs and n not in allowed)
    if extra:
        raise ValueError(f"attribute {show(extra[0])} is not a parameter of kind {show(kind)}"
                         + (f" (it has {', '.join(sorted(allowed))})" if allowed else " (it has none)"))
    p = K.params_of(K.BY_NAME[kind], attrs) if allowed else {}
    if kind == "Hardtanh" and not p["min"] <= p["max"]:
        raise ValueError(f"Hardtanh needs min <= max, got min {show(p['min'])} and max {show(p['max'])}")
    if kind == "Softplus" and p["beta"] == 0:
        raise ValueError("Softplus needs beta != 0")
    if kind == "Elu" and attrs.get("wrt") == "output" and not (p["scale"] > 0 and p["alpha"] >= 0):
        raise ValueError(f"Elu's wrt 'output' form needs scale > 0 and alpha >= 0 (y > 0 exactly where x > 0), "
                         f"got scale {show(p['scale'])} and alpha {show(p['alpha'])}")


def _fields(kind: str, names: tuple[str, ...]) -> tuple[Field, ...]:
    defaults = dict(PARAMS[kind])
    return tuple(Field(n, F64, lambda v, rank: float(v), lambda v: v, defaults[n]) for n in names)


Accepts = Callable[[Mapping[str, Any]], bool]


def _not_default(kind: str) -> Accepts:
    params = PARAMS[kind]
    return lambda attrs: any(attrs.get(n) is not None and attrs.get(n) != d for n, d in params)


# (kind, spelling in the rule notation, its parameter fields, when a node takes the constructor:
# None = always). Softplus has two: without a threshold (no linear region) and with one.
_FORMS: tuple[tuple[str, str, tuple[str, ...], Accepts | None], ...] = (
    ("LeakyRelu", "LeakyRelu", ("alpha",), None),
    ("Hardtanh", "Hardtanh", ("min", "max"), None),
    ("Elu", "EluP", ("alpha", "scale", "input_scale"), _not_default("Elu")),
    ("Softplus", "SoftplusB", ("beta",), lambda a: a.get("threshold") is None and a.get("beta", 1.0) != 1.0),
    ("Softplus", "SoftplusP", ("beta", "threshold"), lambda a: a.get("threshold") is not None),
)

FORWARD_CTORS: tuple[Ctor, ...] = tuple(
    Ctor(f"Act{sp}", "Activation", _fields(k, names), 1, (head(sp),), implies=(("kind", k),), accepts=accepts)
    for k, sp, names, accepts in _FORMS)
BACKWARD_CTORS: tuple[Ctor, ...] = tuple(
    Ctor(f"ActBwd{sp}", "ActivationBackward", _fields(k, names), 2, (head(f"Backward.{sp}"),),
         implies=(("kind", k),), accepts=accepts)
    for k, sp, names, accepts in _FORMS) + tuple(
    Ctor(f"ActBwdOut{sp}", "ActivationBackward", _fields(k, names), 2, (head(f"BackwardOut.{sp}"),),
         implies=(("kind", k), ("wrt", "output")), accepts=accepts)
    for k, sp, names, accepts in _FORMS if K.BY_NAME[k].grad_out is not None)
