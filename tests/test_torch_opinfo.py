"""PyTorch's own OpInfo samples of every activation and normalization op whose backward we map,
through the torch.compile backend (called as dynamo calls it, on the op's traced graph) for
metal and wgpu, whose backward graphs are lowered: the gradients are compared with eager's.

- f32, f64: `torch.testing.assert_close` with PyTorch's default tolerances for the dtype;
- f16, bf16: as PyTorch checks its decompositions, against a float64 reference: the lowered
  gradient's largest error is no more than eager's plus HALF_MARGIN ulp of the largest reference
  value (`egraph_lower.rules.check.HALF_MARGIN`, 1/16: the margin the rule checker states).

Needs `expecttest` (PyTorch's OpInfo table imports it; the `test` extra installs it).
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")

from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402
from torch.utils import _pytree as pytree  # noqa: E402

import egraph_lower.torch as elt  # noqa: E402
from egraph_lower.rules.check import HALF_MARGIN  # noqa: E402

# (OpInfo name, variant): the aten backward ops their gradients reach
OPS: dict[tuple[str, str], str] = {
    ("nn.functional.relu", ""): "threshold_backward",
    ("sigmoid", ""): "sigmoid_backward",
    ("tanh", ""): "tanh_backward",
    ("nn.functional.gelu", ""): "gelu_backward (both approximations)",
    ("nn.functional.silu", ""): "silu_backward",
    ("nn.functional.mish", ""): "mish_backward",
    ("nn.functional.softplus", ""): "softplus_backward",
    ("nn.functional.elu", ""): "elu_backward",
    ("nn.functional.selu", ""): "elu_backward (selu's scales)",
    ("nn.functional.celu", ""): "elu_backward (celu's alpha)",
    ("nn.functional.leaky_relu", ""): "leaky_relu_backward",
    ("nn.functional.hardtanh", ""): "hardtanh_backward",
    ("nn.functional.relu6", ""): "hardtanh_backward (0, 6)",
    ("nn.functional.hardswish", ""): "hardswish_backward",
    ("nn.functional.hardsigmoid", ""): "hardsigmoid_backward",
    ("nn.functional.logsigmoid", ""): "log_sigmoid_backward",
    ("softmax", ""): "_softmax_backward_data",
    ("log_softmax", ""): "_log_softmax_backward_data",
    ("nn.functional.layer_norm", ""): "native_layer_norm_backward",
}
TARGETS = ("metal", "wgpu")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
HALF = (torch.float16, torch.bfloat16)
MAX_SAMPLES = 8  # per op and dtype, the first ones PyTorch gives (a deterministic subset, for time)


def _opinfo(name: str, variant: str) -> Any:
    return next(o for o in op_db if o.name == name and o.variant_test_name == variant)


def _samples(opinfo: Any, dtype: Any) -> list[Any]:
    """The op's samples whose input is a non-empty floating tensor (the ones with a gradient), but
    those the format cannot state, whose graphs run in PyTorch as they are (tests/test_torch_fallback.py):
    a negative `eps` (the format's LayerNorm takes eps >= 0) and the softmax of a 0-d tensor (the
    format's Softmax needs an axis)."""
    out = []
    for s in opinfo.sample_inputs("cpu", dtype, requires_grad=True):
        if not (isinstance(s.input, torch.Tensor) and s.input.numel() and s.input.dtype == dtype):
            continue
        if s.kwargs.get("eps", 0.0) < 0 or (opinfo.name.endswith("softmax") and s.input.dim() == 0):
            continue
        out.append(s)
        if len(out) == MAX_SAMPLES:
            break
    return out


def _leaves(samples: list[Any]) -> tuple[list[Any], Any]:
    flat, spec = pytree.tree_flatten([(s.input, s.args, s.kwargs) for s in samples])
    return flat, spec


def _function(opinfo: Any, spec: Any, positions: list[int], constants: list[Any]) -> Any:
    """f(*tensors) -> every sample's floating outputs, flattened; the samples' floating tensors are the
    arguments, everything else (`constants`) is fixed."""
    def f(*tensors: Any) -> tuple[Any, ...]:
        flat = list(constants)
        for p, t in zip(positions, tensors):
            flat[p] = t
        outs = [opinfo.op(x, *args, **kwargs) for x, args, kwargs in pytree.tree_unflatten(flat, spec)]
        return tuple(o for o in pytree.tree_leaves(outs) if isinstance(o, torch.Tensor) and o.is_floating_point())

    return f


def _gradients(f: Any, tensors: list[Any], dtype: Any) -> tuple[list[Any], list[Any]]:
    """(f's outputs, the gradients of sum(out * dy) with respect to every tensor), for the same
    random dy each call (values of `dtype`, in the outputs' dtype)."""
    outs = f(*tensors)
    torch.manual_seed(0)
    dys = [torch.randn(o.shape, dtype=torch.float64).to(dtype).to(o.dtype) for o in outs]
    grads = torch.autograd.grad(outs, tensors, dys, allow_unused=True)
    return list(outs), [g if g is not None else torch.zeros_like(t) for g, t in zip(grads, tensors)]


def _error(got: Any, ref: Any) -> float:
    """The largest |got - ref| (an element where both are NaN, or equal infinities, counts 0)."""
    got, ref = got.double(), ref.double()
    same = (torch.isnan(got) & torch.isnan(ref)) | (got == ref)
    return float(torch.where(same, torch.zeros_like(ref), (got - ref).abs()).max()) if ref.numel() else 0.0


def _compiled(f: Any, tensors: list[Any], target: str) -> Any:
    """f compiled by the backend, as torch.compile hands it a graph (here traced by make_fx)."""
    gm = make_fx(f)(*[t.detach() for t in tensors])
    be = elt.backend(target, strict=True)
    return be(gm, [t.detach().requires_grad_(True) for t in tensors]), be


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("name", "variant"), list(OPS), ids=[n for n, _ in OPS])
def test_opinfo_gradients_match_eager(name: str, variant: str, dtype: Any, target: str) -> None:
    opinfo = _opinfo(name, variant)
    samples = _samples(opinfo, dtype)
    if not samples:
        pytest.skip(f"{name} has no {dtype} sample with a floating input")
    flat, spec = _leaves(samples)
    positions = [k for k, v in enumerate(flat) if isinstance(v, torch.Tensor) and v.is_floating_point()]
    constants = [None if k in positions else v for k, v in enumerate(flat)]
    tensors = [flat[k].detach().requires_grad_(True) for k in positions]
    f = _function(opinfo, spec, positions, constants)
    compiled, be = _compiled(f, tensors, target)

    def run(*xs: Any) -> tuple[Any, ...]:
        return tuple(compiled(*xs))

    got_out, got = _gradients(run, tensors, dtype)
    eager_out, eager = _gradients(f, tensors, dtype)
    assert any(g.kind == "backward" and g.replaced for g in be.graphs), be.summary()  # it ran lowered
    assert all(g.status in ("lowered", "nothing to lower") for g in be.graphs), be.summary()
    if dtype not in HALF:
        for k, (g, e) in enumerate(zip(got_out + got, eager_out + eager)):
            torch.testing.assert_close(g, e, equal_nan=True, msg=lambda m: f"{name} {target} value {k}: {m}")
        return
    wide = [t.detach().double().requires_grad_(True) for t in tensors]
    _, ref = _gradients(f, wide, dtype)
    eps = torch.finfo(dtype).eps
    for k, (g, e, r) in enumerate(zip(got, eager, ref)):
        finite = r[torch.isfinite(r)]
        margin = HALF_MARGIN * eps * max(1.0, float(finite.abs().max()) if finite.numel() else 1.0)
        assert g.dtype == e.dtype
        assert _error(g, r) <= _error(e, r) + margin, (
            f"{name} {target} {dtype} gradient {k}: lowered {_error(g, r):.3g} > eager {_error(e, r):.3g} + {margin:.2g}")

