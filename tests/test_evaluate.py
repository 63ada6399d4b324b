"""The NumPy reference evaluator: every op, rounding once per node, feeds, npz.

References here are independent of evaluate.py: a bf16 rounding done with
exact fractions, NumPy and `math` formulas. The activation math itself (f, f',
the wrt: output forms) is tested in test_activations.py.
"""

from __future__ import annotations

import math
import os
import tracemalloc
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egraph_lower.errors import LowerError
from egraph_lower.evaluate import (
    activation,
    activation_grad,
    activation_grad_from_output,
    apply,
    evaluate,
    read_npz,
    write_npz,
)
from egraph_lower.document import from_dict
from egraph_lower.graph import Graph, Node
from egraph_lower.ops import ACTIVATION_KINDS, INTEGER_KINDS, OUTPUT_FORM_KINDS
from test_activations import OUTPUT_DOMAIN

# No RuntimeWarning (overflow, invalid, divide by zero) may leak out of the evaluator.
pytestmark = pytest.mark.filterwarnings("error")

BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"f16": np.float16, "bf16": BF16, "f32": np.float32, "f64": np.float64,
      "i32": np.int32, "i64": np.int64, "bool": np.bool_}
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


# ----------------------------------------------------------------------------- independent references

def ref_bf16(v: float) -> float:
    """float64 -> bfloat16, round to nearest even, by exact arithmetic on the neighbouring candidates."""
    if math.isnan(v) or math.isinf(v):
        return v
    top = Fraction(2) ** 128 - Fraction(2) ** 119  # bf16 max + half an ulp: from here on, inf
    if abs(Fraction(v)) >= top:
        return math.copysign(math.inf, v)
    start = int(np.array([v], np.float32).view(np.uint32)[0] >> 16)  # truncation: within one ulp
    cands = []
    for bits in (start - 1, start, start + 1, start + 2):
        bits &= 0xFFFF
        c = float(np.array([bits], np.uint16).view(BF16)[0])
        if math.isfinite(c):
            cands.append((abs(Fraction(c) - Fraction(v)), bits & 1, c))
    best = min(cands, key=lambda t: (t[0], t[1]))
    return math.copysign(best[2], v) if best[2] == 0 else best[2]


