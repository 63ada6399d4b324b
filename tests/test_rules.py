"""The rule catalogue: every rule checked numerically, coverage of the kinds, wgpu closure, egglog text.

Bounds (check.bound): 32 eps(d) for every exact rule in every dtype. Each op of an
expansion rounds to d (0.5 eps relative to its own value); the rules are short and
written so that no rounding error is amplified by more than a small factor relative
to max(|ref|, |dy|). The largest amplifications are |x| times the absolute error of
1 - s or 1 - t^2 in the silu / mish / tanh-gelu derivatives, with |x| bounded by
where s or t rounds to 1 in d (< 18 in f32); measured worst: ~5 eps in f32, ~18 in
f64 (where x reaches 37). A wrong formula is off by O(1) = 2^23 eps in f32, 128 eps
in bf16, so 32 eps separates the two in every dtype. Exceptions, with their reason
in check.bound: the erf/atan approximations (their measured error, from
scripts/fit_approximations.py) and geluapprox-lower (ill-conditioned for x << 0).
"""

from __future__ import annotations

import re
from decimal import Decimal, getcontext
from pathlib import Path

import pytest
from egglog.bindings import EGraph

from egraph_lower import backends
from egraph_lower.egraph import language
from egraph_lower.ops import ACTIVATION_KINDS, OUTPUT_FORM_KINDS
from egraph_lower.opdefs import CTORS
from egraph_lower.opdefs.activation_params import PARAM_ONLY
from egraph_lower.rules import ALL_RULES, BY_NAME, activations
from egraph_lower.rules.check import DTYPES, catalogue_markdown, check, check_rule, format_table
from egraph_lower.rules.dsl import App, Var, apps, rule

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", [r.name for r in ALL_RULES])
def test_rule_is_accurate(name: str, dtype: str) -> None:
    # one rule and dtype a test, so that each worker checks only its own (not every rule, kept in memory)
    r = check_rule(BY_NAME[name], dtype)
    assert r.points > 0
    assert r.ok, f"{name} in {dtype}: {r.worst:.3g} eps > {r.bound:.3g} at {r.point}"


def test_table_lists_every_rule_and_dtype() -> None:
    chosen = [BY_NAME[n] for n in ("relu-bwd", "gelu-bwd", "sigmoid-bwd")]
    table = format_table(check(chosen))
    assert all(r.name in table for r in chosen) and all(d in table for d in DTYPES)
    assert "FAIL" not in table
    assert "worst rule per dtype" in table


# --------------------------------------------------------------------------- the checker catches mistakes

BROKEN = [
    # a flipped sign
    rule("broken-sigmoid-sign", "-", "(Backward.Sigmoid x dy)", "(* dy (* s (+ 1 s)))", group="backward",
         lets={"s": "(Sigmoid x)"}),
    rule("broken-cos-sign", "-", "(Backward.Cos x dy)", "(* dy (Sin x))", group="backward"),
    # a wrong constant (the tanh-form constant in the exact GELU)
    rule("broken-gelu-tanh-form", "-", "(Backward.Gelu x dy)",
         f"(* dy (* 0.5 (+ 1 (Tanh (* {activations.GELU_C} (+ x (* {activations.GELU_A} (* x (* x x)))))))))",
         group="backward"),
    # tan' = 1 + tan, not 1 + tan^2
    rule("broken-tan", "-", "(Backward.Tan x dy)", "(* dy (+ 1 (Tan x)))", group="backward"),
    # closed interval instead of open at the kink x = 3
    rule("broken-hardsigmoid-kink", "-", "(Backward.HardSigmoid x dy)", "(where (<= (Abs x) 3) (/ dy 6) 0)",
         group="backward"),
    # the relation the catalogue leaves out on purpose: at x = 0 the output form gives -inf
    rule("broken-rsqrt-relation", "-", "(Backward.Rsqrt x dy)", "(BackwardOut.Rsqrt (Rsqrt x) dy)",
         group="relation"),
    # and Sqrt's: for x < 0 the output form of sqrt(x) = nan is nan
    rule("broken-sqrt-relation", "-", "(Backward.Sqrt x dy)", "(BackwardOut.Sqrt (Sqrt x) dy)",
         group="relation"),
    # an overflow: x*x is inf in f16 for |x| > 256, and 1/(x*x) of a tiny x is subnormal
    rule("broken-recip-square", "-", "(Backward.Recip x dy)", "(Neg (/ dy (* x x)))", group="backward"),
    # a catastrophic cancellation: 1 + tanh(u) at x << 0
    rule("broken-geluapprox-tanh", "-", "(GeluApprox x)",
         f"(* (* 0.5 x) (+ 1 (Tanh (* {activations.GELU_C} (+ x (* {activations.GELU_A} (* x (* x x))))))))",
         group="forward"),
    # batch norm as x*scale + (beta - mean*scale): cancels when x ~ mean, |mean| large
    rule("broken-bn-fma", "-", "(BatchNorm eps x gamma beta mean var)",
         "(+ (* x s) (- beta (* mean s)))", group="forward", lets={"s": "(* gamma (Rsqrt (+ var (lit eps))))"}),
    # the per-channel scale outside the sum: dy (x - mean) overflows f16 before the result does
    rule("broken-bn-gamma-outside", "-", "(BnBackwardGamma eps axes x mean var dy)",
         "(* (sum axes (* dy (- x mean))) (Rsqrt (+ var (lit eps))))", group="backward"),
    # Kahan's expm1 without the u < 1/2 branch: exp(x) = 0 gives x / log(0) = -0, not -1
    rule("broken-elu-kahan", "-", "(Elu x)",
         "(where (> x 0) x (where (== u 1) x (* (- u 1) (/ x (Log u)))))", group="forward", lets={"u": "(Exp x)"}),
]


