"""Elementwise math of format version 3 (opdefs/binary_math.py, aten_math.py): the evaluator's Binary
ops against torch's kernels at awkward points (zeros of both signs, infinities, NaN, huge values,
negative divisors), the torch kernels against the evaluator, which Binary ops each backend runs,
and the aten mappings through the torch.compile backend with nothing left in PyTorch."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from egraph_lower.backends import node_kind
from egraph_lower.evaluate import apply
from egraph_lower.opdefs import binary_math as BM
from egraph_lower.opdefs.elementwise import binary_ops_on

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.torch.kernels import binary  # noqa: E402

_VALUES = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0, 7.0, -7.0, 0.1, -0.1, 1e300, -1e300, 1e-300,
           float("inf"), float("-inf"), float("nan"), 5e-324]
_INTS = [0, 1, -1, 2, -2, 3, -3, 7, -7, 2**62, -2**63]

_TORCH = {
    "FloorDiv": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "Rem": torch.remainder, "Fmod": torch.fmod, "Atan2": torch.atan2, "Hypot": torch.hypot,
    "Copysign": torch.copysign, "Xlogy": torch.xlogy, "FMax": torch.fmax, "FMin": torch.fmin,
    "And": torch.bitwise_and, "Or": torch.bitwise_or, "Xor": torch.bitwise_xor,
}


def _pairs(values: list) -> tuple[np.ndarray, np.ndarray]:
    a, b = zip(*itertools.product(values, values))
    return np.array(a), np.array(b)


# computed by a libm (torch's vectorised one differs from the C library's in the last bit)
_TRANSCENDENTAL = frozenset({"Atan2", "Hypot", "Xlogy"})


def _same_bits(got: np.ndarray, want: np.ndarray, ulps: int = 0, zero_sign: bool = True) -> None:
    """Equal (within `ulps` units in the last place), NaN where NaN and zeros of the same sign (with
    `zero_sign`)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind == "f":
        with np.errstate(all="ignore"):
            near = np.abs(got - want) <= ulps * np.spacing(np.abs(want))
        signs = (np.signbit(got) == np.signbit(want)) | (not zero_sign and (want == 0))
        bad = ~(((got == want) | near) & signs | (np.isnan(got) & np.isnan(want)))
    else:
        bad = got != want
    assert not bad.any(), [(g, w) for g, w in zip(got[bad][:5], want[bad][:5])]


# C leaves the sign of fmax(0, -0) and fmin(0, -0) unspecified (torch's vectorised and scalar paths differ)
_ZERO_SIGN_FREE = frozenset({"FMax", "FMin"})


@pytest.mark.parametrize("op", sorted(BM.FLOAT))
def test_float_ops_agree_with_torch_in_float64(op: str) -> None:
    a, b = _pairs(_VALUES)
    if op in BM.DIVISION_OPS:  # torch's vectorised fmod is a - b trunc(a / b): nan where a / b overflows
        with np.errstate(all="ignore"):  # (a huge a or a tiny b); the format's is C's
            keep = ~(np.isinf(a / b) & np.isfinite(a) & (b != 0))
        a, b = a[keep], b[keep]
    want = _TORCH[op](torch.tensor(a), torch.tensor(b)).numpy()
    _same_bits(apply("Binary", {"op": op}, [a, b], "f64"), want, 1 if op in _TRANSCENDENTAL else 0,
               op not in _ZERO_SIGN_FREE)


@pytest.mark.parametrize("op", sorted(BM.INTEGER))
def test_integer_ops_agree_with_torch_off_zero_divisors(op: str) -> None:
    a, b = _pairs(_INTS)
    if op in BM.DIVISION_OPS:  # torch raises on an integer division by zero; the format gives 0
        keep = (b != 0) & ~((a == -2**63) & (b == -1))
        assert (apply("Binary", {"op": op}, [a[~keep & (b == 0)], b[~keep & (b == 0)]], "i64") == 0).all()
        a, b = a[keep], b[keep]
    want = _TORCH[op](torch.tensor(a), torch.tensor(b)).numpy()
    _same_bits(apply("Binary", {"op": op}, [a, b], "i64"), want)


@pytest.mark.parametrize("op", BM.LOGICAL_OPS)
def test_logical_ops_on_bool(op: str) -> None:
    a, b = _pairs([True, False])
    want = _TORCH[op](torch.tensor(a), torch.tensor(b)).numpy()
    _same_bits(apply("Binary", {"op": op}, [a, b], "bool"), want)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i32", "bool"])
