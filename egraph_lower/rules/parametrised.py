"""The parametrised activation kinds (LeakyRelu, Hardtanh, Elu and Softplus with parameters) in primitives.

A parameter is a primitive f64 field of the kind's constructor, bound by a lower-case
variable in the lhs and used in the rhs as a broadcast scalar, `(lit alpha)`. The
conventions at the kinks are torch's (see `opdefs/kinds.py`): LeakyRelu's slope is
alpha at x = 0; Hardtanh passes dy only strictly inside (lo, hi); Elu takes its
x <= 0 branch at 0; Softplus is linear where beta x > threshold (a threshold of none
is written `SoftplusB`, beta alone, without the linear branch). Elu's and Softplus's heads here are `EluP`/`SoftplusB`/`SoftplusP`: `Elu`
and `Softplus` stay version 1's constructors (the defaults), whose rules are in
`activations.py` and `forward.py`.

No rule relates Elu's input and output forms with parameters: they are equal only
for scale > 0 and alpha >= 0, which a rule cannot ask of its fields.
"""

from __future__ import annotations

from .dsl import Rule, rule


def _b(name: str, identity: str, lhs: str, rhs: str, **lets: str) -> Rule:
    return rule(name, identity, lhs, rhs, group="backward", lets=lets)


def _f(name: str, identity: str, lhs: str, rhs: str, **lets: str) -> Rule:
    return rule(name, identity, lhs, rhs, group="forward", lets=lets)


BACKWARD: tuple[Rule, ...] = (
    _b("leakyrelu-bwd", "d leaky_relu = where(x > 0, dy, dy * alpha)", "(Backward.LeakyRelu alpha x dy)",
       "(where (> x 0) dy (* dy (lit alpha)))"),
    _b("hardtanh-bwd", "d hardtanh = where(lo < x < hi, dy, 0)", "(Backward.Hardtanh lo hi x dy)",
       "(where (> x (lit lo)) (where (< x (lit hi)) dy 0) 0)"),
    _b("elup-bwd", "d elu = where(x > 0, dy scale, ((dy e) alpha) scale) input_scale), e = exp(x input_scale)",
       "(Backward.EluP alpha scale iscale x dy)",
       "(where (> x 0) (* dy (lit scale)) (* (* (* (* dy e) (lit alpha)) (lit scale)) (lit iscale)))",
       e="(Exp (* x (lit iscale)))"),
    _b("elup-bwd-via-value", "d elu = where(x > 0, dy scale, ((dy input_scale) scale) (y / scale + alpha)), "
       "y = elu(x) (the forward value: y / scale + alpha = alpha exp(x input_scale) for x <= 0)",
       "(Backward.EluP alpha scale iscale x dy)",
       "(where (> x 0) (* dy (lit scale)) (* (* (* dy (lit iscale)) (lit scale)) (+ (/ y (lit scale)) (lit alpha))))",
       y="(EluP alpha scale iscale x)"),
    _b("elup-bwd-out", "elu_bwd_out(y, dy) = where(y > 0, dy scale, ((dy input_scale) scale) (y / scale + alpha)) "
       "= dy input_scale (y + alpha scale) (torch's is_result form)", "(BackwardOut.EluP alpha scale iscale y dy)",
       "(where (> y 0) (* dy (lit scale)) (* (* (* dy (lit iscale)) (lit scale)) (+ (/ y (lit scale)) (lit alpha))))"),
    _b("softplusb-bwd", "d softplus_beta = dy sigmoid(beta x) (no threshold)", "(Backward.SoftplusB beta x dy)",
       "(* dy (Sigmoid (* x (lit beta))))"),
    _b("softplusb-bwd-exp", "d softplus_beta = dy / (1 + exp(-beta x)) (exp = inf gives 0, within |dy| e^(beta x))",
       "(Backward.SoftplusB beta x dy)", "(/ dy (+ 1 (Exp (Neg (* x (lit beta))))))"),
    _b("softplusp-bwd", "d softplus_beta = where(bx > threshold, dy, dy sigmoid(bx)), bx = beta x",
       "(Backward.SoftplusP beta threshold x dy)", "(where (> bx (lit threshold)) dy (* dy (Sigmoid bx)))",
       bx="(* x (lit beta))"),
)

# softplus(bx) / beta without overflow: max(bx, 0) / beta is x where bx > 0, for either sign of beta
_SP = "(+ (where (> bx 0) x 0) (/ (Softplus (Neg (Abs bx))) (lit beta)))"

FORWARD: tuple[Rule, ...] = (
    _f("leakyrelu-lower", "leaky_relu(x) = where(x > 0, x, x alpha)", "(LeakyRelu alpha x)",
       "(where (> x 0) x (* x (lit alpha)))"),
    _f("hardtanh-lower", "hardtanh(x) = where(x < lo, lo, where(x > hi, hi, x)) (nan stays nan)",
       "(Hardtanh lo hi x)", "(where (< x (lit lo)) (lit lo) (where (> x (lit hi)) (lit hi) x))"),
    _f("elup-lower", "elu(x) = where(x > 0, x scale, (expm1(z) alpha) scale), z = x input_scale; expm1(z) = "
       "elu(z) for z <= 0, -elu(-z) exp(z) for z > 0 (a negative input_scale)",
       "(EluP alpha scale iscale x)", "(where (> x 0) (* x (lit scale)) (* (* m (lit alpha)) (lit scale)))",
       z="(* x (lit iscale))", m="(where (> z 0) (* (Neg (Elu (Neg z))) (Exp z)) (Elu z))"),
    _f("softplusb-lower", "softplus_beta(x) = softplus(bx) / beta = where(bx > 0, x, 0) + softplus(-|bx|) / beta, "
       "bx = beta x (no threshold; no overflow where bx overflows)", "(SoftplusB beta x)", _SP, bx="(* x (lit beta))"),
    _f("softplusp-lower", "softplus_beta(x) = where(bx > threshold, x, softplus(bx) / beta), bx = beta x, "
       "softplus(bx) / beta as in softplusb-lower",
       "(SoftplusP beta threshold x)", f"(where (> bx (lit threshold)) x {_SP})",
       bx="(* x (lit beta))"),
)

RULES: tuple[Rule, ...] = BACKWARD + FORWARD
