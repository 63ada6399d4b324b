"""ReluBackward and ActivationBackward{kind}: each kind's derivative in primitives.

Conventions (graph-format.md):
- `(Backward.K x dy)` is `dy * f'(x)`, with the spec's values where f' is not
  defined (Relu/Abs: 0 at 0; Sqrt/Rsqrt: 0 for x <= 0; Round: straight-through;
  Floor/Ceil/Sign: 0; HardSigmoid: 1/6 on the open (-3, 3); HardSwish: 0 for
  x <= -3, x/3 + 1/2 inside, 1 for x >= 3; Elu: exp(x) for x <= 0).
- `(BackwardOut.K y dy)` is the same gradient written in y = f(x) (8 kinds).
- Every identity below is exact in real arithmetic for finite inputs, and every
  form is safe in floating point: no intermediate overflows (f16's max is 65504,
  so x*x overflows at |x| > 256) unless the result does, no 0*inf, no
  catastrophic cancellation relative to dy. Products that grow are written
  `((dy * r) * r) * r` so that each partial product is smaller than the result.
- Where several good forms exist they are all stated: extraction picks by the
  backend's cost. A form that reuses the forward value (`(Sigmoid x)`, `(Silu x)`,
  `(Rsqrt x)`...) lets the e-graph share it with the forward node the graph has.

Groups: `backward` (expansions) and `relation` (input form <-> output
form, exact where the spec says both are equal). `check.py` evaluates both sides
of every rule in f64, f32, f16 and bf16.
"""

from __future__ import annotations

from .dsl import Rule, rule

SQRT1_2 = 0.7071067811865476  # 1/sqrt(2)
INV_SQRT_2PI = 0.3989422804014327  # 1/sqrt(2*pi)
TWO_OVER_SQRT_PI = 1.1283791670955126  # 2/sqrt(pi)
GELU_C = 0.7978845608028654  # sqrt(2/pi), the tanh-form GELU's c
GELU_A = 0.044715  # the tanh-form GELU's a
GELU_3A = 0.134145  # 3*a
GELU_2C = 1.5957691216057308  # 2 sqrt(2/pi)
GELU_CLAMP = 10.0  # |x| beyond which the tanh-form GELU's derivative is constant to far below f64 ulp


def _b(name: str, identity: str, lhs: str, rhs: str, **lets: str) -> Rule:
    return rule(name, identity, lhs, rhs, group="backward", lets=lets)


def _r(name: str, identity: str, lhs: str, rhs: str) -> Rule:
    return rule(name, identity, lhs, rhs, group="relation")


# clamped x for the tanh-form GELU: x*x stays finite in f16 and 0*inf cannot happen
_XC = f"(max (min x {GELU_CLAMP}) -{GELU_CLAMP})"

