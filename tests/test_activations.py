"""The activation kinds' math (egraph_lower/opdefs/kinds.py): f, f' and the wrt: output forms, in float64.

References here are independent of opdefs/kinds.py: scalar `math` formulas and
central finite differences in float64. The Activation and ActivationBackward
nodes (rounding once to the node's dtype) are tested in test_evaluate.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from egraph_lower.evaluate import activation, activation_grad, activation_grad_from_output
from egraph_lower.errors import LowerError
from egraph_lower.ops import ACTIVATION_KINDS, OUTPUT_FORM_KINDS

# No RuntimeWarning (overflow, invalid, divide by zero) may leak out of the evaluator.
pytestmark = pytest.mark.filterwarnings("error")


# ----------------------------------------------------------------------------- independent references

def _sig(x: float) -> float:
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def _erfinv(y: float) -> float:
    """erf's inverse by bisection on math.erf (an independent reference for scipy's erfinv)."""
    if y == 0:
        return y
    lo, hi = -6.0, 6.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2


REF_F = {
    "Gelu": lambda x: x * 0.5 * math.erfc(-x / math.sqrt(2)),  # erfc: 1 + erf(x) cancels for x << 0
    # 0.5 x (1 + tanh u) = x / (1 + exp(-2u)): 1 + tanh(u) cancels for x << 0
    "GeluApprox": lambda x: x / (1 + math.exp(-2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    "Silu": lambda x: x * _sig(x),
    "Relu": lambda x: max(x, 0.0),
    "Sigmoid": _sig,
    "Tanh": math.tanh,
    "Exp": math.exp,
    "Log": math.log,
    "Sqrt": math.sqrt,
    "Rsqrt": lambda x: 1 / math.sqrt(x),
    "Neg": lambda x: -x,
    "Abs": abs,
    "Sin": math.sin,
    "Cos": math.cos,
    "Tan": math.tan,
    "Atan": math.atan,
    "Recip": lambda x: 1 / x,
    "Round": lambda x: float(round(x)),  # Python rounds half to even
    "Floor": lambda x: float(math.floor(x)),
    "Ceil": lambda x: float(math.ceil(x)),
    "Sign": lambda x: float((x > 0) - (x < 0)),
    "Softplus": lambda x: math.log1p(math.exp(x)),
    "Elu": lambda x: x if x > 0 else math.expm1(x),
    "Erf": math.erf,
    "HardSwish": lambda x: x * min(max(x + 3, 0.0), 6.0) / 6,
    "HardSigmoid": lambda x: min(max(x + 3, 0.0), 6.0) / 6,
    "Mish": lambda x: x * math.tanh(math.log1p(math.exp(x))),
    "Softsign": lambda x: x / (1 + abs(x)),
    "LogSigmoid": lambda x: -math.log1p(math.exp(-x)),
    "LeakyRelu": lambda x: x if x > 0 else 0.01 * x,  # the default parameters (test_acts.py: others)
    "Hardtanh": lambda x: min(max(x, -1.0), 1.0),
    # format version 3's (opdefs/kinds_math.py)
    "Sinh": math.sinh, "Cosh": math.cosh, "Asinh": math.asinh, "Acosh": math.acosh, "Atanh": math.atanh,
    "Exp2": lambda x: 2.0**x, "Expm1": math.expm1, "Log1p": math.log1p, "Trunc": lambda x: float(math.trunc(x)),
    "Logit": lambda x: math.log(x / (1 - x)),
    "Log2": math.log2, "Log10": math.log10, "Asin": math.asin, "Acos": math.acos,
    "Erfinv": _erfinv, "Erfc": math.erfc,
}
assert set(REF_F) == set(ACTIVATION_KINDS)

MODERATE = [-7.5, -3.0, -2.5, -2.2, -1.5, -1.1, -0.5, -0.4, 0.0, 0.3, 0.5, 0.9, 1.5, 1.7, 2.5, 2.6, 3.0, 6.3]
POSITIVE = [0.01, 0.3, 1.0, 2.6, 50.0, 1e3]
DOMAIN_F = {k: MODERATE for k in ACTIVATION_KINDS}
DOMAIN_F.update(Log=POSITIVE, Sqrt=POSITIVE, Rsqrt=POSITIVE, Recip=[x for x in MODERATE if x != 0],
                Tan=[-1.2, -0.4, 0.0, 0.3, 0.9, 1.4, 2.0], Acosh=[1.0, 1.1, 1.5, 3.0, 50.0, 1e3],
                Atanh=[-0.99, -0.5, -0.1, 0.0, 0.3, 0.9], Logit=[0.01, 0.3, 0.5, 0.7, 0.99], Log1p=[-0.99, -0.5, 0.0, 0.3, 2.6, 1e3],
                Log2=POSITIVE + [8.0, 0.125], Log10=POSITIVE + [100.0, 1e-3], Asin=[-1.0, -0.99, -0.5, 0.0, 0.3, 0.9, 1.0],
                Acos=[-1.0, -0.99, -0.5, 0.0, 0.3, 0.9, 1.0], Erfinv=[-0.999, -0.9, -0.5, 0.0, 0.3, 0.9, 0.99])

SMOOTH = [-7.5, -2.2, -1.1, -0.4, 0.0, 0.3, 0.9, 1.7, 2.6, 6.3, -15.0, 12.0]
DOMAIN_D = {k: SMOOTH for k in ACTIVATION_KINDS}
DOMAIN_D.update(
    Relu=[x for x in SMOOTH if x != 0], Abs=[x for x in SMOOTH if x != 0],
    Elu=[x for x in SMOOTH if x != 0], Softsign=[x for x in SMOOTH if x != 0],  # f'' jumps at 0
    LeakyRelu=[x for x in SMOOTH if x != 0],
    HardSwish=[-5.0, -3.5, -2.9, -1.0, 0.0, 1.0, 2.5, 2.9, 3.5, 5.0],
    HardSigmoid=[-5.0, -3.5, -2.9, -1.0, 0.0, 1.0, 2.5, 2.9, 3.5, 5.0],
    Log=POSITIVE, Sqrt=POSITIVE, Rsqrt=POSITIVE, Recip=[x for x in SMOOTH if x != 0],
    Tan=[-1.2, -0.4, 0.0, 0.3, 0.9, 1.4, 2.0],
    Floor=[-2.2, -0.4, 0.3, 1.7], Ceil=[-2.2, -0.4, 0.3, 1.7], Sign=[-2.2, -0.4, 0.3, 1.7],
    Trunc=[-2.2, -0.4, 0.3, 1.7], Logit=[0.1, 0.3, 0.5, 0.7, 0.9], Acosh=[1.1, 1.5, 3.0, 12.0], Atanh=[-0.9, -0.4, 0.0, 0.3, 0.9],
    Log1p=[-0.9, -0.4, 0.0, 0.3, 2.6, 12.0],
    Log2=POSITIVE, Log10=POSITIVE, Asin=[-0.9, -0.4, 0.0, 0.3, 0.9], Acos=[-0.9, -0.4, 0.0, 0.3, 0.9],
    Erfinv=[-0.9, -0.4, 0.0, 0.3, 0.9],
)
FD_KINDS = [k for k in ACTIVATION_KINDS if k != "Round"]  # Round is straight-through: not its true derivative


def central_difference(kind: str, x: float) -> float:
    """f'(x) by Richardson-extrapolated central differences of the scalar reference, in float64."""
    f = REF_F[kind]
    h = 1e-3 * max(0.01, abs(x))

    def d(h: float) -> float:
        return (f(x + h) - f(x - h)) / (2 * h)

    return (4 * d(h / 2) - d(h)) / 3