@pytest.mark.parametrize("op", BM.NEW_OPS)
def test_torch_kernels_agree_with_the_evaluator(op: str, dtype: str) -> None:
    if op not in binary_ops_on(dtype):
        return
    from egraph_lower.dtypes import to_numpy
    from egraph_lower.torch.common import FORMAT_TO_TORCH
    a, b = _pairs(_VALUES if dtype[0] in "fb" and dtype != "bool" else _INTS[:-2] if dtype != "bool" else [True, False])
    if op == "Copysign":  # a NaN's sign bit does not survive every conversion on the way
        a, b = a[~np.isnan(b)], b[~np.isnan(b)]
    a, b = a.astype(to_numpy(dtype)), b.astype(to_numpy(dtype))
    want = apply("Binary", {"op": op}, [a, b], dtype)
    got = binary(torch.tensor(a.astype(np.float64) if dtype in ("bf16",) else a).to(FORMAT_TO_TORCH[dtype]),
                 torch.tensor(b.astype(np.float64) if dtype in ("bf16",) else b).to(FORMAT_TO_TORCH[dtype]), op)
    _same_bits(got.double().numpy() if dtype == "bf16" else got.numpy(),
               want.astype(np.float64) if dtype == "bf16" else want, 1 if op in _TRANSCENDENTAL else 0,
               op not in _ZERO_SIGN_FREE)


def test_shape_inference_refuses_an_op_off_its_dtypes() -> None:
    from egraph_lower.build import GraphBuilder
    g = GraphBuilder()
    x = g.input("x", (3,), "f32")
    with pytest.raises(Exception, match="And on f32"):
        g.binary("And", x, x)
    m = g.input("m", (3,), "bool")
    with pytest.raises(Exception, match="FloorDiv on bool"):
        g.binary("FloorDiv", m, m)


def test_backends_say_which_binary_ops_they_run() -> None:
    wgpu, metal, cpu = (el.load_backend(n) for n in ("wgpu", "metal", "cpu"))
    assert cpu.runs("Binary", "FloorDiv") and cpu.runs("Binary", "Add")
    assert wgpu.runs("Binary", "And") and not wgpu.runs("Binary", "FloorDiv")
    assert "Binary.FloorDiv" in wgpu.missing and "Binary.Add" not in wgpu.missing
    assert metal.runs("Binary", "Fmod") and not metal.runs("Binary", "Rem")
    assert node_kind("Binary", {"op": "Rem"}) == "Rem" and node_kind("Activation", {"kind": "Exp"}) == "Exp"
    from egraph_lower.backends import from_dict
    old = from_dict({"name": "old", "ops": ["Input", "Param", "Constant", "Binary"],
                     "cost": {"launch": 1, "byte": 0, "flop": 0, "view": 0}})
    assert old.runs("Binary", "Pow") and not old.runs("Binary", "And")  # a file without the key: version 1's


# --------------------------------------------------------------------------- through the torch backend

def _compiled(fn, *args, target: str = "metal"):
    be = elt.backend(target, strict=True)
    from torch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(fn)(*args)
    out = be(gm, list(args))(*args)
    assert be.unlowered_ops == {} and all(not g.errors for g in be.graphs), be.summary()
    return out


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_clamp_isnan_and_logical_ops_through_the_backend(target: str) -> None:
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([nan, -inf, -2.0, -0.0, 0.5, 3.0, inf])
    lo = torch.tensor([0.0, 0.0, nan, -1.0, 1.0, 0.0, 0.0])
    i = torch.tensor([0, 1, -1, 6, -7, 12, 3])

    def fn(x, lo, i):
        return (torch.clamp(x, lo, torch.tensor(2.0)), torch.clamp(x, min=-1.0), torch.clamp_max(x, lo), torch.isnan(x),
                torch.logical_and(x, lo), torch.logical_or(x > 0, i), torch.logical_xor(x, i),
                torch.bitwise_and(i, 5), torch.bitwise_or(i, i * 3), torch.bitwise_xor(i > 0, i < 3),
                torch.clamp(i, min=0.5), (x > 0) * (lo > 0), torch.add(x > 0, lo > 0), torch.nan_to_num(x),
                torch.frac(x), torch.nan_to_num(x, 1.0, 2.0, -3.0), torch.isinf(x), torch.isinf(x.half()),
                torch.isinf(i), torch.isinf(x > 0))

    got, want = _compiled(fn, x, lo, i, target=target), fn(x, lo, i)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True, rtol=0, atol=0)


# --------------------------------------------------------------------------- lowering

@pytest.mark.parametrize("backend", list(el.backends.BUILTIN))
@pytest.mark.parametrize("op", [op for op in BM.NEW_OPS if op not in BM.LOGICAL_OPS])
def test_every_new_binary_op_lowers_on_every_backend(op: str, backend: str) -> None:
    import sys
    sys.path.insert(0, "tests")
    from support import assert_lowering_matches, feeds_for
    from egraph_lower.build import GraphBuilder
    for dtype in ("f32", "f16"):
        g = GraphBuilder(f"{op}_{dtype}")
        a, b = g.input("a", (8, 16), dtype), g.input("b", (8, 16), dtype)
        graph = g.build([g.binary(op, a, b)])
        result = el.lower(graph, backend)
        target = el.load_backend(backend)
        assert all(target.runs_node(n) for n in result.graph.nodes)
        if dtype == "f16" and not target.runs("Binary", op):  # computed in f32, rounded once
            assert "f16" not in {n.dtype for n in result.graph.nodes if n.op in ("Binary", "Activation")}
        feeds = feeds_for(graph, np.random.default_rng(3))
        feeds["b"][0, :4] = [0.0, -0.0, np.inf, np.nan]
        assert_lowering_matches(graph, result.graph, feeds)


