"""What the checker's sampling domains share: each dtype's precision and range, rounding to a dtype,
the x values of the activation domains, gradients dy, and a rule's fields bound as the encoder binds them.

`x_domain` holds 0 and -0.0, tiny values (d's smallest normal, and that times eps), the kinks (+-3 for
the hard kinds, the clamps of erf and atan, expm1's threshold, each with its neighbours in d), a dense
grid over [-8, 8], a coarser one over [-120, 120], large magnitudes (+-1e4, +-1e20, ... and d's largest
finite values; for f64 up to 1e300, as the float64 reference itself overflows beyond), values near the
poles of tan and, for Log, Sqrt, Rsqrt and Recip, a log-spaced sweep 1e-40 to 1e38: the points where a
rounded intermediate or a branch of an expansion goes wrong. `DY` has mixed signs and magnitudes, so
an error is measured against gradients both tiny and large.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ...egraph import language
from ...evaluate import apply
from ...graph import Node
from ..dsl import App, Rule, variables

DTYPES: tuple[str, ...] = ("f32", "f16", "bf16", "f64")
EPS: dict[str, float] = {"f64": 2.0**-52, "f32": 2.0**-23, "f16": 2.0**-10, "bf16": 2.0**-7}
TINY: dict[str, float] = {"f64": 2.0**-1022, "f32": 2.0**-126, "f16": 2.0**-14, "bf16": 2.0**-126}
# |log| of the smallest subnormal: exp(-x) is subnormal for x a little below this, and x * exp(-x)
# then has an absolute error of up to x/2 subnormal quanta. Results below FLOOR are measured
# against FLOOR = TINY * UNDERFLOW_X (so that error is <= 0.5 eps).
UNDERFLOW_X: dict[str, float] = {"f64": 745.0, "f32": 104.0, "f16": 17.0, "bf16": 93.0}
FLOOR: dict[str, float] = {d: TINY[d] * UNDERFLOW_X[d] for d in TINY}
MAX: dict[str, float] = {"f64": float(np.finfo(np.float64).max), "f32": float(np.finfo(np.float32).max),
                         "f16": 65504.0, "bf16": 3.3895313892515355e38}
BN_EPS = 1e-5
# The largest sum of |q_e k_e| scale + |mask| of the attention domains' kept, finite scores t (the
# rounding of t moves exp(t - max) by a relative 0.5 eps |t|, so the rules' error grows with it).
ATTN_LOGIT_MAX = 64.0


def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded once to dtype (as an array of dtype)."""
    return apply("Cast", {"to": dtype}, [np.asarray(values, dtype=np.float64)], dtype)


DY = (1.0, -1.0, 0.3, -2.75, 1e-3, -4e-2, 150.0, -6000.0)  # the gradients dy of mixed signs and magnitudes
_SPECIAL = (0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 1e-4, -1e-4, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 10.0, -10.0,
            20.0, -20.0, 30.0, -30.0, 50.0, -50.0, 80.0, -80.0, 100.0, -100.0, 256.0, -256.0, 300.0, -300.0,
            1e3, -1e3, 1e4, -1e4, 1e6, -1e6, 1e20, -1e20, 1e38, -1e38, 1e300, -1e300)


def lhs_ctor(rule: Rule) -> str:
    """The constructor of the rule's lhs."""
    assert isinstance(rule.lhs, App)
    return rule.lhs.ctor


