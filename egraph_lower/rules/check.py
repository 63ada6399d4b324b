"""The numerical checker: every rule's two sides evaluated on a domain, per dtype.

For a rule `lhs => rhs` and a dtype d (f64, f32, f16, bf16):
- the inputs are drawn in float64 and rounded to d (both sides see the same values);
- the reference is the lhs evaluated entirely in float64 by `egraph_lower.evaluate`
  (one op of the format each, so `(Backward.Gelu x dy)` is the evaluator's exact
  derivative, not an expansion);
- the result under test is the rhs evaluated in d, node by node: each op computed
  in float64 and rounded once to d, which is what IEEE hardware does in d;
  a literal takes the dtype d of the op using it;
- the error of one element is |got - ref| / scale in units of eps(d) (2^-52, 2^-23,
  2^-10, 2^-7), where scale = max(|ref|, |dy|, FLOOR(d)) for a gradient (FLOOR: a
  small multiple of d's smallest normal, see below):
  an error relative to the incoming gradient is what matters where f' is tiny.
  Forward rules use |ref| (Gelu: max(|ref|, |x|), see forward.py; the batch-norm
  sums and the BN forward use the sum of the magnitudes of the terms, the
  condition of a sum). Equal infinities, and nan against nan, count as equal; a
  reference that overflows d must be met by the same infinity.
- `fused` is the same measure for the lhs evaluated in d (the op as one fused
  kernel, rounded once): the baseline the expansion is compared with.

Domains (`domain`): x includes 0 and -0.0, tiny values, the kinks (+-3 for the
hard kinds, with their neighbours in d), a dense grid over [-8, 8], a coarser one
over [-120, 120], large magnitudes (+-1e4, +-1e20, ... and the dtype's largest
finite values; for f64 up to 1e300, as the float64 reference itself overflows
beyond), values near the poles of tan; x where f(x) overflows d is left out (the
forward pass has produced f(x), so it is finite). dy has mixed signs and magnitudes. y for an output form is f(x)
over the x domain, rounded to d (so f's range, infinities of Rsqrt(0) and
Recip(0) included). Batch norm: x [N, C] around each channel's mean, C channels
with mean/var/gamma/beta of mixed magnitudes, var >= 0 (0 included), eps 1e-5,
and dy scaled so that each term dy (x - mean)/std is finite in d.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import SupportsFloat, cast

import numpy as np

from ..evaluate import activation, apply
from ..egraph import language
from . import ALL_RULES
from .approximations import ATAN_MAX_ABS_ERROR, ERF_MAX_ABS_ERROR
from ..opdefs import OPDEFS
from .dsl import App, Lit, Rule, Term, Var, variables

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

# Bounds on the worst error, in eps(d). An expansion rounds every intermediate in d
# (0.5 eps each, relative to that intermediate); the rules are short (<= ~20 ops)
# and written so that no rounding error is amplified by more than a small factor
# relative to max(|ref|, |dy|): the largest amplifications are x times the
# absolute error of 1 - s or 1 - t^2 in silu / mish / gelu-tanh derivatives, where
# |x| is bounded by the range over which s or t is not yet 1 in d (< 18 in f32,
# < 10 in bf16). 32 eps covers that with a margin and still fails any wrong
# formula (a wrong sign or factor is an error of order 1 = 2^23 eps in f32).
DEFAULT_BOUND = 32.0
# Approximations (erf, atan): their measured absolute error in d (approximations.py),
# in eps(d), plus the rounding bound.
_APPROX = {"erf-lower": ERF_MAX_ABS_ERROR, "atan-lower": ATAN_MAX_ABS_ERROR}


def bound(rule: Rule, dtype: str) -> float:
    """The worst error (in eps(dtype)) the rule may have in `dtype`."""
    if rule.name == "geluapprox-lower":
        # x sigmoid(2u), u = c x (1 + a x^2), is ill-conditioned for x << 0: its relative condition
        # number is |x f'/f| ~ |2u| (1 + 2a x^2)/(1 + a x^2) <= 2|2u|, and the ~5 roundings of u (0.5 eps
        # each) reach the result multiplied by |2u|, which is at most UNDERFLOW_X before f underflows.
        return DEFAULT_BOUND + 2.5 * UNDERFLOW_X[dtype]
    if rule.name in _APPROX:
        # the scale is |ref|: near 0 both approximations are x * (P/Q), relatively as accurate
        # as the fit; elsewhere |ref| >= ~0.1, so the measured absolute error bounds it (with margin).
        return DEFAULT_BOUND + 1.5 * _APPROX[rule.name][dtype] / EPS[dtype]
    return DEFAULT_BOUND


@dataclass(frozen=True)
class CheckResult:
    rule: str
    dtype: str
    worst: float  # worst error of the rhs in dtype, in eps(dtype)
    point: dict[str, float] = field(compare=False)  # the inputs at the worst element
    fused: float  # worst error of the lhs evaluated in dtype (one fused op), same units
    bound: float
    points: int

    @property
    def ok(self) -> bool:
        return self.worst <= self.bound


# --------------------------------------------------------------------------- term evaluation


def _round(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded once to dtype (as an array of dtype)."""
    return apply("Cast", {"to": dtype}, [np.asarray(values, dtype=np.float64)], dtype)