@pytest.mark.parametrize("broken", BROKEN, ids=lambda r: r.name)
def test_checker_catches_a_broken_rule(broken) -> None:
    results = [check_rule(broken, d) for d in DTYPES]
    assert not all(r.ok for r in results), [(r.dtype, r.worst) for r in results]


# --------------------------------------------------------------------------- coverage


def _lhs(r) -> App:
    assert isinstance(r.lhs, App)
    return r.lhs


def test_every_kind_has_a_backward_rule() -> None:
    backward = [r for r in ALL_RULES if r.group == "backward"]
    covered = {_lhs(r).params[0] for r in backward if _lhs(r).ctor == "ActBwd"}
    plain = set(ACTIVATION_KINDS) - PARAM_ONLY
    assert plain <= covered, sorted(plain - covered)
    # every parametrised kind's constructors (both forms) too
    param_ctors = {c.name for c in CTORS.values() if c.op == "ActivationBackward" and "kind" in dict(c.implies)}
    assert param_ctors and param_ctors <= {_lhs(r).ctor for r in backward}, param_ctors
    assert any(_lhs(r).ctor == "ReluBwd" and r.group == "backward" for r in ALL_RULES)


def test_every_output_form_kind_has_an_output_rule() -> None:
    covered = {
        _lhs(r).params[0] for r in ALL_RULES
        if r.group == "backward" and _lhs(r).ctor == "ActBwdOut" and isinstance(_lhs(r).args[0], Var)
    }
    assert covered == set(OUTPUT_FORM_KINDS)


def test_relations_are_in_both_directions_and_not_for_rsqrt_or_sqrt() -> None:
    rel = [r for r in ALL_RULES if r.group == "relation"]
    kinds = {_lhs(r).params[0] for r in rel if _lhs(r).ctor in ("ActBwd", "ActBwdOut")}
    assert kinds == set(OUTPUT_FORM_KINDS) - {"Rsqrt", "Sqrt"}
    for k in kinds:
        ctors = {_lhs(r).ctor for r in rel if _lhs(r).params and _lhs(r).params[0] == k}
        assert {"ActBwd", "ActBwdOut"} <= ctors, k


def test_batchnorm_ops_have_rules() -> None:
    lowered = {_lhs(r).ctor for r in ALL_RULES}
    assert {"BN", "BnBwdInput", "BnBwdGamma", "BnBwdBeta"} <= lowered


def _labels(term) -> set[tuple[str, str, str]]:
    """(constructor, format op, kind or '') of every application in a term."""
    return {_key(a) for a in apps(term) if a.ctor != language.SCALAR}


def _key(a: App) -> tuple[str, str, str]:
    """(constructor, format op, kind or '') of one application; op and kind from its label (`Activation.Erf`)."""
    op, _, kind = a.label.partition(".")
    return a.ctor, op, kind