BACKWARD: tuple[Rule, ...] = (
    # --- piecewise-linear and trivial kinds
    _b("relu-bwd", "relu_bwd(x, dy) = where(x > 0, dy, 0)", "(ReluBackward x dy)", "(where (> x 0) dy 0)"),
    _b("relu-act-bwd-where", "d relu = where(x > 0, dy, 0)", "(Backward.Relu x dy)", "(where (> x 0) dy 0)"),
    _b("neg-bwd", "d neg = -dy", "(Backward.Neg x dy)", "(Neg dy)"),
    _b("neg-bwd-mul", "d neg = dy * -1", "(Backward.Neg x dy)", "(* dy -1)"),
    _b("abs-bwd", "d abs = dy * sign(x) (0 at x = 0)", "(Backward.Abs x dy)", "(* dy (Sign x))"),
    _b("round-bwd", "d round = dy (straight-through)", "(Backward.Round x dy)", "dy"),
    _b("floor-bwd", "d floor = dy * 0 (finite dy)", "(Backward.Floor x dy)", "(* dy 0)"),
    _b("ceil-bwd", "d ceil = dy * 0 (finite dy)", "(Backward.Ceil x dy)", "(* dy 0)"),
    _b("sign-bwd", "d sign = dy * 0 (finite dy)", "(Backward.Sign x dy)", "(* dy 0)"),
    _b("hardsigmoid-bwd", "d hardsigmoid = where(|x| < 3, dy/6, 0)", "(Backward.HardSigmoid x dy)",
       "(where (< (Abs x) 3) (/ dy 6) 0)"),
    _b("hardswish-bwd", "d hardswish = where(x <= -3, 0, where(x >= 3, dy, dy*(x/3 + 1/2)))",
       "(Backward.HardSwish x dy)", "(where (<= x -3) 0 (where (>= x 3) dy (* dy (+ (/ x 3) 0.5))))"),
    # --- exp, log, powers
    _b("exp-bwd", "d exp = dy * exp(x)", "(Backward.Exp x dy)", "(* dy (Exp x))"),
    _b("log-bwd", "d log = dy / x", "(Backward.Log x dy)", "(/ dy x)"),
    _b("sqrt-bwd", "d sqrt = where(x > 0, dy / (2 sqrt(x)), 0)", "(Backward.Sqrt x dy)",
       "(where (> x 0) (/ dy (* 2 (Sqrt x))) 0)"),
    _b("sqrt-bwd-rsqrt", "d sqrt = where(x > 0, dy * (0.5 rsqrt(x)), 0)", "(Backward.Sqrt x dy)",
       "(where (> x 0) (* dy (* 0.5 (Rsqrt x))) 0)"),
    _b("sqrt-bwd-via-out", "d sqrt = where(x > 0, sqrt_bwd_out(sqrt(x), dy), 0) (the guard: for x < 0, "
       "sqrt(x) is nan and the output form of nan is nan)", "(Backward.Sqrt x dy)",
       "(where (> x 0) (BackwardOut.Sqrt (Sqrt x) dy) 0)"),
    _b("rsqrt-bwd", "d rsqrt = where(x > 0, ((dy * -0.5) r) r) r, 0), r = rsqrt(x) (the forward value)",
       "(Backward.Rsqrt x dy)", "(where (> x 0) (* (* (* (* dy -0.5) r) r) r) 0)", r="(Rsqrt x)"),
    _b("rsqrt-bwd-div", "d rsqrt = where(x > 0, ((dy * -0.5) r) / x, 0), r = rsqrt(x)", "(Backward.Rsqrt x dy)",
       "(where (> x 0) (/ (* (* dy -0.5) r) x) 0)", r="(Rsqrt x)"),
    _b("rsqrt-bwd-via-out", "d rsqrt = where(x > 0, rsqrt_bwd_out(rsqrt(x), dy), 0) (equal for x > 0; the "
       "guard gives 0 at x = 0, where the output form alone gives -inf)", "(Backward.Rsqrt x dy)",
       "(where (> x 0) (BackwardOut.Rsqrt (Rsqrt x) dy) 0)"),
    _b("recip-bwd", "d recip = -((dy * r) * r), r = 1/x (the forward value)", "(Backward.Recip x dy)",
       "(Neg (* (* dy r) r))", r="(Recip x)"),
    _b("recip-bwd-div", "d recip = -((dy / x) / x) (dy/(x*x) would overflow x*x first)", "(Backward.Recip x dy)",
       "(Neg (/ (/ dy x) x))"),
    # --- trigonometric
    _b("sin-bwd", "d sin = dy * cos(x)", "(Backward.Sin x dy)", "(* dy (Cos x))"),
    _b("cos-bwd", "d cos = -(dy * sin(x))", "(Backward.Cos x dy)", "(Neg (* dy (Sin x)))"),
    _b("tan-bwd", "d tan = dy (1 + t^2) = dy + (dy t) t, t = tan(x)", "(Backward.Tan x dy)",
       "(+ dy (* (* dy t) t))", t="(Tan x)"),
    _b("tan-bwd-cos", "d tan = dy / cos(x)^2 = (dy / c) / c, c = cos(x)", "(Backward.Tan x dy)",
       "(/ (/ dy c) c)", c="(Cos x)"),
    _b("atan-bwd", "d atan = dy / (1 + x*x) (x*x = inf gives dy/inf = 0, within |dy|/x^2 of the truth)",
       "(Backward.Atan x dy)", "(/ dy (+ 1 (* x x)))"),
    # --- sigmoid family
    _b("sigmoid-bwd", "d sigmoid = dy * (s (1 - s)), s = sigmoid(x)", "(Backward.Sigmoid x dy)",
       "(* dy (* s (- 1 s)))", s="(Sigmoid x)"),
    _b("sigmoid-bwd-exp", "d sigmoid = dy * (e / ((1 + e)(1 + e))), e = exp(-|x|) (symmetric, no overflow)",
       "(Backward.Sigmoid x dy)", "(* dy (/ e (* (+ 1 e) (+ 1 e))))", e="(Exp (Neg (Abs x)))"),
    _b("tanh-bwd", "d tanh = dy * (1 - t^2), t = tanh(x)", "(Backward.Tanh x dy)", "(* dy (- 1 (* t t)))",
       t="(Tanh x)"),
    _b("tanh-bwd-factored", "d tanh = dy * ((1 - t)(1 + t)), t = tanh(x)", "(Backward.Tanh x dy)",
       "(* dy (* (- 1 t) (+ 1 t)))", t="(Tanh x)"),
    _b("tanh-bwd-exp", "d tanh = dy * (4e / ((1 + e)(1 + e))), e = exp(-2|x|) (accurate relative to f' too, "
       "where 1 - t^2 has only the absolute accuracy of t)", "(Backward.Tanh x dy)",
       "(* dy (/ (* 4 e) (* (+ 1 e) (+ 1 e))))", e="(Exp (* -2 (Abs x)))"),
    _b("softplus-bwd", "d softplus = dy * sigmoid(x)", "(Backward.Softplus x dy)", "(* dy (Sigmoid x))"),
    _b("logsigmoid-bwd", "d logsigmoid = dy * sigmoid(-x)", "(Backward.LogSigmoid x dy)",
       "(* dy (Sigmoid (Neg x)))"),
    _b("logsigmoid-bwd-exp", "d logsigmoid = dy / (1 + exp(x)) (exp = inf gives 0, within |dy| e^-x)",
       "(Backward.LogSigmoid x dy)", "(/ dy (+ 1 (Exp x)))"),
    _b("silu-bwd", "d silu = dy * (s (1 + x (1 - s))), s = sigmoid(x)", "(Backward.Silu x dy)",
       "(* dy (* s (+ 1 (* x (- 1 s)))))", s="(Sigmoid x)"),
    _b("silu-bwd-out", "d silu = dy * (s + y (1 - s)), s = sigmoid(x), y = silu(x) = x s (the forward value)",
       "(Backward.Silu x dy)", "(* dy (+ s (* y (- 1 s))))", s="(Sigmoid x)", y="(Silu x)"),
    _b("elu-bwd", "d elu = where(x > 0, dy, dy * exp(x))", "(Backward.Elu x dy)",
       "(where (> x 0) dy (* dy (Exp x)))"),
    _b("softsign-bwd", "d softsign = dy / (a a), a = 1 + |x| (a*a = inf gives 0, within |dy|/a^2)",
       "(Backward.Softsign x dy)", "(/ dy (* a a))", a="(+ 1 (Abs x))"),
    _b("softsign-bwd-div", "d softsign = (dy / a) / a, a = 1 + |x|", "(Backward.Softsign x dy)",
       "(/ (/ dy a) a)", a="(+ 1 (Abs x))"),
    _b("mish-bwd", "d mish = dy * (t + (x sigmoid(x)) (1 - t^2)), t = tanh(softplus(x))",
       "(Backward.Mish x dy)", "(* dy (+ t (* (* x (Sigmoid x)) (- 1 (* t t)))))", t="(Tanh (Softplus x))"),
    # --- erf family
    _b("erf-bwd", "d erf = dy * (2/sqrt(pi)) exp(-x^2)", "(Backward.Erf x dy)",
       f"(* dy (* {TWO_OVER_SQRT_PI} (Exp (* (Neg x) x))))"),
    _b("gelu-bwd", "d gelu = Phi(x) + x*phi(x), Phi = (1+erf(x/sqrt2))/2, phi = exp(-x^2/2)/sqrt(2pi)",
       "(Backward.Gelu x dy)",
       f"(* dy (+ (* 0.5 (+ 1 (Erf (* x {SQRT1_2})))) (* x (* {INV_SQRT_2PI} (Exp (* -0.5 (* x x)))))))"),
    _b("geluapprox-bwd",
       "d gelu_tanh = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3a x^2), t = tanh(c (x + a x^3)), evaluated at "
       "xc = clamp(x, -10, 10): for |x| >= 10 f'(x) is within 3e-36 of f'(+-10), far below f64 ulp",
       "(Backward.GeluApprox x dy)",
       f"(* dy (+ (* 0.5 (+ 1 t)) (* (* (* 0.5 xc) (- 1 (* t t))) (* {GELU_C} (+ 1 (* {GELU_3A} (* xc xc)))))))",
       xc=_XC, t=f"(Tanh (* {GELU_C} (* xc (+ 1 (* {GELU_A} (* xc xc))))))"),
    _b("geluapprox-bwd-sigmoid",
       "d gelu_tanh = d (x sigmoid(2u)) = s + (xc k)(s sn), s = sigmoid(2u), sn = sigmoid(-2u), 2u = 2c x (1 + a x^2), "
       "k = 2c (1 + 3a xc^2), xc = clamp(x, -10, 10) (beyond, s sn < 1.3e-38: the x term is < 3e-36 either way); "
       "accurate relative to f' too (no 1 + t, 1 - t^2); s is the forward lowering's sigmoid",
       "(Backward.GeluApprox x dy)", "(* dy (+ s (* (* xc k) (* s (Sigmoid (Neg u2))))))",
       u2=f"(* {GELU_2C} (* x (+ 1 (* {GELU_A} (* x x)))))", s="(Sigmoid u2)", xc=_XC,
       k=f"(* {GELU_2C} (+ 1 (* {GELU_3A} (* xc xc))))"),
)