def _field(param: str, env: dict[str, object]) -> object:
    if param[:1].islower():
        return env[param]
    if param.lstrip("-").isdigit():
        return int(param)
    return param


def eval_term(t: Term, env: dict[str, object], dtype: str) -> np.ndarray:
    """A dsl term's value in `dtype`: every op rounded once to dtype (f64: the reference)."""
    if isinstance(t, Var):
        return np.asarray(env[t.name])
    if isinstance(t, Lit):
        return apply("Constant", {"value": t.value}, [], dtype, shape=[])
    assert isinstance(t, App)
    if t.ctor == language.SCALAR:
        return apply("Constant", {"value": float(cast(SupportsFloat, env[t.params[0]]))}, [], dtype, shape=[])
    op, attrs = language.decode(t.ctor, tuple(_field(p, env) for p in t.params))
    args = [eval_term(a, env, dtype) for a in t.args]
    return apply(op, attrs, args, "bool" if op == "Compare" else dtype)


# --------------------------------------------------------------------------- domains

_DY = (1.0, -1.0, 0.3, -2.75, 1e-3, -4e-2, 150.0, -6000.0)
_SPECIAL = (0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 1e-4, -1e-4, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 10.0, -10.0,
            20.0, -20.0, 30.0, -30.0, 50.0, -50.0, 80.0, -80.0, 100.0, -100.0, 256.0, -256.0, 300.0, -300.0,
            1e3, -1e3, 1e4, -1e4, 1e6, -1e6, 1e20, -1e20, 1e38, -1e38, 1e300, -1e300)


def _ctor(rule: Rule) -> str:
    assert isinstance(rule.lhs, App)
    return rule.lhs.ctor


def _kind(rule: Rule) -> str:
    """The activation kind whose domain samples the rule's lhs (its `kind` field; Relu for ReluBackward)."""
    lhs = rule.lhs
    assert isinstance(lhs, App)
    c = language.CTORS[lhs.ctor]
    names = [f.name for f in c.fields]
    return lhs.params[names.index("kind")] if "kind" in names else "Relu"


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


def _activation_domain(rule: Rule, dtype: str) -> dict[str, object]:
    """x over `x_domain` of the lhs's kind (y = f(x) for an output form), dy from _DY on a grid."""
    names = _variables(rule)
    kind = _kind(rule)
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


def _variables(rule: Rule) -> set[str]:
    return variables(rule.lhs)