def ref_round(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded once to `dtype` (bf16 through ref_bf16)."""
    values = np.asarray(values, np.float64)
    if dtype != "bf16":
        with np.errstate(over="ignore"):
            return values.astype(NP[dtype])
    return np.array([ref_bf16(float(v)) for v in values.ravel()], np.float64).reshape(values.shape).astype(BF16)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise-equal values (nan equal to nan), same dtype and shape."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "biu":
        return bool(np.array_equal(a, b))
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    return bool(np.all((fa == fb) | (np.isnan(fa) & np.isnan(fb))))


# ----------------------------------------------------------------------------- graph helpers

def node(id, op, inputs=(), shape=(), dtype="f32", /, **attrs) -> Node:
    return Node(id=id, op=op, inputs=tuple(inputs), shape=tuple(shape), dtype=dtype, attrs=attrs)


@pytest.fixture(params=["direct", "from_dict"])
def build(request):
    """Build a Graph in code, and (second run) the same one through document.from_dict with validation."""

    def make(nodes, outputs) -> Graph:
        g = Graph(nodes=list(nodes), outputs=list(outputs))
        if request.param == "from_dict":
            pytest.importorskip("egraph_lower.validate")
            g = from_dict(g.to_dict())
        return g

    return make


# ----------------------------------------------------------------------------- rounding once per node

FLOAT_DTYPES = ["f16", "bf16", "f32", "f64"]


def test_bf16_rounding_is_correct_from_float64():
    # 1 + 2^-8 + 2^-30 is above the halfway point 1 + 2^-8: it rounds up. Through float32 it would
    # first become exactly 1 + 2^-8 and then tie to even, 1.0 (ml_dtypes' own cast does that).
    v = 1 + 2**-8 + 2**-30
    got = apply("Cast", {"to": "bf16"}, [np.array([v])], "bf16")
    assert got.dtype == BF16 and float(got[0]) == 1.0078125
    assert ref_bf16(v) == 1.0078125
    # ties go to even
    assert float(apply("Cast", {"to": "bf16"}, [np.array([1 + 2**-8])], "bf16")[0]) == 1.0
    assert float(apply("Cast", {"to": "bf16"}, [np.array([1 + 3 * 2**-8])], "bf16")[0]) == 1.015625
    big = apply("Cast", {"to": "bf16"}, [np.array([1e39, -1e39, 3.39e38, math.inf, math.nan, -0.0, 1e-45])], "bf16")
    want = [math.inf, -math.inf, float(np.float32(3.3895314e38)), math.inf]
    assert [float(v) for v in big[:4]] == want
    assert math.isnan(float(big[4])) and math.copysign(1, float(big[5])) == -1 and float(big[6]) == 0.0


@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=False, width=64))
def test_bf16_rounding_against_exact_reference(v):
    got = apply("Cast", {"to": "bf16"}, [np.array([v])], "bf16")
    assert same(got, np.array([ref_bf16(v)], np.float64).astype(BF16))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_bf16_rounding_random_bit_patterns(bits):
    v = float(np.array([bits], np.uint64).view(np.float64)[0])
    got = apply("Cast", {"to": "bf16"}, [np.array([v])], "bf16")
    assert same(got, np.array([ref_bf16(v)], np.float64).astype(BF16))


SAMPLE = np.array([-7.3, -3.0, -2.71, -1.3, -0.6, -0.01, 0.0, 0.013, 0.47, 0.999, 1.7, 2.3, 3.0, 5.9, 11.3])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("kind", ACTIVATION_KINDS)
def test_activation_node_rounds_once(kind, dtype):
    x = np.abs(SAMPLE) + 0.5 if kind in ("Log", "Sqrt", "Rsqrt") else SAMPLE
    x = ref_round(x, dtype)  # an input of the node's dtype
    got = apply("Activation", {"kind": kind}, [x], dtype)
    assert got.dtype == NP[dtype] and got.shape == x.shape
    assert same(got, ref_round(activation(kind, x.astype(np.float64)), dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("kind", ACTIVATION_KINDS)
def test_activation_backward_is_dy_times_grad_rounded_once(kind, dtype):
    x = ref_round(np.abs(SAMPLE) + 0.5 if kind in ("Log", "Sqrt", "Rsqrt") else SAMPLE, dtype)
    dy = ref_round(np.linspace(-3.3, 2.9, len(SAMPLE)), dtype)
    got = apply("ActivationBackward", {"kind": kind}, [x, dy], dtype)
    want = ref_round(dy.astype(np.float64) * activation_grad(kind, x.astype(np.float64)), dtype)
    assert got.dtype == NP[dtype]
    assert same(got, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("kind", OUTPUT_FORM_KINDS)
def test_activation_backward_wrt_output_node(kind, dtype):
    x = OUTPUT_DOMAIN[kind]
    y = ref_round(activation(kind, x), dtype)
    dy = ref_round(np.linspace(-1.7, 2.3, len(x)), dtype)
    got = apply("ActivationBackward", {"kind": kind, "wrt": "output"}, [y, dy], dtype)
    want = ref_round(dy.astype(np.float64) * activation_grad_from_output(kind, y.astype(np.float64)), dtype)
    assert same(got, want)


def test_rounding_once_is_observable_in_f16():
    """The tests above could not tell one rounding from two if no sample differed: make sure one does."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-4, 4, 2000).astype(np.float16)
    dy = rng.uniform(-4, 4, 2000).astype(np.float16)
    once = apply("ActivationBackward", {"kind": "Gelu"}, [x, dy], "f16")
    twice = (dy.astype(np.float64) * activation_grad("Gelu", x.astype(np.float64)).astype(np.float16)).astype(np.float16)
    assert not same(once, twice)
    # Binary in f16: (a * b) rounded once, not a chain of f16 operations
    a = np.array([np.float16(1.0009766)], np.float16)
    got = apply("Binary", {"op": "Mul"}, [a, a], "f16")
    assert same(got, (a.astype(np.float64) ** 2).astype(np.float16))


def test_chain_of_f16_nodes_rounds_after_every_node(build):
    g = build([node(0, "Input", (), (64,), "f16", name="x"),
               node(1, "Activation", (0,), (64,), "f16", kind="Exp"),
               node(2, "Binary", (1, 0), (64,), "f16", op="Mul"),
               node(3, "Activation", (2,), (64,), "f16", kind="Tanh")], [3, 1])
    x = np.linspace(-2, 2, 64).astype(np.float16)
    out3, out1 = evaluate(g, {"x": x})
    e = np.exp(x.astype(np.float64)).astype(np.float16)
    m = (e.astype(np.float64) * x.astype(np.float64)).astype(np.float16)
    assert same(out1, e)
    assert same(out3, np.tanh(m.astype(np.float64)).astype(np.float16))


# ----------------------------------------------------------------------------- Binary, Compare, Where

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op,fn", [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
                                   ("Div", np.divide), ("Max", np.maximum), ("Min", np.minimum),
                                   ("Pow", np.power)])
def test_binary_float(op, fn, dtype):
    a = ref_round(np.array([[1.3, -2.7, 0.0, 5.1], [3.3, 0.25, -1.0, 7.0]]), dtype)
    b = ref_round(np.array([0.7, 3.0, -0.0, 2.0]), dtype)  # broadcasts along the first axis
    got = apply("Binary", {"op": op}, [a, b], dtype)
    with np.errstate(all="ignore"):
        want = ref_round(fn(a.astype(np.float64), b.astype(np.float64)), dtype)
    assert got.shape == (2, 4) and same(got, want)


def test_binary_float_special_values_without_warnings():
    a = np.array([1.0, 0.0, -8.0, np.nan, 1.0, 0.0])
    b = np.array([0.0, 0.0, 1 / 3, 1.0, np.nan, -1.0])
    div = apply("Binary", {"op": "Div"}, [a, b], "f64")
    assert div[0] == math.inf and math.isnan(div[1])
    pw = apply("Binary", {"op": "Pow"}, [a, b], "f64")
    assert math.isnan(pw[2]) and pw[5] == math.inf
    mx = apply("Binary", {"op": "Max"}, [a, b], "f64")
    assert math.isnan(mx[3]) and math.isnan(mx[4])  # nan propagates
    big = apply("Binary", {"op": "Mul"}, [np.array([6e4], np.float16), np.array([6e4], np.float16)], "f16")
    assert big[0] == np.inf


def test_binary_0d_operands_broadcast():
    got = apply("Binary", {"op": "Add"}, [np.array(1.5, np.float32), np.ones((2, 3), np.float32)], "f32")
    assert got.shape == (2, 3) and got.dtype == np.float32 and (got == 2.5).all()
    got = apply("Binary", {"op": "Mul"}, [np.array(2.0), np.array(3.0)], "f64")
    assert isinstance(got, np.ndarray) and got.shape == () and float(got) == 6.0


