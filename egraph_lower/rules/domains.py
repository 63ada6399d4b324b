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
from collections.abc import Callable, Mapping

import numpy as np

from ..egraph import language
from ..evaluate import activation, apply
from ..graph import Node
from ..opdefs import OPDEFS
from ..opdefs.base import WHOLE
from .dsl import App, Rule, Var, variables

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


Env = dict[str, object]


def domain(rule: Rule, dtype: str) -> Env | list[Env]:
    """The environment (variable -> array of dtype, or primitive) the rule is checked on: the domain
    its lhs op declares (`OpDef.domain`, one of `DOMAINS`); a list of them where the domain needs
    arrays of different shapes."""
    ctor = language.CTORS[_ctor(rule)]
    if dict(ctor.implies).get("kind") in PARAM_SAMPLES:  # a parametrised kind's constructor
        return _param_activation_domain(rule, dtype)
    op = ctor.op
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
    if "axis" in names:  # the channel on axis 1 of [N, C, 2] (format version 2's `axis`)
        x, dy = np.stack([x, x[::-1]], axis=2), np.stack([dy, dy[::-1]], axis=2)
        env.update(axis=1, cshape=f"[{len(mean)},1]", axes="[0,2]")
    for name, v in (("x", x), ("mean", mean), ("var", var), ("gamma", gamma), ("beta", beta), ("dy", dy)):
        if name in names:
            env[name] = _round(v, dtype)
    return env