# ----------------------------------------------------------------------------- activations: f

@pytest.mark.parametrize("kind", ACTIVATION_KINDS)
def test_activation_matches_scalar_reference(kind):
    xs = np.array(DOMAIN_F[kind], np.float64)
    got = activation(kind, xs)
    want = np.array([REF_F[kind](float(x)) for x in xs])
    assert got.dtype == np.float64 and got.shape == xs.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize(("kind", "x", "want"), [
    ("Gelu", 80.0, 80.0), ("Gelu", -80.0, 0.0), ("Gelu", 1e4, 1e4), ("Gelu", -1e4, 0.0),
    ("GeluApprox", 80.0, 80.0), ("GeluApprox", -80.0, 0.0), ("GeluApprox", -1e4, 0.0),
    ("Silu", 80.0, 80.0), ("Silu", -1e4, 0.0), ("Mish", 1e4, 1e4), ("Mish", -1e4, 0.0),
    ("Sigmoid", 1e4, 1.0), ("Sigmoid", -1e4, 0.0), ("Tanh", 1e4, 1.0), ("Tanh", -1e4, -1.0),
    ("Softplus", 1e4, 1e4), ("Softplus", -1e4, 0.0), ("LogSigmoid", -1e4, -1e4), ("LogSigmoid", 1e4, 0.0),
    ("Softsign", 1e4, 1e4 / 10001), ("Elu", -1e4, -1.0), ("Erf", 80.0, 1.0), ("Erf", -80.0, -1.0),
    ("HardSwish", 1e4, 1e4), ("HardSwish", -1e4, 0.0), ("HardSigmoid", -1e4, 0.0), ("HardSigmoid", 1e4, 1.0),
    ("Exp", -1e4, 0.0), ("Exp", 1e4, math.inf),
    # limits at infinity
    ("Gelu", -math.inf, 0.0), ("Gelu", math.inf, math.inf), ("Silu", -math.inf, 0.0), ("Mish", -math.inf, 0.0),
    ("GeluApprox", -math.inf, 0.0), ("Softsign", math.inf, 1.0), ("Softsign", -math.inf, -1.0),
    ("HardSwish", -math.inf, 0.0), ("Sigmoid", -math.inf, 0.0), ("Softplus", math.inf, math.inf),
])
def test_activation_at_large_magnitudes(kind, x, want):
    got = float(activation(kind, np.array(x)))
    if want == 0.0:
        assert abs(got) <= 1e-300, got
    else:
        assert got == pytest.approx(want, rel=1e-15, abs=0), got


