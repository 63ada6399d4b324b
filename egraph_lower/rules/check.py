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
  small multiple of d's smallest normal, see domains/base.py):
  an error relative to the incoming gradient is what matters where f' is tiny.
  Forward rules use |ref| (Gelu: max(|ref|, |x|), see forward.py; the batch-norm
  sums, the BN forward and the log-softmax backward use the sum of the magnitudes of
  the terms, the
  condition of a sum). Equal infinities, and nan against nan, count as equal; a
  reference that overflows d must be met by the same infinity.
- `fused` is the same measure for the lhs evaluated in d (the op as one fused
  kernel, rounded once): the baseline the expansion is compared with.
- `via_f32`, for f16 and bf16 only: the same measure for the rhs evaluated in f32
  (literals in f32) and rounded once to d, which is what a lowered f16/bf16 graph
  computes (`egraph/load.py`) unless its backend computes in the low precision. The
  rule fails where it is worse than `fused` by more than HALF_MARGIN eps(d): the
  expansion computed in float32 must be no worse than the eager kernel rounded once.

Domains: `domains/` (each op's declaration names one).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import SupportsFloat, cast

import numpy as np

from ..egraph import language
from ..evaluate import apply
from . import ALL_RULES
from .approximations import ATAN_MAX_ABS_ERROR, ERF_MAX_ABS_ERROR
from .approx_erfc import ERFC_MAX_REL_ERROR
from .approx_erfinv import ERFINV_MAX_REL_ERROR
from .domains import BN_EPS, DTYPES, EPS, FLOOR, SCALES, TINY, UNDERFLOW_X, domain, lhs_ctor, lhs_kind, round_to
from .domains import GROUP_SCALES
from .dsl import App, Lit, Rule, Term, Var, variables
from .domains.base import Env
from ..errors import LowerError
from ..opdefs.fractional_pool import ARITHMETIC_IN_DTYPE

KERNEL_CHECK = "kernel-check"  # the group of the rules that check a backend's kernel outputs (`kernel_checks`)
from ..opdefs.binary_math import LOGICAL_OPS


# Bounds on the worst error, in eps(d). An expansion rounds every intermediate in d
# (0.5 eps each, relative to that intermediate); the rules are short (<= ~20 ops)
# and written so that no rounding error is amplified by more than a small factor
# relative to max(|ref|, |dy|): the largest amplifications are x times the
# absolute error of 1 - s or 1 - t^2 in silu / mish / gelu-tanh derivatives, where
# |x| is bounded by the range over which s or t is not yet 1 in d (< 18 in f32,
# < 10 in bf16). 32 eps covers that with a margin and still fails any wrong
# formula (a wrong sign or factor is an error of order 1 = 2^23 eps in f32).
DEFAULT_BOUND = 32.0
# Approximations (erf, atan; erfinv, erfc): their measured absolute error in d (approximations.py;
# erfinv's and erfc's relative error, approx_erfinv.py, approx_erfc.py: the scale is |ref|), in eps(d),
# plus the rounding bound.
_APPROX = {"erf-lower": ERF_MAX_ABS_ERROR, "atan-lower": ATAN_MAX_ABS_ERROR, "erfinv-lower": ERFINV_MAX_REL_ERROR,
           "erfc-lower": ERFC_MAX_REL_ERROR}


# the accumulating index ops: their value is x plus sums of values; the scale is the op applied to the
# magnitudes of its float inputs (the indices as they are), the condition of those sums
_ACCUMULATING = frozenset({"ScatterAddAt", "IndexPut", "IndexPut2", "IndexPut3", "ScatterReduce", "Scan",
                           "EmbeddingBag", "EmbeddingBagBwd", "EmbeddingBagMaxBwd", "EmbeddingBagPswBwd"})
# ops whose value is a sum of terms dy * (a weight >= 0): their scale is the op applied to |dy|
_LINEAR_IN_DY = frozenset({"MaxPool2dBackward", "AvgPool2dBackward", "AdaptiveAvgPool2dBackward",
                           "AdaptiveMaxPool2dBackward", "MaxPool3dBackward", "AvgPool3dBackward",
                           "AdaptiveAvgPool3dBackward", "AdaptiveMaxPool3dBackward",
                           "ReflectPadBwd", "ReplicatePadBwd", "CircularPadBwd"})

# How much worse (in eps(d)) an f16/bf16 expansion computed in f32 and rounded once may be than
# the fused op rounded once. Its f32 error is at most DEFAULT_BOUND eps(f32) relative to the
# scale, 0.004 eps(f16) and 0.0005 eps(bf16) (more for the erf/atan fits, whose f32 error is
# still ~1e-7): rounding that value once to d moves an element across a rounding boundary of d
# only within that distance of it. Measured worst excess over every rule: 0.0002 eps(f16).
HALF_MARGIN = 1 / 16
HALF = ("f16", "bf16")


def bound(rule: Rule, dtype: str) -> float:
    """The worst error (in eps(dtype)) the rule may have in `dtype`."""
    if rule.name == "geluapprox-lower":
        # x sigmoid(2u), u = c x (1 + a x^2), is ill-conditioned for x << 0: its relative condition
        # number is |x f'/f| ~ |2u| (1 + 2a x^2)/(1 + a x^2) <= 2|2u|, and the ~5 roundings of u (0.5 eps
        # each) reach the result multiplied by |2u|, which is at most UNDERFLOW_X before f underflows.
        return DEFAULT_BOUND + 2.5 * UNDERFLOW_X[dtype]
    if rule.name in ("softmax-lower", "softmax-lower-recip", "softmax-exp-log"):
        # exp(x - max) turns the rounding of x - max (0.5 eps relative: 0.5 eps |x - max| absolute) into a
        # relative error of 0.5 eps |x - max|, and |x - max| is at most UNDERFLOW_X before y falls below FLOOR.
        return DEFAULT_BOUND + 0.5 * UNDERFLOW_X[dtype]
    if rule.name in ("softmargin-none", "softmargin-none-softplus"):
        # log1p(exp(z)) for z = -t x < 0 is about exp(z): the rounding of t x (0.5 eps |z| absolute) becomes
        # a relative error of 0.5 eps |z|, and |z| is at most UNDERFLOW_X before the loss falls below FLOOR
        # (the fused op takes t x exactly; a kernel in d rounds it as the expansion does)
        return DEFAULT_BOUND + 0.5 * UNDERFLOW_X[dtype]
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
    via_f32: float | None = None  # f16/bf16: worst error of the rhs computed in f32, rounded once to dtype

    @property
    def ok(self) -> bool:
        return self.worst <= self.bound and (self.via_f32 is None or self.via_f32 <= self.fused + HALF_MARGIN)

    @property
    def failure(self) -> str:
        """Why the check fails (meaningful only when not `ok`)."""
        if self.worst > self.bound:
            return f"worst error {self.worst:.3g} eps, bound {self.bound:.3g}"
        return (f"computed in f32 and rounded once, worst error {_num(self.via_f32 or 0.0)} eps, more than the"
                f" fused op's {_num(self.fused)} + {HALF_MARGIN:g}")


# --------------------------------------------------------------------------- term evaluation


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
    logical = op == "Binary" and attrs["op"] in LOGICAL_OPS  # of bool operands (Compare results)
    return apply(op, attrs, args, "bool" if op == "Compare" or logical else dtype)


# --------------------------------------------------------------------------- domains

# --------------------------------------------------------------------------- the measure


def _scale(rule: Rule, env: dict[str, object], ref: np.ndarray, dtype: str) -> np.ndarray:
    if rule.group == KERNEL_CHECK:  # a kernel's output against its own pattern: rounded once, relative to |ref|
        return np.abs(ref)
    f = {k: np.asarray(v, dtype=np.float64) for k, v in env.items() if isinstance(v, np.ndarray)}
    label = lhs_ctor(rule) if lhs_ctor(rule) != "Act" else f"Act.{lhs_kind(rule)}"
    with np.errstate(all="ignore"):
        if label == "BN":
            return np.abs((f["x"] - f["mean"]) / np.sqrt(f["var"] + BN_EPS) * f["gamma"]) + np.abs(f["beta"])
        if label == "BnBwdGamma":
            return np.sum(np.abs(f["dy"] * (f["x"] - f["mean"])), axis=0) / np.sqrt(f["var"] + BN_EPS)
        if label == "BnBwdBeta":
            return np.sum(np.abs(f["dy"]), axis=0)
        if label in ("LogSoftmax", "LogCumSumExp"):
            # a log-probability: an absolute error e in y is a relative error e in exp(y)
            return np.maximum(np.abs(ref), 1.0)
        if label == "LogSoftmaxBwd":
            # dy - exp(y) sum(dy): the sum's condition, sum |dy|, reaches every element through exp(y),
            # which has an absolute error of up to TINY(d) eps(d) where it is subnormal in d
            p = np.maximum(np.exp(f["y"]), TINY[dtype])
            terms = p * np.sum(np.abs(f["dy"]), axis=-1, keepdims=True)
            return np.maximum(np.maximum(np.abs(ref), np.abs(f["dy"])), terms)
        if label in SCALES:
            return SCALES[label](f)
        if label in GROUP_SCALES:  # the group count is a primitive of the environment
            return GROUP_SCALES[label](f, int(cast(int, env["groups"])))
        if label in ("Conv2d", "Conv2dBwdInput", "Conv2dBwdWeight", "Conv3d", "Conv3dBwdInput",
                     "Conv3dBwdWeight"):  # a sum: its scale is the sum of |terms|
            return np.abs(eval_term(rule.lhs, {**env, **{k: np.abs(v) for k, v in f.items()}}, "f64"))
        if label in _ACCUMULATING:
            mags = {k: np.abs(v) for k, v in env.items() if isinstance(v, np.ndarray) and v.dtype.kind == "f"}
            return np.abs(eval_term(rule.lhs, {**env, **mags}, "f64"))
        if label in _LINEAR_IN_DY:  # sums of dy terms: the op itself applied to |dy|
            return np.abs(eval_term(rule.lhs, {**env, "dy": np.abs(f["dy"])}, "f64"))
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
        ref_d = round_to(ref, dtype).astype(np.float64)
        scale = np.maximum(_scale(rule, env, ref, dtype), FLOOR[dtype])
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


def check_rule(rule: Rule, dtype: str, sample: Env | None = None) -> CheckResult:
    """The rule's worst error in `dtype` over its domain (over each environment, when the domain has
    several: arrays of different shapes, such as softmax rows of length 1), or on `sample` (a kernel's
    `check`: variable -> shape or value, see `sample_env`)."""
    envs = domain(rule, dtype) if sample is None else sample_env(rule, sample, dtype)
    missing = sorted(variables(rule.lhs) - set(envs[0] if isinstance(envs, list) else envs))
    if missing:
        raise LowerError(f"rule {rule.name}: the checker's domain of its left-hand side's op binds no {missing[0]!r}"
                         + (": give the kernel a \"check\" sample" if rule.group == KERNEL_CHECK else
                            ": name the variables as the built-in rules of that op do"))
    results = [_check_env(rule, dtype, env) for env in (envs if isinstance(envs, list) else [envs])]
    worst = max(results, key=lambda r: r.worst)
    return dataclasses.replace(worst, fused=max(r.fused for r in results), points=sum(r.points for r in results))


def _check_env(rule: Rule, dtype: str, env: dict[str, object]) -> CheckResult:
    # an op whose arithmetic is in its inputs' dtype (fractional pooling's windows) is referenced on them as
    # they are: the float64 copies would be other windows, not a more exact value of the same ones
    exact = language.CTORS[lhs_ctor(rule)].op in ARITHMETIC_IN_DTYPE
    ref = eval_term(rule.lhs, {k: (round_to(v, "f64") if isinstance(v, np.ndarray) and not exact else v)
                               for k, v in env.items()}, "f64")
    got = eval_term(rule.rhs, env, dtype)
    fused = eval_term(rule.lhs, env, dtype)
    shape = np.broadcast_shapes(np.shape(ref), np.shape(got))
    ref, got = np.broadcast_to(ref, shape), np.broadcast_to(got, shape)
    err = _errors(rule, env, got, ref, dtype)
    ferr = _errors(rule, env, np.broadcast_to(fused, shape), ref, dtype)
    i = int(np.argmax(err)) if err.size else 0
    via_f32: float | None = None
    if dtype in HALF:
        wide = round_to(np.asarray(eval_term(rule.rhs, env, "f32"), dtype=np.float64), dtype)
        werr = _errors(rule, env, np.broadcast_to(wide, shape), ref, dtype)
        via_f32 = float(werr.max()) if werr.size else 0.0
    return CheckResult(rule.name, dtype, float(err.ravel()[i]) if err.size else 0.0,
                       _point(env, shape, i) if err.size else {},
                       float(ferr.max()) if ferr.size else 0.0, bound(rule, dtype), int(err.size), via_f32)


def sample_env(rule: Rule, sample: Env, dtype: str) -> Env:
    """A kernel's `check` sample as an environment in `dtype`: a variable given a shape (a list) is an
    array of it, standard normal values (from 10 elements on, with 0, +-1e-3, +-30) rounded to dtype; one
    given {"shape": [...], "dtype": "i64", "high": n} integers in [0, n); any other value is the
    primitive itself (an integer, a number, a list literal such as "[1]")."""
    rng = np.random.default_rng(23)
    env: Env = {}
    for name in sorted(variables(rule.lhs)):
        if name not in sample:
            continue
        spec = sample[name]
        if isinstance(spec, list):
            size = int(np.prod(spec)) if spec else 1
            vals = rng.standard_normal(size)
            if size >= 10:  # (a scalar stays a normal value: a zero total or gradient checks nothing)
                vals[:5] = [0.0, 1e-3, -1e-3, 30.0, -30.0]
            env[name] = round_to(vals.reshape(spec), dtype)
        elif isinstance(spec, dict):
            shape, high = spec.get("shape", []), int(spec.get("high", 2))
            env[name] = rng.integers(0, high, size=shape).astype(np.int64 if spec.get("dtype") != "i32" else np.int32)
        else:
            env[name] = spec
    return env


def kernel_checks(kernel: object) -> list[tuple[Rule, Env | None]]:
    """One rule per output of a backend's kernel (`backends.kernels.KernelDecl`): its pattern => a `Kernel`
    node of that output over the variables the pattern uses, with the kernel's `check` sample (None: the
    domain of the pattern's op)."""
    from ..egraph.language import kernel_ctor
    from ..patterns import primitive_sorts, tensor_variables

    out: list[tuple[Rule, Env | None]] = []
    for i, (text, term) in enumerate(zip(kernel.outputs, kernel.terms)):  # type: ignore[attr-defined]
        ins, sorts = tensor_variables(term), primitive_sorts(term)
        ctor = kernel_ctor(kernel.name, ins, text, i, sorts)  # type: ignore[attr-defined]
        rhs = App(ctor.name, tuple(sorted(sorts)), tuple(Var(v) for v in ins))
        out.append((Rule(f"kernel {kernel.name} output {i}", f"the kernel's output {i} is its pattern",  # type: ignore[attr-defined]
                         term, rhs, KERNEL_CHECK, (text, "")), kernel.check))  # type: ignore[attr-defined]
    return out


def check_backend(backend: object, dtypes: Sequence[str] = DTYPES) -> list[CheckResult]:
    """A backend file's own rules, checked as the built-in ones are, and each output of its kernels
    against its pattern (`kernel_checks`); one result per (rule or kernel output, dtype)."""
    checks: list[tuple[Rule, Env | None]] = [(r, None) for r in backend.rules]  # type: ignore[attr-defined]
    for k in backend.kernels:  # type: ignore[attr-defined]
        checks += kernel_checks(k)
    results = []
    for r, sample in checks:
        try:
            results += [check_rule(r, d, sample) for d in dtypes]
        except LowerError as e:
            if str(e).startswith(f"rule {r.name}:"):
                raise
            raise LowerError(f"rule {r.name}: cannot be checked: {e}") from None
        except (ValueError, KeyError, TypeError, IndexError) as e:  # a sample that does not fit the pattern
            raise LowerError(f"rule {r.name}: cannot be checked: {type(e).__name__}: {e}") from None
    return results


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
    wides = [d for d in dtypes if d in HALF]
    head = (f"{'rule':<{width}}  " + "  ".join(f"{d:>17}" for d in dtypes)
            + "".join(f"  {d + ' via f32':>12}" for d in wides) + "  status")
    lines = [head, "-" * len(head)]
    for name, per in by_rule.items():
        cells = []
        for d in dtypes:
            cell = per.get(d)
            cells.append(f"{'':>17}" if cell is None else f"{_num(cell.worst):>8} [{_num(cell.fused):>6}]")
        for d in wides:
            cell = per.get(d)
            cells.append(f"{'' if cell is None or cell.via_f32 is None else _num(cell.via_f32):>12}")
        bad = [r for r in per.values() if not r.ok]
        status = "ok" if not bad else "FAIL " + "; ".join(_failure(r) for r in bad)
        lines.append(f"{name:<{width}}  " + "  ".join(cells) + "  " + status)
    lines.append("")
    lines.append("worst error of the expansion in eps(dtype) [the fused op rounded once, for comparison];")
    lines.append(f"bound {DEFAULT_BOUND:g} eps, plus the stated error of the erf/atan/erfinv approximations")
    if wides:
        lines.append("<d> via f32: the expansion computed in f32 and rounded once to d (what a lowered f16/bf16 graph")
        lines.append(f"computes), in eps(d); it fails where worse than the fused op by more than {HALF_MARGIN:g} eps(d)")
    worst = {d: max((r for r in results if r.dtype == d), key=lambda r: r.worst / r.bound) for d in dtypes}
    lines.append("worst rule per dtype: " + ", ".join(f"{d} {w.rule} ({_num(w.worst)})" for d, w in worst.items()))
    return "\n".join(lines)


def _failure(r: CheckResult) -> str:
    if r.worst > r.bound:
        return f"{r.dtype} at {_fmt_point(r.point)}"
    return f"{r.dtype} via f32 {_num(r.via_f32 or 0.0)} > fused {_num(r.fused)} + {HALF_MARGIN:g}"


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