def lhs_kind(rule: Rule) -> str:
    """The activation kind of the rule's lhs (its `kind` field)."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    ctor = language.CTORS[lhs.ctor]
    implied = dict(ctor.implies)
    if "kind" in implied:  # a parametrised kind's constructor
        return str(implied["kind"])
    return lhs.params[[f.name for f in ctor.fields].index("kind")]


def x_domain(dtype: str, kind: str = "") -> np.ndarray:
    """Finite x values (float64, representable in dtype after rounding) for the activation `kind`."""
    eps, big = EPS[dtype], MAX[dtype]
    pts = [np.linspace(-8.0, 8.0, 1601), np.linspace(-120.0, 120.0, 961), np.array(_SPECIAL)]
    if dtype == "f64":
        # the float64 reference itself overflows near f64's max (e.g. Gelu as x * 2 / 2), so stop at 1e300
        big = 1e300
    pts.append(np.array([big, -big, big / 2, -big / 2, math.sqrt(big), -math.sqrt(big), TINY[dtype], -TINY[dtype],
                         TINY[dtype] * eps, -TINY[dtype] * eps]))
    kinks = [3.0, -3.0, 0.0, 1.0, -1.0, 4.0, -4.0, 0.5, -0.5]  # hard*, clamps of erf/atan, expm1's 1/2 threshold
    kinks += [math.log(0.5), 10.0, -10.0]
    pts.append(np.array([k * (1 + s * m * eps) for k in kinks for s in (1, -1) for m in (1, 2, 4)]))
    if kind in ("Tan", ""):
        poles = np.array([k * math.pi / 2 for k in (-5, -3, -1, 1, 3, 101)])
        pts.append(np.concatenate([poles * (1 + s * m * eps) for s in (1, -1) for m in (0, 1, 3, 16)]))
    if kind in ("Log", "Sqrt", "Rsqrt", "Recip", "Log2", "Log10"):
        pts.append(np.logspace(-40, 38, 157))
    if kind in ("Log2", "Log10"):  # exact powers of the base
        pts.append(np.array([b ** k for b in (2.0, 10.0) for k in range(-30, 31)]))
    if kind == "Erfc":  # the tail down to underflow, and the clamp
        pts.append(np.concatenate([np.linspace(-30.0, 30.0, 2401), np.array([28.0, 27.9, 26.5, 10.0, 9.2, 3.9])]))
    if kind in ("Asin", "Acos", "Erfinv"):  # near +-1, where the root is small and erfinv's tail
        near = np.array([1 - m * eps for m in (0.5, 1, 2, 3, 8, 64, 1024)] + [1 - 10.0 ** -k for k in range(1, 16)]
                        + [1 - 2.0 ** -k for k in range(1, 54)])
        pts.append(np.concatenate([near, -near, np.linspace(-1, 1, 401)]))
    x = np.concatenate(pts)
    with np.errstate(all="ignore"):
        xd = round_to(x, dtype).astype(np.float64)
    xd = xd[np.isfinite(xd)]
    _, first = np.unique(xd.view(np.int64), return_index=True)  # by bits: -0.0 and 0.0 both stay
    return xd[np.sort(first)]


def grid(*arrays: np.ndarray) -> list[np.ndarray]:
    """Every combination of the arrays' values, as one flat array per argument."""
    mesh = np.meshgrid(*arrays, indexing="ij")
    return [m.ravel() for m in mesh]


Env = dict[str, object]  # a rule's variable -> an array of the dtype, or a primitive


def bound_fields(rule: Rule, attrs: Mapping[str, object], first: tuple[int, ...],
                 shapes: tuple[tuple[int, ...], ...] | None = None) -> Env | None:
    """The primitive variables of the rule's lhs bound to the fields that a node of its op with `attrs`
    and a first input of shape `first` is loaded with (`language.encode`: the fields derived from the
    attributes and that shape included; every input's `shapes` for an op of `language.ALL_SHAPES`); None where a literal field of the lhs differs, so the rule
    would not match such a node."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    node = Node(0, language.CTORS[lhs.ctor].op, (), (), "f32", dict(attrs))
    ctor, values = language.encode(node, len(first), first, shapes)
    if language.plain(ctor) != language.plain(lhs.ctor):
        return None
    env: Env = {}
    for param, value in zip(lhs.params, values):
        if param[:1].islower():
            env[param] = value
        elif str(value) != param and not (isinstance(value, float) and value == float(param)):
            return None
    return env


def lhs_variables(rule: Rule) -> set[str]:
    """The variables of the rule's lhs."""
    return variables(rule.lhs)