def test_activation_conventions_forward():
    np.testing.assert_array_equal(activation("Sign", np.array([-2.0, 0.0, 3.0])), [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(activation("Round", np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999])),
                                  [0.0, 2.0, 2.0, -0.0, -2.0, 2.0])
    np.testing.assert_array_equal(activation("Relu", np.array([-1.0, -0.0, 2.0])), [0.0, 0.0, 2.0])
    assert math.isinf(float(activation("Rsqrt", np.array(0.0))))
    assert math.isnan(float(activation("Log", np.array(-1.0))))
    assert math.isnan(float(activation("Sqrt", np.array(-1.0))))
    assert float(activation("Log", np.array(0.0))) == -math.inf


@pytest.mark.parametrize("kind", ACTIVATION_KINDS)
def test_activation_nan_in_nan_out(kind):
    assert np.isnan(activation(kind, np.array([np.nan]))).all()
    assert np.isnan(activation_grad(kind, np.array([np.nan]))).all()


def test_activation_accepts_lists_and_0d():
    assert activation("Exp", [0.0, 1.0]).tolist() == [1.0, math.e]
    assert activation_grad("Exp", np.array(0.0)).shape == ()


def test_unknown_kind_is_a_lower_error():
    with pytest.raises(LowerError):
        activation("Swish", np.zeros(2))
    with pytest.raises(LowerError):
        activation_grad("Swish", np.zeros(2))
    with pytest.raises(LowerError, match="wrt: output"):
        activation_grad_from_output("Gelu", np.zeros(2))


# ----------------------------------------------------------------------------- activations: f'

@pytest.mark.parametrize("kind", FD_KINDS)
def test_activation_grad_matches_finite_differences(kind):
    xs = np.array(DOMAIN_D[kind], np.float64)
    got = activation_grad(kind, xs)
    want = np.array([central_difference(kind, float(x)) for x in xs])
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def _e(x: float) -> float:
    return math.exp(x)


