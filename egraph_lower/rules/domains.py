"""The numerical checker's sampling domains, and the precision of each dtype it checks in.

An op's declaration names its domain (`OpDef.domain`, a key of `DOMAINS`); a domain
gives the environment (variable -> array of the dtype, or a primitive) that a
rule whose lhs is that op is checked on.

x includes 0 and -0.0, tiny values, the kinks (+-3 for the
hard kinds, with their neighbours in d), a dense grid over [-8, 8], a coarser one
over [-120, 120], large magnitudes (+-1e4, +-1e20, ... and the dtype's largest
finite values; for f64 up to 1e300, as the float64 reference itself overflows
beyond), values near the poles of tan; x where f(x) overflows d is left out (the
forward pass has produced f(x), so it is finite). dy has mixed signs and magnitudes. y for an output form is f(x)
over the x domain, rounded to d (so f's range, infinities of Rsqrt(0) and
Recip(0) included). Batch norm: x [N, C] around each channel's mean, C channels
with mean/var/gamma/beta of mixed magnitudes, var >= 0 (0 included), eps 1e-5,
and dy scaled so that each term dy (x - mean)/std is finite in d. Softmax: see
`_softmax_domain`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..egraph import language
from ..evaluate import activation, apply
from ..opdefs import OPDEFS
from .dsl import App, Rule, variables

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


def _round(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded once to dtype (as an array of dtype)."""
    return apply("Cast", {"to": dtype}, [np.asarray(values, dtype=np.float64)], dtype)


_DY = (1.0, -1.0, 0.3, -2.75, 1e-3, -4e-2, 150.0, -6000.0)
_SPECIAL = (0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 1e-4, -1e-4, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 10.0, -10.0,
            20.0, -20.0, 30.0, -30.0, 50.0, -50.0, 80.0, -80.0, 100.0, -100.0, 256.0, -256.0, 300.0, -300.0,
            1e3, -1e3, 1e4, -1e4, 1e6, -1e6, 1e20, -1e20, 1e38, -1e38, 1e300, -1e300)


def _ctor(rule: Rule) -> str:
    assert isinstance(rule.lhs, App)
    return rule.lhs.ctor


