"""The activation domains: ReLU's and every activation kind's, the parametrised kinds' included.

x is `x_domain` of the kind (its kinks and poles, tiny and huge values), less the x whose f(x)
overflows d: the forward pass has produced f(x), so it is finite, and beyond it dy * exp(x) overflows
however it is written. An output form's rule sees y = f(x) over those x, rounded to d (f's range, with
the infinities of Rsqrt(0) and Recip(0)). dy is `DY` on a grid with x (or y). A parametrised kind is
checked with one non-default parameter set (`PARAM_SAMPLES`), whose kinks lie off 0, with x also at
those kinks and their neighbours in d.
"""

from __future__ import annotations

import numpy as np

from ...egraph import language
from ...evaluate import activation
from ..dsl import App, Rule
from .base import DY, EPS, grid, lhs_kind, lhs_variables, round_to, x_domain

def activation_domain(rule: Rule, dtype: str, kind: str | None = None) -> dict[str, object]:
    """x over `x_domain` of `kind` (default: the lhs's kind; y = f(x) for an output form), dy from DY
    on a grid."""
    names = lhs_variables(rule)
    kind = kind or lhs_kind(rule)
    x = x_domain(dtype, kind)
    # only x whose forward value f(x) does not overflow d (the forward pass has produced it):
    # beyond, dy * exp(x) overflows however it is written
    f64 = activation(kind, x)
    fd = round_to(f64, dtype).astype(np.float64)
    keep = ~(np.isfinite(f64) & np.isinf(fd))
    x, fd = x[keep], fd[keep]
    env: dict[str, object] = {}
    if "y" in names:  # the output form: y = f(x) over the x domain
        base = np.unique(fd[~np.isnan(fd)])
    else:
        base = x
    if "dy" in names:
        dy = round_to(np.array(DY), dtype).astype(np.float64)
        v, d = grid(base, dy)
        env["dy"] = round_to(d, dtype)
    else:
        v = base
    env["y" if "y" in names else "x"] = round_to(v, dtype)
    return env


def relu_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """`activation_domain` of the kind Relu (ReluBackward's lhs has no kind field)."""
    return activation_domain(rule, dtype, "Relu")


# One parameter set per parametrised kind that its rules are checked with (a rule's fields are scalars):
# a non-default one, with kinks off 0 (ReLU6's 6, softplus's threshold 5 at beta 2), SELU's alpha and
# scale with input_scale 0.5 for Elu.
PARAM_SAMPLES: dict[str, dict[str, float]] = {
    "LeakyRelu": {"alpha": 0.2},
    "Hardtanh": {"min": 0.0, "max": 6.0},
    "Elu": {"alpha": 1.6732632423543772, "scale": 1.0507009873554805, "input_scale": 0.5},
    "Softplus": {"beta": 2.0, "threshold": 5.0},
}


def param_activation_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """As `activation_domain`, with the kind's parameters from `PARAM_SAMPLES` bound to the lhs's
    primitive variables, and x also around the kinks the parameters put elsewhere."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    kind = lhs_kind(rule)
    params = PARAM_SAMPLES[kind]
    names = lhs_variables(rule)
    kinks = [v for v in params.values()] + [params["threshold"] / params["beta"]] if kind == "Softplus" else \
        list(params.values())
    eps = EPS[dtype]
    extra = np.array([k * (1 + s * m * eps) for k in kinks for s in (1, -1) for m in (0, 1, 2, 4)])
    x = np.concatenate([x_domain(dtype, kind), round_to(extra, dtype).astype(np.float64)])
    x = x[np.isfinite(x)]
    f64 = activation(kind, x, params)
    with np.errstate(all="ignore"):
        fd = round_to(f64, dtype).astype(np.float64)
    keep = ~(np.isfinite(f64) & np.isinf(fd))
    x, fd = x[keep], fd[keep]
    base = np.unique(fd[~np.isnan(fd)]) if "y" in names else x
    env: dict[str, object] = {}
    if "dy" in names:
        v, d = grid(base, round_to(np.array(DY), dtype).astype(np.float64))
        env["dy"] = round_to(d, dtype)
    else:
        v = base
    env["y" if "y" in names else "x"] = round_to(v, dtype)
    fields = language.CTORS[lhs.ctor].fields
    for f, p in zip(fields, lhs.params):
        if p[:1].islower():
            env[p] = params[f.name]
    return env