def _softmax_domain(rule: Rule, dtype: str) -> list[Env]:
    """Two environments over the last axis: rows of length 1 (y = 1, or 0 for log-softmax; nan for -inf)
    with every dy (half of them times 1e-30), and rows of C = 7 logits: spreads from 1e-3 to 100 (so some
    y underflow d), rows of equal logits, rows with one dominant logit, large logits (1e4 and beyond, up to a quarter of d's
    largest finite value), rows with -inf entries (masked) and a row all -inf (nan, as torch); y is the
    lhs's forward output (softmax or log-softmax of x, in float64) rounded to d; dy of mixed signs and
    magnitudes, with rows scaled to tiny (1e-30) and huge (1e30, capped to d's range) gradients."""
    names = _variables(rule)
    rng = np.random.default_rng(2)
    rows = [rng.standard_normal(7) * s + c for s in (1e-3, 0.3, 1.0, 5.0, 30.0, 100.0) for c in (0.0, -40.0, 25.0)
            for _ in range(6)]
    rows += [np.full(7, v) for v in (0.0, 3.0, -100.0)]
    rows += [np.where(np.arange(7) == k, big, 0.0) for k in (0, 6) for big in (10.0, 50.0, -50.0)]
    top = MAX[dtype] / 4
    rows += [np.minimum(np.array([1e4, 1e4, 1e4 - 1, 1e4 + 3, -1e4, 0.0, 9990.0]) * m, top) for m in (1.0, 10.0, 1e30)]
    rows += [np.full(7, min(1e4, top)), np.full(7, -top)]
    masked = rng.standard_normal((4, 7)) * 3.0
    masked[0, :6] = masked[1, 1::2] = masked[2, 0] = -np.inf
    masked[3, :] = -np.inf
    x = _round(np.concatenate([np.array(rows), masked]), dtype).astype(np.float64)
    dy = rng.choice(np.array(_DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    dy[-6] *= 1e-30
    dy[-5] *= min(1e30, MAX[dtype] / 1e5)
    single = _round(np.array([0.0, -3.5, 1e4, -1e4, MAX[dtype] / 4, -MAX[dtype] / 4, -np.inf]), dtype)
    x1 = np.repeat(single.astype(np.float64), len(_DY))[:, None]  # every logit with every dy
    dy1 = np.tile(np.array(_DY), len(single))[:, None]
    dy1[1::2] *= 1e-30
    return [_softmax_env(names, rule, x1, dy1, dtype), _softmax_env(names, rule, x, dy, dtype)]


def _softmax_env(names: set[str], rule: Rule, x: np.ndarray, dy: np.ndarray, dtype: str) -> Env:
    with np.errstate(invalid="ignore"):
        s = x - x.max(axis=1, keepdims=True)
        e = np.exp(s)
        total = e.sum(axis=1, keepdims=True)
        y = s - np.log(total) if "LogSoftmax" in _ctor(rule) else e / total
    env: Env = {"axis": -1, "axes": "[1]"}
    for name, v in (("x", x), ("y", y), ("dy", dy)):
        if name in names:
            env[name] = _round(v, dtype)
    return env


def _mse_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """x and target [R, 5] of equal, close (x - t cancels), opposite and far values, magnitudes 1e-20 to
    1e20, within a quarter of d's largest value (x - t is finite in d, as a kernel in d computes it; (x - t)^2
may overflow d, and the reference then overflows the same way; for a sum or mean, small enough that it
is finite); dy of x's shape
    for reduction none, else one scalar of mixed magnitude per reduction."""
    names = _variables(rule)
    rng = np.random.default_rng(3)
    lhs = rule.lhs
    assert isinstance(lhs, App)
    base = np.concatenate([rng.standard_normal(40) * m for m in (1e-20, 1e-3, 1.0, 30.0, 1e4, 1e20)])
    reduction = lhs.params[[f.name for f in language.CTORS[lhs.ctor].fields].index("reduction")]
    # a reduced loss over every element is one number: keep it finite, or the check says only inf == inf
    cap = MAX[dtype] / 4 if reduction == "None" or "Bwd" in lhs.ctor else math.sqrt(MAX[dtype] / base.size) / 4
    x = np.clip(base.reshape(-1, 5), -cap, cap)
    t = np.concatenate([x[:12], x[12:24] * (1 + 1e-3), -x[24:36], rng.standard_normal(x[36:].shape) * 10.0])
    dy = rng.choice(np.array(_DY), size=x.shape) if reduction == "None" else np.array(-0.37)
    env: dict[str, object] = {"axes": "[0,1]"}
    for name, v in (("x", x), ("t", t), ("dy", dy)):
        if name in names:
            env[name] = _round(v, dtype)
    return env


def _nll_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """logp [16, 5, 3] (nll_loss2d's layout: classes on axis 1) = log_softmax of logit rows of spreads
    1e-3 to 1e3 (large logits: logp down to about -2e3), rows of equal logits and one dominant logit; target
    with about one position in five ignored (ignore_index -100); class weights of mixed magnitudes
    (1e-3 to 50); g mixed as dy (per position for `none`, a scalar otherwise); total = the counted weight."""
    rng = np.random.default_rng(11)
    rows = [rng.standard_normal(5) * s for s in (1e-3, 1.0, 30.0, 1e3) for _ in range(9)]
    rows += [np.full(5, v) for v in (0.0, 7.0, -300.0)] + [np.where(np.arange(5) == k, 60.0, 0.0) for k in range(5)]
    rows += [rng.standard_normal(5) for _ in range(48 - len(rows))]
    x = np.array(rows).reshape(16, 3, 5)
    m = x.max(axis=-1, keepdims=True)
    logp = np.transpose(x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)), (0, 2, 1))
    target = rng.integers(0, 5, size=(16, 3))
    target[rng.random((16, 3)) < 0.2] = -100
    weight = np.array([0.1, 1.0, 3.0, 1e-3, 50.0])
    reduction = rule.lhs.params[0] if isinstance(rule.lhs, App) else "none"
    g = rng.choice(np.array(_DY), size=(16, 3)) if reduction == "none" else np.array(-2.75)
    counted = target != -100
    total = np.sum(np.where(counted, weight[np.where(counted, target, 0)], 0.0))
    env: dict[str, object] = {"ignore": -100.0, "perm": "[1,0,2]", "axes": "[0,1]", "target": target}
    for name, v in (("logp", logp), ("weight", weight), ("g", g), ("total", total)):
        env[name] = _round(v, dtype)
    return env


def _dropout_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """x and dy over `x_domain` below MAX/4 (x scale stays finite), a mask keeping about 70%, scale 1/0.7."""
    x = x_domain(dtype)
    x = x[np.abs(x) <= MAX[dtype] / 4]
    mask = np.random.default_rng(5).random(x.shape) < 0.7
    v = _round(x, dtype)
    return {"scale": 1.0 / 0.7, "x": v, "dy": v, "mask": mask}