@pytest.mark.parametrize("dtype", ["i32", "i64"])
def test_integer_div_truncates_toward_zero(dtype):
    a = np.array([7, -7, 7, -7, 6, -6, 0, 5, -5, 1], NP[dtype])
    b = np.array([2, 2, -2, -2, 3, 3, 4, 0, 0, 7], NP[dtype])
    got = apply("Binary", {"op": "Div"}, [a, b], dtype)
    assert got.dtype == NP[dtype]
    assert got.tolist() == [3, -3, -3, 3, 2, -2, 0, 0, 0, 0]


@pytest.mark.parametrize("dtype,lo,hi", [("i32", I32_MIN, I32_MAX), ("i64", I64_MIN, I64_MAX)])
def test_integer_arithmetic_wraps(dtype, lo, hi):
    t = NP[dtype]

    def run(op, a, b):
        return apply("Binary", {"op": op}, [np.array(a, t), np.array(b, t)], dtype).tolist()

    assert run("Add", [hi, lo], [1, -1]) == [lo, hi]
    assert run("Sub", [lo], [1]) == [hi]
    assert run("Mul", [hi], [2]) == [-2]
    assert run("Div", [lo], [-1]) == [lo]  # the one overflowing quotient wraps
    assert run("Max", [lo, 3], [hi, -3]) == [hi, 3]
    assert run("Min", [lo, 3], [hi, -3]) == [lo, -3]


def test_integer_pow():
    t = np.int64
    got = apply("Binary", {"op": "Pow"}, [np.array([2, 3, -2, 0, 1, -1, -1, 2, 0, 5], t),
                                         np.array([10, 40, 3, 0, -5, -3, -4, -1, -2, 1], t)], "i64")
    w = pow(3, 40, 2**64)
    w = w - 2**64 if w >= 2**63 else w
    assert got.tolist() == [1024, w, -8, 1, 1, -1, 1, 0, 0, 5]
    got = apply("Binary", {"op": "Pow"}, [np.array([2, 3], np.int32), np.array([31, 20], np.int32)], "i32")
    assert got.tolist() == [I32_MIN, np.array([3**20 % 2**32], np.uint64).astype(np.uint32).view(np.int32)[0]]


def test_bool_binary():
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert apply("Binary", {"op": "Max"}, [a, b], "bool").tolist() == [True, True, True, False]
    assert apply("Binary", {"op": "Min"}, [a, b], "bool").tolist() == [True, False, False, False]
    for op in ("Add", "Sub", "Div", "Pow"):
        with pytest.raises(LowerError):
            apply("Binary", {"op": op}, [a, b], "bool")


@pytest.mark.parametrize("op,fn", [("Eq", np.equal), ("Ne", np.not_equal), ("Lt", np.less),
                                   ("Le", np.less_equal), ("Gt", np.greater), ("Ge", np.greater_equal)])
def test_compare(op, fn):
    a = np.array([1.0, 2.0, np.nan, -0.0, 3.0], np.float32)
    b = np.array([1.0, 1.0, np.nan, 0.0, 4.0], np.float32)
    got = apply("Compare", {"op": op}, [a, b], "bool")
    assert got.dtype == np.bool_ and got.tolist() == fn(a, b).tolist()
    ai = np.array([2**62 + 1, -5], np.int64)
    bi = np.array([2**62, -5], np.int64)  # equal as float64: must be compared as integers
    assert apply("Compare", {"op": op}, [ai, bi], "bool").tolist() == fn(ai, bi).tolist()
    ab = np.array([True, False])
    assert apply("Compare", {"op": op}, [ab, np.array(True)], "bool").tolist() == fn(ab, True).tolist()


def test_where():
    cond = np.array([[True], [False]])
    a = np.array([1.5, 2.5, 3.5], BF16)
    b = np.array(-1.0, BF16)
    got = apply("Where", {}, [cond, a, b], "bf16")
    assert got.dtype == BF16 and got.shape == (2, 3)
    assert got.astype(np.float64).tolist() == [[1.5, 2.5, 3.5], [-1.0, -1.0, -1.0]]
    got = apply("Where", {}, [np.array([True, False]), np.array([1, 2], np.int32), np.array([7, 8], np.int32)], "i32")
    assert got.tolist() == [1, 8] and got.dtype == np.int32


# ----------------------------------------------------------------------------- Cast

def test_cast_float_to_int_truncates_and_saturates():
    x = np.array([2.7, -2.7, 0.5, -0.5, np.nan, np.inf, -np.inf, 1e10, -1e10, 2147483647.0, 2147483648.0])
    got = apply("Cast", {"to": "i32"}, [x], "i32")
    assert got.dtype == np.int32
    assert got.tolist() == [2, -2, 0, 0, 0, I32_MAX, I32_MIN, I32_MAX, I32_MIN, I32_MAX, I32_MAX]
    got = apply("Cast", {"to": "i64"}, [np.array([9.3e18, -9.3e18, 2.0**62], np.float64)], "i64")
    assert got.tolist() == [I64_MAX, I64_MIN, 2**62]
    got = apply("Cast", {"to": "i32"}, [np.array([3.75, -1.5], BF16)], "i32")
    assert got.tolist() == [3, -1]