# The gradient from the forward output y = f(x) (`"wrt": "output"`), exactly per the spec.
OUTPUT_FORM: tuple[Rule, ...] = (
    _b("sigmoid-bwd-out", "sigmoid_bwd_out(y, dy) = dy * (y (1 - y))", "(BackwardOut.Sigmoid y dy)",
       "(* dy (* y (- 1 y)))"),
    _b("tanh-bwd-out", "tanh_bwd_out(y, dy) = dy * (1 - y^2)", "(BackwardOut.Tanh y dy)", "(* dy (- 1 (* y y)))"),
    _b("tanh-bwd-out-factored", "tanh_bwd_out(y, dy) = dy * ((1 - y)(1 + y))", "(BackwardOut.Tanh y dy)",
       "(* dy (* (- 1 y) (+ 1 y)))"),
    _b("exp-bwd-out", "exp_bwd_out(y, dy) = dy * y", "(BackwardOut.Exp y dy)", "(* dy y)"),
    _b("relu-bwd-out", "relu_bwd_out(y, dy) = where(y > 0, dy, 0)", "(BackwardOut.Relu y dy)",
       "(where (> y 0) dy 0)"),
    _b("sqrt-bwd-out", "sqrt_bwd_out(y, dy) = where(y > 0, dy / (2y), 0)", "(BackwardOut.Sqrt y dy)",
       "(where (> y 0) (/ dy (* 2 y)) 0)"),
    _b("rsqrt-bwd-out", "rsqrt_bwd_out(y, dy) = where(y > 0, ((dy * -0.5) y) y) y, 0) = -dy y^3/2",
       "(BackwardOut.Rsqrt y dy)", "(where (> y 0) (* (* (* (* dy -0.5) y) y) y) 0)"),
    _b("recip-bwd-out", "recip_bwd_out(y, dy) = -((dy y) y) = -dy y^2", "(BackwardOut.Recip y dy)",
       "(Neg (* (* dy y) y))"),
    _b("elu-bwd-out", "elu_bwd_out(y, dy) = where(y > 0, dy, dy (y + 1))", "(BackwardOut.Elu y dy)",
       "(where (> y 0) dy (* dy (+ y 1)))"),
)