def _bound_fields(rule: Rule, attrs: Mapping[str, object], first: tuple[int, ...]) -> Env | None:
    """The primitive variables of the rule's lhs bound to the fields that a node of its op with `attrs`
    and a first input of shape `first` is loaded with (`language.encode`: the fields derived from the
    attributes and that shape included); None where a literal field of the lhs differs, so the rule
    would not match such a node."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    node = Node(0, language.CTORS[lhs.ctor].op, (), (), "f32", dict(attrs))
    ctor, values = language.encode(node, len(first), first)
    if language.plain(ctor) != language.plain(lhs.ctor):
        return None
    env: Env = {}
    for param, value in zip(lhs.params, values):
        if param[:1].islower():
            env[param] = value
        elif str(value) != param and not (isinstance(value, float) and value == float(param)):
            return None
    return env


def _embedding_domain(rule: Rule, dtype: str) -> list[Env]:
    """weight [6, 4] of mixed magnitudes; indices [3, 5] with repeats and one row never used, with
    padding row 1 (used three times), row 0 and none (-1); indices [7] over 4 rows (3 used, the
    padding row the last); indices [2, 2, 3] all equal (one row gets every dy). dy of mixed signs
    and magnitudes. Each case only for the rules whose lhs matches it (a padding row or none)."""
    rng = np.random.default_rng(3)
    weight = _round(rng.standard_normal((6, 4)) * np.array([1e-3, 1.0, 30.0, 1e3]), dtype)
    cases = [(np.array([[0, 1, 1, 2, 3], [3, 3, 3, 4, 0], [2, 1, 0, 4, 4]]), 6, 4, pad) for pad in (1, 0, -1)]
    cases += [(np.array([0, 2, 2, 3, 0, 3, 3]), 4, 3, pad) for pad in (3, -1)]
    cases += [(np.full((2, 2, 3), 2), 5, 4, pad) for pad in (-1, 4)]
    envs: list[Env] = []
    for i, w, d, pad in cases:
        dy = rng.choice(np.array(_DY), size=i.shape + (d,)) * rng.uniform(0.5, 2.0, size=i.shape + (d,))
        bound = _bound_fields(rule, {"num_weights": w, "padding_idx": pad}, tuple(dy.shape))
        if bound is not None:
            envs.append({**bound, "weight": weight[:w, :d], "i": i, "indices": i, "g": _round(dy, dtype)})
    return envs


def _pool_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """Pooling backward ops on an input [2, 3, 7, 8] with overlapping windows (kernel 3 stride 2 over
    H; kernel 2 dilation 2 stride 1 over W), padding 1 and ceil_mode (a last, clipped window).
    Max pooling's indices come from x of small integers (many ties), planes of equal values and of
    -inf; average pooling excludes padding from its divisor; adaptive pooling maps 7 x 8 to 3 x 5
    (overlapping windows). dy as for batch norm."""
    from ..opdefs import pool_math

    ishape = [2, 3, 7, 8]
    attrs = {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "dilation": [1, 2], "ceil_mode": True,
             "count_include_pad": False, "divisor_override": None}
    op = language.CTORS[_ctor(rule)].op
    rng = np.random.default_rng(3)
    env: dict[str, object] = {"k": "[3,2]", "s": "[2,1]", "p": "[1,1]", "d": "[1,2]", "c": 1, "cip": 0, "dv": 0,
                              "ishape": "[2,3,7,8]"}
    if op == "MaxPool2dBackward":
        x = rng.integers(-2, 3, size=ishape).astype(np.float64)
        x[0, 1] = 0.5
        x[1, 2] = -np.inf
        out = pool_math.max_out(attrs, ishape[2:])
        env["idx"] = pool_math.max_pool(attrs, x)[1]
        env.update(dflat=f"[2,3,{out[0] * out[1]}]", plane=ishape[2] * ishape[3])
    elif op == "AvgPool2dBackward":
        out = pool_math.avg_out(attrs, ishape[2:])
    else:
        out = (3, 5)
    dy = rng.choice(np.array(_DY), size=(2, 3) + tuple(out)) * rng.uniform(0.5, 2.0, size=(2, 3) + tuple(out))
    env["dy"] = _round(dy, dtype)
    return env


# (x shape, w shape, stride, padding, dilation, groups) of the convolutions the conv rules are checked on
CONV_CASES: tuple[tuple[tuple[int, ...], tuple[int, ...], list[int], list[int], list[int], int], ...] = (
    ((2, 4, 8, 6), (6, 2, 3, 2), [2, 1], [1, 2], [1, 2], 2),  # grouped, taps in the padding, a row no tap reads
    ((2, 3, 9, 8), (4, 3, 3, 2), [2, 3], [1, 1], [2, 1], 1),  # strides that skip input rows and columns
    ((3, 2, 6, 5), (4, 2, 3, 3), [1, 1], [0, 1], [1, 1], 1),  # stride 1: the weight gradient fits the kernel
    ((2, 4, 8, 8), (4, 1, 3, 3), [2, 2], [1, 1], [1, 1], 4),  # depthwise, stride 2 on even sizes
    ((2, 6, 1, 11), (3, 2, 1, 3), [1, 2], [0, 2], [1, 2], 3),  # 1-D as height 1: a stride along W only
    ((1, 2, 9, 7), (2, 2, 2, 2), [3, 3], [3, 0], [2, 1], 1),  # padding past the kernel's reach
)


def _conv_fields(rule: Rule, attrs: dict[str, object], first: tuple[int, ...]) -> dict[str, object] | None:
    """The lhs's primitive variables bound to the fields a node of `attrs` encodes to (its first input of
    shape `first`); None where a literal field of the lhs differs from the node's (a rule for one case)."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    env: dict[str, object] = {}
    for f, param in zip(language.CTORS[lhs.ctor].fields, lhs.params):
        value = f.encode(attrs if f.attr == WHOLE else attrs.get(f.attr, f.default), first if f.shaped else len(first))
        if param[:1].islower():
            env[param] = value
        elif str(value) != param:
            return None
    return env