def test_cast_int_int_wraps_and_bool():
    assert apply("Cast", {"to": "i32"}, [np.array([2**32 + 5, -(2**31) - 1], np.int64)], "i32").tolist() == [5, I32_MAX]
    assert apply("Cast", {"to": "bool"}, [np.array([0.0, -0.0, 0.1, np.nan])], "bool").tolist() == [False, False, True, True]
    assert apply("Cast", {"to": "bool"}, [np.array([0, 3], np.int32)], "bool").tolist() == [False, True]
    assert apply("Cast", {"to": "f16"}, [np.array([True, False])], "f16").tolist() == [1.0, 0.0]
    assert apply("Cast", {"to": "i64"}, [np.array([True, False])], "i64").tolist() == [1, 0]
    # float -> float rounds once; int -> float converts
    assert same(apply("Cast", {"to": "f16"}, [np.array([0.1], np.float32)], "f16"),
                np.array([np.float32(0.1)], np.float64).astype(np.float16))
    assert apply("Cast", {"to": "f32"}, [np.array([2**24 + 1], np.int64)], "f32").tolist() == [2.0**24]
    with pytest.raises(LowerError):
        apply("Cast", {"to": "f32"}, [np.array([1])], "f16")


# ----------------------------------------------------------------------------- integer and bool activations

def test_integer_activations():
    x = np.array([I32_MIN, -3, 0, 4, I32_MAX], np.int32)
    run = lambda kind: apply("Activation", {"kind": kind}, [x], "i32").tolist()  # noqa: E731
    assert run("Neg") == [I32_MIN, 3, 0, -4, -I32_MAX]
    assert run("Abs") == [I32_MIN, 3, 0, 4, I32_MAX]
    assert run("Sign") == [-1, -1, 0, 1, 1]
    assert run("Relu") == [0, 0, 0, 4, I32_MAX]
    for kind in ("Round", "Floor", "Ceil"):
        assert run(kind) == x.tolist()
    assert apply("Activation", {"kind": "Relu"}, [x], "i32").dtype == np.int32
    with pytest.raises(LowerError):
        apply("Activation", {"kind": "Exp"}, [x], "i32")
    with pytest.raises(LowerError):
        apply("Activation", {"kind": "Relu"}, [np.array([True])], "bool")


@pytest.mark.parametrize("kind", sorted(INTEGER_KINDS))
def test_integer_activation_backward(kind):
    x = np.array([-3, 0, 4], np.int64)
    dy = np.array([5, 6, -7], np.int64)
    got = apply("ActivationBackward", {"kind": kind}, [x, dy], "i64")
    want = (dy * activation_grad(kind, x.astype(np.float64))).astype(np.int64)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()


def test_integer_relu_backward_from_output():
    y = np.array([0, 0, 4], np.int32)
    assert apply("ActivationBackward", {"kind": "Relu", "wrt": "output"}, [y, np.array([1, 2, 3], np.int32)],
                 "i32").tolist() == [0, 0, 3]
    with pytest.raises(LowerError):
        apply("ActivationBackward", {"kind": "Neg", "wrt": "output"}, [y, y], "i32")


# ----------------------------------------------------------------------------- backward ops

def test_relu_backward_vs_activation_backward_relu():
    x = np.array([-1.0, 0.0, 2.0, np.nan, -3.0])
    dy = np.array([5.0, 6.0, 7.0, 8.0, np.inf])
    assert apply("ReluBackward", {}, [x, dy], "f64").tolist() == [0.0, 0.0, 7.0, 0.0, 0.0]
    ab = apply("ActivationBackward", {"kind": "Relu"}, [x, dy], "f64")
    # literally dy * f'(x): nan where x is nan, and inf * 0 is nan
    assert ab[:3].tolist() == [0.0, 0.0, 7.0] and math.isnan(ab[3]) and math.isnan(ab[4])
    got = apply("ReluBackward", {}, [np.array([1, -1], np.int32), np.array([3, 4], np.int32)], "i32")
    assert got.tolist() == [3, 0] and got.dtype == np.int32
    got = apply("ReluBackward", {}, [np.array([0.5], BF16), np.array([1.5], BF16)], "bf16")
    assert got.dtype == BF16 and float(got[0]) == 1.5


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_batch_norm_ops(dtype):
    rng = np.random.default_rng(1)
    x = ref_round(rng.normal(size=(2, 3, 4)), dtype)
    dy = ref_round(rng.normal(size=(2, 3, 4)), dtype)
    gamma, beta, mean = (ref_round(rng.normal(size=4), dtype) for _ in range(3))
    var = ref_round(rng.uniform(0.1, 2.0, size=4), dtype)
    eps = 1e-5
    f = lambda a: a.astype(np.float64)  # noqa: E731
    got = apply("BatchNormInference", {"eps": eps}, [x, gamma, beta, mean, var], dtype)
    want = (f(x) - f(mean)) / np.sqrt(f(var) + eps) * f(gamma) + f(beta)
    assert same(got, ref_round(want, dtype))
    got = apply("BatchNormInferenceBackwardInput", {"eps": eps}, [x, gamma, mean, var, dy], dtype)
    assert same(got, ref_round(f(dy) * f(gamma) / np.sqrt(f(var) + eps), dtype))
    got = apply("BatchNormInferenceBackwardGamma", {"eps": eps}, [x, mean, var, dy], dtype)
    want = (f(dy) * (f(x) - f(mean)) / np.sqrt(f(var) + eps)).sum(axis=(0, 1))
    assert got.shape == (4,) and same(got, ref_round(want, dtype))
    got = apply("BatchNormInferenceBackwardBeta", {}, [dy], dtype)
    assert got.shape == (4,) and same(got, ref_round(f(dy).sum(axis=(0, 1)), dtype))