@pytest.mark.parametrize("kind", ["Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Exp2", "Expm1", "Log1p", "Trunc",
                                  "Log2", "Log10", "Asin", "Acos", "Erfinv", "Erfc"])
def test_new_kinds_agree_with_torch_in_float64(kind: str) -> None:
    from egraph_lower.evaluate import activation, activation_grad
    x = np.concatenate([np.linspace(-30, 30, 601), [0.0, -0.0, 1.0, -1.0, 1 + 1e-12, 0.999999, 1e-30, 1e10,
                                                    -1e10, 700.0, np.inf, -np.inf, np.nan]])
    t = torch.tensor(x, requires_grad=True)
    fn = getattr(torch, kind.lower())
    y = fn(t)
    (g,) = torch.autograd.grad(y.sum(), t)
    np.testing.assert_allclose(activation(kind, x), y.detach().numpy(), rtol=4e-16, atol=0, equal_nan=True)
    # f'(nan) is nan for every kind (torch: trunc's is 0); acosh' is nan below 1 where acosh is (torch's
    # 1/sqrt(x^2 - 1) is finite below -1); torch's expm1' is 1 + expm1(x) and its atanh' 1/(1 - x^2), a
    # few roundings off near -inf and near +-1 where the format's are exact
    keep = ~np.isnan(x) & ((x >= 1) | np.isnan(x) if kind == "Acosh" else True)
    np.testing.assert_allclose(activation_grad(kind, x)[keep], g.numpy()[keep], rtol=1e-10, atol=1e-15,
                               equal_nan=True)


@pytest.mark.parametrize("target", ["metal", "wgpu"])
def test_division_modes_and_binary_math_through_the_backend(target: str) -> None:
    a = torch.tensor([5.0, -5.0, 5.0, -5.0, 0.0, 7.5, -0.0, 1e30, 3.0])
    b = torch.tensor([3.0, 3.0, -3.0, -3.0, 2.0, 0.0, -2.0, 7e-3, float("nan")])
    i, j = torch.tensor([7, -7, 7, -7, 0]), torch.tensor([2, 2, -2, -2, 3])

    def fn(a, b, i, j):
        return (torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"),
                torch.remainder(a, b), torch.fmod(a, b), torch.remainder(a, 2.5), torch.atan2(a, b),
                torch.hypot(a, b), torch.copysign(a, b), torch.xlogy(a, b.abs()), torch.fmax(a, b),
                torch.fmin(a, b), torch.div(i, j, rounding_mode="floor"), torch.remainder(i, j),
                torch.fmod(i, j), torch.sinh(a / 1e29), torch.trunc(a), torch.expm1(a / 1e29),
                torch.log1p(b.abs()), torch.exp2(a / 1e29))

    got, want = _compiled(fn, a, b, i, j, target=target), fn(a, b, i, j)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True, rtol=2e-7, atol=0, msg=lambda m: f"output {k}: {m}")


@pytest.mark.parametrize("target", ["metal", "wgpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_ldexp_is_a_times_two_to_the_e_as_eager(target: str, dtype: Any) -> None:
    """ldexp(x, e) = x 2^e in float32 for f16/bf16, rounded once: eager's f16 4 * 2^-25 is the
    subnormal 2^-23 (2^-25 alone underflows f16); integer and fractional exponents, an integer x."""
    x = torch.tensor([4.0, -1.5, 3.0, 0.0, -0.0, 1e3, float("inf"), float("nan"), 0.7], dtype=dtype)
    e = torch.tensor([-25, 3, 0, 5, -2, -12, 1, 2, 14])
    ef = torch.tensor([0.5, -1.25, 3.0, 2.0, 0.0, -0.5, 1.0, 0.0, 2.5], dtype=dtype)
    i = torch.tensor([3, -2, 5])

    def fn(x: Any, e: Any, ef: Any, i: Any) -> Any:
        return torch.ldexp(x, e), torch.ldexp(x, ef), torch.ldexp(i, i)

    got, want = _compiled(fn, x, e, ef, i, target=target), fn(x, e, ef, i)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, k
        torch.testing.assert_close(g, w, equal_nan=True, msg=lambda m: f"output {k}: {m}")
    if dtype == torch.float16:
        assert float(got[0][0]) == 2.0**-23