def _conv_domain(rule: Rule, dtype: str) -> list[dict[str, object]]:
    """Each convolution of `CONV_CASES` (grouped, depthwise, strided with and without input positions
    no tap reads, padded, dilated, asymmetric kernels) whose node the rule's lhs matches: x, w, dy of
    mixed magnitudes (1e-3 to 1e2, both signs, some exact zeros: a channel of x and a sample of dy
    that are all 0)."""
    rng = np.random.default_rng(3)

    def values(shape: tuple[int, ...]) -> np.ndarray:
        return rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3, size=shape)

    lhs = rule.lhs
    assert isinstance(lhs, App)
    envs = []
    for xs, ws, s, p, d, g in CONV_CASES:
        attrs: dict[str, object] = {"stride": s, "padding": p, "dilation": d, "groups": g, "input_shape": list(xs),
                                    "weight_shape": list(ws)}
        x, w = values(xs), values(ws)
        dy = values(apply("Conv2d", attrs, [x, w], "f64").shape)
        x[:, 1] = 0.0
        dy[-1] = 0.0
        arrays = {"x": x, "w": w, "dy": dy}
        first = arrays[lhs.args[0].name if isinstance(lhs.args[0], Var) else "x"].shape
        env = _conv_fields(rule, attrs, first)
        if env is not None:
            envs.append({**env, **{k: _round(v, dtype) for k, v in arrays.items()}})
    if not envs:
        raise ValueError(f"rule {rule.name}: no convolution of CONV_CASES matches its left-hand side")
    return envs


def _variables(rule: Rule) -> set[str]:
    return variables(rule.lhs)


def _offset(dtype: str) -> float:
    """The large offset of the normalization domains: 1e4, or 100 in f16, where a square of 1e4
    overflows (65504) and the half-precision work computes such ops in f32."""
    return 100.0 if dtype == "f16" else 1e4