def test_batch_norm_sums_accumulate_in_float64():
    dy = np.array([[1e8], [1.0], [-1e8]], np.float32)  # float32 accumulation loses the 1
    assert apply("BatchNormInferenceBackwardBeta", {}, [dy], "f32").tolist() == [1.0]
    x = np.array([[1e8], [1.0], [-1e8]], np.float32)
    got = apply("BatchNormInferenceBackwardGamma", {"eps": 0.0},
                [x, np.zeros(1, np.float32), np.ones(1, np.float32), np.ones((3, 1), np.float32)], "f32")
    assert got.tolist() == [1.0]
    dy = np.full((4, 2), 30000.0, np.float16)  # the f16 sum of the partials is out of range on the way
    assert apply("BatchNormInferenceBackwardBeta", {}, [dy], "f16").tolist() == [np.inf, np.inf]
    dy = np.array([[60000.0], [60000.0], [-60000.0]], np.float16)
    assert apply("BatchNormInferenceBackwardBeta", {}, [dy], "f16").tolist() == [60000.0]


def test_batch_norm_needs_float():
    with pytest.raises(LowerError):
        apply("BatchNormInferenceBackwardBeta", {}, [np.ones((2, 2), np.int32)], "i32")


# ----------------------------------------------------------------------------- shape ops, Reduce, MatMul

def test_expand_reshape_transpose():
    x = np.arange(3, dtype=np.int32)
    got = apply("Expand", {"shape": [2, 3]}, [x], "i32")
    assert got.tolist() == [[0, 1, 2], [0, 1, 2]] and got.dtype == np.int32
    assert apply("Expand", {"shape": [2, 1]}, [np.array(7.0, np.float16)], "f16").tolist() == [[7.0], [7.0]]
    y = np.arange(6, dtype=np.float32)
    assert apply("Reshape", {"shape": [2, 3]}, [y], "f32").tolist() == [[0, 1, 2], [3, 4, 5]]
    assert apply("Reshape", {"shape": []}, [np.array([5.0])], "f64").shape == ()
    z = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    got = apply("Transpose", {"perm": [2, 0, 1]}, [z], "i64")
    assert got.shape == (4, 2, 3) and (got == z.transpose(2, 0, 1)).all()
    with pytest.raises(LowerError):
        apply("Reshape", {"shape": [4]}, [y], "f32")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_reduce_float(dtype):
    x = ref_round(np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7, dtype)
    x64 = x.astype(np.float64)
    for op, fn in (("Sum", np.sum), ("Mean", np.mean), ("Max", np.max), ("Min", np.min)):
        for axes, keep in (([1], False), ([0, 2], True), ([-1], False), ([0, 1, 2], False)):
            attrs = {"op": op, "axes": axes, "keep_dim": keep}
            got = apply("Reduce", attrs, [x], dtype)
            want = fn(x64, axis=tuple(axes), keepdims=keep)
            assert got.dtype == NP[dtype] and same(got, ref_round(want, dtype)), (op, axes)
    assert same(apply("Reduce", {"op": "Sum", "axes": []}, [x], dtype), x)  # empty axes: identity
    got = apply("Reduce", {"op": "Sum", "axes": [0]}, [x], dtype)  # keep_dim defaults to false
    assert got.shape == (3, 4)


def test_reduce_special_cases():
    big = np.array([1e8, 1.0, -1e8], np.float32)
    assert apply("Reduce", {"op": "Sum", "axes": [0]}, [big], "f32").tolist() == 1.0
    assert math.isnan(apply("Reduce", {"op": "Max", "axes": [0]}, [np.array([1.0, np.nan])], "f64"))
    empty = np.zeros((0, 2))
    assert apply("Reduce", {"op": "Sum", "axes": [0]}, [empty], "f64").tolist() == [0.0, 0.0]
    assert np.isnan(apply("Reduce", {"op": "Mean", "axes": [0]}, [empty], "f64")).all()
    assert apply("Reduce", {"op": "Max", "axes": [0]}, [empty], "f64").tolist() == [-np.inf, -np.inf]
    xi = np.array([[I32_MAX, 1], [7, -9]], np.int32)
    assert apply("Reduce", {"op": "Sum", "axes": [0]}, [xi], "i32").tolist() == [I32_MIN + 6, -8]
    assert apply("Reduce", {"op": "Max", "axes": [1]}, [xi], "i32").tolist() == [I32_MAX, 7]
    assert apply("Reduce", {"op": "Min", "axes": [1], "keep_dim": True}, [xi], "i32").tolist() == [[1], [-9]]
    assert apply("Reduce", {"op": "Mean", "axes": [1]}, [np.array([[-7, 0]], np.int64)], "i64").tolist() == [-3]
    xb = np.array([[True, False], [True, True]])
    assert apply("Reduce", {"op": "Max", "axes": [1]}, [xb], "bool").tolist() == [True, True]
    assert apply("Reduce", {"op": "Min", "axes": [1]}, [xb], "bool").tolist() == [False, True]
    with pytest.raises(LowerError):
        apply("Reduce", {"op": "Sum", "axes": [0]}, [xb], "bool")
    with pytest.raises(LowerError):
        apply("Reduce", {"op": "Sum", "axes": [0, 0]}, [big], "f32")
    with pytest.raises(LowerError):
        apply("Reduce", {"op": "Sum", "axes": [1]}, [big], "f32")