# the sampling domains an op's declaration may name (`OpDef.domain`)
DOMAINS: dict[str, Callable[[Rule, str], dict[str, object]]] = {
    "activation": _activation_domain,
    "relu": _activation_domain,
    "batchnorm": _bn_domain,
}


# --------------------------------------------------------------------------- the measure


def _scale(rule: Rule, env: dict[str, object], ref: np.ndarray) -> np.ndarray:
    f = {k: np.asarray(v, dtype=np.float64) for k, v in env.items() if isinstance(v, np.ndarray)}
    label = _ctor(rule) if _ctor(rule) != "Act" else f"Act.{_kind(rule)}"
    with np.errstate(all="ignore"):
        if label == "BN":
            return np.abs((f["x"] - f["mean"]) / np.sqrt(f["var"] + BN_EPS) * f["gamma"]) + np.abs(f["beta"])
        if label == "BnBwdGamma":
            return np.sum(np.abs(f["dy"] * (f["x"] - f["mean"])), axis=0) / np.sqrt(f["var"] + BN_EPS)
        if label == "BnBwdBeta":
            return np.sum(np.abs(f["dy"]), axis=0)
        scale = np.abs(ref)
        if "dy" in f:
            scale = np.maximum(scale, np.abs(np.broadcast_to(f["dy"], ref.shape)))
        if label == "Act.Gelu":
            scale = np.maximum(scale, np.abs(f["x"]))
        return scale


def _errors(rule: Rule, env: dict[str, object], got: np.ndarray, ref: np.ndarray, dtype: str) -> np.ndarray:
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    with np.errstate(all="ignore"):
        ref_d = _round(ref, dtype).astype(np.float64)
        scale = np.maximum(_scale(rule, env, ref), FLOOR[dtype])
        err = np.abs(got - ref) / scale / EPS[dtype]
        same = (got == ref) | (np.isnan(got) & np.isnan(ref)) | (np.isinf(ref_d) & (got == ref_d))
        err = np.where(same, 0.0, err)
        err = np.where(np.isnan(err) | (np.isinf(got) != np.isinf(ref_d)), np.inf, err)
    return err