@pytest.mark.parametrize(("kind", "x", "want"), [
    # exactly known derivatives at large magnitudes
    ("Gelu", 80.0, 1.0), ("Gelu", -80.0, 0.0), ("Gelu", 1e4, 1.0), ("Gelu", -1e4, 0.0),
    ("GeluApprox", 80.0, 1.0), ("GeluApprox", -80.0, 0.0), ("GeluApprox", 1e4, 1.0), ("GeluApprox", -1e4, 0.0),
    ("Silu", 80.0, 1.0), ("Silu", -80.0, _e(-80) * (1 - 80 / (1 + _e(-80)))), ("Silu", -1e4, 0.0),
    ("Sigmoid", 80.0, _e(-80) / (1 + _e(-80)) ** 2), ("Sigmoid", 1e4, 0.0), ("Sigmoid", -1e4, 0.0),
    ("Tanh", 80.0, 4 * _e(-160)), ("Tanh", -1e4, 0.0), ("Tanh", 1e4, 0.0),
    ("Softplus", 1e4, 1.0), ("Softplus", -1e4, 0.0), ("LogSigmoid", 1e4, 0.0), ("LogSigmoid", -1e4, 1.0),
    ("Mish", 1e4, 1.0), ("Mish", -1e4, 0.0), ("Mish", 80.0, 1.0),
    ("Elu", 1e4, 1.0), ("Elu", -1e4, 0.0), ("Elu", -80.0, _e(-80)), ("Exp", -1e4, 0.0),
    ("Erf", 80.0, 0.0), ("Erf", -80.0, 0.0), ("Atan", 1e4, 1 / (1 + 1e8)), ("Softsign", -1e4, 1 / 10001**2),
    ("HardSwish", 1e4, 1.0), ("HardSwish", -1e4, 0.0), ("HardSigmoid", 1e4, 0.0), ("HardSigmoid", -1e4, 0.0),
    ("Relu", 1e4, 1.0), ("Relu", -1e4, 0.0), ("Abs", -1e4, -1.0), ("Sqrt", 1e4, 0.005),
    ("Rsqrt", 1e4, -0.5e-6), ("Recip", 1e4, -1e-8), ("Recip", -1e4, -1e-8), ("Log", 1e4, 1e-4),
    # limits at infinity
    ("Gelu", math.inf, 1.0), ("Gelu", -math.inf, 0.0), ("Silu", math.inf, 1.0), ("Silu", -math.inf, 0.0),
    ("Mish", math.inf, 1.0), ("Mish", -math.inf, 0.0), ("GeluApprox", math.inf, 1.0),
    ("GeluApprox", -math.inf, 0.0), ("Sigmoid", math.inf, 0.0), ("Tanh", -math.inf, 0.0),
    ("Sqrt", math.inf, 0.0), ("Rsqrt", math.inf, 0.0), ("Atan", math.inf, 0.0),
])
def test_activation_grad_at_large_magnitudes(kind, x, want):
    got = float(activation_grad(kind, np.array(x)))
    if want == 0.0:
        assert abs(got) <= 1e-300, got
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=0), got


@pytest.mark.parametrize(("kind", "xs", "want"), [
    ("Relu", [0.0, -0.0, -1.0, 1e-300], [0.0, 0.0, 0.0, 1.0]),
    ("Abs", [0.0, -0.0, -2.0, 2.0], [0.0, 0.0, -1.0, 1.0]),
    ("Sqrt", [0.0, -1.0, -math.inf, 4.0], [0.0, 0.0, 0.0, 0.25]),
    ("Rsqrt", [0.0, -1.0, 4.0], [0.0, 0.0, -1 / 16]),
    ("Round", [0.5, -3.2, 0.0, 7.0, 1e4], [1.0] * 5),
    ("Floor", [0.0, 1.0, -3.5, 2.5], [0.0] * 4),
    ("Ceil", [0.0, 1.0, -3.5, 2.5], [0.0] * 4),
    ("Sign", [0.0, 1.0, -3.5], [0.0] * 3),
    ("HardSigmoid", [-3.0, 3.0, -2.999, 2.999, 0.0, -3.001, 3.001], [0, 0, 1 / 6, 1 / 6, 1 / 6, 0, 0]),
    ("HardSwish", [-3.0, -3.5, -2.0, 0.0, 2.9, 3.0, 3.5],
     [0.0, 0.0, -2.0 / 3 + 0.5, 0.5, 2.9 / 3 + 0.5, 1.0, 1.0]),
    ("Elu", [0.0, -1.0, 1.0, 1e-9], [1.0, math.exp(-1), 1.0, 1.0]),
    ("Neg", [0.0, 5.0], [-1.0, -1.0]),
    ("Log", [0.0, -2.0], [math.inf, -0.5]),
    ("Recip", [0.0], [-math.inf]),
])
def test_activation_grad_conventions(kind, xs, want):
    got = activation_grad(kind, np.array(xs, np.float64))
    np.testing.assert_allclose(got, np.array(want, np.float64), rtol=1e-15, atol=0)