def test_matmul():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert same(apply("MatMul", {}, [a, b], "f32"), (a.astype(np.float64) @ b).astype(np.float32))
    v = np.array([1.0, 2.0, 3.0], np.float32)
    assert apply("MatMul", {}, [a, v], "f32").shape == (2,)
    assert apply("MatMul", {}, [v, b], "f32").shape == (4,)
    assert apply("MatMul", {}, [v, v], "f32").shape == ()
    batch = np.ones((5, 1, 2, 3), np.float64)
    assert apply("MatMul", {}, [batch, np.ones((4, 3, 2))], "f64").shape == (5, 4, 2, 2)
    # accumulation in float64: f16 partial sums would overflow, f32 ones would lose the 1
    h = np.array([[60000.0, 60000.0, -60000.0]], np.float16)
    assert apply("MatMul", {}, [h, np.ones((3, 1), np.float16)], "f16").tolist() == [[60000.0]]
    s = np.array([[1e8, 1.0, -1e8]], np.float32)
    assert apply("MatMul", {}, [s, np.ones((3, 1), np.float32)], "f32").tolist() == [[1.0]]
    i = np.array([[I32_MAX, 1]], np.int32)
    assert apply("MatMul", {}, [i, np.ones((2, 1), np.int32)], "i32").tolist() == [[I32_MIN]]
    with pytest.raises(LowerError):
        apply("MatMul", {}, [np.array(1.0), v], "f32")
    with pytest.raises(LowerError):
        apply("MatMul", {}, [a, a], "f32")


# ----------------------------------------------------------------------------- Constant

def test_constant():
    got = apply("Constant", {"value": 0.1}, [], "bf16", [2, 2])
    assert got.dtype == BF16 and got.shape == (2, 2) and (got.astype(np.float64) == ref_bf16(0.1)).all()
    got = apply("Constant", {"value": [[1, 2], [3, 4]]}, [], "f16", [2, 2])
    assert got.tolist() == [[1, 2], [3, 4]] and got.dtype == np.float16
    assert apply("Constant", {"value": [True, False]}, [], "bool", [2]).tolist() == [True, False]
    assert apply("Constant", {"value": True}, [], "bool", []).shape == ()
    assert apply("Constant", {"value": 3.0}, [], "i32", [2]).tolist() == [3, 3]
    assert apply("Constant", {"value": -(2**63)}, [], "i64", []).tolist() == -(2**63)
    assert apply("Constant", {"value": 7}, [], "f32").shape == ()
    assert apply("Constant", {"value": 1.0}, [], "f32", [0, 3]).shape == (0, 3)
    for attrs, dtype, shape in (({"value": 2.5}, "i32", [1]), ({"value": 2**31}, "i32", []),
                                ({"value": [1, 2]}, "f32", [3]), ({"value": [[1], [2, 3]]}, "f32", [2, 2]),
                                ({"value": "one"}, "f32", []), ({"value": 2}, "bool", []), ({}, "f32", [])):
        with pytest.raises(LowerError):
            apply("Constant", attrs, [], dtype, shape)


# ----------------------------------------------------------------------------- evaluate and feeds

def test_evaluate_gelu_backward_graph(build):
    g = build([node(0, "Input", (), (4, 8), "f32", name="x"),
               node(1, "Input", (), (4, 8), "f32", name="dy"),
               node(2, "ActivationBackward", (0, 1), (4, 8), "f32", kind="Gelu")], [2])
    rng = np.random.default_rng(2)
    x, dy = (rng.normal(size=(4, 8)).astype(np.float32) for _ in range(2))
    (out,) = evaluate(g, {"x": x, "dy": dy, "unused": np.zeros(3)})
    assert out.dtype == np.float32 and out.shape == (4, 8)
    assert same(out, (dy.astype(np.float64) * activation_grad("Gelu", x.astype(np.float64))).astype(np.float32))


def test_evaluate_outputs_in_order_with_repeats(build):
    g = build([node(0, "Param", (), (3,), "i32", name="w"),
               node(5, "Constant", (), (), "i32", value=2),
               node(7, "Binary", (0, 5), (3,), "i32", op="Mul"),
               node(9, "Compare", (7, 0), (3,), "bool", op="Gt"),
               node(11, "Where", (9, 7, 0), (3,), "i32")], [11, 9, 11, 0])
    w = np.array([-1, 0, 4], np.int32)
    outs = evaluate(g, {"w": w})
    assert [o.tolist() for o in outs] == [[-1, 0, 8], [False, False, True], [-1, 0, 8], [-1, 0, 4]]
    assert [o.dtype for o in outs] == [np.int32, np.bool_, np.int32, np.int32]
    outs[0][0] = 99  # every output is its own array
    assert outs[2][0] == -1 and w[0] == -1