def _point(env: dict[str, object], shape: tuple[int, ...], index: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, v in env.items():
        if isinstance(v, np.ndarray):
            a = np.asarray(v, dtype=np.float64)
            if a.shape == shape:
                out[name] = float(a.ravel()[index])
            elif shape and a.shape == shape[-1:]:
                out[name] = float(a[np.unravel_index(index, shape)[-1]])
    return out


def check_rule(rule: Rule, dtype: str) -> CheckResult:
    env = domain(rule, dtype)
    ref = eval_term(rule.lhs, {k: (_round(v, "f64") if isinstance(v, np.ndarray) else v) for k, v in env.items()},
                    "f64")
    got = eval_term(rule.rhs, env, dtype)
    fused = eval_term(rule.lhs, env, dtype)
    shape = np.broadcast_shapes(np.shape(ref), np.shape(got))
    ref, got = np.broadcast_to(ref, shape), np.broadcast_to(got, shape)
    err = _errors(rule, env, got, ref, dtype)
    ferr = _errors(rule, env, np.broadcast_to(fused, shape), ref, dtype)
    i = int(np.argmax(err)) if err.size else 0
    return CheckResult(rule.name, dtype, float(err.ravel()[i]) if err.size else 0.0, _point(env, shape, i),
                       float(ferr.max()) if ferr.size else 0.0, bound(rule, dtype), int(err.size))


def check(rules: Iterable[Rule] = ALL_RULES, dtypes: Sequence[str] = DTYPES) -> list[CheckResult]:
    """Check every rule in every dtype; one result per (rule, dtype)."""
    return [check_rule(r, d) for r in rules for d in dtypes]


def format_table(results: Sequence[CheckResult]) -> str:
    """One line per rule: worst error per dtype in eps units (the fused op's in brackets), pass/fail."""
    dtypes = list(dict.fromkeys(r.dtype for r in results))
    by_rule: dict[str, dict[str, CheckResult]] = {}
    for r in results:
        by_rule.setdefault(r.rule, {})[r.dtype] = r
    width = max([len(n) for n in by_rule] + [4])
    head = f"{'rule':<{width}}  " + "  ".join(f"{d:>17}" for d in dtypes) + "  status"
    lines = [head, "-" * len(head)]
    for name, per in by_rule.items():
        cells = []
        for d in dtypes:
            cell = per.get(d)
            cells.append(f"{'':>17}" if cell is None else f"{_num(cell.worst):>8} [{_num(cell.fused):>6}]")
        bad = [r for r in per.values() if not r.ok]
        status = "ok" if not bad else "FAIL " + "; ".join(f"{r.dtype} at {_fmt_point(r.point)}" for r in bad)
        lines.append(f"{name:<{width}}  " + "  ".join(cells) + "  " + status)
    lines.append("")
    lines.append("worst error of the expansion in eps(dtype) [the fused op rounded once, for comparison];")
    lines.append(f"bound {DEFAULT_BOUND:g} eps, plus the stated error of the erf/atan approximations")
    worst = {d: max((r for r in results if r.dtype == d), key=lambda r: r.worst / r.bound) for d in dtypes}
    lines.append("worst rule per dtype: " + ", ".join(f"{d} {w.rule} ({_num(w.worst)})" for d, w in worst.items()))
    return "\n".join(lines)


def _num(v: float) -> str:
    if v == 0:
        return "0"
    if math.isinf(v):
        return "inf"
    return f"{v:.3g}" if v < 1e4 else f"{v:.2e}"


def _fmt_point(p: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:.6g}" for k, v in p.items())


# --------------------------------------------------------------------------- the catalogue


def catalogue_markdown(rules: Iterable[Rule] = ALL_RULES) -> str:
    """docs/rules.md: every rule with its group, identity, what it lowers and needs, and its egglog text."""
    rules = list(rules)
    out = [
        "# The rule catalogue",
        "",
        "Generated by `python -m egraph_lower.rules.check --markdown > docs/rules.md` from the rules in",
        "`egraph_lower/rules/`; do not edit by hand. Every rule is checked numerically in f64, f32, f16 and",
        "bf16 by `egraph_lower/rules/check.py` (`egraph-lower rules --check`).",
        "",
        "Groups: `backward` expands a backward op; `relation` relates the input and output forms of a",
        "gradient; `forward` lowers a forward op. A rule runs only for a backend that lacks what it",
        "lowers (`rules.select`), so every op a backend runs natively is kept as it is.",
        "",
    ]
    counts: dict[str, int] = {}
    for r in rules:
        counts[r.group] = counts.get(r.group, 0) + 1
    out.append(f"{len(rules)} rules: " + ", ".join(f"{n} {g}" for g, n in counts.items()) + ".")
    out.append("")
    out.append("| rule | group | identity | lowers | needs |")
    out.append("|---|---|---|---|---|")
    for r in rules:
        ident = r.identity.replace("|", "\\|")
        out.append(f"| `{r.name}` | {r.group} | {ident} | `{r.lowers}` | {', '.join(f'`{n}`' for n in r.needs)} |")
    out.append("")
    out.append("## egglog")
    for r in rules:
        out += ["", f"### `{r.name}`", "", r.identity, "", "```", r.egglog(r.group), "```"]
    return "\n".join(out) + "\n"


def _main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m egraph_lower.rules.check", description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="print the rule catalogue (docs/rules.md)")
    ap.add_argument("--rule", action="append", help="check only these rules")
    args = ap.parse_args(argv)
    if args.markdown:
        print(catalogue_markdown(), end="")
        return 0
    rules = [r for r in ALL_RULES if not args.rule or r.name in args.rule]
    results = check(rules)
    print(format_table(results))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(_main())