def test_gelu_grad_is_exact_not_tanh_form():
    for x in (-2.0, -0.5, 0.7, 1.0, 3.0):
        phi = math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
        cdf = 0.5 * (1 + math.erf(x / math.sqrt(2)))
        assert float(activation_grad("Gelu", np.array(x))) == pytest.approx(cdf + x * phi, rel=1e-14)
    # the tanh form differs in the 4th digit: a mixed-up implementation is caught
    assert abs(float(activation_grad("Gelu", np.array(1.0))) - float(activation_grad("GeluApprox", np.array(1.0)))) > 1e-4


def test_tan_grad_is_one_plus_tan_squared():
    xs = np.array([-1.2, 0.0, 0.5, 1.5])
    np.testing.assert_allclose(activation_grad("Tan", xs), 1 + np.tan(xs) ** 2, rtol=1e-15)


# ----------------------------------------------------------------------------- wrt: output

OUTPUT_DOMAIN = {
    "Sigmoid": np.linspace(-5, 5, 41),
    "Tanh": np.linspace(-3, 3, 41),
    "Exp": np.linspace(-20, 20, 41),
    "Relu": np.array([-3.0, -1.0, 0.0, 1e-300, 0.5, 7.0]),
    "Sqrt": np.array([0.0, 1e-6, 0.25, 3.0, 1e6]),  # (x < 0: y is nan, and f'(nan) is nan)
    # Rsqrt: not at x <= 0. At x = 0, y = inf and -y^3/2 = -inf while the input form is 0 by convention;
    # the spec only claims equality where y = f(x) is a number both forms handle (see the next test).
    "Rsqrt": np.array([1e-6, 0.25, 1.0, 3.0, 1e6]),
    "Recip": np.array([-4.0, -0.5, 0.1, 2.0, 1e3]),
    "Elu": np.linspace(-5, 5, 41),
}
assert set(OUTPUT_DOMAIN) == set(OUTPUT_FORM_KINDS)


@pytest.mark.parametrize("kind", OUTPUT_FORM_KINDS)
def test_wrt_output_equals_wrt_input(kind):
    x = OUTPUT_DOMAIN[kind]
    y = activation(kind, x)
    np.testing.assert_allclose(activation_grad_from_output(kind, y), activation_grad(kind, x), rtol=1e-9, atol=1e-300)


def test_wrt_output_rsqrt_at_zero_is_where_the_forms_part():
    assert float(activation_grad("Rsqrt", np.array(0.0))) == 0.0
    assert float(activation_grad_from_output("Rsqrt", activation("Rsqrt", np.array(0.0)))) == -math.inf


@pytest.mark.parametrize(("kind", "ys", "want"), [
    ("Sigmoid", [0.25], [0.1875]), ("Tanh", [0.5], [0.75]), ("Exp", [3.0], [3.0]),
    ("Relu", [0.0, 2.0], [0.0, 1.0]), ("Sqrt", [0.0, -1.0, 2.0], [0.0, 0.0, 0.25]),
    ("Rsqrt", [0.0, -1.0, 2.0], [0.0, 0.0, -4.0]), ("Recip", [3.0], [-9.0]), ("Elu", [2.0, -0.5], [1.0, 0.5]),
])
def test_wrt_output_formulas(kind, ys, want):
    np.testing.assert_array_equal(activation_grad_from_output(kind, np.array(ys)), want)
    assert np.isnan(activation_grad_from_output(kind, np.array([np.nan]))).all()