def test_evaluate_every_op_in_one_graph(build):
    nodes = [
        node(0, "Input", (), (2, 3), "f32", name="x"),
        node(1, "Input", (), (2, 3), "f32", name="dy"),
        node(2, "Param", (), (3,), "f32", name="g"),
        node(3, "Constant", (), (3,), "f32", value=[0.5, 1.0, 2.0]),
        node(4, "Activation", (0,), (2, 3), "f32", kind="Silu"),
        node(5, "Binary", (4, 2), (2, 3), "f32", op="Add"),
        node(6, "Compare", (5, 0), (2, 3), "bool", op="Lt"),
        node(7, "Where", (6, 5, 0), (2, 3), "f32"),
        node(8, "Cast", (7,), (2, 3), "f16", to="f16"),
        node(9, "Expand", (3,), (2, 3), "f32", shape=[2, 3]),
        node(10, "Reshape", (9,), (3, 2), "f32", shape=[3, 2]),
        node(11, "Transpose", (10,), (2, 3), "f32", perm=[1, 0]),
        node(12, "Reduce", (11,), (2,), "f32", op="Sum", axes=[1]),
        node(13, "MatMul", (0, 10), (2, 2), "f32"),
        node(14, "BatchNormInference", (0, 2, 3, 3, 3), (2, 3), "f32", eps=1e-5),
        node(15, "ReluBackward", (0, 1), (2, 3), "f32"),
        node(16, "ActivationBackward", (4, 1), (2, 3), "f32", kind="Sigmoid", wrt="output"),
        node(17, "BatchNormInferenceBackwardInput", (0, 2, 3, 3, 1), (2, 3), "f32", eps=1e-5),
        node(18, "BatchNormInferenceBackwardGamma", (0, 3, 3, 1), (3,), "f32", eps=1e-5),
        node(19, "BatchNormInferenceBackwardBeta", (1,), (3,), "f32"),
    ]
    g = build(nodes, [8, 12, 13, 14, 15, 16, 17, 18, 19])
    x = np.array([[-1.0, 0.5, 2.0], [3.0, -0.25, 0.0]], np.float32)
    dy = np.array([[1.0, -2.0, 0.5], [0.25, 4.0, -1.0]], np.float32)
    gm = np.array([1.5, -1.0, 0.5], np.float32)
    outs = evaluate(g, {"x": x, "dy": dy, "g": gm})
    by_node = {}
    for n in nodes:  # node by node through apply: the graph walk must agree with it
        if n.op in ("Input", "Param"):
            by_node[n.id] = {"x": x, "dy": dy, "g": gm}[n.attrs["name"]]
        else:
            by_node[n.id] = apply(n.op, n.attrs, [by_node[i] for i in n.inputs], n.dtype, n.shape)
    for o, want_id in zip(outs, [8, 12, 13, 14, 15, 16, 17, 18, 19]):
        assert same(o, by_node[want_id])
    assert outs[0].dtype == np.float16 and outs[1].tolist() == [3.5, 3.5]


def test_feed_errors_name_the_node(build):
    g = build([node(3, "Input", (), (4, 8), "f32", name="x"),
               node(4, "Activation", (3,), (4, 8), "f32", kind="Exp")], [4])
    with pytest.raises(LowerError, match=r"node 3 .*'x'") as e:
        evaluate(g, {"y": np.zeros((4, 8))})
    assert "\n" not in str(e.value)
    with pytest.raises(LowerError, match=r"node 3 .*'x'.*\[4, 8\]") as e:
        evaluate(g, {"x": np.zeros((8, 4), np.float32)})
    assert "[8, 4]" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(LowerError, match="node 3"):
        evaluate(g, {"x": np.zeros((4, 8), np.complex64)})
    with pytest.raises(LowerError, match="node 3"):
        evaluate(g, {"x": np.full((4, 8), "a")})


def test_feed_conversions():
    f = lambda v, dtype, shape=(3,): apply("Input", {"name": "x"}, [v], dtype, shape)  # noqa: E731
    got = f(np.array([0.1, 1 + 2**-8 + 2**-30, 70000.0]), "f16")
    assert same(got, np.array([0.1, 1 + 2**-8 + 2**-30, np.inf]).astype(np.float16))
    assert float(f(np.array([0.1, 1 + 2**-8 + 2**-30, 1.0]), "bf16")[1]) == 1.0078125
    assert f(np.array([1, 2, 3], np.int32), "f32").dtype == np.float32
    assert f([1, 2, 3], "i64").dtype == np.int64  # lists are fine
    assert f(np.array([1.0, -2.0, 3.0]), "i32").tolist() == [1, -2, 3]
    assert f(np.array([1, 0, 1], np.int64), "bool").tolist() == [True, False, True]
    assert f(np.array([True, False, True]), "i32").tolist() == [1, 0, 1]
    assert f(np.array([1, 2, 3], np.uint8), "i32").tolist() == [1, 2, 3]
    same_dtype = np.array([1.0, 2.0, 3.0], np.float32)
    assert f(same_dtype, "f32") is same_dtype or (f(same_dtype, "f32") == same_dtype).all()
    bf = np.array([1.5, 2.5, 3.5], BF16)
    assert f(bf.view(np.void), "bf16").dtype == BF16  # what np.load gives for bf16
    for bad, dtype in ((np.array([1.5, 2.0, 3.0]), "i32"), (np.array([np.nan, 0.0, 1.0]), "i64"),
                       (np.array([2**31, 0, 0], np.int64), "i32"), (np.array([3e9, 0.0, 0.0]), "i32"),
                       (np.array([0, 2, 1]), "bool"), (np.array([1 + 1j, 0, 0]), "f32"),
                       (np.array([1.0, 2.0]), "f32")):
        with pytest.raises(LowerError):
            f(bad, dtype)


def test_evaluate_reports_inconsistent_unvalidated_graphs():
    g = Graph(nodes=[node(0, "Input", (), (2,), "f32", name="x"),
                     node(1, "Activation", (0,), (3,), "f32", kind="Exp")], outputs=[1])
    with pytest.raises(LowerError, match="node 1"):
        evaluate(g, {"x": np.zeros(2, np.float32)})
    g = Graph(nodes=[node(1, "Activation", (0,), (2,), "f32", kind="Exp")], outputs=[1])
    with pytest.raises(LowerError, match="node 1"):
        evaluate(g, {})
    g = Graph(nodes=[node(0, "Input", (), (2,), "f32", name="x"),
                     node(1, "Reshape", (0,), (3,), "f32", shape=[3])], outputs=[1])
    with pytest.raises(LowerError, match="node 1 \\(Reshape\\)"):
        evaluate(g, {"x": np.zeros(2, np.float32)})