def _kind(rule: Rule) -> str:
    """The activation kind of the rule's lhs (its `kind` field)."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    names = [f.name for f in language.CTORS[lhs.ctor].fields]
    return lhs.params[names.index("kind")]


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
    if kind in ("Log", "Sqrt", "Rsqrt", "Recip"):
        pts.append(np.logspace(-40, 38, 157))
    x = np.concatenate(pts)
    with np.errstate(all="ignore"):
        xd = _round(x, dtype).astype(np.float64)
    xd = xd[np.isfinite(xd)]
    _, first = np.unique(xd.view(np.int64), return_index=True)  # by bits: -0.0 and 0.0 both stay
    return xd[np.sort(first)]


def _grid(*arrays: np.ndarray) -> list[np.ndarray]:
    mesh = np.meshgrid(*arrays, indexing="ij")
    return [m.ravel() for m in mesh]


def domain(rule: Rule, dtype: str) -> dict[str, object]:
    """The environment (variable -> array of dtype, or primitive) the rule is checked on: the domain
    its lhs op declares (`OpDef.domain`, one of `DOMAINS`)."""
    op = language.CTORS[_ctor(rule)].op
    name = OPDEFS[op].domain
    if name is None:
        raise ValueError(f"rule {rule.name}: {op} declares no checker domain (OpDef.domain)")
    return DOMAINS[name](rule, dtype)


def _activation_domain(rule: Rule, dtype: str, kind: str | None = None) -> dict[str, object]:
    """x over `x_domain` of `kind` (default: the lhs's kind; y = f(x) for an output form), dy from _DY
    on a grid."""
    names = _variables(rule)
    kind = kind or _kind(rule)
    x = x_domain(dtype, kind)
    # only x whose forward value f(x) does not overflow d (the forward pass has produced it):
    # beyond, dy * exp(x) overflows however it is written
    f64 = activation(kind, x)
    fd = _round(f64, dtype).astype(np.float64)
    keep = ~(np.isfinite(f64) & np.isinf(fd))
    x, fd = x[keep], fd[keep]
    env: dict[str, object] = {}
    if "y" in names:  # the output form: y = f(x) over the x domain
        base = np.unique(fd[~np.isnan(fd)])
    else:
        base = x
    if "dy" in names:
        dy = _round(np.array(_DY), dtype).astype(np.float64)
        v, d = _grid(base, dy)
        env["dy"] = _round(d, dtype)
    else:
        v = base
    env["y" if "y" in names else "x"] = _round(v, dtype)
    return env


def _bn_domain(rule: Rule, dtype: str) -> dict[str, object]:
    names = _variables(rule)
    mean = np.array([0.0, 1.5, -300.0, 1e4, 0.01, -2.0])
    var = np.array([1.0, 0.0, 1e-3, 4e4, 0.25, 1e3])
    gamma = np.array([1.0, -0.5, 2.5, 1e-2, 3.0, -1.0])
    beta = np.array([0.0, 0.1, -5.0, 1e3, 2.0, -0.3])
    z = np.concatenate([np.linspace(-8, 8, 161), [0.0, 1e-3, -1e-3]])
    x = mean[None, :] + z[:, None] * np.sqrt(var + BN_EPS)[None, :]
    rng = np.random.default_rng(1)
    dy = rng.choice(np.array(_DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    # each per-element term dy (x - mean) / std must be finite in d: a lowering rounds it to d
    # (the fused op need not); the sum, and so the result, may still overflow
    terms = np.abs(dy * (x - mean) / np.sqrt(var + BN_EPS))
    dy = dy * min(1.0, MAX[dtype] / (4 * terms.max()))
    env: dict[str, object] = {"eps": BN_EPS, "axes": "[0]"}
    for name, v in (("x", x), ("mean", mean), ("var", var), ("gamma", gamma), ("beta", beta), ("dy", dy)):
        if name in names:
            env[name] = _round(v, dtype)
    return env


def _softmax_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """Rows of C = 7 logits over the last axis: spreads from 1e-3 to 100 (so some y underflow d), rows
    of equal logits and rows with one dominant logit; y = softmax(x) rounded to d; dy as for batch norm."""
    names = _variables(rule)
    rng = np.random.default_rng(2)
    rows = [rng.standard_normal(7) * s + c for s in (1e-3, 0.3, 1.0, 5.0, 30.0, 100.0) for c in (0.0, -40.0, 25.0)
            for _ in range(6)]
    rows += [np.full(7, v) for v in (0.0, 3.0, -100.0)]
    rows += [np.where(np.arange(7) == k, big, 0.0) for k in (0, 6) for big in (10.0, 50.0, -50.0)]
    x = _round(np.array(rows), dtype).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    dy = rng.choice(np.array(_DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    env: dict[str, object] = {"axis": -1, "axes": "[1]"}
    for name, v in (("x", x), ("y", y), ("dy", dy)):
        if name in names:
            env[name] = _round(v, dtype)
    return env


def _conv_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """One grouped, strided, padded and dilated convolution (G = 2, stride [2,1], padding [1,2], dilation
    [1,2]: taps in the padding, and input rows no tap reads): x, w, dy of mixed magnitudes (1e-3 to 1e2,
    both signs, some exact zeros: a channel of x and a sample of dy that are all 0)."""
    rng = np.random.default_rng(3)

    def values(shape: tuple[int, ...]) -> np.ndarray:
        return rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3, size=shape)

    x, w, dy = values((2, 4, 7, 6)), values((6, 2, 3, 2)), values((2, 6, 4, 8))
    x[:, 1] = 0.0
    dy[1] = 0.0
    env: dict[str, object] = {"s": "[2,1]", "p": "[1,2]", "d": "[1,2]", "g": 2, "ishape": "[2,4,7,6]",
                              "wshape": "[6,2,3,2]", "k": "[3,2]"}
    for name, v in (("x", x), ("w", w), ("dy", dy)):
        env[name] = _round(v, dtype)
    return env


def _variables(rule: Rule) -> set[str]:
    return variables(rule.lhs)


# the sampling domains an op's declaration may name (`OpDef.domain`)
DOMAINS: dict[str, Callable[[Rule, str], dict[str, object]]] = {
    "activation": _activation_domain,
    "relu": lambda rule, dtype: _activation_domain(rule, dtype, "Relu"),
    "batchnorm": _bn_domain,
    "softmax": _softmax_domain,
    "conv": _conv_domain,
}