def _norm_rows(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    """Rows of n values: spreads 1e-3 to 30 around 0, -5 and a large offset, constant rows (zero
    variance) and a row with one outlier."""
    big = _offset(dtype)
    rows = [rng.standard_normal(n) * s + c for s in (1e-3, 1.0, 30.0) for c in (0.0, -5.0, big) for _ in range(2)]
    rows += [np.full(n, v) for v in (0.0, 3.0, big)]
    rows.append(np.where(np.arange(n) == 2, 50.0, 0.1))
    return np.array(rows)


def _layernorm_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """Layer norm, RMS norm and their statistics: x of shape [R, 6] (rows from `_norm_rows`) normalised
    over axis 1, weight and bias of mixed signs, the saved mean and rstd computed from x in float64, dy of
    mixed magnitudes scaled so that dy * weight * rstd stays finite in d."""
    names = _variables(rule)
    rng = np.random.default_rng(3)
    x = _round(_norm_rows(rng, 6, dtype), dtype).astype(np.float64)
    w = np.array([1.0, -0.5, 2.5, 1e-2, 3.0, -1.0])
    b = np.array([0.0, 0.1, -5.0, 1e3, 2.0, -0.3])
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + BN_EPS)
    r = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + BN_EPS)
    dy = rng.choice(np.array(_DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    big = np.abs(dy * w * np.maximum(rstd, r) * np.maximum(1.0, np.abs(x - mean) * rstd)).max()
    dy = dy * min(1.0, MAX[dtype] / (16 * big))
    env: dict[str, object] = {"axis": 1, "axes": "[1]", "lead": "[0]", "eps": BN_EPS, "keep": 1}
    for name, v in (("x", x), ("w", w), ("b", b), ("mean", mean), ("rstd", rstd), ("r", r), ("dy", dy)):
        if name in names:
            env[name] = _round(v, dtype)
    return env


def _bntrain_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """Batch norm in training: x [5, 6, 3] with the channel on axis 1, channels of mixed means and spreads
    (one constant: zero variance; one around 1e4), the saved mean and invstd from x in float64."""
    names = _variables(rule)
    rng = np.random.default_rng(4)
    centre = np.array([0.0, 1.5, -300.0, _offset(dtype), 0.01, -2.0])
    spread = np.array([1.0, 0.0, 1e-3, 200.0, 0.5, 30.0])
    x = centre[None, :, None] + rng.standard_normal((5, 6, 3)) * spread[None, :, None]
    x = _round(x, dtype).astype(np.float64)
    gamma = np.array([1.0, -0.5, 2.5, 1e-2, 3.0, -1.0])
    beta = np.array([0.0, 0.1, -5.0, 1e3, 2.0, -0.3])
    mean = x.mean(axis=(0, 2))
    invstd = 1.0 / np.sqrt(((x - mean[None, :, None]) ** 2).mean(axis=(0, 2)) + BN_EPS)
    dy = rng.choice(np.array(_DY), size=x.shape) * rng.uniform(0.5, 2.0, size=x.shape)
    big = np.abs(dy * (gamma * invstd)[None, :, None]).max() * 8
    dy = dy * min(1.0, MAX[dtype] / (16 * big))
    env: dict[str, object] = {"axis": 1, "axes": "[0,2]", "cshape": "[6,1]", "eps": BN_EPS}
    for name, v in (("x", x), ("gamma", gamma), ("beta", beta), ("mean", mean), ("invstd", invstd), ("dy", dy)):
        if name in names:
            env[name] = _round(v, dtype)
    return env


def _sum_abs(v: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.sum(np.abs(v), axis=axes)


def _ln_stats(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    m = x.mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(axis=axes, keepdims=True) + BN_EPS)


def _bwd_input_scale(g: np.ndarray, xhat: np.ndarray, scale: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """|scale| (|g| + mean|g| + |xhat| mean|g xhat|): the size of the terms a backward input cancels."""
    mean = np.mean(np.abs(g), axis=axes, keepdims=True)
    return np.abs(scale) * (np.abs(g) + mean + np.abs(xhat) * np.mean(np.abs(g * xhat), axis=axes, keepdims=True))


def _bn_c(v: np.ndarray) -> np.ndarray:
    return v[None, :, None]


# The error scale of a normalization rule, by its lhs constructor: the size of the terms the result is
# summed or cancelled from (an error relative to |result| alone is unbounded where they cancel).
SCALES: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {
    "LayerNorm": lambda f: np.abs(_ln_stats(f["x"], (1,)) * f["w"]) + np.abs(f["b"]),
    "RmsNorm": lambda f: np.abs(f["x"] / np.sqrt((f["x"] ** 2).mean(axis=1, keepdims=True) + BN_EPS) * f["w"]),
    "LnBwdInput": lambda f: _bwd_input_scale(f["dy"] * f["w"], (f["x"] - f["mean"]) * f["rstd"], f["rstd"], (1,)),
    "LnBwdWeight": lambda f: _sum_abs(f["dy"] * (f["x"] - f["mean"]) * f["rstd"], (0,)),
    "LnBwdBias": lambda f: _sum_abs(f["dy"], (0,)),
    "RmsBwdInput": lambda f: _bwd_input_scale(f["dy"] * f["w"], f["x"] * f["r"], f["r"], (1,)),
    "RmsBwdWeight": lambda f: _sum_abs(f["dy"] * f["x"] * f["r"], (0,)),
    "BnTrain": lambda f: np.abs(_ln_stats(f["x"], (0, 2)) * _bn_c(f["gamma"])) + np.abs(_bn_c(f["beta"])),
    "BnTrainBwdInput": lambda f: _bwd_input_scale(f["dy"], (f["x"] - _bn_c(f["mean"])) * _bn_c(f["invstd"]),
                                                  _bn_c(f["gamma"] * f["invstd"]), (0, 2)),
    "BnTrainBwdGamma": lambda f: _sum_abs(f["dy"] * (f["x"] - _bn_c(f["mean"])) * _bn_c(f["invstd"]), (0, 2)),
    "BnTrainBwdBeta": lambda f: _sum_abs(f["dy"], (0, 2)),
    # batch-norm inference with the channel on axis 1 of [N, C, 2] (the version-1 forms: check.py)
    "BNAxis": lambda f: np.abs((f["x"] - _bn_c(f["mean"])) / _bn_c(np.sqrt(f["var"] + BN_EPS) / f["gamma"]))
    + np.abs(_bn_c(f["beta"])),
    "BnBwdGammaAxis": lambda f: _sum_abs(f["dy"] * (f["x"] - _bn_c(f["mean"])), (0, 2)) / np.sqrt(f["var"] + BN_EPS),
    "BnBwdBetaAxis": lambda f: _sum_abs(f["dy"], (0, 2)),
}


# the sampling domains an op's declaration may name (`OpDef.domain`)
DOMAINS: dict[str, Callable[[Rule, str], Env | list[Env]]] = {
    "activation": _activation_domain,
    "relu": lambda rule, dtype: _activation_domain(rule, dtype, "Relu"),
    "batchnorm": _bn_domain,
    "softmax": _softmax_domain,
    "mse": _mse_domain,
    "nll": _nll_domain,
    "dropout": _dropout_domain,
    "embedding": _embedding_domain,
    "layernorm": _layernorm_domain,
    "bntrain": _bntrain_domain,
    "maxpool": _pool_domain,
    "avgpool": _pool_domain,
    "conv": _conv_domain,
}


# --------------------------------------------------------------------------- acts: parametrised kinds, slicing

# One parameter set per parametrised kind that its rules are checked with (a rule's fields are scalars):
# a non-default one, with kinks off 0 (ReLU6's 6, softplus's threshold 5 at beta 2), SELU's alpha and
# scale with input_scale 0.5 for Elu.
PARAM_SAMPLES: dict[str, dict[str, float]] = {
    "LeakyRelu": {"alpha": 0.2},
    "Hardtanh": {"min": 0.0, "max": 6.0},
    "Elu": {"alpha": 1.6732632423543772, "scale": 1.0507009873554805, "input_scale": 0.5},
    "Softplus": {"beta": 2.0, "threshold": 5.0},
}


def _param_activation_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """As `_activation_domain`, with the kind's parameters from `PARAM_SAMPLES` bound to the lhs's
    primitive variables, and x also around the kinks the parameters put elsewhere."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    kind = _kind(rule)
    params = PARAM_SAMPLES[kind]
    names = _variables(rule)
    kinks = [v for v in params.values()] + [params["threshold"] / params["beta"]] if kind == "Softplus" else \
        list(params.values())
    eps = EPS[dtype]
    extra = np.array([k * (1 + s * m * eps) for k in kinks for s in (1, -1) for m in (0, 1, 2, 4)])
    x = np.concatenate([x_domain(dtype, kind), _round(extra, dtype).astype(np.float64)])
    x = x[np.isfinite(x)]
    f64 = activation(kind, x, params)
    with np.errstate(all="ignore"):
        fd = _round(f64, dtype).astype(np.float64)
    keep = ~(np.isfinite(f64) & np.isinf(fd))
    x, fd = x[keep], fd[keep]
    base = np.unique(fd[~np.isnan(fd)]) if "y" in names else x
    env: dict[str, object] = {}
    if "dy" in names:
        v, d = _grid(base, _round(np.array(_DY), dtype).astype(np.float64))
        env["dy"] = _round(d, dtype)
    else:
        v = base
    env["y" if "y" in names else "x"] = _round(v, dtype)
    fields = language.CTORS[lhs.ctor].fields
    for f, p in zip(fields, lhs.params):
        if p[:1].islower():
            env[p] = params[f.name]
    return env


# (size, start, end, step) of the slices whose gradients the slicing rules are checked on: Python's
# clamping of negative and too large bounds, steps that fill the axis exactly, leave zeros after the
# run or run past the end (a cut), a step larger than the axis, and empty slices
_SLICES = (
    (9, -7, 6, 1), (6, 0, 6, 1), (6, 4, 2, 1), (8, 0, 8, 2), (8, 1, 8, 2), (9, 0, 9, 2), (10, 0, 5, 2),
    (7, 0, 100, 3), (5, 2, 3, 7), (6, -100, -2, 4), (5, 1, 50, 2), (10, -9, -1, 3), (6, -1, -5, 2),
    (4, 3, 2**62, 5),
)


def _slice_domain(rule: Rule, dtype: str) -> list[Env]:
    """g the gradient of each slice of `_SLICES`, on axis 1 of a rank-2 input [3, size] and on axis 0
    of a rank-3 one [size, 2, 2] (axis -3); only the slices the rule's lhs matches (`slice-bwd-pad`:
    step 1)."""
    rng = np.random.default_rng(3)
    envs: list[Env] = []
    for size, start, end, step in _SLICES:
        n = len(range(*slice(start, end, step).indices(size)))
        for axis, shape in ((1, (3, n)), (-3, (n, 2, 2))):
            attrs = {"axis": axis, "start": start, "end": end, "step": step, "size": size}
            bound = _bound_fields(rule, attrs, shape)
            if bound is not None:
                g = rng.choice(np.array(_DY), size=shape) * rng.uniform(0.5, 2.0, size=shape)
                envs.append({**bound, "g": _round(g, dtype)})
    return envs


DOMAINS["activation_params"] = _param_activation_domain
DOMAINS["slice"] = _slice_domain


# --------------------------------------------------------------------------- attention

# The largest sum of |q_e k_e| scale + |mask| of the attention domain's kept, finite scores t (the
# rounding of t moves exp(t - max) by a relative 0.5 eps |t|, so the rules' error grows with it).
ATTN_LOGIT_MAX = 64.0


def _attention_env(dtype: str, rows: int, cols: int, seed: int) -> Env:
    """One environment of the attention domain: q [2, rows, 4], k [2, cols, 4], v [2, cols, 3], mask
    [rows, cols] (broadcast over the batch), dy [2, rows, 3]; out and lse are the forward's."""
    from ..opdefs.attention import default_scale, probabilities

    rng = np.random.default_rng(seed)
    scale = default_scale(4)
    q = rng.standard_normal((2, rows, 4))
    k = rng.standard_normal((2, cols, 4))
    # batch 0: logits of order 1; batch 1: logits up to ATTN_LOGIT_MAX (some P underflow d); one q row 0
    q[1] *= 5.0
    k[1] *= 5.0
    q[0, 0] = 0.0
    big = np.sum(np.abs(q[:, :, None, :] * k[:, None, :, :]), axis=-1).max() * scale + 3.0
    q[1] *= math.sqrt((ATTN_LOGIT_MAX - 3.0) / big) if big > ATTN_LOGIT_MAX else 1.0
    k[1] *= math.sqrt((ATTN_LOGIT_MAX - 3.0) / big) if big > ATTN_LOGIT_MAX else 1.0
    v = rng.standard_normal((2, cols, 3)) * np.array([1e-3, 1.0, 30.0])
    mask = np.zeros((rows, cols))
    mask[0, -1] = -np.inf  # a masked position
    mask[1, :2] = -np.inf  # row 1: its first columns masked (all it keeps when causal)
    mask[2, :] = -np.inf  # row 2: fully masked
    mask[3, 1] = -3.0
    mask[3, 0] = 2.0  # finite biases
    dy = rng.choice(np.array(_DY), size=(2, rows, 3)) * rng.uniform(0.5, 2.0, size=(2, rows, 3))
    # dy scaled so that every product a lowering rounds (dP = dy v^T, dS k, ...) is finite in d
    dp = np.matmul(np.abs(dy), np.abs(np.swapaxes(v, -1, -2)))
    terms = 2 * dp.max() * max(np.abs(k).sum(axis=-2).max(), np.abs(q).sum(axis=-2).max(), 1.0)
    dy = dy * min(1.0, MAX[dtype] / (16 * terms))
    env: Env = {"scale": scale, "axes": "[2]", "perm": "[0,2,1]", "lshape": f"[2,{rows}]",
                "lkeep": f"[2,{rows},1]"}
    for name, a in (("q", q), ("k", k), ("v", v), ("mask", mask), ("dy", dy)):
        env[name] = _round(a, dtype)
    f = {n: np.asarray(env[n], dtype=np.float64) for n in ("q", "k", "v", "mask", "dy")}
    for causal in (False, True):
        p, lse = probabilities({"scale": scale, "causal": causal}, f["q"], f["k"], f["mask"])
        tag = "c" if causal else "n"
        env[f"out_{tag}"] = _round(np.matmul(p, f["v"]), dtype)
        env[f"lse_{tag}"] = _round(lse, "f32" if dtype in ("f16", "bf16") else dtype)
        # the error scales (see SCALES): the magnitudes each result is summed from
        g = np.matmul(np.abs(f["dy"]), np.abs(np.swapaxes(f["v"], -1, -2)))
        w = p * (g + np.sum(p * g, axis=-1, keepdims=True))
        kept = np.abs(np.matmul(f["q"] * scale, np.swapaxes(f["k"], -1, -2))) + np.where(np.isinf(f["mask"]), 0,
                                                                                          np.abs(f["mask"]))
        env[f"cond_{tag}"] = {
            "Attention": np.matmul(p, np.abs(f["v"])),
            "AttnLse": np.abs(lse) + np.max(kept, axis=-1) + 1.0,
            "AttnBwdValue": np.matmul(np.swapaxes(p, -1, -2), np.abs(f["dy"])),
            "AttnBwdQuery": np.matmul(w, np.abs(f["k"])) * scale,
            "AttnBwdKey": np.matmul(np.swapaxes(w, -1, -2), np.abs(f["q"])) * scale,
        }
    return env


def _attention_domain(rule: Rule, dtype: str) -> list[Env]:
    """Attention and its backward ops over two environments: L < S (5 x 7) and L > S (6 x 3, where a
    causal row keeps every column from row 2 on), each with a masked position, a row that keeps only
    masked columns when causal, a fully masked row (its P is 0), finite biases, a q row of zeros, logits
    of order 1 and up to ATTN_LOGIT_MAX, v of magnitudes 1e-3 to 30, dy mixed; out and lse are the
    forward's (lse in f32 for f16/bf16, as torch keeps it), scale the default 1/sqrt(E)."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    causal = lhs.params[1] == "1"
    tag = "c" if causal else "n"
    out = []
    for rows, cols, seed in ((5, 7, 7), (6, 3, 8)):
        env = _attention_env(dtype, rows, cols, seed)
        env["out"], env["lse"] = env.pop(f"out_{tag}"), env.pop(f"lse_{tag}")
        conds = env.pop(f"cond_{tag}")
        assert isinstance(conds, dict)
        env["cond"] = conds[lhs.ctor]
        for other in ("out", "lse", "cond"):
            env.pop(f"{other}_{'n' if causal else 'c'}")
        out.append(env)
    return out


DOMAINS["attention"] = _attention_domain
for _name in ("Attention", "AttnLse", "AttnBwdValue", "AttnBwdQuery", "AttnBwdKey"):
    SCALES[_name] = lambda f: f["cond"]