def test_a_long_chain_is_evaluated_holding_only_live_values():
    """30,000 nodes deep (no recursion), each value dropped after its last user: the peak of
    Python's allocations stays a fraction of what keeping every 1 KiB value would take (30 MB)."""
    n, shape = 30_000, (16, 16)
    nodes = [node(0, "Input", (), shape, "f32", name="x"), node(1, "Input", (), shape, "f32", name="y")]
    kinds = [("Binary", {"op": "Add"}, 2), ("Activation", {"kind": "Tanh"}, 1),
             ("Binary", {"op": "Mul"}, 2), ("ActivationBackward", {"kind": "Sigmoid"}, 2)]
    for i in range(2, n):
        op, attrs, arity = kinds[i % 4]
        nodes.append(node(i, op, (i - 1, i - 2)[:arity], shape, "f32", **attrs))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    tracemalloc.start()
    try:
        (out,) = evaluate(Graph(nodes=nodes, outputs=[n - 1]), {"x": x, "y": y})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
    a, b = x.astype(np.float64), y.astype(np.float64)  # the same chain in NumPy, rounded to f32 per node
    for i in range(2, n):
        k = i % 4
        if k == 0:
            r = b + a
        elif k == 1:
            r = np.tanh(b)
        elif k == 2:
            r = b * a
        else:
            s = 1 / (1 + np.exp(-b))
            r = a * s * (1 - s)
        a, b = b, r.astype(np.float32).astype(np.float64)
    assert out.dtype == np.float32 and out.shape == shape
    np.testing.assert_allclose(out, b, rtol=1e-3)


# ----------------------------------------------------------------------------- npz

def test_npz_round_trip(tmp_path):
    arrays = [np.array([[1.5, -2.0]], np.float32), np.array([0.1, 3.0], BF16), np.array(7, np.int32),
              np.array([True, False]), np.array([1e-3], np.float16), np.arange(3, dtype=np.int64), np.zeros((0, 2))]
    p = tmp_path / "out.npz"
    write_npz(p, arrays)
    back = read_npz(p)
    assert list(back) == [f"out{i}" for i in range(len(arrays))]
    for i, a in enumerate(arrays):
        assert same(back[f"out{i}"], a), i
    assert set(np.load(p).files) == {f"out{i}" for i in range(len(arrays))}  # plain NumPy reads it too
    assert [f.name for f in tmp_path.iterdir()] == ["out.npz"]  # no temporary left behind


def test_npz_feeds_evaluate_end_to_end(tmp_path):
    g = Graph(nodes=[node(0, "Input", (), (2,), "bf16", name="x"),
                     node(1, "Activation", (0,), (2,), "bf16", kind="Gelu")], outputs=[1, 0])
    feeds = tmp_path / "in.npz"
    np.savez(feeds, x=np.array([0.5, -1.25], BF16))
    outs = evaluate(g, read_npz(feeds))
    write_npz(tmp_path / "out.npz", outs)
    back = read_npz(tmp_path / "out.npz")
    assert same(back["out0"], outs[0]) and same(back["out1"], np.array([0.5, -1.25], BF16))


def test_read_npz_errors_are_one_line(tmp_path):
    bad = []
    bad.append(tmp_path / "missing.npz")
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"this is not a zip file at all")
    bad.append(garbage)
    truncated = tmp_path / "truncated.npz"
    np.savez(tmp_path / "good.npz", a=np.arange(1000))
    truncated.write_bytes((tmp_path / "good.npz").read_bytes()[:300])
    bad.append(truncated)
    npy = tmp_path / "single.npy"
    np.save(npy, np.arange(3))
    bad.append(npy)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, a=np.array([{"k": 1}], dtype=object))
    bad.append(pickled)
    bad.append(tmp_path)  # a directory
    for p in bad:
        with pytest.raises(LowerError) as e:
            read_npz(p)
        msg = str(e.value)
        assert "\n" not in msg and str(p) in msg, msg


def test_write_npz_never_clobbers_on_failure(tmp_path, monkeypatch):
    p = tmp_path / "out.npz"
    write_npz(p, [np.array([1.0])])
    before = p.read_bytes()

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(LowerError, match="No space left"):
        write_npz(p, [np.array([2.0, 3.0])])
    assert p.read_bytes() == before
    assert [f.name for f in tmp_path.iterdir()] == ["out.npz"]
    monkeypatch.undo()
    with pytest.raises(LowerError):
        write_npz(tmp_path / "no" / "such" / "dir.npz", [np.array([1.0])])


# ----------------------------------------------------------------------------- apply: errors

def test_apply_errors_are_lower_errors():
    with pytest.raises(LowerError, match="unknown op"):
        apply("Conv", {}, [], "f32")
    with pytest.raises(LowerError, match="dtype"):
        apply("Activation", {"kind": "Exp"}, [np.zeros(2)], "f8")
    with pytest.raises(LowerError, match="missing attribute"):
        apply("Binary", {}, [np.zeros(2), np.zeros(2)], "f32")
    with pytest.raises(LowerError):
        apply("Binary", {"op": "Add"}, [np.zeros(2), np.zeros(3)], "f32")
    with pytest.raises(LowerError):
        apply("ActivationBackward", {"kind": "Gelu", "wrt": "output"}, [np.zeros(2), np.zeros(2)], "f32")
