"""Fractional max pooling (opdefs/fractional_pool.py): the reference is aten's CPU kernel in every dtype
(bf16 and f16 windows included, which their rounding moves), and a compiled step gives eager's values and
gradients on metal, wgpu and cpu with nothing left in PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.evaluate import apply  # noqa: E402
from egraph_lower.opdefs.fractional_pool import positions  # noqa: E402

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _np(t: torch.Tensor) -> np.ndarray:
    import ml_dtypes

    return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16) if t.dtype == torch.bfloat16 else t.numpy()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("shape", "kernel", "out"), [((2, 3, 16, 16), (2, 3), (11, 13)), ((1, 2, 7, 9), (4, 2), (1, 5)),
                                                      ((1, 2, 5, 6, 8), (2, 1, 3), (3, 5, 4))])
def test_reference_is_atens_kernel(dtype: torch.dtype, shape: tuple[int, ...], kernel: tuple[int, ...],
                                   out: tuple[int, ...]) -> None:
    g = torch.Generator().manual_seed(5)
    x = torch.randint(-3, 4, shape, generator=g).to(dtype)
    x.view(-1)[::7] = float("nan")
    x.view(-1)[3::11] = float("-inf")
    s = torch.rand(*shape[:2], len(kernel), generator=g).to(dtype)
    fn = torch.ops.aten.fractional_max_pool2d if len(kernel) == 2 else torch.ops.aten.fractional_max_pool3d
    y, idx = fn(x, list(kernel), list(out), s)
    nd = len(kernel)
    attrs = {"kernel": list(kernel), "output_size": list(out)}
    name = f"FractionalMaxPool{nd}d"
    fmt = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
    np.testing.assert_array_equal(apply(name + "Indices", attrs, [_np(x), _np(s)], "i64"), idx.numpy())
    np.testing.assert_array_equal(np.asarray(apply(name, attrs, [_np(x), _np(s)], fmt), dtype=np.float64),
                                  y.double().numpy())


def test_bf16_windows_are_bf16_arithmetic() -> None:
    """The 16 x 16 case: bf16 samples give other windows computed in bf16 than in float32 (so the dtype matters)."""
    s = torch.rand(2, 3, 2, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    bf = positions(_np(s), 1, 16, 2, 11)
    f32 = positions(s.float().numpy(), 1, 16, 2, 11)
    assert (bf != f32).any()


@pytest.mark.parametrize("target", ["metal", "wgpu", "cpu"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_compiled_step_is_eagers(target: str, dtype: torch.dtype) -> None:
    be = elt.backend(target, strict=True)
    m = torch.nn.FractionalMaxPool2d((2, 3), output_size=(11, 13))
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64).to(dtype).requires_grad_(True)
    # small whole weights: the sums of overlapping windows are exact in f16/bf16 in any order
    w = (torch.arange(2 * 3 * 11 * 13) % 7).reshape(2, 3, 11, 13).to(dtype)
    torch.manual_seed(3)
    want = m(x)
    (want_g,) = torch.autograd.grad((want * w).sum(), x)
    f = torch.compile(lambda x: m(x), backend=be, dynamic=False)
    torch.manual_seed(3)
    got = f(x)
    (got_g,) = torch.autograd.grad((got * w).sum(), x)
    assert torch.equal(got, want) and torch.equal(got_g, want_g)
    assert be.unlowered_ops == {}, be.summary()