# Input form <-> output form, where the two are equal for every finite x.
# Not Rsqrt: at x = 0 the output form is -inf * dy and the input form 0 (rsqrt-bwd-via-out guards it).
# Not Sqrt: for x < 0, y = sqrt(x) is nan, and the output form is nan at y = nan (f'(nan) = nan, as the
# reference evaluator defines it) where the input form is 0 (sqrt-bwd-via-out guards it).
_RELATED = {
    "Sigmoid": "s(1-s) both ways",
    "Tanh": "1-t^2 both ways",
    "Exp": "exp(x) = y",
    "Relu": "x > 0 iff y > 0",
    "Recip": "-1/x^2 = -y^2 (both -inf at x = 0)",
    "Elu": "x > 0 iff y > 0; exp(x) = expm1(x) + 1 = y + 1 (equal up to rounding; the spec declares the forms equal)",
}

RELATIONS: tuple[Rule, ...] = (
    _r("relu-act-bwd", "d relu = relu_bwd (finite dy)", "(Backward.Relu x dy)", "(ReluBackward x dy)"),
    _r("act-bwd-relu", "relu_bwd = d relu (finite dy)", "(ReluBackward x dy)", "(Backward.Relu x dy)"),
) + tuple(
    r
    for kind, why in _RELATED.items()
    for r in (
        _r(f"{kind.lower()}-bwd-to-out", f"d {kind.lower()}(x) = {kind.lower()}_bwd_out({kind.lower()}(x)): {why}",
           f"(Backward.{kind} x dy)", f"(BackwardOut.{kind} ({kind} x) dy)"),
        _r(f"{kind.lower()}-out-to-bwd", f"{kind.lower()}_bwd_out({kind.lower()}(x)) = d {kind.lower()}(x): {why}",
           f"(BackwardOut.{kind} ({kind} x) dy)", f"(Backward.{kind} x dy)"),
    )
)

RULES: tuple[Rule, ...] = BACKWARD + OUTPUT_FORM + RELATIONS