def test_forward_lowerings_reach_wgpu_kinds() -> None:
    """Every op a forward rule lowers reaches what wgpu runs by one chain of rules at least: a form may
    build what only other backends run (ScatterAdd), a forward form a backward op (pdist's
    MaskedScatterBackward), which its own rules lower."""
    wgpu = backends.builtin("wgpu")
    lowerings: dict[tuple[str, str, str], list] = {}
    for r in ALL_RULES:
        if r.group in ("forward", "backward"):
            lowerings.setdefault(_key(_lhs(r)), []).append(r)
    forward: dict[tuple[str, str, str], list] = {}
    for r in ALL_RULES:
        if r.group == "forward":
            forward.setdefault(_key(_lhs(r)), []).append(r)
    # every kind wgpu lacks is lowered, and so is BatchNormInference
    missing_kinds = {("Activation", k) for k in ACTIVATION_KINDS if not wgpu.runs("Activation", k)}
    assert missing_kinds | {("BatchNormInference", "")} <= {(op, kind) for _, op, kind in forward}

    def runs(key: tuple[str, str, str]) -> bool:
        return wgpu.runs(key[1], key[2] or None)

    def lowered(key: tuple[str, str, str], seen: tuple = ()) -> bool:
        """Some rule of key builds only what wgpu runs or what is lowered in turn (no cycle through key)."""
        return key not in seen and any(all(runs(k) or lowered(k, seen + (key,)) for k in _labels(r.rhs))
                                       for r in lowerings.get(key, []))

    def acyclic(label: tuple[str, str, str], seen: tuple = ()) -> None:
        """No forward rule of label builds, through forward rules, what wgpu lacks and label is."""
        assert label not in seen, f"cyclic lowering {seen + (label,)}"
        for r in forward[label]:
            for key in _labels(r.rhs):
                if not runs(key) and key in forward:
                    acyclic(key, seen + (label,))

    for label in forward:
        assert lowered(label), f"{label} does not reach what wgpu runs by any chain of rules"
        acyclic(label)
    # the forward kinds the backward rules build are lowered too
    for r in ALL_RULES:
        for key in _labels(r.rhs):
            if key[1] == "Activation" and not runs(key):
                assert key in lowerings, f"{r.name} builds {key}, which wgpu lacks and no rule lowers"


# --------------------------------------------------------------------------- names, text, docs


def test_names_unique_kebab_and_identities_present() -> None:
    names = [r.name for r in ALL_RULES]
    assert len(names) == len(set(names))
    for r in ALL_RULES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name), r.name
        assert r.identity.strip(), r.name
        assert r.group in ("backward", "relation", "forward"), r.name


def test_every_rule_compiles_in_egglog() -> None:
    """Each rule type-checked by egglog against every declaration, 25 rules an e-graph: all ~470 in one
    program took egglog 23 s and 14 GB here, 25 at a time 1.3 s and 0.5 GB for the same rules."""
    for start in range(0, len(ALL_RULES), 25):
        chunk = ALL_RULES[start:start + 25]
        program = language.declarations()
        program += "".join(f"(ruleset {g})\n" for g in sorted({r.group for r in chunk}))
        program += "\n".join(r.egglog(r.group) for r in chunk)
        egraph = EGraph()
        egraph.run_program(*egraph.parse_program(program))


def test_docs_catalogue_is_current() -> None:
    doc = ROOT / "docs" / "rules.md"
    assert doc.read_text() == catalogue_markdown(), "regenerate: python -m egraph_lower.rules.check --markdown > docs/rules.md"


def test_relations_and_backward_rules_are_known_by_name() -> None:
    for name in ("gelu-bwd", "sigmoid-bwd", "erf-lower", "atan-lower", "bn-bwd-gamma", "rsqrt-bwd-via-out"):
        assert name in BY_NAME


# --------------------------------------------------------------------------- the gelu-tanh clamp


def _gelu_tanh_grad(x: Decimal) -> Decimal:
    """d/dx 0.5 x (1 + tanh(u)), u = c (x + a x^3), in 60-digit decimal arithmetic."""
    c = (Decimal(2) / Decimal("3.14159265358979323846264338327950288419716939937510582097494")).sqrt()
    a = Decimal("0.044715")
    u = c * (x + a * x**3)
    e = (-2 * abs(u)).exp()
    t = (1 - e) / (1 + e) * (1 if u >= 0 else -1)
    return Decimal("0.5") * (1 + t) + Decimal("0.5") * x * (1 - t * t) * c * (1 + 3 * a * x * x)


def test_gelu_tanh_derivative_is_constant_beyond_the_clamp() -> None:
    getcontext().prec = 60
    clamp = Decimal(str(activations.GELU_CLAMP))
    for sign in (1, -1):
        at_clamp = _gelu_tanh_grad(sign * clamp)
        for x in ("10.5", "12", "20", "100", "1e4"):
            diff = abs(_gelu_tanh_grad(sign * Decimal(x)) - at_clamp)
            assert diff < Decimal("3e-36"), (sign, x, diff)  # far below f64's ulp of 1 (2.2e-16)
